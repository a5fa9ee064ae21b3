#!/usr/bin/env bats
# valgrind.bats: memcheck over the common paths: no invalid access, no leak.
#
# valgrind 3.19 (Debian 12) does not know pidfd_open and answers ENOSYS, so
# under it every target fails at "no pidfd_open here"; what runs is option
# parsing, stdin, cgroup resolution and listing, the failure path and both
# reports. The paths behind a pidfd are covered by the sanitizer build.

bats_require_minimum_version 1.5.0
load common

setup() {
	command -v valgrind >/dev/null || skip "needs valgrind"
	[ "${MR_SANITIZE:-OFF}" != ON ] || skip "valgrind cannot run a sanitizer build"
}

memcheck() {
	run valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect,possible "$MRELEASE" "$@"
	[ "$status" -ne 99 ] || fail "valgrind found errors: $output"
}

@test "valgrind: usage errors" {
	memcheck --kill abc
	assert_equal "$status" 2
	memcheck --affinity 0-x 1
	assert_equal "$status" 2
	memcheck --cgroup ../etc 1
	assert_equal "$status" 2
}

@test "valgrind: targets, text and JSON reports" {
	start_victim -m 1
	memcheck --dry-run "$VPID" 4194304
	assert_equal "$status" 1
	assert_output --partial "pid $VPID: "
	memcheck --kill --json --measure=status "$VPID" "$VPID"
	assert_equal "$status" 1
	lives "$VPID"
}

@test "valgrind: pids from standard input" {
	memcheck --dry-run - <<<"12 34:5 56"
	assert_equal "$status" 1
}

@test "valgrind: a cgroup resolved and listed" {
	need_root
	need_v2
	make_cgroup "$V2"
	start_victim -m 1
	echo "$VPID" >"$CG/cgroup.procs"
	memcheck --dry-run --json --cgroup "${CG#"$V2"/}"
	assert_equal "$status" 1
}
