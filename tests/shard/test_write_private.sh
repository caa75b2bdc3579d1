#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_write_private.sh - the private folders of ranks other than 0 are made
# safely (docs/write-safety.md "The private folder"): a foreign
# DDP_WRITE_DIR or rank<k> (a symbolic link to a victim, another user's
# folder, a folder others may write) refuses the job with one line and
# leaves the victim untouched; a stale entry that is a link is removed, never
# followed.  Then cases the kernel overlay (DDP_OVERLAY=kernel: a mount
# namespace with overlayfs) handles and the libc overlay did not: chmod,
# utime, chown, shutil.copy2/copytree, a scratch folder made and removed by
# every rank, RENAME_EXCHANGE, four forked workers opening an existing 64 MB
# file O_RDWR.  The kernel cases run as root (or with user namespaces) and
# are skipped with the reason elsewhere; the other-owner case needs root.
set -u
BUILD=${BUILD:-build}
root=$(pwd)
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
ddprun=$build/bin/ddprun
lib=$build/lib/libddp.so
[ -x "$ddprun" ] && [ -f "$lib" ] || { echo "not ok - $ddprun or $lib missing"; exit 1; }
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
job=$(mktemp -d "$build/tests/shard/private.XXXXXX")
tmpjob=$(mktemp -d /tmp/ddp_private.XXXXXX)
trap 'umount "$job/full" "$job/ovf/m" 2>/dev/null; rm -rf "$job" "$tmpjob" /dev/shm/ddp_begun.$$.*' EXIT
export DDP_TEMP_DIRS=$tmpjob TMPDIR=$tmpjob
fails=0
ok() { echo "ok - $1"; }
notok() { echo "not ok - $1"; fails=1; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else notok "$n"; fi; }
show() { sed 's/^/# /' "$1" | head -20; }
# victim DIR: a folder with one file, as another user would aim at
victim() { mkdir -p "$1" && echo precious >"$1/keep.txt"; }
intact() { [ "$(cat "$1/keep.txt" 2>/dev/null)" = precious ] && [ "$(ls -A "$1")" = keep.txt ]; }
# refused DIR NAME: ddprun -n 2 in DIR exits 2 with exactly one refusal line
refused() {
	local d=$1 n=$2 rc
	(cd "$d" && "$ddprun" -n 2 sh -c 'echo ran >ran.txt') >"$d/out" 2>&1
	rc=$?
	if [ $rc = 2 ] && [ "$(grep -c 'refusing to start' "$d/out")" = 1 ] && [ ! -e "$d/ran.txt" ]; then
		ok "$n: refused with one line (exit 2), nothing ran"
	else
		notok "$n: refused with one line (exit $rc)"
		show "$d/out"
	fi
}

# ---- 1. .ddprun/rank1 is a symbolic link to a victim folder
d=$job/s1 && mkdir -p "$d/.ddprun" && victim "$job/victim1"
ln -s "$job/victim1" "$d/.ddprun/rank1"
refused "$d" "1 rank1 -> victim folder"
check "1 the victim folder is untouched" intact "$job/victim1"
grep -q 'symbolic link' "$d/out" || { notok "1 the line says it is a link"; show "$d/out"; }

# ---- 2. .ddprun/rank1 is a symbolic link to a victim file
d=$job/s2 && mkdir -p "$d/.ddprun" && echo precious >"$job/victim2.txt"
ln -s "$job/victim2.txt" "$d/.ddprun/rank1"
refused "$d" "2 rank1 -> victim file"
check "2 the victim file is untouched" [ "$(cat "$job/victim2.txt")" = precious ]

# ---- 3. .ddprun itself is a symbolic link
d=$job/s3 && mkdir -p "$d" && victim "$job/victim3"
ln -s "$job/victim3" "$d/.ddprun"
refused "$d" "3 .ddprun -> victim folder"
check "3 the victim folder is untouched" intact "$job/victim3"

# ---- 4. .ddprun/rank1 others may write (mode 0777)
d=$job/s4 && mkdir -p "$d/.ddprun/rank1" && chmod 0777 "$d/.ddprun/rank1"
refused "$d" "4 rank1 mode 0777"

# ---- 5. .ddprun or rank1 owned by another user (root only: chown)
if [ "$(id -u)" = 0 ]; then
	d=$job/s5 && mkdir -p "$d/.ddprun/rank1" && chmod 0700 "$d/.ddprun/rank1" && chown 65534 "$d/.ddprun/rank1"
	refused "$d" "5 rank1 owned by uid 65534"
	grep -q 'uid 65534' "$d/out" || notok "5 the line names the owner"
	d=$job/s5b && mkdir -p "$d/.ddprun" && chown 65534 "$d/.ddprun"
	refused "$d" "5 .ddprun owned by uid 65534"
else
	echo "skip - 5 another user's folder: needs root (chown)"
fi

# ---- 6. libddp alone (no ddprun): rank1 a link -> one libddp line, victim
# untouched, the write fails rather than land anywhere
d=$job/s6 && mkdir -p "$d/.ddprun" && victim "$job/victim6"
ln -s "$job/victim6" "$d/.ddprun/rank1"
(cd "$d" && RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=$d/.ddprun LD_PRELOAD=$lib sh -c 'echo x >out.txt') 2>"$d/err"
check "6 libddp alone: the victim folder is untouched, nothing written in place" \
	eval 'intact "$job/victim6" && [ ! -e "$d/out.txt" ]'
check "6 libddp alone: one line says why" [ "$(grep -c 'libddp: rank 1 cannot use its private folder' "$d/err")" = 1 ]

# ---- 7. a stale entry of rank1/ that is a link to a victim: removed, not followed
d=$job/s7 && mkdir -p "$d/.ddprun/rank1" && chmod 0700 "$d/.ddprun/rank1" && victim "$job/victim7"
ln -s "$job/victim7" "$d/.ddprun/rank1/old-run"
(cd "$d" && RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=$d/.ddprun LD_PRELOAD=$lib sh -c 'echo x >out.txt') 2>"$d/err"
check "7 a stale link is removed, its target untouched" \
	eval 'intact "$job/victim7" && [ ! -L "$d/.ddprun/rank1/old-run" ]'

# ---- locks across ranks, in both overlay modes: rank 0 builds a 200 KB
# cache under a lock; rank 1 takes the same lock once rank 0 has begun (the
# cache file exists) and must then read all of it, never a half-written one
lockpy=$job/lock.py
cat >"$lockpy" <<'EOF'
import fcntl, os, sys, time
rank, how, begun = int(os.environ["RANK"]), sys.argv[1], sys.argv[2]
if rank != 0:  # until rank 0 holds the lock and has begun (a mark in /dev/shm, shared)
    while not os.path.exists(begun):
        time.sleep(0.01)
with open("cache.lock", "w") as l:
    {"flock": lambda: fcntl.flock(l, fcntl.LOCK_EX), "fcntl": lambda: fcntl.lockf(l, fcntl.LOCK_EX),
     "lockf": lambda: os.lockf(l.fileno(), os.F_LOCK, 0)}[how]()
    if not os.path.exists("cache.bin"):
        with open("cache.bin", "wb") as f:
            if rank == 0:
                open(begun, "w").close()
            for i in range(200):
                f.write(b"x" * 1024)
                f.flush()
                time.sleep(0.004)
    n = len(open("cache.bin", "rb").read())
assert n == 200 * 1024, "rank %d read %d bytes of the cache" % (rank, n)
EOF
for mode in libc kernel; do
	[ $mode = kernel ] && ! unshare -m true 2>/dev/null && ! unshare -Urm true 2>/dev/null &&
		{ echo "skip - locks ($mode): no mount namespace here (unshare refused)"; continue; }
	for how in flock fcntl lockf; do
		d=$job/lock-$mode-$how && mkdir -p "$d"
		(cd "$d" && DDP_OVERLAY=$mode timeout 60 "$ddprun" -n 2 python3 "$lockpy" $how /dev/shm/ddp_begun.$$.$mode.$how) \
			>"$d/out" 2>&1
		rc=$?
		check "lock ($mode, $how): rank 1 waits for rank 0's lock and reads the whole cache (exit $rc)" \
			[ $rc = 0 ] || show "$d/out"
	done
done

# control: the same ranks without ddprun, each with its own DDP_WRITE_DIR (so
# no shared key file): rank 1 does not wait and reads a partial cache
d=$job/lock-control && mkdir -p "$d"
m=/dev/shm/ddp_begun.$$.control
(cd "$d" && RANK=0 WORLD_SIZE=2 DDP_WRITE_DIR=$d/w0 LD_PRELOAD=$lib python3 "$lockpy" flock $m) >"$d/out0" 2>&1 &
(cd "$d" && RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=$d/w1 LD_PRELOAD=$lib timeout 60 python3 "$lockpy" flock $m) >"$d/out1" 2>&1
rc=$?
wait
check "lock control: without a shared key rank 1 reads a partial cache (exit $rc)" grep -q "rank 1 read" "$d/out1"

# ---- a full disk (root: a 512 KiB tmpfs as --log-dir): rank 1's ENOSPC is
# named with the folder and --log-dir, in both modes; ddprun's own logs
# (--quiet) cut by the full disk are said, and the job does not exit 0
if [ "$(id -u)" = 0 ]; then
	full=$job/full && mkdir -p "$full" && mount -t tmpfs -o size=512k ddp-full "$full"
	for mode in libc kernel; do
		d=$job/enospc-$mode && mkdir -p "$d"
		(cd "$d" && DDP_OVERLAY=$mode "$ddprun" -n 2 --log-dir "$full/logs-$mode" python3 -c '
import os
with open("big.bin", "wb") as f:
    f.write(b"x" * (1 << 20))
') >"$d/out" 2>&1
		rc=$?
		check "enospc ($mode): the job fails (exit $rc) and one line names the full private folder and --log-dir" \
			eval '[ $rc != 0 ] && [ "$(grep -c "^[^ ].*full file system.*--log-dir" "$d/out")" = 1 ]' ||
			show "$d/out"
		[ $rc != 0 ] && cp "$d/out" /tmp/ovl_enospc_$mode.out; rm -rf "${full:?}"/*
	done
	d=$job/logs && mkdir -p "$d"
	(cd "$d" && "$ddprun" -n 1 --quiet --log-dir "$full/logs" python3 -c '
for i in range(20000): print("line %06d %s" % (i, "y" * 40))') >"$d/out" 2>&1
	rc=$?
	check "logs: --quiet --log-dir on a full disk says the logs are incomplete, exit $rc (not 0)" \
		eval '[ $rc != 0 ] && grep -q "log files under .* are incomplete" "$d/out"' || show "$d/out"
	umount "$full"
else
	echo "skip - a full disk: needs root (mount a small tmpfs)"
fi

# ---- where the kernel says no: an upper layer overlayfs refuses (root: the
# private folder on an overlayfs mount).  auto: one line, then the libc
# overlay keeps rank 1's write private; kernel: the job is refused, one line
if [ "$(id -u)" = 0 ] && mkdir -p "$job/ovf/l" "$job/ovf/u" "$job/ovf/w" "$job/ovf/m" &&
	mount -t overlay ddp-ovf -o "lowerdir=$job/ovf/l,upperdir=$job/ovf/u,workdir=$job/ovf/w" "$job/ovf/m" 2>/dev/null; then
	d=$job/fb && mkdir -p "$d"
	(cd "$d" && DDP_OVERLAY=auto "$ddprun" -n 2 --log-dir "$job/ovf/m/logs" sh -c 'echo $RANK >f.txt') >"$d/out" 2>&1
	rc=$?
	check "fallback: DDP_OVERLAY=auto says once that there is no kernel overlay, and runs (exit $rc)" \
		eval '[ $rc = 0 ] && [ "$(grep -c "no kernel overlay here" "$d/out")" = 1 ] && [ "$(cat "$d/f.txt")" = 0 ]' ||
		show "$d/out"
	rm -f "$d/f.txt"
	(cd "$d" && DDP_OVERLAY=kernel "$ddprun" -n 2 --log-dir "$job/ovf/m/logs" sh -c 'echo $RANK >f.txt') >"$d/out" 2>&1
	rc=$?
	check "fallback: DDP_OVERLAY=kernel is refused there with one line (exit $rc)" \
		eval '[ $rc = 2 ] && [ "$(grep -c "DDP_OVERLAY=kernel, but" "$d/out")" = 1 ] && [ ! -e "$d/f.txt" ]' ||
		show "$d/out"
	umount "$job/ovf/m"
else
	echo "skip - fallback: needs root (an overlayfs mount for the private folder)"
fi

# ---- kernel overlay cases
if ! unshare -m true 2>/dev/null && ! unshare -Urm true 2>/dev/null; then
	echo "skip - kernel overlay cases: no mount namespace here (unshare refused)"
	exit $fails
fi
export DDP_OVERLAY=kernel
py=$job/k.py
cat >"$py" <<'EOF'
import os, shutil, sys, errno
rank = int(os.environ["RANK"])
case = sys.argv[1]
if case == "meta":
    # ranks other than 0 change metadata; rank 0's real file must not move
    if rank != 0:
        os.chmod("data.txt", 0o600)
        os.utime("data.txt", (1, 1))
        if os.geteuid() == 0:
            os.chown("data.txt", 65534, 65534)
        shutil.copy2("data.txt", "copy.txt")
        shutil.copytree("tree", "tree2")
        st = os.stat("data.txt")
        assert st.st_mode & 0o777 == 0o600 and int(st.st_mtime) == 1, st
        assert open("copy.txt").read() == "data\n" and os.path.exists("tree2/a/b.txt")
elif case == "scratch":
    for i in range(20):
        os.makedirs("scratch", exist_ok=True)
        with open("scratch/f%d" % rank, "w") as f:
            f.write("x")
        shutil.rmtree("scratch", ignore_errors=False) if rank != 0 else None
    if rank == 0:
        shutil.rmtree("scratch")
elif case == "exchange":
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    with open("a.txt" if rank == 0 else "a.txt", "r") as f:
        pass
    if rank != 0:
        AT_FDCWD, RENAME_EXCHANGE = -100, 2
        r = libc.renameat2(AT_FDCWD, b"a.txt", AT_FDCWD, b"b.txt", RENAME_EXCHANGE)
        assert r == 0, os.strerror(ctypes.get_errno())
        assert open("a.txt").read() == "B\n" and open("b.txt").read() == "A\n"
elif case == "workers":
    # four forked workers of rank 1 open the existing 64 MB file O_RDWR at
    # once: each must see the whole file, never a copy being made
    if rank != 0:
        pids = []
        for w in range(4):
            pid = os.fork()
            if pid == 0:
                fd = os.open("big.bin", os.O_RDWR)
                size = os.fstat(fd).st_size
                tail = os.pread(fd, 4, size - 4)
                os.pwrite(fd, b"w%d" % w, w * 16)
                os._exit(0 if size == 64 << 20 and tail == b"TAIL" else 3)
            pids.append(pid)
        bad = [p for p in pids if os.waitpid(p, 0)[1] != 0]
        assert not bad, "a worker saw a partial copy"
print("ok", case, rank)
EOF
# run NAME CASE: ddprun -n 2 in the case's folder
run() {
	(cd "$d" && "$ddprun" -n 2 python3 "$py" "$2") >"$d/out" 2>&1
	local rc=$?
	check "$1 (exit $rc)" [ $rc = 0 ] || show "$d/out"
}
d=$job/k1 && mkdir -p "$d/tree/a" && echo data >"$d/data.txt" && echo b >"$d/tree/a/b.txt"
chmod 0644 "$d/data.txt" && touch -d @1000000 "$d/data.txt"
run "k1 chmod, utime, chown, copy2, copytree on rank 1" meta
check "k1 rank 0's real file kept its mode, owner and mtime" \
	[ "$(stat -c '%a %u %Y' "$d/data.txt")" = "644 $(id -u) 1000000" ]
check "k1 no copy of rank 1's in the real folder" eval '[ ! -e "$d/copy.txt" ] && [ ! -e "$d/tree2" ]'

d=$job/k2 && mkdir -p "$d"
run "k2 a scratch folder made and removed by every rank, 20 times" scratch
check "k2 no scratch folder left" [ ! -e "$d/scratch" ]

d=$job/k3 && mkdir -p "$d" && echo A >"$d/a.txt" && echo B >"$d/b.txt"
run "k3 RENAME_EXCHANGE on rank 1" exchange
check "k3 rank 0's files are not exchanged" eval '[ "$(cat "$d/a.txt")" = A ] && [ "$(cat "$d/b.txt")" = B ]'

d=$job/k4 && mkdir -p "$d" && { head -c $((64 * 1024 * 1024 - 4)) /dev/zero; printf TAIL; } >"$d/big.bin"
sum=$(cksum <"$d/big.bin")
run "k4 four forked workers open a 64 MB file O_RDWR on rank 1: none sees a partial copy" workers
check "k4 rank 0's file is unchanged" [ "$(cksum <"$d/big.bin")" = "$sum" ]

# a CUDA program on the CPU device, its collectives (the TCP store on
# loopback, the host backend's /dev/shm) from inside rank 1's namespace: both
# ranks end bit-identical, each saving into its own overlay of the job folder
mlp=$build/samples/mlp data=$build/data/mlp.rec
if [ -x "$mlp" ] && [ -e "$mlp.kern.so" ] && [ -e "$data" ]; then
	d=$job/k6 && mkdir -p "$d"
	(cd "$d" && DDP_WRITE_KEEP=1 "$ddprun" -n 2 --shard "$data" -- "$mlp" --data "$data" --steps 20 \
		--batch 8 --save w.bin) >"$d/out" 2>&1
	rc=$?
	check "k6 cpudev mlp, rank 1 in the kernel overlay (exit $rc)" [ $rc = 0 ] || show "$d/out"
	r1=$(find "$d/.ddprun/rank1" -path '*/ov*/u/w.bin' 2>/dev/null | head -1)
	check "k6 rank 1 saved into its upper layer; both ranks bit-identical" \
		eval '[ -n "$r1" ] && [ -f "$d/w.bin" ] && cmp -s "$r1" "$d/w.bin"'
else
	echo "skip - k6 cpudev mlp: $mlp or $data not built"
fi

# negative control: the same meta case in the libc overlay changes rank 0's
# real file's mode (a limit of the libc layer, docs/write-safety.md)
d=$job/k5 && mkdir -p "$d/tree/a" && echo data >"$d/data.txt" && echo b >"$d/tree/a/b.txt"
chmod 0644 "$d/data.txt"
(cd "$d" && DDP_OVERLAY=libc "$ddprun" -n 2 python3 "$py" meta) >"$d/out" 2>&1
check "k5 control: in the libc overlay rank 1's chmod reaches rank 0's file" \
	[ "$(stat -c '%a' "$d/data.txt")" != 644 ]
exit $fails
