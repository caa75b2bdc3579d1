#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_write_overlay.sh - write safety as a private overlay (issue 21, cases
# 1-6), with programs written for it: tests/shard/progs/overlay.c run as rank
# 0 and rank 1 (RANK/WORLD_SIZE, libddp.so preloaded), and
# tests/shard/overlay.py under `ddprun -n 2 python3`.  The references are
# independent: rank 0's files must hold exactly what rank 0 wrote ("rank 0"),
# and each program checks that it reads back what it wrote.
#   1 cache     a "load cache.txt if it exists, else build it" program: rank 1
#               never gets an earlier run's cache (finished, kept or crashed);
#               leftovers are removed; negative control: a run folder of a
#               live process is left alone
#   2 tmp       a working folder under $TMPDIR and a file in it by absolute
#               path are protected; negative control: DDP_REDIRECT_TMP=0
#               lets rank 1 overwrite rank 0's file, said once at start
#   3 paths     /proc/self/cwd, /proc/self/root, openat, /proc/self/fd/N/x,
#               /dev/fd/N/x, a linked folder, a hard link, rename onto a magic
#               path; a symbolic link planted by rank 1 is not rank 0's;
#               negative control: DDP_ALL_RANKS_WRITE=1 overwrites
#   4 latest    ckpt, symlink latest.tmp, rename to latest; folder renames,
#               unlink, link: nothing of it reaches rank 0's folder
#   5 trunc     O_APPEND / O_TRUNC without O_CREAT, /proc/self/fd/N reopen
#   6 dirs      mkdir and rmdir on rank 1 leave rank 0's folders alone
set -u
BUILD=${BUILD:-build}
root=$(pwd)
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
lib=${SHARD_PRELOAD:-$build/lib/libddp.so}
case $lib in /*) ;; *) lib=$root/$lib ;; esac
prog=$build/tests/shard/overlay
ddprun=$build/bin/ddprun
py=$root/tests/shard/overlay.py
[ -f "$lib" ] && [ -x "$prog" ] || { echo "not ok - $lib or $prog missing"; exit 1; }
for v in $(env | sed -n 's/^\(DDP[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset RANK WORLD_SIZE LOCAL_RANK TMPDIR
job=$(mktemp -d "$build/tests/shard/ovl.XXXXXX")
tmpjob=$(mktemp -d /tmp/ddp_ovl.XXXXXX)
sleeper=
trap 'rm -rf "$job" "$tmpjob"; [ -n "$sleeper" ] && kill $sleeper 2>/dev/null' EXIT
fails=0
ok() { echo "ok - $1"; }
notok() { echo "not ok - $1"; fails=1; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else notok "$n"; return 1; fi; }
# all CMD... -- CMD... : every command (separated by --) succeeds
all() {
	local cmd=()
	for a in "$@" --; do
		if [ "$a" = -- ]; then "${cmd[@]}" || return 1; cmd=(); else cmd+=("$a"); fi
	done
}
# holds FILE TEXT: the file's content is exactly TEXT
holds() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }
# rank K DIR ARGS...: the program as rank K in DIR (its side folder DIR/.ddprun)
rank() {
	local k=$1 d=$2
	shift 2
	(cd "$d" && RANK=$k WORLD_SIZE=2 DDP_WRITE_DIR=$d/.ddprun LD_PRELOAD=$lib "$prog" "$@")
}
show() { sed 's/^/# /' "$@" | cut -c1-300; }

# ---- 1: side copies belong to one run
d=$job/cache && mkdir -p "$d" && printf v1 >"$d/data.txt"
rank 0 "$d" cache data.txt cache.txt >"$d/o0" 2>&1
rank 1 "$d" cache data.txt cache.txt >"$d/o1" 2>&1
check "1 cache: run 1: rank 0 builds V1, rank 1 then loads rank 0's" \
	[ "$(cat "$d/o0")" = "built V1" -a "$(cat "$d/o1")" = "cache V1" ]
check "1 cache: rank 1's run folder is gone when it exits" [ -z "$(ls -A "$d/.ddprun/rank1")" ]
rm "$d/cache.txt" && printf v2 >"$d/data.txt"
rank 1 "$d" cache data.txt cache.txt >"$d/o1" 2>&1
check "1 cache: run 2 (cache deleted, data changed): rank 1 builds V2" [ "$(cat "$d/o1")" = "built V2" ]
DDP_WRITE_KEEP=1 rank 1 "$d" cache data.txt cache.txt >"$d/o1" 2>&1
kept=$(ls "$d/.ddprun/rank1")
printf v3 >"$d/data.txt"
rank 1 "$d" cache data.txt cache.txt >"$d/o1" 2>&1
check "1 cache: a kept run folder is never read by the next run, which removes it" \
	[ -n "$kept" -a "$(cat "$d/o1")" = "built V3" -a ! -e "$d/.ddprun/rank1/$kept" ]
crash=1 rank 1 "$d" cache data.txt cache.txt >"$d/o1" 2>&1
left=$(ls "$d/.ddprun/rank1")
printf v4 >"$d/data.txt"
# a run folder of a live process (another job with the same DDP_WRITE_DIR)
sleep 60 & sleeper=$!
start=$(awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[20] }' /proc/$sleeper/stat)
live=run-$sleeper-$start-$(hostname | tr -c 'A-Za-z0-9._\n-' _ | cut -c1-32)
mkdir -p "$d/.ddprun/rank1/$live$d" && echo LIVE >"$d/.ddprun/rank1/$live$d/cache.txt"
rank 1 "$d" cache data.txt cache.txt >"$d/o1" 2>"$d/e1"
check "1 cache: a crashed run's leftovers are ignored (V4 built) and removed" \
	[ -n "$left" -a "$(cat "$d/o1")" = "built V4" -a ! -e "$d/.ddprun/rank1/$left" ]
check "1 cache: negative control: the folder of a live process is neither read nor removed" \
	[ -f "$d/.ddprun/rank1/$live$d/cache.txt" ]
kill $sleeper 2>/dev/null; wait $sleeper 2>/dev/null; sleeper=
rank 1 "$d" cache data.txt cache.txt >"$d/o1" 2>&1
check "1 cache: ... and removed once its process is gone" [ ! -e "$d/.ddprun/rank1/$live" ]

# ---- 2: temporary folders are protected
t=$tmpjob/work && mkdir -p "$t"
tr() { (cd "$t" && TMPDIR=$tmpjob RANK=$1 WORLD_SIZE=2 DDP_WRITE_DIR=$t/.ddprun LD_PRELOAD=$lib "$prog" write "$2" "$3"); }
tr 0 . ckpt && tr 1 . ckpt 2>"$t/e1" && tr 0 "$tmpjob" abs.txt && tr 1 "$tmpjob" abs.txt 2>>"$t/e1"
check "2 tmp: a working folder under \$TMPDIR and a file there: rank 0's stay rank 0's" \
	all holds "$t/ckpt" "rank 0" -- holds "$tmpjob/abs.txt" "rank 0"
check "2 tmp: nothing is said when nothing is left unprotected" [ ! -s "$t/e1" ]
(cd "$t" && TMPDIR=$tmpjob DDP_REDIRECT_TMP=0 RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=$t/.ddprun \
	LD_PRELOAD=$lib "$prog" write . ckpt) 2>"$t/e2"
check "2 tmp: negative control: DDP_REDIRECT_TMP=0 lets rank 1 overwrite it" holds "$t/ckpt" "rank 1"
check "2 tmp: ... and says so once, at start" \
	[ "$(grep -c 'libddp: DDP_REDIRECT_TMP=0' "$t/e2")" = 1 -a "$(grep -c 'working folder' "$t/e2")" = 1 ]

# ---- 3: every path form is one object
d=$job/paths && mkdir -p "$d/out" && echo orig >"$d/out/hard1.txt" && ln "$d/out/hard1.txt" "$d/out/hard2.txt" &&
	ln -s out "$d/linkdir"
files="cwd.txt root.txt at.txt fd.txt devfd.txt viadir.txt hard1.txt hard2.txt ren.txt"
rank 0 "$d" paths out >"$d/o0" 2>&1 || show "$d/o0"
rank 1 "$d" paths out >"$d/o1" 2>&1 || show "$d/o1"
all0=1
for f in $files; do holds "$d/out/$f" "rank 0" || { all0=0; echo "# out/$f: $(cat "$d/out/$f" 2>&1)"; }; done
check "3 paths: both ranks read back their own writes through every path form" \
	[ "$(cat "$d/o0")" = "paths ok" -a "$(cat "$d/o1")" = "paths ok" ]
check "3 paths: rank 0's files hold rank 0's data ($files)" [ $all0 = 1 -a ! -e "$d/out/ren.tmp" ]
rank 1 "$d" plant out "$d/victim" 2>&1 | show
rank 0 "$d" write out planted 2>&1 | show
check "3 paths: a link rank 1 planted is not rank 0's: its write stays in out/" \
	all [ ! -L "$d/out/planted" -a ! -e "$d/victim" ] -- holds "$d/out/planted" "rank 0"
(cd "$d" && RANK=1 WORLD_SIZE=2 DDP_ALL_RANKS_WRITE=1 LD_PRELOAD=$lib "$prog" paths out) >/dev/null 2>&1
check "3 paths: negative control: DDP_ALL_RANKS_WRITE=1 writes rank 0's files" holds "$d/out/fd.txt" "rank 1"

# ---- 4: the "latest" idiom and other name operations
d=$job/latest && mkdir -p "$d/out" && echo x >"$d/out/old"
rank 1 "$d" latest out >"$d/o1" 2>&1
check "4 latest: rank 1: ckpt, symlink latest.tmp, rename latest, read out/latest, folder rename, unlink, link" \
	[ "$(cat "$d/o1")" = "latest ok" ] || show "$d/o1"
check "4 latest: nothing of it in rank 0's folder" \
	all [ "$(cd "$d/out" && ls -A)" = old ] -- holds "$d/out/old" x
rank 1 "$d" latest out >"$d/o1" 2>&1
check "4 latest: rank 1 again, renaming over its own link and folder" [ "$(cat "$d/o1")" = "latest ok" ] || show "$d/o1"
rank 0 "$d" latest out >"$d/o0" 2>&1
check "4 latest: rank 0 then does the same in place" \
	all [ "$(cat "$d/o0")" = "latest ok" -a "$(readlink "$d/out/latest")" = ckpt ] -- \
	holds "$d/out/latest" "ckpt of rank 0"
echo x >"$d/out/old"
rank 1 "$d" latest out >"$d/o1" 2>&1
check "4 latest: rank 1 over rank 0's link, folders and files: its own view, rank 0's unchanged" \
	all [ "$(cat "$d/o1")" = "latest ok" -a "$(readlink "$d/out/latest")" = ckpt ] -- \
	holds "$d/out/latest" "ckpt of rank 0" -- holds "$d/out/d2/f" "ckpt of rank 0" -- holds "$d/out/old" x

# ---- 5: O_TRUNC / O_APPEND without O_CREAT
d=$job/trunc && mkdir -p "$d/out"
for f in app trunc reopen; do echo orig >"$d/out/$f"; done
rank 1 "$d" trunc out >"$d/o1" 2>&1
check "5 trunc: rank 1 appends, truncates and reopens through /proc/self/fd as rank 0 would" \
	[ "$(cat "$d/o1")" = "trunc ok" ] || show "$d/o1"
check "5 trunc: rank 0's files are untouched" \
	all holds "$d/out/app" orig -- holds "$d/out/trunc" orig -- holds "$d/out/reopen" orig
rank 0 "$d" trunc out >"$d/o0" 2>&1
check "5 trunc: the same program as rank 0 (reference)" [ "$(cat "$d/o0")" = "trunc ok" ]

# ---- 6: mkdir and rmdir
d=$job/dirs && mkdir -p "$d/out/empty" "$d/out/full" && echo f >"$d/out/full/f"
rank 1 "$d" dirs out >"$d/o1" 2>&1
check "6 dirs: rank 1's mkdir, rmdir, mkdir again, rmdir of a full folder (ENOTEMPTY), chdir into its own" \
	[ "$(cat "$d/o1")" = "dirs ok" ] || show "$d/o1"
check "6 dirs: rank 0's folders are as they were" \
	[ -d "$d/out/empty" -a ! -e "$d/out/new" -a ! -e "$d/out/run" -a -f "$d/out/full/f" ]
rank 0 "$d" write out/empty f
check "6 dirs: rank 0 then writes in its folder" holds "$d/out/empty/f" "rank 0"

# ---- cases 1-6 under ddprun -n 2 python3, in both overlay modes: libddp's
# libc overlay, and the kernel's (mount namespace + overlayfs: needs root or
# user namespaces; skipped with the reason where the kernel refuses)
if [ -x "$ddprun" ] && command -v python3 >/dev/null; then
	for mode in libc kernel; do
		if [ $mode = kernel ] && ! unshare -m true 2>/dev/null && ! unshare -Urm true 2>/dev/null; then
			echo "skip - python ($mode): no mount namespace here (unshare refused)"
			continue
		fi
		export DDP_OVERLAY=$mode
		d=$job/py-$mode && mkdir -p "$d" "$tmpjob/py-$mode"
		export OVL_TMP=$tmpjob/py-$mode
		(cd "$d" && python3 "$py" prepare) || notok "python ($mode): prepare"
		# kernel: the live cache case is a known limit (rank 0's half-written
		# cache.txt shows through the lower layer to rank 1: docs/write-safety.md)
		if [ $mode = kernel ]; then
			echo "skip - python (kernel): case 1 live (rank 1 can read rank 0's cache.txt while it is written: known limit of the kernel overlay)"
			export OVL_NO_LIVE_CACHE=1
		fi
		(cd "$d" && "$ddprun" -n 2 python3 "$py" run) >"$d/out1" 2>&1
		unset OVL_NO_LIVE_CACHE
		rc=$?
		check "python ($mode): ddprun -n 2 python3 overlay.py run (exit $rc)" [ $rc = 0 ] || show "$d/out1"
		(cd "$d" && python3 "$py" after) >"$d/after" 2>&1
		check "python ($mode): rank 0's files hold rank 0's data, nothing of rank 1's" [ $? = 0 ] || show "$d/after"
		if [ $mode = kernel ]; then
			echo "skip - python (kernel): the second run's cache (the same live-cache limit)"
		else
			(cd "$d" && python3 "$py" rerun-prepare && "$ddprun" -n 2 python3 "$py" rerun) >"$d/out2" 2>&1
			check "python ($mode): the second run's rank 1 never reads the first run's cache" [ $? = 0 ] || show "$d/out2"
		fi
		check "python ($mode): no run folder outlives the run" [ -z "$(find "$d/.ddprun" -mindepth 2 2>/dev/null)" ]
		if [ $mode = kernel ]; then
			# kernel: refused (never a fallback) where the kernel says no
			check "python ($mode): ran in the kernel overlay, nothing refused" \
				eval '[ $rc = 0 ] && ! grep -q "kernel overlay" "$d/out1"' 
		fi
		unset DDP_OVERLAY
	done
else
	notok "python: $ddprun or python3 missing"
fi
exit $fails
