#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_write_safety.sh - on ranks other than 0 the files a program creates or
# truncates go to $DDP_WRITE_DIR/rank<k>/run-*/<absolute path> (kept here with
# DDP_WRITE_KEEP=1 to be inspected).  tests/shard/progs/
# ckpt.c (checkpoint via tmp + rename, read back; a log with "w" then "a";
# a scratch file created and unlinked; a file in /tmp; /dev/null) runs as
# ranks 0 and 1 at once with the file hooks preloaded.  Rank 0's files must be
# exactly what the program writes alone, rank 1's must be under
# DDP_WRITE_DIR/rank1/run-*/..., with nothing lost; DDP_ALL_RANKS_WRITE=1, a
# plain run (no RANK) and /tmp (protected too) are checked as well.
set -u
BUILD=${BUILD:-build}
root=$(pwd)
# BUILD may be relative to the checkout or absolute
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
# SHARD_PRELOAD=LIB runs the same checks with another preload library.
lib=${SHARD_PRELOAD:-$BUILD/lib/libddp.so}
case $lib in /*) ;; *) lib=$root/$lib ;; esac
ckpt=$build/tests/shard/ckpt
[ -f "$lib" ] && [ -x "$ckpt" ] || { echo "not ok - $lib or $ckpt missing"; exit 1; }
tmp=$(mktemp -d /tmp/ddp_write.XXXXXX)
# Temporary folders are never redirected.  When this checkout itself lives in
# one (a CI clone under /tmp), only $tmp counts as temporary for these runs.
export DDP_TEMP_DIRS=$tmp TMPDIR=$tmp
# the job folder must not be a temporary folder (their files are not redirected)
job=$(mktemp -d "$build/tests/shard/job.XXXXXX")
trap 'rm -rf "$tmp" "$job"' EXIT
fails=0
ok() { echo "ok - $1"; }
notok() { echo "not ok - $1"; fails=1; }

# What one process writes alone (no RANK): the reference.
mkdir -p "$job/solo" && cd "$job/solo" || exit 1
RANK=0 "$ckpt" out "$tmp/solo.tmp" 2>err0 || notok "reference run"
# ckpt derives its data from RANK: rank 0 alone is the reference.
cd "$job" || exit 1

mkdir work && cd work || exit 1
RANK=0 WORLD_SIZE=2 DDP_WRITE_DIR=../.ddprun LD_PRELOAD=$lib "$ckpt" out "$tmp/r0.tmp" 2>err0 &
p0=$!
RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=../.ddprun DDP_WRITE_KEEP=1 DDP_LOG=info LD_PRELOAD=$lib "$ckpt" out "$tmp/r1.tmp" 2>err1 &
p1=$!
wait $p0 && wait $p1 && ok "both ranks ran, and each read back what it wrote" ||
	{ notok "both ranks ran"; sed 's/^/# /' err0 err1; }

run1=$(echo "$job"/.ddprun/rank1/run-*)
side=$run1$job/work
if cmp -s out/ckpt.bin "$job/solo/out/ckpt.bin" && cmp -s out/train.log "$job/solo/out/train.log"; then
	ok "rank 0's files are exactly what one process writes"
else
	notok "rank 0's files are exactly what one process writes"
fi
if [ -f "$side/out/ckpt.bin" ] && [ "$(stat -c %s "$side/out/ckpt.bin")" = 100000 ] &&
	! cmp -s "$side/out/ckpt.bin" out/ckpt.bin &&
	[ "$(grep -c '^rank 1 ' "$side/out/train.log")" = 4 ] && [ "$(wc -l <"$side/out/train.log")" = 4 ]; then
	ok "rank 1's checkpoint and log are under DDP_WRITE_DIR/rank1/run-*/<absolute path>"
else
	notok "rank 1's checkpoint and log are under DDP_WRITE_DIR/rank1/run-*/<absolute path>"
	find "$job/.ddprun" | sed 's/^/# /'
fi
if [ ! -e out/ckpt.bin.tmp ] && [ ! -e "$side/out/ckpt.bin.tmp" ] && [ ! -e out/scratch-1 ] &&
	[ ! -e "$side/out/scratch-1" ] && [ ! -e out/scratch-0 ]; then
	ok "renamed and unlinked files are gone on both ranks"
else
	notok "renamed and unlinked files are gone on both ranks"
fi
if [ ! -e "$tmp/r1.tmp" ] && grep -q "rank 1" "$run1$tmp/r1.tmp" && [ ! -e "$run1/dev" ]; then
	ok "/tmp is protected too; /dev/null is not redirected"
else
	notok "/tmp is protected too; /dev/null is not redirected"
fi
if grep -q "rank 1 writes out/ckpt.bin.tmp to $side/out/ckpt.bin.tmp" err1 &&
	[ "$(grep -c "writes out/train.log" err1)" = 1 ]; then
	ok "each redirected file is logged once at info"
else
	notok "each redirected file is logged once at info"; sed 's/^/# /' err1
fi

# DDP_ALL_RANKS_WRITE=1: rank 1 writes in place.
mkdir "$job/all" && cd "$job/all" || exit 1
RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=../.ddprun-all DDP_ALL_RANKS_WRITE=1 LD_PRELOAD=$lib "$ckpt" out "$tmp/all.tmp" 2>err
if [ -f out/ckpt.bin ] && grep -q "^rank 1 done" out/train.log && [ ! -e "$job/.ddprun-all" ]; then
	ok "DDP_ALL_RANKS_WRITE=1 turns redirection off"
else
	notok "DDP_ALL_RANKS_WRITE=1 turns redirection off"
fi

# No RANK (a plain run): nothing is redirected even with the library loaded.
mkdir "$job/plain" && cd "$job/plain" || exit 1
DDP_WRITE_DIR=../.ddprun-plain LD_PRELOAD=$lib "$ckpt" out "$tmp/plain.tmp" 2>err
if [ -f out/ckpt.bin ] && [ ! -e "$job/.ddprun-plain" ]; then
	ok "a plain run redirects nothing"
else
	notok "a plain run redirects nothing"
fi

# Temporary files are redirected too; a side copy shadows reads; an existing
# file opened r+ is copied up before it is changed.
mkdir "$job/tmpdir" && cd "$job/tmpdir" || exit 1
echo original >shared.txt
RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=../.ddprun-tmp DDP_WRITE_KEEP=1 LD_PRELOAD=$lib python3 - "$tmp/py.tmp" <<'PY' 2>err
import os, sys
with open(sys.argv[1], "w") as f:
    f.write("tmp\n")
with open("shared.txt", "r+") as f:
    assert f.read() == "original\n"
    f.write("more\n")
assert open("shared.txt").read() == "original\nmore\n"
assert os.path.exists(sys.argv[1])
os.replace(sys.argv[1], "moved.txt")
assert open("moved.txt").read() == "tmp\n"
os.remove("shared.txt")   # a rank other than 0 never deletes shared files
assert not os.path.exists("shared.txt")   # but it is gone for this rank
PY
rc=$?
s=$(echo "$job"/.ddprun-tmp/rank1/run-*)
if [ $rc = 0 ] && [ ! -e "$tmp/py.tmp" ] && [ "$(cat shared.txt)" = original ] &&
	[ "$(cat "$s$job/tmpdir/moved.txt")" = tmp ] && [ ! -e moved.txt ]; then
	ok "DDP_REDIRECT_TMP, copy-up on r+, rename from a side copy, shared files kept"
else
	notok "DDP_REDIRECT_TMP, copy-up on r+, rename from a side copy, shared files kept (exit $rc)"
	sed 's/^/# /' err; find "$job/.ddprun-tmp" | sed 's/^/# /'
fi
exit $fails
