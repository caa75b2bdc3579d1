# SPDX-License-Identifier: MIT
# memmap_batches.py PATH OFFSET: nanoGPT's loader (train.py get_batch): a new
# np.memmap of the token file for every batch, random windows out of it.
# Prints one line: the token count, the md5 of every token it maps, whether
# the mapping is the real file's (/proc/self/maps, not an anonymous copy)
# whether 40 batches agree with the whole map, and whether the 40 maps were
# all unmapped again (the map's address is not page-aligned under --shard).
import hashlib
import os
import sys

import numpy as np

path, offset = sys.argv[1], int(sys.argv[2])
block, batch = 32, 8
whole = np.memmap(path, dtype=np.uint16, mode="r", offset=offset)
ref = np.array(whole)
real = os.path.realpath(path)


def maps():
    return sum(1 for line in open("/proc/self/maps") if len(line.split()) >= 6 and line.split()[-1] == real)


mapped = maps() > 0
before = maps()
rng = np.random.default_rng(int(os.environ.get("RANK", "0")))
ok = True
for _ in range(40):
    data = np.memmap(path, dtype=np.uint16, mode="r", offset=offset)
    ix = rng.integers(0, len(data) - block, batch)
    x = np.stack([np.array(data[i:i + block]) for i in ix])
    ok = ok and bool((x == np.stack([ref[i:i + block] for i in ix])).all())
    del data
print("tokens=%d md5=%s mapped=%s batches=%s unmapped=%s" % (len(ref), hashlib.md5(ref.tobytes()).hexdigest(), mapped, ok,
                                                             maps() == before))
