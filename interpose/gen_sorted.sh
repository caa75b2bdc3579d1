#!/bin/sh
# SPDX-License-Identifier: MIT
#
# gen_sorted.sh HOOKS_DEF > hooks_sorted.h
#
# Writes the two sorted views of hooks.def that the lookups binary-search:
# hook ids in strcmp order of the exported symbol (dlsym), and in order of
# (base name, symbol) (cuGetProcAddress).  Run by interpose/module.mk; the
# output is a build artefact, never edited.
set -eu
def=$1
rows=$(sed -n 's/^HOOK(\([A-Za-z0-9_]*\), *\([A-Za-z0-9_]*\),.*/\1 \2/p' "$def")
[ -n "$rows" ] || { echo "gen_sorted.sh: no HOOK rows in $def" >&2; exit 1; }
echo "/* Generated from $def by interpose/gen_sorted.sh: do not edit. */"
echo "#define HOOK_BY_NAME_LIST \\"
printf '%s\n' "$rows" | awk '{ print $1 $2 }' | LC_ALL=C sort | awk '{ printf "\tHOOK_ID_%s, \\\n", $1 }'
echo ""
echo "#define HOOK_BY_BASE_LIST \\"
printf '%s\n' "$rows" | awk '{ print $1 " " $1 $2 }' | LC_ALL=C sort | awk '{ printf "\tHOOK_ID_%s, \\\n", $2 }'
echo ""
# cuda.h renames many base names (cuMemAlloc -> cuMemAlloc_v2); hooks.def
# spells each ABI itself, so hook.h undoes those renames for every base.
printf '%s\n' "$rows" | awk '{ print $1 }' | LC_ALL=C sort -u | awk '{ printf "#undef %s\n", $1 }'
