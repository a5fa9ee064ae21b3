# docs.bats: the man page and the bash completion agree with --help, the
# man page is clean roff, and the completion offers what it should.
load common
bats_require_minimum_version 1.5.0

MAN_PAGE="$MR_SOURCE_DIR/man/mrelease.1"
COMPLETION="$MR_SOURCE_DIR/completions/mrelease"
BASH_COMPLETION=/usr/share/bash-completion/bash_completion

teardown() {
	common_teardown
	if [ -n "${TMUX_SOCKET:-}" ]; then
		tmux -S "$TMUX_SOCKET" kill-server 2>/dev/null
		rm -f "$TMUX_SOCKET"
	fi
	return 0
}

# help_long_options: every long option that --help mentions, one a line.
help_long_options() {
	"$MRELEASE" --help | grep -o -- '--[a-z][a-z-]*' | sort -u
}

# man_text: the man page without its comments, and with roff escapes for
# "-" and fonts removed, so that "\fB\-\-kill\fR" reads "--kill".
man_text() {
	sed -e '/^\.\\"/d' -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' "$MAN_PAGE"
}

# mentions OPTION: stdin mentions OPTION as a whole word.
mentions() {
	grep -qE -- "(^|[^a-zA-Z0-9-])$1([^a-zA-Z0-9-]|$)"
}

need_bash_completion() {
	[ -r "$BASH_COMPLETION" ] ||
		skip "bash-completion is not installed ($BASH_COMPLETION missing)"
}

# complete_line LINE: run _mrelease in a fresh bash as if the cursor were at
# the end of LINE and print COMPREPLY, one candidate a line.  The words
# are split the way readline splits them: at blanks, and around "=".
# What the completion asks of compopt goes to $BATS_TEST_TMPDIR/compopt,
# and the pids of that bash and its parent to $BATS_TEST_TMPDIR/shell.
complete_line() {
	PATH="$(dirname "$MRELEASE"):$PATH" bash --norc --noprofile -s -- "$1" <<-'EOF'
		source "$BASH_COMPLETION" || exit 99
		source "$COMPLETION" || exit 98
		# compopt only works inside a real completion.
		compopt() { printf '%s\n' "$*" >>"$BATS_TEST_TMPDIR/compopt"; }
		: >"$BATS_TEST_TMPDIR/compopt"
		echo "$$ $PPID" >"$BATS_TEST_TMPDIR/shell"
		COMP_LINE=$1
		COMP_POINT=${#COMP_LINE}
		read -ra COMP_WORDS <<<"${COMP_LINE//=/ = }"
		case $COMP_LINE in *[[:blank:]] | *=) COMP_WORDS+=("") ;; esac
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_mrelease mrelease "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf '%s\n' "${COMPREPLY[@]}"
	EOF
}
export BASH_COMPLETION COMPLETION

# assert_candidates LINE WORD...: LINE completes to exactly these words, in
# this order.
assert_candidates() {
	local line=$1
	shift
	run complete_line "$line"
	assert_success
	assert_equal "$(paste -sd' ' <<<"$output")" "$*"
}

# make_v2_cgroups: an empty cgroup $TOP under the cgroup2 mount $V2 and
# an empty $INNER inside it, removed by teardown.
make_v2_cgroups() {
	need_root
	need_v2
	make_cgroup "$V2" || skip "cannot create a cgroup under $V2"
	TOP=$CG
	make_cgroup "$TOP" || skip "cannot create a cgroup under $TOP"
	INNER=$CG
}

# still_offered LINE CANDIDATE: LINE still completes to CANDIDATE.  Other
# test suites may be making and removing cgroups meanwhile; a candidate
# that has gone since is no fault of the completion.
still_offered() {
	complete_line "$1" | grep -qxF -- "$2"
}

# assert_prefixes_continue WORD: for every candidate of "--cgroup WORD",
# each of its prefixes longer than WORD still completes towards it: to it,
# to something longer, or to a part of it.  readline lists a candidate
# only by its last component, so this fails whenever what the listing
# shows cannot be typed.
assert_prefixes_continue() {
	local word=$1 cand prefix got n
	local -a cands
	local -A memo=()
	mapfile -t cands < <(complete_line "mrelease --cgroup $word")
	((${#cands[@]})) || fail "'--cgroup $word' offers nothing"
	for cand in "${cands[@]}"; do
		for ((n = ${#word} + 1; n < ${#cand}; n++)); do
			prefix=${cand:0:n}
			[[ -v memo[$prefix] ]] ||
				memo[$prefix]=$(complete_line "mrelease --cgroup $prefix")
			while IFS= read -r got; do
				[[ $got && ($cand == "$got"* || $got == "$cand"*) ]] && continue 2
			done <<<"${memo[$prefix]}"
			still_offered "mrelease --cgroup $word" "$cand" || continue 2
			fail "'--cgroup $prefix' loses '$cand' (offered for '$word'): ${memo[$prefix]}"
		done
	done
}

# in_dir DIR COMMAND...: run COMMAND with DIR as the working directory.
in_dir() {
	(cd "$1" && shift && "$@")
}

# refute_pid PID: fail if $output offers PID, bare or as PID:comm.
# (refute_line cannot look at an empty output.)
refute_pid() {
	! grep -qE "^$1(:|\$)" <<<"$output" || fail "pid $1 is offered: $output"
}

# kernel_threads: the pids of the kernel threads that /proc shows.
kernel_threads() {
	local stat f
	local -a fields
	for f in /proc/[0-9]*/stat; do
		read -r stat 2>/dev/null <"$f" || continue
		read -ra fields <<<"${stat##*) }"
		((fields[6] & 0x00200000)) && echo "${f//[!0-9]/}"
	done
	return 0
}

# ancestors PID: PID and every process above it.
ancestors() {
	local pid=$1 stat
	local -a fields
	while ((pid > 0)); do
		echo "$pid"
		read -r stat 2>/dev/null <"/proc/$pid/stat" || break
		read -ra fields <<<"${stat##*) }"
		pid=${fields[1]}
	done
}

need_tmux() {
	command -v tmux >/dev/null || skip "tmux is not installed"
}

# tmux_start: an interactive bash with the completion loaded, in a tmux
# server of its own on $TMUX_SOCKET (killed by teardown), at its prompt.
tmux_start() {
	need_tmux
	local rc=$BATS_TEST_TMPDIR/bashrc
	{
		echo "PS1='mr> ' HISTFILE=/dev/null"
		printf 'PATH=%q:%s\n' "$(dirname "$MRELEASE")" "\$PATH"
		printf 'source %q\n' "$BASH_COMPLETION" "$COMPLETION"
		echo "bind 'set bell-style none'"
	} >"$rc"
	# Its own socket: nothing else's tmux server is ever touched.
	TMUX_SOCKET=$(mktemp -u /tmp/mr-docs-tmux.XXXXXX)
	tmux -S "$TMUX_SOCKET" -f /dev/null new-session -d -x 200 -y 50 \
		"bash --noprofile --rcfile $(printf %q "$rc") -i"
	tmux_wait_line '^mr>$'
}

# tmux_poll REGEX: wait up to 5 seconds for a line of the screen to match
# (grep -E), and leave the last such line in $TMUX_LINE.
tmux_poll() {
	local i
	for ((i = 0; i < 100; i++)); do
		TMUX_LINE=$(tmux -S "$TMUX_SOCKET" capture-pane -p | grep -E -- "$1" | tail -n 1)
		[ -n "$TMUX_LINE" ] && return 0
		sleep 0.05
	done
	return 1
}

# tmux_wait_line REGEX: as tmux_poll, but fail the test on time-out.
tmux_wait_line() {
	tmux_poll "$1" ||
		fail "no line matches '$1' on the screen: $(tmux -S "$TMUX_SOCKET" capture-pane -p)"
}

# regex_quote STRING: STRING as an extended regex that matches just it.
regex_quote() {
	sed -E 's/[][\\.*^$+?(){}|]/\\&/g' <<<"$1"
}

# tmux_type KEY...: send keys to the shell, as tmux send-keys names them.
tmux_type() {
	tmux -S "$TMUX_SOCKET" send-keys "$@"
}

# tmux_clear: empty the command line and the screen, and wait until the
# prompt is all there is, so that nothing old is taken for an answer.
tmux_clear() {
	local i
	tmux_type C-u C-l
	for ((i = 0; i < 100; i++)); do
		[ "$(tmux -S "$TMUX_SOCKET" capture-pane -p | grep -v '^$')" = "mr>" ] && return 0
		sleep 0.05
	done
	fail "the screen did not clear: $(tmux -S "$TMUX_SOCKET" capture-pane -p)"
}

# --- drift -----------------------------------------------------------------

@test "every long option in --help is in the man page" {
	local opts opt missing=()
	opts=$(help_long_options)
	[[ $opts == *--kill* ]] || fail "--help lists no options: $opts"
	for opt in $opts; do
		man_text | mentions "$opt" || missing+=("$opt")
	done
	((${#missing[@]} == 0)) || fail "not in man/mrelease.1: ${missing[*]}"
}

@test "every long option in --help is in the completion" {
	local opts opt missing=()
	opts=$(help_long_options)
	[[ $opts == *--kill* ]] || fail "--help lists no options: $opts"
	for opt in $opts; do
		mentions "$opt" <"$COMPLETION" || missing+=("$opt")
	done
	((${#missing[@]} == 0)) || fail "not in completions/mrelease: ${missing[*]}"
}

@test "every JSON key the binary prints is in the man page" {
	command -v jq >/dev/null || skip "jq is not installed"
	local keys key missing=()
	start_victim -m 1
	need_v2
	make_cgroup "$V2"
	join "$CG" "$VPID"
	# A cgroup, so that the cgroups' keys are printed too.
	run -0 --separate-stderr "$MRELEASE" --dry-run --kill --json --cgroup "$CG"
	has_json
	keys=$(jq -r '[paths | map(strings) | last] | unique | .[] // empty' <<<"$output")
	[[ $keys == *rss_before_kb* ]] || fail "no keys found in: $output"
	for key in $keys; do
		man_text | mentions "$key" || missing+=("$key")
	done
	((${#missing[@]} == 0)) || fail "JSON keys not in man/mrelease.1: ${missing[*]}"
}

@test "every exit status is in the man page" {
	local code
	man_text | sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' >"$BATS_TEST_TMPDIR/exit"
	for code in 0 1 2 3 64; do
		grep -qx "\.B $code" "$BATS_TEST_TMPDIR/exit" ||
			fail "exit status $code is not documented"
	done
}

# --- man page --------------------------------------------------------------

@test "man page passes mandoc -Tlint -Wwarning" {
	command -v mandoc >/dev/null || skip "mandoc is not installed"
	run mandoc -Tlint -Wwarning "$MAN_PAGE"
	assert_success
	assert_output ""
}

@test "man -l renders the man page with NAME and EXIT STATUS" {
	command -v man >/dev/null || skip "man is not installed"
	run --separate-stderr env MANWIDTH=80 man -P cat -l "$MAN_PAGE"
	assert_success
	assert_line "NAME"
	assert_line "EXIT STATUS"
	assert_output --partial "process_mrelease"
	[ -z "$stderr" ] || fail "man -l warned: $stderr"
}

# --- completion ------------------------------------------------------------

@test "completion: --c offers --cgroup" {
	need_bash_completion
	run complete_line "mrelease --c"
	assert_success
	assert_line --regexp '^--cgroup=?$'
}

@test "completion: --mea gives --measure, --me both --measure and --metrics" {
	need_bash_completion
	run complete_line "mrelease --mea"
	assert_success
	assert_output --regexp '^--measure=?$'
	run complete_line "mrelease --me"
	assert_success
	assert_output "--measure=
--metrics="
}

@test "completion: --follow's options, and --settle's values" {
	need_bash_completion
	run complete_line "mrelease --follow --no-"
	assert_success
	assert_equal "$(sort <<<"$output")" "--no-pressure
--no-recursive
--no-signals"
	run complete_line "mrelease --follow --settle "
	assert_success
	assert_line 2
	assert_line 0
}

@test "completion: --grace, --wait, -g, -w and -h are offered, --force is not" {
	need_bash_completion
	# Since 0.3.0, --force is kept only to say that it is gone.
	assert_candidates "mrelease --fo" --follow
	assert_candidates "mrelease --gr" --grace=
	# --wait needs its value now: no blank after "=".
	assert_candidates "mrelease --wa" --wait=
	grep -qx -- "-o nospace" "$BATS_TEST_TMPDIR/compopt"
	run complete_line "mrelease -"
	assert_success
	assert_line -- -g
	assert_line -- -w
	assert_line -- -h
	refute_line -- --force
}

@test "completion: --follow takes no value; --interval seconds, --pressure its kind" {
	need_bash_completion
	assert_candidates "mrelease --foll" --follow
	assert_candidates "mrelease --follow --inter" --interval=
	assert_candidates "mrelease --follow --interval 0." 0.5
	assert_candidates "mrelease --follow --interval=1" 1 10
	assert_candidates "mrelease --follow --pressure " some full
}

@test "completion: --grace and --wait take seconds from the next word or after =" {
	need_bash_completion
	local line
	for line in "mrelease --grace " "mrelease --grace=" "mrelease -g " "mrelease -kg " \
		"mrelease --gr " "mrelease --wait " "mrelease --wait=" "mrelease -w " \
		"mrelease -dw " "mrelease --wa="; do
		assert_candidates "$line" 1 2 5 10 30
	done
	assert_candidates "mrelease --grace=3" 30
	# A value right after the letter, as argp takes -w5.
	assert_candidates "mrelease -w1" -w1 -w10
}

@test "completion: after the value of --wait or --grace comes a pid" {
	need_bash_completion
	local line
	start_victim -m 1
	for line in "mrelease --wait 5 " "mrelease -w 5 " "mrelease -w5 " "mrelease --wait=5 " \
		"mrelease --kill --grace 2 " "mrelease -kg2 " "mrelease -- "; do
		run complete_line "$line"
		assert_success
		assert_line "$VPID:mr-victim"
	done
}

@test "completion: nothing after --help, -h, -? or --version" {
	need_bash_completion
	local line
	for line in "mrelease --help " "mrelease -h " "mrelease -? " "mrelease -kh " \
		"mrelease --version " "mrelease --usage "; do
		assert_candidates "$line"
	done
}

@test "completion: --measure gives exactly status smaps none" {
	need_bash_completion
	# In this order, the default first, and listed so.
	assert_candidates "mrelease --measure " status smaps none
	grep -qx -- "-o nosort" "$BATS_TEST_TMPDIR/compopt"
	assert_candidates "mrelease --measure=s" status smaps
	assert_candidates "mrelease -ms" -mstatus -msmaps
}

@test "completion: --dying is offered, and takes no value" {
	need_bash_completion
	assert_candidates "mrelease --dy" --dying
	assert_candidates "mrelease --d" --dying --dry-run
	run complete_line "mrelease -"
	assert_success
	assert_line -- --dying
	# What follows it is an option of its own, not its value.
	assert_candidates "mrelease --dying --q" --quiet
}

@test "completion: --signal offers the standard signals as kill -l writes them" {
	need_bash_completion
	local line
	for line in "mrelease --kill --grace 2 --signal " "mrelease -kg2 -s " "mrelease --sig="; do
		run complete_line "$line"
		assert_success
		assert_line TERM
		assert_line QUIT
		assert_line KILL
		assert_line HUP
		assert_line SYS
		refute_line --partial SIG
		refute_line --partial RTMIN
		assert_equal "${#lines[@]}" 31
		# In the order of their numbers, as kill -l lists them.
		assert_equal "${lines[0]} ${lines[30]}" "HUP SYS"
	done
	assert_candidates "mrelease -kg2 --signal QU" QUIT
	assert_candidates "mrelease -kg2 --signal=QU" QUIT
	assert_candidates "mrelease -kg2 -sQU" -sQUIT
	# mrelease takes any case and a SIG prefix: so does the completion.
	assert_candidates "mrelease -kg2 -s qu" quit
	assert_candidates "mrelease -kg2 -s SIGQU" SIGQUIT
	# After the signal, a pid.
	start_victim -m 1
	run complete_line "mrelease -kg2 -s TERM "
	assert_line "$VPID:mr-victim"
}

@test "completion: --unit completes the system manager's units, in the root and in slices" {
	need_bash_completion
	need_root
	local top unit=mrelease-test-$$ odd=mrelease\\x2dtest-$$.scope
	need_v2
	top=$V2/mrelease-test-$$-top.slice
	mkdir "$top" || skip "cannot create a cgroup under $V2"
	TEST_CGROUPS+=("$top")
	# The same unit name at two depths, one as systemd escapes a "-",
	# which has to be quoted when inserted, and units below a scope and a
	# cgroup that is no unit, which are another manager's.
	mkdir "$top/$unit.slice" "$top/$unit.slice/$unit.service" "$top/$unit.service" \
		"$top/$odd" "$top/$odd/$unit-inner.service" "$top/plain" "$top/plain/$unit-plain.service" ||
		fail "cannot create cgroups under $top"
	TEST_CGROUPS+=("$top/$unit.slice" "$top/$unit.slice/$unit.service" "$top/$unit.service"
		"$top/$odd" "$top/$odd/$unit-inner.service" "$top/plain" "$top/plain/$unit-plain.service")

	run complete_line "mrelease --unit "
	assert_success
	assert_line "$unit.service"
	assert_line "$unit.slice"
	assert_line "$odd"
	assert_line "${top##*/}"
	# No cgroup that is no unit, none of another manager's, every name once.
	refute_line "plain"
	refute_line "$unit-inner.service"
	refute_line "$unit-plain.service"
	assert_equal "$(grep -cxF "$unit.service" <<<"$output")" 1
	# A prefix narrows it, after a blank or "=", or right after -u.
	assert_candidates "mrelease --kill --unit $unit." "$unit.service" "$unit.slice"
	assert_candidates "mrelease --unit=$unit.se" "$unit.service"
	assert_candidates "mrelease -ku$unit.sl" "-ku$unit.slice"
	# The escaped name: offered as it is, to be inserted quoted (as file
	# names are), and found again from what was typed quoted.
	run complete_line "mrelease --unit mrelease"
	assert_line "$odd"
	grep -qx -- "-o filenames" "$BATS_TEST_TMPDIR/compopt"
	assert_candidates "mrelease --unit $(printf %q "${odd:0:16}")" "$odd"
	assert_candidates "mrelease --unit '${odd:0:16}" "$odd"
	# After the unit, a pid.
	start_victim -m 1
	run complete_line "mrelease --kill -u $unit.service "
	assert_line "$VPID:mr-victim"
}

@test "completion: ./ and ../ --cgroup paths complete from the working directory" {
	need_bash_completion
	make_v2_cgroups
	local inner=${INNER##*/} top=${TOP##*/}
	# readline sees these directories and adds the "/" itself.
	run in_dir "$TOP" complete_line "mrelease --cgroup ./"
	assert_success
	assert_output "./$inner"
	run in_dir "$INNER" complete_line "mrelease --cgroup=../"
	assert_success
	assert_output "../$inner"
	run in_dir "$INNER" complete_line "mrelease -c ../../$top"
	assert_success
	assert_line "../../$top"
	# Right after -c, readline cannot see the directory.
	run in_dir "$TOP" complete_line "mrelease -c./"
	assert_output "-c./$inner/"
	# Outside any cgroup file system, nothing leads anywhere.
	run in_dir "$BATS_TEST_TMPDIR" complete_line "mrelease -c ./"
	assert_success
	assert_output ""
}

@test "completion: --affinity offers online CPUs" {
	need_bash_completion
	run complete_line "mrelease --affinity "
	assert_success
	assert_line "0"
	run complete_line "mrelease -a 0,"
	assert_success
	assert_line "0,0"
}

@test "completion: --nice offers -20 to 19" {
	need_bash_completion
	run complete_line "mrelease --nice "
	assert_success
	assert_line -- "-20"
	assert_line "19"
	assert_equal "${#lines[@]}" 40
}

@test "completion: --cgroup completes every cgroup mount as it is typed" {
	need_bash_completion
	local mnt base word
	local -a mounts
	mapfile -t mounts < <(cgroup_mounts)
	((${#mounts[@]})) || skip "no cgroup file system is mounted"
	for mnt in "${mounts[@]}"; do
		base=${mnt##*/}
		# From its parent directory, from any start of its name, and
		# from the whole name, after a blank or after "=".  (readline
		# adds the "/" to a directory it can see.)
		for word in "${mnt%/*}/" "${mnt%/*}/${base:0:1}" "${mnt%/*}/${base:0:3}" "$mnt"; do
			run complete_line "mrelease --cgroup $word"
			assert_success
			assert_line "$mnt"
			run complete_line "mrelease --cgroup=$word"
			assert_success
			assert_line "$mnt"
		done
	done
	# As file names, and without a blank, so that Tab goes on inside.
	grep -qx -- "-o filenames -o nospace" "$BATS_TEST_TMPDIR/compopt"
	# Inside a mount, its cgroups; right after -c, readline cannot see
	# the directory, so the "/" comes with it.
	for mnt in "${mounts[@]}"; do
		word=$(find "$mnt" -mindepth 1 -maxdepth 1 -type d -print -quit)
		[ -n "$word" ] || continue
		run complete_line "mrelease --cgroup $mnt/"
		assert_line "$word"
		run complete_line "mrelease -c${word%?}"
		assert_line "-c$word/"
	done
}

@test "completion: --cgroup offers nothing that leads away from the cgroups" {
	need_bash_completion
	local word cand mnt ok
	local -a mounts
	mapfile -t mounts < <(cgroup_mounts)
	((${#mounts[@]})) || skip "no cgroup file system is mounted"
	for word in "" / "${mounts[0]%/*}/" "$(dirname "${mounts[0]%/*}")/"; do
		run complete_line "mrelease --cgroup $word"
		assert_success
		[ -n "$output" ] || fail "'--cgroup $word' offers nothing"
		for cand in "${lines[@]}"; do
			ok=
			for mnt in "${mounts[@]}"; do
				[[ ${cand%/} == "$mnt" || $cand == "$mnt"/* || $mnt/ == "$cand"* ]] && ok=1
			done
			# A cgroup under the cgroup2 mount, relative or from its root.
			[[ -n $V2 && $cand != / && -d $V2/${cand#/} ]] && ok=1
			[ -n "$ok" ] || ! still_offered "mrelease --cgroup $word" "$cand" ||
				fail "'--cgroup $word' offers '$cand', which is no way to a cgroup"
		done
	done
}

@test "completion: every --cgroup name in the listing can be typed" {
	need_bash_completion
	local mnt
	mnt=$(cgroup_mounts | head -n 1)
	[ -n "$mnt" ] || skip "no cgroup file system is mounted"
	assert_prefixes_continue ""
	assert_prefixes_continue /
	assert_prefixes_continue "${mnt%/*}/"
}

@test "completion: relative --cgroup paths complete under the cgroup2 mount" {
	need_bash_completion
	make_v2_cgroups
	local top=${TOP#"$V2"/} inner=${INNER#"$V2"/} word

	# The empty word offers the relative names, and "/" for the absolute
	# paths rather than mount points whose names could not be typed.
	run complete_line "mrelease --cgroup "
	assert_success
	assert_line "$top/"
	assert_line /
	refute_line --regexp '^/.'
	# Any start of a name, as "sys" gives "system.slice/".
	for word in "${top:0:1}" "${top:0:3}" "$top"; do
		run complete_line "mrelease --cgroup $word"
		assert_line "$top/"
	done
	# The next level, after a blank or after "=", or right after -c.
	for word in "$top/" "$top/${inner:${#top}+1:3}"; do
		run complete_line "mrelease --cgroup $word"
		assert_line "$inner/"
		run complete_line "mrelease --cgroup=$word"
		assert_line "$inner/"
		run complete_line "mrelease -kc$word"
		assert_line "-kc$inner/"
	done
	# From the root of the hierarchy, as /proc/PID/cgroup writes it, and
	# as an absolute path.
	run complete_line "mrelease --cgroup /${top:0:3}"
	assert_line "/$top/"
	run complete_line "mrelease --cgroup /$top/"
	assert_line "/$inner/"
	run complete_line "mrelease --cgroup $V2/$top/"
	assert_line "$INNER"
	assert_prefixes_continue ""
	assert_prefixes_continue /
}

@test "completion: a pid word offers PID:comm, and a single match as the bare pid" {
	need_bash_completion
	start_victim -m 1
	run complete_line "mrelease "
	assert_success
	assert_line "$VPID:mr-victim"
	refute_line --regexp '^[0-9]+$'
	# The whole pid either is unique, and then inserted bare, or still
	# shows the name among longer pids.
	run complete_line "mrelease --kill $VPID"
	assert_success
	if ((${#lines[@]} == 1)); then
		assert_output "$VPID"
	else
		assert_line "$VPID:mr-victim"
		refute_line --regexp '^[0-9]+$'
	fi
}

@test "completion: pid 1 and zombies are not offered" {
	need_bash_completion
	local zombie
	start_victim -z
	zombie=$(pgrep -P "$VPID")
	[[ $zombie =~ ^[0-9]+$ && $(cut -d' ' -f3 "/proc/$zombie/stat") == Z ]] ||
		fail "mr-victim -z left no zombie: '$zombie'"
	run complete_line "mrelease "
	assert_success
	assert_line "$VPID:mr-victim"
	refute_pid 1
	refute_pid "$zombie"
	run complete_line "mrelease 1"
	refute_pid 1
	run complete_line "mrelease $zombie"
	refute_pid "$zombie"
}

@test "completion: kernel threads are not offered" {
	need_bash_completion
	local kthreads after pid
	kthreads=$(kernel_threads)
	[ -n "$kthreads" ] || skip "no kernel thread is visible in /proc (a pid namespace?)"
	start_victim -m 1
	run complete_line "mrelease "
	assert_success
	assert_line "$VPID:mr-victim"
	# Only those that were kernel threads before and after: kworkers come
	# and go, and their pids may be reused meanwhile.
	after=$(kernel_threads)
	for pid in $kthreads; do
		if grep -qx "$pid" <<<"$after"; then
			refute_pid "$pid"
		fi
	done
	pid=${kthreads%%$'\n'*}
	run complete_line "mrelease $pid"
	refute_pid "$pid"
}

@test "completion: the completing shell and its ancestors are not offered" {
	need_bash_completion
	local shell parent pid
	start_victim -m 1
	run complete_line "mrelease "
	assert_success
	assert_line "$VPID:mr-victim"
	read -r shell parent <"$BATS_TEST_TMPDIR/shell"
	for pid in "$shell" "$parent" $(ancestors "$BASHPID"); do
		refute_pid "$pid"
	done
}

@test "completion: a --cgroup path and a pid complete in a real bash under tmux" {
	need_bash_completion
	need_tmux
	local mnt base word='' name n
	# A mount and the shortest start of its name that only it completes,
	# as "mem" for /sys/fs/cgroup/memory.
	while [ -z "$word" ] && IFS= read -r mnt; do
		base=${mnt##*/}
		for ((n = 1; n <= ${#base}; n++)); do
			if [ "$(complete_line "mrelease --cgroup ${mnt%/*}/${base:0:n}")" = "$mnt" ]; then
				word=${mnt%/*}/${base:0:n}
				break
			fi
		done
	done < <(cgroup_mounts)
	[ -n "$word" ] || skip "no cgroup mount has a name that no other one starts with"
	start_victim -m 1
	tmux_start

	# Tab gives the mount with a "/", and what is typed next goes on
	# inside it.
	tmux_type "mrelease --cgroup $word" Tab
	tmux_wait_line "^mr> mrelease --cgroup $(regex_quote "$mnt")/\$"
	tmux_type x
	tmux_wait_line "^mr> mrelease --cgroup $(regex_quote "$mnt")/x\$"
	tmux_clear

	# Tab Tab on an empty --cgroup word lists names; one of them, typed as
	# the listing shows it, completes to itself (and not to nothing).  A
	# cgroup under the cgroup2 mount, where there may be none, makes that
	# list one of relative names, to which absolute ones must not be added.
	# Other test suites may be making and removing mrelease-test.* cgroups
	# meanwhile: the name is one of neither those nor "/", or else ours.
	CG=
	[[ -z $V2 || $(id -u) -ne 0 ]] || make_cgroup "$V2" || CG=
	tmux_type "mrelease --cgroup " Tab Tab
	if tmux_poll '^([^m]|m[^r]|mr[^>])'; then
		[ -z "$CG" ] || tmux_wait_line "(^| )$(regex_quote "${CG##*/}")/( |\$)"
		name=$(tmux -S "$TMUX_SOCKET" capture-pane -p | grep -v '^mr>' |
			tr -s ' ' '\n' | grep -vx -e / -e '' -e 'mrelease-test\..*' | head -n 1)
		[ -n "$name" ] || [ -z "$CG" ] || name=${CG##*/}/
		[ -n "$name" ] || fail "no name in the listing: $TMUX_LINE"
		tmux_clear
		tmux_type "mrelease --cgroup " Tab "${name%/}" Tab Tab
		tmux_wait_line "^mr> mrelease --cgroup .*$(regex_quote "$name")\$|(^| )$(regex_quote "$name")( |\$)"
	fi
	tmux_clear

	# A pid: inserted bare with a blank when it is the only match, else
	# the listing shows it with its name.
	tmux_type "mrelease --kill $VPID" Tab x
	tmux_wait_line "^mr> mrelease --kill $VPID ?x\$"
	if [[ $TMUX_LINE == *"$VPID x" ]]; then
		return 0
	fi
	tmux_type BSpace Tab Tab
	tmux_wait_line "(^| )$VPID:mr-victim( |\$)"
}
