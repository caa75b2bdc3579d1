#!/usr/bin/env bash
# update_config_doc.sh BINDIR [--check]: rewrites every generated block of
# docs/configuration.md, docs/ddprun.1 and docs/launcher.md from the one
# option table and the settings tables; with --check only says (exit status,
# and the stale files on stderr) whether they are up to date.
# A block is the lines between
#   <!-- BEGIN GENERATED: KEY -->  and  <!-- END GENERATED -->   (markdown)
#   .\" BEGIN GENERATED: KEY       and  .\" END GENERATED         (roff)
# KEY: ddp-params --markdown (runtime/base/params.def), ddprun-doc --man |
# --man-examples | --markdown (launcher/options.def), cpudev/settings_doc.sh
# (cpudev/sim_settings.def).
set -eu
bin=$1 mode=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
top=${DOC_TOP:-$src} # where docs/ is (a copy, for the test's negative control)
block() {
	case $1 in
	"ddp-params --markdown") "$bin/ddp-params" --markdown ;;
	"ddprun-doc --man" | "ddprun-doc --man-examples" | "ddprun-doc --markdown") "$bin/ddprun-doc" "${1#ddprun-doc }" ;;
	"cpudev/settings_doc.sh") "$src/cpudev/settings_doc.sh" "$src/cpudev/sim_settings.def" ;;
	*) echo "update_config_doc.sh: unknown generated block '$1'" >&2; return 2 ;;
	esac
}
stale=0
for doc in docs/configuration.md docs/ddprun.1 docs/launcher.md; do
	new=$(mktemp)
	skip=0
	while IFS= read -r line || [ -n "$line" ]; do
		case $line in
		*"BEGIN GENERATED: "*)
			printf '%s\n' "$line"
			key=${line#*BEGIN GENERATED: }
			key=${key% -->}
			block "$key"
			skip=1
			;;
		*"END GENERATED"*) printf '%s\n' "$line"; skip=0 ;;
		*) [ $skip = 1 ] || printf '%s\n' "$line" ;;
		esac
	done <"$top/$doc" >"$new"
	if [ "$mode" = --check ]; then
		cmp -s "$new" "$top/$doc" || { echo "$doc is stale: run 'make docs-config'" >&2; stale=1; }
	else
		cp "$new" "$top/$doc"
	fi
	rm -f "$new"
done
exit $stale
