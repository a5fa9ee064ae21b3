#!/usr/bin/env bats
# operator.bats: what an admin reaches for: --grace and --signal, --dying,
# --unit, a dry run that predicts, best-effort --nice, honest totals, and a
# quiet report when there is nothing. Every process signalled here is a
# victim this file started.

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
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
	wait_gone "$VPID"
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
	assert_rss_under "$VPID" 1024
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
	# What --verbose counts adds up to what JSON says was left out.
	local undying others
	undying=$(sed -n 's/^mrelease: \([0-9]*\) not dying; left alone$/\1/p' <<<"$stderr")
	others=$(sed -n 's/^mrelease: \([0-9]*\) others\{0,1\} left out: .*/\1/p' <<<"$stderr")
	json_ok ".summary.left_out == $undying + $others"
	dying_rss
	((DYING_KB < 1024)) || fail "the dying victim still holds $DYING_KB KiB"
	((LIVING_KB > 3000)) || fail "the living victim holds $LIVING_KB KiB"
}

@test "--dying with nothing dying: 'no dying process', exit 1; --cgroup narrows it" {
	need_v2
	start_victim -m 4
	make_cgroup "$V2"
	join "$CG" "$VPID"
	run -1 --separate-stderr "$MRELEASE" --dying --cgroup "$CG"
	assert_equal "$stderr" "mrelease: no dying process"
	assert_output ""
	lives "$VPID"
	freeze_victim "$VPID"
	kill -9 "$VPID"
	run -0 --separate-stderr "$MRELEASE" --dying --json --cgroup "$CG"
	json_ok "[.targets[].pid] == [$VPID] and .targets[0].status == \"released\""
}

# --- --unit --------------------------------------------------------------------------

@test "--unit finds the system manager's unit: in the root or a slice, not below a service or a scope" {
	need_v2
	local unit slice
	unit=mrelease-test-$$-$RANDOM.service
	slice=$V2/mrelease-test-$$-$RANDOM.slice
	mkdir "$slice" "$slice/$unit"
	TEST_CGROUPS+=("$slice" "$slice/$unit")
	start_victim -m 4
	join "$slice/$unit" "$VPID"
	# Without a suffix, .service, as systemctl takes it; -v says which cgroup.
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --verbose --json --unit "${unit%.service}"
	json_ok ".cgroups[0].path == \"$slice/$unit\" and .targets[0].pid == $VPID"
	assert_regex "$stderr" "(^|"$'\n'")mrelease: unit $unit: cgroup $slice/$unit("$'\n'"|\$)"
	run -0 --separate-stderr "$MRELEASE" --kill --json --unit "$unit"
	json_ok ".cgroups[0].path == \"$slice/$unit\" and .targets[0].pid == $VPID"
	# The same name below a scope (a container's, a user manager's units) is
	# another manager's: not looked into, with or without the unit here.
	mkdir "$slice/box.scope" "$slice/box.scope/$unit"
	TEST_CGROUPS+=("$slice/box.scope" "$slice/box.scope/$unit")
	run -1 --separate-stderr "$MRELEASE" --kill --json --unit "$unit"
	json_ok ".cgroups[0].path == \"$slice/$unit\""
	rmdir "$slice/$unit"
	run -2 --separate-stderr "$MRELEASE" --kill --unit "$unit"
	assert_equal "$stderr" "mrelease: unit '$unit': no cgroup of that name in the root or the slices under $V2: is it running? (a user's or a container's unit: name its cgroup with --cgroup)"
	# Two in slices: refused, naming both.
	mkdir "$slice/$unit" "$slice/sub.slice" "$slice/sub.slice/$unit"
	TEST_CGROUPS+=("$slice/sub.slice" "$slice/sub.slice/$unit")
	run -2 --separate-stderr "$MRELEASE" --kill --unit "$unit"
	assert_equal "$stderr" "mrelease: unit '$unit': 2 cgroups have that name: $slice/$unit, $slice/sub.slice/$unit; name one with --cgroup"
	# A unit type without a cgroup of its own.
	run -2 --separate-stderr "$MRELEASE" --kill --unit "${unit%.service}.timer"
	assert_equal "${stderr%%$'\n'*}" "mrelease: unit '${unit%.service}.timer': a timer unit has no cgroup of its own; name the unit it starts, such as ${unit%.service}.service"
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
	lives "$live"
	assert_rss_over "$VPID" 3000
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
	lives "${PIDS[0]}"
	lives "${PIDS[1]}"
}

@test "a dry run predicts a core dump under way as the real run decides: not released" {
	ulimit -c 0
	# The second thread dumps core; the dump waits for the main thread,
	# which the freezer holds, with a SIGKILL pending for it.
	start_victim -m 8 -d
	freezer_cgroup
	echo "$VPID" >"$FREEZER/tasks"
	echo FROZEN >"$FREEZER/freezer.state"
	wait_until 100 grep -qx FROZEN "$FREEZER/freezer.state"
	kill -USR2 "$VPID"
	wait_until 100 grep -Eq '^CoreDumping:[[:space:]]+1' "/proc/$VPID/status" ||
		fail "the victim did not begin its core dump"
	sigkill_pending "$VPID" || fail "no SIGKILL pending for the frozen main thread"
	local want="mrelease: pid $VPID: dumping core: the kernel releases none of its memory until the dump ends"
	for kill in "" --kill; do
		run -1 --separate-stderr "$MRELEASE" --dry-run $kill --json "$VPID"
		assert_equal "$stderr" "$want"
		json_ok '.targets[0].status == "failed" and .summary.dry_run == true'
	done
	run -1 --separate-stderr "$MRELEASE" --json "$VPID"
	assert_equal "$stderr" "$want"
	run -1 --separate-stderr "$MRELEASE" --kill --json "$VPID"
	assert_equal "$stderr" "$want"
	json_ok '.targets[0].signal == "KILL" and .summary.dry_run == false'
	assert_rss_over "$VPID" 6000
}

@test "a dry run predicts a shared address space as the real run decides" {
	# The victim shares its address space with a process it made (CLONE_VM).
	start_victim -m 8 -s
	local sharer=$VOTHER
	[ -n "$sharer" ]
	local want="mrelease: pid $VPID: killed, but not released: its address space is shared with a live process (vfork or CLONE_VM)"
	run -1 --separate-stderr "$MRELEASE" --dry-run --kill "$VPID"
	assert_equal "$stderr" "$want"
	# Killed together, both would be released.
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json "$VPID" "$sharer"
	json_ok '[.targets[].status] == ["would kill", "would kill"]'
	# Without --kill: dying, but the sharer lives, so it is not releasable.
	freeze_victim "$VPID"
	kill -9 "$VPID"
	run -1 --separate-stderr "$MRELEASE" --dry-run "$VPID"
	assert_equal "$stderr" "mrelease: pid $VPID: not exiting; use --kill"
	run -1 --separate-stderr "$MRELEASE" "$VPID"
	assert_equal "$stderr" "mrelease: pid $VPID: not exiting; use --kill"
	lives "$sharer"
}

@test "a dry run states its plan and marks its JSON; a cgroup.kill it may not write fails as it would" {
	need_v2
	make_cgroup "$V2"
	start_victim -m 4
	join "$CG" "$VPID"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --grace 2.5 --signal QUIT --cgroup "$CG"
	assert_line "Dry run, nothing sent: the run would send QUIT, give the targets up to 2.5 s to exit, then send KILL to the rest and release them"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --grace 2.5 --signal QUIT --json --cgroup "$CG"
	json_ok '.summary.dry_run == true and .summary.first_signal == "QUIT" and .summary.grace_ms == 2500'
	run -0 --separate-stderr "$MRELEASE" --kill --json --cgroup "$CG" --dry-run
	json_ok '.summary.first_signal == null and .summary.grace_ms == null and .cgroups[0].kill == "cgroup.kill"'
	# As nobody, the write to cgroup.kill is not permitted: the dry run
	# says what the real run then does, and exits as it does.
	chmod 755 "$CG"
	run -1 --separate-stderr as_nobody "$MRELEASE" --dry-run --kill --json --cgroup "$CG"
	json_ok '.targets[0].status == "failed" and .targets[0].error == "cannot kill it: Permission denied" and .cgroups[0].kill == null'
	local dry=$output
	run -1 --separate-stderr as_nobody "$MRELEASE" --kill --json --cgroup "$CG"
	json_ok '.targets[0].status == "failed" and .targets[0].error == "cannot kill it: Permission denied" and .cgroups[0].kill == null'
	lives "$VPID"
	assert_equal "$(jq -c '[.targets[].error, .cgroups[].kill_error]' <<<"$dry")" \
		"$(jq -c '[.targets[].error, .cgroups[].kill_error]' <<<"$output")"
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

@test "a cgroup's memory counter never hides what the rows released: members that brought their charges elsewhere" {
	v1_cgroup memory
	local cg=$CG
	# Touched before they join: their pages stay charged where they were.
	start_victims 2 -m 16
	join "$cg" "${PIDS[@]}"
	freeze_victim "${PIDS[@]}"
	run -0 --separate-stderr "$MRELEASE" --kill --cgroup "$cg"
	# Sizes as the victim's build makes them (larger under ASan).
	assert_line --regexp '^Freed: [1-9][0-9.]*M as a sum of RSS '
	assert_line --regexp "^The cgroups' memory counters fell by only [0-9.]+[KM]?: a page stays charged to the cgroup it was first touched in"
	assert_rss_under "${PIDS[0]}" 1024
	assert_rss_under "${PIDS[1]}" 1024
}

@test "a cgroup's total comes from its own memory counter" {
	v1_cgroup memory
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
