#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# readme.sh - the README's everyday commands name files that exist, and the
# single-node ones run as written (issue 14, 8).  Every word of the block
# that is a path must exist after `make all` (build/... in the build, the
# rest in the checkout; folders the commands make, logs and trace, have no
# slash).  Each
# `build/bin/ddprun ...` and `LD_LIBRARY_PATH=build/... build/...` line
# without --nnodes is run as it is, from a folder where build/ is this
# build, with no LD_LIBRARY_PATH of the test's own: so `ddprun inspect` must
# pick the CPU device by itself, the way `ddprun -n` does.
. "$(dirname "$0")/lib.sh"
unset DDPRUN_NO_PRELOAD
readme=$(dirname "$0")/../../../README.md
for f in "$build_dir/lib/libddp.so" "$build_dir/cpudev/lib/libcuda.so.1" "$build_dir/samples/mlp" "$build_dir/data/mlp.rec"; do
	[ -e "$f" ] || { echo "$f is not built (make all): the README's commands need it"; exit 77; }
done
# the sh block of "## Everyday commands", continuation lines joined
block=$(sed -n '/^## Everyday commands/,/^## /p' "$readme" | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d' |
	sed -e ':a' -e '/\\$/N; s/\\\n */ /; ta')
[ -n "$block" ] || { notok "README has an Everyday commands sh block"; finish; }

# every word that is a path (has a /, is not an option or an expansion):
# build/... in this build, the rest from the top of the checkout
top=$(cd "$(dirname "$readme")" && pwd)
missing=
for w in $(printf '%s\n' "$block" | sed 's/#.*//' | tr -d "'" | tr ' =' '\n\n' | grep / | grep -v '^[-$"(]' | sort -u); do
	case $w in
	build/*) [ -e "$build_dir/${w#build/}" ] || missing="$missing $w" ;;
	/*) [ -e "$w" ] || missing="$missing $w" ;;
	*) [ -e "$top/$w" ] || missing="$missing $w" ;;
	esac
done
check "every path the commands name exists (missing:${missing:- none})" [ -z "$missing" ]

work=$TMP/readme
mkdir -p "$work" && ln -s "$build_dir" "$work/build"
n=0
while IFS= read -r cmd; do
	case $cmd in build/bin/ddprun*|LD_LIBRARY_PATH=build/*) ;; *) continue ;; esac
	case $cmd in *--nnodes*) continue ;; esac
	n=$((n + 1))
	if (cd "$work" && env -u LD_LIBRARY_PATH bash -c "$cmd") >"$TMP/cmd.out" 2>"$TMP/cmd.err"; then
		ok "runs as written: $cmd"
	else
		notok "runs as written: $cmd"
		tail -n 3 "$TMP/cmd.err" | sed 's/^/# /'
	fi
done <<<"$block"
check "the README has single-node commands to run ($n)" [ $n -ge 5 ]
finish
