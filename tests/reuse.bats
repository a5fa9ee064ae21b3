#!/usr/bin/env bats
# reuse.bats: a pid that is reused between selection and action. mrelease
# is stopped by gdb after it has opened and measured its target (at the
# MemAvailable reading that comes just before the first signal); the target
# is then killed and reaped, and processes are started until one gets its
# pid. The new process must survive. All of it runs in a pid namespace of
# its own with a small pid_max, so the pid comes round quickly and nothing
# outside can be touched. (A pid namespace has its own pid_max since Linux
# 6.14; before that the test is skipped.)

bats_require_minimum_version 1.5.0
load common

setup() {
	need_root
	command -v gdb >/dev/null || skip "needs gdb"
	command -v unshare >/dev/null || skip "needs unshare"
}

@test "a pid reused after selection is not signalled: the new process lives" {
	run --separate-stderr in_pidns '
		set -u
		mr=$1 victim=$2 dir=$3
		echo 500 >/proc/sys/kernel/pid_max || exit 77
		# After a wrap the kernel hands out pids from 300 up: start past it
		# (with a pid_max of 500, well within 1000 tries).
		for ((n = 0; n < 1000; n++)); do /bin/true & p=$!; wait $p; ((p > 310)) && break; done
		((p > 310)) || { echo "pids did not pass 310" >&2; exit 1; }
		# The first victim, in a subshell that reaps it when it dies.
		( "$victim" -m 4 -r "$dir/a" </dev/null >/dev/null & echo $! >"$dir/apid"; wait ) &
		wait_until 200 test -s "$dir/a" || { echo "the first victim did not get ready" >&2; exit 1; }
		a=$(cat "$dir/apid")
		cat >"$dir/recycle" <<-SCRIPT
			kill -9 $a
			for ((n = 0; n < 1000; n++)); do kill -0 $a 2>/dev/null || break; sleep 0.01; done
			! kill -0 $a 2>/dev/null || { echo "pid $a was not reaped within 10 s" >&2; exit 1; }
			for i in \$(seq 2000); do
				"$victim" -r "$dir/b.\$i" </dev/null >/dev/null 2>&1 &
				p=\$!
				if [ "\$p" = "$a" ]; then echo "\$p $dir/b.\$i" >"$dir/bpid"; exit 0; fi
				kill -9 "\$p"; wait "\$p" 2>/dev/null
			done
			exit 1
		SCRIPT
		gdb -q -batch -nx -ex "set startup-with-shell off" \
			-ex "break mr_mem_available_kb" -ex run \
			-ex "shell bash $dir/recycle" -ex delete -ex continue \
			--args "$mr" --kill --json "$a" >"$dir/gdb.out" 2>"$dir/gdb.err"
		[ -s "$dir/bpid" ] || { echo "pid $a did not come round" >&2; exit 1; }
		read -r b bready <"$dir/bpid"
		wait_until 200 test -s "$bready" || { echo "the new process did not get ready" >&2; exit 1; }
		# mrelease has returned: a SIGKILL it had sent would be pending,
		# or acted on, by now.
		lives "$b" && echo "pid $b (the new process) lives"
		grep "^{\"pid\"" "$dir/gdb.out"'
	[ "$status" -ne 77 ] || skip "a pid namespace has no pid_max of its own here"
	[ "$status" -eq 0 ] || fail "exit $status: $stderr; gdb said: $(cat "$BATS_TEST_TMPDIR"/gdb.*)"
	assert_line --regexp '^pid [0-9]+ \(the new process\) lives$'
	assert_line --regexp '"status":"exited"'
}
