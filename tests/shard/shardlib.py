#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# shardlib.py - data files and independent expectations for tests/shard.
#
#   shardlib.py gen DIR            writes one file per format into DIR
#   shardlib.py expect FILE KIND MODE UNEVEN N R OUT
#                                  writes what rank R of N must see
#   shardlib.py expect-all FILE KIND MODE UNEVEN NMAX DIR
#                                  writes DIR/exp_N_R for N = 1..NMAX
#   shardlib.py parse KIND FILE    parses FILE by its format (hand parsers,
#                                  no numpy) and prints "count=C records=N
#                                  md5=M", checking that the header's count
#                                  and the size agree
#   shardlib.py union KIND MODE UNEVEN NMAX FILE DIR
#                                  checks that DIR/cat_N_0.. (N = 1..NMAX)
#                                  together hold the original records, record
#                                  for record
#
# The expectations are built from the spec in docs/sharding.md, not from the
# C code: the header is parsed here, the records listed, the rank's index
# list made the way PyTorch's DistributedSampler makes it.
import hashlib
import os
import struct
import sys

# ---- formats: (header bytes, record bytes, count, rewrite(header, count))


def layout(kind, data):
    if kind == "ddprec":
        assert data[:8] == b"DDPREC01"
        hb, rb, cnt = struct.unpack_from("<IIQ", data, 8)

        def rw(h, c):
            return h[:16] + struct.pack("<Q", c) + h[24:]
        return hb, rb, cnt, rw
    if kind in ("idx_images", "idx_labels"):
        nd = data[3]
        dims = struct.unpack_from(">%dI" % nd, data, 4)
        rec = 1
        for d in dims[1:]:
            rec *= d

        def rw(h, c):
            return h[:4] + struct.pack(">I", c) + h[8:]
        return 4 + 4 * nd, rec, dims[0], rw
    if kind.startswith("npy"):
        assert data[:6] == b"\x93NUMPY"
        if data[6] == 1:
            hl, pre = struct.unpack_from("<H", data, 8)[0], 10
        else:
            hl, pre = struct.unpack_from("<I", data, 8)[0], 12
        d = eval(data[pre:pre + hl].decode("latin1"))  # a dict literal, as numpy reads it
        item = int(d["descr"][2:])
        shape = d["shape"]
        rec = item
        for s in shape[1:]:
            rec *= s

        def rw(h, c):
            txt = h[pre:].decode("latin1")
            old = "(%d," % shape[0]
            new = "(%d," % c
            i = txt.index(old)
            body = txt[:i] + new + txt[i + len(old):]
            body = body[:-1] + " " * (len(txt) - len(body)) + "\n"
            return h[:pre] + body.encode("latin1")
        return pre + hl, rec, shape[0], rw
    if kind.startswith("tokens"):
        magic, ver, cnt = struct.unpack_from("<3i", data, 0)
        rec = 2 if magic == 20240520 else 4

        def rw(h, c):
            return h[:8] + struct.pack("<i", c) + h[12:]
        return 1024, rec, cnt, rw
    if kind == "raw":
        return 5, 12, (len(data) - 5) // 12, lambda h, c: h
    raise SystemExit("unknown kind " + kind)


FILES = {
    "ddprec": "train.ddprec",
    "idx_images": "images-idx3-ubyte",
    "idx_labels": "labels-idx1-ubyte",
    "npy1": "x1.npy",
    "npy2": "x2.npy",
    "npy3": "x3.npy",
    "tokens16": "tok16.bin",
    "tokens32": "tok32.bin",
    "raw": "data.raw",
}


def npy(version, descr, shape, payload):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (descr, tuple(shape))
    pre = 10 if version == 1 else 12
    hl = (pre + len(d) + 1 + 63) // 64 * 64 - pre
    body = (d + " " * (hl - len(d) - 1) + "\n").encode("latin1")
    if version == 1:
        head = b"\x93NUMPY\x01\x00" + struct.pack("<H", hl)
    else:
        head = b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", hl)
    return head + body + payload


def gen(d):
    def noise(n, seed):
        out = bytearray()
        x = seed
        while len(out) < n:
            x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            out += struct.pack("<Q", x)
        return bytes(out[:n])
    files = {}
    cnt, rec = 37, 24
    files["ddprec"] = (b"DDPREC01" + struct.pack("<IIQII", 64, rec, cnt, 1000, 5)
                       + bytes(32) + noise(cnt * rec, 1))
    files["idx_images"] = struct.pack(">IIII", 0x803, 23, 4, 3) + noise(23 * 12, 2)
    files["idx_labels"] = struct.pack(">II", 0x801, 61) + bytes(i % 10 for i in range(61))
    files["npy1"] = npy(1, "<f4", (29, 3), noise(29 * 12, 3))
    files["npy2"] = npy(2, "<i2", (11,), noise(22, 4))
    files["npy3"] = npy(3, "<f8", (102, 2, 2), noise(102 * 32, 5))
    files["tokens16"] = struct.pack("<256i", 20240520, 1, 3001, *([0] * 253)) + noise(6002, 6)
    files["tokens32"] = struct.pack("<256i", 20240801, 1, 333, *([0] * 253)) + noise(1332, 7)
    files["raw"] = b"HEAD!" + noise(17 * 12, 8)
    for k, v in files.items():
        with open(os.path.join(d, FILES[k]), "wb") as f:
            f.write(v)


def indices(mode, uneven, m, n, r):
    """The rank's source records, DistributedSampler style."""
    if m == 0:
        return []
    idx = list(range(m))
    total = m
    if uneven == "pad":
        total = -(-m // n) * n
        while len(idx) < total:
            idx += idx[:total - len(idx)]
    elif uneven == "drop":
        total = m // n * n
        idx = idx[:total]
    if mode == "stride":
        return idx[r::n]
    sizes = [total // n + (1 if q < total % n else 0) for q in range(n)]
    start = sum(sizes[:r])
    return idx[start:start + sizes[r]]


def expect(path, kind, mode, uneven, n, r):
    data = open(path, "rb").read()
    hb, rb, cnt, rw = layout(kind, data)
    assert hb + rb * cnt == len(data), "test data inconsistent"
    ix = indices(mode, uneven, cnt, n, r)
    return rw(data[:hb], len(ix)) + b"".join(data[hb + i * rb:hb + (i + 1) * rb] for i in ix)


def records(kind, data):
    hb, rb, cnt, _ = layout(kind, data)
    if hb + rb * cnt != len(data):
        raise SystemExit("%s: header count %d does not match size %d" % (kind, cnt, len(data)))
    return [data[hb + i * rb:hb + (i + 1) * rb] for i in range(cnt)]


def parse_line(kind, data):
    recs = records(kind, data)
    return "count=%d records=%d md5=%s" % (layout(kind, data)[2], len(recs),
                                           hashlib.md5(b"".join(recs)).hexdigest())


def union(kind, mode, uneven, n, path, outs):
    outs = [records(kind, open(p, "rb").read()) for p in outs]
    orig = records(kind, open(path, "rb").read())
    if mode == "stride":
        merged = [None] * sum(len(o) for o in outs)
        for r, o in enumerate(outs):
            merged[r::n] = o
    else:
        merged = [x for o in outs for x in o]
    if uneven == "keep" and merged != orig:
        return "union of %d ranks differs from the original" % n
    if uneven == "drop" and merged != orig[:len(orig) // n * n]:
        return "union of %d ranks differs from the trimmed original" % n
    if uneven == "pad" and mode == "stride" and merged[:len(orig)] != orig:
        return "padded union of %d ranks does not start with the original" % n
    if len(set(len(o) for o in outs)) > 1 and uneven != "keep":
        return "%d ranks differ in length despite :%s" % (n, uneven)
    return None


def main():
    cmd = sys.argv[1]
    if cmd == "gen":
        gen(sys.argv[2])
    elif cmd == "expect":
        path, kind, mode, uneven, n, r, out = sys.argv[2:9]
        with open(out, "wb") as f:
            f.write(expect(path, kind, mode, uneven, int(n), int(r)))
    elif cmd == "expect-all":
        path, kind, mode, uneven, nmax, d = sys.argv[2:8]
        for n in range(1, int(nmax) + 1):
            for r in range(n):
                data = expect(path, kind, mode, uneven, n, r)
                with open(os.path.join(d, "exp_%d_%d" % (n, r)), "wb") as f:
                    f.write(data)
                with open(os.path.join(d, "exp_%d_%d.parse" % (n, r)), "w") as f:
                    f.write(parse_line(kind, data) + "\n")
    elif cmd == "parse":
        kind, path = sys.argv[2:4]
        with open(path, "rb") as f:
            data = f.read()
        print(parse_line(kind, data))
    elif cmd == "union":
        # union KIND MODE UNEVEN NMAX FILE DIR: DIR/cat_N_R for N = 1..NMAX
        kind, mode, uneven, nmax, path, d = sys.argv[2:8]
        bad = [m for m in (union(kind, mode, uneven, n, path,
                                 [os.path.join(d, "cat_%d_%d" % (n, r)) for r in range(n)])
                           for n in range(1, int(nmax) + 1)) if m]
        if bad:
            raise SystemExit("; ".join(bad))
    else:
        raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":
    main()
