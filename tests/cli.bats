#!/usr/bin/env bats
# cli.bats: the command line: each bad input gives exit 2, a message naming
# it on stderr, nothing on stdout, and kills nothing.

bats_require_minimum_version 1.5.0
load common

# Each case: the arguments after "--kill", then the message stderr must hold.
bad_cases=(
	"abc|'abc': not a valid pid"
	"-- -5|'-5': not a valid pid"
	"0|'0': not a valid pid"
	"4194305|'4194305': not a valid pid"
	"99999999999999999999|'99999999999999999999': not a valid pid"
	"12x|'12x': not a valid pid"
	"+7|'+7': not a valid pid"
	"12:|'12:': not a valid pid"
	"12:0|'12:0': not a valid pid"
	"12:x7|'12:x7': not a valid pid"
	":7|':7': not a valid pid"
	"12:99999999999999999999999|'12:99999999999999999999999': not a valid pid"
	"--affinity 0-x VICTIM|--affinity '0-x': not a CPU list such as 0,2-3"
	"--affinity 3-1 VICTIM|--affinity '3-1': not a CPU list"
	"--affinity , VICTIM|--affinity ',': not a CPU list"
	"--affinity 100000 VICTIM|--affinity '100000': not a CPU list"
	"--affinity 1023 VICTIM|--affinity '1023': names a CPU that is not online"
	"--nice 20 VICTIM|--nice '20': expected a whole number from -20 to 19"
	"--nice -21 VICTIM|--nice '-21': expected a whole number from -20 to 19"
	"--nice 1.5 VICTIM|--nice '1.5': expected a whole number"
	"--jobs 0 VICTIM|--jobs '0': expected a whole number from 1 to 1024"
	"--measure rss VICTIM|--measure 'rss': expected status, smaps or none"
	"--wait=soon VICTIM|--wait 'soon': expected seconds from 0 to 86400"
	"--wait 86401 VICTIM|--wait '86401': expected seconds from 0 to 86400"
	"--wait 1.2345 VICTIM|--wait '1.2345': at most three decimals (milliseconds), such as 0.001"
	"--grace 0.0001 VICTIM|--grace '0.0001': at most three decimals (milliseconds), such as 0.001"
	"--wait -1 VICTIM|--wait '-1': expected seconds"
	"--wait=|--wait '': expected seconds"
	"--wait|option '--wait' requires an argument"
	"--grace=x VICTIM|--grace 'x': expected seconds from 0 to 86400"
	"--grace|option '--grace' requires an argument"
	"--bogus VICTIM|unrecognized option '--bogus'"
	"|no PID, --cgroup, --unit or --dying given"
	"--force VICTIM|--force is gone (0.3.0): the root of a cgroup hierarchy, and a cgroup that holds mrelease or an ancestor of it, are always refused"
	"--signal QUIT VICTIM|--signal needs --grace: it is the signal sent before the grace"
	"--grace 1 --signal TREM VICTIM|--signal 'TREM': not a signal such as TERM, INT, QUIT or 15 (see kill -l)"
	"--grace 1 --signal 0 VICTIM|--signal '0': not a signal"
	"--grace 1 --signal 32 VICTIM|--signal '32': not a signal"
	"--grace 1 --signal STOP VICTIM|--signal STOP stops the targets instead of asking them to exit: a run interrupted in the grace would leave them stopped; use TERM, INT, QUIT or HUP"
	"--grace 1 --signal tstp VICTIM|--signal TSTP stops the targets"
	"--grace 1 --signal 21 VICTIM|--signal TTIN stops the targets"
	"--grace 1 --signal SIGTTOU VICTIM|--signal TTOU stops the targets"
	"--dry-run --wait 1 VICTIM|--dry-run cannot tell whether the targets would exit within --wait, which only waiting shows; leave --wait out of the dry run"
	"VICTIM VICTIM:12345|is named as VICTIM and as VICTIM:12345: name it once, with the inode it must have or without one"
	"VICTIM:12345 VICTIM|is named as VICTIM and as VICTIM:12345"
	"VICTIM:7 VICTIM:12345|is named as VICTIM:7 and as VICTIM:12345"
	"--dying|--dying releases what is dying and sends nothing; it cannot go with --kill"
	"--unit=|unit '': not a unit name such as foo.service"
	"--unit a/b.service|unit 'a/b.service': not a unit name such as foo.service"
	"--unit mrelease-no-such.service|unit 'mrelease-no-such.service': no cgroup of that name in the root or the slices under /"
	"--unit mrelease-no-such|unit 'mrelease-no-such.service': no cgroup of that name"
	"--unit mrelease-no-such.target|unit 'mrelease-no-such.target': a target unit has no cgroup of its own; name the unit it starts, such as mrelease-no-such.service"
	"--cgroup /etc/passwd|cgroup '/etc/passwd': /etc/passwd is not in a cgroup file system"
	"--cgroup mrelease-no-such|cgroup 'mrelease-no-such': no such cgroup: /"
	"--cgroup 5:nosuchcontroller:/x|cgroup '5:nosuchcontroller:/x': no such cgroup"
)

@test "bad arguments: exit 2, a clear message, nothing killed" {
	start_victim -m 1
	local c args want
	for c in "${bad_cases[@]}"; do
		args=${c%%|*}
		want=${c#*|}
		# shellcheck disable=SC2086 # the case is a word list
		run -2 --separate-stderr "$MRELEASE" --kill ${args//VICTIM/$VPID}
		[[ $stderr == "mrelease: "*"${want//VICTIM/$VPID}"* ]] || fail "case '$args': stderr was: $stderr"
		assert_output ""
		lives "$VPID" || fail "case $args killed the victim"
	done
}

@test "--dying takes no pid; nothing is sent" {
	start_victim -m 1
	run -2 --separate-stderr "$MRELEASE" --dying "$VPID"
	assert_equal "${stderr%%$'\n'*}" "mrelease: --dying selects the processes itself; give no PID (narrow it with --cgroup or --unit)"
	assert_output ""
	lives "$VPID"
}

@test "pids separated by newlines in one argument, as \"\$(pgrep x)\" gives them, are taken" {
	start_victims 2 -m 1
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json "${PIDS[0]}
${PIDS[1]}"
	json_ok "[.targets[].pid] == [${PIDS[0]}, ${PIDS[1]}]"
	run -2 --separate-stderr "$MRELEASE" --kill "${PIDS[0]}
x7"
	assert_equal "${stderr%%$'\n'*}" "mrelease: 'x7': not a valid pid; to select processes by name, use: pgrep x7 | mrelease --kill -"
	lives "${PIDS[0]}"
	lives "${PIDS[1]}"
}

@test "--signal takes a name or number as kill -l writes them, in any case, with or without SIG" {
	start_victim -m 1
	local s
	for s in QUIT quit SIGQUIT sigquit 3; do
		run -0 --separate-stderr "$MRELEASE" --dry-run --kill --grace 1 --signal "$s" --json "$VPID"
		json_ok '.targets[0].status == "would kill"'
	done
	lives "$VPID"
}

@test "a cgroup path outside the cgroup mounts, as pasted on a hybrid host, gets a suggestion" {
	local base name
	need_v2
	base=$(dirname "$V2")
	# Only where the cgroup2 mount is not base itself (hybrid hosts).
	mountpoint -q "$base" && [ "$(stat -f -c %T "$base")" != tmpfs ] && skip "not a hybrid host"
	make_cgroup "$V2"
	name=$(basename "$CG")
	run -2 --separate-stderr "$MRELEASE" --kill --cgroup "$base/$name"
	assert_equal "$stderr" "mrelease: cgroup '$base/$name': not a cgroup; did you mean $V2/$name?"
	assert_output ""
}

@test "bad pids on standard input: exit 2 before anything is sent" {
	start_victim -m 1
	run -2 --separate-stderr "$MRELEASE" --kill - <<<"$VPID 12ab"
	assert_equal "$stderr" "mrelease: standard input: '12ab': not a valid pid (1..4194304, or PID:INODE)"
	run -2 --separate-stderr "$MRELEASE" --kill - <<<"$VPID 1234567890123456789012345678901234567890"
	assert_regex "$stderr" "^mrelease: standard input: '1234567890123456789012345678901\\.\\.\\.': not a valid pid"
	lives "$VPID"
}

@test "a NUL byte on standard input is refused, not taken as the end of a pid" {
	run -2 --separate-stderr bash -c 'printf "1\0009999999" | "$0" --dry-run -' "$MRELEASE"
	assert_equal "$stderr" "mrelease: standard input: '1\\0...': not a valid pid (1..4194304, or PID:INODE)"
}

@test "standard input is bounded: a word, and the number of pids" {
	run -2 --separate-stderr bash -c 'yes 5 | head -n 4194305 | "$0" --kill -' "$MRELEASE"
	assert_equal "$stderr" "mrelease: standard input: more than 4194304 pids"
}

@test "empty standard input: only 'no process selected', exit 1 (pkill's convention)" {
	run -1 --separate-stderr "$MRELEASE" --kill --json - </dev/null
	assert_equal "$stderr" "mrelease: no process selected"
	json_ok '.summary.targets == 0'
	run -1 --separate-stderr "$MRELEASE" --kill - <<<"   "
	assert_equal "$stderr" "mrelease: no process selected"
	assert_output ""
}

@test "--wait takes the next word as its value: a number after it is never a pid" {
	start_victim -m 1
	# Once --wait took an optional value, so "--wait 600" killed pid 600.
	run -2 --separate-stderr "$MRELEASE" --kill --wait 5
	assert_equal "${stderr%%$'\n'*}" "mrelease: no PID, --cgroup, --unit or --dying given"
	run -2 --separate-stderr "$MRELEASE" --kill -w 5
	assert_equal "${stderr%%$'\n'*}" "mrelease: no PID, --cgroup, --unit or --dying given"
	# Not dying and no --kill: the one target fails, and nothing is sent.
	run -1 --separate-stderr "$MRELEASE" --wait 5 --json "$VPID"
	json_ok "[.targets[].pid] == [$VPID]"
	run -1 --separate-stderr "$MRELEASE" -w5 --json "$VPID"
	json_ok "[.targets[].pid] == [$VPID]"
	lives "$VPID"
}

@test "an empty pid argument, as \"\$(pgrep x)\" gives when nothing matched, selects nothing: exit 1" {
	start_victim -m 1
	local arg
	for arg in "" "  " $'\n'; do
		run -1 --separate-stderr "$MRELEASE" --kill "$arg"
		assert_equal "$stderr" "mrelease: no process selected"
		assert_output ""
		run -1 --separate-stderr "$MRELEASE" --kill --json "$arg"
		json_ok '.summary.targets == 0'
	done
	# The same as an empty standard input.
	run -1 --separate-stderr "$MRELEASE" --kill - </dev/null
	assert_equal "$stderr" "mrelease: no process selected"
	lives "$VPID"
}

@test "a pid named with two guards, on the command line or standard input, is a usage error" {
	start_victim -m 1
	run -2 --separate-stderr "$MRELEASE" --kill "$VPID" - <<<"$VPID:12345"
	assert_equal "$stderr" "mrelease: pid $VPID is named as $VPID and as $VPID:12345: name it once, with the inode it must have or without one"
	assert_output ""
	# Named twice alike is named once.
	run -1 --separate-stderr "$MRELEASE" --json "$VPID" - <<<"$VPID"
	json_ok "[.targets[].pid] == [$VPID]"
	lives "$VPID"
}

@test "--grace needs --kill" {
	start_victim -m 1
	run -2 --separate-stderr "$MRELEASE" --grace 1 "$VPID"
	assert_equal "${stderr%%$'\n'*}" "mrelease: --grace needs --kill: without it nothing is sent"
	assert_output ""
	lives "$VPID"
}

@test "a name where a pid belongs gets a hint to use pgrep" {
	run -2 --separate-stderr "$MRELEASE" --kill python3
	assert_equal "${stderr%%$'\n'*}" "mrelease: 'python3': not a valid pid; to select processes by name, use: pgrep python3 | mrelease --kill -"
	run -2 --separate-stderr "$MRELEASE" python3
	assert_equal "${stderr%%$'\n'*}" "mrelease: 'python3': not a valid pid; to select processes by name, use: pgrep python3 | mrelease -"
}

@test "--help documents every exit status and ends with examples; -h and -? too" {
	run -0 "$MRELEASE" --help
	assert_line --regexp '^ +0 +every target released or gone'
	assert_line --regexp '^ +1 +no target released or gone, or no process selected'
	assert_line --regexp '^ +2 +usage error'
	assert_line --regexp '^ +3 +fatal error'
	assert_line --regexp '^ +64 +some targets released or gone, some not'
	assert_line --regexp '^  -h, -\?, --help +Give this help list'
	assert_line --regexp '^Examples:'
	assert_line --regexp 'kill -9 1234; mrelease 1234'
	assert_line --regexp 'mrelease --dying '
	assert_line --regexp 'mrelease --kill --unit '
	assert_line --regexp 'pgrep .* \| mrelease --kill --json -'
	assert_equal "${lines[-1]}" "See mrelease(1)."
	local help=$output
	run -0 "$MRELEASE" -h
	assert_equal "$output" "$help"
	run -0 "$MRELEASE" -?
	assert_equal "$output" "$help"
	run -0 "$MRELEASE" --version
	assert_output --regexp '^mrelease [0-9]+\.[0-9]+\.[0-9]+$'
	run -0 "$MRELEASE" --usage
	assert_output --partial 'Usage: mrelease'
	# PID is optional: --cgroup, --unit or --dying alone will do.
	assert_output --partial '[PID...]'
}
