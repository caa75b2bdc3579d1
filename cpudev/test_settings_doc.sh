#!/bin/sh
# SPDX-License-Identifier: MIT
#
# test_settings_doc.sh - the CPU device's settings are one table
# (cpudev/sim_settings.def): docs/cpu-device.md holds exactly the table it
# generates (and a changed row makes the check fail: negative control), the
# driver reads no environment variable except through sim_settings.h, and
# every SIMCUDA_* / DDP_SIM_* name its sources mention is a row.
set -u
def=cpudev/sim_settings.def
doc=docs/cpu-device.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {
	if [ "$2" -eq 0 ]; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi
}

cpudev/settings_doc.sh "$def" "$doc" --check
check "$doc's settings table is the one $def generates (make docs-cpudev rewrites it)" $?

sed 's/"seed of the `random` thread order"/"another help"/' "$def" >"$tmp/changed.def"
cmp -s "$def" "$tmp/changed.def" && echo "# the negative control's edit did not apply"
cpudev/settings_doc.sh "$tmp/changed.def" "$doc" --check
check "negative control: a changed row makes the check fail" $([ $? -ne 0 ] && ! cmp -s "$def" "$tmp/changed.def"; echo $?)

grep -n 'getenv' cpudev/sim_*.c >"$tmp/getenv"
sed 's/^/# /' "$tmp/getenv"
check "no getenv in cpudev/sim_*.c: settings are read through sim_settings.h" $([ ! -s "$tmp/getenv" ]; echo $?)

grep -ohE '\b(SIMCUDA_[A-Z_]+|DDP_SIM_[A-Z_]+)\b' cpudev/sim_*.c cpudev/sim_*.h | sort -u >"$tmp/used"
sed -nE 's/^SIM_SETTING\([a-z0-9_]+, "([A-Z0-9_]+)".*/\1/p' "$def" | sort -u >"$tmp/rows"
comm -23 "$tmp/used" "$tmp/rows" >"$tmp/missing"
sed 's/^/# not in the table: /' "$tmp/missing"
check "every SIMCUDA_*/DDP_SIM_* name in the driver's sources is a row ($(wc -l <"$tmp/rows") rows)" \
	$([ ! -s "$tmp/missing" ] && [ -s "$tmp/used" ]; echo $?)
[ "$fails" -eq 0 ]
