#!/usr/bin/env bats
# cgroup.bats: --cgroup on cgroup v2 and on the v1 memory hierarchy, as root.
# Every cgroup made here is removed in teardown, also when a test fails.

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
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
	# Nothing left after. A short-lived child of the forking victim may end
	# by itself between a listing and the kill: exited, and never read.
	local wrong='.targets[] | select(.rss_after_kb != 0 and (.status == "released" or .rss_after_kb != null))'
	json_get "[$wrong] | length == 0" >/dev/null || fail "$(jq -c "$wrong" <<<"$output")"
	assert_equal "$(json_get '.cgroups[0].path')" "$cg"
	assert_equal "$(json_get '.cgroups[0].kill')" cgroup.kill
	json_get '.cgroups[0].members == .summary.targets' >/dev/null
	# Gone for good: nothing left in either cgroup shortly after.
	wait_until 100 test ! -s "$cg/cgroup.procs" -a ! -s "$sub/cgroup.procs" ||
		fail "still in the cgroups: $(cat "$cg/cgroup.procs" "$sub/cgroup.procs" | xargs)"
	lives "$sentinel"
	assert_rss_over "$sentinel" 15000
	# Never frozen: a frozen cgroup would keep new members from running.
	assert_equal "$(cat "$cg/cgroup.freeze")" 0
	grep -qx 'frozen 0' "$cg/cgroup.events"
}

@test "v2: a bare relative path is taken under the cgroup2 mount" {
	need_v2
	local cg
	make_cgroup "$V2"
	cg=$CG
	start_victim -m 8
	join "$cg" "$VPID"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json --cgroup "${cg#"$V2"/}"
	json_ok ".cgroups[0].path == \"$cg\" and .targets[0].pid == $VPID"
	json_ok ".targets[0].status == \"would kill\" and .targets[0].cgroup == \"$cg\""
	lives "$VPID"
}

@test "./x and ../x are from the working directory; a bare name both there and under the mount is ambiguous" {
	need_v2
	local top a b
	make_cgroup "$V2"
	top=$CG
	mkdir "$top/a" "$top/a/b" "$top/b"
	TEST_CGROUPS+=("$top/a" "$top/a/b" "$top/b")
	start_victim -m 1
	join "$top/a/b" "$VPID"
	cd "$top/a"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json --cgroup ./b
	json_ok ".cgroups[0].path == \"$top/a/b\""
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json --cgroup ../a/b
	json_ok ".cgroups[0].path == \"$top/a/b\""
	# A bare name that exists below the working directory and under the
	# mount, as two cgroups, is refused, naming both.
	make_cgroup "$V2"
	local name=${CG##*/}
	mkdir "$top/$name"
	TEST_CGROUPS+=("$top/$name")
	cd "$top"
	run -2 --separate-stderr "$MRELEASE" --dry-run --kill --cgroup "$name"
	assert_equal "$stderr" "mrelease: cgroup '$name' is ambiguous: $top/$name below the working directory, or $V2/$name under the cgroup2 mount; write ./$name or /$name"
	# One reading only: taken.
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json --cgroup "a"
	json_ok ".cgroups[0].path == \"$top/a\""
	cd /
}

@test "a line pasted from /proc/PID/cgroup names its cgroup, v2 or v1" {
	need_v2
	local line
	start_victim -m 1
	make_cgroup "$V2"
	join "$CG" "$VPID"
	line=$(grep '^0::' "/proc/$VPID/cgroup")
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json --cgroup "$line"
	json_ok ".cgroups[0].path == \"$CG\" and .targets[0].pid == $VPID"
	v1_cgroup memory
	join "$CG" "$VPID"
	line=$(grep ':memory:' "/proc/$VPID/cgroup")
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json --cgroup "$line"
	json_ok ".cgroups[0].path == \"$CG\" and .cgroups[0].kill == \"until empty\""
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
	lives "$child" || fail "pid $child, in the child cgroup, was killed"
	assert_rss_over "$child" 7000
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
	# The table is not printed: only the message, as pkill does.
	run -1 --separate-stderr "$MRELEASE" --kill --cgroup "$cg"
	assert_output ""
	assert_equal "$stderr" "mrelease: no process selected"
}

# Victims that cannot exit (held by the v1 freezer) in a v1 memory cgroup:
# only process_mrelease can give their memory back, so the cgroup's own
# counter must drop. Run with --jobs 1 and --jobs 2.
v1_release() {
	local cg i pids=()
	v1_cgroup memory
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
		assert_rss_under "$p" 1024
	done
}

@test "v1 memory cgroup: frozen victims released with --jobs 1" {
	v1_release 1
}

@test "v1 memory cgroup: frozen victims released with --jobs 2" {
	v1_release 2
}

@test "v1: the cgroup's memory counter drops when its members are released" {
	local cg pids=()
	v1_cgroup memory
	cg=$CG
	# Join first, then touch, so the pages are charged to this cgroup.
	local ready=$BATS_TEST_TMPDIR/charged
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -m 24 -r "$3"' bash "$cg" "$MR_VICTIM" \
		"$ready" </dev/null >/dev/null 3>&- &
	VPID=$!
	VICTIMS+=("$VPID")
	wait_until 200 test -s "$ready" || fail "the victim did not get ready"
	freeze_victim "$VPID"
	run -0 --separate-stderr "$MRELEASE" --kill --json --cgroup "$cg"
	[ "$(json_get '.cgroups[0].memory_before_kb')" -gt 20000 ]
	[ "$(json_get '.cgroups[0].memory_after_kb')" -lt 4096 ]
}

@test "v2: a bind mount of a subtree is that cgroup, by its real path; its top is not the root" {
	need_v2
	local mnt=$BATS_TEST_TMPDIR/bound
	make_cgroup "$V2"
	start_victim -m 4
	join "$CG" "$VPID"
	mkdir "$mnt"
	mount --bind "$CG" "$mnt"
	at_teardown umount "$mnt"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json --cgroup "$mnt"
	json_ok ".cgroups[0].path == \"$CG\" and [.targets[].pid] == [$VPID]"
	run -0 --separate-stderr "$MRELEASE" --kill --json --cgroup "$mnt/"
	json_ok ".cgroups[0].path == \"$CG\" and .cgroups[0].kill == \"cgroup.kill\" and .targets[0].pid == $VPID"
	json_ok '.targets[0].status == "released" or .targets[0].status == "exited"'
}

@test "a cgroup's memory counter is its own hierarchy's: on a hybrid host, not the v1 memory cgroup of the same path" {
	need_v2
	local v1
	v1=$(cgroup_v1_mount memory)
	[ -n "$v1" ] || skip "needs the cgroup v1 memory controller"
	[ ! -e "$V2/cgroup.controllers" ] || ! grep -qw memory "$V2/cgroup.controllers" ||
		skip "the memory controller is on cgroup v2 here"
	make_cgroup "$V2"
	local cg=$CG
	# A v1 memory cgroup of the same path, which holds none of them.
	mkdir "$v1/${cg#"$V2"/}"
	TEST_CGROUPS+=("$v1/${cg#"$V2"/}")
	start_victims 2 -m 8
	join "$cg" "${PIDS[@]}"
	freeze_victim "${PIDS[@]}"
	run -0 --separate-stderr "$MRELEASE" --kill --json --cgroup "$cg"
	json_ok ".cgroups[0].path == \"$cg\" and .cgroups[0].memory_before_kb == null"
	json_ok '.summary.freed_basis == "rss_sum"'
	json_ok '.summary.freed_kb > 12000'
}

@test "bad cgroup paths: exit 2, a clear message, nothing killed" {
	need_v2
	start_victim -m 1
	local link=$BATS_TEST_TMPDIR/cglink
	ln -s /etc "$link"
	# An absolute path outside the cgroup mounts names a cgroup from the v2
	# root, as /proc/PID/cgroup and systemd do, unless it exists.
	local cases=(
		"/nonexistent-mrelease|cgroup '/nonexistent-mrelease': no such cgroup: $V2/nonexistent-mrelease"
		"/etc|cgroup '/etc': /etc is not in a cgroup file system"
		"..|cgroup '..': $(realpath ..) is not in a cgroup file system"
		"./nonexistent|cgroup './nonexistent': no such cgroup: $PWD/./nonexistent"
		"a/../b|cgroup 'a/../b': no such cgroup: $V2/a/../b"
		"$V2/cgroup.procs|cgroup '$V2/cgroup.procs': $V2/cgroup.procs is not a cgroup directory"
		"$link|cgroup '$link': $link is not in a cgroup file system"
	)
	local c
	for c in "${cases[@]}"; do
		run -2 --separate-stderr "$MRELEASE" --kill --cgroup "${c%%|*}" "$VPID"
		assert_equal "$stderr" "mrelease: ${c#*|}"
		assert_output ""
	done
	lives "$VPID"
}

@test "v2: a shell in a child cgroup named .hidden is found too: the cgroup is refused" {
	need_v2
	cgroup_with_victim "$V2" -m 4
	mkdir "$CG/.hidden"
	TEST_CGROUPS+=("$CG/.hidden")
	run -0 --separate-stderr timeout 30 bash -c 'echo $$ >"$2/cgroup.procs" &&
		"$0" --kill --cgroup "$1"; echo "rc=$? alive" >&2' "$MRELEASE" "$CG" "$CG/.hidden"
	assert_regex "$stderr" "rc=2 alive"
	assert_regex "$stderr" "cgroup $CG holds pid [0-9]+ \\(bash\\), an ancestor of mrelease: refusing to kill it"
	lives "$VPID"
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

@test "v2: a low hard limit on descriptors: one cgroup.kill, every member released in batches; no room at all says so" {
	need_v2
	local cg
	make_cgroup "$V2"
	cg=$CG
	start_victims 8 -m 1
	join "$cg" "${PIDS[@]}"
	freeze_victim "${PIDS[@]}"
	# Room for a few pidfds at once: the members are released in batches;
	# the descriptors the kill itself needs are kept aside. Without
	# CAP_SYS_RESOURCE, mrelease cannot raise the hard limit. With only
	# 0, 1 and 2 inherited, 18 leaves 10 free: one thread (3), and room
	# for 7 pidfds.
	run -0 --separate-stderr std_fds_only without_cap sys_resource \
		prlimit --nofile=18:18 "$MRELEASE" --jobs 2 --kill --verbose --json --cgroup "$cg"
	json_ok '.cgroups[0].kill == "cgroup.kill" and .summary.targets == 8 and .summary.released == 8'
	json_ok '.summary.batches == 2'
	assert_regex "$stderr" "2 batches: at most 7 pidfds fit at once under the limit on open files"
	local p
	for p in "${PIDS[@]}"; do
		assert_rss_under "$p" 1024
	done
	clean_cgroups
	make_cgroup "$V2"
	cg=$CG
	# With no room for any pidfd, the cgroup is still killed; its members
	# cannot be opened, and the limit to raise is said.
	start_victims 4 -m 1
	join "$cg" "${PIDS[@]}"
	run -1 --separate-stderr std_fds_only without_cap sys_resource \
		prlimit --nofile=8:8 "$MRELEASE" --jobs 2 --kill --json --cgroup "$cg"
	json_ok '.cgroups[0].kill == "cgroup.kill" and .summary.failed == 4'
	json_ok '[.targets[].error] | unique == ["cannot open a pidfd: Too many open files"]'
	assert_regex "$stderr" "no room for a pidfd: [0-9]+ descriptors are in use or kept aside, and the limit on open files is 8; raise it"
	wait_until 100 test ! -s "$cg/cgroup.procs"
	# With CAP_SYS_RESOURCE (where the tests have it), the hard limit is
	# raised: one batch, where 16 alone would leave room for 5.
	has_cap 24 ||
		skip "checked all but the raised hard limit, which needs CAP_SYS_RESOURCE; these tests do not have it"
	start_victims 8 -m 1
	join "$cg" "${PIDS[@]}"
	run -0 --separate-stderr std_fds_only \
		prlimit --nofile=16:16 "$MRELEASE" --jobs 2 --kill --json --cgroup "$cg"
	json_ok '.summary.targets == 8 and .summary.failed == 0 and .summary.batches == 1'
	wait_until 100 test ! -s "$cg/cgroup.procs"
}

@test "v2: members outside our pid namespace: no error without --kill (with it, refused: safety.bats)" {
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
	start_victim -m 1
	join "$cg" "$VPID"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --verbose --cgroup "$cg"
	assert_line --regexp "^$CG/csi\\\\xc2\\\\x9b2J-\\\\x1b +1 "
	[[ $output$stderr != *$'\x9b'* && $output$stderr != *$'\x1b'* ]] || fail "raw control bytes"
	# In usage errors too.
	run -2 --separate-stderr "$MRELEASE" --kill --cgroup "$cg/nope"
	assert_equal "$stderr" "mrelease: cgroup '$CG/csi\\xc2\\x9b2J-\\x1b/nope': no such cgroup: $CG/csi\\xc2\\x9b2J-\\x1b/nope"
	# JSON: C1 as \u009b, an invalid byte as \udcXX, never as the character.
	mkdir "$CG/bad"$'\xff'
	TEST_CGROUPS+=("$CG/bad"$'\xff')
	start_victim -m 1
	join "$CG/bad"$'\xff' "$VPID"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json --cgroup "$cg" --cgroup "$CG/bad"$'\xff'
	[[ $output == *'csi\u009b2J-\u001b'* ]] || fail "$output"
	[[ $output == *'bad\udcff'* ]] || fail "$output"
}

@test "the CGROUP column stays aligned with a long cgroup path" {
	need_v2
	local cg long
	make_cgroup "$V2"
	cg=$CG
	long=$cg/a-cgroup-name-much-longer-than-thirty-characters-for-the-column
	mkdir "$long"
	TEST_CGROUPS+=("$long")
	start_victim -m 1
	join "$long" "$VPID"
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --cgroup "$cg" --cgroup "$long"
	# Every line of the cgroup table has MEMBERS ending in the same column.
	local header col
	header=$(printf '%s\n' "${lines[@]}" | grep '^CGROUP ')
	col=$(awk '{ print index($0, "MEMBERS") + 6 }' <<<"$header")
	while read -r line; do
		[[ ${line:col-1:1} == [0-9] ]] || fail "misaligned: '$line' (column $col)"
	done < <(printf '%s\n' "${lines[@]}" | grep "^$cg")
}
