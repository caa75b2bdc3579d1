# SPDX-License-Identifier: MIT
# fork_workers.py RECFILE HEADER RECORD TOKFILE: a DataLoader with two
# workers, as PyTorch makes it (fork, each worker opens the files itself in
# __getitem__): records by open()/seek()/read() of RECFILE, and token
# windows by np.memmap of TOKFILE (headerless uint16).  The parent puts the
# items back in index order and prints the md5 of each stream.
import hashlib
import multiprocessing as mp
import os
import sys

import numpy as np

rec_path, header, record, tok_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
n_rec = (os.path.getsize(rec_path) - header) // record
n_tok = os.path.getsize(tok_path) // 2
win = 100


def rec_item(i):
    with open(rec_path, "rb") as f:
        f.seek(header + i * record)
        return f.read(record)


def tok_item(i):
    data = np.memmap(tok_path, dtype=np.uint16, mode="r")
    return np.array(data[i * win:min((i + 1) * win, n_tok)]).tobytes()


def work(job):
    kind, idx = job
    fn = rec_item if kind == "rec" else tok_item
    return [(i, fn(i), os.getpid()) for i in idx]


if __name__ == "__main__":
    ctx = mp.get_context("fork")
    n_win = -(-n_tok // win)
    jobs = [("rec", range(w, n_rec, 2)) for w in range(2)] + [("tok", range(w, n_win, 2)) for w in range(2)]
    with ctx.Pool(2) as pool:
        parts = pool.map(work, jobs)
    pids = {p for part in parts for _, _, p in part}
    recs = sorted(x for part in parts[:2] for x in part)
    toks = sorted(x for part in parts[2:] for x in part)
    print("records=%d md5=%s tokens=%d md5=%s workers=%d" % (
        len(recs), hashlib.md5(b"".join(b for _, b, _ in recs)).hexdigest(), n_tok,
        hashlib.md5(b"".join(b for _, b, _ in toks)).hexdigest(), len(pids - {os.getpid()})))
