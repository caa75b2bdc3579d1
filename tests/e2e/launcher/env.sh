#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# env.sh - the environment ddprun gives each rank (launcher/spawn.c):
# identity, store, secret, LD_PRELOAD of libddp.so, devices, DDP_* settings.
. "$(dirname "$0")/lib.sh"

# an install layout: bin/ddprun, lib/libddp.so (a stub), cpudev/lib/libcuda.so.1
inst=$TMP/inst
mkdir -p "$inst/bin" "$inst/lib" "$inst/cpudev/lib" "$TMP/other"
cp "$DDPRUN" "$inst/bin/ddprun"
cp "$STUB" "$inst/lib/libddp.so"
cp "$STUB" "$inst/cpudev/lib/libcuda.so.1"
cp "$STUB" "$TMP/other/libother.so"
D=$inst/bin/ddprun
VARS="RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR MASTER_PORT LD_PRELOAD
LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES PYTORCH_NO_CUDA_MEMORY_CACHING XLA_PYTHON_CLIENT_ALLOCATOR
DDP_BACKEND DDP_SHARD DDP_WRITE_DIR DDP_ALL_RANKS_WRITE DDP_TRACE DDP_CHECK DDP_TIMEOUT DDP_LOG"

out=$TMP/out
(cd "$TMP" && env -u DDPRUN_NO_PRELOAD -u PYTORCH_NO_CUDA_MEMORY_CACHING LD_PRELOAD="$TMP/other/libother.so" XLA_PYTHON_CLIENT_ALLOCATOR=mine \
	LD_LIBRARY_PATH=/opt/x "$D" -n 3 "$PROG" env $VARS >"$out" 2>"$TMP/err")
rc=$?
check "3 ranks exit 0" [ $rc = 0 ]
for k in 0 1 2; do
	check "rank $k: RANK" has "$out" "^\[rank $k\] RANK=$k$"
	has "$out" "^\[rank $k\] LOCAL_RANK=$k$" && has "$out" "^\[rank $k\] WORLD_SIZE=3$" &&
		has "$out" "^\[rank $k\] LOCAL_WORLD_SIZE=3$" && has "$out" "^\[rank $k\] GROUP_RANK=0$"
	check "rank $k: LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK" [ $? = 0 ]
done
check "MASTER_ADDR is loopback on one node" [ "$(grep -c '\] MASTER_ADDR=127.0.0.1$' "$out")" = 3 ]
ports=$(sed -n 's/.*\] MASTER_PORT=\([0-9]*\)$/\1/p' "$out" | sort -u)
check "one MASTER_PORT for all ranks, not 0" [ "$(echo "$ports" | wc -l)" = 1 -a "${ports:-0}" != 0 ]
check "secret: 64 hex digits, not in any argv" [ "$(grep -c '\] SECRET_OK=yes$' "$out")" = 3 ]
check "LD_PRELOAD: existing entry kept, libddp.so appended" \
	[ "$(grep -c "\] LD_PRELOAD=$TMP/other/libother.so:$inst/lib/libddp.so$" "$out")" = 3 ]
check "CPU device: simcuda dir prepended to LD_LIBRARY_PATH" \
	[ "$(grep -c "\] LD_LIBRARY_PATH=$inst/cpudev/lib:/opt/x$" "$out")" = 3 ]
check "CPU device: said once" [ "$(grep -c '^ddprun: no GPU found; ranks run on the CPU device' "$TMP/err")" = 1 ]
check "no CUDA_VISIBLE_DEVICES on the CPU device" [ "$(grep -c '\] CUDA_VISIBLE_DEVICES<unset>$' "$out")" = 3 ]
check "framework allocator settings: PyTorch's caching allocator left on, the user's XLA value kept" \
	[ "$(grep -c '\] PYTORCH_NO_CUDA_MEMORY_CACHING<unset>$' "$out")" = 3 -a \
	  "$(grep -c '\] XLA_PYTHON_CLIENT_ALLOCATOR=mine$' "$out")" = 3 ]
check "DDP_WRITE_DIR defaults to ./.ddprun (absolute)" [ "$(grep -c "\] DDP_WRITE_DIR=$TMP/.ddprun$" "$out")" = 3 ]
check "no DDP_* option variables when no option was given" \
	[ "$(grep -cE '\] DDP_(BACKEND|SHARD|TRACE|CHECK|TIMEOUT|LOG|ALL_RANKS_WRITE)<unset>$' "$out")" = 21 ]
check "the secret never reaches the output" hasnt "$TMP/err" 'SECRET='

# options -> DDP_* variables
printf '0123456789abcdef' >"$TMP/a.bin"
printf '0123456789abcdef' >"$TMP/b.bin"
(cd "$TMP" && env -u DDPRUN_NO_PRELOAD "$D" -n 2 --backend host --shard "$TMP/a.bin:record=4:header=0:mode=block" \
	--shard "$TMP/b.bin:record=4:header=0:mode=block" --trace tr --check 5 --timeout 60 -vv --all-ranks-write \
	--log-dir logs "$PROG" env $VARS >"$out" 2>"$TMP/err")
check "options run exits 0" [ $? = 0 ]
for pair in "DDP_BACKEND=host" "DDP_SHARD=$TMP/a.bin:record=4:header=0:mode=block\\\\n$TMP/b.bin:record=4:header=0:mode=block" \
	"DDP_TRACE=$TMP/tr" "DDP_CHECK=5" "DDP_TIMEOUT=60" "DDP_LOG=debug" "DDP_ALL_RANKS_WRITE=1" \
	"DDP_WRITE_DIR=$TMP/logs/$(readlink "$TMP/logs/latest")"; do
	check "option gives ${pair%%=*}" [ "$(grep -c "\] $pair\$" "$out")" = 2 ]
done
check "--trace and --log-dir directories made" [ -d "$TMP/tr" -a -d "$TMP/logs" ]

# missing libddp.so: error before anything starts
mkdir -p "$TMP/bare/bin"
cp "$DDPRUN" "$TMP/bare/bin/ddprun"
env -u DDPRUN_NO_PRELOAD "$TMP/bare/bin/ddprun" -n 2 "$PROG" exit 0 0 >"$out" 2>"$TMP/err"
rc=$?
check "missing libddp.so: exit 1, one ddprun: line" [ $rc = 1 -a "$(wc -l <"$TMP/err")" = 1 ]
check "missing libddp.so: message names the file" has "$TMP/err" "^ddprun: the library .*/lib/libddp.so is missing"

# GPUs (DDPRUN_FAKE_GPUS stands in for the driver's count)
DDPRUN_FAKE_GPUS=2 "$DDPRUN" -n 3 "$PROG" env CUDA_VISIBLE_DEVICES LD_LIBRARY_PATH >"$out" 2>"$TMP/err"
check "3 ranks on 2 GPUs: round-robin 0,1,0" [ "$(grep -h 'CUDA_VISIBLE' "$out" | sort | tr '\n' ' ')" = \
	"[rank 0] CUDA_VISIBLE_DEVICES=0 [rank 1] CUDA_VISIBLE_DEVICES=1 [rank 2] CUDA_VISIBLE_DEVICES=0 " ]
check "ranks sharing GPUs: a warning" has "$TMP/err" '^ddprun: warning: 3 ranks share 2 GPUs'
check "GPU ranks: no simcuda in LD_LIBRARY_PATH" hasnt "$out" 'simcuda'
DDPRUN_FAKE_GPUS=4 "$DDPRUN" -n 2 --gpus 3,1 "$PROG" env CUDA_VISIBLE_DEVICES >"$out" 2>&1
check "--gpus 3,1 in order" [ "$(grep -h 'CUDA_VISIBLE' "$out" | sort | tr '\n' ' ')" = \
	"[rank 0] CUDA_VISIBLE_DEVICES=3 [rank 1] CUDA_VISIBLE_DEVICES=1 " ]
DDPRUN_FAKE_GPUS=2 CUDA_VISIBLE_DEVICES=5,7 "$DDPRUN" -n 2 "$PROG" env CUDA_VISIBLE_DEVICES >"$out" 2>&1
check "inherited CUDA_VISIBLE_DEVICES is split among ranks" [ "$(grep -h 'CUDA_VISIBLE' "$out" | sort | tr '\n' ' ')" = \
	"[rank 0] CUDA_VISIBLE_DEVICES=5 [rank 1] CUDA_VISIBLE_DEVICES=7 " ]
DDPRUN_FAKE_GPUS=2 "$DDPRUN" -n 2 --gpus 2 "$PROG" env >"$out" 2>"$TMP/err"
check "--gpus beyond the GPUs found: exit 2" [ $? = 2 ]
check "--gpus beyond the GPUs found: message" has "$TMP/err" "^ddprun: --gpus 2 names GPU 2 but only 2 GPUs are visible$"
DDPRUN_FAKE_GPUS=0 "$DDPRUN" -n 2 --device gpu "$PROG" env >"$out" 2>"$TMP/err"
check "--device gpu without a GPU: exit 2" [ $? = 2 ]
check "--device gpu without a GPU: message" has "$TMP/err" "^ddprun: --device gpu: no GPU was found"
DDPRUN_FAKE_GPUS=2 "$DDPRUN" -n 1 --device cpu "$PROG" env CUDA_VISIBLE_DEVICES LD_LIBRARY_PATH >"$out" 2>&1
check "--device cpu with GPUs present: CPU device" has "$out" '\] LD_LIBRARY_PATH=.*/cpudev/lib' 

# CPU device with its cuBLAS stand-ins next to libcuda.so.1: preloaded after
# libddp.so (a program's own cuBLAS, found by its RPATH, must not win)
cp "$STUB" "$inst/cpudev/lib/libcublasLt.so.13"
cp "$STUB" "$inst/cpudev/lib/libcublas.so.13"
(cd "$TMP" && env -u DDPRUN_NO_PRELOAD LD_PRELOAD="$TMP/other/libother.so" "$D" -n 2 "$PROG" env LD_PRELOAD >"$out" 2>"$TMP/err")
check "CPU device: cuBLAS stand-ins preloaded after libddp.so" \
	[ "$(grep -c "\] LD_PRELOAD=$TMP/other/libother.so:$inst/lib/libddp.so:$inst/cpudev/lib/libcublasLt.so.13:$inst/cpudev/lib/libcublas.so.13$" "$out")" = 2 ]
finish
