#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# reference.py make-data FILE N | train DATA STEPS BATCH LR OUT
#   make-data: N raw records of 8 float32 inputs and 1 float32 target
#              (36 bytes each), deterministic;
#   train:     train.cu's model and training loop in double precision,
#              independently of the CPU device and of libddp; writes the
#              final parameters (W1, b1, w2, b2) as float32 to OUT.
import math
import random
import struct
import sys

IN, HID = 8, 16


def make_data(path, n):
    r = random.Random(7)
    with open(path, "wb") as f:
        for _ in range(n):
            x = [r.uniform(-1.0, 1.0) for _ in range(IN)]
            y = math.sin(2.0 * x[0]) + 0.5 * x[1] * x[2] - 0.3 * x[3] + 0.1
            f.write(struct.pack("<9f", *x, y))


def init_params():
    seed = 12345
    out = []
    for k, size in enumerate((HID * IN, HID, HID, 1)):
        v = []
        for _ in range(size):
            seed = (seed * 1664525 + 1013904223) & 0xFFFFFFFF
            v.append(((seed >> 8) / 16777216.0 - 0.5) * (0.7 if k == 0 else 0.4))
        out.append(v)
    return out


def train(data, steps, batch, lr, out):
    raw = open(data, "rb").read()
    recs = [struct.unpack_from("<9f", raw, o) for o in range(0, len(raw) - len(raw) % 36, 36)]
    W1, b1, w2, b2 = init_params()
    pos = 0
    for _ in range(steps):
        xs, ys = [], []
        for _ in range(batch):
            if pos == len(recs):
                pos = 0
            xs.append(recs[pos][:IN])
            ys.append(recs[pos][IN])
            pos += 1
        gW1, gb1, gw2, gb2 = [0.0] * (HID * IN), [0.0] * HID, [0.0] * HID, [0.0]
        for x, y in zip(xs, ys):
            h = [math.tanh(b1[j] + sum(W1[j * IN + i] * x[i] for i in range(IN))) for j in range(HID)]
            yhat = b2[0] + sum(w2[j] * h[j] for j in range(HID))
            dy = 2.0 * (yhat - y) / batch
            for j in range(HID):
                gw2[j] += dy * h[j]
                dh = dy * w2[j] * (1.0 - h[j] * h[j])
                for i in range(IN):
                    gW1[j * IN + i] += dh * x[i]
                gb1[j] += dh
            gb2[0] += dy
        for p, g in ((W1, gW1), (b1, gb1), (w2, gw2), (b2, gb2)):
            for i in range(len(p)):
                p[i] -= lr * g[i]
    with open(out, "wb") as f:
        for p in (W1, b1, w2, b2):
            f.write(struct.pack("<%df" % len(p), *p))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "make-data":
        make_data(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 7 and sys.argv[1] == "train":
        train(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6])
    else:
        sys.exit("usage: reference.py make-data FILE N | train DATA STEPS BATCH LR OUT")
