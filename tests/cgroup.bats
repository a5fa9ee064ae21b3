#!/usr/bin/env bats
# cgroup.bats: --cgroup on cgroup v2 and on the v1 memory hierarchy, as root.
# Every cgroup made here is removed in teardown, also when a test fails.

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
	V2=$(cgroup2_mount)
}

@test "v2: a nested cgroup with a forking victim is emptied, a sentinel outside lives" {
	need_v2
	local cg sub sentinel
	make_cgroup "$V2"
	cg=$CG
	make_cgroup "$cg"
	sub=$CG
	start_victim -m 16
	sentinel=$VPID
	start_victim -m 16
	join "$cg" "$VPID"
	start_victim -m 16
	join "$sub" "$VPID"
	start_victim -m 8 -k
	join "$sub" "$VPID"
	run -0 --separate-stderr "$MRELEASE" --kill --json --cgroup "$cg"
	json_get '.summary.failed == 0' >/dev/null
	json_get '.summary.targets >= 3' >/dev/null
	json_get '[.targets[].status] | all(. == "released" or . == "exited")' >/dev/null
	json_get "[.targets[] | select(.rss_after_kb != 0)] | length == 0" >/dev/null || fail "$(jq -c ".targets[] | select(.rss_after_kb != 0)" <<<"$output")"
	assert_equal "$(json_get '.cgroups[0].path')" "$cg"
	assert_equal "$(json_get '.cgroups[0].kill')" cgroup.kill
	json_get '.cgroups[0].members == .summary.targets' >/dev/null
	# Gone for good: nothing left in either cgroup shortly after.
	for ((i = 0; i < 100; i++)); do
		[ -s "$cg/cgroup.procs" ] || [ -s "$sub/cgroup.procs" ] || break
		sleep 0.05
	done
	assert_equal "$(cat "$cg/cgroup.procs" "$sub/cgroup.procs")" ""
	kill -0 "$sentinel"
	[ "$(rss_kb "$sentinel")" -gt 15000 ]
	# Never frozen: a frozen cgroup would keep new members from running.
	assert_equal "$(cat "$cg/cgroup.freeze")" 0
	grep -qx 'frozen 0' "$cg/cgroup.events"
}

@test "v2: a relative path is taken under the cgroup2 mount" {
	need_v2
	local cg
	make_cgroup "$V2"
	cg=$CG
	start_victim -m 8
	join "$cg" "$VPID"
	run -0 --separate-stderr "$MRELEASE" --dry-run --json --cgroup "${cg#"$V2"/}"
	assert_equal "$(json_get '.cgroups[0].path')" "$cg"
	assert_equal "$(json_get '.targets[0].pid')" "$VPID"
	assert_equal "$(json_get '.targets[0].status')" skipped
	assert_equal "$(json_get '.targets[0].cgroup')" "$cg"
	kill -0 "$VPID"
}

@test "v2: --no-recursive leaves the child cgroup alone" {
	need_v2
	local cg sub top child
	make_cgroup "$V2"
	cg=$CG
	make_cgroup "$cg"
	sub=$CG
	start_victim -m 8
	top=$VPID
	join "$cg" "$top"
	start_victim -m 8
	child=$VPID
	join "$sub" "$child"
	run -0 --separate-stderr "$MRELEASE" --kill --no-recursive --json --cgroup "$cg"
	assert_equal "$(json_get '.summary.targets')" 1
	assert_equal "$(json_get '.targets[0].pid')" "$top"
	sleep 0.2
	kill -0 "$child"
	[ "$(rss_kb "$child")" -gt 7000 ]
}

@test "v2: an empty cgroup is reported, and exits 1: no process selected" {
	need_v2
	local cg
	make_cgroup "$V2"
	cg=$CG
	run -1 --separate-stderr "$MRELEASE" --kill --json --cgroup "$cg"
	assert_equal "$stderr" "mrelease: no process selected"
	assert_equal "$(json_get '.summary.targets')" 0
	assert_equal "$(json_get '.cgroups[0].members')" 0
	run -1 --separate-stderr "$MRELEASE" --kill --cgroup "$cg"
	assert_line --regexp "^$cg +0 +0 +0 "
}

# Victims that cannot exit (held by the v1 freezer) in a v1 memory cgroup:
# only process_mrelease can give their memory back, so the cgroup's own
# counter must drop. Run with --jobs 1 and --jobs 2.
v1_release() {
	local mem cg i pids=()
	mem=$(cgroup_v1_mount memory)
	[ -n "$mem" ] || skip "needs the cgroup v1 memory controller"
	make_cgroup "$mem"
	cg=$CG
	start_victims 4 -m 12
	pids=("${PIDS[@]}")
	join "$cg" "${pids[@]}"
	freeze_victim "${pids[@]}"
	run -0 --separate-stderr "$MRELEASE" --kill --jobs "$1" --json --cgroup "$cg"
	assert_equal "$(json_get '.summary.released')" 4
	assert_equal "$(json_get '.cgroups[0].members')" 4
	assert_equal "$(json_get '.cgroups[0].released')" 4
	json_get '.cgroups[0].memory_before_kb != null and .cgroups[0].memory_after_kb != null' \
		>/dev/null
	for p in "${pids[@]}"; do
		[ "$(rss_kb "$p")" -lt 1024 ] || fail "pid $p still has $(rss_kb "$p") KiB"
	done
}

@test "v1 memory cgroup: frozen victims released with --jobs 1" {
	v1_release 1
}

@test "v1 memory cgroup: frozen victims released with --jobs 2" {
	v1_release 2
}

@test "v1: the cgroup's memory counter drops when its members are released" {
	local mem cg pids=()
	mem=$(cgroup_v1_mount memory)
	[ -n "$mem" ] || skip "needs the cgroup v1 memory controller"
	make_cgroup "$mem"
	cg=$CG
	# Join first, then touch, so the pages are charged to this cgroup.
	local ready=$BATS_TEST_TMPDIR/charged
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -m 24 -r "$3"' bash "$cg" "$MR_VICTIM" \
		"$ready" </dev/null >/dev/null 3>&- &
	VPID=$!
	VICTIMS+=("$VPID")
	for ((i = 0; i < 200; i++)); do [ -s "$ready" ] && break; sleep 0.05; done
	freeze_victim "$VPID"
	run -0 --separate-stderr "$MRELEASE" --kill --json --cgroup "$cg"
	[ "$(json_get '.cgroups[0].memory_before_kb')" -gt 20000 ]
	[ "$(json_get '.cgroups[0].memory_after_kb')" -lt 4096 ]
}

@test "bad cgroup paths: exit 2, a clear message, nothing killed" {
	need_v2
	start_victim -m 1
	local link=$BATS_TEST_TMPDIR/cglink
	ln -s /etc "$link"
	# A path outside the cgroup mounts names a cgroup from the v2 root, as
	# /proc/PID/cgroup and systemd do: it is looked for there.
	local cases=(
		"/nonexistent-mrelease|cgroup '/nonexistent-mrelease': no such cgroup: $V2/nonexistent-mrelease"
		"/etc|cgroup '/etc': no such cgroup: $V2/etc"
		"../etc|cgroup '../etc': '..' is not accepted"
		"a/../b|cgroup 'a/../b': '..' is not accepted"
		"$V2/cgroup.procs|cgroup '$V2/cgroup.procs': $V2/cgroup.procs: Not a directory"
		"$link|cgroup '$link': no such cgroup: $V2$link"
	)
	local c
	for c in "${cases[@]}"; do
		run -2 --separate-stderr "$MRELEASE" --kill --cgroup "${c%%|*}" "$VPID"
		assert_equal "$stderr" "mrelease: ${c#*|}"
		assert_output ""
	done
	kill -0 "$VPID"
}

@test "v2: run from a shell inside the cgroup: it and mrelease are left out, not failed" {
	need_v2
	cgroup_with_victim "$V2" -m 8
	kill_from_inside "$CG" "$CG"
	assert_equal "$(json_get '.summary.targets')" 1
	assert_equal "$(json_get '.targets[0].pid')" "$VPID"
	assert_regex "$(json_get '.targets[0].status')" '^(released|exited)$'
	assert_equal "$(cat "$CG/cgroup.freeze")" 0
}

@test "v2: a child cgroup named .hidden is listed too: a shell inside it is left out" {
	need_v2
	cgroup_with_victim "$V2" -m 4
	mkdir "$CG/.hidden"
	TEST_CGROUPS+=("$CG/.hidden")
	kill_from_inside "$CG" "$CG/.hidden"
	assert_regex "$(json_get '.targets[0].status')" '^(released|exited)$'
}

@test "v2: a cgroup frozen before the run is killed and left frozen" {
	need_v2
	local cg
	make_cgroup "$V2"
	cg=$CG
	start_victim -m 8
	join "$cg" "$VPID"
	echo 1 >"$cg/cgroup.freeze"
	run -0 --separate-stderr "$MRELEASE" --kill --json --cgroup "$cg"
	# Fatal signals pass a v2 freeze: it may finish its own exit first.
	assert_regex "$(json_get '.targets[0].status')" '^(released|exited)$'
	assert_equal "$(cat "$cg/cgroup.freeze")" 1
}

@test "v2: a low hard limit on descriptors: every member still killed and released" {
	need_v2
	local cg i
	make_cgroup "$V2"
	cg=$CG
	for i in 1 2 3 4 5 6 7 8; do
		start_victim -m 1
		join "$cg" "$VPID"
	done
	run -0 --separate-stderr prlimit --nofile=12:12 "$MRELEASE" --kill --json --cgroup "$cg"
	assert_equal "$(json_get '.summary.targets')" 8
	assert_equal "$(json_get '.summary.failed')" 0
	assert_equal "$(cat "$cg/cgroup.freeze")" 0
	wait_until 100 test ! -s "$cg/cgroup.procs"
}

@test "v2: members outside our pid namespace are not an error" {
	need_v2
	local cg
	make_cgroup "$V2"
	cg=$CG
	start_victim -m 1
	join "$cg" "$VPID"
	run -1 --separate-stderr unshare --pid --fork --mount-proc \
		"$MRELEASE" --dry-run --json --cgroup "$cg"
	assert_equal "$stderr" "mrelease: no process selected"
	assert_equal "$(json_get '.summary.targets')" 0
	assert_equal "$(json_get '.cgroups[0].path')" "$cg"
}

@test "JSON keeps a UTF-8 cgroup name as it is" {
	need_v2
	local cg=$V2/mrelease-test-café-$$
	mkdir "$cg"
	TEST_CGROUPS+=("$cg")
	run -1 --separate-stderr "$MRELEASE" --dry-run --json --cgroup "$cg"
	assert_equal "$(json_get '.cgroups[0].path')" "$cg"
}

@test "a control character in a cgroup name never reaches the terminal raw" {
	need_v2
	local cg
	make_cgroup "$V2"
	cg=$CG/csi$'\xc2\x9b'2J-$'\x1b'
	mkdir "$cg"
	TEST_CGROUPS+=("$cg")
	run -1 --separate-stderr "$MRELEASE" --dry-run --cgroup "$cg"
	assert_line --regexp "^$CG/csi\\?\\?2J-\\? +0 "
	[[ $output != *$'\x9b'* && $output != *$'\x1b'* ]] || fail "raw control bytes in the table"
}

@test "the CGROUP column stays aligned with a long cgroup path" {
	need_v2
	local cg long
	make_cgroup "$V2"
	cg=$CG
	long=$cg/a-cgroup-name-much-longer-than-thirty-characters-for-the-column
	mkdir "$long"
	TEST_CGROUPS+=("$long")
	run -1 --separate-stderr "$MRELEASE" --dry-run --cgroup "$cg" --cgroup "$long"
	# Every line of the cgroup table has MEMBERS ending in the same column.
	local header col
	header=$(printf '%s\n' "${lines[@]}" | grep '^CGROUP ')
	col=$(awk '{ print index($0, "MEMBERS") + 6 }' <<<"$header")
	while read -r line; do
		[ "${line:col-1:1}" = 0 ] || fail "misaligned: '$line' (column $col)"
	done < <(printf '%s\n' "${lines[@]}" | grep "^$cg")
}
