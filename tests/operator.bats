#!/usr/bin/env bats
# operator.bats: --grace (SIGTERM, a deadline, then SIGKILL and release),
# and who freed what: process_mrelease or the processes' own exit. Every
# process signalled here is a victim this file started.

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
	V2=$(cgroup2_mount)
}

@test "--grace: a victim whose SIGTERM is fatal is released at once, not after the grace" {
	start_victim -m 16
	# The grace is 30 s; the run must end long before (timeout says so).
	run -0 --separate-stderr timeout 20 "$MRELEASE" --kill --grace 30 --json "$VPID"
	assert_regex "$(json_get '.targets[0].status')" '^(released|exited)$'
	json_get '.summary.elapsed_us < 20000000' >/dev/null
	# No SIGKILL was needed.
	assert_equal "$(json_get '.summary.kill_us')" null
}

@test "--grace: a victim that ignores SIGTERM is killed after the grace, then released" {
	start_victim -m 16 -T
	run -0 --separate-stderr "$MRELEASE" --kill --grace 1 --json "$VPID"
	assert_regex "$(json_get '.targets[0].status')" '^(released|exited)$'
	# The grace was given in full before the SIGKILL.
	json_get '.summary.kill_us >= 1000000' >/dev/null
	json_get '.targets[0].rss_after_kb == 0' >/dev/null
	wait_until 100 bash -c "! kill -0 $VPID 2>/dev/null"
}

@test "--grace: a victim that stops by itself within the grace is 'exited'" {
	start_victim -m 16 -e
	run -0 --separate-stderr timeout 20 "$MRELEASE" --kill --grace 30 --json "$VPID"
	assert_equal "$(json_get '.targets[0].status')" exited
	assert_equal "$(json_get '.summary.kill_us')" null
	json_get '.summary.exited_kb > 15000 and .summary.released_kb == 0' >/dev/null
}

@test "--grace: a frozen victim does not begin its exit on SIGTERM; SIGKILL and release follow" {
	start_victim -m 16
	freeze_victim "$VPID"
	run -0 --separate-stderr "$MRELEASE" --kill --grace 0.5 --json "$VPID"
	assert_equal "$(json_get '.targets[0].status')" released
	json_get '.summary.kill_us >= 500000' >/dev/null
	[ "$(rss_kb "$VPID")" -lt 1024 ]
}

@test "--grace: SIGINT during the grace goes straight to the kill" {
	start_victim -m 8 -T
	local out=$BATS_TEST_TMPDIR/out err=$BATS_TEST_TMPDIR/err rc=0
	"$MRELEASE" --kill --grace 60 --json "$VPID" >"$out" 2>"$err" 3>&- &
	local mr=$!
	# SIGTERM goes out within milliseconds; the victim ignores it, and the
	# grace of a minute runs.
	sleep 0.5
	kill -0 "$VPID"
	kill -INT "$mr"
	timeout 20 tail --pid="$mr" -f /dev/null || fail "mrelease did not end after SIGINT"
	wait "$mr" || rc=$?
	assert_equal "$rc" 0
	assert_equal "$(cat "$err")" "mrelease: the grace was cut short by a signal; killing now"
	output=$(cat "$out")
	assert_regex "$(json_get '.targets[0].status')" '^(released|exited)$'
	wait_until 100 bash -c "! kill -0 $VPID 2>/dev/null"
}

@test "--grace with a cgroup: SIGTERM to every member, then the kill through pidfds" {
	[ -n "$V2" ] || skip "needs a cgroup2 mount"
	local cg a b
	make_cgroup "$V2"
	cg=$CG
	start_victim -m 8
	a=$VPID
	start_victim -m 8 -T
	b=$VPID
	echo "$a" >"$cg/cgroup.procs"
	echo "$b" >"$cg/cgroup.procs"
	run -0 --separate-stderr "$MRELEASE" --kill --grace 1 --verbose --json --cgroup "$cg"
	assert_regex "$stderr" "killing each process through its pidfd: --grace sends SIGTERM first"
	assert_equal "$(json_get '.cgroups[0].kill')" pidfd
	assert_equal "$(json_get '.summary.targets')" 2
	assert_equal "$(json_get '.summary.failed')" 0
	wait_until 100 test ! -s "$cg/cgroup.procs"
}

@test "the total line and the summary split the memory: released by mrelease, or by the exit" {
	start_victim -m 16 -e
	local graceful=$VPID
	start_victim -m 24
	local frozen=$VPID
	freeze_victim "$frozen"
	run -0 --separate-stderr "$MRELEASE" --kill --grace 5 --json "$graceful" "$frozen"
	assert_equal "$(json_get ".targets[] | select(.pid == $graceful) | .status")" exited
	assert_equal "$(json_get ".targets[] | select(.pid == $frozen) | .status")" released
	json_get '.summary.released_kb + .summary.exited_kb == .summary.freed_kb' >/dev/null
	json_get ".summary.released_kb == ([.targets[] | select(.pid == $frozen) | .freed_kb] | add)" >/dev/null
	json_get '.summary.released_kb > 20000 and .summary.exited_kb > 12000' >/dev/null
	# The table says it in the total line.
	start_victim -m 8
	freeze_victim "$VPID"
	run -0 --separate-stderr "$MRELEASE" --kill "$VPID"
	assert_line --regexp '^ *total 1 target .* released [0-9.]+M, exited 0$'
}
