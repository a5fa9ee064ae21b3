#!/usr/bin/env bats
# signals.bats: --follow woken by the SIGKILLs themselves (the signals
# source: the tracepoint signal:signal_generate, read through
# perf_event_open). These run in the host's pid namespace, where the source
# is used, and every --follow here is filtered to a cgroup v2 of the
# test's own (--cgroup): it never acts on a process the test did not start.
# Victims are held by the v1 freezer, so that once killed they keep their
# memory until released. tracefs is mounted for the test where nothing has.

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
	need_v2
	need_tracefs
	make_cgroup "$V2"
	WATCHED=$CG
}

# follow ARG...: mrelease --follow --json filtered to $WATCHED, in the
# background (bg), once its start record is out.
follow() {
	bg "$MRELEASE" --follow --json --cgroup "$WATCHED" "$@"
	wait_until 200 grep -q '"type":"start"' "$BATS_TEST_TMPDIR/bg.out" ||
		fail "no start record: $(cat "$BATS_TEST_TMPDIR/bg.err")"
}

# follow_end: SIGTERM, then its exit (0) and output.
follow_end() {
	kill -TERM "$BG_PID"
	bg_done 0
}

# frozen_victims N [victim options]: N victims in $WATCHED (or $IN, if
# set), frozen; their pids in PIDS.
frozen_victims() {
	local n=$1
	shift
	start_victims "$n" "$@"
	join "${IN:-$WATCHED}" "${PIDS[@]}"
	freeze_victim "${PIDS[@]}"
}

# released_records N: the output holds N release records, one for each pid
# in PIDS, each released.
released_records() {
	local want
	want=$(printf '%s\n' "${PIDS[@]}" | sort -n | jq -sc .)
	jq -se --argjson want "$want" '[.[] | select(.type == "release")] |
		(map(.pid) | sort) == $want and all(.status == "released")' <<<"$output" >/dev/null ||
		fail "release records: $(jq -c 'select(.type == "release") | [.pid, .status]' <<<"$output")"
}

@test "the start record in the host's pid namespace names the signals source, and in a pid namespace of its own declines it, saying why" {
	follow --no-pressure
	output=$(head -n 1 "$BATS_TEST_TMPDIR/bg.out")
	json_ok '.type == "start" and .sources == ["signals"]
		and .declined == {"pressure": "turned off (--no-pressure)", "timer": "no --interval"}'
	follow_end
	run -0 --separate-stderr in_pidns '
		"$1" --follow --json --interval 1 >"$3/out" & F=$!
		wait_until 100 grep -q "\"type\":\"start\"" "$3/out" || exit 96
		kill -TERM $F
		wait $F'
	output=$(head -n 1 "$BATS_TEST_TMPDIR/out")
	json_ok '.type == "start" and (.sources | index("signals") | not)
		and (.declined.signals | test("^another pid namespace: the kernel reports the pids of the initial one"))'
}

@test "a frozen victim killed by the test is released at once: no --interval, no pressure" {
	frozen_victims 1 -m 16
	local v=${PIDS[0]}
	follow --no-pressure
	kill -9 "$v"
	wait_until 100 grep -q '"type":"release"' "$BATS_TEST_TMPDIR/bg.out" ||
		fail "not released: $(cat "$BATS_TEST_TMPDIR/bg.out")"
	assert_rss_under "$v" 1024
	follow_end
	released_records
	jq -se 'map(select(.type == "sweep")) | length == 1 and .[0].trigger == "signals" and .[0].released == 1' \
		<<<"$output" >/dev/null || fail "sweep records: $output"
	jq -se 'last | .type == "summary" and .released == 1 and .on_signals == 1 and .signal_events >= 1
		and .on_timer == 0 and .on_pressure == 0' <<<"$output" >/dev/null || fail "summary: $(tail -n 1 <<<"$output")"
}

@test "a storm: 300 frozen victims killed at once with cgroup.kill are each released, and said once" {
	frozen_victims 300 -m 1
	follow --no-pressure
	echo 1 >"$WATCHED/cgroup.kill"
	local p
	for p in "${PIDS[@]}"; do
		wait_until 200 rss_under "$p" 512 || fail "pid $p not released: $(rss_kb "$p") KiB"
	done
	follow_end
	released_records
	# Every SIGKILL seen, or counted lost (and then one sweep of all).
	jq -se 'last | .released == 300 and .signal_events + .signal_events_lost >= 300
		and (.signal_events_lost == 0 or .on_lost >= 1)' <<<"$output" >/dev/null ||
		fail "summary: $(tail -n 1 <<<"$output")"
}

@test "kills outside the filter release nothing, and cost only the events" {
	make_cgroup "$V2"
	local outside=$CG
	IN=$outside frozen_victims 2 -m 8
	follow --no-pressure
	kill -9 "${PIDS[@]}"
	wait_until 100 sigkill_pending "${PIDS[1]}"
	sleep 0.3
	follow_end
	local p
	for p in "${PIDS[@]}"; do
		assert_rss_over "$p" 7000
	done
	jq -se 'map(select(.type == "release" or .type == "sweep")) | length == 0' <<<"$output" >/dev/null ||
		fail "$output"
	jq -se 'last | .signal_events >= 2 and .sweeps == 1' <<<"$output" >/dev/null ||
		fail "summary: $(tail -n 1 <<<"$output")"
}

@test "a victim holding a robust lock is left to its own exit for --settle, then released if still dying" {
	local lock=$BATS_TEST_TMPDIR/lock
	frozen_victims 1 -m 16 -R "$lock"
	local v=${PIDS[0]}
	follow --no-pressure --settle 1
	local killed
	killed=$(date +%s%N)
	kill -9 "$v"
	sleep 0.5
	# Its exit has not marked the lock: it is not released yet.
	assert_rss_over "$v" 15000
	wait_until 100 rss_under "$v" 1024 || fail "not released after the settle time"
	local ms=$((($(date +%s%N) - killed) / 1000000))
	((ms >= 1000)) || fail "released $ms ms after the kill, within the settle time"
	follow_end
	released_records
	jq -se 'map(select(.type == "sweep")) | length == 1 and .[0].trigger == "settle"' \
		<<<"$output" >/dev/null || fail "sweep records: $output"
}

@test "a healthy victim holding a robust lock exits by itself: its waiter in another process is told the owner died, and it is not released" {
	local lock=$BATS_TEST_TMPDIR/lock
	start_victims 1 -m 16 -R "$lock"
	join "$WATCHED" "${PIDS[0]}"
	follow --no-pressure
	"$MR_VICTIM" -W "$lock" >"$BATS_TEST_TMPDIR/waiter" &
	local w=$!
	sleep 0.2
	kill -9 "${PIDS[0]}"
	wait "$w" || true
	assert_equal "$(cat "$BATS_TEST_TMPDIR/waiter")" "owner died"
	sleep 0.3
	follow_end
	jq -se 'map(select(.type == "release")) | length == 0' <<<"$output" >/dev/null || fail "$output"
}

@test "--settle 0: every process killed is released at once, a robust lock held or not" {
	local lock=$BATS_TEST_TMPDIR/lock
	frozen_victims 1 -m 16 -R "$lock"
	follow --no-pressure --settle 0
	kill -9 "${PIDS[0]}"
	wait_until 20 rss_under "${PIDS[0]}" 1024 || fail "not released within 1 s"
	follow_end
	released_records
	jq -se '.[0].settle_ms == 0' <<<"$output" >/dev/null || fail "$output"
}

@test "a process that exits by itself leaves nothing to release, nor to say" {
	start_victims 1 -m 16
	join "$WATCHED" "${PIDS[0]}"
	follow --no-pressure
	kill -9 "${PIDS[0]}"
	wait_gone "${PIDS[0]}"
	sleep 0.3
	follow_end
	jq -se 'map(select(.type == "release" and .status != "released" and .status != "exited")) | length == 0' \
		<<<"$output" >/dev/null || fail "$output"
	jq -se 'last | .signal_events >= 1 and .failed == 0' <<<"$output" >/dev/null ||
		fail "summary: $(tail -n 1 <<<"$output")"
}

@test "--metrics: after a release, the file holds the counters in Prometheus's text format, whole" {
	local prom=$BATS_TEST_TMPDIR/mrelease.prom
	frozen_victims 1 -m 16
	follow --no-pressure --metrics "$prom"
	wait_until 100 test -s "$prom" || fail "no $prom"
	kill -9 "${PIDS[0]}"
	wait_until 100 grep -qx 'mrelease_released_total 1' "$prom" ||
		fail "no release counted: $(cat "$prom")"
	run -0 cat "$prom"
	assert_line 'mrelease_failed_total 0'
	assert_line 'mrelease_sweeps_total{trigger="signals"} 1'
	assert_line 'mrelease_sweeps_total{trigger="start"} 1'
	assert_line 'mrelease_sweeps_total{trigger="lost"} 0'
	assert_line 'mrelease_source_up{source="signals"} 1'
	assert_line 'mrelease_source_up{source="pressure"} 0'
	assert_line '# TYPE mrelease_released_total counter'
	assert_line --regexp '^mrelease_freed_bytes_total [1-9][0-9]{7,}$'
	assert_line --regexp '^mrelease_signal_events_total [1-9][0-9]*$'
	# Every sample line is NAME{LABELS} VALUE, every name has its TYPE.
	local bad
	bad=$(grep -v '^#' "$prom" | grep -Evx '[a-z_]+(\{[a-z]+="[a-z]+"\})? [0-9]+' || true)
	[ -z "$bad" ] || fail "not in the text format: $bad"
	assert_equal "$(stat -c %a "$prom")" 644
	follow_end
	# No temporary file left beside it.
	assert_equal "$(ls "$BATS_TEST_TMPDIR" | grep -c 'mrelease.prom.*tmp')" 0
}

@test "--metrics into a directory that cannot be written: said once, and the service goes on" {
	follow --no-pressure --interval 0.05 --metrics /proc/mrelease.prom
	sleep 0.5
	follow_end
	jq -se 'map(select(.type == "warning")) | map(.message) == ["--metrics /proc/mrelease.prom: No such file or directory"]' \
		<<<"$output" >/dev/null || fail "$output"
}

@test "with --json, a warning is a JSON record too: the journal's lines read with jq, one by one" {
	frozen_victims 1 -m 16
	# Without CAP_SYS_NICE, --nice -10 cannot be applied: a warning, as
	# the unit's would be.
	bg setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
		"$MRELEASE" --follow --json --cgroup "$WATCHED" --nice -10
	wait_until 200 grep -q '"type":"start"' "$BATS_TEST_TMPDIR/bg.out" || fail "no start record"
	kill -9 "${PIDS[0]}"
	wait_until 100 grep -q '"type":"release"' "$BATS_TEST_TMPDIR/bg.out" || fail "not released"
	follow_end
	assert_equal "$stderr" ""
	# The man page's recipe: each line on its own, as journalctl -o cat
	# gives them.
	local line n=0
	while IFS= read -r line; do
		jq -e 'type == "object" and has("type")' <<<"$line" >/dev/null || fail "not a JSON record: $line"
		n=$((n + 1))
	done <<<"$output"
	((n >= 4)) || fail "only $n records"
	jq -se 'map(select(.type == "warning")) | length == 1 and (.[0].message | test("^cannot set nice value -10 for the releases"))' \
		<<<"$output" >/dev/null || fail "$output"
}

@test "a SIGKILL sent to a thread kills its process: the process is released" {
	frozen_victims 1 -m 16 -t
	local v=${PIDS[0]} tid=$VOTHER
	[ -n "$tid" ] && [ "$tid" != "$v" ] || fail "no thread id: '$tid'"
	follow --no-pressure
	# kill(2) with a thread's id: the event names the thread.
	kill -9 "$tid"
	wait_until 100 rss_under "$v" 1024 || fail "not released: $(rss_kb "$v") KiB"
	follow_end
	released_records
}

@test "a process left for the settle time that becomes a zombie no parent reaps is let go, not asked for ever" {
	local lock=$BATS_TEST_TMPDIR/lock ready=$BATS_TEST_TMPDIR/zready
	# Its parent is sleep, which never waits for it.
	sh -c '"$1" -m 4 -R "$2" -r "$3" </dev/null >/dev/null 3>&- & exec sleep 1000' sh \
		"$MR_VICTIM" "$lock" "$ready" 3>&- &
	local parent=$!
	at_teardown kill -9 "$parent"
	wait_until 200 test -s "$ready" || fail "the victim did not get ready"
	local v
	v=$(cut -d' ' -f1 "$ready")
	VICTIMS+=("$v")
	join "$WATCHED" "$v"
	freeze_victim "$v"
	follow --no-pressure --settle 1
	kill -9 "$v"
	sleep 0.3
	# Thawed, it exits by itself, and stays a zombie.
	echo THAWED >"$FREEZER/freezer.state"
	wait_until 100 gone "$v" || fail "the victim did not exit"
	sleep 1.5
	local a b
	read -r a _ <"/proc/$BG_PID/schedstat"
	sleep 1
	read -r b _ <"/proc/$BG_PID/schedstat"
	follow_end
	(((b - a) / 1000 < 50000)) || fail "mrelease used $(((b - a) / 1000)) us of CPU in 1 s"
	jq -se 'last | .on_settle <= 2' <<<"$output" >/dev/null || fail "summary: $(tail -n 1 <<<"$output")"
}
