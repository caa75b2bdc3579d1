#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_shard_check.sh - ddp-shard-check SPEC N (ddp_shard_check_spec, what
# ddprun runs before starting ranks) accepts good specs and rejects bad ones
# with one clear line naming the problem and the fix; and the preload library
# refuses to show a file whose layout went bad after the check.
set -u
BUILD=${BUILD:-build}
root=$(pwd)
# BUILD may be relative to the checkout or absolute
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
chk=$build/bin/ddp-shard-check
# SHARD_PRELOAD=LIB runs the same checks with another preload library.
lib=${SHARD_PRELOAD:-$BUILD/lib/libddp.so}
case $lib in /*) ;; *) lib=$root/$lib ;; esac
[ -x "$chk" ] || { echo "not ok - $chk missing"; exit 1; }
tmp=$(mktemp -d /tmp/ddp_shard_check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
python3 "$root/tests/shard/shardlib.py" gen . || exit 1
head -c 1000 /dev/zero >data.bin
fails=0

good() { # SPEC N WANT-IN-STDOUT
	if out=$("$chk" "$1" "$2" 2>&1) && [[ "$out" == *"$3"* ]]; then
		echo "ok - accepts $1"
	else
		echo "not ok - accepts $1"; echo "$out" | sed 's/^/# /'; fails=1
	fi
}
bad() { # SPEC N EXPECTED-MESSAGE
	out=$("$chk" "$1" "$2" 2>&1)
	rc=$?
	if [ $rc = 1 ] && [ "$out" = "$3" ]; then
		echo "ok - rejects $1"
	else
		echo "not ok - rejects $1 (exit $rc)"; echo "# got:  $out"; echo "# want: $3"; fails=1
	fi
}

good "train.ddprec" 4 "rank 3: 9 records, first 3, step 4"
good "x1.npy:mode=block:pad" 4 "rank 3: 8 records, first 24, step 1"
good "tok16.bin" 2 "rank 1: 1500 records, first 1501, step 1"
good "x?.npy" 3 "x3.npy: npy, 128-byte header, 102 records of 32 bytes"
good "data.bin:record=100:header=0:mode=stride" 3 "rank 0: 4 records"
bad "data.bin:record=64:header=16" 2 \
	"ddprun: --shard data.bin: size 1000 is not a whole number of 64-byte records after a 16-byte header; give record=BYTES and header=BYTES"
bad "data.bin" 2 \
	"ddprun: --shard data.bin: unknown file format (no DDPREC01, MNIST idx, npy or token-shard header); give record=BYTES, header=BYTES and mode=block or mode=stride"
bad "nothere*.bin" 2 "ddprun: --shard nothere*.bin: no file matches nothere*.bin"
bad "data.bin:mode=zigzag" 2 \
	"ddprun: --shard data.bin:mode=zigzag: mode=zigzag is not a mode; use mode=stride or mode=block"
bad "data.bin:record=10:pad:drop" 2 "ddprun: --shard data.bin:record=10:pad:drop: give at most one of :pad and :drop"
bad "data.bin:recrd=10" 2 \
	"ddprun: --shard data.bin:recrd=10: unknown option 'recrd'; use mode=, record=, header=, pad or drop"
bad "train.ddprec:header=16" 2 \
	"ddprun: --shard train.ddprec: header=16 does not match the DDPREC01 records header of 64 bytes; leave header= out"
bad "tok32.bin:record=6" 2 \
	"ddprun: --shard tok32.bin: record=6 does not split the token shard data (1332 bytes of 4-byte items) into whole records; use a multiple of 4 that divides it"
head -c 400 x1.npy >trunc.npy
bad "trunc.npy" 2 \
	"ddprun: --shard trunc.npy: npy header declares 29 records of 12 bytes after a 128-byte header, but the file has 400 bytes"
python3 - <<'PY'
d = open("x1.npy", "rb").read().replace(b"'fortran_order': False", b"'fortran_order': True ")
open("fortran.npy", "wb").write(d)
PY
bad "fortran.npy" 2 \
	"ddprun: --shard fortran.npy: npy array is stored in Fortran order; rows are not contiguous, save it with numpy.ascontiguousarray"

# A file that goes bad after the check: the open fails (EINVAL) with one
# error line rather than showing every rank the whole file.
cp train.ddprec late.ddprec
printf 'x' >>late.ddprec
out=$(RANK=1 WORLD_SIZE=2 DDP_SHARD="$tmp/late.ddprec" LD_PRELOAD=$lib cat late.ddprec 2>&1 >/dev/null)
rc=$?
if [ $rc != 0 ] && [[ "$out" == *"libddp ERROR"*"late.ddprec: DDPREC01 records header declares 37 records"*"refusing to open it unsharded"* ]] &&
	[[ "$out" == *"Invalid argument"* ]]; then
	echo "ok - a file that no longer matches its header is refused at open"
else
	echo "not ok - a file that no longer matches its header is refused at open (exit $rc)"; echo "$out" | sed 's/^/# /'; fails=1
fi
exit $fails
