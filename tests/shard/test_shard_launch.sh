#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_shard_launch.sh - what --shard names is fixed once, by ddprun at
# launch (issue 30): a program that changes folder before it starts its
# readers (hydra), a wrapper's `sh -c 'cd sub && exec prog ../data'`, and a
# pyenv-style shim `python3` (a shell script that changes folder and execs
# the real python) each read exactly the rank's share; the shim's processes
# say nothing ("matches no file" was printed by every process that expanded
# the glob again in another folder); a name with glob characters is the
# file of that name; a raw file without mode= is refused with one line; and
# ddprun says once, at the end, when no rank opened a --shard file.
set -u
BUILD=${BUILD:-build}
root=$(pwd)
case $BUILD in /*) build=$BUILD ;; *) build=$root/$BUILD ;; esac
DDPRUN=$build/bin/ddprun
for f in "$DDPRUN" "$build/lib/libddp.so"; do
	[ -e "$f" ] || { echo "$f is not built; run make"; exit 77; }
done
for v in $(env | sed -n 's/^\(DDPRUN_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset RANK WORLD_SIZE LOCAL_RANK DDP_SHARD DDP_SHARD_FILES DDP_SHARD_SEEN LD_PRELOAD
tmp=$(mktemp -d /tmp/ddp_shard_launch.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
ok() { echo "ok - $1"; }
notok() { echo "not ok - $1"; fails=1; }
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else notok "$name"; fi
}
realpy=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')

mkdir -p data outputs/run sub lit shim
python3 "$root/tests/shard/shardlib.py" gen data || { echo "not ok - generate data"; exit 1; }
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(200)))' >'lit/train[1].raw'
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(100, 180)))' >lit/train1.raw
# reader.py FILE...: "NAME SIZE MD5" of each file as the program reads it
cat >reader.py <<'PY'
import hashlib, sys
for p in sys.argv[1:]:
    b = open(p, "rb").read()
    print(p.rsplit("/", 1)[-1], len(b), hashlib.md5(b).hexdigest())
PY
# hydra: the program changes folder, then starts its reader
cat >hydra.py <<'PY'
import os, subprocess, sys
os.chdir("outputs/run")
subprocess.run([sys.executable, "../../reader.py", "../../data/train.ddprec"], check=True)
PY
# a pyenv-style shim: a shell script named python3 that changes folder
printf '#!/bin/sh\ncd / || exit 1\nexec "%s" "$@"\n' "$realpy" >shim/python3
chmod +x shim/python3
PYTHONPATH=$root/tests/shard python3 - >exp <<'PY'
import hashlib, shardlib
for r in range(2):
    b = shardlib.expect("data/train.ddprec", "ddprec", "stride", "keep", 2, r)
    print(r, "train.ddprec", len(b), hashlib.md5(b).hexdigest())
    d = open("lit/train[1].raw", "rb").read()
    ix = shardlib.indices("block", "keep", 50, 2, r)
    b = b"".join(d[4 * i:4 * i + 4] for i in ix)
    print(r, "train[1].raw", len(b), hashlib.md5(b).hexdigest())
d = open("lit/train1.raw", "rb").read()
for r in range(2):
    print(r, "train1.raw", len(d), hashlib.md5(d).hexdigest())
PY
# share R NAME LABEL: rank R's line for NAME in out.LABEL is the expected one
share() {
	local want got
	want=$(sed -n "s/^$1 //p" exp | grep -F "$2 ")
	got=$(sed -n "s/^\[rank $1\] //p" "out.$3" | grep -F "$2 ")
	[ -n "$want" ] && [ "$want" = "$got" ] || { echo "# $3 rank $1: want '$want', got '$got'"; return 1; }
}
both() { share 0 "$1" "$2" && share 1 "$1" "$2"; }
run() {
	local label=$1
	shift
	"$DDPRUN" -n 2 "$@" >"out.$label" 2>"err.$label"
	echo $? >"rc.$label"
	[ "$(cat "rc.$label")" = 0 ] || sed 's/^/# /' "err.$label" | tail -4
}
quiet() { ! grep -q 'matches no file\|no rank opened' "err.$1" || { sed 's/^/# /' "err.$1" | grep 'matches no file\|no rank opened' | head -3; return 1; }; }

run hydra --shard data/train.ddprec python3 hydra.py
check "hydra: the reader started after a chdir reads each rank's share" both train.ddprec hydra
check "hydra: nothing said about the spec" quiet hydra

run cd --shard data/train.ddprec sh -c 'cd sub && exec python3 ../reader.py ../data/train.ddprec'
check "sh -c 'cd sub && exec prog ../data': each rank's share" both train.ddprec cd
check "sh -c 'cd sub && ...': nothing said about the spec" quiet cd

PATH=$tmp/shim:$PATH run shim --shard data/train.ddprec python3 "$tmp/reader.py" "$tmp/data/train.ddprec"
check "pyenv-style shim python3: each rank's share" both train.ddprec shim
check "pyenv-style shim python3: no 'matches no file' from the shim's processes" quiet shim

run glob --shard 'lit/train[1].raw:record=4:mode=block' python3 reader.py 'lit/train[1].raw' lit/train1.raw
check "--shard 'train[1].raw' beside train1.raw: train[1].raw is the sharded file" both 'train[1].raw' glob
check "--shard 'train[1].raw' beside train1.raw: train1.raw is read whole" both train1.raw glob

"$DDPRUN" -n 2 --shard lit/train1.raw:record=4 true >out.raw 2>err.raw
rc=$?
check "raw file without mode=: refused (exit $rc)" [ $rc != 0 ]
check "raw file without mode=: one line naming the file and mode=" \
	[ "$(grep -c '^ddprun: --shard lit/train1.raw: a raw file (no known header) does not say how to cut it; add :mode=block (a token stream: each rank one contiguous slice) or :mode=stride' err.raw)" = 1 ]
grep -v '^ddprun: --shard lit/train1.raw: a raw file' err.raw | sed 's/^/# other: /' | head -3

run none --shard data/train.ddprec python3 reader.py data/x1.npy
check "no rank opened the file: exit 0" [ "$(cat rc.none)" = 0 ]
check "no rank opened the file: said once, at the end" \
	[ "$(grep -c '^ddprun: warning: --shard data/train.ddprec: no rank opened a file it names, so nothing was sharded' err.none)" = 1 ]
exit $fails
