#!/usr/bin/env bats
# operator.bats: what an admin reaches for: --grace and --signal, --dying,
# --unit, a dry run that predicts, best-effort --nice, honest totals, and a
# quiet report when there is nothing. Every process signalled here is a
# victim this file started.

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
	V2=$(cgroup2_mount)
}

# --- --grace and --signal ------------------------------------------------------

@test "--grace: a victim whose SIGTERM is fatal is released at once, not after the grace" {
	start_victim -m 16
	# The grace is 30 s; the run must end long before (timeout says so).
	run -0 --separate-stderr timeout 20 "$MRELEASE" --kill --grace 30 --json "$VPID"
	json_ok '.targets[0].status == "released" or .targets[0].status == "exited"'
	json_ok '.targets[0].signal == "TERM" and .summary.kill_us == null'
}

@test "--grace: a victim that ignores SIGTERM is killed after the grace, then released; --verbose says so" {
	start_victim -m 16 -T
	run -0 --separate-stderr "$MRELEASE" --kill --grace 1 --verbose --json "$VPID"
	json_ok '.targets[0].status == "released" or .targets[0].status == "exited"'
	json_ok '.targets[0].signal == "KILL" and .summary.kill_us >= 1000000'
	assert_regex "$stderr" "pid $VPID \\(mr-victim\\) ignored TERM for 1.0 s; sending KILL"
	wait_until 100 bash -c "! kill -0 $VPID 2>/dev/null"
}

@test "--grace: a victim that stops by itself within the grace is 'exited', and no KILL is sent" {
	start_victim -m 16 -e
	run -0 --separate-stderr timeout 20 "$MRELEASE" --kill --grace 30 --json "$VPID"
	json_ok '.targets[0].status == "exited" and .targets[0].signal == "TERM"'
	json_ok '.summary.kill_us == null and .summary.exited_kb > 15000 and .summary.released_kb == 0'
}

@test "--grace: a frozen victim does not begin its exit on SIGTERM; SIGKILL and release follow" {
	start_victim -m 16
	freeze_victim "$VPID"
	run -0 --separate-stderr "$MRELEASE" --kill --grace 0.5 --json "$VPID"
	json_ok '.targets[0].status == "released" and .summary.kill_us >= 500000'
	[ "$(rss_kb "$VPID")" -lt 1024 ]
}

@test "--signal QUIT: the first signal is QUIT, and a fatal one is released at once" {
	start_victim -m 8
	run -0 --separate-stderr timeout 20 "$MRELEASE" --kill --grace 30 --signal QUIT --json "$VPID"
	json_ok '.targets[0].signal == "QUIT" and .summary.kill_us == null'
	json_ok '.targets[0].status == "released" or .targets[0].status == "exited"'
	start_victim -m 8 -T
	run -0 --separate-stderr "$MRELEASE" --kill --grace 0.3 -s 10 --verbose --json "$VPID"
	# SIGUSR1's default action kills too.
	json_ok '.targets[0].signal == "USR1"'
}

@test "the table shows the last signal sent to each target" {
	start_victim -m 4 -T
	local a=$VPID
	start_victim -m 4 -e
	run -0 --separate-stderr "$MRELEASE" --kill --grace 1 "$a" "$VPID"
	assert_line --regexp "^ *$a mr-victim .* KILL +(released|exited)\$"
	assert_line --regexp "^ *$VPID mr-victim .* TERM +exited\$"
	assert_line --regexp '^ *PID COMM .* SIGNAL STATUS$'
}

@test "--grace with a cgroup: the first signal to each member, then one cgroup.kill" {
	need_v2
	local a b
	start_victim -m 8
	a=$VPID
	start_victim -m 8 -T
	b=$VPID
	make_cgroup "$V2"
	join "$CG" "$a" "$b"
	run -0 --separate-stderr "$MRELEASE" --kill --grace 1 --verbose --json --cgroup "$CG"
	assert_regex "$stderr" "cgroup $CG: killed with cgroup.kill"
	json_ok '.cgroups[0].kill == "cgroup.kill" and .summary.targets == 2 and .summary.failed == 0'
	json_ok "(.targets[] | select(.pid == $b) | .signal) == \"KILL\""
	wait_until 100 test ! -s "$CG/cgroup.procs"
}

# --- --dying ----------------------------------------------------------------------

@test "--dying releases what was already killed, leaves the living alone, and sends nothing" {
	freezer_cgroup
	run -0 --separate-stderr dying_in_pidns '
		echo "$D" >"$3/pid"
		"$1" --dying --verbose --json'
	json_ok "[.targets[].pid] == [$(cat "$BATS_TEST_TMPDIR/pid")] and .targets[0].status == \"released\" and .targets[0].signal == null"
	assert_regex "$stderr" "[0-9]+ not dying; left alone"
	local d l
	read -r d l <"$BATS_TEST_TMPDIR/rss"
	[ "$d" -lt 1024 ] || fail "the dying victim still holds $d KiB"
	[ "$l" -gt 3000 ] || fail "the living victim holds $l KiB"
}

@test "--dying with nothing dying: 'no dying process', exit 1; --cgroup narrows it" {
	need_v2
	start_victim -m 4
	make_cgroup "$V2"
	join "$CG" "$VPID"
	run -1 --separate-stderr "$MRELEASE" --dying --cgroup "$CG"
	assert_equal "$stderr" "mrelease: no dying process"
	assert_output ""
	kill -0 "$VPID"
	freeze_victim "$VPID"
	kill -9 "$VPID"
	run -0 --separate-stderr "$MRELEASE" --dying --json --cgroup "$CG"
	json_ok "[.targets[].pid] == [$VPID] and .targets[0].status == \"released\""
}

# --- --unit --------------------------------------------------------------------------

@test "--unit finds a unit's cgroup under the cgroup2 mount by its name" {
	need_v2
	local unit parent
	unit=mrelease-test-$$-$RANDOM.service
	make_cgroup "$V2"
	parent=$CG
	mkdir "$parent/$unit"
	TEST_CGROUPS+=("$parent/$unit")
	start_victim -m 4
	join "$parent/$unit" "$VPID"
	run -0 --separate-stderr "$MRELEASE" --kill --json --unit "$unit"
	json_ok ".cgroups[0].path == \"$parent/$unit\" and .targets[0].pid == $VPID"
	# Two cgroups of that name: refused, naming both.
	mkdir "$parent/other.slice" "$parent/other.slice/$unit"
	TEST_CGROUPS+=("$parent/other.slice" "$parent/other.slice/$unit")
	run -2 --separate-stderr "$MRELEASE" --kill --unit "$unit"
	assert_equal "$stderr" "mrelease: unit '$unit': 2 cgroups have that name: $parent/$unit, $parent/other.slice/$unit; name one with --cgroup"
}

# --- a dry run predicts -------------------------------------------------------------

@test "a dry run says what the real run would do, and exits as it would" {
	start_victim -m 4
	local live=$VPID
	run -1 --separate-stderr "$MRELEASE" --dry-run --json "$live"
	assert_equal "$stderr" "mrelease: pid $live: not exiting; use --kill"
	json_ok '.targets[0].status == "failed" and .targets[0].error == "not exiting; use --kill"'
	run -1 --separate-stderr "$MRELEASE" "$live"
	assert_equal "$stderr" "mrelease: pid $live: not exiting; use --kill"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json "$live"
	json_ok '.targets[0].status == "would kill"'
	start_victim -m 4
	freeze_victim "$VPID"
	kill -9 "$VPID"
	run -0 --separate-stderr "$MRELEASE" --dry-run "$VPID"
	assert_line --regexp "^ *$VPID mr-victim .* would release\$"
	kill -0 "$live"
	[ "$(rss_kb "$VPID")" -gt 3000 ]
}

@test "a dry run names each cgroup's kill, and predicts a refusal" {
	need_v2
	local v1
	v1=$(cgroup_v1_mount memory)
	[ -n "$v1" ] || skip "needs the cgroup v1 memory controller"
	start_victims 2 -m 1
	make_cgroup "$V2"
	local a=$CG
	make_cgroup "$v1"
	join "$a" "${PIDS[0]}"
	join "$CG" "${PIDS[1]}"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json --cgroup "$a" --cgroup "$CG"
	json_ok '[.cgroups[].kill] == ["cgroup.kill", "until empty"]'
	run -2 --separate-stderr bash -c 'echo $$ >"$2/cgroup.procs"; "$0" --dry-run --kill --cgroup "$2" "$1"; exit $?' \
		"$MRELEASE" "${PIDS[0]}" "$a"
	assert_regex "$stderr" "holds pid [0-9]+ \\(bash\\), an ancestor of mrelease: refusing to kill it"
	kill -0 "${PIDS[0]}"
	kill -0 "${PIDS[1]}"
}

# --- honest totals and quiet reports -------------------------------------------

@test "totals do not count shared pages twice: the sum of RSS is labelled, PSS and cgroups are not sums" {
	need_v2
	# A parent and four children that share its 16 MiB, copy-on-write.
	start_victim -m 16 -C 4
	local parent=$VPID kids
	kids=$(pgrep -P "$parent" | tr '\n' ' ')
	make_cgroup "$V2"
	# shellcheck disable=SC2086
	join "$CG" "$parent" $kids
	freeze_victim "$parent" $kids
	# shellcheck disable=SC2086
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --measure=smaps --json "$parent" $kids
	# Five times 16 MiB of RSS; PSS counts each shared page once: less
	# than half of it (about a fifth, less each process's own pages).
	json_ok '[.targets[].rss_before_kb] | add > 80000'
	json_ok '([.targets[].pss_before_kb] | add) < ([.targets[].rss_before_kb] | add) / 2'
	# shellcheck disable=SC2086
	run -0 --separate-stderr "$MRELEASE" --kill --measure=smaps --json "$parent" $kids
	json_ok '.summary.freed_basis == "pss" and .summary.freed_kb < .summary.rss_before_kb / 2'
	# The table says what its total is.
	start_victim -m 8 -C 2
	parent=$VPID
	kids=$(pgrep -P "$parent" | tr '\n' ' ')
	# shellcheck disable=SC2086
	freeze_victim "$parent" $kids
	# shellcheck disable=SC2086
	run -0 --separate-stderr "$MRELEASE" --kill "$parent" $kids
	assert_line --regexp '^ *sum 3 targets .* released [0-9.]+M, exited 0$'
	assert_line --regexp '^Freed: [0-9.]+M as a sum of RSS \(a page shared between targets counted once for each\)$'
}

@test "a cgroup's total comes from its own memory counter" {
	local v1
	v1=$(cgroup_v1_mount memory)
	[ -n "$v1" ] || skip "needs the cgroup v1 memory controller"
	make_cgroup "$v1"
	local mem=$CG
	# Born in the cgroup, so that its pages are charged to it.
	bash -c 'echo $$ >"$1/cgroup.procs"; exec "$2" -m 16 -C 2 -r "$3/r"' bash "$mem" "$MR_VICTIM" \
		"$BATS_TEST_TMPDIR" </dev/null >/dev/null 3>&- &
	VICTIMS+=("$!")
	wait_until 200 test -s "$BATS_TEST_TMPDIR/r"
	# --wait: the counter is read once the released parent has exited too;
	# without it, the read can come while that exit still gives back pages
	# (3 runs in 80 here).
	run -0 --separate-stderr "$MRELEASE" --kill --wait 5 --json --cgroup "$mem"
	json_ok '.summary.freed_basis == "cgroup" and .summary.freed_kb == .cgroups[0].freed_kb'
	# Three processes share 16 MiB: the counter has it once.
	json_ok '.cgroups[0].freed_kb > 12000 and .cgroups[0].freed_kb < .summary.rss_before_kb / 2'
}

@test "nothing selected: only the message; a failed run: no sum status, no MemAvailable line" {
	need_v2
	make_cgroup "$V2"
	run -1 --separate-stderr "$MRELEASE" --kill --cgroup "$CG"
	assert_equal "$stderr" "mrelease: no process selected"
	assert_output ""
	start_victims 2 -m 1
	run -1 --separate-stderr "$MRELEASE" "${PIDS[@]}"
	assert_line --regexp '^ *sum 2 targets +[0-9.]+M +- +- +[0-9.]+[mu]?s *$'
	refute_line --regexp '^MemAvailable'
	refute_line --regexp '^Freed'
	assert_line --regexp "^ *${PIDS[0]} mr-victim .* failed\$"
}
