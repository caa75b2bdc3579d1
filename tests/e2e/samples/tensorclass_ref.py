# SPDX-License-Identifier: MIT
#
# tensorclass_ref.py DATA STEPS BATCH LR SEED ok|broken - an independent
# one-process reference of samples/tensorclass in plain Python (doubles):
# the same hash initialisation, data order, model and SGD, written as loops
# over lists (no Matrix class, no kernels).  "broken" leaves b1 unchanged
# (the negative control: a missed update must show in the numbers).
# Prints what the program prints: `step K loss V`, `checksum C`, `params N`.
import math, struct, sys
M = 0xffffffff
def h32(x):
    x &= M
    x ^= x >> 16; x = (x * 0x7feb352d) & M
    x ^= x >> 15; x = (x * 0x846ca68b) & M
    x ^= x >> 16
    return x
def uniform(n, seed, sid, scale):
    key = h32(seed ^ ((sid * 0x9e3779b9) & M))
    return [(((h32(i + key) >> 8) * 2.0 ** -24) * 2.0 - 1.0) * scale for i in range(n)]
data, steps, B, lr, seed, broken = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "broken"
raw = open(data, "rb").read()
rb, count, vocab, K = struct.unpack_from("<IQII", raw, 12)
V, D, H = 96, 8, 32
IN = K * D
E = uniform(V * D, seed, 0, 0.5)
W1 = uniform(IN * H, seed, 1, 0.125)
b1 = [0.0] * H
W2 = uniform(H * V, seed, 2, 0.125)
b2 = [0.0] * V
lr = struct.unpack("f", struct.pack("f", lr))[0]
for step in range(steps):
    toks = []
    for b in range(B):
        r = (step * B + b) % count
        toks.append(raw[64 + r * rb: 64 + r * rb + K + 1])
    x = [[E[tok[t] * D + d] for t in range(K) for d in range(D)] for tok in toks]
    hh = [[math.tanh(sum(xr[i] * W1[i * H + j] for i in range(IN)) + b1[j]) for j in range(H)] for xr in x]
    loss = 0.0
    dz = []
    for b in range(B):
        z = [sum(hh[b][j] * W2[j * V + v] for j in range(H)) + b2[v] for v in range(V)]
        mx = max(z); ex = [math.exp(zv - mx) for zv in z]; s = sum(ex)
        tgt = toks[b][K]
        loss += math.log(s) + mx - z[tgt]
        dz.append([(ex[v] / s - (1.0 if v == tgt else 0.0)) / B for v in range(V)])
    print("step %d loss %.6f" % (step + 1, loss / B))
    dW2 = [sum(hh[b][j] * dz[b][v] for b in range(B)) for j in range(H) for v in range(V)]
    db2 = [sum(dz[b][v] for b in range(B)) for v in range(V)]
    dpre = [[sum(dz[b][v] * W2[j * V + v] for v in range(V)) * (1 - hh[b][j] ** 2) for j in range(H)] for b in range(B)]
    dW1 = [sum(x[b][i] * dpre[b][j] for b in range(B)) for i in range(IN) for j in range(H)]
    db1 = [sum(dpre[b][j] for b in range(B)) for j in range(H)]
    dx = [[sum(dpre[b][j] * W1[i * H + j] for j in range(H)) for i in range(IN)] for b in range(B)]
    dE = [0.0] * (V * D)
    for b in range(B):
        for t in range(K):
            for d in range(D):
                dE[toks[b][t] * D + d] += dx[b][t * D + d]
    for p, g in ((E, dE), (W1, dW1), (b1, db1), (W2, dW2), (b2, db2)):
        if broken and p is b1:
            continue
        for i in range(len(p)):
            p[i] += g[i] * -lr
print("checksum %.9e" % sum(sum(p) for p in (E, W1, b1, W2, b2)))
print("params %d" % sum(len(p) for p in (E, W1, b1, W2, b2)))
