#!/usr/bin/env bash
# demo.sh: set up, build, and free a victim's memory with mrelease --kill.
# The victim is held by the cgroup v1 freezer where there is one, as a
# process stuck in uninterruptible sleep would be: a plain SIGKILL then
# leaves its memory in place, and only mrelease gives it back.
# Run as root from the top of the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" -eq 0 ] || { echo "demo.sh: run as root" >&2; exit 1; }
bash tests/setup-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

size=${MR_DEMO_MIB:-300}
ready=$(mktemp -u /tmp/mrelease-demo.XXXXXX)
freezer=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") break
	if ($(i + 1) == "cgroup" && ("," $(i + 3) ",") ~ /,freezer,/) { print $5; exit } }' \
	/proc/self/mountinfo)
cg=

cleanup() {
	if [ -n "$cg" ]; then
		echo THAWED >"$cg/freezer.state"
		wait "$victim" 2>/dev/null || true
		rmdir "$cg"
	fi
	kill -9 "$victim" 2>/dev/null || true
	rm -f "$ready"
}

rss() {
	awk '/^VmRSS:/ { printf "%d MiB", $2 / 1024; found = 1 } END { if (!found) print "none" }' \
		"/proc/$victim/status" 2>/dev/null || echo "none"
}

echo "starting a victim that touches $size MiB ..."
build/tests/mr-victim -m "$size" -r "$ready" &
victim=$!
trap cleanup EXIT
for ((i = 0; i < 300; i++)); do
	[ ! -s "$ready" ] || break
	kill -0 "$victim"
	sleep 0.1
done
[ -s "$ready" ] || { echo "demo.sh: the victim did not get ready in 30 s" >&2; exit 1; }

if [ -n "$freezer" ]; then
	cg=$(mktemp -d "$freezer/mrelease-demo.XXXXXX")
	echo "$victim" >"$cg/cgroup.procs"
	echo FROZEN >"$cg/freezer.state"
	for ((i = 0; i < 100; i++)); do
		[ "$(cat "$cg/freezer.state")" != FROZEN ] || break
		sleep 0.1
	done
	[ "$(cat "$cg/freezer.state")" = FROZEN ] ||
		{ echo "demo.sh: the victim was not frozen in 10 s" >&2; exit 1; }
	kill -9 "$victim"
	sleep 1
	echo "victim $victim is frozen (as if stuck in D state) and was sent SIGKILL 1 s ago;"
	echo "its RSS is still $(rss). Freeing it:"
else
	echo "victim $victim is ready; freeing it:"
fi
echo "# build/mrelease --kill $victim"
build/mrelease --kill "$victim"
echo "its RSS now: $(rss)"
