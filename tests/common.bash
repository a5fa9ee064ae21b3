# common.bash: shared set-up for the bats files: assertions, victims, clean-up.
load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

: "${MRELEASE:?set MRELEASE to the mrelease binary (ctest does)}"
: "${MR_VICTIM:?set MR_VICTIM to the mr-victim helper (ctest does)}"

VICTIMS=()

need_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
}

# start_victim [victim options]: start a victim in the background and
# wait until it has touched its memory; its pid is left in $VPID.
start_victim() {
	local ready i
	ready=$(mktemp -u "$BATS_TEST_TMPDIR/ready.XXXXXX")
	"$MR_VICTIM" -r "$ready" "$@" </dev/null >/dev/null 3>&- &
	VPID=$!
	VICTIMS+=("$VPID")
	for ((i = 0; i < 600; i++)); do
		[ -s "$ready" ] && return 0
		kill -0 "$VPID" 2>/dev/null || break
		sleep 0.05
	done
	echo "victim $VPID did not get ready" >&2
	return 1
}

# is_victim PID: true while PID is still one of our victims, so that
# clean-up never signals a recycled pid.
is_victim() {
	[ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(readlink -f "$MR_VICTIM")" ]
}

# rss_kb PID: VmRSS of PID in KiB, 0 once its address space is gone.
rss_kb() {
	local v
	v=$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	echo "${v:-0}"
}

kill_victims() {
	local p
	for p in "${VICTIMS[@]}"; do
		is_victim "$p" && kill -9 "$p" 2>/dev/null
	done
	VICTIMS=()
	return 0
}
