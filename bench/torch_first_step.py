# SPDX-License-Identifier: MIT
#
# bench/torch_first_step.py - one training step of a small MLP with the real
# PyTorch wheel (AdamW, foreach), then `FIRST_STEP_END <unix seconds>`: the
# moment the first step's work is done (bench/torch_startup.sh).
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(16, 32).cuda(), torch.randint(0, 10, (16,)).cuda()
F.cross_entropy(model(x), y).backward()
opt.step()
opt.zero_grad()
torch.cuda.synchronize()
print(f"FIRST_STEP_END {time.time():.6f} {time.process_time():.3f}", flush=True)
