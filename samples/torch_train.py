#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""torch_train.py - samples/mlp's model as an ordinary small PyTorch script.

A next-token classifier over a context of K tokens (K from the data file's
header; 8 for build/data/mlp.rec):

    x = concat(E[t_0], ..., E[t_{K-1}])      nn.Embedding(96, 16)
    h = tanh(W1 x + b1)                       nn.Linear(16K, 64)
    logits = W2 h + b2                        nn.Linear(64, 96)
    loss = mean cross-entropy over the batch  F.cross_entropy

trained with torch.optim.AdamW (its default implementation unless --fused or
--foreach), gradient clipping with torch.nn.utils.clip_grad_norm_, optional
bf16 autocast (--amp-bf16).  The data come from a torch.utils.data
IterableDataset that reads the DDPREC01 record file (docs/samples.md) with
plain sequential reads, wrapping at the end, no shuffling, so `ddprun
--shard` gives each rank its records and N ranks at batch B see the batch of
one process at N*B.

Command line (the samples' contract, docs/samples.md):

    torch_train.py --data PATH [--steps N] [--batch B] [--lr X] [--seed S] [--save PATH]
                   [--weight-decay W] [--clip MAXNORM] [--fused | --foreach] [--amp-bf16]
                   [--keep-grads] [--amp-fp16] [--device cuda|cpu]

--amp-fp16: float16 autocast with torch.amp.GradScaler, as its users write
it (scaler.scale(loss).backward(), scaler.unscale_(opt) before clipping,
scaler.step(opt), scaler.update()).

Output: one `step K loss V` line per step on stdout (the mean loss of the
step's batch before the update), then `torch_train: ran N steps on DEVICE in
S s` on stderr.  A bad option: one line `torch_train: PROBLEM; usage: ...`,
exit 2.  A bad data file: one line, exit 1.

Initialisation: the samples' splitmix64 generator seeded with --seed, drawn
in save order (E scale 0.5, W1 1/sqrt(16K), W2 1/sqrt(64), biases zero), so
`--steps 0 --save` writes the same bytes as `samples/mlp --steps 0 --save`.

--save writes every parameter as float32 little-endian, concatenated in
model.parameters() order: E [96][16], W1 [64][16K], b1 [64], W2 [96][64],
b2 [96] (samples/mlp's order and layout; 64128 bytes for K = 8).

PyTorch is imported only after the command line and the data file were
checked, so those errors need no PyTorch.
"""
import argparse
import math
import os
import stat
import struct
import sys
import time
from array import array

PROG = "torch_train"
USAGE = ("torch_train.py --data PATH [--steps N] [--batch B] [--lr X] [--seed S] [--save PATH] "
         "[--weight-decay W] [--clip MAXNORM] [--fused | --foreach] [--amp-bf16 | --amp-fp16] [--keep-grads] "
         "[--device cuda|cpu]")
MAGIC = b"DDPREC01"
HEADER_BYTES = 64
VOCAB = 96
EMB, HIDDEN = 16, 64


def die(code, msg):
    sys.stdout.flush()
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.exit(code)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (the samples' contract)
        die(2, "%s; usage: %s" % (message, USAGE))

    def print_help(self, file=None):
        (file or sys.stdout).write("usage: %s\n" % USAGE)


def _positive_int(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError("%r is not a positive integer" % text)
    return v


def _count(text):
    v = int(text)
    if v < 0:
        raise argparse.ArgumentTypeError("%r is negative" % text)
    return v


def _finite(text):
    v = float(text)
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError("%r is not a finite non-negative number" % text)
    return v


def parse_args(argv):
    p = _Parser(prog=PROG, add_help=True, allow_abbrev=False)
    p.add_argument("--data", required=True)
    p.add_argument("--steps", type=_count, default=300)
    p.add_argument("--batch", type=_positive_int, default=16)
    p.add_argument("--lr", type=_finite, default=3e-3)
    p.add_argument("--seed", type=_count, default=1)
    p.add_argument("--save")
    p.add_argument("--weight-decay", type=_finite, default=0.01)
    p.add_argument("--clip", type=_finite, default=1.0)
    impl = p.add_mutually_exclusive_group()
    impl.add_argument("--fused", action="store_true", help="AdamW(fused=True)")
    impl.add_argument("--foreach", action="store_true", help="AdamW(foreach=True)")
    amp = p.add_mutually_exclusive_group()
    amp.add_argument("--amp-bf16", action="store_true", help="torch.autocast bf16 forward")
    amp.add_argument("--amp-fp16", action="store_true", help="torch.autocast fp16 forward, GradScaler")
    p.add_argument("--keep-grads", action="store_true",
                   help="zero_grad(set_to_none=False): the same gradient tensors every step")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    return p.parse_args(argv)


class RecordFile:
    """A DDPREC01 file read sequentially with os.read, wrapping to record 0."""

    def __init__(self, path):
        self.path = path
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            die(1, "cannot open data file %s: %s" % (path, e.strerror))
        h = self._read_full(HEADER_BYTES)
        if len(h) < HEADER_BYTES or h[:8] != MAGIC:
            die(1, "%s is not a DDPREC01 record file (bad or short header)" % path)
        (self.header_bytes, self.record_bytes, self.record_count, self.vocab,
         self.context) = struct.unpack_from("<IIQII", h, 8)
        if any(h[32:64]):
            die(1, "%s: reserved header bytes are not zero" % path)
        if self.header_bytes != HEADER_BYTES:
            die(1, "%s: header_bytes is %d, expected %d" % (path, self.header_bytes, HEADER_BYTES))
        if self.vocab != VOCAB:
            die(1, "%s: vocab is %d, expected %d" % (path, self.vocab, VOCAB))
        if not 1 <= self.context <= 64 or self.record_bytes != self.context + 1:
            die(1, "%s: record_bytes %d does not match context %d (+1 target, context <= 64)"
                % (path, self.record_bytes, self.context))
        if self.record_count == 0:
            die(1, "%s: the file holds no records" % path)
        st = os.fstat(self.fd)
        want = self.header_bytes + self.record_count * self.record_bytes
        if stat.S_ISREG(st.st_mode) and st.st_size != want:
            die(1, "%s: size %d does not match its header (%d + %d records of %d bytes)"
                % (path, st.st_size, self.header_bytes, self.record_count, self.record_bytes))
        self.next = 0

    def _read_full(self, n):
        out = bytearray()
        while len(out) < n:
            b = os.read(self.fd, n - len(out))
            if not b:
                break
            out += b
        return bytes(out)

    def read(self, n):
        """The next n records (n * record_bytes bytes), wrapping at the end."""
        out = bytearray()
        while n > 0:
            if self.next == self.record_count:
                os.lseek(self.fd, self.header_bytes, os.SEEK_SET)
                self.next = 0
            k = min(n, self.record_count - self.next)
            b = self._read_full(k * self.record_bytes)
            if len(b) != k * self.record_bytes:
                die(1, "%s: file ended before its %d records" % (self.path, self.record_count))
            out += b
            self.next += k
            n -= k
        bad = max(out) if out else 0
        if bad >= self.vocab:
            die(1, "%s: token %d out of range (vocab %d)" % (self.path, bad, self.vocab))
        return bytes(out)


def splitmix_uniform(state, n, scale):
    """samples/common/sample.c's initialisation: n float32 values in
    [-scale, scale) from splitmix64 (top 24 bits of each output).  Returns
    (values as array('f'), new state)."""
    mask = (1 << 64) - 1
    scale = array("f", [scale])[0]
    vals = array("f", bytes(4 * n))
    for i in range(n):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        u = (z >> 40) / 16777216.0          # exact
        vals[i] = (2.0 * u - 1.0) * scale    # exact in double, rounded once to float32
    return vals, state


def main(argv):
    args = parse_args(argv)
    data = RecordFile(args.data)
    K = data.context

    # Deterministic kernels where PyTorch has them (cuBLAS needs this setting
    # before its first use).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, IterableDataset
    except ImportError as e:
        die(1, "cannot import PyTorch (%s); install torch to run this script" % e)

    class Records(IterableDataset):
        """(context tokens, target) per record, in file order, forever."""

        def __init__(self, f, chunk):
            self.f, self.chunk = f, chunk

        def __iter__(self):
            rb = self.f.record_bytes
            while True:
                buf = self.f.read(self.chunk)
                t = torch.frombuffer(bytearray(buf), dtype=torch.uint8).view(self.chunk, rb).long()
                for r in range(self.chunk):
                    yield t[r, :K], t[r, K]

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, EMB)
            self.fc1 = nn.Linear(EMB * K, HIDDEN)
            self.fc2 = nn.Linear(HIDDEN, VOCAB)

        def forward(self, ctx):
            x = self.emb(ctx).flatten(1)
            return self.fc2(torch.tanh(self.fc1(x)))

    if args.device == "cuda" and not torch.cuda.is_available():
        die(1, "--device cuda: PyTorch sees no CUDA device (use --device cpu)")
    dev = torch.device(args.device)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False

    model = MLP()
    # the C samples' scales, computed in float32: 1.0f / sqrtf((float)fan_in)
    f32 = lambda x: array("f", [x])[0]
    scales = (0.5, f32(1.0 / f32(math.sqrt(EMB * K))), 0.0, f32(1.0 / f32(math.sqrt(HIDDEN))), 0.0)
    state = args.seed
    with torch.no_grad():
        for p, scale in zip(model.parameters(), scales):
            if scale == 0.0:
                p.zero_()
                continue
            vals, state = splitmix_uniform(state, p.numel(), scale)
            p.copy_(torch.tensor(vals.tolist(), dtype=torch.float32).view_as(p))
    model.to(dev)

    kw = {}
    if args.fused:
        kw["fused"] = True
    elif args.foreach:
        kw["foreach"] = True
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay, **kw)
    loader = iter(DataLoader(Records(data, args.batch), batch_size=args.batch, num_workers=0))
    scaler = torch.amp.GradScaler(dev.type, enabled=args.amp_fp16)
    amp_dtype = torch.float16 if args.amp_fp16 else torch.bfloat16

    if dev.type == "cuda":
        torch.cuda.synchronize()
        dev_name = torch.cuda.get_device_name(dev)
    else:
        dev_name = "cpu"
    t0 = time.monotonic()
    for step in range(1, args.steps + 1):
        ctx, target = next(loader)
        opt.zero_grad(set_to_none=not args.keep_grads)
        ctx, target = ctx.to(dev, non_blocking=False), target.to(dev, non_blocking=False)
        with torch.autocast(device_type=dev.type, dtype=amp_dtype, enabled=args.amp_bf16 or args.amp_fp16):
            logits = model(ctx)
        loss = F.cross_entropy(logits.float(), target)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)  # no-op when disabled
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        scaler.step(opt)
        scaler.update()
        print("step %d loss %.6f" % (step, loss.item()), flush=True)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    sys.stdout.flush()
    sys.stderr.write("%s: ran %d steps on %s in %.2f s\n" % (PROG, args.steps, dev_name,
                                                             time.monotonic() - t0))

    if args.save:
        out = array("f")
        for p in model.parameters():
            out.extend(p.detach().float().cpu().reshape(-1).tolist())
        if sys.byteorder != "little":
            out.byteswap()
        try:
            with open(args.save, "wb") as f:
                f.write(out.tobytes())
        except OSError as e:
            die(1, "cannot write %s: %s" % (args.save, e.strerror))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
