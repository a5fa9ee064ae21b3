#!/usr/bin/env bats
# batches.bats: no limit of the caller changes what a run does. When the
# targets' pidfds do not all fit under the limit on open files, each phase
# (the first signal, the grace, the kills, the releases, the waits) goes
# over every target once, in batches of as many as fit; every target is
# killed and released, a dry run and the exit status are those of a run
# with room for all, one grace and one wait are paid per run, and every
# kill comes before any wait. Each run here inherits only descriptors 0 to
# 2 and lacks CAP_SYS_RESOURCE, so that the room is the same on every
# machine: 8 descriptors are kept aside (5, and 3 inherited), and each
# worker thread takes 3 of what leaves at least half the rest (or one for
# each target) to the pidfds. With --jobs 2, a limit of 24 leaves room for
# 10 pidfds at once, 20 for 6, and 18 for 7 (one thread).

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
}

# limited N COMMAND...: run COMMAND with a limit of N open files it cannot
# raise, and only 0, 1 and 2 open.
limited() {
	local n=$1
	shift
	std_fds_only without_cap sys_resource prlimit --nofile="$n:$n" "$@"
}

# all_released: every victim in PIDS was released (held by the freezer, it
# is still there, with almost nothing resident).
all_released() {
	local p
	for p in "${PIDS[@]}"; do
		kill -0 "$p" || fail "pid $p is gone: a frozen victim should still be there"
		assert_rss_under "$p" 1024
	done
}

@test "40 named victims under a limit of 24 open files: all killed and released, in batches, exit 0" {
	start_victims 40 -m 1
	freeze_victim "${PIDS[@]}"
	run -0 --separate-stderr limited 24 "$MRELEASE" --kill --jobs 2 --verbose --json "${PIDS[@]}"
	json_ok '.summary.targets == 40 and .summary.released == 40 and .summary.failed == 0'
	json_ok '.summary.batches == 4 and ([.targets[].signal] | unique) == ["KILL"]'
	assert_regex "$stderr" "mrelease: 4 batches: at most 10 pidfds fit at once under the limit on open files \\(ulimit -n\\); each phase went over every target"
	all_released
}

@test "the same, the pids read from standard input" {
	start_victims 40 -m 1
	freeze_victim "${PIDS[@]}"
	run -0 --separate-stderr limited 24 "$MRELEASE" --kill --jobs 2 --json - \
		< <(printf '%s\n' "${PIDS[@]}")
	json_ok '.summary.targets == 40 and .summary.released == 40 and .summary.batches == 4'
	all_released
}

@test "--jobs 40 under a hard limit of 64: fewer threads, never fewer kills; -v says so" {
	start_victims 40 -m 1
	freeze_victim "${PIDS[@]}"
	run -0 --separate-stderr limited 64 "$MRELEASE" --kill --jobs 40 --verbose --json "${PIDS[@]}"
	json_ok '.summary.targets == 40 and .summary.released == 40 and .summary.failed == 0'
	assert_regex "$stderr" "mrelease: starting 9 of 40 worker threads: the limit on open files \\(ulimit -n\\) leaves room for no more beside the pidfds"
	assert_regex "$stderr" "mrelease: releasing on 9 worker threads"
	all_released
	# With room for no thread at all, the main thread kills and releases.
	start_victims 4 -m 1
	freeze_victim "${PIDS[@]}"
	run -0 --separate-stderr limited 12 "$MRELEASE" --kill --jobs 2 --verbose --json "${PIDS[@]}"
	json_ok '.summary.released == 4 and .summary.failed == 0'
	assert_regex "$stderr" "starting 0 of 2 worker threads"
	all_released
}

@test "a dry run under the limit predicts what the run does with room for all: exit 0" {
	start_victims 40 -m 1
	run -0 --separate-stderr limited 24 "$MRELEASE" --dry-run --kill --jobs 2 --json "${PIDS[@]}"
	json_ok '.summary.targets == 40 and .summary.predicted == 40 and .summary.batches == 4'
	json_ok '[.targets[].status] | unique == ["would kill"]'
	local dry=$output
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --jobs 2 --json "${PIDS[@]}"
	json_ok '.summary.batches == 1'
	assert_equal "$(jq -c '[.targets[] | [.pid, .status]]' <<<"$dry")" \
		"$(jq -c '[.targets[] | [.pid, .status]]' <<<"$output")"
	local p
	for p in "${PIDS[@]}"; do
		lives "$p"
	done
}

@test "--grace over batches: the dry run says the plan, and the run keeps it: every target asked first, one grace for all" {
	# -e: each exits by itself 0.2 s after TERM.
	start_victims 40 -m 1 -e
	run -0 --separate-stderr limited 20 "$MRELEASE" --dry-run --kill --grace 5 --jobs 2 "${PIDS[@]}"
	assert_output --partial "Dry run, nothing sent: the run would send TERM, give the targets up to 5 s to exit, then send KILL to the rest and release them"
	run -0 --separate-stderr limited 20 "$MRELEASE" --kill --grace 5 --jobs 2 --json "${PIDS[@]}"
	json_ok '.summary.targets == 40 and .summary.exited == 40 and .summary.batches == 7'
	json_ok '[.targets[] | [.signal, .status]] | unique == [["TERM", "exited"]]'
	# Ignoring TERM, 40 are killed after one grace of 1 s, not one a batch
	# (7 s).
	start_victims 40 -m 1 -T
	run -0 --separate-stderr limited 20 "$MRELEASE" --kill --grace 1 --jobs 2 --json "${PIDS[@]}"
	json_ok '.summary.targets == 40 and .summary.failed == 0 and .summary.batches == 7'
	json_ok '[.targets[].signal] | unique == ["KILL"]'
	json_ok '.summary.elapsed_us >= 1000000 and .summary.elapsed_us < 3500000'
	wait_gone "${PIDS[@]}"
}

# grace_members: 12 members of cgroup $1 that exit 0.2 s after TERM, under
# a limit that holds 7 pidfds at once: every one is asked first, and exits
# by itself within the grace; the kill that follows finds none left.
grace_members() {
	local cg=$1 kill=$2
	start_victims 12 -m 1 -e
	join "$cg" "${PIDS[@]}"
	run -0 --separate-stderr limited 18 "$MRELEASE" --kill --grace 5 --jobs 2 --json --cgroup "$cg"
	json_ok ".cgroups[0].kill == \"$kill\" and .cgroups[0].members == 12"
	json_ok '.summary.exited == 12 and .summary.failed == 0 and .summary.batches >= 2'
	json_ok '[.targets[] | [.signal, .status]] | unique == [["TERM", "exited"]]'
	assert_equal "$stderr" ""
	wait_until 100 test ! -s "$cg/cgroup.procs"
}

@test "v2: --grace with a cgroup over batches: every member is asked first" {
	need_v2
	make_cgroup "$V2"
	grace_members "$CG" cgroup.kill
}

@test "v1: --grace with a cgroup over batches: every member is asked first" {
	v1_cgroup memory
	grace_members "$CG" "until empty"
}

@test "v2: a cgroup of 40 under the limit: one write to cgroup.kill, every member released" {
	need_v2
	make_cgroup "$V2"
	local cg=$CG
	start_victims 40 -m 1
	join "$cg" "${PIDS[@]}"
	freeze_victim "${PIDS[@]}"
	# Every write to a cgroup.kill is noted (held 0 ms).
	shim_env "write:*/cgroup.kill:0:0"
	run -0 --separate-stderr limited 24 "${SHIM_ENV[@]}" "$MRELEASE" --kill --jobs 2 --json \
		--cgroup "$cg"
	assert_equal "$(wc -l <"$SHIM_FIRED")" 1
	json_ok '.cgroups[0].kill == "cgroup.kill" and .cgroups[0].members == 40'
	json_ok '.summary.released == 40 and .summary.failed == 0 and .summary.batches >= 4'
	all_released
}

@test "v1: a cgroup of 40 under the limit is killed until empty, every member released" {
	v1_cgroup memory
	local cg=$CG
	start_victims 40 -m 1
	join "$cg" "${PIDS[@]}"
	# Frozen, the killed members stay listed until they are thawed: a
	# listing after a batch finds them again, and must not take them for
	# newcomers (killed twice, reported twice).
	freeze_victim "${PIDS[@]}"
	run -0 --separate-stderr limited 24 "$MRELEASE" --kill --jobs 2 --verbose --json --cgroup "$cg"
	json_ok '.cgroups[0].kill == "until empty" and .cgroups[0].remaining == null'
	json_ok '.summary.targets == 40 and .summary.released == 40 and .summary.batches >= 4'
	json_ok '[.targets[].pid] | length == (unique | length)'
	assert_regex "$stderr" "cgroup $cg: killed until empty, in [0-9]+ listings"
	all_released
}

@test "every kill of every batch comes before any wait: --wait 2 over 3 batches" {
	start_victims 20 -m 1
	freeze_victim "${PIDS[@]}"
	# Frozen after their release, they are still there when the wait ends.
	run -1 --separate-stderr limited 18 "$MRELEASE" --kill --wait 2 --jobs 2 --json "${PIDS[@]}"
	json_ok '.summary.released == 20 and .summary.batches == 3'
	# The last kill came before the first wait, not a wait of 2 s later.
	json_ok '.summary.kill_us < 1000000'
	json_ok '.summary.elapsed_us < 5000000'
	all_released
}

@test "without process_mrelease, the wait for the exits is one for the run, after every kill" {
	start_victims 20 -m 1
	freeze_victim "${PIDS[@]}"
	run -1 --separate-stderr limited 18 "$MR_NOSYS" "$MRELEASE" --kill --wait 1 --jobs 2 \
		--json "${PIDS[@]}"
	json_ok '.summary.failed == 20 and .summary.batches == 3 and ([.targets[].signal] | unique) == ["KILL"]'
	json_ok '.summary.kill_us < 900000 and .summary.elapsed_us < 3000000'
	assert_regex "$stderr" "pid [0-9]+: no process_mrelease here, and it did not exit within the wait"
	local p
	for p in "${PIDS[@]}"; do
		sigkill_pending "$p" || fail "pid $p was not killed"
	done
}

@test "--wait over batches: targets released, then gone within the wait, are released and exited, whatever the limit" {
	start_victims 20 -m 1
	freeze_victim "${PIDS[@]}"
	# Thawed after their release, they finish their exit within the wait.
	(sleep 1; echo THAWED >"$FREEZER/freezer.state") &
	run -0 --separate-stderr limited 18 "$MRELEASE" --kill --wait 5 --jobs 2 --json "${PIDS[@]}"
	json_ok '.summary.batches == 3 and .summary.released == 20'
	json_ok '[.targets[] | [.status, .exited]] | unique == [["released", true]]'
}
