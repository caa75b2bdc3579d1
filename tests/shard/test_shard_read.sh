#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_shard_read.sh - unmodified programs read their rank's shard through the
# file hooks (build/lib/libddp.so preloaded; RANK/WORLD_SIZE set
# by hand).  For every format and N = 1..4 ranks, each rank's view read by
# cat, md5sum, wc -c, dd bs=7 skip=3, stat, a stdio program (fopen/fread/
# fseek/ftell/fgets/fgetc), an mmap program and Python's own file objects
# must equal the expected view that tests/shard/shardlib.py builds
# independently (header with the rank's count, then the rank's records), and
# the ranks' records together must be the original's, record for record.
set -u
BUILD=${BUILD:-build}
root=$(pwd)
# BUILD may be relative to the checkout or absolute
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
# SHARD_PRELOAD=LIB runs the same checks with another preload library.
lib=${SHARD_PRELOAD:-$BUILD/lib/libddp.so}
case $lib in /*) ;; *) lib=$root/$lib ;; esac
progs=$build/tests/shard
py="python3 $root/tests/shard/shardlib.py"
for f in "$lib" "$progs/stdio_read" "$progs/mmapsum"; do
	[ -x "$f" ] || [ -f "$f" ] || { echo "not ok - built: $f missing (make $f)"; exit 1; }
done
tmp=$(mktemp -d /tmp/ddp_shard_read.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
mkdir data
$py gen data || { echo "not ok - generate test data"; exit 1; }

# kind  file  spec-options  mode  uneven
cases=(
	"ddprec     train.ddprec       -                         stride keep"
	"ddprec     train.ddprec       :pad                      stride pad"
	"ddprec     train.ddprec       :mode=block:drop          block  drop"
	"idx_images images-idx3-ubyte  -                         stride keep"
	"idx_labels labels-idx1-ubyte  -                         stride keep"
	"npy1       x1.npy             -                         stride keep"
	"npy2       x2.npy             :mode=block               block  keep"
	"npy3       x3.npy             :pad                      stride pad"
	"tokens16   tok16.bin          -                         block  keep"
	"tokens32   tok32.bin          :mode=stride:drop         stride drop"
	"raw        data.raw           :record=12:header=5:mode=stride stride keep"
	"raw        data.raw           :header=5:record=12:mode=block:pad block pad"
)
fails=0
for c in "${cases[@]}"; do
	read -r kind file opts mode uneven <<<"$c"
	[ "$opts" = - ] && opts=
	name="$kind${opts:+ $opts}"
	rm -rf exp out && mkdir exp out
	$py expect-all "data/$file" "$kind" "$mode" "$uneven" 4 exp || { echo "not ok - $name: expectations"; fails=1; continue; }
	for n in 1 2 3 4; do
		bad=
		for ((r = 0; r < n; r++)); do
			exp=exp/exp_${n}_$r
			size=$(stat -c %s "$exp")
			run() { RANK=$r WORLD_SIZE=$n DDP_SHARD="$tmp/data/$file$opts" LD_PRELOAD=$lib "$@"; }
			# cat (through a relative path) and the byte-exact compare
			(cd data && run cat "$file") >out/cat_${n}_$r 2>out/err || bad="$bad cat($r)"
			cmp -s out/cat_${n}_$r "$exp" || bad="$bad cat-bytes($r)"
			[ "$(run stat -c %s "data/$file")" = "$size" ] || bad="$bad stat($r)"
			# every tool on 1 and 3 ranks; 2 and 4 ranks: cat, stat and the union
			if [ $n = 1 ] || [ $n = 3 ]; then
				[ "$(run md5sum "data/$file" | cut -d' ' -f1)" = "$(md5sum <"$exp" | cut -d' ' -f1)" ] || bad="$bad md5sum($r)"
				[ "$(run wc -c "data/$file" | cut -d' ' -f1)" = "$size" ] || bad="$bad wc($r)"
				run dd if="data/$file" bs=7 skip=3 status=none >out/dd 2>>out/err
				tail -c +22 "$exp" | cmp -s - out/dd || bad="$bad dd($r)"
				run "$progs/stdio_read" "data/$file" >out/stdio 2>>out/err && cmp -s out/stdio "$exp" || bad="$bad stdio($r)"
				run "$progs/mmapsum" "data/$file" >out/mmap 2>>out/err && cmp -s out/mmap "$exp" || bad="$bad mmap($r)"
				if [ "$size" -gt 4096 ]; then
					run "$progs/mmapsum" "data/$file" 4096 >out/mmap 2>>out/err &&
						tail -c +4097 "$exp" | cmp -s - out/mmap || bad="$bad mmap@4096($r)"
				fi
			fi
			# Python parses the format from its own file object (slow to start: once)
			if [ $n = 3 ] && [ $r = 1 ]; then
				[ "$(run $py parse "$kind" "data/$file" 2>&1)" = "$(cat "$exp.parse")" ] || bad="$bad python($r)"
			fi
		done
		if [ -z "$bad" ]; then
			echo "ok - $name on $n ranks"
		else
			echo "not ok - $name on $n ranks:$bad"
			sed 's/^/# /' out/err | head -5
			fails=1
		fi
	done
	if $py union "$kind" "$mode" "$uneven" 4 "data/$file" out 2>out/err; then
		echo "ok - $name: the ranks' records together are the original's (1..4 ranks)"
	else
		echo "not ok - $name: union"; sed 's/^/# /' out/err; fails=1
	fi
done

# Files outside the spec, and the unsharded run, pass through unchanged.
run2() { RANK=1 WORLD_SIZE=2 DDP_SHARD="$tmp/data/x1.npy" LD_PRELOAD=$lib "$@"; }
if run2 cat data/x2.npy | cmp -s - data/x2.npy && LD_PRELOAD=$lib cat data/x1.npy | cmp -s - data/x1.npy; then
	echo "ok - unrelated files and unsharded runs read unchanged"
else
	echo "not ok - unrelated files and unsharded runs read unchanged"; fails=1
fi

# A glob spec, several specs, a dup'ed fd, pread and lseek from Python.
$py expect data/x3.npy npy3 stride keep 3 2 exp/x3
$py expect data/tok32.bin tokens32 block keep 3 2 exp/t32
RANK=2 WORLD_SIZE=3 DDP_SHARD="$tmp/data/x?.npy"$'\n'"$tmp/data/tok*.bin" LD_PRELOAD=$lib python3 - <<'PY' >out/py 2>&1
import os
fd = os.open("data/x3.npy", os.O_RDONLY)
fd2 = os.dup(fd)
os.close(fd)
a = os.read(fd2, 100)
assert os.lseek(fd2, 0, os.SEEK_CUR) == 100
b = os.read(fd2, 1 << 20)
assert os.pread(fd2, 50, 60) == (a + b)[60:110]
assert os.lseek(fd2, 0, os.SEEK_END) == len(a + b) == os.fstat(fd2).st_size
os.close(fd2)
exp = open("exp/x3", "rb").read()
assert a + b == exp, "dup'ed fd read"
with open("data/tok32.bin", "rb") as f:
    f.seek(1000)
    t = f.read()
assert t == open("exp/t32", "rb").read()[1000:], "second spec"
print("fine")
PY
if [ "$(cat out/py)" = fine ]; then
	echo "ok - glob and multiple specs, dup, pread, lseek from Python"
else
	echo "not ok - glob and multiple specs, dup, pread, lseek from Python"; sed 's/^/# /' out/py; fails=1
fi
exit $fails
