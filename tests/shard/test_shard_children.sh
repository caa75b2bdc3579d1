#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_shard_children.sh - a sharded file open while the program starts a
# child keeps its view.  A vfork() child (and posix_spawn's, and Python's
# subprocess, which use a clone sharing the parent's memory) runs in the
# parent's memory until it execs; when it closed its inherited fds, libddp
# dropped the PARENT's view and the parent read the whole file from then on
# (PyTorch starts such children when torch._C loads: a data file opened
# before `import torch` went unsharded, exit 0).  Checked byte for byte
# against tests/shard/shardlib.py's expectation, in C (tests/shard/progs/
# spawn_read.c: vfork + close/close_range, posix_spawn, fork) and in Python
# (subprocess.run with close_fds, os.posix_spawn), ranks 0..2 of 3.
# Negative control: the same programs with DDP_SHARD unset must read the
# whole file (the check could see a difference).
set -u
BUILD=${BUILD:-build}
root=$(pwd)
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
lib=$build/lib/libddp.so
prog=$build/tests/shard/spawn_read
py="python3 $root/tests/shard/shardlib.py"
for f in "$lib" "$prog"; do
	[ -e "$f" ] || { echo "not ok - built: $f missing (make build-all)"; exit 1; }
done
tmp=$(mktemp -d /tmp/ddp_shard_children.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
mkdir data exp
$py gen data >/dev/null || { echo "not ok - generate test data"; exit 1; }
$py expect-all data/data.raw raw stride keep 3 exp || { echo "not ok - expectations"; exit 1; }
cat >reader.py <<'PY'
import os, subprocess, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
first = os.read(fd, size // 2)
subprocess.run(["true"], check=True)               # vfork-style, closes fds
pid = os.posix_spawn("/bin/true", ["true"], dict(os.environ))
os.waitpid(pid, 0)
rest = os.read(fd, size)
sys.stdout.buffer.write(first + rest)
PY
fails=0
spec=:record=12:header=5:mode=stride
for r in 0 1 2; do
	run() { RANK=$r WORLD_SIZE=3 DDP_SHARD="$tmp/data/data.raw$spec" LD_PRELOAD=$lib "$@"; }
	run "$prog" data/data.raw >c.out 2>c.err && cmp -s c.out exp/exp_3_$r ||
		{ echo "not ok - C children: rank $r of 3 read $(wc -c <c.out) bytes, its view is $(wc -c <exp/exp_3_$r) ($(head -c 300 c.err))"; fails=1; }
	run python3 reader.py data/data.raw >p.out 2>p.err && cmp -s p.out exp/exp_3_$r ||
		{ echo "not ok - Python subprocess: rank $r of 3 read $(wc -c <p.out) bytes, its view is $(wc -c <exp/exp_3_$r) ($(head -c 300 p.err))"; fails=1; }
done
[ $fails = 0 ] && echo "ok - a child started while a sharded file is open (vfork, posix_spawn, fork; C and Python subprocess) leaves the parent's view: ranks 0..2 of 3 read their views byte for byte"
# negative control: unsharded, the same reading gives the whole file
LD_PRELOAD=$lib "$prog" data/data.raw >whole.out 2>/dev/null
if cmp -s whole.out data/data.raw && ! cmp -s whole.out exp/exp_3_1; then
	echo "ok - control: without DDP_SHARD the same program reads the whole file, which differs from rank 1's view"
else
	echo "not ok - control: without DDP_SHARD the program did not read the whole file"; fails=1
fi
exit $fails
