# SPDX-License-Identifier: MIT
#
# nccl_allreduce.py - torch.distributed as its users start it: env://
# rendezvous (MASTER_ADDR/PORT, RANK, WORLD_SIZE from the launcher), backend
# "nccl" (the wheel's NCCL 2.30), one all_reduce, a barrier, teardown.
# Prints "rank R of W: all_reduce returned" (tests/torch/nccl.sh).
import os
import torch
import torch.distributed as dist

torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
dist.init_process_group("nccl")
x = torch.full((1024,), float(dist.get_rank() + 1), device="cuda")
dist.all_reduce(x)
dist.barrier()
torch.cuda.synchronize()
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: all_reduce returned", flush=True)
dist.destroy_process_group()
