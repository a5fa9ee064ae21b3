#!/usr/bin/env bats
# safety.bats: what mrelease must never do however it is called or ended:
# kill what nobody named (a root cgroup, its own ancestors, a late arrival),
# leave a cgroup frozen, let a failed reading or a shortage stop a kill,
# or ignore Ctrl-C. Every process killed here is one this file started;
# runs that could reach further are dry runs or run in a pid namespace of
# their own. Delays are injected with strace at exact points.

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
	V2=$(cgroup2_mount)
}

teardown() {
	[ -z "${STRACE_PID:-}" ] || kill -9 "$STRACE_PID" 2>/dev/null
	kill_victims
	clean_cgroups
	[ -z "${NOBODY_DIR:-}" ] || rm -rf "$NOBODY_DIR"
}

# start_traced LOG STRACE-ARGS... -- MRELEASE-ARGS...: mrelease under strace
# in the background, its stdout and stderr in $BATS_TEST_TMPDIR/{out,err};
# STRACE_PID is strace, MR_PID mrelease once it runs.
start_traced() {
	local log=$1 sargs=()
	shift
	while [ "$1" != -- ]; do
		sargs+=("$1")
		shift
	done
	shift
	ASAN_OPTIONS=detect_leaks=0 strace -f -o "$log" "${sargs[@]}" "$MRELEASE" "$@" \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	STRACE_PID=$!
	wait_until 200 pgrep -P "$STRACE_PID" >/dev/null
	MR_PID=$(pgrep -P "$STRACE_PID")
}

# sigkill_pending PID: SIGKILL (bit 8) is pending for PID or its group.
sigkill_pending() {
	local mask
	for mask in $(awk '/^(SigPnd|ShdPnd):/ { print $2 }' "/proc/$1/status"); do
		(((0x$mask & 0x100) != 0)) && return 0
	done
	return 1
}

# report_done: the JSON report has been written in full.
report_done() {
	grep -q '"summary"' "$BATS_TEST_TMPDIR/out" 2>/dev/null
}

# cgroup_v1_mounts: every v1 hierarchy's mount point.
cgroup_v1_mounts() {
	awk '{ for (i = 7; i <= NF; i++) if ($i == "-") break
	       if ($(i + 1) == "cgroup") print $5 }' /proc/self/mountinfo
}

# --- 2. root cgroups ---------------------------------------------------------

@test "the root of every hierarchy is refused, however it is spelled, even for a dry run" {
	need_v2
	start_victim -m 1
	local roots=("" "." "/" "//" "$V2" "$V2/" "$V2/." "$V2//") mnt r
	while read -r mnt; do
		roots+=("$mnt" "$mnt/")
	done < <(cgroup_v1_mounts)
	for r in "${roots[@]}"; do
		run -2 --separate-stderr "$MRELEASE" --dry-run --kill --cgroup "$r" "$VPID"
		assert_output ""
		[[ $stderr == "mrelease: cgroup '$r' is /"*", the root of the cgroup"*" hierarchy: it holds every process of the system; refusing it without --force" ]] ||
			fail "'$r': $stderr"
	done
	run -2 --separate-stderr "$MRELEASE" --kill --cgroup "$V2/"
	assert_equal "$stderr" "mrelease: cgroup '$V2/' is $V2, the root of the cgroup2 hierarchy: it holds every process of the system; refusing it without --force"
	kill -0 "$VPID"
}

@test "--force takes a root cgroup (dry run), but never pid 1, mrelease or kernel threads" {
	need_v2
	run --separate-stderr bash -c '"$0" --force --dry-run --verbose --json --cgroup "$1"; echo "parent $$" >&2' \
		"$MRELEASE" "$V2"
	[ "$status" -eq 0 ] || [ "$status" -eq 64 ] || fail "exit $status: $stderr"
	local parent
	parent=$(sed -n 's/^parent //p' <<<"$stderr")
	json_get '.summary.targets > 0' >/dev/null
	assert_equal "$(json_get '[.targets[] | select(.pid == 1)] | length')" 0
	assert_equal "$(json_get '[.targets[] | select(.comm == "kthreadd")] | length')" 0
	# --force lifts the ancestors' protection: the calling shell is a target.
	assert_equal "$(json_get "[.targets[] | select(.pid == $parent)] | length")" 1
	assert_regex "$stderr" "leaving out pid [0-9]+, mrelease itself"
	assert_regex "$stderr" "leaving out pid 1"
	assert_regex "$stderr" "leaving out pid 2, a kernel thread"
	assert_equal "$(json_get '[.targets[].status] | unique | map(select(. != "skipped" and . != "exited")) | length')" 0
}

# --- 3. ancestors ------------------------------------------------------------

@test "a named ancestor is refused, with its name; --force lets it be killed" {
	run -0 --separate-stderr bash -c '"$0" --kill --json $$; echo "rc=$? shell alive"' "$MRELEASE"
	assert_regex "$stderr" "^mrelease: pid [0-9]+: refusing to release bash, an ancestor of mrelease \(--force overrides\)$"
	assert_line "rc=1 shell alive"
	# The grandparent too.
	run -0 --separate-stderr bash -c 'bash -c "\"\$0\" --kill \$PPID; echo rc=\$?" "$0"; echo "shell alive"' \
		"$MRELEASE"
	assert_regex "$stderr" "refusing to release bash, an ancestor of mrelease"
	assert_line "rc=1"
	assert_line "shell alive"
	# With --force the parent is killed (it is this test's own shell).
	run --separate-stderr bash -c '"$0" --force --kill --quiet $$; echo "not reached"' "$MRELEASE"
	assert_equal "$status" 137
	assert_equal "$output" ""
}

@test "pgrep -f from a script matches the script itself: the script lives, the victim dies" {
	run --separate-stderr in_pidns '
		tok=mrtoken$RANDOM$RANDOM
		(exec -a "victim-$tok" "$2" -m 4 -r "$3/v") </dev/null >/dev/null &
		while [ ! -s "$3/v" ]; do sleep 0.05; done
		victim=$(cat "$3/v")
		bash -c "pgrep -f $tok | \"\$0\" --kill --json -; echo script alive rc=\$?" "$1"
		kill -0 "$victim" 2>/dev/null && ! grep -q "^State:.*Z" /proc/$victim/status &&
			echo "victim alive"
		exit 0'
	assert_success
	assert_line --regexp '^script alive rc=64$'
	refute_line "victim alive"
	assert_regex "$stderr" "refusing to release bash, an ancestor of mrelease"
	local json
	json=$(sed -n '/^{"targets"/,/^"summary"/p' <<<"$output")
	assert_equal "$(jq -r '[.targets[] | select(.status == "released" or .status == "exited")] | length' <<<"$json")" 1
}

# The cgroup case ("--cgroup X --kill" from a shell inside X) is in
# cgroup.bats: the shell and mrelease are left out, not failed.

# --- 4. never frozen ---------------------------------------------------------

@test "mrelease never opens cgroup.freeze" {
	need_v2
	need_strace
	local cg
	cgroup_with_victim "$V2" -m 4
	cg=$CG
	ASAN_OPTIONS=detect_leaks=0 run -0 strace -f -o "$BATS_TEST_TMPDIR/log" -e trace=openat,open \
		"$MRELEASE" --kill --quiet --cgroup "$cg"
	grep -q "$cg/cgroup.kill" "$BATS_TEST_TMPDIR/log" || fail "no cgroup.kill in the trace"
	run grep -c 'cgroup.freeze' "$BATS_TEST_TMPDIR/log"
	assert_output 0
}

@test "SIGKILL of mrelease in the middle of a cgroup kill leaves nothing frozen" {
	need_v2
	need_strace
	local cg
	make_cgroup "$V2"
	cg=$CG
	start_victim -m 8
	join "$cg" "$VPID"
	freeze_victim "$VPID"
	start_traced "$BATS_TEST_TMPDIR/log" -e trace=process_mrelease \
		-e inject=process_mrelease:delay_enter=30000000 -- --kill --cgroup "$cg"
	wait_until 200 grep -q process_mrelease "$BATS_TEST_TMPDIR/log"
	kill -9 "$MR_PID" "$STRACE_PID"
	assert_equal "$(cat "$cg/cgroup.freeze")" 0
	grep -qx 'frozen 0' "$cg/cgroup.events"
	# cgroup.kill had gone out: the victim is dying, held only by the v1
	# freezer standing in for uninterruptible sleep.
	sigkill_pending "$VPID"
}

@test "a closed stdout does not cut a run short; the exit status shows it" {
	need_v2
	local cg i
	make_cgroup "$V2"
	cg=$CG
	for i in 1 2 3; do
		start_victim -m 4
		join "$cg" "$VPID"
	done
	# A pipe whose reader is gone before mrelease writes: EPIPE, and SIGPIPE
	# if it were not ignored.
	run bash -c 'exec > >(exit 0); sleep 0.3; "$0" --kill --verbose --cgroup "$1" 2>&1; echo "rc=$?" >&2' \
		"$MRELEASE" "$cg"
	assert_output --partial "rc=3"
	wait_until 100 test ! -s "$cg/cgroup.procs" || fail "members left: $(cat "$cg/cgroup.procs")"
	assert_equal "$(cat "$cg/cgroup.freeze")" 0
	# And stdout closed outright: the kill is done all the same.
	start_victim -m 1
	run -3 --separate-stderr bash -c 'exec "$@" >&-' bash "$MRELEASE" --kill "$VPID"
	assert_regex "$stderr" "standard output: Bad file descriptor"
	wait_until 100 bash -c "! kill -0 $VPID 2>/dev/null"
}

# --- 5. nothing that arrives after the kill is killed ------------------------

# arrivals CG: during mrelease's release (held 2 s by strace), a new process
# and an old one join CG. Both must live.
arrivals() {
	local cg=$1 old new
	shift
	start_victim -m 1
	old=$VPID
	start_traced "$BATS_TEST_TMPDIR/log" -e trace=process_mrelease \
		-e inject=process_mrelease:delay_enter=2000000 -- "$@"
	wait_until 200 grep -q process_mrelease "$BATS_TEST_TMPDIR/log" ||
		fail "no release began: $(cat "$BATS_TEST_TMPDIR/err")"
	start_victim -m 1
	new=$VPID
	join "$cg" "$new" "$old"
	wait "$STRACE_PID" || true
	STRACE_PID=
	kill -0 "$new" || fail "the process started after the kill was killed"
	kill -0 "$old" || fail "the process moved in after the kill was killed"
	output=$(cat "$BATS_TEST_TMPDIR/out")
	assert_equal "$(json_get "[.targets[] | select(.pid == $new or .pid == $old)] | length")" 0
	NEW=$new OLD=$old
}

@test "v2, cgroup.kill: processes that join after the kill live" {
	need_v2
	need_strace
	local cg
	cgroup_with_victim "$V2" -m 4
	cg=$CG
	arrivals "$cg" --kill --json --cgroup "$cg"
	assert_equal "$(json_get '.cgroups[0].kill')" cgroup.kill
}

@test "v1, pidfds: a late arrival and a process moved in live, and say so" {
	need_strace
	local mem cg
	mem=$(cgroup_v1_mount memory)
	[ -n "$mem" ] || skip "needs the cgroup v1 memory controller"
	make_cgroup "$mem"
	cg=$CG
	start_victim -m 4
	join "$cg" "$VPID"
	arrivals "$cg" --kill --verbose --json --cgroup "$cg"
	local err
	err=$(cat "$BATS_TEST_TMPDIR/err")
	[ "$(json_get '.targets[0].pidfd_inode')" != null ] || skip "no pidfs here: no second listing"
	assert_regex "$err" "cgroup $cg: pid $NEW started after the kill began; left alone"
	assert_regex "$err" "cgroup $cg: pid $OLD moved in after the listing; left alone"
}

@test "v1, pidfds: a child forked between the listing and the kill is killed too" {
	need_strace
	local mem cg parent child
	mem=$(cgroup_v1_mount memory)
	[ -n "$mem" ] || skip "needs the cgroup v1 memory controller"
	make_cgroup "$mem"
	cg=$CG
	start_victim -m 2 -u
	parent=$VPID
	join "$cg" "$parent"
	# The main thread starts a thread for the watermark before the listing,
	# one worker, then a thread for the watermark just before the first
	# signal: hold it at that third clone3, and have the victim fork
	# meanwhile.
	start_traced "$BATS_TEST_TMPDIR/log" -e trace=clone3 -e inject=clone3:delay_enter=1500000:when=3 \
		-- --kill --jobs 1 --verbose --json --cgroup "$cg"
	wait_until 200 test "$(grep -c 'clone3(' "$BATS_TEST_TMPDIR/log")" -ge 3 ||
		fail "mrelease did not reach the kill: $(cat "$BATS_TEST_TMPDIR/err")"
	kill -USR1 "$parent"
	wait_until 100 pgrep -P "$parent" >/dev/null
	child=$(pgrep -P "$parent")
	VICTIMS+=("$child")
	wait "$STRACE_PID" || true
	STRACE_PID=
	output=$(cat "$BATS_TEST_TMPDIR/out")
	[ "$(json_get '.targets[0].pidfd_inode')" != null ] || skip "no pidfs here: no second listing"
	assert_regex "$(cat "$BATS_TEST_TMPDIR/err")" "cgroup $cg: pid $child was forked before the kill; killing it too"
	assert_regex "$(json_get ".targets[] | select(.pid == $child) | .status")" '^(released|exited)$'
	wait_until 100 bash -c "! kill -0 $child 2>/dev/null || grep -q '^State:.*Z' /proc/$child/status"
}

# --- 6. figures are optional, the kill is not --------------------------------

# start_nobody_victim ARGS...: a victim running as nobody; VPID.
start_nobody_victim() {
	NOBODY_DIR=${NOBODY_DIR:-$(mktemp -d /tmp/mrelease-nobody.XXXXXX)}
	chmod 777 "$NOBODY_DIR"
	rm -f "$NOBODY_DIR/ready"
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$MR_VICTIM" "$@" -r "$NOBODY_DIR/ready" </dev/null >/dev/null 3>&- &
	VICTIMS+=("$!")
	wait_until 200 test -s "$NOBODY_DIR/ready"
	VPID=$(cat "$NOBODY_DIR/ready")
}


@test "a non-dumpable target of the caller's own user is killed and released, figures null" {
	command -v setpriv >/dev/null || skip "needs setpriv"
	start_nobody_victim -m 8 -D
	run -0 --separate-stderr as_nobody "$MRELEASE" --kill --json "$VPID"
	assert_equal "$stderr" \
		"mrelease: pid $VPID: no memory figures: /proc/$VPID/smaps_rollup: Permission denied"
	assert_regex "$(json_get '.targets[0].status')" '^(released|exited)$'
	assert_equal "$(json_get '.targets[0].rss_before_kb')" null
	wait_until 100 bash -c "! kill -0 $VPID 2>/dev/null"
}

@test "root with CAP_KILL alone: another user's target is killed and released, figures null" {
	command -v setpriv >/dev/null || skip "needs setpriv"
	start_nobody_victim -m 8
	freeze_victim "$VPID"
	run -0 --separate-stderr setpriv --bounding-set=-all,+kill "$MRELEASE" --kill --json "$VPID"
	assert_equal "$stderr" \
		"mrelease: pid $VPID: no memory figures: /proc/$VPID/smaps_rollup: Permission denied"
	assert_equal "$(json_get '.targets[0].status')" released
	[ "$(rss_kb "$VPID")" -lt 1024 ]
	# Without --kill, a target that is dying already: released all the same.
	start_nobody_victim -m 8
	freeze_victim "$VPID"
	kill -9 "$VPID"
	run -0 --separate-stderr setpriv --bounding-set=-all,+kill "$MRELEASE" --json "$VPID"
	assert_equal "$(json_get '.targets[0].status')" released
	assert_equal "$(json_get '.targets[0].rss_before_kb')" null
	[ "$(rss_kb "$VPID")" -lt 1024 ]
}

@test "a hard limit of 24 descriptors and 40 targets: every one released" {
	local pids p
	start_victims 40 -m 1
	pids=("${PIDS[@]}")
	freeze_victim "${pids[@]}"
	run -0 --separate-stderr prlimit --nofile=24:24 "$MRELEASE" --kill --verbose --json "${pids[@]}"
	assert_equal "$(json_get '.summary.targets')" 40
	assert_equal "$(json_get '.summary.released')" 40
	for p in "${pids[@]}"; do
		[ "$(rss_kb "$p")" -lt 512 ] || fail "pid $p still holds $(rss_kb "$p") KiB"
	done
}

# --- 7. shortages ------------------------------------------------------------

# in_pids_cgroup MAX COMMAND...: run COMMAND in a v1 pids cgroup that allows
# MAX tasks.
in_pids_cgroup() {
	local mnt max=$1
	shift
	mnt=$(cgroup_v1_mount pids)
	[ -n "$mnt" ] || skip "needs the cgroup v1 pids controller"
	make_cgroup "$mnt"
	echo "$max" >"$CG/pids.max"
	run --separate-stderr bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"
}

@test "no thread can be started: the release runs on the main thread" {
	start_victim -m 8
	freeze_victim "$VPID"
	# (LeakSanitizer needs a thread of its own at exit.)
	ASAN_OPTIONS=detect_leaks=0 in_pids_cgroup 1 "$MRELEASE" --kill --verbose --json "$VPID"
	assert_equal "$status" 0
	assert_regex "$stderr" "only 0 worker threads could be started: Resource temporarily unavailable"
	assert_regex "$stderr" "releasing 1 target on the main thread"
	assert_equal "$(json_get '.targets[0].status')" released
	[ "$(rss_kb "$VPID")" -lt 1024 ]
}

@test "a fatal error after the kill still prints the report, then exits 3" {
	need_strace
	start_victim -m 8
	freeze_victim "$VPID"
	# No thread (strace and mrelease fill pids.max), so the release runs
	# on the main thread, whose only waits are polls for signals (a failed
	# one is no signal) and --wait's: that one fails.
	ASAN_OPTIONS=detect_leaks=0 in_pids_cgroup 2 strace -o /dev/null -e trace=ppoll \
		-e inject=ppoll:error=ENOMEM:when=1+ "$MRELEASE" --kill --wait 5 --json "$VPID"
	assert_equal "$status" 3
	assert_regex "$stderr" "mrelease: waiting for the targets to exit: Cannot allocate memory; reported what was done"
	assert_equal "$(json_get '.targets[0].status')" released
	[ "$(rss_kb "$VPID")" -lt 1024 ]
}

# --- 8. self-protection ------------------------------------------------------

@test "a run locks its memory, lowers its OOM score where permitted, and uses small stacks" {
	start_victim -m 4
	freeze_victim "$VPID"
	"$MRELEASE" --kill --wait 30 --quiet "$VPID" 3>&- &
	local mr=$!
	wait_until 200 bash -c "[ \$(ls /proc/$mr/task | wc -l) -ge 2 ]"
	local locked adj big=0 range rest
	locked=$(awk '/^VmLck:/ { print $2 }' "/proc/$mr/status")
	adj=$(cat "/proc/$mr/oom_score_adj")
	# A default thread stack is an 8 MiB mapping; the workers' are 64 KiB.
	while read -r range rest; do
		((0x${range#*-} - 0x${range%-*} == 8388608)) && big=$((big + 1))
	done <"/proc/$mr/maps"
	kill -INT "$mr"
	wait "$mr" || true
	# AddressSanitizer turns mlockall into nothing and needs bigger stacks.
	if [ "${MR_SANITIZE:-OFF}" != ON ]; then
		[ "$locked" -gt 0 ] || fail "VmLck is $locked"
		[ "$big" -eq 0 ] || fail "$big mappings of 8 MiB: default thread stacks"
	fi
	# Lowering the score needs CAP_SYS_RESOURCE (bit 24), which a sandbox may lack.
	if (($(printf '%d' "0x$(awk '/^CapEff:/ { print $2 }' /proc/self/status)") & (1 << 24))); then
		assert_equal "$adj" -1000
	fi
}

# --- 10. Ctrl-C always ends a run --------------------------------------------

@test "SIGINT while releases do not return: the report comes at once, every target interrupted" {
	need_strace
	start_victim -m 8
	local a=$VPID
	start_victim -m 8
	freeze_victim "$a" "$VPID"
	start_traced "$BATS_TEST_TMPDIR/log" -e trace=process_mrelease \
		-e inject=process_mrelease:delay_enter=30000000 -- --kill --jobs 1 --json "$a" "$VPID"
	wait_until 200 grep -q process_mrelease "$BATS_TEST_TMPDIR/log"
	kill -INT "$MR_PID"
	# strace holds the stuck thread until its delay ends; the report and
	# the main thread's exit come well before: 2 s is plenty for "at once".
	wait_until 40 report_done || fail "no report 2 s after SIGINT"
	# (strace may add lines of its own.)
	assert_equal "$(grep -v '^strace:' "$BATS_TEST_TMPDIR/err")" \
		"mrelease: interrupted with 2 targets unfinished; reporting what was done"
	output=$(cat "$BATS_TEST_TMPDIR/out")
	assert_equal "$(json_get '[.targets[].status] | unique | join(",")')" interrupted
	assert_equal "$(json_get '.summary.interrupted')" 2
}

@test "a release that never returns is left behind after the wait's bound, failed" {
	need_strace
	start_victim -m 8
	freeze_victim "$VPID"
	start_traced "$BATS_TEST_TMPDIR/log" -e trace=process_mrelease \
		-e inject=process_mrelease:delay_enter=30000000 -- --kill --wait 1 --json "$VPID"
	wait_until 100 report_done || fail "no report within 5 s: $(cat "$BATS_TEST_TMPDIR/err")"
	assert_regex "$(grep -v '^strace:' "$BATS_TEST_TMPDIR/err")" \
		"^mrelease: pid $VPID: killed, but its release did not return in 1 s .*; left behind\$"
	output=$(cat "$BATS_TEST_TMPDIR/out")
	assert_equal "$(json_get '.targets[0].status')" failed
	sigkill_pending "$VPID"
}

@test "with no thread, SIGINT is let in between two releases" {
	need_strace
	local pids
	start_victims 3 -m 4
	pids=("${PIDS[@]}")
	freeze_victim "${pids[@]}"
	# strace and mrelease fill pids.max: no worker thread. Each release
	# takes 1.5 s; SIGINT in the first ends the run after it.
	local mnt
	mnt=$(cgroup_v1_mount pids)
	[ -n "$mnt" ] || skip "needs the cgroup v1 pids controller"
	make_cgroup "$mnt"
	echo 2 >"$CG/pids.max"
	ASAN_OPTIONS=detect_leaks=0 bash -c 'echo $$ >"$0/cgroup.procs" && exec strace -f -o "$2" \
		-e trace=process_mrelease -e inject=process_mrelease:delay_enter=1500000 "$3" --kill \
		--json "${@:4}" >"$1/out" 2>"$1/err"' "$CG" "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR/log" \
		"$MRELEASE" "${pids[@]}" &
	STRACE_PID=$!
	wait_until 200 grep -q process_mrelease "$BATS_TEST_TMPDIR/log"
	kill -INT "$(pgrep -P "$STRACE_PID")"
	wait_until 80 report_done || fail "no report 4 s after SIGINT"
	output=$(cat "$BATS_TEST_TMPDIR/out")
	assert_equal "$(json_get '.summary.released')" 1
	assert_equal "$(json_get '.summary.interrupted')" 2
}

@test "a reading that never returns does not hold up the kill, nor others' figures" {
	need_strace
	start_victim -m 8
	local other=$VPID
	start_victim -m 8
	freeze_victim "$other" "$VPID"
	# Every read of one victim's smaps_rollup hangs for 30 s.
	start_traced "$BATS_TEST_TMPDIR/log" -P "/proc/$VPID/smaps_rollup" -e trace=openat \
		-e inject=openat:delay_enter=30000000 -- --kill --json "$VPID" "$other"
	wait_until 100 report_done || fail "no report within 5 s: $(cat "$BATS_TEST_TMPDIR/err")"
	assert_regex "$(cat "$BATS_TEST_TMPDIR/err")" "gave up the figures of 1 target"
	assert_regex "$(cat "$BATS_TEST_TMPDIR/err")" \
		"pid $VPID: no memory figures: /proc/$VPID/smaps_rollup: given up, reading it made no progress"
	output=$(cat "$BATS_TEST_TMPDIR/out")
	assert_equal "$(json_get ".targets[] | select(.pid == $VPID) | .status")" released
	assert_equal "$(json_get ".targets[] | select(.pid == $VPID) | .rss_before_kb")" null
	[ "$(json_get ".targets[] | select(.pid == $other) | .rss_before_kb")" -gt 7000 ]
	[ "$(rss_kb "$VPID")" -lt 1024 ]
	[ "$(rss_kb "$other")" -lt 1024 ]
}

# --- found in review ---------------------------------------------------------

@test "short of descriptors, cgroup.kill still goes out when the first batch has nothing to kill" {
	need_v2
	local cg
	make_cgroup "$V2"
	cg=$CG
	# pid 1 is named (and refused): it runs in a pid namespace of its own.
	run --separate-stderr in_pidns '
		"$2" -m 4 -r "$3/v" </dev/null >/dev/null & v=$!
		while [ ! -s "$3/v" ]; do sleep 0.05; done
		echo $v >'"$cg"'/cgroup.procs
		prlimit --nofile=13:13 "$1" --kill --jobs 1 --verbose --json --cgroup '"$cg"' 1
		echo "rc=$?"
		for i in $(seq 100); do kill -0 $v 2>/dev/null || break; sleep 0.05; done
		kill -0 $v 2>/dev/null && echo "victim alive"; true'
	assert_regex "$stderr" "working in 2 batches"
	assert_regex "$stderr" "cgroup $cg: killed with cgroup.kill"
	assert_line "rc=64"
	refute_line "victim alive"
}

@test "--grace with pidfds: a child a member forks during the grace is killed, a newcomer lives" {
	need_v2
	need_strace
	local cg member newcomer child
	make_cgroup "$V2"
	cg=$CG
	# A member that, on SIGTERM, starts a child and goes on.
	bash -c 'trap "sleep 1000 & echo \$! >"$0/child"" TERM; echo $$ >"$0/member"
		while :; do sleep 0.05; done' "$BATS_TEST_TMPDIR" </dev/null >/dev/null 2>&1 3>&- &
	member=$!
	VICTIMS+=("$member")
	wait_until 100 test -s "$BATS_TEST_TMPDIR/member"
	join "$cg" "$member"
	"$MRELEASE" --kill --grace 1.5 --verbose --json --cgroup "$cg" \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	local mr=$!
	wait_until 100 test -s "$BATS_TEST_TMPDIR/child" || fail "the member did not fork"
	child=$(cat "$BATS_TEST_TMPDIR/child")
	# During the grace, a process that is no member's child joins.
	sleep 1000 </dev/null >/dev/null 2>&1 3>&- &
	newcomer=$!
	join "$cg" "$newcomer"
	wait "$mr" || true
	local err
	err=$(cat "$BATS_TEST_TMPDIR/err")
	wait_until 100 bash -c "! kill -0 $child 2>/dev/null" || fail "the member's child lives: $err"
	kill -0 "$newcomer" || fail "the newcomer was killed: $err"
	kill -9 "$newcomer"
	assert_regex "$err" "pid $child, forked by a member after the kill began, is killed too"
	assert_regex "$err" "pid $newcomer started after the kill began; left alone"
}

@test "SIGINT while trying releases in the grace still goes on to the kill" {
	need_strace
	start_victim -m 8 -T
	start_traced "$BATS_TEST_TMPDIR/log" -e trace=process_mrelease \
		-e inject=process_mrelease:delay_enter=1500000 -- --kill --grace 60 --jobs 1 --json "$VPID"
	wait_until 200 grep -q process_mrelease "$BATS_TEST_TMPDIR/log"
	kill -INT "$MR_PID"
	wait "$STRACE_PID" || true
	STRACE_PID=
	assert_regex "$(cat "$BATS_TEST_TMPDIR/err")" "the grace was cut short by a signal; killing now"
	output=$(cat "$BATS_TEST_TMPDIR/out")
	json_get '.summary.kill_us != null' >/dev/null
	wait_until 100 bash -c "! kill -0 $VPID 2>/dev/null" || fail "the victim lives"
}

@test "a member whose cgroup cannot be read is failed and said, never dropped or killed" {
	need_v2
	need_strace
	local cg
	cgroup_with_victim "$V2" -m 4
	cg=$CG
	ASAN_OPTIONS=detect_leaks=0 run -1 --separate-stderr strace -o /dev/null -f \
		-P "/proc/$VPID/cgroup" -e trace=openat -e inject=openat:error=ENOMEM \
		"$MRELEASE" --kill --no-recursive --json --cgroup "$cg"
	assert_regex "$stderr" "mrelease: pid $VPID: cannot tell whether it is still in its cgroup: Cannot allocate memory; not killed through its pidfd"
	assert_equal "$(json_get '.targets[0].status')" failed
	kill -0 "$VPID"
}

@test "a pid both named and found in a cgroup keeps the PID:INODE it was named by" {
	need_v2
	local cg ino
	cgroup_with_victim "$V2" -m 4
	cg=$CG
	run -0 --separate-stderr "$MRELEASE" --dry-run --json "$VPID"
	ino=$(json_get '.targets[0].pidfd_inode')
	[ "$ino" != null ] || skip "pidfds have no inode of their own before Linux 6.9"
	run -1 --separate-stderr "$MRELEASE" --kill --json --cgroup "$cg" "$VPID:$((ino + 1))"
	assert_regex "$stderr" "pid $VPID: not the process with pidfs inode $((ino + 1))"
	assert_equal "$(json_get '.targets[0].cgroup')" "$cg"
	kill -0 "$VPID"
}
