# SPDX-License-Identifier: MIT
# mmap_edges.py FILE EXPECTED: mmap(2) of a sharded block view through libc
# (ctypes), at its edges: the whole view, a page-multiple offset, a length
# past the view's end (zeros there, not the next rank's bytes), an offset
# off a page (EINVAL, as the kernel) and a shared writable map (EACCES);
# munmap of each map succeeds.  Prints "fine" or what differed.
import ctypes
import mmap
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
FAILED = ctypes.c_void_p(-1).value
P = mmap.PAGESIZE
want = open(sys.argv[2], "rb").read()
fd = os.open(sys.argv[1], os.O_RDONLY)
bad = []


def mapped(length, off, prot=mmap.PROT_READ, flags=mmap.MAP_PRIVATE):
    p = libc.mmap(None, length, prot, flags, fd, off)
    if p == FAILED:
        return None, ctypes.get_errno()
    b = ctypes.string_at(p, length)
    if libc.munmap(p, length) != 0:
        bad.append("munmap(%d, %d) failed" % (off, length))
    return b, 0


if os.fstat(fd).st_size != len(want):
    bad.append("size %d, want %d" % (os.fstat(fd).st_size, len(want)))
b, e = mapped(len(want), 0)
if b != want:
    bad.append("whole view (errno %d)" % e)
if len(want) > 2 * P:
    b, e = mapped(len(want) - P, P)
    if b != want[P:]:
        bad.append("from one page in (errno %d)" % e)
b, e = mapped(len(want) + 3 * P, 0)
if b is None or b[:len(want)] != want or b[len(want):] != bytes(3 * P):
    bad.append("past the end: not the view then zeros (errno %d)" % e)
if mapped(P, 100)[1] != 22:
    bad.append("an offset off a page is not EINVAL")
if mapped(P, 0, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED)[1] != 13:
    bad.append("a shared writable map is not EACCES")
print("fine" if not bad else "; ".join(bad))
