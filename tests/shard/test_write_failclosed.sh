#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_write_failclosed.sh - write redirection fails closed (issue 14, 3).
# Every case runs a rank-1 process (RANK=1 WORLD_SIZE=2, libddp preloaded)
# against files that "rank 0" (this script) wrote first, then checks that
# rank 0's file is byte for byte what it was and that rank 1's copy is in
# DDP_WRITE_DIR/rank1/run-*/<absolute path> (kept with DDP_WRITE_KEEP=1; each
# run removes the one before):
#   symlink       a symbolic link (and a chain of two) as the last component
#   proc_fd       /proc/self/fd/N and /dev/fd/N of a read-only fd reopened r+
#   truncate      truncate(path) of rank 0's file
#   tmpfile       O_TMPFILE in rank 0's folder, then linkat(AT_SYMLINK_FOLLOW)
#   link          link(rank 0's file, new name): the new name is a copy
#   sed_i         sed -i (mkostemp + rename in the same folder)
#   no_side_dir   the run folder cannot be created: the write fails
#                 (ENOTDIR), one libddp: line per path, nothing in place
#   too_long      the side path exceeds PATH_MAX: ENAMETOOLONG, nothing in place
#   bad_write_dir DDP_WRITE_DIR longer than PATH_MAX: writes fail, nothing in place
set -u
BUILD=${BUILD:-build}
root=$(pwd)
lib=${SHARD_PRELOAD:-$BUILD/lib/libddp.so}
case $lib in /*) ;; *) lib=$root/$lib ;; esac
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
[ -f "$lib" ] || { echo "not ok - $lib missing"; exit 1; }
# the interpreter itself, not a wrapper script (pyenv shims run several
# processes, each of which would print its own libddp line)
py=$(python3 -c 'import sys; print(sys.executable)')
tmp=$(mktemp -d /tmp/ddp_wfc.XXXXXX)
export DDP_TEMP_DIRS=$tmp TMPDIR=$tmp
mkdir -p "$build/tests/shard"
job=$(mktemp -d "$build/tests/shard/wfc.XXXXXX")
trap 'rm -rf "$tmp" "$job"' EXIT
fails=0
ok() { echo "ok - $1"; }
notok() { echo "not ok - $1"; fails=1; }
# rank1 CASE PYTHON: runs python code as rank 1 in $job/CASE (stderr in err)
rank1() {
	local c=$1
	shift
	(cd "$job/$c" && RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=$job/wd DDP_WRITE_KEEP=1 LD_PRELOAD=$lib "$@" 2>err)
}
side() { echo "$(echo "$job"/wd/rank1/run-*)$job/$1"; }
new_case() { mkdir -p "$job/$1" && printf 'rank0 data\n' >"$job/$1/ckpt.bin"; }
intact() { [ "$(cat "$job/$1/ckpt.bin")" = "rank0 data" ]; }
show() { sed 's/^/# /' "$job/$1/err"; find "$job/wd" "$job/$1" 2>/dev/null | sed 's/^/# /'; }

# symlink: last component, and a chain of two links
new_case symlink
ln -s ckpt.bin "$job/symlink/latest"
ln -s latest "$job/symlink/latest2"
rank1 symlink "$py" -c '
with open("latest", "w") as f: f.write("rank1 data\n")
assert open("latest").read() == "rank1 data\n"
with open("latest2", "a") as f: f.write("more\n")
' && r=0 || r=$?
if [ $r = 0 ] && intact symlink && [ -L "$job/symlink/latest" ] &&
	[ "$(head -n 1 "$(side symlink)/ckpt.bin")" = "rank1 data" ] &&
	grep -qx more "$(side symlink)/ckpt.bin" && [ ! -e "$(side symlink)/latest" ]; then
	ok "symlink: the link's target is redirected (chain of two too)"
else
	notok "symlink: the link's target is redirected (exit $r)"; show symlink
fi

# /proc/self/fd/N and /dev/fd/N reopened for writing
new_case proc_fd
rank1 proc_fd "$py" -c '
import os
fd = os.open("ckpt.bin", os.O_RDONLY)
with open("/proc/self/fd/%d" % fd, "r+") as f:
    assert f.read() == "rank0 data\n"
    f.write("rank1 via proc\n")
with open("/dev/fd/%d" % fd, "a") as f:
    f.write("rank1 via dev\n")
' && r=0 || r=$?
if [ $r = 0 ] && intact proc_fd && grep -q "rank1 via proc" "$(side proc_fd)/ckpt.bin" &&
	grep -q "rank1 via dev" "$(side proc_fd)/ckpt.bin"; then
	ok "proc_fd: /proc/self/fd/N and /dev/fd/N reopened for writing reach the side copy"
else
	notok "proc_fd: /proc/self/fd/N reopened for writing (exit $r)"; show proc_fd
fi

# truncate(path)
new_case truncate
rank1 truncate "$py" -c '
import os
os.truncate("ckpt.bin", 5)
assert open("ckpt.bin").read() == "rank0"
' && r=0 || r=$?
if [ $r = 0 ] && intact truncate && [ "$(cat "$(side truncate)/ckpt.bin")" = rank0 ]; then
	ok "truncate: truncate(path) cuts the side copy, rank 0's file is whole"
else
	notok "truncate: truncate(path) (exit $r)"; show truncate
fi

# O_TMPFILE + linkat(AT_SYMLINK_FOLLOW), and link() of a shared file
new_case tmpfile
rank1 tmpfile "$py" -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600)
os.write(fd, b"rank1 tmp\n")
AT_FDCWD, AT_SYMLINK_FOLLOW = -100, 0x400
if libc.linkat(AT_FDCWD, b"/proc/self/fd/%d" % fd, AT_FDCWD, b"named.bin", AT_SYMLINK_FOLLOW) != 0:
    raise OSError(ctypes.get_errno(), "linkat")
assert open("named.bin").read() == "rank1 tmp\n"
if libc.link(b"ckpt.bin", b"hard.bin") != 0:
    raise OSError(ctypes.get_errno(), "link")
with open("hard.bin", "a") as f: f.write("rank1\n")
' && r=0 || r=$?
if [ $r = 0 ] && intact tmpfile && [ ! -e "$job/tmpfile/named.bin" ] && [ ! -e "$job/tmpfile/hard.bin" ] &&
	[ "$(cat "$(side tmpfile)/named.bin")" = "rank1 tmp" ] &&
	[ "$(stat -c %h "$job/tmpfile/ckpt.bin")" = 1 ] && grep -q rank1 "$(side tmpfile)/hard.bin"; then
	ok "tmpfile: O_TMPFILE + linkat names the file in the side folder; link copies a shared file"
else
	notok "tmpfile: O_TMPFILE + linkat, link (exit $r)"; show tmpfile
fi

# sed -i: mkostemp + rename in the same folder
new_case sed_i
printf 'lr=1\n' >"$job/sed_i/config.txt"
rank1 sed_i sed -i s/1/2/ config.txt && r=0 || r=$?
left=$(cd "$job/sed_i" && ls -A | grep -v -x -e ckpt.bin -e config.txt -e err)
sleft=$(ls -A "$(side sed_i)" 2>/dev/null | grep -v -x config.txt)
if [ $r = 0 ] && [ "$(cat "$job/sed_i/config.txt")" = lr=1 ] &&
	[ "$(cat "$(side sed_i)/config.txt")" = lr=2 ] && [ -z "$left" ] && [ -z "$sleft" ]; then
	ok "sed_i: sed -i edits the side copy, no temp file left in either folder"
else
	notok "sed_i: sed -i (exit $r; left in rank 0's folder: $left; in the side folder: $sleft)"
	show sed_i
fi

# the side folder cannot be created: the write fails, one line, nothing in place
new_case no_side_dir
mkdir -p "$job/wd2" && : >"$job/wd2/rank1" # a file where the rank's folder must go
(cd "$job/no_side_dir" && RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=$job/wd2 LD_PRELOAD=$lib "$py" -c '
import errno
for i in range(3):
    try:
        open("out.txt", "w")
    except OSError as e:
        assert e.errno == errno.ENOTDIR, e
    else:
        raise SystemExit("the open succeeded")
' 2>err) && r=0 || r=$?
n=$(grep -c "libddp: rank 1 cannot write out.txt" "$job/no_side_dir/err")
if [ $r = 0 ] && [ ! -e "$job/no_side_dir/out.txt" ] && [ "$n" = 1 ]; then
	ok "no_side_dir: the write fails with ENOTDIR and one libddp: line, nothing in place"
else
	notok "no_side_dir: (exit $r, $n lines)"; show no_side_dir
fi

# a side path longer than PATH_MAX
new_case too_long
# rank 0 can write it (under PATH_MAX); its side path cannot be made
deep=$job/too_long
while [ ${#deep} -lt 3950 ]; do deep=$deep/$(printf 'd%.0s' $(seq 1 120)); done
deep=$deep/$(printf 'e%.0s' $(seq 1 $((4080 - ${#deep}))))
mkdir -p "$deep" && : >"$deep/f.bin" && rm "$deep/f.bin" || notok "too_long: rank 0 cannot write the path"
rank1 too_long "$py" - "$deep/f.bin" <<'PY' && r=0 || r=$?
import errno, sys
try:
    open(sys.argv[1], "w")
except OSError as e:
    assert e.errno == errno.ENAMETOOLONG, e
else:
    raise SystemExit("the open succeeded")
PY
if [ $r = 0 ] && [ ! -e "$deep/f.bin" ] && grep -q "libddp: rank 1 cannot write" "$job/too_long/err"; then
	ok "too_long: a side path over PATH_MAX fails with ENAMETOOLONG, nothing in place"
else
	notok "too_long: (exit $r)"; sed 's/^/# /' "$job/too_long/err" | cut -c1-200
fi

# a DDP_WRITE_DIR that cannot be made absolute: every redirected write fails
new_case bad_write_dir
long=$(printf 'w%.0s' $(seq 1 4100))
(cd "$job/bad_write_dir" && RANK=1 WORLD_SIZE=2 DDP_WRITE_DIR=$long LD_PRELOAD=$lib "$py" -c '
try:
    open("ckpt.bin", "w")
except OSError:
    pass
else:
    raise SystemExit("the open succeeded")
try:
    open("'"$tmp"'/scratch", "w")
except OSError:
    pass
else:
    raise SystemExit("the open in a temporary folder succeeded")
' 2>err) && r=0 || r=$?
if [ $r = 0 ] && intact bad_write_dir && [ ! -e "$tmp/scratch" ] &&
	[ "$(grep -c "libddp: DDP_WRITE_DIR=" "$job/bad_write_dir/err")" = 1 ]; then
	ok "bad_write_dir: an unusable DDP_WRITE_DIR fails the writes (temporary folders' too)"
else
	notok "bad_write_dir: (exit $r)"; sed 's/^/# /' "$job/bad_write_dir/err" | cut -c1-200
fi
exit $fails
