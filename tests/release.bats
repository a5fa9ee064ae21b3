#!/usr/bin/env bats
# release.bats: releasing processes by pid, end to end, as root.
# Every process killed here is a victim this file started.

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
}

@test "--kill frees the memory of a victim that cannot exit by itself" {
	start_victim -m 32
	freeze_victim "$VPID"
	assert_rss_over "$VPID" 30000
	run -0 --separate-stderr "$MRELEASE" --kill --json "$VPID"
	assert_equal "$(json_get '.targets[0].status')" released
	assert_equal "$(json_get '.summary.released')" 1
	[ "$(json_get '.targets[0].rss_before_kb')" -gt 30000 ]
	[ "$(json_get '.targets[0].rss_after_kb')" -lt 1024 ]
	[ "$(json_get '.targets[0].freed_kb')" -gt 30000 ]
	# Still frozen, so it has not exited: only process_mrelease can have
	# taken its memory.
	grep -q '^State:.*D' "/proc/$VPID/status"
	assert_rss_under "$VPID" 1024
}

@test "a plain SIGKILL leaves a frozen victim's memory in place (the control)" {
	start_victim -m 32
	freeze_victim "$VPID"
	kill -9 "$VPID"
	sigkill_pending "$VPID"
	# What must not follow, the memory given back, is no event to wait
	# for: the scenario gives the kernel half a second to show it does not.
	sleep 0.5
	assert_rss_over "$VPID" 30000
	# Dying already, so no --kill is needed to release it.
	run -0 --separate-stderr "$MRELEASE" --json "$VPID"
	assert_equal "$(json_get '.targets[0].status')" released
	assert_rss_under "$VPID" 1024
}

@test "--kill releases a running victim and it goes away" {
	start_victim -m 24
	run -0 --separate-stderr "$MRELEASE" --kill --wait=10 "$VPID"
	# It may win the race and finish its own exit first: then "exited".
	assert_line --regexp "^ *$VPID mr-victim .* KILL +(released|exited)\$"
	# One target: no sum line.
	refute_line --regexp '^ *sum '
	assert_line --regexp '^MemAvailable change: '
	gone "$VPID"
}

@test "a victim that is not exiting is left alone without --kill" {
	start_victim -m 16
	run -1 --separate-stderr "$MRELEASE" "$VPID"
	assert_equal "$stderr" "mrelease: pid $VPID: not exiting; use --kill"
	assert_line --regexp "^ *$VPID mr-victim .* failed\$"
	lives "$VPID"
	assert_rss_over "$VPID" 15000
}

@test "--dry-run measures and leaves the victim alive, even with --kill" {
	start_victim -m 16
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json "$VPID"
	assert_equal "$(json_get '.targets[0].status')" "would kill"
	assert_equal "$(json_get '.targets[0].signal')" null
	[ "$(json_get '.targets[0].rss_before_kb')" -gt 15000 ]
	assert_equal "$(json_get '.targets[0].rss_after_kb')" null
	lives "$VPID" || fail "the dry run killed pid $VPID"
	assert_rss_over "$VPID" 15000
}

@test "pids from standard input are all released" {
	start_victim -m 8
	local a=$VPID
	start_victim -m 8
	local b=$VPID
	run -0 --separate-stderr "$MRELEASE" --kill --json - <<<"$a
	 $b"
	assert_equal "$(json_get '.summary.targets')" 2
	assert_equal "$(json_get '[.targets[].status] | map(select(. == "released" or . == "exited")) | length')" 2
	assert_equal "$(json_get '[.targets[].pid] | sort | map(tostring) | join(" ")')" \
		"$(printf '%s\n' "$a" "$b" | sort -n | xargs)"
}

@test "the same pid named twice is one target" {
	start_victim -m 4
	run -0 --separate-stderr "$MRELEASE" --kill --json "$VPID" "$VPID"
	assert_equal "$(json_get '.summary.targets')" 1
}

@test "JSON has every documented key and nothing on stdout but the document" {
	start_victim -m 8
	run -0 --separate-stderr "$MRELEASE" --kill --json "$VPID"
	jq -e . <<<"$output" >/dev/null
	for k in pid comm status error rss_before_kb rss_after_kb pss_before_kb anon_before_kb \
		swap_before_kb freed_kb release_us cgroup; do
		json_get ".targets[0] | has(\"$k\")" >/dev/null || fail "targets[0] lacks $k"
	done
	for k in targets released exited failed rss_before_kb rss_after_kb freed_kb \
		mem_available_delta_kb elapsed_us; do
		json_get ".summary | has(\"$k\")" >/dev/null || fail "summary lacks $k"
	done
	assert_equal "$(json_get '.targets[0].comm')" mr-victim
	assert_equal "$(json_get '.targets[0].error')" null
	json_get '.targets[0].release_us >= 0 and .summary.elapsed_us >= 0' >/dev/null
	json_get '.summary.freed_kb == .summary.rss_before_kb - .summary.rss_after_kb' >/dev/null
}

@test "--measure=status reads the counters, --measure=none reads nothing" {
	start_victim -m 16
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --measure=status --json "$VPID"
	[ "$(json_get '.targets[0].rss_before_kb')" -gt 15000 ]
	assert_equal "$(json_get '.targets[0].pss_before_kb')" null
	run -0 --separate-stderr "$MRELEASE" --kill --measure=none --json "$VPID"
	assert_regex "$(json_get '.targets[0].status')" '^(released|exited)$'
	assert_equal "$(json_get '.targets[0].rss_before_kb')" null
	assert_equal "$(json_get '.summary.freed_kb')" null
}

@test "--nice, --affinity and --jobs apply to the release" {
	start_victim -m 8
	local a=$VPID
	start_victim -m 8
	freeze_victim "$a" "$VPID"
	run -0 --separate-stderr "$MRELEASE" --kill --nice 5 --affinity 0 --jobs 2 --verbose \
		--json "$a" "$VPID"
	assert_equal "$(json_get '.summary.released')" 2
	assert_rss_under "$a" 1024
	assert_rss_under "$VPID" 1024
	assert_equal "$stderr" "mrelease: releasing on 2 worker threads"
}

@test "a thread id is refused and its process lives" {
	start_victim -m 4 -t
	local tid
	tid=$(cut -d' ' -f2 "$BATS_TEST_TMPDIR"/ready.*)
	[ "$tid" != "$VPID" ]
	run -1 --separate-stderr "$MRELEASE" --kill "$tid"
	assert_equal "$stderr" "mrelease: pid $tid: a thread of process $VPID, not a process"
	lives "$VPID"
}

@test "mrelease refuses its own pid" {
	run -1 --separate-stderr bash -c 'exec "$0" --kill "$$"' "$MRELEASE"
	assert_regex "$stderr" '^mrelease: pid [0-9]+: refusing to kill mrelease itself$'
	run -1 --separate-stderr bash -c 'exec "$0" "$$"' "$MRELEASE"
	assert_regex "$stderr" '^mrelease: pid [0-9]+: refusing to release mrelease itself$'
}

@test "a kernel thread is refused (dry run: nothing could be sent anyway)" {
	local kt
	kt=$(awk '/^Name:/ { print $2 }' /proc/2/status)
	[ "$kt" = kthreadd ] || skip "pid 2 is not kthreadd here"
	run -1 --separate-stderr "$MRELEASE" --dry-run --kill 2
	assert_equal "$stderr" "mrelease: pid 2: a kernel thread; it has no memory of its own to release"
}

# The cases below name pids this file did not create (pid 1, pids that are
# gone and may be reused), so they run in a pid namespace of their own
# (in_pidns, in common.bash).

@test "pid 1 is refused and lives on" {
	run -1 --separate-stderr in_pidns '
		"$1" --kill 1
		rc=$?
		kill -0 1 && echo "pid 1 alive"
		exit $rc'
	assert_equal "$stderr" "mrelease: pid 1: refusing to kill the init process"
	assert_line "pid 1 alive"
}

@test "an already reaped target is an error, exit 1" {
	run -1 --separate-stderr in_pidns '
		"$2" -m 1 -r "$3/r" & p=$!
		wait_until 200 test -s "$3/r" || { echo "the victim did not get ready" >&2; exit 97; }
		kill -9 $p; wait $p 2>/dev/null
		exec "$1" --kill "$p"'
	assert_regex "$stderr" '^mrelease: pid [0-9]+: no such process$'
}

@test "exit 64 when some targets are released and some fail" {
	run -64 --separate-stderr in_pidns '
		"$2" -m 1 -r "$3/r" & p=$!
		wait_until 200 test -s "$3/r" || { echo "the victim did not get ready" >&2; exit 97; }
		exec "$1" --kill "$p" 4000'
	assert_equal "$stderr" "mrelease: pid 4000: no such process"
	assert_line --regexp ' (released|exited)$'
}

@test "--nice that cannot be set is said once and the release goes on (an OOM hook's case)" {
	command -v setpriv >/dev/null || skip "needs setpriv"
	# nobody must be able to write the ready file.
	NOBODY_DIR=$(mktemp -d /tmp/mrelease-nobody.XXXXXX)
	chmod 777 "$NOBODY_DIR"
	local ready=$NOBODY_DIR/ready
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$MR_VICTIM" -m 4 -r "$ready" </dev/null >/dev/null 3>&- &
	VPID=$!
	VICTIMS+=("$VPID")
	wait_until 200 test -s "$ready" || fail "the victim did not get ready"
	run -0 --separate-stderr as_nobody "$MRELEASE" --kill --nice -10 --json "$VPID"
	assert_equal "$stderr" "mrelease: cannot set nice value -10 for the releases: Permission denied; releasing at mrelease's own nice value instead"
	json_ok '.summary.nice_applied == false and .summary.affinity_applied == null'
	json_ok '.targets[0].status == "released" or .targets[0].status == "exited"'
}

@test "--wait: a released victim that cannot exit stays released, and counts as not done" {
	start_victim -m 8
	freeze_victim "$VPID"
	run -1 --separate-stderr "$MRELEASE" --kill --wait=1 --json "$VPID"
	assert_equal "$stderr" "mrelease: pid $VPID: released, but still running after the wait (stuck in the kernel?)"
	assert_equal "$(json_get '.targets[0].status')" released
	assert_equal "$(json_get '.targets[0].exited')" false
	assert_equal "$(json_get '.summary.released')" 1
	# The memory is gone though the process is not.
	assert_rss_under "$VPID" 1024
	run -1 --separate-stderr "$MRELEASE" --wait 0.5 "$VPID"
	assert_line --regexp "^ *$VPID mr-victim .* released, running\$"
}

@test "--wait: a victim that exits is released and exited, exit 0" {
	start_victim -m 8
	run -0 --separate-stderr "$MRELEASE" --kill --wait 10 --json "$VPID"
	assert_equal "$(json_get '.targets[0].exited')" true
	assert_regex "$(json_get '.targets[0].status')" '^(released|exited)$'
	# Without --wait nobody asked: null.
	start_victim -m 1
	run -0 --separate-stderr "$MRELEASE" --kill --json "$VPID"
	assert_equal "$(json_get '.targets[0].exited')" null
}

@test "each releasing thread sets its own nice value and CPUs" {
	command -v strace >/dev/null || skip "needs strace"
	start_victim -m 4
	local a=$VPID
	start_victim -m 4
	local log=$BATS_TEST_TMPDIR/strace
	# LeakSanitizer cannot run under ptrace: off here, on everywhere else.
	ASAN_OPTIONS=detect_leaks=0 run -0 strace -f -o "$log" \
		-e trace=setpriority,sched_setaffinity,process_mrelease \
		"$MRELEASE" --quiet --kill --nice 7 --affinity 0 --jobs 2 "$a" "$VPID"
	# Two worker threads, each with its own tid, other than the main one,
	# which exits last.
	local main
	main=$(tail -n1 "$log" | cut -d' ' -f1)
	# Two threads may interleave a call: count the calls, then check that
	# none failed, finished in one line or resumed.
	run grep -c 'setpriority(PRIO_PROCESS, [0-9]*, 7' "$log"
	assert_output 2
	run grep -c 'sched_setaffinity(0, [0-9]*, \[0\]' "$log"
	assert_output 2
	run grep -E '(setpriority|sched_setaffinity).*= -1' "$log"
	assert_failure
	run grep -E "^$main .*setpriority" "$log"
	assert_failure
}

@test "as an unprivileged user: another user's figures are null with the reason, not zeros" {
	command -v setpriv >/dev/null || skip "needs setpriv"
	start_victim -m 8
	# status is anyone's to read; smaps_rollup is not.
	run -1 --separate-stderr as_nobody "$MRELEASE" --dry-run --kill --measure=smaps --json "$VPID"
	assert_equal "$stderr" "mrelease: pid $VPID: cannot kill it: Operation not permitted"
	assert_equal "$(json_get '.targets[0].rss_before_kb')" null
	assert_equal "$(json_get '.targets[0].measure_error')" \
		"/proc/$VPID/smaps_rollup: Permission denied"
	# The kill is not permitted either: that is what is said, and only that.
	run -1 --separate-stderr as_nobody "$MRELEASE" --kill "$VPID"
	assert_equal "$stderr" "mrelease: pid $VPID: cannot kill it: Operation not permitted"
	run -1 --separate-stderr as_nobody "$MRELEASE" --kill --measure=none "$VPID"
	assert_equal "$stderr" "mrelease: pid $VPID: cannot kill it: Operation not permitted"
	lives "$VPID"
	assert_rss_over "$VPID" 7000
}

@test "without process_mrelease: one warning, and the exit is waited for instead" {
	start_victim -m 8
	run -0 --separate-stderr "$MR_NOSYS" "$MRELEASE" --kill --json "$VPID"
	assert_equal "$stderr" "mrelease: process_mrelease is not available (Linux before 5.15, or a seccomp filter); waited for the targets to exit instead"
	assert_equal "$(json_get '.targets[0].status')" exited
	assert_equal "$(json_get '.targets[0].rss_after_kb')" 0
	# A victim that cannot exit: the fallback wait ends, and says so.
	start_victim -m 8
	freeze_victim "$VPID"
	run -1 --separate-stderr "$MR_NOSYS" "$MRELEASE" --kill --wait=1 "$VPID"
	assert_equal "$stderr" "mrelease: process_mrelease is not available (Linux before 5.15, or a seccomp filter); waited for the targets to exit instead
mrelease: pid $VPID: no process_mrelease here, and it did not exit within the wait"
}

@test "a process sharing its address space with a live one is killed, not released, and why" {
	start_victim -m 8 -s
	local other
	other=$(cut -d' ' -f2 "$BATS_TEST_TMPDIR"/ready.*)
	# Frozen, the killed one cannot exit before mrelease asks.
	freeze_victim "$other"
	run -1 --separate-stderr "$MRELEASE" --kill --json "$other"
	assert_equal "$stderr" "mrelease: pid $other: killed, but not released: its address space is shared with a live process (vfork or CLONE_VM)"
	assert_equal "$(json_get '.targets[0].freed_kb')" null
	# The kill went out; the memory is still there, held by the live one.
	lives "$VPID"
	assert_rss_over "$VPID" 7000
}

@test "a zombie has already given its memory back: exited, nothing sent" {
	start_victim -m 1 -z
	local zombie
	zombie=$(cut -d' ' -f2 "$BATS_TEST_TMPDIR"/ready.*)
	grep -q '^State:.*Z' "/proc/$zombie/status"
	run -0 --separate-stderr "$MRELEASE" --kill --json "$zombie"
	assert_equal "$(json_get '.targets[0].status')" exited
	assert_equal "$stderr" ""
}

@test "PID:INODE acts only on the process with that pidfs inode" {
	start_victim -m 4
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json "$VPID"
	local ino
	ino=$(json_get '.targets[0].pidfd_inode')
	[ "$ino" != null ] || skip "pidfds have no inode of their own before Linux 6.9"
	run -1 --separate-stderr "$MRELEASE" --kill "$VPID:$((ino + 1))"
	assert_equal "$stderr" "mrelease: pid $VPID: not the process with pidfs inode $((ino + 1)); the pid was reused"
	lives "$VPID"
	run -0 --separate-stderr "$MRELEASE" --kill --json "$VPID:$ino"
	assert_regex "$(json_get '.targets[0].status')" '^(released|exited)$'
}

@test "SIGINT during --wait ends the wait and still prints the report" {
	start_victim -m 8
	freeze_victim "$VPID"
	bg "$MRELEASE" --kill --wait=30 --json "$VPID"
	# Released, so in the wait: the signals are held long before.
	wait_until 200 rss_under "$VPID" 1024 || fail "not released"
	kill -INT "$BG_PID"
	bg_done 130
	assert_equal "$stderr" "mrelease: interrupted; reporting what was done"
	assert_equal "$(json_get '.targets[0].status')" released
	assert_rss_under "$VPID" 1024
}

@test "a low soft limit on open files does not fail many targets" {
	start_victims 40 -m 0
	# Every victim is there and alive before the run: one that is not
	# makes the run's answer another than this test's.
	local p
	for p in "${PIDS[@]}"; do
		lives "$p" || fail "victim $p is not alive before the run"
	done
	run --separate-stderr bash -c 'ulimit -Sn 16 && exec "$@"' bash \
		"$MRELEASE" --dry-run --kill --json "${PIDS[@]}"
	# On a failure, what the run said of each target not predicted.
	((status == 0)) || fail "exit $status; stderr: $stderr; not predicted: $(jq -c '.targets[] |
		select(.status != "would kill") | [.pid, .status, .error]' <<<"$output" 2>&1)"
	json_ok '.summary.targets == 40 and .summary.predicted == 40 and .summary.failed == 0'
}

@test "process_mrelease refused by a seccomp filter (EPERM) says so, and how to allow it" {
	start_victim -m 8
	freeze_victim "$VPID"
	run -1 --separate-stderr "$MR_NOSYS" -p "$MRELEASE" --kill --json "$VPID"
	assert_equal "$stderr" "mrelease: pid $VPID: cannot release it: a seccomp filter refused process_mrelease (EPERM, which the call itself never returns): allow it (syscall 448) in the filter, e.g. SystemCallFilter=process_mrelease in a unit, --system-call-filter=process_mrelease for systemd-nspawn, or the container runtime's seccomp profile"
	json_ok '.targets[0].status == "failed" and .targets[0].signal == "KILL"
		and (.targets[0].error | test("^cannot release it: a seccomp filter refused"))'
	# Killed, not released: frozen, it holds its memory.
	assert_rss_over "$VPID" 7000
}

@test "a process whose main thread has exited is measured and released, not 'exited'" {
	start_victim -m 16 -x
	local tid
	tid=$(cut -d' ' -f2 "$BATS_TEST_TMPDIR"/ready.*)
	grep -q '^State:.*Z' "/proc/$VPID/status"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json "$VPID"
	assert_equal "$(json_get '.targets[0].status')" "would kill"
	[ "$(json_get '.targets[0].rss_before_kb')" -gt 15000 ]
	freeze_victim "$VPID"
	run -0 --separate-stderr "$MRELEASE" --kill --json "$VPID"
	assert_equal "$(json_get '.targets[0].status')" released
	assert_rss_under "$VPID/task/$tid" 1024
}

@test "a process hidden by hidepid is not 'exited': its figures are null, with the reason" {
	command -v setpriv >/dev/null || skip "needs setpriv"
	run --separate-stderr in_pidns '
		mount -o remount,hidepid=invisible /proc || exit 77
		"$2" -m 1 -r "$3/h" </dev/null >/dev/null & p=$!
		wait_until 200 test -s "$3/h" || { echo "the victim did not get ready" >&2; exit 97; }
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$1" --dry-run --kill --json "$p"'
	[ "$status" -ne 77 ] || skip "cannot mount /proc with hidepid here"
	assert_equal "$status" 1
	assert_equal "$(json_get '.targets[0].status')" failed
	assert_regex "$stderr" "^mrelease: pid [0-9]+: cannot kill it: Operation not permitted$"
	assert_equal "$(json_get '.targets[0].measure_error')" "/proc/$(json_get '.targets[0].pid')/stat: No such file or directory (hidden by hidepid?)"
}
