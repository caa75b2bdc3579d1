#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# tests/arch/check_exports.sh - libddp.so exports exactly what its hook
# tables declare: the cu* rows of interpose/hooks.def, the libc rows of
# interpose/hook_libc.def, the cuBLAS rows of interpose/hook_blas.def, and
# dlsym.  A hook written outside the tables,
# or a table row without its function, fails here.
#
# Cases: exports_match_tables, table_check_catches_extra (negative control:
# the same comparison with one name added to the export list must fail).
set -u
B=${BUILD:-build}
LIB=$B/lib/libddp.so
[ -e "$LIB" ] || { echo "not built: $LIB (make all)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ddp-exports.XXXXXX")
trap 'rm -rf "$T"' EXIT

nm -D --defined-only "$LIB" | awk '{ print $NF }' | sed -E 's/@.*//' | sort -u > "$T/exported"
{
	sed -nE 's/^HOOK\(([A-Za-z0-9_]+), *([A-Za-z0-9_]*),.*/\1\2/p' interpose/hooks.def
	sed -nE 's/^HOOK_LIBC\([A-Z]+, [^,]+, ([A-Za-z0-9_]+), .*/\1/p' interpose/hook_libc.def
	sed -nE 's/^BLAS_[A-Z_]+\(([A-Za-z0-9_]+)[,)].*/\1/p' interpose/hook_blas.def
	sed -nE 's/^PEER\([^,]+, ([A-Za-z0-9_]+), .*/\1/p' interpose/hook_peer.def
	echo dlsym
} | sort -u > "$T/declared"

compare() { # exported-list declared-list: prints the differences
	diff "$1" "$2" | sed -n 's/^< /exported, not in a table: /p; s/^> /in a table, not exported: /p'
}
out=$(compare "$T/exported" "$T/declared")
if [ -z "$out" ] && [ "$(wc -l < "$T/declared")" -gt 100 ]; then
	echo "ok - exports_match_tables"
else
	echo "not ok - exports_match_tables"
	printf '# %s\n' "$out" "declared: $(wc -l < "$T/declared") names"
fi

{ cat "$T/exported"; echo open_by_hand; } | sort > "$T/extra"
case "$(compare "$T/extra" "$T/declared")" in
*open_by_hand*) echo "ok - table_check_catches_extra" ;;
*) echo "not ok - table_check_catches_extra" ;;
esac
