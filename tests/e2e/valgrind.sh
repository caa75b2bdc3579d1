#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# valgrind.sh - memcheck over the pieces that live in other people's
# processes: libddp.so inside a sample on the CPU device (hooks, registry,
# decoder, trace and summary writers), the CPU device itself, and ddprun with
# two ranks.  Any memcheck error or definite leak fails the case.  A few
# steps only: memcheck is ~50x slower.
set -u
BUILD=${BUILD:-build}
command -v valgrind >/dev/null || { echo "valgrind is not installed"; exit 77; }
for f in "$BUILD/lib/libddp.so" "$BUILD/cpudev/lib/libcuda.so.1" "$BUILD/samples/mlp" \
	"$BUILD/samples/charlm" "$BUILD/bin/ddprun" "$BUILD/data/mlp.rec" "$BUILD/data/charlm.rec"; do
	[ -e "$f" ] || { echo "$f is not built"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)

check() { # name, then the command
	local name=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then
		echo "ok - $name"
	else
		echo "not ok - $name (exit $?)"
		grep -v '^step ' "$tmp/out" | tail -n 30 | sed 's/^/# /'
	fi
}

check "mlp under libddp (trace on) is memcheck-clean" \
	env LD_LIBRARY_PATH="$BUILD/cpudev/lib" LD_PRELOAD="$BUILD/lib/libddp.so" DDP_TRACE="$tmp/trace" \
	"${vg[@]}" "$BUILD/samples/mlp" --data "$BUILD/data/mlp.rec" --steps 3 --batch 8 --save "$tmp/mlp.bin"
check "charlm --amp under libddp is memcheck-clean" \
	env LD_LIBRARY_PATH="$BUILD/cpudev/lib" LD_PRELOAD="$BUILD/lib/libddp.so" \
	"${vg[@]}" "$BUILD/samples/charlm" --data "$BUILD/data/charlm.rec" --steps 2 --batch 4 --amp
check "ddprun with two ranks (output, store, supervision) is memcheck-clean" \
	env DDPRUN_NO_PRELOAD=1 "${vg[@]}" "$BUILD/bin/ddprun" -n 2 --log-dir "$tmp/logs" -- sh -c 'echo rank $RANK; echo err >&2'
check "ddprun's device planning (fake GPUs, inherited CUDA_VISIBLE_DEVICES, --gpus) is memcheck-clean" \
	sh -c 'DDPRUN_NO_PRELOAD=1 DDPRUN_FAKE_GPUS=2 CUDA_VISIBLE_DEVICES=3,5 "$@" -n 3 --dry-run true &&
	       DDPRUN_NO_PRELOAD=1 DDPRUN_FAKE_GPUS=4 CUDA_VISIBLE_DEVICES=7,6,5,4 "$@" --gpus 1,3 -n 2 --dry-run true &&
	       DDPRUN_NO_PRELOAD=1 "$@" --bogus-option 2>/dev/null; [ $? = 2 ]' _ "${vg[@]}" "$BUILD/bin/ddprun"
