#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_write_unix.sh - a unix socket bound in a folder a rank made, under
# write redirection (libc overlay, ranks >= 1): Python multiprocessing's
# Listener in a tempfile.mkdtemp folder, a forked child connecting to it
# (what PyTorch's DataLoader workers do).  On rank 1 the folder exists only
# in the rank's private run folder, so bind() and connect() must map the
# socket's path as open() maps a file's (interpose/hook_net.c); a mapped
# path longer than sun_path goes through /proc/self/fd of its folder (the
# 100-character case).  Each rank must get its own child's message and the
# socket file must be gone after close (unlink redirected the same way).
# Fails on a library without the bind hook: rank 1's bind gives ENOENT.
set -u
BUILD=${BUILD:-build}
ddprun=$BUILD/bin/ddprun
[ -x "$ddprun" ] && [ -f "$BUILD/lib/libddp.so" ] || { echo "not ok - $ddprun or libddp.so missing"; exit 1; }
command -v python3 >/dev/null || { echo "skip - python3 is not installed"; exit 77; }
for v in $(env | sed -n 's/^\(DDP[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset RANK WORLD_SIZE LOCAL_RANK
out=$(mktemp /tmp/ddp_unix.XXXXXX)
trap 'rm -f "$out"' EXIT
fail=0
for n in 40 100; do
	timeout 60 "$ddprun" -n 2 python3 tests/shard/py/unix_listener.py $n >"$out" 2>&1
	rc=$?
	for k in 0 1; do
		if grep -q "^\[rank $k\] rank $k got $k path-length $n$" "$out" &&
			grep -q "^\[rank $k\] rank $k socket file gone: True$" "$out"; then
			echo "ok - $n-character socket path: rank $k's child reached its own listener, file removed"
		else
			echo "not ok - $n-character socket path, rank $k (exit $rc): $(grep -v '^ddprun' "$out" | tail -2)"
			fail=1
		fi
	done
done
exit $fail
