#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_errno.sh - the file hooks keep errno on success, and a sharded file
# opens with O_DIRECT (tests/shard/progs/errno_keep.c).  Write redirection:
# rank 1 with its lookups finding no side copy (ENOENT inside the hook),
# folders created (EEXIST inside), copies, renames and unlinks of shared
# files (whiteouts).  Sharding: the first call (the library's init), stat of a sharded
# path (the virtual size is computed by an open of its own), opens.
set -u
BUILD=${BUILD:-build}
root=$(pwd)
# SHARD_PRELOAD=LIB runs the same checks with another preload library.
lib=${SHARD_PRELOAD:-$BUILD/lib/libddp.so}
case $lib in /*) ;; *) lib=$root/$lib ;; esac
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
build=$(cd "$build" && pwd -P) || exit 1
prog=$build/tests/shard/errno_keep
[ -f "$lib" ] && [ -x "$prog" ] || { echo "not ok - $lib or $prog missing"; exit 1; }
tmp=$(mktemp -d /tmp/ddp_errno.XXXXXX)
export DDP_TEMP_DIRS=$tmp TMPDIR=$tmp
# the job folder must not be a temporary folder (its files are not redirected)
case $build in /tmp/* | /var/tmp/*) jobroot=$root ;; *) jobroot=$build/tests/shard ;; esac
job=$(mktemp -d "$jobroot/.errno-test.XXXXXX")
trap 'rm -rf "$tmp" "$job"' EXIT
fails=0

cd "$job" || exit 1
echo shared >shared.txt
echo other >other.txt
echo third >third.txt
RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=$job/.ddprun DDP_WRITE_KEEP=1 LD_PRELOAD=$lib "$prog" write shared.txt \
	2>err || fails=1
sed 's/^/# /' err
side=$(echo "$job"/.ddprun/rank1/run-*)$job
if [ -f "$side/sub/dir/renamed.bin" ] && [ -f "$side/sub/other-copy.txt" ] && [ -f other.txt ] &&
   [ ! -e sub/dir/renamed.bin ] && [ ! -e sub ] && [ "$(cat shared.txt)" = shared ] &&
   [ -f third.txt ]; then
	echo "ok - the redirected files went to the side folder, the shared ones stayed"
else
	echo "not ok - the redirected files went to the side folder, the shared ones stayed"
	fails=1
fi

# a raw file of 11 records of 16 bytes, record k filled with byte k
python3 -c 'import sys; sys.stdout.buffer.write(b"".join(bytes([k])*16 for k in range(11)))' >data.bin
for r in 0 1; do
	RANK=$r WORLD_SIZE=2 DDP_SHARD="data.bin:record=16:mode=stride" LD_PRELOAD=$lib "$prog" shard data.bin 11 $r \
		2>err || fails=1
	sed 's/^/# /' err
done
exit $fails
