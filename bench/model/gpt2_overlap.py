#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# bench/model/gpt2_overlap.py - the written model of a GPT-2-124M training
# step on 8 GPUs with and without overlapping the gradient allreduce with
# backward (docs/overlap.md prints its table).  Every input is stated below;
# nothing is measured here.
#
#   python3 bench/model/gpt2_overlap.py [--tflops 400] [--bucket-mb 25] [--layout llmc]
#
# --layout llmc: llm.c's memory layout, ONE gradient range per parameter
# kind across all layers, where only the kinds whose slices ddprun can
# tell apart are reduced layer by layer: the four weight-matrix kinds
# (qkvw, attprojw, fcw, fcprojw: 85 M of the 124 M parameters), written by
# cuBLAS GEMMs whose output the call declares (interpose/hook_blas.c).  The
# biases and layernorm weights are written by kernels whose only bound is a
# count argument, a guess ddprun does not slice on: such a range is
# complete only at layer 0's backward, so its reduction can hide behind the
# last 1/L of the layers' backward at most.
import argparse
import math

p = argparse.ArgumentParser()
p.add_argument("--tflops", type=float, default=400.0,
               help="sustained bf16 TFLOP/s per GPU (H100 SXM peak is 989 dense; 400 is ~40%% MFU)")
p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP_BUCKET_MB")
p.add_argument("--layout", choices=("tensors", "llmc"), default="tensors",
               help="tensors: one gradient range per parameter tensor (PyTorch); llmc: one per kind (llm.c)")
a = p.parse_args()

# GPT-2 small (124M), tied input/output embedding, as in llm.c / nanoGPT
V, C, L, T = 50257, 768, 12, 1024
wte = V * C                       # written first (lm head) AND last (embedding backward)
N = 124439808                     # parameters
rest = N - wte
TENSORS = 148                     # parameter tensors (one gradient range each)
mats = L * 12 * C * C             # qkvw 3C^2 + attprojw C^2 + fcw 4C^2 + fcprojw 4C^2 per layer
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

print(f"flops per token {flops_per_token / 1e9:.3f} G; {a.tflops:.0f} TFLOP/s per GPU; buckets of {a.bucket_mb:.0f} MiB; "
      f"layout {a.layout}")
print("| batch/GPU | fabric | grads | compute ms (fwd+bwd) | allreduce ms, per tensor | step ms, no overlap | "
      "allreduce ms, buckets | exposed ms | step ms, overlap | speed-up |")
print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
for B in (64, 8):
    comp = B * T * flops_per_token / (a.tflops * 1e12)
    fwd, bwd = comp / 3, 2 * comp / 3
    for name, bw, lat in fabrics:
        for es, dt in ((2, "bf16"), (4, "fp32")):
            cap = a.bucket_mb * 2**20
            ntens = 16 if a.layout == "llmc" else TENSORS   # llm.c: 16 kind ranges
            off = comm(N * es, bw, lat, ntens)              # synchronous: one collective per range, after backward
            nb = math.ceil(rest * es / cap)
            c_rest = comm(rest * es, bw, lat, nb)           # reduced while backward runs
            c_wte = comm(wte * es, bw, lat, 1)              # last writer = last backward kernel: never hidden
            exposed = c_wte + max(0.0, c_rest - bwd)
            if a.layout == "llmc":
                # the weight-matrix kinds: sliced per layer, hidden behind all
                # of backward; the small kinds: ready at layer 0's backward,
                # hidden behind its 1/L of backward at most
                nm = math.ceil(mats * es / cap)
                c_mats = comm(mats * es, bw, lat, nm)
                c_small = comm((rest - mats) * es, bw, lat, 1)
                c_rest = c_mats + c_small
                nb = nm + 1
                exposed = c_wte + max(0.0, c_mats - bwd) + max(0.0, c_small - bwd / L)
            s_off, s_on = comp + off, comp + exposed
            print(f"| {B} | {name} | {dt} | {comp * 1e3:.1f} ({fwd * 1e3:.1f}+{bwd * 1e3:.1f}) | {off * 1e3:.2f} | "
                  f"{s_off * 1e3:.1f} | {(c_rest + c_wte) * 1e3:.2f} ({nb + 1}) | {exposed * 1e3:.2f} | "
                  f"{s_on * 1e3:.1f} | {s_off / s_on:.2f}x |")
