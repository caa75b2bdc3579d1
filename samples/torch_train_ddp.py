#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""torch_train_ddp.py - torch_train.py's PyTorch DDP twin, as its users write it.

The same model, initialisation, optimizer, clipping, autocast and GradScaler as
samples/torch_train.py, made data-parallel the way the PyTorch tutorials do
it: launched by torchrun (one process per rank; RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR/PORT from it), torch.distributed.init_process_group
(nccl on CUDA, gloo with --device cpu), the model wrapped in
torch.nn.parallel.DistributedDataParallel, and a map-style Dataset over the
DDPREC01 file read through a DistributedSampler (shuffle=False,
drop_last=False) and a DataLoader.  It exists so that tests/gpu/run.sh can
put ddprun beside what its users would run instead, on the same script.

    torchrun --nproc_per_node N torch_train_ddp.py --data PATH [--steps S] [--batch B] ...

takes torch_train.py's options (--batch is per rank).  N ranks at batch B
train like one torch_train.py process at N*B: with shuffle=False the sampler
gives rank r the records r, r+N, r+2N, ..., so step s of the N ranks covers
the records N*B*s .. N*B*(s+1)-1, the batch of one process at N*B (DDP
averages the gradients).  This holds across epochs when N*B divides the
record count (29664 for build/data/mlp.rec); epochs restart with
sampler.set_epoch, as users write it.

Output: rank 0 prints `step K loss V` (its own batch's loss) and
`torch_train_ddp: ran N steps on DEVICE in S s` (the training loop) and
`torch_train_ddp: start-up S s` (process start to the first step: imports,
process group, DDP's parameter broadcast); --save PATH is written by rank 0
only, in torch_train.py's layout.
"""
import os
import sys
import time

T_PROC = time.monotonic()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_train as tt  # noqa: E402  (the twin's model, init and data format)

PROG = "torch_train_ddp"


def main(argv):
    tt.PROG = PROG
    args = tt.parse_args(argv)
    data = tt.RecordFile(args.data)
    K = data.context
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    try:
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, Dataset
        from torch.utils.data.distributed import DistributedSampler
    except ImportError as e:
        tt.die(1, "cannot import PyTorch (%s); install torch to run this script" % e)
    if "RANK" not in os.environ:
        tt.die(2, "run me under torchrun (RANK is not set)")

    class Records(Dataset):
        """Record i: (context tokens, target), read with os.pread."""

        def __len__(self):
            return data.record_count

        def __getitem__(self, i):
            rb = data.record_bytes
            b = os.pread(data.fd, rb, data.header_bytes + i * rb)
            t = torch.frombuffer(bytearray(b), dtype=torch.uint8).long()
            return t[:K], t[K]

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(tt.VOCAB, tt.EMB)
            self.fc1 = nn.Linear(tt.EMB * K, tt.HIDDEN)
            self.fc2 = nn.Linear(tt.HIDDEN, tt.VOCAB)

        def forward(self, ctx):
            x = self.emb(ctx).flatten(1)
            return self.fc2(torch.tanh(self.fc1(x)))

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        if not torch.cuda.is_available():
            tt.die(1, "--device cuda: PyTorch sees no CUDA device (use --device cpu)")
        dev = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl", device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False

    model = MLP()
    f32 = lambda x: tt.array("f", [x])[0]
    scales = (0.5, f32(1.0 / f32(tt.math.sqrt(tt.EMB * K))), 0.0, f32(1.0 / f32(tt.math.sqrt(tt.HIDDEN))), 0.0)
    state = args.seed
    with torch.no_grad():
        for p, scale in zip(model.parameters(), scales):
            if scale == 0.0:
                p.zero_()
                continue
            vals, state = tt.splitmix_uniform(state, p.numel(), scale)
            p.copy_(torch.tensor(vals.tolist(), dtype=torch.float32).view_as(p))
    model.to(dev)
    ddp = DDP(model, device_ids=[dev.index] if dev.type == "cuda" else None)

    kw = {}
    if args.fused:
        kw["fused"] = True
    elif args.foreach:
        kw["foreach"] = True
    opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr, weight_decay=args.weight_decay, **kw)
    sampler = DistributedSampler(Records(), num_replicas=world, rank=rank, shuffle=False, drop_last=False)
    scaler = torch.amp.GradScaler(dev.type, enabled=args.amp_fp16)
    amp_dtype = torch.float16 if args.amp_fp16 else torch.bfloat16
    loader = DataLoader(Records(), batch_size=args.batch, sampler=sampler, num_workers=0, drop_last=True)

    def batches():
        epoch = 0
        while True:
            sampler.set_epoch(epoch)
            yield from loader
            epoch += 1

    it = batches()
    if dev.type == "cuda":
        torch.cuda.synchronize()
        dev_name = torch.cuda.get_device_name(dev)
    else:
        dev_name = "cpu"
    t0 = time.monotonic()
    for step in range(1, args.steps + 1):
        ctx, target = next(it)
        opt.zero_grad(set_to_none=not args.keep_grads)
        ctx, target = ctx.to(dev), target.to(dev)
        with torch.autocast(device_type=dev.type, dtype=amp_dtype, enabled=args.amp_bf16 or args.amp_fp16):
            logits = ddp(ctx)
        loss = F.cross_entropy(logits.float(), target)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), args.clip)
        scaler.step(opt)
        scaler.update()
        if rank == 0:
            print("step %d loss %.6f" % (step, loss.item()), flush=True)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    if rank == 0:
        sys.stdout.flush()
        sys.stderr.write("%s: start-up %.2f s\n" % (PROG, t0 - T_PROC))
        sys.stderr.write("%s: ran %d steps on %s in %.2f s\n" % (PROG, args.steps, dev_name,
                                                                 time.monotonic() - t0))
    if args.save and rank == 0:
        out = tt.array("f")
        for p in model.parameters():
            out.extend(p.detach().float().cpu().reshape(-1).tolist())
        if sys.byteorder != "little":
            out.byteswap()
        try:
            with open(args.save, "wb") as f:
                f.write(out.tobytes())
        except OSError as e:
            tt.die(1, "cannot write %s: %s" % (args.save, e.strerror))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
