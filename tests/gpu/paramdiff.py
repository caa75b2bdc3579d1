#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# paramdiff.py A B INIT [MAXREL] - how far two float32 parameter files (the
# samples' --save layout, little-endian) are apart, for models too large for
# tests/e2e/sync/relerr.py's pure-Python loop (gpt2_torch.py: 124M floats).
# Reads the files with torch.from_file (no numpy needed), computed
# independently of libddp.  Prints one line
#
#   max_abs X rel_update Y (||B - INIT|| Z)
#
# max_abs: max |A - B|; rel_update: ||A - B|| / ||B - INIT||, the distance
# measured against what training moved (with bf16 and AdamW the parameters
# themselves hide it: |param| >> |update|).  Exits 0 when rel_update <=
# MAXREL (if given), 1 when above, 2 on bad input (sizes differ, NaN, B ==
# INIT).
import os
import sys


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit("usage: paramdiff.py A B INIT [MAXREL]")
    import warnings
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch
    paths = sys.argv[1:4]
    sizes = [os.path.getsize(p) for p in paths]
    if len(set(sizes)) != 1 or sizes[0] % 4 or sizes[0] == 0:
        print("paramdiff.py: sizes differ or are not whole floats (%s)" % ", ".join(map(str, sizes)))
        sys.exit(2)
    n = sizes[0] // 4
    a, b, i = (torch.from_file(p, shared=False, size=n, dtype=torch.float32).double() for p in paths)
    d = a - b
    upd = (b - i).norm().item()
    mx, dn = d.abs().max().item(), d.norm().item()
    if any(x != x for x in (mx, dn, upd)) or upd == 0.0:
        print("paramdiff.py: NaN, or B equals INIT (nothing trained)")
        sys.exit(2)
    rel = dn / upd
    print("max_abs %.3e rel_update %.3e (||B - INIT|| %.3e)" % (mx, rel, upd))
    if len(sys.argv) == 5 and not rel <= float(sys.argv[4]):
        sys.exit(1)


if __name__ == "__main__":
    main()
