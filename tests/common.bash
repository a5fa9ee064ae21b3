# common.bash: shared set-up for the bats files: assertions, victims, clean-up.
load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

: "${MRELEASE:?set MRELEASE to the mrelease binary (ctest does)}"
: "${MR_VICTIM:?set MR_VICTIM to the mr-victim helper (ctest does)}"

VICTIMS=()

need_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
}

# has_json: $output is one JSON object (jq -e alone passes on empty input).
has_json() {
	jq -se 'length == 1 and (.[0] | type) == "object"' <<<"$output" >/dev/null 2>&1 ||
		fail "expected one JSON document, got: ${output:-nothing}"
}

# json_get FILTER: apply a jq filter to the JSON mrelease printed. (It
# returns at once without a document: where errexit is off, as in
# "json_get ... || fail", jq -e would pass on empty input.)
json_get() {
	has_json || return 1
	jq -er "$1" <<<"$output"
}

# json_ok FILTER: the JSON mrelease printed satisfies FILTER; on failure
# the whole document is shown, not only the line.
json_ok() {
	has_json || return 1
	jq -e "$1" <<<"$output" >/dev/null ||
		fail "$(printf 'JSON fails %s:\n%s' "$1" "$(jq . <<<"$output")")"
}

# shim_env SPEC: SHIM_ENV, a command prefix that runs a program with one
# call held (tests/shim.c: CALL:PATTERN:MS:WHEN[;...]); SHIM_FIRED lists
# the holds that happened. Only the program run with it is touched.
shim_env() {
	SHIM_FIRED=$BATS_TEST_TMPDIR/shim.fired
	rm -f "$SHIM_FIRED"
	SHIM_ENV=(env LD_PRELOAD="$MR_SHIM_LIB" MR_SHIM="$1" MR_SHIM_FIRED="$SHIM_FIRED"
		ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0)
}

# shim_fired [N]: the hold happened (at least N times): a race test whose
# delay never fired proves nothing, and fails.
shim_fired() {
	local n
	n=$(wc -l <"$SHIM_FIRED" 2>/dev/null || echo 0)
	[ "$n" -ge "${1:-1}" ] || fail "the injected hold fired $n times, not ${1:-1}: $(cat "$SHIM_FIRED" 2>/dev/null)"
}

# shim_wait: wait (5 s at most) until the hold has begun, for a test that
# acts while the run is held; fail if it never does.
shim_wait() {
	wait_until 100 [ -s "$SHIM_FIRED" ] || fail "the injected hold did not fire within 5 s"
}

# wait_until TRIES COMMAND...: poll COMMAND every 0.05 s, at most TRIES
# times; false if it never succeeded.
wait_until() {
	local tries=$1 i
	shift
	for ((i = 0; i < tries; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# bg COMMAND...: run COMMAND in the background, its stdout and stderr kept
# for bg_done; BG_PID is its pid (killed by the teardown if still there).
bg() {
	"$@" >"$BATS_TEST_TMPDIR/bg.out" 2>"$BATS_TEST_TMPDIR/bg.err" 3>&- &
	BG_PID=$!
}

# bg_done [STATUS]: the background command has ended (within 30 s), with
# STATUS if given; its status in BG_STATUS, its output in $output and
# $stderr.
bg_done() {
	wait_until 600 gone "$BG_PID" || {
		fail "still running: $(cat "$BATS_TEST_TMPDIR/bg.err")"
		return 1
	}
	BG_STATUS=0
	wait "$BG_PID" || BG_STATUS=$?
	BG_PID=
	output=$(cat "$BATS_TEST_TMPDIR/bg.out")
	stderr=$(cat "$BATS_TEST_TMPDIR/bg.err")
	[ -z "${1:-}" ] || [ "$BG_STATUS" = "$1" ] ||
		fail "exit status $BG_STATUS, not $1; stderr: $stderr; stdout: $output"
}

# in_pidns SCRIPT [ARG...]: run a bash script in a pid namespace of its
# own, where pid 1 and every pid are the test's own; the script gets
# $1 = mrelease, $2 = the victim helper, $3 = the test's temporary
# directory, then the ARGs, and can call wait_until and lives (declared
# in it).
in_pidns() {
	unshare --pid --fork --mount-proc env PATH="$PATH" bash -c \
		"$(declare -f wait_until sigkill_pending lives)
$1" bash "$MRELEASE" "$MR_VICTIM" "$BATS_TEST_TMPDIR" "${@:2}"
}

# frozen_in_pidns SCRIPT [ARG...]: --dying and --follow take every dying
# process they can see, so they run where the only ones are the test's.
# SCRIPT runs as in in_pidns, with $D a victim of 16 MiB and $L one of
# 4 MiB, both frozen, neither killed; $4 is the freezer, then the ARGs.
# Their VmRSS in KiB as SCRIPT left them ("none" for one that had none to
# read) is then in $BATS_TEST_TMPDIR/rss, for dying_rss, and they are
# thawed, so that the namespace can end. Call freezer_cgroup first (not
# within run, which is a subshell).
frozen_in_pidns() {
	[ -n "${FREEZER:-}" ] || return 1
	in_pidns '
		rss() {
			local v
			v=$(awk '\''/^VmRSS/ { print $2 }'\'' "/proc/$1/status" 2>/dev/null)
			echo "${v:-none}"
		}
		trap '\''echo "$(rss $D) $(rss $L)" >"$3/rss"
			echo THAWED >"$4/freezer.state"'\'' EXIT
		"$2" -m 16 -r "$3/d" & D=$!
		"$2" -m 4 -r "$3/l" & L=$!
		wait_until 200 test -s "$3/d" -a -s "$3/l" || exit 97
		echo $D >"$4/cgroup.procs" && echo $L >"$4/cgroup.procs" &&
			echo FROZEN >"$4/freezer.state" || exit 99
		wait_until 100 grep -qx FROZEN "$4/freezer.state" || exit 98
		'"$1" "$FREEZER" "${@:2}"
}

# dying_in_pidns SCRIPT [ARG...]: as frozen_in_pidns, with $D sent SIGKILL
# first (dying, its memory held).
dying_in_pidns() {
	frozen_in_pidns 'kill -9 $D
		'"$1" "${@:2}"
}

# dying_rss: the VmRSS that frozen_in_pidns read for its victims, in
# DYING_KB and LIVING_KB; fail if either had none to read (a victim gone
# by then shows nothing about a release).
dying_rss() {
	read -r DYING_KB LIVING_KB <"$BATS_TEST_TMPDIR/rss" || true
	[[ $DYING_KB =~ ^[0-9]+$ && $LIVING_KB =~ ^[0-9]+$ ]] ||
		fail "no VmRSS read for the victims of frozen_in_pidns: '$(cat "$BATS_TEST_TMPDIR/rss")'"
}

# has_cap N: the tests run with capability number N (a sandbox may lack
# some, even for root; CI's machine may have them).
has_cap() {
	(($(printf '%d' "0x$(awk '/^CapEff:/ { print $2 }' /proc/self/status)") & (1 << $1)))
}

# without_cap NAME COMMAND...: run COMMAND as root without capability NAME.
without_cap() {
	setpriv --inh-caps=-"$1" --bounding-set=-"$1" "${@:2}"
}

# std_fds_only COMMAND...: run COMMAND with only descriptors 0, 1 and 2
# open, so that what bats and its caller leave open (which differs from one
# machine to another) does not change how many descriptors are free.
std_fds_only() {
	(
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			((fd > 2)) && eval "exec $fd>&-"
		done
		"$@"
	)
}

# as_nobody COMMAND...: run COMMAND as the unprivileged user nobody.
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}

# start_victim [victim options]: start a victim in the background and
# wait until it has touched its memory; its pid is left in $VPID, and the
# other pid or tid it reports (-t, -d, -x, -s, -z) in $VOTHER.
start_victim() {
	local ready i
	ready=$(mktemp -u "$BATS_TEST_TMPDIR/ready.XXXXXX")
	"$MR_VICTIM" -r "$ready" "$@" </dev/null >/dev/null 3>&- &
	VPID=$!
	VICTIMS+=("$VPID")
	for ((i = 0; i < 600; i++)); do
		[ -s "$ready" ] && VOTHER=$(cut -s -d' ' -f2 "$ready") && return 0
		kill -0 "$VPID" 2>/dev/null || break
		sleep 0.05
	done
	echo "victim $VPID did not get ready" >&2
	return 1
}

# start_victims N [victim options]: N victims, their pids in PIDS.
start_victims() {
	local n=$1 i
	shift
	PIDS=()
	for ((i = 0; i < n; i++)); do
		start_victim "$@" || return 1
		PIDS+=("$VPID")
	done
}

# is_victim PID: true while PID is still one of our victims, so that
# clean-up never signals a recycled pid.
is_victim() {
	[ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$(readlink -f "$MR_VICTIM")" ]
}

# gone PID: PID has exited: there is no such process, or it is a zombie
# that is not reaped yet.
gone() {
	local state
	kill -0 "$1" 2>/dev/null || return 0
	state=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || true
	[[ $state == [ZX] ]] || ! kill -0 "$1" 2>/dev/null
}

# wait_gone PID...: each PID exits within 5 s; fail, naming it, if one
# does not.
wait_gone() {
	local p
	for p in "$@"; do
		wait_until 100 gone "$p" || {
			fail "pid $p has not exited"
			return 1
		}
	done
}

# rss_kb PID: VmRSS of PID (or PID/task/TID) in KiB. Nothing, and false,
# where there is none to read: a process that is gone, or a zombie, has no
# address space, and must not read as 0, which a check that its memory was
# released would take for a release.
rss_kb() {
	local v
	v=$(awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$v" ] && echo "$v"
}

# sigkill_pending PID: SIGKILL (bit 8) waits for PID or its group.
sigkill_pending() {
	local mask
	for mask in $(awk '/^(SigPnd|ShdPnd):/ { print $2 }' "/proc/$1/status"); do
		(((0x$mask & 0x100) != 0)) && return 0
	done
	return 1
}

# lives PID: PID runs on, and no SIGKILL was sent to it: it is there, not
# a zombie, not exiting, and no SIGKILL is pending for it. Checked right
# after a run has returned, it shows that the run killed nothing there,
# with no time given for a kill to act: a SIGKILL the kernel accepted is
# pending, being acted on (PF_EXITING) or done by then.
lives() {
	local stat
	local -a f
	! sigkill_pending "$1" 2>/dev/null || return 1
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	read -ra f <<<"${stat##*) }"
	# f[0] is the state, f[6] the flags, where PF_EXITING is 0x4.
	[[ ${f[0]} != [ZX] ]] && ((!(f[6] & 0x4)))
}

# rss_under PID KB: PID still has an address space, and under KB KiB of it
# is resident; false for a process that is gone or a zombie. A released
# victim held by the v1 freezer passes; one that merely exited does not.
# (For wait_until too, which must read it again on each try.)
rss_under() {
	local v
	v=$(rss_kb "$1") && ((v < $2))
}

# assert_rss_under PID KB: as rss_under, failing the test with what was
# read. (Each failure returns at once, so that where errexit is off, as
# under run, an empty reading is never compared as a 0.)
assert_rss_under() {
	local v
	v=$(rss_kb "$1") || {
		fail "pid $1 has no address space to read (gone, or a zombie): nothing shows a release"
		return 1
	}
	((v < $2)) || fail "pid $1 holds $v KiB, not under $2"
}

# assert_rss_over PID KB: PID has more than KB KiB resident.
assert_rss_over() {
	local v
	v=$(rss_kb "$1") || {
		fail "pid $1 has no address space to read (gone, or a zombie)"
		return 1
	}
	((v > $2)) || fail "pid $1 holds $v KiB, not over $2"
}

kill_victims() {
	local p
	for p in "${VICTIMS[@]}"; do
		{ is_victim "$p" && kill -9 "$p"; } 2>/dev/null || true
	done
	VICTIMS=()
	return 0
}

need_strace() {
	command -v strace >/dev/null || skip "needs strace"
}

# need_v2: skip without a usable cgroup2 mount in $V2.
need_v2() {
	[ -n "${V2:-}" ] || skip "needs a cgroup2 mount"
	[ -e "$V2/cgroup.subtree_control" ] || skip "cgroup2 at $V2 is not usable"
}

# join CGROUP PID...: move the pids into the cgroup.
join() {
	local cg=$1 p
	shift
	for p in "$@"; do
		echo "$p" >"$cg/cgroup.procs"
	done
}

# cgroup_mounts [TYPE [CONTROLLER]]: the mount points of the cgroup file
# systems, read from /proc/self/mountinfo (never assumed), one a line in
# its order: every one, cgroup2 and v1; those of TYPE (cgroup2, or cgroup
# for v1); or the v1 hierarchy that has CONTROLLER.
cgroup_mounts() {
	awk -v type="${1:-}" -v c="${2:-}" '{
		for (i = 7; i <= NF; i++) if ($i == "-") break
		if ($(i + 1) != "cgroup" && $(i + 1) != "cgroup2") next
		if (type != "" && $(i + 1) != type) next
		if (c != "" && ("," $(i + 3) ",") !~ ("," c ",")) next
		print $5 }' /proc/self/mountinfo
}

# The mount point of the cgroup2 hierarchy.
cgroup2_mount() {
	cgroup_mounts cgroup2 | head -n 1
}

# cgroup_v1_mount CONTROLLER: where that v1 controller is mounted, if it is.
cgroup_v1_mount() {
	cgroup_mounts cgroup "$1" | head -n 1
}

# v1_cgroup CONTROLLER: a fresh cgroup in the v1 hierarchy of CONTROLLER,
# in $CG (make_cgroup); the test is skipped where there is none. Not to be
# called in $(...).
v1_cgroup() {
	local mnt
	mnt=$(cgroup_v1_mount "$1")
	[ -n "$mnt" ] || skip "needs the cgroup v1 $1 controller"
	make_cgroup "$mnt"
}

# need_tracefs: tracefs mounted, its mount point in $TRACEFS (read from
# mountinfo). systemd mounts it at boot; where nothing has, the test mounts
# it at /sys/kernel/tracing, and its teardown unmounts it again.
need_tracefs() {
	TRACEFS=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") break
		if ($(i + 1) == "tracefs" && $4 == "/") { print $5; exit } }' /proc/self/mountinfo)
	[ -z "$TRACEFS" ] || return 0
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
		skip "needs tracefs, which cannot be mounted here"
	at_teardown umount /sys/kernel/tracing
	TRACEFS=/sys/kernel/tracing
}

# The cgroup2 mount, for every test; empty where there is none (need_v2
# skips then).
V2=$(cgroup2_mount)

TEST_CGROUPS=()

# make_cgroup PARENT: a fresh cgroup under PARENT, left in $CG and removed
# by clean_cgroups. Not to be called in $(...): the list must survive.
make_cgroup() {
	CG=$(mktemp -d "$1/mrelease-test.XXXXXX") || return 1
	TEST_CGROUPS+=("$CG")
}

# cgroup_with_victim PARENT [VICTIM-OPTION...]: a fresh cgroup under PARENT
# ($CG) holding a new victim ($VPID).
cgroup_with_victim() {
	local parent=$1
	shift
	make_cgroup "$parent" || return 1
	start_victim "$@" || return 1
	join "$CG" "$VPID"
}

# freezer_cgroup: a fresh v1 freezer cgroup, in $FREEZER (and $CG).
freezer_cgroup() {
	local m
	m=$(cgroup_v1_mount freezer)
	[ -n "$m" ] || skip "needs the cgroup v1 freezer"
	make_cgroup "$m"
	FREEZER=$CG
}

# freeze_victim PID...: hold the PIDs in a frozen v1 freezer cgroup, so that
# once killed they cannot run their exit path and keep their memory until
# released.
freeze_victim() {
	local p
	freezer_cgroup
	for p in "$@"; do
		echo "$p" >"$FREEZER/cgroup.procs"
	done
	echo FROZEN >"$FREEZER/freezer.state"
	wait_until 100 grep -qx FROZEN "$FREEZER/freezer.state" && return 0
	echo "freezer $FREEZER did not freeze" >&2
	return 1
}

# Thaw, kill and remove every cgroup this test made, with the subgroups it
# made in them by hand, deepest first. Every one is thawed before any is
# removed: a victim frozen in one cannot leave another.
clean_cgroups() {
	local i cg d p n
	for cg in "${TEST_CGROUPS[@]}"; do
		[ -d "$cg" ] || continue
		while IFS= read -r -d '' d; do
			[ -f "$d/freezer.state" ] && echo THAWED >"$d/freezer.state"
			[ -f "$d/cgroup.freeze" ] && echo 0 >"$d/cgroup.freeze"
		done < <(find "$cg" -type d -print0)
	done
	for ((i = ${#TEST_CGROUPS[@]} - 1; i >= 0; i--)); do
		cg=${TEST_CGROUPS[i]}
		# Killed members take a moment to leave, and an emptied cgroup
		# can stay busy a little longer: retry, bounded.
		for ((n = 0; n < 200; n++)); do
			[ -d "$cg" ] || break
			while IFS= read -r -d '' d; do
				while read -r p; do
					{ is_victim "$p" && kill -9 "$p"; } 2>/dev/null || true
				done <"$d/cgroup.procs"
				rmdir "$d" 2>/dev/null || true
			done < <(find "$cg" -depth -type d -print0 2>/dev/null)
			[ ! -d "$cg" ] || sleep 0.05
		done
		[ ! -d "$cg" ] || echo "could not remove $cg" >&2
	done
	TEST_CGROUPS=()
	return 0
}

TEARDOWN_CMDS=()

# at_teardown COMMAND...: run COMMAND first thing in the teardown, also when
# the test fails.
at_teardown() {
	TEARDOWN_CMDS+=("$(printf '%q ' "$@")")
}

# The one teardown: what the test asked for, its victims, its cgroups, its
# files. A suite's own teardown calls it.
common_teardown() {
	local c
	for c in "${TEARDOWN_CMDS[@]}"; do
		eval "$c" || true
	done
	TEARDOWN_CMDS=()
	[ -z "${BG_PID:-}" ] || kill -9 "$BG_PID" 2>/dev/null
	BG_PID=
	kill_victims
	clean_cgroups
	[ -z "${NOBODY_DIR:-}" ] || rm -rf "$NOBODY_DIR"
}

teardown() {
	common_teardown
}
