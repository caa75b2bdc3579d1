#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# shard_fifo.sh - a --shard spec naming a FIFO (or another non-regular file)
# is refused at once with one line; opening it would wait for a writer forever.
. "$(dirname "$0")/lib.sh"
mkfifo "$TMP/pipe.bin"
t0=$(now_ms)
timeout 10 "$DDPRUN" -n 2 --shard "$TMP/pipe.bin:record=4:header=0" true >"$TMP/out" 2>"$TMP/err"
rc=$? t=$(($(now_ms) - t0))
check "--shard FIFO: usage error, exit 2 (got $rc)" [ $rc = 2 ]
check "--shard FIFO: at once (${t} ms)" [ $t -lt 2000 ]
check "--shard FIFO: one line naming it" has "$TMP/err" "^ddprun: --shard $TMP/pipe.bin: $TMP/pipe.bin is not a regular file$"
timeout 10 "$DDPRUN" -n 2 --shard "/dev/zero:record=4:header=0" true >"$TMP/out" 2>"$TMP/err"
check "--shard /dev/zero (a device): refused" [ $? = 2 ]
finish
