#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# deps.sh - checks (and, as root, installs) what the build needs.
#
# Needs: gcc, g++, make, the CUDA toolkit (nvcc on PATH or CUDA_HOME), and the
# Debian packages below.  Run as root it installs missing packages with
# apt-get; otherwise it prints the exact apt-get line and fails.
# Usage: scripts/deps.sh [--fuzz] [--lint] [--test]   (--fuzz also wants clang
# with libFuzzer; --lint cppcheck and clang-tidy for `make lint`; --test
# chromium, which renders `ddprun report --html`'s page headless in make test)
set -u
want_fuzz=0
want_lint=0
want_test=0
for a in "$@"; do
	case "$a" in
	--fuzz) want_fuzz=1 ;;
	--lint) want_lint=1 ;;
	--test) want_test=1 ;;
	esac
done

missing_pkgs=()
have_header() { echo "#include <$1>" | ${CC:-gcc} -E -x c - >/dev/null 2>&1; }

for tool in gcc g++ make; do
	command -v "$tool" >/dev/null || missing_pkgs+=("$( [ "$tool" = g++ ] && echo g++ || echo "$tool")")
done
have_header libelf.h || missing_pkgs+=(libelf-dev)
have_header zstd.h   || missing_pkgs+=(libzstd-dev)
have_header lz4.h    || missing_pkgs+=(liblz4-dev)
have_header jansson.h || missing_pkgs+=(libjansson-dev)
command -v timeout >/dev/null || missing_pkgs+=(coreutils)
command -v python3 >/dev/null || missing_pkgs+=(python3)
# ip netns: the two-node tests (tests/e2e/launcher/netns.sh, readme_nodes.sh)
command -v ip >/dev/null || missing_pkgs+=(iproute2)
if [ $want_fuzz = 1 ]; then
	command -v clang >/dev/null || missing_pkgs+=(clang)
fi
if [ $want_test = 1 ]; then
	command -v chromium >/dev/null || missing_pkgs+=(chromium)
fi
if [ $want_lint = 1 ]; then
	command -v cppcheck >/dev/null || missing_pkgs+=(cppcheck)
	command -v clang-tidy >/dev/null || missing_pkgs+=(clang-tidy)
fi

if [ ${#missing_pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "deps: installing ${missing_pkgs[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y --no-install-recommends "${missing_pkgs[@]}" >/dev/null 2>&1 ||
			{ apt-get update >/dev/null 2>&1 &&
			  apt-get install -y --no-install-recommends "${missing_pkgs[@]}"; } ||
			{ echo "deps: apt-get install ${missing_pkgs[*]} failed" >&2; exit 1; }
	else
		echo "deps: missing packages; install them with:" >&2
		echo "    sudo apt-get install -y ${missing_pkgs[*]}" >&2
		exit 1
	fi
fi

nvcc_path=$(command -v nvcc 2>/dev/null || true)
if [ -z "$nvcc_path" ] && [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
	nvcc_path=$CUDA_HOME/bin/nvcc
fi
if [ -z "$nvcc_path" ]; then
	echo "deps: the CUDA toolkit (nvcc) is not on PATH; install CUDA 12.4+ and put its bin/ on PATH or set CUDA_HOME" >&2
	exit 1
fi
exit 0
