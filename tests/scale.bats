#!/usr/bin/env bats
# scale.bats: many targets: memory that does not grow with them beyond
# their own records, and no descriptor left behind.

bats_require_minimum_version 1.5.0
load common

SLEEPERS=()

setup() {
	need_root
	[ -x /usr/bin/time ] || skip "needs GNU time (Debian: time)"
}

# Only sleepers that are still ours: a pid reaped already may be reused.
stop_sleepers() {
	local p
	for p in "${SLEEPERS[@]}"; do
		[ "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" = "sleep 1000 " ] &&
			kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	SLEEPERS=()
	return 0
}

teardown() {
	stop_sleepers
}

# start_sleepers N: N processes of our own to be targets, pids in SLEEPERS.
start_sleepers() {
	local i
	SLEEPERS=()
	for ((i = 0; i < $1; i++)); do
		sleep 1000 </dev/null >/dev/null 2>&1 3>&- &
		SLEEPERS+=("$!")
	done
}

# max_rss_kb ARGS...: the peak RSS of mrelease run with ARGS, pids on stdin.
max_rss_kb() {
	local log=$BATS_TEST_TMPDIR/time
	printf '%s\n' "${SLEEPERS[@]}" >"$BATS_TEST_TMPDIR/pids"
	/usr/bin/time -f %M -o "$log" "$MRELEASE" "$@" - <"$BATS_TEST_TMPDIR/pids" \
		>/dev/null 2>&1
	cat "$log"
}

@test "memory stays flat from 200 to 2000 killed targets" {
	# ASan keeps freed memory in quarantine; LeakSanitizer checks leaks there.
	[ "${MR_SANITIZE:-OFF}" != ON ] || skip "peak RSS means nothing under AddressSanitizer"
	start_sleepers 200
	local small
	small=$(max_rss_kb --kill --quiet --measure=status)
	stop_sleepers
	start_sleepers 2000
	local big
	big=$(max_rss_kb --kill --quiet --measure=status)
	# 1800 more targets may cost their records (a few hundred bytes each)
	# and the pid lists, not a leak per target.
	echo "peak RSS: $small KiB for 200 targets, $big KiB for 2000" >&3
	[ $((big - small)) -lt 4096 ] || fail "peak RSS grew from $small to $big KiB"
}

@test "2000 sleepers under a limit of 64 open files: every one killed, in batches" {
	start_sleepers 2000
	printf '%s\n' "${SLEEPERS[@]}" >"$BATS_TEST_TMPDIR/pids"
	run -0 --separate-stderr std_fds_only without_cap sys_resource prlimit --nofile=64:64 \
		"$MRELEASE" --kill --quiet - <"$BATS_TEST_TMPDIR/pids"
	# The readings have 100 ms in all, whatever the batches: a slow
	# build (ASan) gives up some figures, and says so; nothing else.
	assert_equal "$(grep -v '^mrelease: gave up the figures of [0-9]* targets: not read within 100 ms' <<<"$stderr")" ""
	wait_gone "${SLEEPERS[@]}"
}

@test "every pidfd is closed by the end, and 2000 targets fit a low soft limit" {
	start_sleepers 2000
	local log=$BATS_TEST_TMPDIR/strace
	command -v strace >/dev/null || skip "needs strace"
	printf '%s\n' "${SLEEPERS[@]}" >"$BATS_TEST_TMPDIR/pids"
	ASAN_OPTIONS=detect_leaks=0 run -0 --separate-stderr bash -c \
		'ulimit -Sn 64 && exec strace -f -qq -o "$0" -e trace=pidfd_open,close "$1" --dry-run --kill --json - <"$2"' \
		"$log" "$MRELEASE" "$BATS_TEST_TMPDIR/pids"
	assert_equal "$(jq -r .summary.failed <<<"$output")" 0
	assert_equal "$(jq -r .summary.targets <<<"$output")" 2000
	# Each descriptor pidfd_open returned is closed again. Calls of two
	# threads may be split in strace's log ("<unfinished ...>", then
	# "<... pidfd_open resumed>").
	local opened closed
	opened=$(grep -oE 'pidfd_open\([0-9]+, 0\) += [0-9]+|<\.\.\. pidfd_open resumed>\) += [0-9]+' "$log" |
		awk '{ print $NF }' | sort -n)
	closed=$(grep -oE 'close\([0-9]+' "$log" | tr -dc '0-9\n' | sort -n)
	# One for each target, once: the others are mrelease's own pid (is it
	# pidfs?) and its ancestors (their parents, from PIDFD_GET_INFO).
	local targets
	targets=$(grep -oE 'pidfd_open\([0-9]+' "$log" | tr -dc '0-9\n' |
		grep -Fxf <(printf '%s\n' "${SLEEPERS[@]}"))
	assert_equal "$(wc -l <<<"$targets")" 2000
	assert_equal "$(sort -u <<<"$targets" | wc -l)" 2000
	assert_equal "$(grep -cE '^([0-9]+) +pidfd_open\(\1, 0\)' "$log")" 1
	local missing
	missing=$(comm -23 <(sort -u <<<"$opened") <(sort -u <<<"$closed") | head -n 5)
	[ -z "$missing" ] || fail "pidfds never closed: $missing"
}

@test "a million pids on standard input: peak memory under 64 MiB, locked or not" {
	[ "${MR_SANITIZE:-OFF}" != ON ] || skip "peak RSS means nothing under AddressSanitizer"
	local log=$BATS_TEST_TMPDIR/time pids=$BATS_TEST_TMPDIR/million
	# Above any pid_max of a 64-bit kernel's default but in range: no such
	# processes, yet every one a valid pid to parse and try.
	seq 3000000 4000000 >"$pids"
	run -1 /usr/bin/time -f %M -o "$log" "$MRELEASE" --dry-run --quiet - <"$pids" 2>/dev/null
	# (time says "Command exited with non-zero status 1" first.)
	local peak
	peak=$(tail -n 1 "$log")
	echo "peak RSS: $peak KiB for 1000001 pids" >&3
	[ "$peak" -lt 65536 ] || fail "peak RSS $peak KiB"
}
