#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gpt2_torch.py - a GPT-2-small-shaped PyTorch trainer, written the way its users write it.

nanoGPT's model (Karpathy's model.py, the parts a training run uses): token
and position embeddings, N pre-LayerNorm blocks of causal self-attention
(F.scaled_dot_product_attention, is_causal=True) and a GELU(tanh) MLP, a
final LayerNorm, and an lm_head tied to the token embedding
(transformer.wte.weight = lm_head.weight).  Weights are initialised as
nanoGPT does (normal, std 0.02; c_proj std 0.02/sqrt(2 * n_layer); biases
zero) from torch.manual_seed(--seed) on the CPU, then moved to the device.
The training loop is nanoGPT's train.py without its DDP branch: AdamW with
weight decay on the 2-D tensors only (betas 0.9/0.95, fused or foreach),
linear warm-up of the learning rate, torch.autocast(bfloat16) around the
forward pass, torch.nn.utils.clip_grad_norm_, zero_grad(set_to_none=True).

    --size small  GPT-2 small: 12 layers, 12 heads, 768 wide, context 1024,
                  vocabulary 50304 (50257 padded, as nanoGPT), 124M parameters
    --size tiny   2 layers, 2 heads, 64 wide, context 32, vocabulary 128 (the
                  CPU device)

Data: a token shard in llm.c's format (256 int32 header: magic 20240520,
version 1, token count; then uint16 tokens), read with plain os.read in
order: each row of a batch is the next window of T+1 tokens (inputs 0..T-1,
targets 1..T), wrapping to the first window at the end.  The token count
must be a whole number of windows, so `ddprun --shard
PATH:mode=stride:record=2*(T+1)` gives rank r the windows r, r+N, r+2N, ...
and N ranks at batch B see, together, the windows of one process at N*B.
`--make-data SRC OUT WINDOWS` writes such a file (SRC's tokens, cyclically).

    gpt2_torch.py --data PATH [--size small|tiny] [--steps N] [--batch B] [--lr X]
                  [--warmup N] [--seed S] [--opt fused|foreach] [--no-amp] [--clip C]
                  [--save PATH] [--save-init PATH] [--device cuda|cpu] [--no-cudnn-attention]
    gpt2_torch.py --make-data SRC OUT WINDOWS [--size small|tiny]

Output (the samples' contract): one `step K loss V` line per step on stdout,
then on stderr `gpt2_torch: ran N steps on DEVICE in S s`, `gpt2_torch:
start-up S s` (process start to the first step) and, on CUDA, `gpt2_torch:
peak memory X GiB` (torch.cuda.max_memory_allocated).  --save writes
model.parameters() in order (the tied matrix once) as float32 LE;
--save-init the same before the first step.  One-line errors: exit 2 for
options, 1 for data.

Memory (an estimate; the GPU report prints the measured peak): small at
batch 8 x 1024 tokens: parameters, gradients and AdamW's two states 2.0 GB
(124M x 16 bytes), activations about 7 GB (bf16, SDPA without the T x T
matrix; the fp32 logits and their gradient 3.3 GB of it): about 9 GB per
rank, about 15 GB for one process at batch 16; two ranks and the one process
never run at once, so one 80 GB H100 holds either with room to spare.
"""
import argparse
import math
import os
import struct
import sys
import time
from array import array

T_PROC = time.monotonic()
PROG = "gpt2_torch"
USAGE = ("gpt2_torch.py --data PATH [--size small|tiny] [--steps N] [--batch B] [--lr X] [--warmup N] "
         "[--seed S] [--opt fused|foreach] [--no-amp] [--clip C] [--save PATH] [--save-init PATH] "
         "[--device cuda|cpu] [--no-cudnn-attention] | --make-data SRC OUT WINDOWS [--size small|tiny]")
MAGIC, VERSION, HEADER_INTS = 20240520, 1, 256
# name: (n_layer, n_head, n_embd, block_size, vocab_size)
SIZES = {"small": (12, 12, 768, 1024, 50304), "tiny": (2, 2, 64, 32, 128)}


def die(code, msg):
    sys.stdout.flush()
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    sys.exit(code)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        die(2, "%s; usage: %s" % (message, USAGE))

    def print_help(self, file=None):
        (file or sys.stdout).write("usage: %s\n" % USAGE)


def _pos(text):
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
    p = _Parser(prog=PROG, allow_abbrev=False)
    p.add_argument("--data")
    p.add_argument("--make-data", nargs=3, metavar=("SRC", "OUT", "WINDOWS"))
    p.add_argument("--size", choices=tuple(SIZES), default="small")
    p.add_argument("--steps", type=_count, default=20)
    p.add_argument("--batch", type=_pos, default=8)
    p.add_argument("--lr", type=_finite, default=6e-4)
    p.add_argument("--warmup", type=_count, default=5)
    p.add_argument("--seed", type=_count, default=1337)
    p.add_argument("--opt", choices=("fused", "foreach"), default="fused")
    p.add_argument("--no-amp", action="store_true", help="no bf16 autocast (fp32 throughout)")
    p.add_argument("--clip", type=_finite, default=1.0)
    p.add_argument("--save")
    p.add_argument("--save-init")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--no-cudnn-attention", action="store_true",
                   help="SDPA without its cuDNN backend (the CPU device has no cuDNN)")
    a = p.parse_args(argv)
    if (a.data is None) == (a.make_data is None):
        p.error("give exactly one of --data and --make-data")
    return a


def read_header(fd, path):
    h = b""
    while len(h) < 4 * HEADER_INTS:
        b = os.read(fd, 4 * HEADER_INTS - len(h))
        if not b:
            break
        h += b
    if len(h) < 4 * HEADER_INTS:
        die(1, "%s is not a token shard (short header)" % path)
    magic, version, count = struct.unpack_from("<3i", h)
    if magic != MAGIC or version != VERSION:
        die(1, "%s is not a uint16 token shard (magic %d version %d; want %d version %d)"
            % (path, magic, version, MAGIC, VERSION))
    return count


class Windows:
    """The file's windows of T+1 tokens, read in order with os.read, wrapping."""

    def __init__(self, path, T, vocab):
        self.path, self.w = path, T + 1
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            die(1, "cannot open data file %s: %s" % (path, e.strerror))
        count = read_header(self.fd, path)
        size = os.fstat(self.fd).st_size
        if size != 4 * HEADER_INTS + 2 * count:
            die(1, "%s: size %d does not match its header (%d tokens)" % (path, size, count))
        if count == 0 or count % self.w:
            die(1, "%s: %d tokens is not a whole number of %d-token windows (write it with --make-data)"
                % (path, count, self.w))
        self.n, self.next, self.vocab = count // self.w, 0, vocab

    def read(self, rows):
        out = bytearray()
        for _ in range(rows):
            if self.next == self.n:
                os.lseek(self.fd, 4 * HEADER_INTS, os.SEEK_SET)
                self.next = 0
            want = 2 * self.w
            b = b""
            while len(b) < want:
                c = os.read(self.fd, want - len(b))
                if not c:
                    die(1, "%s: file ended before its %d windows" % (self.path, self.n))
                b += c
            out += b
            self.next += 1
        toks = array("H")
        toks.frombytes(bytes(out))
        if sys.byteorder != "little":
            toks.byteswap()
        if max(toks) >= self.vocab:
            die(1, "%s: token %d out of range (vocabulary %d)" % (self.path, max(toks), self.vocab))
        return toks


def make_data(src, out, windows, T):
    """OUT: WINDOWS windows of T+1 tokens, SRC's tokens repeated in order."""
    try:
        windows = int(windows)
        if windows < 1:
            raise ValueError
    except ValueError:
        die(2, "--make-data: WINDOWS %r is not a positive integer" % windows)
    try:
        fd = os.open(src, os.O_RDONLY)
    except OSError as e:
        die(1, "cannot open %s: %s" % (src, e.strerror))
    count = read_header(fd, src)
    data = os.read(fd, 2 * count)
    os.close(fd)
    if count < 1 or len(data) != 2 * count:
        die(1, "%s: holds %d token bytes, its header says %d tokens" % (src, len(data), count))
    need = windows * (T + 1) * 2
    body = (data * (need // len(data) + 1))[:need]
    hdr = [0] * HEADER_INTS
    hdr[0], hdr[1], hdr[2] = MAGIC, VERSION, need // 2
    try:
        with open(out, "wb") as f:
            f.write(struct.pack("<256i", *hdr) + body)
    except OSError as e:
        die(1, "cannot write %s: %s" % (out, e.strerror))
    return 0


def build(torch, size):
    """nanoGPT's GPT, at SIZE.  Returns (model class instance maker, block_size, vocab)."""
    import torch.nn as nn
    import torch.nn.functional as F

    n_layer, n_head, n_embd, block_size, vocab = SIZES[size]

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU(approximate="tanh")
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, n_embd),
                wpe=nn.Embedding(block_size, n_embd),
                h=nn.ModuleList([Block() for _ in range(n_layer)]),
                ln_f=nn.LayerNorm(n_embd),
            ))
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets):
            B, T = idx.size()
            pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, impl):
            params = [p for p in self.parameters() if p.requires_grad]
            groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                      {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
            kw = {"fused": True} if impl == "fused" else {"foreach": True}
            return torch.optim.AdamW(groups, lr=learning_rate, betas=(0.9, 0.95), eps=1e-8, **kw)

    return GPT, block_size, vocab


def save_params(torch, model, path):
    """model.parameters() as float32 LE, written through a file-backed tensor
    (torch.from_file, shared: no numpy, no Python list of 124M floats)."""
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    try:
        with open(path, "wb") as f:
            f.truncate(4 * n)
        dst = torch.from_file(path, shared=True, size=n, dtype=torch.float32)
    except (OSError, RuntimeError) as e:
        die(1, "cannot write %s: %s" % (path, e))
    off = 0
    with torch.no_grad():
        for p in params:
            dst[off:off + p.numel()].copy_(p.detach().reshape(-1))
            off += p.numel()
    del dst


def lr_at(step, base, warmup):
    """nanoGPT's get_lr, warm-up part: linear to BASE over WARMUP steps, then BASE."""
    if step <= warmup:
        return base * step / (warmup + 1)
    return base


def main(argv):
    args = parse_args(argv)
    T = SIZES[args.size][3]
    if args.make_data:
        return make_data(args.make_data[0], args.make_data[1], args.make_data[2], T)
    try:
        import torch
    except ImportError as e:
        die(1, "cannot import PyTorch (%s); install torch to run this script" % e)
    # opened after `import torch`, as nanoGPT does (torch_train.py opens its
    # data before: the suite has both orders)
    data = Windows(args.data, T, SIZES[args.size][4])
    if args.device == "cuda" and not torch.cuda.is_available():
        die(1, "--device cuda: PyTorch sees no CUDA device (use --device cpu)")
    dev = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = True  # as nanoGPT
    torch.backends.cudnn.allow_tf32 = True
    if args.no_cudnn_attention:
        torch.backends.cuda.enable_cudnn_sdp(False)

    GPT, _, _ = build(torch, args.size)
    torch.manual_seed(args.seed)
    model = GPT()
    if args.save_init:
        save_params(torch, model, args.save_init)
    model.to(dev)
    opt = model.configure_optimizers(0.1, args.lr, args.opt)
    B = args.batch

    def batch():
        t = torch.tensor(data.read(B), dtype=torch.long).view(B, T + 1)
        return t[:, :-1].to(dev), t[:, 1:].to(dev)

    if dev.type == "cuda":
        torch.cuda.synchronize()
        dev_name = torch.cuda.get_device_name(dev)
    else:
        dev_name = "cpu"
    t0 = time.monotonic()
    for step in range(1, args.steps + 1):
        lr = lr_at(step, args.lr, args.warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batch()
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=not args.no_amp):
            _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        print("step %d loss %.6f" % (step, loss.item()), flush=True)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    sys.stdout.flush()
    sys.stderr.write("%s: ran %d steps on %s in %.2f s\n" % (PROG, args.steps, dev_name, time.monotonic() - t0))
    sys.stderr.write("%s: start-up %.2f s\n" % (PROG, t0 - T_PROC))
    if dev.type == "cuda":
        sys.stderr.write("%s: peak memory %.2f GiB\n" % (PROG, torch.cuda.max_memory_allocated(dev) / 2**30))
    if args.save:
        save_params(torch, model, args.save)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
