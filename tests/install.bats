#!/usr/bin/env bats
# install.bats: cmake --install into a DESTDIR, and the .deb from CPack.

bats_require_minimum_version 1.5.0
load common

setup() {
	: "${MR_BUILD_DIR:?set by ctest}"
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
