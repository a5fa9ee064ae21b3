#!/usr/bin/env bats
# examples.bats: every shell example in README.md and in the EXAMPLES of
# mrelease(1) is run, with this test's own victims, cgroups and units put
# in for the pids and names it shows, so that no example can rot. An
# example this file does not know fails the test: a new one needs a way to
# be run here (or a stated reason why it cannot be).

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
	need_v2
	# "mrelease" in an example is the one under test.
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	ln -sf "$MRELEASE" "$BATS_TEST_TMPDIR/bin/mrelease"
	export PATH="$BATS_TEST_TMPDIR/bin:$PATH"
}

# man_examples: each .EX block of the man page, as text, with its roff
# escapes undone, blocks separated by a line "----".
man_examples() {
	awk '/^\.EX/ { f = 1; next } /^\.EE/ { f = 0; print "----"; next } f' \
		"$MR_SOURCE_DIR/man/mrelease.1" |
		sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\(ha/^/g' -e 's/\\e/\\/g' \
			-e 's/\\f[BIR]//g'
}

# readme_examples: the commands of README.md's code blocks, one a line: every
# line of an sh block, less its comment; in other blocks, the lines shown
# after a "# " prompt.
readme_examples() {
	awk '/^```/ { if (f) f = 0; else { f = 1; sh = ($0 == "```sh") }; next }
	     f && sh { sub(/ +# .*$/, ""); print; next }
	     f && /^# / { print substr($0, 3) }' "$MR_SOURCE_DIR/README.md"
}

# A frozen victim killed already (dying, its memory held): VPID.
dying_victim() {
	start_victim -m "${1:-8}"
	freeze_victim "$VPID"
	kill -9 "$VPID"
}

# A unit's cgroup, NAME in a test slice of the cgroup2 mount (where the
# system manager keeps its units), holding a new victim ($VPID); UNIT_CG is
# its path.
unit_with_victim() {
	local slice=$V2/mrelease-test-$$-$RANDOM.slice
	mkdir "$slice"
	TEST_CGROUPS+=("$slice")
	UNIT_CG=$slice/$1
	mkdir "$UNIT_CG"
	TEST_CGROUPS+=("$UNIT_CG")
	start_victim -m 4
	join "$UNIT_CG" "$VPID"
}

# run_example TEXT: run one example as this test stands it up, or skip it
# with the reason; fail on one that is not known.
run_example() {
	local ex=$1 script=$BATS_TEST_TMPDIR/example.sh
	case $ex in
	$'kill -9 1234\nmrelease 1234')
		start_victim -m 8
		freeze_victim "$VPID"
		run -0 --separate-stderr bash -c "${ex//1234/$VPID}"
		assert_rss_under "$VPID" 1024 ;;
	'mrelease --dying')
		freezer_cgroup
		run -0 --separate-stderr dying_in_pidns "$ex"
		dying_rss
		((DYING_KB < 1024)) || fail "the dying victim still holds $DYING_KB KiB" ;;
	$'mrelease --kill --grace 5 1234\nmrelease --kill --grace 10 --signal QUIT --unit nginx.service')
		start_victim -m 4
		local a=$VPID
		unit_with_victim "mrelease-test-$$-nginx.service"
		ex=${ex//1234/$a}
		run -0 --separate-stderr bash -c "${ex//nginx.service/mrelease-test-$$-nginx.service}"
		wait_gone "$a" "$VPID" ;;
	'mrelease --kill --unit batch.service')
		unit_with_victim "mrelease-test-$$-batch.service"
		run -0 --separate-stderr bash -c "${ex//batch.service/mrelease-test-$$-batch.service}"
		wait_gone "$VPID" ;;
	$'$ grep \'^0::\' /proc/1234/cgroup\n0::/system.slice/batch.service\n$ mrelease --dry-run --kill --cgroup 0::/system.slice/batch.service')
		unit_with_victim "mrelease-test-$$-batch.service"
		run -0 grep '^0::' "/proc/$VPID/cgroup"
		assert_output "0::${UNIT_CG#"$V2"}"
		run -0 --separate-stderr mrelease --dry-run --kill --cgroup "$output"
		assert_line --regexp "^ *$VPID mr-victim .* would kill\$"
		lives "$VPID" ;;
	*"docker inspect"*)
		skip "needs Docker" ;;
	'#!/bin/sh'$'\n'"out=\$(pgrep -f 'batch-worker'"*)
		# A victim whose command line says batch-worker.
		ln -s "$MR_VICTIM" "$BATS_TEST_TMPDIR/bin/batch-worker"
		local save=$MR_VICTIM
		MR_VICTIM=$BATS_TEST_TMPDIR/bin/batch-worker start_victim -m 4
		MR_VICTIM=$save
		printf '%s\n' "$ex" >"$script"
		run -0 --separate-stderr sh "$script"
		assert_output --regexp '^freed [0-9]+ KiB$'
		wait_gone "$VPID" ;;
	'mrelease --dying --quiet --nice -10')
		freezer_cgroup
		run -0 --separate-stderr dying_in_pidns "$ex"
		assert_output ""
		dying_rss
		((DYING_KB < 1024)) || fail "the dying victim still holds $DYING_KB KiB" ;;
	'mrelease --kill --quiet --nice -10 "$pid"')
		start_victim -m 8
		freeze_victim "$VPID"
		run -0 --separate-stderr env pid="$VPID" bash -c "$ex"
		assert_output ""
		assert_rss_under "$VPID" 1024
		# An empty variable selects nothing.
		run -1 --separate-stderr env pid= bash -c "$ex"
		assert_equal "$stderr" "mrelease: no process selected" ;;
	'mrelease --follow --interval 0.5')
		freezer_cgroup
		run -0 --separate-stderr dying_in_pidns '
			"$1" --follow --interval 0.5 >"$3/out" & F=$!
			for ((i = 0; i < 60; i++)); do
				grep -q " released$" "$3/out" && break
				sleep 0.05
			done
			kill -TERM $F
			wait $F'
		dying_rss
		((DYING_KB < 1024)) || fail "the dying victim still holds $DYING_KB KiB"
		run -0 cat "$BATS_TEST_TMPDIR/out"
		# Sizes as the victim's build makes them (larger under ASan).
		assert_line --index 0 --regexp '^[0-9TZ:-]+ +following: waking on pressure and the timer; not on signals: '
		assert_line --index 2 --regexp '^[0-9TZ:-]+ +[0-9]+ mr-victim +[1-9][0-9.]*M +[1-9][0-9.]*M +[0-9.]+[mu]?s released$'
		assert_line --regexp ' sweeps? \(0 on signals, [0-9]+ on pressure, [0-9]+ on the timer\): 1 released, 0 failed, ' ;;
	'mrelease --follow --cgroup batch')
		# In the host's pid namespace, on a cgroup of the test's own in
		# place of batch: a frozen victim killed by the test.
		need_tracefs
		cgroup_with_victim "$V2" -m 16
		freeze_victim "$VPID"
		bg "$MRELEASE" --follow --cgroup "$CG"
		wait_until 200 grep -q '^WHEN' "$BATS_TEST_TMPDIR/bg.out"
		kill -9 "$VPID"
		wait_until 100 grep -q ' released$' "$BATS_TEST_TMPDIR/bg.out"
		kill -TERM "$BG_PID"
		bg_done 0
		run -0 cat "$BATS_TEST_TMPDIR/bg.out"
		assert_line --index 0 --regexp '^[0-9TZ:-]+ +following: waking on signals and pressure; not on the timer: no --interval$'
		assert_line --index 2 --regexp "^[0-9TZ:-]+ +$VPID mr-victim +[1-9][0-9.]*M +[1-9][0-9.]*M +[0-9.]+[mu]?s released\$"
		assert_line --regexp ' 2 sweeps \(1 on signals, 0 on pressure, 0 on the timer\): 1 released, 0 failed, '
		assert_rss_under "$VPID" 1024 ;;
	'# mrelease-follow.service: '*)
		# The unit the man page shows is the one the package installs.
		assert_equal "$ex" "$(sed 's|@MR_BINDIR@|/usr/bin|' "$MR_SOURCE_DIR/packaging/mrelease-follow.service.in")" ;;
	"journalctl -u mrelease-follow -o cat _TRANSPORT=stdout | jq -c 'select(.type == \"release\")'")
		skip "needs the unit running under systemd: unit.bats runs it in a container" ;;
	'[Service]'$'\n''ExecStart='$'\n''ExecStart=/usr/bin/mrelease '*)
		# The drop-in's command runs as it says, and keeps the file.
		local cmd prom=$BATS_TEST_TMPDIR/mrelease.prom
		cmd=$(sed -n 's|^ExecStart=/usr/bin/mrelease ||p' <<<"$ex")
		cmd=${cmd//\/var\/lib\/node_exporter\/textfile_collector\/mrelease.prom/$prom}
		grep -qx 'ReadWritePaths=/var/lib/node_exporter/textfile_collector' <<<"$ex"
		run -0 --separate-stderr in_pidns '
			"$1" '"$cmd"' >/dev/null & F=$!
			wait_until 100 test -s "$3/mrelease.prom" || exit 96
			kill -TERM $F
			wait $F'
		grep -q '^mrelease_released_total 0$' "$prom" ;;
	'apiVersion: apps/v1'*)
		# Not a cluster here: the manifest parses, and runs what it says.
		python3 -c 'import yaml' 2>/dev/null || skip "needs python3-yaml"
		run -0 python3 -c '
import sys, yaml
d = yaml.safe_load(sys.stdin)
spec = d["spec"]["template"]["spec"]
c = spec["containers"][0]
assert d["kind"] == "DaemonSet" and spec["hostPID"] is True
assert spec["tolerations"] == [{"operator": "Exists"}]
m = c["volumeMounts"][0]
v = spec["volumes"][0]
assert m["mountPath"] == "/sys/kernel/tracing" and m["readOnly"] is True
assert v["name"] == m["name"] and v["hostPath"]["path"] == "/sys/kernel/tracing"
print(" ".join(c["args"]))
print(" ".join(c["securityContext"]["capabilities"]["add"]))' <<<"$ex"
		assert_line --index 0 -- "--follow --json --nice -10"
		assert_line --index 1 "IPC_LOCK SYS_RESOURCE SYS_NICE SYS_PTRACE PERFMON" ;;
	'systemd-run --scope --quiet mrelease --kill --unit batch.service')
		[ -d /run/systemd/system ] || skip "needs systemd as the init system"
		unit_with_victim "mrelease-test-$$-batch.service"
		run -0 --separate-stderr bash -c "${ex//batch.service/mrelease-test-$$-batch.service}"
		wait_gone "$VPID" ;;
	'bash tests/demo.sh' | 'ctest --test-dir build --output-on-failure')
		skip "the quick start itself: run from a fresh clone, as CI does" ;;
	'cmake -S . -B build -DBUILD_TESTING=OFF && cmake --build build' | \
		'cmake -S . -B build && cmake --build build' | \
		'cmake --install build --prefix /usr/local' | \
		'cd build && cpack' | 'apt install ./mrelease_'*'_amd64.deb')
		skip "building and installing: install.bats" ;;
	'tests/bench/run '*)
		skip "the benchmark: tests/bench/README.md" ;;
	'build/mrelease --kill '*)
		skip "what tests/demo.sh prints" ;;
	'mrelease --kill '[0-9]*' '[0-9]*)
		start_victims 2 -m 8
		freeze_victim "${PIDS[@]}"
		run -0 --separate-stderr mrelease --kill "${PIDS[@]}"
		assert_line --regexp "^ *sum 2 targets .* released [0-9.]+M, exited 0\$"
		assert_rss_under "${PIDS[0]}" 1024
		assert_rss_under "${PIDS[1]}" 1024 ;;
	'CG=/sys/fs/cgroup/unified/mrelease-readme')
		;;
	"bash -c 'echo \$\$ > \"\$1/cgroup.procs\"; mrelease --kill --cgroup \"\$1\"; echo \"exit \$?\"' bash \"\$CG\"")
		# The echo keeps bash the parent (bash runs a last command in its
		# own place): mrelease refuses the cgroup for holding an ancestor.
		cgroup_with_victim "$V2" -m 4
		run -0 --separate-stderr env CG="$CG" bash -c "$ex"
		assert_output "exit 2"
		assert_regex "$stderr" "holds pid [0-9]+ \\(bash\\), an ancestor of mrelease: refusing to kill it"
		lives "$VPID" ;;
	'mrelease --kill --verbose --cgroup "$CG"')
		cgroup_with_victim "$V2" -m 4
		run -0 --separate-stderr env CG="$CG" bash -c "$ex"
		assert_regex "$stderr" "killed with cgroup.kill"
		wait_gone "$VPID" ;;
	'mrelease --kill --json '[0-9]*' | jq -c .targets[0],.summary')
		start_victim -m 8
		freeze_victim "$VPID"
		run -0 --separate-stderr bash -c "mrelease --kill --json $VPID | jq -c .targets[0],.summary"
		assert_line --regexp "^\\{\"pid\":$VPID,.*\"status\":\"released\""
		assert_line --regexp '^\{"targets":1,"released":1,' ;;
	'mrelease [OPTION...] [PID...]'*)
		skip "the usage: checked against --help in docs.bats" ;;
	*)
		fail "an example no test runs; teach examples.bats to run it: $ex" ;;
	esac
}

# example_runs TEXT: run_example in a subshell of its own, which cleans up
# after itself, so that a skip there ends that example only; one that
# fails is added to FAILED_EXAMPLES, and the others still run. The
# subshell sets errexit and is not the left side of || (nor is this
# function): there bash ignores errexit, even one set inside, and every
# assertion but an example's last command would be passed over.
FAILED_EXAMPLES=()
example_runs() {
	local rc
	set +e
	(
		set -e
		trap common_teardown EXIT
		run_example "$1"
	)
	rc=$?
	set -e
	((rc == 0)) || FAILED_EXAMPLES+=("$1")
}

# no_failed_examples: fail, naming each, if an example failed.
no_failed_examples() {
	((${#FAILED_EXAMPLES[@]} == 0)) ||
		fail "$(printf 'example failed: %s\n' "${FAILED_EXAMPLES[@]}")"
}

@test "every example of the man page runs as it says" {
	local block=() line n=0
	while IFS= read -r line; do
		if [ "$line" != ---- ]; then
			block+=("$line")
			continue
		fi
		local text
		text=$(printf '%s\n' "${block[@]}")
		block=()
		example_runs "$text"
		n=$((n + 1))
	done < <(man_examples)
	# (A page whose examples could not be found would pass on nothing.)
	[ "$n" -ge 9 ] || fail "only $n examples found in the man page"
	no_failed_examples
}

@test "every example of the README runs as it says" {
	local line n=0
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		example_runs "$line"
		n=$((n + 1))
	done < <(readme_examples)
	[ "$n" -ge 13 ] || fail "only $n examples found in the README"
	no_failed_examples
}
