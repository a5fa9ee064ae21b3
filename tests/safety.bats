#!/usr/bin/env bats
# safety.bats: the contracts of "What mrelease never touches" in mrelease(1),
# one test per case, each naming the contract it checks. Every process
# killed here is one this file started; runs that could reach further are
# dry runs, refused, or run in a pid namespace of their own. Races are made
# to happen by holding one call (tests/shim.c, or strace's delay_enter); a
# test whose hold did not fire fails.

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
}

# kill_all_in DIR: kill every process in DIR, a cgroup this test made and
# filled with its own processes only, until it is empty.
kill_all_in() {
	local i pids
	for ((i = 0; i < 100; i++)); do
		pids=$(cat "$1/cgroup.procs" 2>/dev/null)
		[ -n "$pids" ] || return 0
		# shellcheck disable=SC2086
		kill -9 $pids 2>/dev/null
		sleep 0.05
	done
}

# at_least N DIR: cgroup DIR holds N processes or more.
at_least() {
	[ "$(wc -l <"$2/cgroup.procs")" -ge "$1" ]
}

# empty_cgroup DIR: no process left in DIR (killed ones take a moment).
empty_cgroup() {
	wait_until 100 bash -c "[ -z \"\$(cat '$1/cgroup.procs')\" ]" ||
		fail "$1 still holds: $(tr '\n' ' ' <"$1/cgroup.procs")"
}

need_v1_memory() {
	V1=$(cgroup_v1_mount memory)
	[ -n "$V1" ] || skip "needs the cgroup v1 memory controller"
}

# --- /proc of another pid namespace ------------------------------------------

# grandparent_in_pidns [--mount-proc] ARGS...: in a pid namespace that
# keeps the host's /proc (unshare without --mount-proc, unless given), a
# shell GP runs sh, which runs mrelease ARGS... with "GP" replaced by GP's
# pid; GP then says it lived on. The namespace and all in it are this
# test's.
grandparent_in_pidns() {
	local own=()
	[ "$1" != --mount-proc ] || { own=(--mount-proc); shift; }
	unshare --pid --fork "${own[@]}" bash -c '
		m=$1
		shift
		bash -c '\''
			m=$1
			shift
			[ -z "$CG" ] || echo $$ >"$CG/cgroup.procs"
			sh -c "\"\$@\"; echo rc=\$?" sh "$m" "${@/#GP/$$}"
			echo gp-lived
		'\'' bash "$m" "$@"
	' bash "$MRELEASE" "$@"
}

@test "never: a /proc of another pid namespace; refused before anything, the grandparent lives" {
	run -0 --separate-stderr grandparent_in_pidns --kill GP
	assert_line rc=2
	assert_line gp-lived
	assert_regex "$stderr" "^mrelease: /proc belongs to another pid namespace \(/proc/self names pid [0-9]+; mrelease is pid [0-9]+\): .*--mount-proc"
	# The dry run is refused the same way: it would read another's /proc.
	run -0 --separate-stderr grandparent_in_pidns --dry-run --kill GP
	assert_line rc=2
	assert_line gp-lived
	# With a /proc of its own, the grandparent is refused by name.
	run -0 --separate-stderr grandparent_in_pidns --mount-proc --kill GP
	assert_line rc=1
	assert_line gp-lived
	assert_regex "$stderr" "refusing to kill bash, an ancestor of mrelease"
}

@test "never: a /proc of another pid namespace; a cgroup that holds the grandparent is not killed" {
	need_v2
	make_cgroup "$V2"
	start_victim -m 1
	join "$CG" "$VPID"
	CG=$CG run -0 --separate-stderr grandparent_in_pidns --kill --cgroup "$CG"
	assert_line rc=2
	assert_line gp-lived
	assert_regex "$stderr" "belongs to another pid namespace"
	lives "$VPID"
}

# --- the roots of the hierarchies -------------------------------------------

@test "never: the root of a hierarchy, however it is spelled, even for a dry run" {
	need_v2
	start_victim -m 1
	local roots=("" "/" "//" "$V2" "$V2/" "$V2/." "$V2//" "0::/") mnt r
	while read -r mnt; do
		roots+=("$mnt" "$mnt/")
	done < <(cgroup_mounts cgroup)
	for r in "${roots[@]}"; do
		run -2 --separate-stderr "$MRELEASE" --dry-run --kill --cgroup "$r" "$VPID"
		assert_output ""
		[[ $stderr == "mrelease: cgroup '$r' is /"*", the root of the cgroup"*" hierarchy: it holds every process of the system; refusing it (to release every dying process, use --dying alone)" ]] ||
			fail "'$r': $stderr"
	done
	lives "$VPID"
}

# --- contract 1: v2, one write to cgroup.kill --------------------------------

@test "contract 1: one write to cgroup.kill; never cgroup.freeze; nothing listed after the write" {
	need_v2
	need_strace
	start_victims 2 -m 4
	make_cgroup "$V2"
	join "$CG" "${PIDS[@]}"
	# (LeakSanitizer cannot run under ptrace.)
	ASAN_OPTIONS=detect_leaks=0 run -0 --separate-stderr strace -f -o "$BATS_TEST_TMPDIR/log" \
		-e trace=openat,write "$MRELEASE" --kill --json --cgroup "$CG"
	local log=$BATS_TEST_TMPDIR/log
	assert_equal "$(grep -c 'openat(.*cgroup.kill' "$log")" 1
	assert_equal "$(grep -c 'write([0-9]*, "1", 1)' "$log")" 1
	run ! grep -q 'cgroup.freeze' "$log"
	# After the write, no cgroup.procs is opened again.
	run ! bash -c "sed -n '/cgroup.kill/,\$p' '$log' | grep -q cgroup.procs"
	empty_cgroup "$CG"
}

@test "contract 1: a process moved in after the write lives, and is not reported" {
	need_v2
	start_victim -m 4
	local a=$VPID
	freeze_victim "$a"
	make_cgroup "$V2"
	join "$CG" "$a"
	start_victim -m 1
	local b=$VPID
	# Hold the release (it comes after the write) while b moves in.
	shim_env "process_mrelease:*:1500:1"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --json --cgroup "$CG"
	shim_wait
	join "$CG" "$b"
	bg_done 0
	shim_fired
	lives "$b"
	json_ok "[.targets[].pid] == [$a] and .targets[0].status == \"released\""
	json_ok '.cgroups[0].kill == "cgroup.kill"'
}

@test "contract 1: under --grace, what moves in or is forked during the grace dies at the write" {
	need_v2
	start_victim -m 2 -T -u
	local a=$VPID c
	make_cgroup "$V2"
	join "$CG" "$a"
	start_victim -m 2
	local b=$VPID
	# The grace begins with the TERM, which the member ignores, and a
	# release tried at once, which the shim notes. It then lasts until the
	# member exits (or 60 s): the test ends it, by killing the member, only
	# once an old process has moved in and the member has forked, so both
	# happen within it, however slow the machine.
	shim_env "process_mrelease:*:1:1"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --grace 60 --json --cgroup "$CG"
	shim_wait
	join "$CG" "$b"
	kill -USR1 "$a"
	wait_until 40 at_least 3 "$CG" || fail "no fork in the grace"
	c=$(grep -vx -e "$a" -e "$b" "$CG/cgroup.procs")
	[[ $c =~ ^[0-9]+$ ]] || fail "not one child forked: '$c'"
	# Still in the grace: the run goes on, and the write, which would have
	# killed the member, has not come.
	{ kill -0 "$BG_PID" && lives "$a"; } || fail "the grace ended before the join and the fork"
	kill -9 "$a"
	bg_done 0
	empty_cgroup "$CG"
	gone "$b" || fail "pid $b lives"
	gone "$c" || fail "pid $c, forked in the grace, lives"
	json_ok '.cgroups[0].kill == "cgroup.kill" and .summary.failed == 0'
	json_ok "(.targets[] | select(.pid == $a) | [.status, .signal]) == [\"exited\", \"TERM\"]"
	json_ok "any(.targets[]; .pid == $b) and any(.targets[]; .pid == $c)"
}

@test "contract 1: a newcomer listed by two named cgroups is one target" {
	need_v2
	start_victim -m 2
	local old=$VPID
	start_victim -m 2
	local new=$VPID
	freeze_victim "$old" "$new"
	make_cgroup "$V2"
	mkdir "$CG/sub"
	join "$CG/sub" "$old"
	# Listings: the selection's three (the cgroup, its child; the child),
	# then the cgroup's before its write: the first of that is held while
	# the newcomer moves in. Killed but frozen, it is still listed by the
	# child's listing before the child's write.
	shim_env "openat:cgroup.procs:1000:4"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --json --cgroup "$CG" --cgroup "$CG/sub"
	shim_wait
	join "$CG/sub" "$new"
	bg_done 0
	shim_fired
	json_ok "[.targets[].pid] == ([$old, $new] | sort)"
	json_ok '[.targets[].status] == ["released", "released"]'
	assert_rss_under "$new" 1024
}

@test "contract 6: a member that left before the write is left out: not killed, not failed" {
	need_v2
	start_victims 2 -m 2
	local a=${PIDS[0]} b=${PIDS[1]}
	freeze_victim "$a"
	make_cgroup "$V2"
	local parent=$CG
	make_cgroup "$parent"
	join "$CG" "$a" "$b"
	# Hold the listing just before the write (the second) while b leaves.
	shim_env "openat:cgroup.procs:1000:2"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --json --verbose --cgroup "$CG"
	shim_wait
	join "$parent" "$b"
	bg_done
	shim_fired
	assert_equal "$BG_STATUS" 0
	lives "$b"
	json_ok "[.targets[].pid] == [$a] and .summary.left_out == 1 and .summary.failed == 0"
	assert_regex "$stderr" "pid $b \\(mr-victim\\): left out: left its cgroup before the kill"
}

@test "contract 1: a member whose /proc/PID/cgroup cannot be read is killed all the same" {
	need_v2
	start_victim -m 2
	freeze_victim "$VPID"
	make_cgroup "$V2"
	join "$CG" "$VPID"
	shim_env "openat:/proc/*/cgroup:-12:0"
	run -0 --separate-stderr "${SHIM_ENV[@]}" "$MRELEASE" --kill --json --cgroup "$CG"
	json_ok '.cgroups[0].kill == "cgroup.kill" and .targets[0].status == "released"'
	assert_rss_under "$VPID" 1024
}

# make_deep PARENT: a cgroup under PARENT, 33 names of 250 characters
# deep, made (and removed) from inside it, as no path that long can be
# opened whole; its top in DEEP. The kernel cuts each line of
# /proc/PID/cgroup at PATH_MAX, so a process this deep in two hierarchies
# has a file of over 8 KiB.
DEEP_NAME=$(printf 'd%.0s' {1..250})
make_deep() {
	make_cgroup "$1"
	DEEP=$CG
	at_teardown rm_deep "$DEEP"
	(cd "$DEEP" && for ((i = 0; i < 33; i++)); do mkdir "$DEEP_NAME" && cd "$DEEP_NAME" || exit 1; done)
}

# deep_join TOP PID: move PID into the deepest cgroup below TOP.
deep_join() {
	(cd "$1" && for ((i = 0; i < 33; i++)); do cd "$DEEP_NAME" || exit 1; done &&
		echo "$2" >cgroup.procs)
}

rm_deep() {
	[ -d "$1" ] || return 0
	(cd "$1" && for ((i = 0; i < 32; i++)); do cd "$DEEP_NAME" || exit 0; done &&
		for ((i = 0; i < 33; i++)); do rmdir "$DEEP_NAME" 2>/dev/null; cd ..; done)
}

@test "hostile subtree: a member whose /proc/PID/cgroup passes 8 KiB is killed (v1 until empty, and v2)" {
	need_v2
	need_v1_memory
	local top2 top1 k
	make_deep "$V2"
	top2=$DEEP
	make_deep "$V1"
	top1=$DEEP
	for k in 1 2; do
		start_victim -m 2
		deep_join "$top2" "$VPID"
		deep_join "$top1" "$VPID"
		[ "$(wc -c <"/proc/$VPID/cgroup")" -gt 8192 ] || fail "/proc/$VPID/cgroup is short"
		[ "$k" = 1 ] && CG=$top1 || CG=$top2
		run -0 --separate-stderr "$MRELEASE" --kill --json --cgroup "$CG"
		json_ok ".targets[0].pid == $VPID and .summary.failed == 0 and .cgroups[0].kill != null"
		wait_gone "$VPID"
	done
}

# --- contract 2: kill until empty --------------------------------------------

@test "contract 2: v1, a fork bomb bounded by pids.max is killed until empty" {
	v1_cgroup pids
	at_teardown kill_all_in "$CG"
	echo 80 >"$CG/pids.max"
	# Each process forks two that fork two...: the bomb stays at pids.max.
	bash -c 'echo $$ >"$1/cgroup.procs"; f() { f & f & wait; }; f' bash "$CG" 2>/dev/null 3>&- &
	wait_until 200 at_least 60 "$CG" || fail "the bomb did not grow"
	run -0 --separate-stderr "$MRELEASE" --kill --json --verbose --cgroup "$CG"
	assert_regex "$stderr" "cgroup $CG: killed until empty, in [0-9]+ listings"
	json_ok '.cgroups[0].kill == "until empty" and .cgroups[0].remaining == null'
	empty_cgroup "$CG"
}

@test "contract 2: v1, a process moved in after the last listing lives" {
	need_v1_memory
	start_victim -m 4
	local a=$VPID
	freeze_victim "$a"
	make_cgroup "$V1"
	join "$CG" "$a"
	start_victim -m 1
	local b=$VPID
	shim_env "process_mrelease:*:1500:1"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --json --cgroup "$CG"
	shim_wait
	join "$CG" "$b"
	bg_done 0
	lives "$b"
	json_ok "[.targets[].pid] == [$a]"
}

@test "contract 2: kill until empty lists at least once, however long the figures before it took" {
	need_v1_memory
	start_victim -m 1
	make_cgroup "$V1"
	join "$CG" "$VPID"
	# The counter read just before the first kill outlasts the bound (1 s
	# with --wait 1; not --wait 0, which would also count a victim that is
	# a moment late in exiting as not done).
	shim_env "openat:*/memory.usage_in_bytes:1500:1"
	run -0 --separate-stderr "${SHIM_ENV[@]}" "$MRELEASE" --kill --wait 1 --json --cgroup "$CG"
	shim_fired
	json_ok '.targets[0].signal == "KILL" and .cgroups[0].kill == "until empty"'
	wait_gone "$VPID"
}

@test "contract 2: v1 under --grace, a child forked in the grace dies though its parent exited" {
	need_v1_memory
	start_victim -m 2 -T -u
	local a=$VPID c
	make_cgroup "$V1"
	join "$CG" "$a"
	# After the first listing and the TERM (ignored; the shim notes the
	# release tried at once after it), the member forks; then it exits,
	# its child given to another parent and still in the cgroup. The
	# grace lasts until the member exits (or 60 s), so the fork is within
	# it however slow the machine: the test kills the member only after.
	shim_env "process_mrelease:*:1:1"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --grace 60 --json --cgroup "$CG"
	shim_wait
	kill -USR1 "$a"
	wait_until 40 at_least 2 "$CG" || fail "no fork in the grace"
	c=$(grep -vx "$a" "$CG/cgroup.procs")
	[[ $c =~ ^[0-9]+$ ]] || fail "not one child forked: '$c'"
	{ kill -0 "$BG_PID" && lives "$a"; } || fail "the grace ended before the fork"
	kill -9 "$a"
	bg_done 0
	empty_cgroup "$CG"
	gone "$c" || fail "pid $c, forked in the grace, lives"
	json_ok '.cgroups[0].kill == "until empty" and .summary.failed == 0'
	json_ok "(.targets[] | select(.pid == $a) | [.status, .signal]) == [\"exited\", \"TERM\"]"
	json_ok "any(.targets[]; .pid == $c and .signal == \"KILL\")"
}

@test "contract 2: --no-recursive on v2 kills the cgroup until empty and leaves its children alone" {
	need_v2
	start_victims 2 -m 2
	make_cgroup "$V2"
	local parent=$CG
	make_cgroup "$parent"
	join "$parent" "${PIDS[0]}"
	join "$CG" "${PIDS[1]}"
	run -0 --separate-stderr "$MRELEASE" --kill --no-recursive --json --cgroup "$parent"
	json_ok "[.targets[].pid] == [${PIDS[0]}] and .cgroups[0].kill == \"until empty\""
	lives "${PIDS[1]}"
}

@test "contract 2: a member whose membership cannot be read is not killed: not empty, exit 1" {
	need_v1_memory
	start_victim -m 2
	make_cgroup "$V1"
	join "$CG" "$VPID"
	shim_env "openat:/proc/*/cgroup:-12:0"
	run -1 --separate-stderr "${SHIM_ENV[@]}" "$MRELEASE" --kill --json --cgroup "$CG"
	shim_fired
	lives "$VPID"
	assert_regex "$stderr" "pid $VPID: cannot tell whether it is still in its cgroup: Cannot allocate memory; not signalled"
	assert_regex "$stderr" "cgroup $CG: not empty after 1 listings: 1 member could not be killed"
	json_ok '.cgroups[0].kill == null and .cgroups[0].remaining == 1'
}

@test "a listing that fails is a failed kill, not a refusal: v2 before the write, v1 between rounds" {
	need_v2
	need_v1_memory
	cgroup_with_victim "$V2" -m 1
	# The listing just before the write: no write, the member is not killed.
	shim_env "openat:cgroup.procs:-13:2"
	run -1 --separate-stderr "${SHIM_ENV[@]}" "$MRELEASE" --kill --json --cgroup "$CG"
	shim_fired
	assert_regex "$stderr" "mrelease: cgroup $CG: its kill failed: Permission denied"
	json_ok '.cgroups[0].kill == null and .cgroups[0].kill_error == "Permission denied"'
	json_ok '.targets[0].status == "failed" and .targets[0].signal == null'
	lives "$VPID"
	! sigkill_pending "$VPID" || fail "pid $VPID was sent SIGKILL"
	# Round 2's listing fails after round 1 killed the member: not emptied.
	start_victim -m 1
	make_cgroup "$V1"
	join "$CG" "$VPID"
	shim_env "openat:cgroup.procs:-13:3"
	run -64 --separate-stderr "${SHIM_ENV[@]}" "$MRELEASE" --kill --json --cgroup "$CG"
	shim_fired
	assert_regex "$stderr" "mrelease: cgroup $CG: its kill failed: Permission denied"
	json_ok '.cgroups[0].kill == null and .cgroups[0].kill_error == "Permission denied"'
	json_ok '.targets[0].signal == "KILL"'
	wait_gone "$VPID"
}

# --- contract 3: refusals ----------------------------------------------------

@test "contract 3: a shell in the cgroup: refused before anything is sent, with the hint; its pipeline lives" {
	need_v2
	need_v1_memory
	local top
	for top in "$V2" "$V1"; do
		start_victim -m 1
		make_cgroup "$top"
		join "$CG" "$VPID"
		run -0 --separate-stderr timeout 30 bash -c 'echo $$ >"$1/cgroup.procs" &&
			"$0" --kill --json --cgroup "$1" | tee "$2/tee.out"
			echo "rc=${PIPESTATUS[0]} alive" >&2' "$MRELEASE" "$CG" "$BATS_TEST_TMPDIR"
		assert_regex "$stderr" "rc=2 alive"
		assert_regex "$stderr" "mrelease: cgroup $CG holds pid [0-9]+ \\(bash\\), an ancestor of mrelease: refusing to kill it; run mrelease from outside this cgroup, e.g. from another shell or with systemd-run --scope"
		lives "$VPID"
		[ ! -s "$BATS_TEST_TMPDIR/tee.out" ]
	done
}

@test "contract 3: inside a pid namespace, a cgroup holding processes outside it is refused" {
	need_v2
	start_victim -m 1
	make_cgroup "$V2"
	join "$CG" "$VPID"
	run -2 --separate-stderr unshare --pid --fork --mount-proc "$MRELEASE" --kill --cgroup "$CG"
	assert_equal "$stderr" "mrelease: cgroup $CG holds processes outside mrelease's pid namespace, whose ancestry it cannot check: refusing to kill it; run mrelease in the pid namespace that sees them all, e.g. on the host"
	lives "$VPID"
}

@test "contract 3: from inside a pid namespace, a cgroup that holds its pid 1 is refused" {
	need_v2
	make_cgroup "$V2"
	unshare --pid --fork --mount-proc sleep 600 </dev/null >/dev/null 2>&1 3>&- &
	local unshare=$! init=
	wait_until 100 pgrep -P "$unshare" >/dev/null || fail "no pid namespace"
	init=$(pgrep -P "$unshare")
	at_teardown kill -9 "$init"
	join "$CG" "$init"
	# Entered from outside, mrelease's parent is not in the namespace: pid 1
	# is no ancestor of it, and is refused as pid 1.
	run -2 --separate-stderr nsenter -t "$init" -p -m "$MRELEASE" --kill --cgroup "$CG"
	assert_equal "$stderr" "mrelease: cgroup $CG holds pid 1 of mrelease's pid namespace: refusing to kill it; run mrelease from the pid namespace above, e.g. on the host, where that process is not pid 1"
	lives "$init"
}

@test "contract 3: from a nested pid namespace, a v1 cgroup is refused: its listing hides the rest" {
	need_v1_memory
	start_victim -m 1
	make_cgroup "$V1"
	join "$CG" "$VPID"
	run -2 --separate-stderr unshare --pid --fork --mount-proc "$MRELEASE" --kill --cgroup "$CG"
	assert_equal "$stderr" "mrelease: cgroup $CG is a v1 cgroup, and mrelease does not run in the initial pid namespace (or cannot tell): a v1 listing leaves out the processes a nested one cannot see: refusing to kill it; run mrelease in the initial pid namespace, e.g. on the host"
	lives "$VPID"
	! sigkill_pending "$VPID" || fail "pid $VPID was sent SIGKILL"
}

# joins_during CG ARG...: run mrelease ARG... (with $SHIM_ENV) from a shell
# that moves itself into CG once the injected hold has fired (within 5 s,
# or it says so and fails); stderr ends with "rc=N alive" if that shell
# outlived the run, N being its status.
joins_during() {
	run -0 --separate-stderr timeout 30 bash -c "$(declare -f wait_until)"'
		"${@:3}" & m=$!
		wait_until 100 test -s "$2" ||
			{ echo "the injected hold did not fire within 5 s" >&2; wait $m; exit 1; }
		echo $$ >"$1/cgroup.procs"; wait $m; echo "rc=$? alive" >&2' \
		bash "$1" "$SHIM_FIRED" "${SHIM_ENV[@]}" "$MRELEASE" "${@:2}"
}

@test "contract 3: the caller's shell joining before the write is found by the check just before it" {
	need_v2
	start_victim -m 1
	make_cgroup "$V2"
	join "$CG" "$VPID"
	shim_env "openat:cgroup.procs:1000:2"
	joins_during "$CG" --kill --cgroup "$CG"
	shim_fired
	assert_regex "$stderr" "rc=2 alive"
	assert_regex "$stderr" "cgroup $CG holds pid [0-9]+ \\(bash\\), an ancestor of mrelease: refusing to kill it"
	lives "$VPID"
}

@test "contract 3: v1, the caller's shell joining between two listings stops the run there: report, exit 2" {
	need_v1_memory
	start_victim -m 4
	freeze_victim "$VPID"
	make_cgroup "$V1"
	join "$CG" "$VPID"
	# Listings: the first (selection), then one per round; hold round 2's.
	shim_env "openat:cgroup.procs:1000:3"
	joins_during "$CG" --kill --json --cgroup "$CG"
	shim_fired
	assert_regex "$stderr" "rc=2 alive"
	assert_regex "$stderr" "holds pid [0-9]+ \\(bash\\), an ancestor of mrelease now: stopped there, sending nothing more"
	# What was killed before is released all the same.
	json_ok ".targets[0].pid == $VPID and .targets[0].signal == \"KILL\" and .targets[0].status == \"released\""
	json_ok '.cgroups[0].kill == null and .cgroups[0].kill_error == "refused"'
	sigkill_pending "$VPID"
	assert_rss_under "$VPID" 1024
}

@test "contract 3: refused once the run has begun: the named target killed is released, the member fails" {
	need_v2
	start_victim -m 8
	local named=$VPID
	freeze_victim "$named"
	cgroup_with_victim "$V2" -m 1
	# Listings: the selection's, then the one just before the write.
	shim_env "openat:cgroup.procs:1000:2"
	joins_during "$CG" --kill --json "$named" --cgroup "$CG"
	shim_fired
	assert_regex "$stderr" "rc=2 alive"
	assert_regex "$stderr" "an ancestor of mrelease now: stopped there, sending nothing more"
	json_ok "[.targets[] | select(.pid == $named and .signal == \"KILL\" and .status == \"released\")] | length == 1"
	json_ok "[.targets[] | select(.pid == $VPID and .signal == null and .status == \"failed\" and .error == \"not killed: the run stopped at a cgroup it refused\")] | length == 1"
	json_ok '.cgroups[0].kill_error == "refused"'
	assert_rss_under "$named" 1024
	lives "$VPID"
	! sigkill_pending "$VPID" || fail "pid $VPID was sent SIGKILL"
}

@test "contract 3: refused at a v1 cgroup after a v2 write: what the write killed is released, not 'stopped'" {
	need_v2
	need_v1_memory
	cgroup_with_victim "$V2" -m 8
	local a=$VPID v2cg=$CG
	freeze_victim "$a"
	start_victim -m 1
	make_cgroup "$V1"
	join "$CG" "$VPID"
	# Listings: the selection's two, the one before the write, then round 1
	# of the v1 cgroup: held, while the caller's shell joins it.
	shim_env "openat:cgroup.procs:1000:4"
	joins_during "$CG" --kill --json --cgroup "$v2cg" --cgroup "$CG"
	shim_fired
	assert_regex "$stderr" "rc=2 alive"
	json_ok "[.targets[] | select(.pid == $a and .signal == \"KILL\" and .status == \"released\")] | length == 1"
	json_ok "[.targets[] | select(.pid == $VPID and .status == \"failed\" and .signal == null)] | length == 1"
	json_ok '.cgroups[0].kill == "cgroup.kill" and .cgroups[1].kill_error == "refused"'
	assert_rss_under "$a" 1024
	lives "$VPID"
	! sigkill_pending "$VPID" || fail "pid $VPID was sent SIGKILL"
}

@test "contract 3: refused after the grace: no note claims a KILL, the member keeps only TERM" {
	need_v2
	cgroup_with_victim "$V2" -m 1 -T
	shim_env "openat:cgroup.procs:1000:2"
	joins_during "$CG" --kill --grace 0.2 --verbose --json --cgroup "$CG"
	shim_fired
	assert_regex "$stderr" "rc=2 alive"
	assert_regex "$stderr" "stopped there, sending nothing more"
	refute_regex "$stderr" "sending KILL"
	json_ok ".targets[0].pid == $VPID and .targets[0].signal == \"TERM\" and .targets[0].status == \"failed\""
	lives "$VPID"
	! sigkill_pending "$VPID" || fail "pid $VPID was sent SIGKILL"
}

# --- contract 4: what is never a target --------------------------------------

@test "contract 4: a named ancestor fails with its name; pid 1 and mrelease are refused" {
	start_victim -m 1
	run -64 --separate-stderr bash -c '"$0" --kill --json $$ 1 "$1"; exit $?' "$MRELEASE" "$VPID"
	assert_regex "$stderr" "mrelease: pid [0-9]+: refusing to kill bash, an ancestor of mrelease"
	assert_regex "$stderr" "mrelease: pid 1: refusing to kill the init process"
	json_ok ".summary.released + .summary.exited == 1 and .summary.failed == 2"
	kill -0 1
}

@test "contract 4: pgrep -f from a script names the script: on stdin it is left out, the victim dies" {
	start_victim -m 1
	local script=$BATS_TEST_TMPDIR/mr-victim-reaper.sh
	printf '#!/bin/bash\npgrep -f mr-victim | "$1" --kill --verbose --json -\n' >"$script"
	chmod +x "$script"
	run -0 --separate-stderr "$script" "$MRELEASE"
	assert_regex "$stderr" "pid [0-9]+ \\(mr-victim-reape\\): left out: refusing to kill mr-victim-reape, an ancestor of mrelease"
	json_ok "any(.targets[]; .pid == $VPID) and .summary.failed == 0"
	wait_until 40 gone "$VPID" || fail "pid $VPID has not exited"
}

# --- contract 5: interrupted means interrupted -------------------------------

@test "contract 5: SIGINT before the kill: nothing is sent, the report comes, exit 130" {
	start_victims 2 -m 1
	# Hold the main thread in the second target's /proc/PID/stat.
	shim_env "openat:/proc/${PIDS[1]}/stat:1500:1"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --json "${PIDS[@]}"
	shim_wait
	kill -INT "$BG_PID"
	bg_done 130
	lives "${PIDS[0]}"
	lives "${PIDS[1]}"
	json_ok '[.targets[].status] == ["interrupted", "interrupted"] and all(.targets[]; .signal == null)'
}

@test "contract 5: SIGINT while the figures before the first kill are taken: nothing is sent" {
	need_v1_memory
	start_victim -m 1
	make_cgroup "$V1"
	join "$CG" "$VPID"
	# The cgroup's memory counter is first read just before the first kill.
	shim_env "openat:*/memory.usage_in_bytes:1500:1"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --json --cgroup "$CG"
	shim_wait
	kill -INT "$BG_PID"
	bg_done 130
	lives "$VPID"
	! sigkill_pending "$VPID" || fail "pid $VPID was sent SIGKILL"
	json_ok '.targets[0].status == "interrupted" and .targets[0].signal == null'
}

@test "contract 5: SIGTERM during the grace: no SIGKILL follows, exit 143" {
	start_victim -m 1 -T
	# The grace begins with the TERM (which the victim ignores) and a
	# release tried at once: the shim notes that release, so the TERM has
	# gone out when the run is sent its own.
	shim_env "process_mrelease:*:1:1"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --grace 30 --json "$VPID"
	shim_wait
	kill -TERM "$BG_PID"
	bg_done 143
	lives "$VPID"
	! sigkill_pending "$VPID" || fail "pid $VPID was sent SIGKILL"
	json_ok '.targets[0].status == "interrupted" and .targets[0].signal == "TERM"'
}

@test "contract 5: SIGINT between two kills: the rest are not sent one" {
	start_victims 3 -m 1
	shim_env "pidfd_send_signal:9:1500:1"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --json "${PIDS[@]}"
	shim_wait
	kill -INT "$BG_PID"
	bg_done 130
	json_ok '[.targets[] | select(.signal == "KILL")] | length == 1'
	json_ok '[.targets[] | select(.status == "interrupted" and .signal == null)] | length == 2'
	local alive=0 p
	for p in "${PIDS[@]}"; do
		lives "$p" && alive=$((alive + 1))
	done
	assert_equal "$alive" 2
}

@test "contract 5: SIGINT while releases do not return: the report comes at once" {
	start_victims 2 -m 2
	freeze_victim "${PIDS[@]}"
	shim_env "process_mrelease:*:600000:0"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --jobs 1 --json "${PIDS[@]}"
	shim_wait
	kill -INT "$BG_PID"
	# The held release sleeps for 600 s; the report must not wait for it.
	bg_done 130
	json_ok '[.targets[].status] | unique == ["interrupted"]'
	json_ok '[.targets[].signal] | unique == ["KILL"]'
}

# --- the kill comes first ------------------------------------------------------

@test "the kill never waits for a reading: status and smaps readings that never return, --jobs 1" {
	local mode
	for mode in status smaps; do
		start_victims 12 -m 2
		freeze_victim "${PIDS[@]}"
		# The targets' files, not mrelease's own /proc/self/status.
		[ "$mode" = status ] && shim_env "openat:/proc/[0-9]*/status:600000:0" ||
			shim_env "openat:/proc/[0-9]*/smaps_rollup:600000:0"
		# Held for 600 s: only a run that gives them up ends.
		run -0 --separate-stderr timeout 120 "${SHIM_ENV[@]}" "$MRELEASE" --kill --jobs 1 \
			--measure "$mode" --json "${PIDS[@]}"
		shim_fired
		json_ok '[.targets[].status] | unique == ["released"]'
		json_ok '[.targets[].measure_error] | unique == ["not read within 100 ms; given up"]'
		assert_regex "$stderr" "gave up the figures of 12 targets: not read within 100 ms"
		local p
		for p in "${PIDS[@]}"; do
			assert_rss_under "$p" 1024
		done
		clean_cgroups
		kill_victims
	done
}

# in_pids_cgroup MAX COMMAND...: run COMMAND in a v1 pids cgroup that allows
# MAX tasks.
in_pids_cgroup() {
	local max=$1
	shift
	v1_cgroup pids
	echo "$max" >"$CG/pids.max"
	run --separate-stderr bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"
}

@test "no thread can be started: nothing is read before the kill, and every target is released" {
	start_victims 2 -m 4
	freeze_victim "${PIDS[@]}"
	# (LeakSanitizer needs a thread of its own at exit.)
	ASAN_OPTIONS=detect_leaks=0 in_pids_cgroup 1 "$MRELEASE" --kill --verbose --json "${PIDS[@]}"
	assert_equal "$status" 0
	assert_regex "$stderr" "only 0 worker threads could be started: Resource temporarily unavailable"
	assert_regex "$stderr" "no worker thread could be started: releasing on the main thread, and reading no figures before the kill"
	json_ok '[.targets[].status] | unique == ["released"]'
	json_ok '[.targets[].measure_error] | unique == ["no worker thread to read them on without delaying the kill"]'
	assert_rss_under "${PIDS[0]}" 1024
	assert_rss_under "${PIDS[1]}" 1024
}

@test "with no thread, SIGINT during a release stops the run after it: nothing more is released" {
	start_victims 3 -m 2
	freeze_victim "${PIDS[@]}"
	v1_cgroup pids
	echo 1 >"$CG/pids.max"
	shim_env "process_mrelease:*:1500:0"
	bg bash -c 'echo $$ >"$1/cgroup.procs" && exec "${@:2}"' bash "$CG" \
		"${SHIM_ENV[@]}" "$MRELEASE" --kill --json "${PIDS[@]}"
	shim_wait
	kill -INT "$BG_PID"
	bg_done 130
	json_ok '.summary.released == 1 and .summary.interrupted == 2'
	json_ok '[.targets[].signal] | unique == ["KILL"]'
}

@test "a release that returns late closes only its own descriptor; the next target is still killed" {
	start_victims 2 -m 2
	local a=${PIDS[0]} b=${PIDS[1]}
	freeze_victim "$a" "$b"
	# The first release returns 4 s late, after the bound (--wait 3); its
	# descriptor number could by then name another target's pidfd.
	shim_env "process_mrelease:*:4000:1"
	run -1 --separate-stderr std_fds_only prlimit --nofile=15:15 \
		"${SHIM_ENV[@]}" "$MRELEASE" --kill --wait 3 --jobs 1 --json "$a" "$b"
	shim_fired
	json_ok '[.targets[].signal] | unique == ["KILL"]'
	json_ok '[.targets[] | select(.status == "released" and .exited == false)] | length == 1'
	json_ok '[.targets[] | select(.status == "failed")] | .[0].error | test("did not return in 3.0 s")'
	# Both were killed, and the one released holds nothing any more.
	sigkill_pending "$a"
	sigkill_pending "$b"
	rss_under "$a" 1024 || rss_under "$b" 1024 ||
		fail "neither holds under 1024 KiB: $(rss_kb "$a") and $(rss_kb "$b") KiB"
}

@test "a release held past the end of the grace leaves its target to the kill: killed and released" {
	start_victim -m 4 -T
	freeze_victim "$VPID"
	# The release tried right after TERM is held beyond the grace.
	shim_env "process_mrelease:*:400:1"
	run -0 --separate-stderr "${SHIM_ENV[@]}" "$MRELEASE" --kill --grace 0.1 --json "$VPID"
	shim_fired
	json_ok '.targets[0].signal == "KILL" and .targets[0].status == "released"'
	sigkill_pending "$VPID"
	assert_rss_under "$VPID" 1024
}

@test "a run locks its memory, lowers its OOM score where permitted, and uses small stacks" {
	start_victim -m 4
	freeze_victim "$VPID"
	shim_env "process_mrelease:*:3000:1"
	bg "${SHIM_ENV[@]}" "$MRELEASE" --kill --quiet "$VPID"
	local mr=$BG_PID
	# Read while the release is held: the run is under way.
	shim_wait
	local locked adj big=0 range rest unchecked=()
	locked=$(awk '/^VmLck:/ { print $2 }' "/proc/$mr/status")
	adj=$(cat "/proc/$mr/oom_score_adj")
	# A default thread stack is an 8 MiB mapping; the workers' are 64 KiB.
	while read -r range rest; do
		((0x${range#*-} - 0x${range%-*} == 8388608)) && big=$((big + 1))
	done <"/proc/$mr/maps"
	bg_done 0
	# AddressSanitizer turns mlockall into nothing and needs bigger stacks.
	if [ "${MR_SANITIZE:-OFF}" != ON ]; then
		[ "$locked" -gt 0 ] || fail "VmLck is $locked"
		[ "$big" -eq 0 ] || fail "$big mappings of 8 MiB: default thread stacks"
	else
		unchecked+=("the lock and the stacks (an AddressSanitizer build turns mlockall into nothing and needs bigger stacks)")
	fi
	# Lowering the score needs CAP_SYS_RESOURCE (24), which a sandbox may lack.
	if has_cap 24; then
		assert_equal "$adj" -1000
	else
		unchecked+=("the OOM score (lowering it needs CAP_SYS_RESOURCE, which these tests do not have)")
	fi
	((${#unchecked[@]} == 0)) || skip "checked all but ${unchecked[*]}"
}

@test "a closed stdout does not cut a run short; the exit status shows it" {
	start_victim -m 2
	freeze_victim "$VPID"
	run --separate-stderr bash -c '"$0" --kill "$1" >&-' "$MRELEASE" "$VPID"
	assert_equal "$status" 3
	assert_regex "$stderr" "standard output"
	assert_rss_under "$VPID" 1024
}

@test "a fatal error after the kill still prints the report, then exits 3" {
	need_strace
	start_victim -m 8
	freeze_victim "$VPID"
	# No thread (strace and mrelease fill pids.max): the main thread's
	# only waits are --wait's, and that one fails.
	ASAN_OPTIONS=detect_leaks=0 in_pids_cgroup 2 strace -o /dev/null -e trace=ppoll \
		-e inject=ppoll:error=ENOMEM:when=1+ "$MRELEASE" --kill --wait 5 --json "$VPID"
	assert_equal "$status" 3
	assert_regex "$stderr" "mrelease: waiting for the targets to exit: Cannot allocate memory; reported what was done"
	json_ok '.targets[0].status == "released"'
	assert_rss_under "$VPID" 1024
}

# --- not a capability broker ---------------------------------------------------

@test "a copy with file capabilities or set-user-ID is refused, for nobody and for root" {
	command -v setcap >/dev/null || skip "needs setcap (libcap2-bin)"
	local dir
	dir=$(mktemp -d /tmp/mrelease-caps.XXXXXX)
	NOBODY_DIR=$dir
	chmod 755 "$dir"
	cp "$MRELEASE" "$dir/mrelease-cap"
	cp "$MRELEASE" "$dir/mrelease-suid"
	setcap cap_kill+ep "$dir/mrelease-cap"
	chmod 4755 "$dir/mrelease-suid"
	start_victim -m 1
	local bin
	for bin in mrelease-cap mrelease-suid; do
		run -2 --separate-stderr as_nobody "$dir/$bin" --kill "$VPID"
		assert_equal "$stderr" "$bin: refusing to run set-user-ID, set-group-ID or with file capabilities: it would let anyone kill any process; run it as root, e.g. with sudo"
		assert_output ""
	done
	lives "$VPID"
}
