#!/usr/bin/env bash
# setup-deps.sh: install the Debian packages mrelease builds and tests with,
# only those that are missing. Run as root.
set -euo pipefail

packages=(cmake gcc make pkg-config libproc2-dev bats bats-support bats-assert jq
	bash-completion mandoc man-db util-linux procps strace dpkg-dev valgrind
	clang libclang-rt-14-dev clang-tidy cppcheck gdb time tmux lintian file libjansson-dev
	python3-yaml systemd-container python3)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	echo "installing: ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
