# SPDX-License-Identifier: MIT
#
# train.py - a small PyTorch training script, written the way its users
# write them, for `make test-torch` (tests/torch/run.sh): one model, one
# optimizer, the usual loop.  The options pick the variant:
#
#   --opt adamw|adamw-fused|sgd-momentum|adam-wd   optimizer
#   --model mlp|transformer                          (transformer: embedding,
#                                                   LayerNorm, attention, tied
#                                                   input/output weights)
#   --clip            torch.nn.utils.clip_grad_norm_ before each step
#   --amp fp16|bf16   autocast (fp16 with a GradScaler)
#   --accum N         gradient accumulation over N micro-batches
#   --zero none|zeros zero_grad(set_to_none=True) (the default) or False
#   --ddp             nanoGPT's shape: when RANK is set, its own torch DDP
#                     (init_process_group on MASTER_ADDR:MASTER_PORT, gloo,
#                     DistributedDataParallel); else the plain loop
#   --hide-rank       RANK removed from the script's environment first (the
#                     --ddp script then takes its non-DDP path)
#
# It prints its own truth for the test: after each optimizer step's
# backward, one line per parameter gradient,
#   TRUTH step=<k> ptr=<grad data_ptr> bytes=<numel * element size>
# then `OPT step=<k> ran=<n>`: how many optimizer steps have really run
# (a step post-hook counts them: GradScaler skips optimizer.step() when its
# found_inf is set, and in trace mode the kernel that computes found_inf
# does not run, so the flag holds whatever bytes the allocator handed out
# and a rank may skip a step), and at the end `DONE steps=<k> opt_steps=<n>`.
# Values are not printed: under the CPU device's trace mode kernels do not
# run (docs/pytorch.md).
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--opt", default="adamw")
ap.add_argument("--model", default="mlp")
ap.add_argument("--clip", action="store_true")
ap.add_argument("--amp", default="")
ap.add_argument("--accum", type=int, default=1)
ap.add_argument("--zero", default="none")
ap.add_argument("--steps", type=int, default=4)
ap.add_argument("--ddp", action="store_true")
ap.add_argument("--hide-rank", action="store_true")
args = ap.parse_args()

import os  # noqa: E402

if args.hide_rank:
    os.environ.pop("RANK", None)
torch.manual_seed(0)
device = "cuda"
# nanoGPT's train.py: ddp = int(os.environ.get('RANK', -1)) != -1
ddp = args.ddp and int(os.environ.get("RANK", -1)) != -1
if ddp:
    import torch.distributed as dist

    dist.init_process_group(backend="gloo")
    print(f"DDP rank={dist.get_rank()} world={dist.get_world_size()}", flush=True)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.out = nn.Linear(64, 10)

    def forward(self, x):
        return self.out(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=96, d=32, t=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(t, d)
        self.blocks = nn.ModuleList([Block(d, 4) for _ in range(2)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


if args.model == "transformer":
    model = TinyLM().to(device)
else:
    model = MLP().to(device)
raw_model = model
if ddp:
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(model)

params = model.parameters()
if args.opt == "adamw":
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=True)
elif args.opt == "adamw-fused":
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True)
elif args.opt == "sgd-momentum":
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9, foreach=True)
elif args.opt == "adam-wd":
    opt = torch.optim.Adam(params, lr=1e-3, weight_decay=1e-4, foreach=True)
else:
    raise SystemExit("unknown --opt " + args.opt)

use_scaler = args.amp == "fp16"
scaler = torch.amp.GradScaler("cuda", enabled=use_scaler)
amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.amp)


def batch():
    if args.model == "transformer":
        x = torch.randint(0, 96, (4, 16))
        return x.to(device), torch.roll(x, -1, 1).to(device)
    return torch.randn(16, 32).to(device), torch.randint(0, 10, (16,)).to(device)


def loss_of(x, y):
    with torch.autocast("cuda", dtype=amp_dtype, enabled=amp_dtype is not None):
        logits = model(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))


opt_ran = 0


def count_opt_step(optimizer, args, kwargs):
    global opt_ran
    opt_ran += 1


opt.register_step_post_hook(count_opt_step)
step = 0
for it in range(args.steps):
    for micro in range(args.accum):
        x, y = batch()
        loss = loss_of(x, y) / args.accum
        scaler.scale(loss).backward()
    step += 1
    for p in model.parameters():
        if p.grad is not None:
            print(f"TRUTH step={step} ptr={p.grad.data_ptr()} bytes={p.grad.numel() * p.grad.element_size()}",
                  flush=True)
    if args.clip:
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    print(f"OPT step={step} ran={opt_ran}", flush=True)
    opt.zero_grad(set_to_none=args.zero != "zeros")

torch.cuda.synchronize()
print(f"DONE steps={step} opt_steps={opt_ran}", flush=True)
if ddp:
    dist.destroy_process_group()
