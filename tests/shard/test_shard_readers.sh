#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_shard_readers.sh - `ddprun -n 2 --shard` under the readers real
# training programs use (issue 30): a C++ trainer's std::ifstream (g++,
# libstdc++), nanoGPT's loader (a new np.memmap per batch, of a headerless
# token file and of a token shard with a 1024-byte header), and a DataLoader
# with fork workers reading records by open/seek/read and tokens by
# np.memmap.  Each rank must read exactly its share, byte for byte, against
# expectations built here from the real files (tests/shard/shardlib.py's
# index lists, not the C code), and a block view's np.memmap must map the
# real file (no anonymous copy of the view) and unmap it whole; mmap(2) at
# the edges of a block view (tests/shard/py/mmap_edges.py).
set -u
BUILD=${BUILD:-build}
root=$(pwd)
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
DDPRUN=$build/bin/ddprun
IFS_PROG=$build/tests/shard/ifstream_read
py=$root/tests/shard/py
for f in "$DDPRUN" "$build/lib/libddp.so" "$IFS_PROG"; do
	[ -e "$f" ] || { echo "$f is not built; run make"; exit 77; }
done
for v in $(env | sed -n 's/^\(DDPRUN_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset RANK WORLD_SIZE LOCAL_RANK DDP_SHARD DDP_SHARD_FILES LD_PRELOAD
tmp=$(mktemp -d /tmp/ddp_shard_readers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
ok() { echo "ok - $1"; }
notok() { echo "not ok - $1"; fails=1; }
# a python with numpy: the system one, else the torch venv's
PY=
for p in python3 "$HOME/.cache/ddprun/torch-2.15.0/bin/python3"; do
	if "$p" -c 'import numpy' 2>/dev/null; then PY=$p; break; fi
done

mkdir data
python3 "$root/tests/shard/shardlib.py" gen data || { echo "not ok - generate data"; exit 1; }
# nanoGPT's train.bin: headerless uint16 tokens, an odd count (uneven split)
python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<100003H", *((i * 7919) % 65521 for i in range(100003))))' >nano.bin
# the expectations, per rank: "<what> <size> <md5>"
PYTHONPATH=$root/tests/shard python3 - >exp <<'PY'
import hashlib, shardlib
def md5(b): return hashlib.md5(b).hexdigest()
nano = open("nano.bin", "rb").read()
for r in range(2):
    ix = shardlib.indices("block", "keep", len(nano) // 2, 2, r)
    toks = b"".join(nano[2 * i:2 * i + 2] for i in ix)
    rec = shardlib.expect("data/train.ddprec", "ddprec", "stride", "keep", 2, r)
    t16 = shardlib.expect("data/tok16.bin", "tokens16", "block", "keep", 2, r)[1024:]
    print(r, "ifs-rec", len(rec), md5(rec))
    print(r, "ifs-nano", len(toks), md5(toks))
    print(r, "mm-nano", "tokens=%d md5=%s mapped=True batches=True unmapped=True" % (len(toks) // 2, md5(toks)))
    print(r, "mm-tok16", "tokens=%d md5=%s mapped=True batches=True unmapped=True" % (len(t16) // 2, md5(t16)))
    print(r, "workers", "records=%d md5=%s tokens=%d md5=%s workers=2" % ((len(rec) - 64) // 24, md5(rec[64:]), len(toks) // 2, md5(toks)))
PY
exp() { sed -n "s/^$1 $2 //p" exp; }
shards=(--shard data/train.ddprec --shard data/tok16.bin --shard nano.bin:record=2:mode=block)
# run LABEL CMD...: ddprun -n 2 with the three specs; out.LABEL holds "[rank R] ..." lines
run() {
	local label=$1
	shift
	"$DDPRUN" -n 2 "${shards[@]}" "$@" >"out.$label" 2>"err.$label" || { echo "# $label: exit $?"; sed 's/^/# /' "err.$label" | tail -5; }
}
# got LABEL R: rank R's line
got() { sed -n "s/^\[rank $2\] //p" "out.$1"; }

# 1. std::ifstream: a DDPREC record file (stride) and the raw token file (block)
run ifs-rec sh -c 'echo $("$0" data/train.ddprec 64 24 | wc -c) $("$0" data/train.ddprec 64 24 | md5sum)' "$IFS_PROG"
run ifs-nano sh -c 'echo $("$0" nano.bin 0 2 | wc -c) $("$0" nano.bin 0 2 | md5sum)' "$IFS_PROG"
for label in ifs-rec ifs-nano; do
	for r in 0 1; do
		read -r want_n want_md5 <<<"$(exp $r $label)"
		read -r n m _ <<<"$(got $label $r)"
		if [ "$n" = "$want_n" ] && [ "$m" = "$want_md5" ]; then
			ok "$label: std::ifstream on rank $r reads its share ($n bytes)"
		else
			notok "$label: std::ifstream on rank $r reads its share (want $want_n $want_md5, got '$(got $label $r)')"
			sed 's/^/# /' "err.$label" | tail -3
		fi
	done
done
# negative control: the same program without the view reads the whole file
[ "$("$IFS_PROG" data/train.ddprec 64 24 | wc -c)" = "$(stat -c %s data/train.ddprec)" ] &&
	ok "control: ifstream_read alone reads the whole file" || notok "control: ifstream_read alone reads the whole file"

# 2. np.memmap per batch (nanoGPT), 3. a DataLoader with fork workers
if [ -z "$PY" ]; then
	echo "skip - np.memmap and fork workers: no python with numpy (python3, the torch venv)"
else
	run mm-nano "$PY" "$py/memmap_batches.py" nano.bin 0
	run mm-tok16 "$PY" "$py/memmap_batches.py" data/tok16.bin 1024
	run workers "$PY" "$py/fork_workers.py" data/train.ddprec 64 24 nano.bin
	for label in mm-nano mm-tok16 workers; do
		for r in 0 1; do
			if [ "$(got $label $r)" = "$(exp $r $label)" ]; then
				ok "$label: rank $r reads exactly its share ($(got $label $r | cut -c1-40)...)"
			else
				notok "$label: rank $r reads exactly its share (want '$(exp $r $label)', got '$(got $label $r)')"
				sed 's/^/# /' "err.$label" | tail -3
			fi
		done
	done
	# negative control: without ddprun the loader sees the whole file
	"$PY" "$py/memmap_batches.py" nano.bin 0 | grep -q '^tokens=100003 ' &&
		ok "control: memmap_batches alone sees all 100003 tokens" || notok "control: memmap_batches alone sees all 100003 tokens"
fi
# mmap(2) at the edges of rank 1's block view (a slice that starts off a
# page), libddp preloaded by hand
PYTHONPATH=$root/tests/shard python3 -c 'import shardlib, sys
d = open("nano.bin", "rb").read()
sys.stdout.buffer.write(b"".join(d[2 * i:2 * i + 2] for i in shardlib.indices("block", "keep", len(d) // 2, 2, 1)))' >exp.nano1
res=$(RANK=1 WORLD_SIZE=2 DDP_SHARD=nano.bin:record=2:mode=block LD_PRELOAD=$build/lib/libddp.so \
	python3 "$py/mmap_edges.py" nano.bin exp.nano1 2>&1 | tail -1)
check_line() { if [ "$2" = fine ]; then ok "$1"; else notok "$1: $2"; fi; }
check_line "mmap of a block view: whole, from a page, past the end (zeros), EINVAL off a page, EACCES shared writable" "$res"
exit $fails
