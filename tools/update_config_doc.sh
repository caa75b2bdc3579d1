#!/usr/bin/env bash
# update_config_doc.sh TOOL DOC [--check]: puts TOOL --markdown between the
# markers of DOC; with --check only reports whether DOC is up to date.
set -eu
tool=$1 doc=$2 mode=${3:-}
begin='<!-- BEGIN GENERATED: ddp-params --markdown -->'
end='<!-- END GENERATED -->'
new=$(mktemp)
trap 'rm -f "$new"' EXIT
awk -v b="$begin" -v e="$end" -v tool="$tool" '
	$0 == b { print; cmd = tool " --markdown"; while ((cmd | getline l) > 0) print l; close(cmd); skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }' "$doc" >"$new"
if [ "$mode" = --check ]; then
	cmp -s "$new" "$doc"
else
	cp "$new" "$doc"
fi
