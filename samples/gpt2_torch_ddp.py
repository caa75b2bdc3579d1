#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gpt2_torch_ddp.py - gpt2_torch.py's PyTorch DDP twin, as nanoGPT's users write it.

The same model, initialisation, optimizer, learning rate, autocast and
clipping as samples/gpt2_torch.py (imported from it), made data-parallel the
way nanoGPT's train.py and the PyTorch tutorials do: launched by torchrun
(RANK, LOCAL_RANK, WORLD_SIZE from it), init_process_group (nccl on CUDA,
gloo with --device cpu), torch.cuda.set_device(LOCAL_RANK), the model wrapped
in DistributedDataParallel(device_ids=[local_rank]), the optimizer built on
the raw model, clip_grad_norm_ on the DDP module's parameters, rank 0 the
master process (logging, saving).  Data: a map-style Dataset of the file's
(T+1)-token windows through a DistributedSampler(shuffle=False) and a
DataLoader, so rank r reads the windows r, r+N, r+2N, ... - what `ddprun
--shard PATH:mode=stride:record=2*(T+1)` gives gpt2_torch.py's rank r, and
N ranks at batch B train like one gpt2_torch.py process at N*B.

    torchrun --nproc_per_node N gpt2_torch_ddp.py --data PATH [gpt2_torch.py's options]

(--batch is per rank).  Output as gpt2_torch.py's, from rank 0, with
`gpt2_torch_ddp:` in place of `gpt2_torch:`; --save is written by rank 0.
"""
import os
import sys
import time

T_PROC = time.monotonic()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_torch as g  # noqa: E402

PROG = "gpt2_torch_ddp"


def main(argv):
    g.PROG = PROG
    args = g.parse_args(argv)
    if args.make_data:
        g.die(2, "--make-data: use gpt2_torch.py")
    T = g.SIZES[args.size][3]
    try:
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, Dataset
        from torch.utils.data.distributed import DistributedSampler
    except ImportError as e:
        g.die(1, "cannot import PyTorch (%s); install torch to run this script" % e)
    if "RANK" not in os.environ:
        g.die(2, "run me under torchrun (RANK is not set)")
    data = g.Windows(args.data, T, g.SIZES[args.size][4])

    class TokenWindows(Dataset):
        """Window i: (tokens 0..T-1, tokens 1..T) of the i-th T+1 tokens, by os.pread."""

        def __len__(self):
            return data.n

        def __getitem__(self, i):
            w = 2 * (T + 1)
            b = os.pread(data.fd, w, 4 * g.HEADER_INTS + i * w)
            t = torch.frombuffer(bytearray(b), dtype=torch.int16).long() & 0xFFFF
            return t[:-1], t[1:]

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        if not torch.cuda.is_available():
            g.die(1, "--device cuda: PyTorch sees no CUDA device (use --device cpu)")
        dev = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl", device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    master = rank == 0
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    if args.no_cudnn_attention:
        torch.backends.cuda.enable_cudnn_sdp(False)

    GPT, _, _ = g.build(torch, args.size)
    torch.manual_seed(args.seed)
    raw = GPT()
    if args.save_init and master:
        g.save_params(torch, raw, args.save_init)
    raw.to(dev)
    model = DDP(raw, device_ids=[dev.index] if dev.type == "cuda" else None)
    opt = raw.configure_optimizers(0.1, args.lr, args.opt)
    sampler = DistributedSampler(TokenWindows(), num_replicas=world, rank=rank, shuffle=False, drop_last=False)
    loader = DataLoader(TokenWindows(), batch_size=args.batch, sampler=sampler, num_workers=0, drop_last=True)

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
        lr = g.lr_at(step, args.lr, args.warmup)
        for pg in opt.param_groups:
            pg["lr"] = lr
        x, y = next(it)
        x, y = x.to(dev), y.to(dev)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=not args.no_amp):
            _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if master:
            print("step %d loss %.6f" % (step, loss.item()), flush=True)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    if master:
        sys.stdout.flush()
        sys.stderr.write("%s: ran %d steps on %s in %.2f s\n" % (PROG, args.steps, dev_name, time.monotonic() - t0))
        sys.stderr.write("%s: start-up %.2f s\n" % (PROG, t0 - T_PROC))
        if dev.type == "cuda":
            sys.stderr.write("%s: peak memory %.2f GiB\n" % (PROG, torch.cuda.max_memory_allocated(dev) / 2**30))
        if args.save:
            g.save_params(torch, raw, args.save)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
