#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/arch/check_layers.sh - the one dependency rule of the code base
# (docs/README.md, "Architecture"):
#
#   runtime/ depends on nothing above it.  No file under runtime/ includes a
#   header of interpose/ or launcher/, and no runtime object imports a symbol
#   that libddp.so exports (the file hooks, dlsym, the cu* hooks) or that
#   only interpose/ defines: the runtime reaches the driver and libc through
#   runtime/port (ddp_port.h) alone.
#
# The one exception is runtime/port/ddp_port_libc.o, the plain-libc filling
# of the port for programs other than libddp.so; the check also proves that
# libddp.so does not contain it.
#
# Cases:
#   no_upward_includes           the include rule over the source tree
#   no_exported_imports          nm: runtime objects vs libddp.so's exports
#   no_interpose_imports         nm: runtime objects vs interpose's objects
#   libddp_has_its_own_libc      libddp.so's ddp_libc_ is its own (.bss),
#                                not the plain filling (.data)
#   include_check_catches_breaks negative control: the include check fails
#                                on a copy of runtime/ with a broken include
set -u
B=${BUILD:-build}
LIB=$B/lib/libddp.so
for f in "$LIB" "$B/lib/libddp_base.a"; do
	[ -e "$f" ] || { echo "not built: $f (make all)"; exit 77; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/ddp-arch.XXXXXX")
trap 'rm -rf "$T"' EXIT
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; shift; for l in "$@"; do echo "# $l"; done; }

# upward_includes DIR: prints "file: header" for every #include "X" under DIR
# whose X names a header of interpose/ or launcher/.
upward_includes() {
	local hdrs
	hdrs=$(cd interpose && ls *.h 2>/dev/null; cd ../launcher && ls *.h *.def 2>/dev/null)
	grep -rHoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+"' "$1" --include='*.c' --include='*.h' \
			--include='*.def' |
		sed -E 's/:[[:space:]]*#[[:space:]]*include[[:space:]]*"/: /; s/"$//' |
		while IFS= read -r line; do
			h=${line##*: }
			h=${h##*/}
			for u in $hdrs; do
				[ "$h" = "$u" ] && { echo "$line"; break; }
			done
			case "${line##*: }" in
			*interpose/* | *launcher/*) echo "$line" ;;
			esac
		done | sort -u
}

out=$(upward_includes runtime)
if [ -z "$out" ]; then ok no_upward_includes; else bad no_upward_includes "$out"; fi

# symbols every runtime object imports (U), but the plain-libc filling
runtime_imports() {
	for a in "$B"/lib/libddp_*.a; do
		nm -A "$a" 2>/dev/null
	done | awk '$2 == "U" || $(NF-1) == "U" { print $1 " " $NF }' |
		grep -v 'ddp_port_libc\.o:' | sed -E 's/@.*//'
}
runtime_imports > "$T/imports"
nm -D --defined-only "$LIB" | awk '{ print $NF }' | sed -E 's/@.*//' | sort -u > "$T/exports"
awk '{ print $2 }' "$T/imports" | sort -u > "$T/imported"
hit=$(comm -12 "$T/imported" "$T/exports")
if [ -z "$hit" ]; then
	ok no_exported_imports
else
	bad no_exported_imports "runtime objects import symbols libddp.so exports:" \
		"$(grep -wF "$hit" "$T/imports" | head -20)"
fi

# symbols only interpose/ defines (but ddp_libc_, the port's libc table,
# which libddp.so defines itself in interpose/hook_libc.c by design)
nm --defined-only "$B"/interpose/*.o 2>/dev/null | awk 'NF == 3 { print $3 }' | grep -vx ddp_libc_ |
	sort -u > "$T/interpose"
hit=$(comm -12 "$T/imported" "$T/interpose")
if [ -z "$hit" ]; then
	ok no_interpose_imports
else
	bad no_interpose_imports "runtime objects import symbols defined in interpose/:" $hit
fi

kind=$(nm "$LIB" | awk '$3 == "ddp_libc_" { print $2 }')
case "$kind" in
b | B) ok libddp_has_its_own_libc ;;
*) bad libddp_has_its_own_libc "ddp_libc_ in libddp.so is of kind '$kind' (the plain filling is 'D')" ;;
esac

# Negative control: the same include check on a copy of runtime/ with one
# header of interpose/ included must fail.
mkdir -p "$T/runtime/grad"
cp runtime/grad/*.c runtime/grad/*.h "$T/runtime/grad/" 2>/dev/null
sed -i '0,/#include "ddp_grad.h"/s//#include "ddp_grad.h"\n#include "hook.h"/' "$T/runtime/grad/ddp_grad.c"
out=$(upward_includes "$T/runtime")
case "$out" in
*hook.h*) ok include_check_catches_breaks ;;
*) bad include_check_catches_breaks "a broken include went unnoticed: '$out'" ;;
esac
