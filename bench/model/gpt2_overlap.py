#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# bench/model/gpt2_overlap.py - the written model of a GPT-2-124M training
# step on 8 GPUs with and without overlapping the gradient allreduce with
# backward (docs/overlap.md prints its table).  Every input is stated below;
# nothing is measured here.
#
#   python3 bench/model/gpt2_overlap.py [--tflops 400] [--bucket-mb 25]
import argparse
import math

p = argparse.ArgumentParser()
p.add_argument("--tflops", type=float, default=400.0,
               help="sustained bf16 TFLOP/s per GPU (H100 SXM peak is 989 dense; 400 is ~40%% MFU)")
p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP_BUCKET_MB")
a = p.parse_args()

# GPT-2 small (124M), tied input/output embedding, as in llm.c / nanoGPT
V, C, L, T = 50257, 768, 12, 1024
wte = V * C                       # written first (lm head) AND last (embedding backward)
N = 124439808                     # parameters
rest = N - wte
TENSORS = 148                     # parameter tensors (one gradient range each)
flops_per_token = 6 * N + 12 * L * C * T   # PaLM appendix B: 6N + 12*L*d*T
WORLD = 8
bus_factor = 2 * (WORLD - 1) / WORLD       # allreduce moves 2(n-1)/n of the bytes per rank

fabrics = [  # name, NCCL bus bandwidth (bytes/s) for 25 MB messages, latency per collective (s)
    ("8x H100, NVLink/NVSwitch", 350e9, 20e-6),
    ("8 GPUs on PCIe, no NVLink", 20e9, 50e-6),
    ("2 nodes x 4 GPUs, 100 Gb/s", 10e9, 100e-6),
]

def comm(nbytes, bw, lat, ncoll):
    return ncoll * lat + nbytes * bus_factor / bw

print(f"flops per token {flops_per_token / 1e9:.3f} G; {a.tflops:.0f} TFLOP/s per GPU; buckets of {a.bucket_mb:.0f} MiB")
print("| batch/GPU | fabric | grads | compute ms (fwd+bwd) | allreduce ms, per tensor | step ms, no overlap | "
      "allreduce ms, buckets | exposed ms | step ms, overlap | speed-up |")
print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
for B in (64, 8):
    comp = B * T * flops_per_token / (a.tflops * 1e12)
    fwd, bwd = comp / 3, 2 * comp / 3
    for name, bw, lat in fabrics:
        for es, dt in ((2, "bf16"), (4, "fp32")):
            cap = a.bucket_mb * 2**20
            off = comm(N * es, bw, lat, TENSORS)            # today: one collective per tensor, after backward
            nb = math.ceil(rest * es / cap)
            c_rest = comm(rest * es, bw, lat, nb)           # reduced while backward runs
            c_wte = comm(wte * es, bw, lat, 1)              # last writer = last backward kernel: never hidden
            exposed = c_wte + max(0.0, c_rest - bwd)
            s_off, s_on = comp + off, comp + exposed
            print(f"| {B} | {name} | {dt} | {comp * 1e3:.1f} ({fwd * 1e3:.1f}+{bwd * 1e3:.1f}) | {off * 1e3:.2f} | "
                  f"{s_off * 1e3:.1f} | {(c_rest + c_wte) * 1e3:.2f} ({nb + 1}) | {exposed * 1e3:.2f} | "
                  f"{s_on * 1e3:.1f} | {s_off / s_on:.2f}x |")
