#!/usr/bin/env bats
# unit.bats: the systemd unit as cmake --install makes it: what
# systemd-analyze verify says of it, and the unit run by a real systemd:
# the host's own, booted by systemd-nspawn in a container whose root is a
# tmpfs with the host's /usr (--volatile=yes), this build copied in.

bats_require_minimum_version 1.5.0
load common

setup() {
	: "${MR_BUILD_DIR:?set by ctest}"
	: "${MR_SOURCE_DIR:?set by ctest}"
}

teardown() {
	common_teardown
}

# The prefix the container's copy is installed for: not under /tmp, which
# the unit's PrivateTmp= hides from the service, nor /home (ProtectHome=).
CT_PREFIX=/opt/mrelease-test

# install_unit PREFIX [DESTDIR]: cmake --install of this build for PREFIX,
# under DESTDIR if given; the unit it made is left in $UNIT.
install_unit() {
	run -0 env DESTDIR="${2:-}" cmake --install "$MR_BUILD_DIR" --prefix "$1"
	UNIT=${2:-}$1/lib/systemd/system/mrelease-follow.service
	[ -f "$UNIT" ] || fail "cmake --install made no $UNIT"
}

# unit_words KEY: the words of the unit's KEY= lines, but the @groups of
# system calls, one a line.
unit_words() {
	sed -n "s/^$1=//p" "$UNIT" | tr ' ' '\n' | grep -v -e '^@' -e '^$'
}

# ct COMMAND...: run COMMAND in the container, in all its namespaces.
ct() {
	nsenter --target "$CT_INIT" --all "$@"
}

# ct_find_init: the host's pid of the container's pid 1 (the child of
# nspawn's child that is pid 1 in its own namespace), in $CT_INIT.
ct_find_init() {
	local c g
	for c in $(pgrep -P "$CT_PID"); do
		for g in "$c" $(pgrep -P "$c"); do
			grep -q $'^NSpid:\t[0-9]*\t1$' "/proc/$g/status" 2>/dev/null || continue
			CT_INIT=$g
			return 0
		done
	done
	return 1
}

# ct_booted: the container's systemd says it has finished booting; the
# state is left in $CT_STATE.
ct_booted() {
	CT_STATE=$(ct systemctl is-system-running 2>/dev/null) || true
	[[ $CT_STATE == running || $CT_STATE == degraded ]]
}

# ct_boot: boot the host's systemd in a container and wait (20 s at most)
# until it is up; skip, saying why, where it cannot boot. The container's
# /etc is its own tmpfs, which systemd fills with the presets at this
# first boot; nothing of the host's is written. nspawn's own seccomp filter
# refuses process_mrelease and perf_event_open (EPERM), and its default
# capabilities lack CAP_PERFMON and CAP_IPC_LOCK: those are let through.
# tracefs, which systemd does not mount in a container, is mounted in its
# mount namespace once it is up, as a DaemonSet mounts the host's.
# ct_stop ends it in the teardown, also on failure.
ct_boot() {
	need_root
	command -v systemd-nspawn >/dev/null || skip "needs systemd-nspawn (Debian: systemd-container)"
	command -v nsenter >/dev/null || skip "needs nsenter (Debian: util-linux)"
	[ -x /usr/lib/systemd/systemd ] || skip "needs systemd, /usr/lib/systemd/systemd, to boot"
	local cgroups=() keep=() m v1
	if [ ! -d /run/systemd/system ]; then
		# No systemd runs this host to make a scope for the container:
		# nspawn keeps the cgroup it is started in (--keep-unit) and
		# makes the container's below it (payload, supervisor). It is
		# started in one of the test's own, so that the teardown removes
		# them all: in cgroup2, and in the v1 name=systemd hierarchy
		# where there is one. In a hybrid tree nspawn takes its path
		# from cgroup2 and makes the same in name=systemd: the two
		# have the same name.
		m=$(cgroup2_mount)
		v1=$(cgroup_v1_mount name=systemd)
		if [ -n "$m" ]; then
			make_cgroup "$m" || return 1
			cgroups+=("$CG")
		fi
		if [ -n "$v1" ] && [ -n "$m" ]; then
			mkdir "$v1/${CG##*/}" || return 1
			TEST_CGROUPS+=("$v1/${CG##*/}")
			cgroups+=("$v1/${CG##*/}")
		elif [ -n "$v1" ]; then
			make_cgroup "$v1" || return 1
			cgroups+=("$CG")
		fi
		keep=(--keep-unit)
	fi
	CT_LOG=$BATS_TEST_TMPDIR/console
	at_teardown ct_stop
	(
		for m in "${cgroups[@]}"; do
			echo "$BASHPID" >"$m/cgroup.procs" || exit 1
		done
		exec systemd-nspawn "${keep[@]}" --register=no --machine="mrelease-test-$$" \
			--directory=/ --volatile=yes --boot --console=passive --private-network \
			--link-journal=no --resolv-conf=off --timezone=off \
			--system-call-filter='process_mrelease perf_event_open' \
			--capability=CAP_PERFMON,CAP_IPC_LOCK -- systemd.firstboot=off
	) </dev/null >"$CT_LOG" 2>&1 3>&- &
	CT_PID=$!
	local start=$SECONDS
	wait_until 200 ct_find_init ||
		skip "systemd-nspawn started no container: $(tail -n 5 "$CT_LOG")"
	until ct_booted; do
		if ((SECONDS - start >= 20)) || gone "$CT_PID"; then
			skip "the container did not boot within 20 s (systemctl is-system-running: ${CT_STATE:-no answer}): $(tail -n 5 "$CT_LOG")"
		fi
		sleep 0.05
	done
	ct mountpoint -q /sys/kernel/tracing || ct mount -t tracefs nodev /sys/kernel/tracing ||
		skip "cannot mount tracefs in the container"
}

# ct_stop: halt the container (nspawn passes SIGTERM on as SIGRTMIN+3 to
# its systemd), or kill it after 10 s. A killed victim held by the freezer
# holds the container's pid namespace, and so its end, until thawed.
ct_stop() {
	[ -z "${FREEZER:-}" ] || echo THAWED >"$FREEZER/freezer.state"
	[ -n "${CT_PID:-}" ] || return 0
	kill -TERM "$CT_PID" 2>/dev/null
	if ! wait_until 200 gone "$CT_PID"; then
		echo "the container did not halt within 10 s: killed" >&2
		[ -z "${CT_INIT:-}" ] || kill -KILL "$CT_INIT" 2>/dev/null
		wait_until 100 gone "$CT_PID" || kill -KILL "$CT_PID" 2>/dev/null
	fi
	wait "$CT_PID" 2>/dev/null
	CT_PID=
}

# ct_install: this build installed for $CT_PREFIX (into a DESTDIR of the
# test's), copied into the container's tree, and the unit put in its
# /etc/systemd/system; not enabled (the presets of the first boot would
# have enabled a unit that was there at boot), not started.
ct_install() {
	local dest=$BATS_TEST_TMPDIR/dest
	install_unit "$CT_PREFIX" "$dest"
	tar -C "$dest" -cf - "${CT_PREFIX#/}" | ct tar -C / -xf - ||
		fail "could not copy the install into the container"
	ct install -m 644 /dev/stdin /etc/systemd/system/mrelease-follow.service <"$UNIT"
	run -0 ct systemctl daemon-reload
}

# ct_json TYPE: the service's JSON records of TYPE, in $output, one a
# line, from its journal (where systemd's own lines on the unit, and its
# stderr, are text); false while there is none.
ct_json() {
	output=$(ct journalctl -u mrelease-follow -o cat --no-pager |
		grep '^{' | jq -c --arg t "$1" 'select(.type == $t)' 2>/dev/null)
	[ -n "$output" ]
}

# ct_host_pid PID: the host's pid of the container's process PID.
ct_host_pid() {
	local ns f
	ns=$(readlink "/proc/$CT_INIT/ns/pid")
	for f in /proc/[0-9]*; do
		[ "$(readlink "$f/ns/pid" 2>/dev/null)" = "$ns" ] || continue
		grep -q $'^NSpid:\t[0-9]*\t'"$1"'$' "$f/status" 2>/dev/null || continue
		echo "${f#/proc/}"
		return 0
	done
	return 1
}

@test "the unit made for a prefix names the binary installed there and passes systemd-analyze verify" {
	command -v systemd-analyze >/dev/null || skip "needs systemd-analyze (Debian: systemd)"
	local prefix=$BATS_TEST_TMPDIR/prefix w
	install_unit "$prefix"
	[ -x "$prefix/bin/mrelease" ]
	run -0 grep '^ExecStart=' "$UNIT"
	assert_output "ExecStart=$prefix/bin/mrelease --follow --json --nice -10"
	run -0 --separate-stderr systemd-analyze verify --man=no "$UNIT"
	assert_equal "$stderr" ""
	# A system call that systemd does not know is dropped and said only at
	# debug level (on stderr); a capability it does not know is dropped
	# unsaid, and only the unit as systemd read it, dumped on stdout at
	# that level, shows the set.
	run -0 --separate-stderr env SYSTEMD_LOG_LEVEL=debug systemd-analyze verify --man=no "$UNIT"
	for w in $(unit_words SystemCallFilter); do
		! grep -q -- "ignoring: $w\$" <<<"$stderr" || fail "systemd does not know the system call $w"
	done
	w=$(grep -a -P -m1 -o '^\t+CapabilityBoundingSet: \K.*' <<<"$output") ||
		fail "no CapabilityBoundingSet in the unit that systemd-analyze dumped"
	assert_equal "$(tr ' ' '\n' <<<"$w" | sort | xargs)" \
		"$(unit_words CapabilityBoundingSet | tr '[:upper:]' '[:lower:]' | sort | xargs)"
}

@test "the unit grants CAP_PERFMON and perf_event_open, never CAP_KILL or CAP_SYS_ADMIN, nor the rest of @debug" {
	UNIT=$MR_SOURCE_DIR/packaging/mrelease-follow.service.in
	run -0 unit_words CapabilityBoundingSet
	assert_line CAP_PERFMON
	refute_line CAP_KILL
	refute_line CAP_SYS_ADMIN
	run -0 unit_words SystemCallFilter
	assert_line perf_event_open
	assert_line process_mrelease
	run -1 grep -E '^SystemCallFilter=.*@debug' "$UNIT"
}

@test "under systemd: the unit starts as installed, stays active, and its journal opens with the JSON start record" {
	ct_boot
	ct_install
	run -0 ct systemctl start mrelease-follow
	sleep 2
	run -0 ct systemctl is-active mrelease-follow
	assert_output active
	# Restart=always would hide a service that failed and came back.
	run -0 ct systemctl show -p NRestarts --value mrelease-follow
	assert_output 0
	# What systemd made of the grants.
	run -0 ct systemctl show -p CapabilityBoundingSet --value mrelease-follow
	assert_equal "$(tr ' ' '\n' <<<"$output" | sort | xargs)" \
		"cap_ipc_lock cap_perfmon cap_sys_nice cap_sys_ptrace cap_sys_resource"
	run -0 ct systemctl show -p SystemCallFilter --value mrelease-follow
	[[ $output != '~'* ]] || fail "SystemCallFilter is a deny list: ${output:0:80}..."
	run -0 tr ' ' '\n' <<<"$output"
	assert_line perf_event_open
	assert_line process_mrelease
	refute_line ptrace

	# The first JSON record is the start record. Inside the container, a
	# pid namespace of its own, the signals source (whose tracepoint gives
	# the host's pids) is declined; pressure is in use wherever PSI is.
	wait_until 100 ct_json start || {
		run ct journalctl -u mrelease-follow -o cat --no-pager
		fail "no JSON start record in the journal: $output"
	}
	output=$(ct journalctl -u mrelease-follow -o cat --no-pager | grep -m1 '^{')
	json_ok '.type == "start"'
	json_ok '(.sources | type) == "array" and (.declined | type) == "object"'
	json_ok '.sources - ["signals", "pressure", "timer"] == []'
	json_ok '(.declined | keys) - ["signals", "pressure", "timer"] == []'
	json_ok '[.sources[] as $s | .declined | has($s)] | any | not'
	json_ok '(.sources | index("signals")) == null'
	json_ok '.declined.signals | type == "string" and test("pid namespace"; "i")'
	if ct test -r /proc/pressure/memory; then
		json_ok '(.sources | index("pressure")) != null'
	else
		json_ok '.declined.pressure | type == "string"'
	fi
}

@test "under systemd: the service releases a process killed in the container (woken by --interval 0.2, from a drop-in); the man page's journal recipe reads every line, a warning among them" {
	ct_boot
	ct_install
	# Without pressure nothing but a timer wakes it: the drop-in adds one,
	# and a --metrics file it cannot write, for a warning in the stream.
	printf '[Service]\nExecStart=\n%s --interval 0.2 --metrics /nonexistent/mrelease.prom\n' \
		"$(grep '^ExecStart=' "$UNIT")" |
		ct install -D -m 644 /dev/stdin /etc/systemd/system/mrelease-follow.service.d/interval.conf
	run -0 ct systemctl daemon-reload
	run -0 ct systemctl start mrelease-follow
	# The victim, a service of the container's.
	ct install -m 755 /dev/stdin /opt/mr-victim <"$MR_VICTIM"
	run -0 ct systemd-run --unit=mr-victim --quiet --collect /opt/mr-victim -m 16 -r /run/mr-victim.ready
	wait_until 200 ct test -s /run/mr-victim.ready || fail "the victim did not get ready"
	local cpid
	cpid=$(ct cat /run/mr-victim.ready)
	cpid=${cpid%% *}
	VPID=$(ct_host_pid "$cpid") || fail "no host pid for the container's pid $cpid"
	assert_rss_over "$VPID" 15000
	freeze_victim "$VPID"
	kill -9 "$VPID"
	wait_until 100 ct_json release || {
		run ct journalctl -u mrelease-follow -o cat --no-pager
		fail "no release record within 5 s: $output"
	}
	json_ok ".pid == $cpid and .status == \"released\""
	wait_until 20 rss_under "$VPID" 1024 || assert_rss_under "$VPID" 1024
	run -0 ct systemctl is-active mrelease-follow
	assert_output active
	# The recipe of the man page, as it is written there: jq reads the
	# whole stream, the warning a record of it, and finds the release.
	local recipe
	recipe=$(grep -A1 -F 'journalctl \-u mrelease\-follow \-o cat _TRANSPORT=stdout' \
		"$MR_SOURCE_DIR/man/mrelease.1" | head -n 1 | sed -e 's/\\-/-/g' -e 's/\\(aq/'"'"'/g')
	[ -n "$recipe" ] || fail "no journal recipe in the man page"
	run -0 ct sh -c "$recipe"
	json_ok ".pid == $cpid and .status == \"released\""
	run -0 ct sh -c "journalctl -u mrelease-follow -o cat _TRANSPORT=stdout | jq -c 'select(.type == \"warning\") | .message'"
	assert_output --partial '"--metrics /nonexistent/mrelease.prom: No such file or directory"'
}

@test "under the unit's sandbox, perf_event_open opens signal:signal_generate on every CPU (refused EACCES where perf_event_paranoid > 2)" {
	command -v python3 >/dev/null || skip "needs python3"
	local paranoid
	paranoid=$(cat /proc/sys/kernel/perf_event_paranoid) || skip "no perf events in this kernel"
	ct_boot
	ct_install
	ct install -m 644 /dev/stdin /opt/perf-probe.py <"$MR_SOURCE_DIR/tests/perf-probe.py"
	# The installed unit, its ExecStart the probe's, run once.
	sed -e 's|^ExecStart=.*|ExecStart=/usr/bin/python3 /opt/perf-probe.py|' \
		-e 's/^Type=.*/Type=oneshot/' -e '/^Restart/d' "$UNIT" |
		ct install -m 644 /dev/stdin /etc/systemd/system/mrelease-perf-probe.service
	run -0 ct systemctl daemon-reload
	run -0 ct systemctl start mrelease-perf-probe
	run -0 ct journalctl -u mrelease-perf-probe -o cat --no-pager
	assert_line --regexp '^/sys/kernel/tracing/events/signal/signal_generate/id: [0-9]+$'
	assert_line --regexp '^cpu 0: '
	# Where perf_event_paranoid is above 2 (Debian's and Ubuntu's kernels)
	# only CAP_SYS_ADMIN may call it, which the unit does not have.
	local want='ok' bad
	((paranoid <= 2)) || want='errno 13 \(Permission denied\)'
	bad=$(grep '^cpu ' <<<"$output" | grep -v -E "^cpu [0-9]+: $want\$") || true
	[ -z "$bad" ] || fail "perf_event_paranoid is $paranoid, and not every CPU gave '$want': $bad"
}
