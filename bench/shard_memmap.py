# SPDX-License-Identifier: MIT
# shard_memmap.py PATH ITERS: nanoGPT's get_batch (a new np.memmap of the
# token file per batch, 12 windows of 1024 tokens) ITERS times; prints the
# median np.memmap construction time and the median whole batch time, in
# microseconds (bench/shard_memmap.sh).
import os
import statistics
import sys
import time

import numpy as np

path, iters = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(int(os.environ.get("RANK", "0")))
make, batch = [], []
for _ in range(iters):
    t0 = time.perf_counter()
    data = np.memmap(path, dtype=np.uint16, mode="r")
    t1 = time.perf_counter()
    ix = rng.integers(0, len(data) - 1024, 12)
    x = np.stack([np.array(data[i:i + 1024], dtype=np.int64) for i in ix])
    t2 = time.perf_counter()
    make.append(t1 - t0)
    batch.append(t2 - t0)
    del data, x
print("tokens=%d memmap_us=%.1f batch_us=%.1f" % (len(np.memmap(path, dtype=np.uint16, mode="r")),
                                                  statistics.median(make) * 1e6, statistics.median(batch) * 1e6))
