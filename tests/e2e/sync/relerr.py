#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# relerr.py A B [TOL] - relative L2 error ||a - b|| / ||b|| between two
# float32 save files (little-endian, same size), computed independently of
# libddp.  Prints "relerr X" and exits 0 when X <= TOL (if given), 1 when
# above, 2 on bad input (different sizes, not a multiple of 4, NaN).
import math
import struct
import sys
from array import array


def load(path):
    a = array("f")
    with open(path, "rb") as f:
        data = f.read()
    if len(data) % 4:
        sys.exit("relerr.py: %s: %d bytes is not a whole number of floats" % (path, len(data)))
    a.frombytes(data)
    if sys.byteorder != "little":
        a.byteswap()
    return a


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: relerr.py A B [TOL]")
    a, b = load(sys.argv[1]), load(sys.argv[2])
    if len(a) != len(b) or not a:
        print("relerr.py: sizes differ (%d vs %d floats)" % (len(a), len(b)))
        sys.exit(2)
    num = sum((x - y) * (x - y) for x, y in zip(a, b))
    den = sum(y * y for y in b)
    if math.isnan(num) or math.isnan(den) or den == 0.0:
        print("relerr.py: NaN or zero reference")
        sys.exit(2)
    err = math.sqrt(num / den)
    print("relerr %.3e" % err)
    if len(sys.argv) == 4:
        sys.exit(0 if err <= float(sys.argv[3]) else 1)


if __name__ == "__main__":
    main()
