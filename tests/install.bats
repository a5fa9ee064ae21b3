#!/usr/bin/env bats
# install.bats: cmake --install into a DESTDIR, the .deb from CPack, and a
# build without the test tools.

bats_require_minimum_version 1.5.0
load common

setup() {
	: "${MR_BUILD_DIR:?set by ctest}"
	: "${MR_SOURCE_DIR:?set by ctest}"
}

# no_bats_env: a PATH in $NO_BATS_PATH with every command of /usr/bin but
# bats (/bin is /usr/bin here), and CMake told to search that PATH only, in
# $NO_BATS_CMAKE: as on a machine where bats is not installed.
no_bats_env() {
	local bin=$BATS_TEST_TMPDIR/bin f
	mkdir -p "$bin"
	for f in /usr/bin/*; do
		[ "${f##*/}" = bats ] || ln -s "$f" "$bin/"
	done
	NO_BATS_PATH=$bin:/usr/sbin
	NO_BATS_CMAKE=-DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF
	run ! env PATH="$NO_BATS_PATH" sh -c 'command -v bats'
}

@test "cmake --install puts binary, man page and completion under the prefix" {
	local dest=$BATS_TEST_TMPDIR/dest
	run -0 env DESTDIR="$dest" cmake --install "$MR_BUILD_DIR" --prefix /opt/mr
	[ -x "$dest/opt/mr/bin/mrelease" ]
	[ -f "$dest/opt/mr/share/man/man1/mrelease.1" ]
	local comp
	comp=$(find "$dest/opt/mr" -path '*bash-completion/completions/mrelease')
	[ -n "$comp" ] || fail "no completion installed under $dest/opt/mr"
	run -0 "$dest/opt/mr/bin/mrelease" --version
	assert_output --regexp '^mrelease [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "cpack makes a .deb that holds a working mrelease" {
	command -v dpkg-deb >/dev/null || skip "needs dpkg-deb"
	local out=$BATS_TEST_TMPDIR/pkg
	mkdir -p "$out"
	run -0 cpack --config "$MR_BUILD_DIR/CPackConfig.cmake" -B "$out"
	local deb
	deb=$(find "$out" -maxdepth 1 -name '*.deb' | head -n1)
	[ -n "$deb" ] || fail "cpack made no .deb"
	run -0 dpkg-deb -f "$deb" Package Depends
	assert_line "Package: mrelease"
	assert_line --regexp '^Depends: .*libproc2'
	dpkg-deb -x "$deb" "$BATS_TEST_TMPDIR/root"
	run -0 "$BATS_TEST_TMPDIR/root/usr/bin/mrelease" --version
	run -0 dpkg-deb -c "$deb"
	assert_output --partial ./usr/share/man/man1/mrelease.1
	assert_output --partial /bash-completion/completions/mrelease
}

@test "-DBUILD_TESTING=OFF configures and builds mrelease where bats cannot be found" {
	no_bats_env
	local b=$BATS_TEST_TMPDIR/build
	run -0 env PATH="$NO_BATS_PATH" cmake -S "$MR_SOURCE_DIR" -B "$b" -DBUILD_TESTING=OFF "$NO_BATS_CMAKE"
	refute_output --partial 'not found'
	run -0 env PATH="$NO_BATS_PATH" cmake --build "$b" -j"$(nproc)"
	refute_output --partial mr-victim
	run -0 "$b/mrelease" --version
	assert_output --regexp '^mrelease [0-9]+\.[0-9]+\.[0-9]+$'
	run -0 ctest --test-dir "$b" -N
	assert_output --partial 'Total Tests: 0'
}

@test "configuring with tests on but no bats fails and names the Debian packages" {
	no_bats_env
	run -1 --separate-stderr env PATH="$NO_BATS_PATH" \
		cmake -S "$MR_SOURCE_DIR" -B "$BATS_TEST_TMPDIR/build" "$NO_BATS_CMAKE"
	output=$(tr -s ' \n' '  ' <<<"$stderr") # CMake wraps its messages
	assert_output --partial 'bats not found'
	assert_output --partial 'apt-get install bats bats-support bats-assert'
	assert_output --partial -- '-DBUILD_TESTING=OFF'
}
