#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# blockref.py SRC OUT N STEPS CHUNK - the input of the one-process reference
# for `ddprun -n N --shard SRC:mode=block` on a token shard (llm.c's format:
# 256 int32 header, magic 20240520 (uint16 tokens) or 20240801 (uint32),
# version, token count; then the tokens), written independently of libddp.
#
# Block mode gives rank r slice r of N near-equal slices of the M tokens, in
# order, the first M mod N slices one token longer (docs/sharding.md).  A
# trainer that reads CHUNK consecutive tokens per step from its view sees,
# at step s, view_r[s*CHUNK, (s+1)*CHUNK).  OUT holds, for s = 0..STEPS-1,
# the chunks of ranks 0..N-1 one after the other, so one process reading
# N*CHUNK tokens per step sees exactly the union of the ranks' batches, in
# rank order.  Exits 2 when a view is shorter than STEPS chunks.
import struct
import sys


def main():
    if len(sys.argv) != 6:
        sys.exit("usage: blockref.py SRC OUT N STEPS CHUNK")
    src, out = sys.argv[1], sys.argv[2]
    n, steps, chunk = (int(a) for a in sys.argv[3:])
    data = open(src, "rb").read()
    hdr = list(struct.unpack_from("<256i", data, 0))
    if hdr[0] == 20240520:
        size = 2
    elif hdr[0] == 20240801:
        size = 4
    else:
        sys.exit("blockref.py: %s: not a token shard (magic %d)" % (src, hdr[0]))
    m = hdr[2]
    tok = data[1024:]
    if len(tok) != m * size:
        sys.exit("blockref.py: %s: %d token bytes, header says %d tokens" % (src, len(tok), m))
    views, start = [], 0
    for r in range(n):
        k = m // n + (1 if r < m % n else 0)
        views.append(tok[start * size:(start + k) * size])
        start += k
    if any(len(v) < steps * chunk * size for v in views):
        print("blockref.py: a rank's view holds fewer than %d chunks of %d tokens" % (steps, chunk))
        sys.exit(2)
    c = chunk * size
    body = b"".join(views[r][s * c:(s + 1) * c] for s in range(steps) for r in range(n))
    hdr[2] = len(body) // size
    with open(out, "wb") as f:
        f.write(struct.pack("<256i", *hdr) + body)


if __name__ == "__main__":
    main()
