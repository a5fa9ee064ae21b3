#!/usr/bin/env bats
# follow.bats: mrelease --follow, the service, woken by pressure and the
# timer, and how it keeps going: its output, its descriptors, a cgroup that
# goes. Every run of it here is inside a pid namespace of the test's own (a
# sweep releases whatever is dying there, and sees nothing else; the signals
# source is declined there, as another pid namespace), with the test's own
# victims (frozen_in_pidns): $D, frozen and then killed by the test (dying,
# its memory held), and $L, frozen and not killed. signals.bats has the
# signals source, in the host's pid namespace.

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
}

# A frozen_in_pidns script's first lines: $3/p, a fifo of two pages held
# open on descriptor 7 (read and write) and nobody reading; inpipe: the
# bytes it holds; full: no room for a write.
# held_meanwhile OUT PATTERN [COMMAND...]: once $F, started next, has
# filled the fifo with less than a line of 9,000 bytes (it holds the rest),
# and COMMAND is run: $D, killed, is released before anyone reads; then a
# reader copies the fifo to OUT until PATTERN is there; SIGTERM ends $F,
# its exit status in $3/status. A status from 90 to 93, with $3/why, says
# which step did not happen: the script's last command, it is the script's
# (an exit in a function would run frozen_in_pidns's trap with the
# function's arguments, and leave the freezer frozen).
SMALL_FIFO='
	t=$3
	inpipe() { perl -e '\''ioctl(STDIN, 0x541B, my $n = pack("L", 0)) or die; print unpack("L", $n)'\'' <&7; }
	full() { perl -e '\''vec(my $w = "", 7, 1) = 1; exit(select(undef, $w, undef, 0) == 0 ? 0 : 1)'\''; }
	released() { v=$(awk "/^VmRSS/ { print \$2 }" /proc/$D/status); [ -n "$v" ] && [ "$v" -lt 1024 ]; }
	mkfifo "$t/p"
	exec 7<>"$t/p"
	perl -e '\''open(my $p, "+<", $ARGV[0]) or die; fcntl($p, 1031, 8192) or die "F_SETPIPE_SZ: $!"'\'' "$t/p" || exit 94
	held_meanwhile() {
		wait_until 100 full || { echo "the pipe never filled: $(inpipe) bytes" >"$t/why"; return 93; }
		[ "$(inpipe)" -lt 9000 ] || { echo "the pipe holds $(inpipe) bytes: no line taken in part" >"$t/why"; return 93; }
		"${@:3}"
		kill -9 $D
		wait_until 100 released || { echo "not released while the pipe was full" >"$t/why"; return 92; }
		full || { echo "the pipe was read: $(inpipe) bytes" >"$t/why"; return 91; }
		cat "$t/p" >"$1" 7>&- & C=$!
		exec 7>&-
		wait_until 100 grep -q "$2" "$1" || { echo "no $2" >"$t/why"; return 90; }
		kill -TERM $F
		wait $F
		echo $? >"$t/status"
		wait $C
	}
'

@test "--follow --interval: a victim killed by another is released within 2 s, said once; the living untouched; SIGTERM ends it at once, exit 0" {
	need_tracefs
	freezer_cgroup
	run -0 --separate-stderr frozen_in_pidns '
		out=$3/out
		"$1" --follow --interval 0.5 >"$out" 2>"$3/err" & F=$!
		wait_until 40 grep -q "^WHEN" "$out" || exit 96
		kill -9 $D
		killed=$(date +%s%N)
		wait_until 40 grep -q " $D mr-victim .* released$" "$out" || exit 95
		echo $(( ($(date +%s%N) - killed) / 1000000 )) >"$3/ms"
		# Three more sweeps at least: the victim stays dying (frozen).
		sleep 1.6
		start=$(date +%s%N)
		kill -TERM $F
		wait $F
		echo "$? $(( ($(date +%s%N) - start) / 1000000 ))" >"$3/end"'
	local ms status took
	dying_rss
	ms=$(cat "$BATS_TEST_TMPDIR/ms")
	read -r status took <"$BATS_TEST_TMPDIR/end"
	[ "$ms" -lt 2000 ] || fail "released ${ms} ms after the kill"
	((DYING_KB < 1024)) || fail "the dying victim still holds $DYING_KB KiB"
	((LIVING_KB > 3000)) || fail "the living victim holds $LIVING_KB KiB"
	assert_equal "$status" 0
	[ "$took" -lt 1000 ] || fail "SIGTERM took $took ms to end it"
	run -0 cat "$BATS_TEST_TMPDIR/out"
	assert_equal "$(grep -c ' mr-victim .* released$' <<<"$output")" 1
	assert_line --index 0 --regexp '^[0-9TZ:-]+ +following: waking on pressure and the timer; not on signals: another pid namespace: '
	assert_line --index 1 --regexp '^WHEN +PID COMM +RSS BEFORE +FREED +TIME STATUS$'
	assert_line --regexp '^[0-9TZ:-]+ [0-9]+ sweeps \(0 on signals, [0-9]+ on pressure, [0-9]+ on the timer\): 1 released, 0 failed, [1-9][0-9.]*M freed$'
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" ""
}

@test "--follow: SIGTERM in the middle of a sweep says it released nothing more, and kills nothing" {
	freezer_cgroup
	shim_env 'openat:/proc/[0-9]*/status:3000:1'
	# The sweep's reading of the dying victim is held (3 s); SIGTERM comes
	# then.
	run -0 --separate-stderr dying_in_pidns '
		"${@:5}" "$1" --follow --json --interval 0.2 >"$3/out" 2>"$3/err" & F=$!
		wait_until 100 test -s "$3/shim.fired" || exit 96
		kill -TERM $F
		wait $F
		echo $? >"$3/status"' "${SHIM_ENV[@]}"
	shim_fired
	dying_rss
	assert_equal "$(cat "$BATS_TEST_TMPDIR/status")" 0
	((LIVING_KB > 3000)) || fail "the living victim holds $LIVING_KB KiB"
	((DYING_KB > 15000)) || fail "the dying victim was released: $DYING_KB KiB left"
	# With --json, the warning is a record of the stream, not a line on
	# stderr.
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" ""
	output=$(cat "$BATS_TEST_TMPDIR/out")
	jq -se 'map(select(.type == "warning")) | map(.message) == ["interrupted with 1 target unfinished; released nothing more; reporting what was done"]' \
		<<<"$output" >/dev/null || fail "warning records: $output"
	jq -se 'map(select(.type == "release")) | length == 0' <<<"$output" >/dev/null ||
		fail "release records: $output"
	jq -se 'last | .type == "summary" and .released == 0' <<<"$output" >/dev/null ||
		fail "summary: $output"
}

@test "--follow --json: NDJSON, the start record first, a release object as in the one-shot document, a sweep object when it found something, the summary last" {
	need_tracefs
	freezer_cgroup
	run -0 --separate-stderr frozen_in_pidns '
		"$1" --follow --json --interval 0.3 >"$3/out" 2>"$3/err" & F=$!
		wait_until 60 grep -q "\"type\":\"start\"" "$3/out" || exit 96
		kill -9 $D
		wait_until 60 grep -q "\"type\":\"release\"" "$3/out" || exit 95
		# Five more sweeps on the timer, which find the victim said.
		sleep 1.6
		kill -INT $F
		wait $F'
	output=$(cat "$BATS_TEST_TMPDIR/out")
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" ""
	# One object a line, each a document of its own.
	jq -e . <<<"$output" >/dev/null || fail "not NDJSON: $output"
	jq -se '.[0] | .type == "start" and .sources == ["pressure", "timer"]
		and (.declined.signals | test("another pid namespace"))
		and .interval_ms == 300 and .settle_ms == 2000 and .pressure == "some 200000 2000000"' \
		<<<"$output" >/dev/null || fail "start record: $output"
	assert_equal "$(jq -s 'map(select(.type == "release")) | length' <<<"$output")" 1
	jq -se 'map(select(.type == "release"))[0] | .status == "released" and .rss_before_kb > 15000
		and .rss_after_kb < 1024 and (.time | test("^[0-9-]+T[0-9:.]+Z$"))' <<<"$output" >/dev/null ||
		fail "release object: $output"
	# The same keys as a target of the one-shot --json, after type and time.
	local keys
	keys=$("$MRELEASE" --json --dry-run 1 2>/dev/null | jq -c '.targets[0] | keys_unsorted')
	assert_equal "$(jq -sc 'map(select(.type == "release"))[0] | del(.type, .time) | keys_unsorted' <<<"$output")" "$keys"
	# A sweep record only for the sweep that found something; its own time.
	jq -se 'map(select(.type == "sweep")) | length == 1 and .[0].trigger == "timer"
		and .[0].released == 1 and .[0].elapsed_us > 0' <<<"$output" >/dev/null ||
		fail "sweep objects: $output"
	jq -se 'last | .type == "summary" and .released == 1 and .failed == 0 and .sweeps >= 6
		and .on_start == 1 and .on_timer >= 5 and .records_dropped == 0' \
		<<<"$output" >/dev/null || fail "summary: $output"
}

@test "--follow --json --verbose: a sweep object for every sweep, each with its elapsed_us" {
	freezer_cgroup
	run -0 --separate-stderr dying_in_pidns '
		"$1" --follow --json --verbose --interval 0.2 >"$3/out" 2>"$3/err" & F=$!
		wait_until 60 grep -q "\"sweep\":5," "$3/out" || exit 94
		kill -TERM $F
		wait $F'
	output=$(cat "$BATS_TEST_TMPDIR/out")
	jq -se 'map(select(.type == "sweep")) | length >= 5 and (map(.released) | add) == 1
		and (map(.known) | add) >= 1 and all(.elapsed_us > 0)
		and .[0].trigger == "start" and all(.[1:][]; .trigger == "timer")' <<<"$output" >/dev/null ||
		fail "sweep objects: $output"
}

@test "--follow --dry-run says what each sweep would release, and releases nothing" {
	freezer_cgroup
	run -0 --separate-stderr frozen_in_pidns '
		kill -9 $D
		"$1" --follow --dry-run --json --verbose --interval 0.3 >"$3/out" 2>"$3/err" & F=$!
		wait_until 60 grep -q "\"sweep\":3," "$3/out" || exit 94
		kill -TERM $F
		wait $F'
	output=$(cat "$BATS_TEST_TMPDIR/out")
	jq -se 'map(select(.type == "release")) | length == 1 and .[0].status == "would release"' \
		<<<"$output" >/dev/null || fail "$output"
	jq -se '.[0] | .type == "start" and .dry_run' <<<"$output" >/dev/null || fail "$output"
	dying_rss
	((DYING_KB > 15000)) || fail "the dry run released: $DYING_KB KiB left"
}

@test "--follow idle costs nothing: under 10 ms of CPU in 3 s, with no trigger" {
	freezer_cgroup
	run -0 --separate-stderr frozen_in_pidns '
		"$1" --follow --quiet --pressure "full 9000000 10000000" 2>"$3/err" & F=$!
		sleep 0.5
		read -r a _ </proc/$F/schedstat
		sleep 3
		read -r b _ </proc/$F/schedstat
		echo $(( (b - a) / 1000 )) >"$3/cpu_us"
		kill -TERM $F
		wait $F'
	local us
	us=$(cat "$BATS_TEST_TMPDIR/cpu_us")
	echo "CPU in 3 s idle: $us us" >&3
	[ "$us" -lt 10000 ] || fail "idle --follow used $us us of CPU in 3 s"
}

@test "--follow keeps its memory flat: RSS after 1000 sweeps within 1 MiB of after 10" {
	[ "${MR_SANITIZE:-OFF}" != ON ] || skip "RSS means nothing under AddressSanitizer (its quarantine keeps what is freed)"
	freezer_cgroup
	run -0 --separate-stderr frozen_in_pidns '
		kill -9 $D
		"$1" --follow --json --verbose --interval 0.001 >"$3/out" 2>"$3/err" & F=$!
		wait_until 200 grep -q "\"sweep\":10," "$3/out" || exit 94
		rss $F >"$3/at10"
		wait_until 1200 grep -q "\"sweep\":1000," "$3/out" || exit 93
		rss $F >"$3/at1000"
		kill -TERM $F
		wait $F'
	local at10 at1000
	at10=$(cat "$BATS_TEST_TMPDIR/at10")
	at1000=$(cat "$BATS_TEST_TMPDIR/at1000")
	echo "RSS after 10 sweeps: $at10 KiB, after 1000: $at1000 KiB" >&3
	[ "$at1000" -le $((at10 + 1024)) ] || fail "RSS grew from $at10 KiB to $at1000 KiB"
	# Each sweep found the dying victim (one release, then known).
	jq -se 'map(select(.type == "sweep" and .targets == 1)) | length >= 1000' \
		"$BATS_TEST_TMPDIR/out" >/dev/null || fail "sweeps did not find the victim"
}

@test "--follow wakes on memory pressure (PSI), not on a timer" {
	local mem mc
	mem=$(cgroup_v1_mount memory)
	[ -n "$mem" ] || skip "needs the cgroup v1 memory controller"
	[ -e /proc/pressure/memory ] || skip "needs PSI (/proc/pressure/memory)"
	freezer_cgroup
	# Page-cache thrash in a small memory cgroup: reclaim stalls that
	# the system's PSI counts.
	make_cgroup "$mem"
	mc=$CG
	echo 8M >"$mc/memory.limit_in_bytes"
	run -0 --separate-stderr frozen_in_pidns '
		"$1" --follow --json --verbose --pressure "some 10000 2000000" >"$3/out" 2>"$3/err" & F=$!
		wait_until 60 grep -q "\"trigger\":\"start\"" "$3/out" || exit 96
		kill -9 $D
		for ((i = 0; i < 10; i++)); do
			grep -q "\"trigger\":\"pressure\"" "$3/out" && break
			bash -c "echo \$\$ >$5/cgroup.procs; dd if=/dev/zero of=$3/thrash bs=1M count=64 status=none; cat $3/thrash >/dev/null"
		done
		wait_until 60 grep -q "\"type\":\"release\"" "$3/out" || exit 95
		kill -TERM $F
		wait $F' "$mc"
	output=$(cat "$BATS_TEST_TMPDIR/out")
	jq -se 'map(select(.type == "sweep")) | length >= 2 and .[0].trigger == "start"
		and all(.[1:][]; .trigger == "pressure")' <<<"$output" >/dev/null || fail "$output"
	jq -se 'map(select(.type == "release")) | length == 1' <<<"$output" >/dev/null || fail "$output"
	rm -f "$BATS_TEST_TMPDIR/thrash"
}

# usage_error WANT ARGS...: mrelease ARGS exits 2, with WANT in its message
# and nothing on stdout.
usage_error() {
	local want=$1
	shift
	run -2 --separate-stderr "$MRELEASE" "$@"
	[[ $stderr == "mrelease: "*"$want"* ]] || fail "mrelease $*: stderr was: $stderr"
	assert_output ""
}

@test "--follow: bad options and pressure specs are usage errors that change nothing" {
	usage_error "--follow never sends a signal" --follow --kill
	usage_error "--follow never sends a signal" --follow --kill --grace 1
	usage_error "--follow finds the dying itself; give no PID" --follow 1234
	usage_error "--pressure, --interval, --settle, --no-signals, --no-pressure and --metrics go with --follow" --dying --interval 1
	usage_error "go with --follow" --kill --settle 1 1234
	usage_error "go with --follow" --dying --no-signals
	usage_error "go with --follow" --dying --metrics /tmp/x.prom
	usage_error "--interval '0': expected seconds from 0.001 to 86400" --follow --interval 0
	usage_error "--interval 'x': expected seconds from 0.001 to 86400" --follow --interval x
	usage_error "--settle '-1': expected seconds from 0 to 86400" --follow --settle -1
	usage_error "--no-pressure and --pressure contradict each other" --follow --no-pressure --pressure "some 150000 2000000"
	usage_error "--metrics '': expected a file name" --follow --metrics ''
	usage_error "--follow never waits for an exit: one stuck process would hold every sweep after it" --follow --wait 5
	usage_error "--pressure 'half 1 1000000': expected some or full" --follow --pressure "half 1 1000000"
	usage_error "--pressure 'some': expected some or full" --follow --pressure some
	usage_error "--pressure 'some 1e5 1000000': expected some or full, a stall and a window in microseconds, such as 'some 150000 2000000'" --follow --pressure "some 1e5 1000000"
	usage_error "--pressure 'some 100000 1000000 x': expected" --follow --pressure "some 100000 1000000 x"
	usage_error "the kernel takes a window of 500000 to 10000000 us" --follow --pressure "some 100000 100000000"
	usage_error "the kernel takes a window of 500000 to 10000000 us" --follow --pressure "some 100000 100000"
	usage_error "a stall above 0 and no longer than the window" --follow --pressure "some 0 1000000"
	usage_error "no longer than the window" --follow --pressure "full 2000000 1000000"
}

@test "--follow with nothing to wake on is a usage error that says why each source is out" {
	need_tracefs
	run -2 --separate-stderr unshare --pid --fork --mount-proc "$MRELEASE" --follow --no-pressure
	assert_output ""
	assert_regex "$stderr" "^mrelease: nothing to wake on: signals: another pid namespace: .*; pressure: turned off \(--no-pressure\); give --interval SECONDS to sweep on a timer$"
}

@test "the --pressure example of the error message is a trigger the kernel takes from an unprivileged user" {
	[ -e /proc/pressure/memory ] || skip "needs PSI (/proc/pressure/memory)"
	local spec
	spec=$("$MRELEASE" --follow --pressure x 2>&1 | sed -n "s/.*such as '\([^']*\)'.*/\1/p")
	[ -n "$spec" ] || fail "no example in the message"
	NOBODY_DIR=$(mktemp -d /tmp/mrelease-nobody.XXXXXX)
	chmod 777 "$NOBODY_DIR"
	run -0 --separate-stderr unshare --pid --fork --mount-proc setpriv --reuid=nobody \
		--regid=nogroup --clear-groups bash -c '
		"$1" --follow --json --pressure "$2" >"$3" 2>&1 & F=$!
		for ((i = 0; i < 100; i++)); do grep -q "\"type\":\"start\"" "$3" && break; sleep 0.05; done
		kill -TERM $F
		wait $F' bash "$MRELEASE" "$spec" "$NOBODY_DIR/out"
	output=$(head -n 1 "$NOBODY_DIR/out")
	json_ok ".type == \"start\" and .sources == [\"pressure\"] and .pressure == \"$spec\""
}

@test "--follow --json | head -1: the broken pipe ends it at once, with one message, exit 3" {
	freezer_cgroup
	run -0 --separate-stderr dying_in_pidns '
		set -o pipefail
		"$1" --follow --json --verbose --interval 0.01 2>"$3/err" | head -n 1 >"$3/out"
		echo "${PIPESTATUS[0]}" >"$3/status"'
	assert_equal "$(cat "$BATS_TEST_TMPDIR/status")" 3
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" "mrelease: standard output: Broken pipe"
	output=$(cat "$BATS_TEST_TMPDIR/out")
	json_ok '.type == "start"'
}

@test "--follow > /dev/full: the failed write ends it at once, with one message, exit 3" {
	freezer_cgroup
	run -0 --separate-stderr dying_in_pidns '
		timeout 10 "$1" --follow --interval 0.01 >/dev/full 2>"$3/err"
		echo $? >"$3/status"'
	assert_equal "$(cat "$BATS_TEST_TMPDIR/status")" 3
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" "mrelease: standard output: No space left on device"
}

@test "a standard output nobody reads never holds --follow up: records are dropped, counted, and said" {
	freezer_cgroup
	# A pipe whose reader reads nothing until told: the pipe fills, and
	# mrelease goes on sweeping (and releasing) all the same.
	run -0 --separate-stderr dying_in_pidns '
		mkfifo "$3/go"
		"$1" --follow --json --verbose --interval 0.001 2>"$3/err" |
			{ read -r _ <"$3/go"; cat >"$3/out"; } & P=$!
		wait_until 100 pgrep -P $$ -x mrelease >/dev/null || exit 94
		F=$(pgrep -P $$ -x mrelease)
		# Well past what a pipe holds (64 KiB): 1000 sweep records.
		sleep 2
		kill -0 $F || exit 93
		[ "$(awk "/^State:/ { print \$2 }" /proc/$F/status)" != D ] || exit 92
		echo go >"$3/go"
		sleep 0.3
		kill -TERM $F
		wait $P'
	output=$(cat "$BATS_TEST_TMPDIR/out")
	jq -se 'last | .type == "summary" and .records_dropped > 0 and .released == 1' \
		<<<"$output" >/dev/null || fail "summary: $(tail -n 1 <<<"$output")"
	jq -se 'map(select(.type == "warning") | .message) | any(test("^[0-9]+ records were dropped: standard output could not take them then$"))' \
		<<<"$output" >/dev/null || fail "no warning of the records dropped"
}

@test "a record standard output takes only in part is finished later, not torn, and the service goes on meanwhile" {
	freezer_cgroup
	# A fifo of two pages nobody reads yet, and a record longer than that
	# (the --metrics warning, naming a path of 9,000 bytes): the pipe takes
	# the first part of it, and is full (no room for a write) while it
	# holds less than that record. mrelease holds the rest and releases $D,
	# killed meanwhile, before anyone reads; the reader then gets every line
	# whole.
	run --separate-stderr frozen_in_pidns "$SMALL_FIFO"'
		long=$(printf "x%.0s" {1..9000})
		"$1" --follow --json --verbose --interval 0.05 --metrics "$3/none/$long" >"$3/p" 2>"$3/err" & F=$!
		held_meanwhile "$3/out" "records* w[a-z]* dropped"'
	[ "$status" -eq 0 ] || fail "exit $status: $(cat "$BATS_TEST_TMPDIR/why" 2>/dev/null)"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/status")" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR/err")" ""
	dying_rss
	((DYING_KB < 1024)) || fail "the dying victim still holds $DYING_KB KiB"
	output=$(cat "$BATS_TEST_TMPDIR/out")
	# Every line whole: jq reads them all, and there are some.
	jq -se 'length > 3' <<<"$output" >/dev/null || fail "not every line is JSON: $(cut -c 1-200 <<<"$output")"
	jq -se 'map(select(.type == "warning" and (.message | startswith("--metrics ")) and (.message | length) > 9000)) | length == 1' \
		<<<"$output" >/dev/null || fail "the long warning is not there whole, once"
	jq -se 'last | .type == "summary" and .released == 1 and .records_dropped > 0' \
		<<<"$output" >/dev/null || fail "summary: $(tail -n 1 <<<"$output")"
}

@test "a warning standard error takes only in part is finished later, not torn; those it cannot take are counted; the service goes on" {
	freezer_cgroup
	# As above, on standard error, in the table: the --metrics warning,
	# whose path of 2,400 control bytes is escaped into 9,600, fills a fifo
	# of two pages nobody reads. Meanwhile $3/none is made a file and
	# removed again, each change a new error (ENOTDIR, ENOENT), so a new
	# warning, which cannot be written then. $D, killed meanwhile, is
	# released before anyone reads; the reader then gets the long warning
	# whole, then the count of those dropped.
	run --separate-stderr frozen_in_pidns "$SMALL_FIFO"'
		c=$(printf "\001%.0s" {1..200}) long=
		for i in {1..12}; do long+=/$c; done
		toggle() {
			for i in 1 2 3; do
				touch "$t/none"; sleep 0.2; rm "$t/none"; sleep 0.2
			done
		}
		"$1" --follow --interval 0.05 --metrics "$3/none$long" >"$3/out" 2>"$3/p" & F=$!
		held_meanwhile "$3/err" "warnings* w[a-z]* dropped: standard error" toggle'
	[ "$status" -eq 0 ] || fail "exit $status: $(cat "$BATS_TEST_TMPDIR/why" 2>/dev/null)"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/status")" 0
	dying_rss
	((DYING_KB < 1024)) || fail "the dying victim still holds $DYING_KB KiB"
	grep -q " released$" "$BATS_TEST_TMPDIR/out" || fail "no row released: $(cat "$BATS_TEST_TMPDIR/out")"
	# The long warning is one whole line, first; every line is a warning of
	# mrelease's own, so none was torn; one of them counts those dropped.
	local errs=$BATS_TEST_TMPDIR/err
	run -0 awk -v n=9000 'NR == 1 && !/^mrelease: --metrics .*: No such file or directory$/ { exit 1 }
		NR == 1 && length($0) < n { exit 2 } !/^mrelease: / { exit 3 } END { exit NR < 2 ? 4 : 0 }' "$errs"
	grep -Eq '^mrelease: [0-9]+ warnings? w[a-z]+ dropped: standard error could not take (it|them) then$' "$errs" ||
		fail "no count of the warnings dropped: $(cut -c 1-200 "$errs")"
}

@test "closed standard descriptors are opened on /dev/null first: no report is written into a trigger or a pidfd" {
	freezer_cgroup
	run -0 --separate-stderr frozen_in_pidns '
		"$1" --follow --interval 0.1 <&- >&- 2>&- & F=$!
		wait_until 100 eval "ls -l /proc/$F/fd | grep -q pressure" || exit 96
		for fd in 0 1 2; do
			echo "$fd $(readlink /proc/$F/fd/$fd)"
		done >"$3/fds"
		ls -l /proc/$F/fd >"$3/all"
		kill -TERM $F
		wait $F'
	run -0 cat "$BATS_TEST_TMPDIR/fds"
	assert_output "0 /dev/null
1 /dev/null
2 /dev/null"
	grep -q 'pressure' "$BATS_TEST_TMPDIR/all" || fail "no pressure trigger open: $(cat "$BATS_TEST_TMPDIR/all")"
	# A one-shot run with stdout closed: the kill and the release happen,
	# nothing is written into what the run opened, and the report that
	# went nowhere makes the exit status 3.
	start_victim -m 1
	run -3 --separate-stderr bash -c '"$@" >&-' bash "$MRELEASE" --kill --json "$VPID"
	assert_equal "$stderr" "mrelease: standard output was closed: the report went nowhere"
	wait_gone "$VPID"
}

@test "a cgroup followed that is removed ends --follow, naming it: exit 1" {
	need_v2
	make_cgroup "$V2"
	local cg=$CG
	bg "$MRELEASE" --follow --json --no-signals --cgroup "$cg"
	wait_until 100 grep -q '"type":"start"' "$BATS_TEST_TMPDIR/bg.out" || fail "no start record"
	rmdir "$cg"
	bg_done 1
	assert_equal "$stderr" ""
	jq -se --arg cg "$cg" 'map(select(.type == "error")) | map(.message) == ["cgroup \($cg) was removed: nothing is left to follow there; ending (exit 1)"]' \
		<<<"$output" >/dev/null || fail "$output"
}
