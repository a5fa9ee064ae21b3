#!/usr/bin/env bats
# waves.bats: no kill is lost to the limit on open files. When the targets'
# pidfds do not all fit, a run goes in waves (open what fits, kill, release,
# close, and the next); every target is killed and released, and a dry run
# and the exit status are those of a run with room for all. Each run here
# inherits only descriptors 0 to 2 and lacks CAP_SYS_RESOURCE, so that the
# room is the same on every machine: with --jobs 2, 10 descriptors are kept
# aside and the pool's eventfd is one more, so a limit of 24 leaves room for
# 10 pidfds at once.

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

@test "40 named victims under a limit of 24 open files: all killed and released, in waves, exit 0" {
	start_victims 40 -m 1
	freeze_victim "${PIDS[@]}"
	run -0 --separate-stderr limited 24 "$MRELEASE" --kill --jobs 2 --verbose --json "${PIDS[@]}"
	json_ok '.summary.targets == 40 and .summary.released == 40 and .summary.failed == 0'
	json_ok '.summary.waves >= 4 and ([.targets[].signal] | unique) == ["KILL"]'
	assert_regex "$stderr" "mrelease: [0-9]+ waves: at most 10 pidfds fit at once under the limit on open files \\(ulimit -n\\)"
	all_released
}

@test "the same, the pids read from standard input" {
	start_victims 40 -m 1
	freeze_victim "${PIDS[@]}"
	run -0 --separate-stderr limited 24 "$MRELEASE" --kill --jobs 2 --json - \
		< <(printf '%s\n' "${PIDS[@]}")
	json_ok '.summary.targets == 40 and .summary.released == 40 and .summary.waves >= 4'
	all_released
}

@test "a dry run under the limit predicts what the run does with room for all: exit 0" {
	start_victims 40 -m 1
	run -0 --separate-stderr limited 24 "$MRELEASE" --dry-run --kill --jobs 2 --json "${PIDS[@]}"
	json_ok '.summary.targets == 40 and .summary.predicted == 40 and .summary.waves >= 4'
	json_ok '[.targets[].status] | unique == ["would kill"]'
	local dry=$output
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --jobs 2 --json "${PIDS[@]}"
	json_ok '.summary.waves == 1'
	assert_equal "$(jq -c '[.targets[] | [.pid, .status]]' <<<"$dry")" \
		"$(jq -c '[.targets[] | [.pid, .status]]' <<<"$output")"
	local p
	for p in "${PIDS[@]}"; do
		lives "$p"
	done
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
	json_ok '.summary.released == 40 and .summary.failed == 0 and .summary.waves >= 4'
	all_released
}

@test "v1: a cgroup of 40 under the limit is killed until empty, every member released" {
	v1_cgroup memory
	local cg=$CG
	start_victims 40 -m 1
	join "$cg" "${PIDS[@]}"
	# Frozen, the killed members stay listed until they are thawed: a
	# listing after a wave finds them again, and must not take them for
	# newcomers (killed twice, reported twice).
	freeze_victim "${PIDS[@]}"
	run -0 --separate-stderr limited 24 "$MRELEASE" --kill --jobs 2 --verbose --json --cgroup "$cg"
	json_ok '.cgroups[0].kill == "until empty" and .cgroups[0].remaining == null'
	json_ok '.summary.targets == 40 and .summary.released == 40 and .summary.waves >= 4'
	json_ok '[.targets[].pid] | length == (unique | length)'
	assert_regex "$stderr" "cgroup $cg: killed until empty, in [0-9]+ listings"
	all_released
}

@test "--grace with a cgroup under the limit: the members that did not fit are killed without it, and it is said" {
	need_v2
	make_cgroup "$V2"
	local cg=$CG
	start_victims 12 -m 1 -T
	join "$cg" "${PIDS[@]}"
	run -0 --separate-stderr limited 18 "$MRELEASE" --kill --grace 0.2 --jobs 2 --json --cgroup "$cg"
	assert_regex "$stderr" "cgroup $cg: 12 members got no TERM first: they did not fit in a wave before the cgroup's kill \\(ulimit -n\\); killed with the rest"
	json_ok '.cgroups[0].kill == "cgroup.kill" and .summary.failed == 0'
	wait_until 100 test ! -s "$cg/cgroup.procs"
}
