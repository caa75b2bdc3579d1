#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# write_notice.sh - issue 21: "ddprun says once, at start, when a path the
# program writes is left unprotected" (launcher/notice.c).  -n 4 from a
# working folder that is itself shared (/dev/shm), with DDP_REDIRECT_TMP=0,
# every rank writing into that folder and into /tmp: ddprun says the
# temporary folders and the working folder once each, before the ranks
# start; of the ranks' libddp only rank 1 says its first write in place.
# Negative control: the same ranks started without ddprun (libddp alone,
# each rank on its own) say every line once per rank.  Nothing is said
# from a protected folder, nor with -n 1.
. "$(dirname "$0")/lib.sh"
unset DDPRUN_NO_PRELOAD DDP_REDIRECT_TMP DDP_TEMP_DIRS DDP_WRITE_SAID
LIB=$build_dir/lib/libddp.so
[ -e "$LIB" ] || { echo "$LIB is not built"; exit 77; }
[ -d /dev/shm ] && [ -w /dev/shm ] || { echo "no writable /dev/shm"; exit 77; }
W=$(mktemp -d /dev/shm/ddprun-notice.XXXXXX)
trap 'rm -rf "$W" "$TMP" /tmp/ddprun-notice-$$-*' EXIT
prog='echo $RANK >"$PWD/out-$RANK"; echo $RANK >/tmp/ddprun-notice-'$$'-$RANK'
out=$TMP/out err=$TMP/err

(cd "$W" && DDP_REDIRECT_TMP=0 "$DDPRUN" -n 4 sh -c "$prog" >"$out" 2>"$err")
rc=$?
check "shared working folder, -n 4: exit 0 (got $rc)" [ $rc = 0 ]
check "-n 4: the temporary folders said once, by ddprun" \
	[ "$(grep -c 'DDP_REDIRECT_TMP=0' "$err")" = 1 -a \
	  "$(grep -c '^ddprun: DDP_REDIRECT_TMP=0: ranks other than 0 write files under the temporary folders (/tmp, /var/tmp[^)]*) in place, shared with every rank$' "$err")" = 1 ]
check "-n 4: the working folder said once, by ddprun" \
	[ "$(grep -c 'working folder' "$err")" = 1 -a \
	  "$(grep -c "^ddprun: the working folder $W is shared (/dev, /proc, /sys, /run, temporary folders): files the ranks other than 0 write there are not protected (docs/write-safety.md)$" "$err")" = 1 ]
check "-n 4: the first write in place said once, by rank 1" \
	[ "$(grep -c 'in place: this folder is shared' "$err")" = 1 -a \
	  "$(grep -c "^\[rank 1\] libddp WARN .*libddp: rank 1 writes $W/out-1 in place: this folder is shared by every rank" "$err")" = 1 ]
check "-n 4: ddprun's lines come before any rank's" \
	[ "$(grep -n 'working folder' "$err" | cut -d: -f1)" -lt "$(grep -n '^\[rank' "$err" | head -1 | cut -d: -f1)" ]
check "-n 4: every rank wrote in place (they are shared)" \
	[ "$(cat "$W"/out-0 "$W"/out-1 "$W"/out-2 "$W"/out-3 | tr -d '\n')" = 0123 ]

# negative control: libddp alone (no ddprun), ranks 1-3: each says each line
: >"$err"
for r in 1 2 3; do
	(cd "$W" && DDP_REDIRECT_TMP=0 RANK=$r WORLD_SIZE=4 DDP_WRITE_DIR=$TMP/wd LD_PRELOAD=$LIB \
		sh -c "$prog" 2>>"$err")
done
check "control, ranks without ddprun: each rank says the temporary folders" \
	[ "$(grep -c 'DDP_REDIRECT_TMP=0: rank [123] writes files under the temporary folders' "$err")" = 3 ]
check "control: each rank says the working folder" [ "$(grep -c 'working folder' "$err")" = 3 ]
check "control: each rank says its write in place" [ "$(grep -c 'in place: this folder is shared' "$err")" = 3 ]

# a protected working folder: nothing said (the default DDP_REDIRECT_TMP)
(cd "$TMP" && "$DDPRUN" -n 4 sh -c 'echo $RANK >out-$RANK' >"$out" 2>"$err")
rc=$?
check "protected folder, -n 4: exit 0 (got $rc)" [ $rc = 0 ]
check "protected folder: nothing said of shared folders" hasnt "$err" 'shared|in place|not protected'
check "protected folder: rank 0's file in place, the others' not" [ "$(cat "$TMP/out-0")" = 0 -a ! -e "$TMP/out-1" ]
# -n 1: no rank other than 0, nothing to say
(cd "$W" && DDP_REDIRECT_TMP=0 "$DDPRUN" -n 1 sh -c "$prog" >"$out" 2>"$err")
check "-n 1: nothing said" hasnt "$err" 'shared|in place|not protected'
finish
