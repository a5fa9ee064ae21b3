#!/usr/bin/env bash
# demo.sh: set up, build, and free a victim's memory with mrelease --kill.
# Run as root from the top of the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" -eq 0 ] || { echo "demo.sh: run as root" >&2; exit 1; }
bash tests/setup-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

size=${MR_DEMO_MIB:-300}
ready=$(mktemp -u /tmp/mrelease-demo.XXXXXX)
echo "starting a victim that touches $size MiB ..."
build/tests/mr-victim -m "$size" -r "$ready" &
victim=$!
disown		# its death is the point of the demo, not news from the shell
trap 'kill -9 $victim 2>/dev/null; rm -f "$ready"' EXIT
while [ ! -s "$ready" ]; do
	kill -0 $victim || exit 1
	sleep 0.1
done
echo "victim $victim is ready; freeing it:"
echo "# build/mrelease --kill $victim"
build/mrelease --kill "$victim"
