#!/bin/sh
# SPDX-License-Identifier: MIT
#
# settings_doc.sh DEF DOC [--check] - the settings table of the CPU device,
# generated from DEF (cpudev/sim_settings.def), put between DOC's markers
#   <!-- BEGIN GENERATED: cpudev/settings_doc.sh -->
#   <!-- END GENERATED -->
# With --check, only says (exit status) whether DOC holds exactly that table.
# settings_doc.sh DEF prints the table alone.
set -eu
def=$1
doc=${2:-}
mode=${3:-}
table() {
	printf '%s\n' '| variable | type | default | meaning |' '|---|---|---|---|'
	sed -nE 's/^SIM_SETTING\(([a-z0-9_]+), "([A-Z0-9_]+)", ([A-Z]+), (NULL|"[^"]*"), "(.*)"\)$/\2|\3|\4|\5/p' "$def" |
		awk -F'|' '{
			d = $3 == "NULL" ? "unset" : "`" substr($3, 2, length($3) - 2) "`"
			help = $4; for (i = 5; i <= NF; i++) help = help "|" $i
			printf "| `%s` | %s | %s | %s |\n", $1, tolower($2), d, help
		}'
}
rows=$(grep -c '^SIM_SETTING(' "$def")
made=$(table | tail -n +3 | wc -l)
if [ "$rows" -ne "$made" ]; then
	echo "settings_doc.sh: $def has $rows SIM_SETTING rows, $made of them readable (one row per line, help without \\\")" >&2
	exit 2
fi
[ -n "$doc" ] || { table; exit 0; }
begin='<!-- BEGIN GENERATED: cpudev/settings_doc.sh -->'
end='<!-- END GENERATED -->'
grep -qxF "$begin" "$doc" || { echo "settings_doc.sh: $doc has no line '$begin'" >&2; exit 2; }
new=$(mktemp)
tab=$(mktemp)
trap 'rm -f "$new" "$tab"' EXIT
table >"$tab"
awk -v b="$begin" -v e="$end" -v tab="$tab" '
	$0 == b { print; while ((getline l < tab) > 0) print l; skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }' "$doc" >"$new"
if [ "$mode" = --check ]; then
	cmp -s "$new" "$doc"
else
	cp "$new" "$doc"
fi
