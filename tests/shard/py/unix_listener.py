# SPDX-License-Identifier: MIT
# unix_listener.py NAMELEN - what Python's multiprocessing (and PyTorch's
# DataLoader workers through it) does: a folder from tempfile.mkdtemp, a
# unix socket bound in it, a forked child that connects and sends its rank.
# Prints "rank R got R path-length N" and whether the socket file is gone
# after close.
import multiprocessing as mp, os, sys, tempfile
from multiprocessing.connection import Client, Listener


def child(addr):
    c = Client(addr)
    c.send(os.environ.get("RANK"))
    c.close()


if __name__ == "__main__":
    d = tempfile.mkdtemp(prefix="pymp-")
    addr = os.path.join(d, "listener-")
    addr += "x" * max(1, int(sys.argv[1]) - len(addr))
    lis = Listener(addr, family="AF_UNIX")
    p = mp.get_context("fork").Process(target=child, args=(addr,))
    p.start()
    c = lis.accept()
    print("rank %s got %s path-length %d" % (os.environ.get("RANK"), c.recv(), len(addr)), flush=True)
    p.join()
    lis.close()
    print("rank %s socket file gone: %s" % (os.environ.get("RANK"), not os.path.exists(addr)), flush=True)
    os.rmdir(d)
