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

# make_deb: the package from cpack, made once for the whole file, in $DEB;
# unpacked (dpkg-deb -x, never installed) under $ROOT. The version that
# mrelease --version gives is left in $VERSION.
make_deb() {
	command -v dpkg-deb >/dev/null || skip "needs dpkg-deb (Debian: dpkg)"
	local out=$BATS_FILE_TMPDIR/pkg
	if [ ! -d "$out" ]; then
		rm -rf "$out.tmp"
		mkdir -p "$out.tmp"
		run -0 cpack --config "$MR_BUILD_DIR/CPackConfig.cmake" -B "$out.tmp"
		mv "$out.tmp" "$out"
	fi
	DEB=$(find "$out" -maxdepth 1 -name '*.deb')
	[ -n "$DEB" ] && [ "$(wc -l <<<"$DEB")" -eq 1 ] || fail "cpack made no single .deb: '$DEB'"
	ROOT=$BATS_FILE_TMPDIR/root
	[ -d "$ROOT" ] || dpkg-deb -x "$DEB" "$ROOT"
	VERSION=$("$MRELEASE" --version)
	VERSION=${VERSION#mrelease }
}

@test "cmake --install puts binary, man page and completion under the prefix" {
	local dest=$BATS_TEST_TMPDIR/dest
	run -0 env DESTDIR="$dest" cmake --install "$MR_BUILD_DIR" --prefix /opt/mr
	[ -x "$dest/opt/mr/bin/mrelease" ]
	[ -f "$dest/opt/mr/share/man/man1/mrelease.1" ]
	# What only the .deb carries stays out of a plain install.
	[ ! -e "$dest/opt/mr/share/man/man1/mrelease.1.gz" ]
	[ ! -e "$dest/opt/mr/share/doc/mrelease" ]
	local comp
	comp=$(find "$dest/opt/mr" -path '*bash-completion/completions/mrelease')
	[ -n "$comp" ] || fail "no completion installed under $dest/opt/mr"
	# The unit is made for the prefix of the install: its ExecStart names
	# the binary installed beside it (the DESTDIR is no part of it).
	run -0 grep '^ExecStart=' "$dest/opt/mr/lib/systemd/system/mrelease-follow.service"
	assert_output 'ExecStart=/opt/mr/bin/mrelease --follow --json --nice -10'
	run -1 grep -E '@[A-Z_]+@' "$dest/opt/mr/lib/systemd/system/mrelease-follow.service"
	run -0 "$dest/opt/mr/bin/mrelease" --version
	assert_output --regexp '^mrelease [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "lintian finds no error and no warning in the .deb" {
	command -v lintian >/dev/null || skip "needs lintian (Debian: lintian)"
	make_deb
	run lintian --fail-on error,warning "$DEB"
	[ "$status" -eq 0 ] || fail "lintian failed: $output"
	refute_line --regexp '^[EW]: '
}

@test "the .deb's fields: section admin, the changelog's maintainer, Depends from dpkg-shlibdeps" {
	make_deb
	local log=$BATS_TEST_TMPDIR/changelog maintainer depends
	gzip -cd "$ROOT/usr/share/doc/mrelease/changelog.gz" >"$log"
	maintainer=$(dpkg-parsechangelog -l "$log" -S Maintainer)
	run -0 dpkg-deb -f "$DEB" Package Version Section Priority Maintainer
	assert_line "Package: mrelease"
	assert_line "Version: $VERSION"
	assert_line "Section: admin"
	assert_line "Priority: optional"
	assert_line "Maintainer: $maintainer"
	# Depends is what dpkg-shlibdeps makes of the packaged binary, which
	# wants a debian/control to run beside.
	mkdir -p "$BATS_TEST_TMPDIR/shlibs/debian"
	touch "$BATS_TEST_TMPDIR/shlibs/debian/control"
	depends=$(cd "$BATS_TEST_TMPDIR/shlibs" && dpkg-shlibdeps -O "$ROOT/usr/bin/mrelease" 2>/dev/null)
	depends=${depends#shlibs:Depends=}
	[ -n "$depends" ] || fail "dpkg-shlibdeps gave nothing"
	run -0 dpkg-deb -f "$DEB" Depends
	assert_output "$depends"
	assert_output --regexp '(^|, )libc6 \(>= [0-9.]+\)'
}

@test "a static libproc2 is named in Built-Using and its notice is in the copyright file" {
	make_deb
	local copyright=$ROOT/usr/share/doc/mrelease/copyright lib owner=""
	if readelf -d "$ROOT/usr/bin/mrelease" | grep -q 'NEEDED.*libproc2'; then
		run -0 dpkg-deb -f "$DEB" Built-Using
		assert_output ""
		run -1 grep -F 'LGPL' "$copyright"
		return
	fi
	lib=$(sed -n 's/^PROC2_STATIC_LIB:FILEPATH=//p' "$MR_BUILD_DIR/CMakeCache.txt")
	[ -f "$lib" ] || fail "mrelease needs no libproc2.so, but the build found no libproc2.a"
	run -0 grep -Fx 'Files: libproc2/*' "$copyright"
	run -0 grep -Fx 'License: LGPL-2.1+' "$copyright"
	run -0 grep -F '/usr/share/common-licenses/LGPL-2.1' "$copyright"
	owner=$(dpkg-query --search "$(readlink -f "$lib")" 2>/dev/null) || true
	run -0 dpkg-deb -f "$DEB" Built-Using Source
	if [ -z "$owner" ]; then
		refute_line --partial Built-Using
		return
	fi
	assert_line "Built-Using: $(dpkg-query --show --showformat='${source:Package} (= ${source:Version})' "${owner%:*}")"
	assert_line "Source: mrelease"
}

@test "the .deb holds a stripped mrelease that runs, gzip -9n docs and the completion" {
	make_deb
	run -0 dpkg-deb -c "$DEB"
	assert_output --partial ' ./usr/bin/mrelease'
	assert_output --partial ' ./usr/share/man/man1/mrelease.1.gz'
	refute_line --regexp 'man1/mrelease\.1$'
	assert_output --partial ' ./usr/share/doc/mrelease/copyright'
	assert_output --partial ' ./usr/share/doc/mrelease/changelog.gz'
	assert_output --partial ' ./usr/share/bash-completion/completions/mrelease'
	assert_output --partial ' ./usr/lib/systemd/system/mrelease-follow.service'
	run -0 grep '^ExecStart=' "$ROOT/usr/lib/systemd/system/mrelease-follow.service"
	assert_output 'ExecStart=/usr/bin/mrelease --follow --json --nice -10'

	run -0 readelf -S --wide "$ROOT/usr/bin/mrelease"
	refute_output --partial .symtab
	refute_output --partial .debug_
	if command -v file >/dev/null; then
		run -0 file -b "$ROOT/usr/bin/mrelease"
		assert_output --partial ', stripped'
	fi
	run -0 "$ROOT/usr/bin/mrelease" --version
	assert_output "mrelease $VERSION"

	# gzip -9n of the sources, byte for byte: best compression, and no name
	# or time stamp in the header.
	gzip -9n -c "$MR_SOURCE_DIR/man/mrelease.1" | cmp - "$ROOT/usr/share/man/man1/mrelease.1.gz"
	gzip -9n -c "$MR_SOURCE_DIR/packaging/changelog" |
		cmp - "$ROOT/usr/share/doc/mrelease/changelog.gz"
	gzip -cd "$ROOT/usr/share/doc/mrelease/changelog.gz" >"$BATS_TEST_TMPDIR/changelog"
	run -0 dpkg-parsechangelog -l "$BATS_TEST_TMPDIR/changelog" -S Version
	assert_output "$VERSION"
	run -0 head -n1 "$ROOT/usr/share/doc/mrelease/copyright"
	assert_output 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/'
}

@test "the copyright file passes lintian's DEP-5 checks" {
	command -v lintian >/dev/null || skip "needs lintian (Debian: lintian)"
	command -v dpkg-source >/dev/null || skip "needs dpkg-source (Debian: dpkg-dev)"
	make_deb
	# lintian checks the DEP-5 format only in source packages: put the
	# packaged file in a throwaway native one, whose libproc2/ stands for
	# the libproc2 code that is in the binary.
	local src=$BATS_TEST_TMPDIR/src/mrelease-$VERSION
	mkdir -p "$src/debian/source" "$src/libproc2"
	cp "$ROOT/usr/share/doc/mrelease/copyright" "$src/debian/copyright"
	cp "$MR_SOURCE_DIR/packaging/changelog" "$src/debian/changelog"
	echo '3.0 (native)' >"$src/debian/source/format"
	printf '%s\n' "Source: mrelease" "Maintainer: $(dpkg-deb -f "$DEB" Maintainer)" \
		"Section: admin" "Priority: optional" "Standards-Version: 4.6.2" \
		"Build-Depends: debhelper-compat (= 13)" "Rules-Requires-Root: no" "" \
		"Package: mrelease" "Architecture: any" 'Depends: ${misc:Depends}' \
		"Description: $(dpkg-deb -f "$DEB" Description | head -n1)" \
		" A stand-in: only debian/copyright is checked." >"$src/debian/control"
	printf '#!/usr/bin/make -f\n%%:\n\tdh $@\n' >"$src/debian/rules"
	chmod +x "$src/debian/rules"
	touch "$src/libproc2/meminfo.c" "$src/main.c"
	(cd "$src/.." && dpkg-source --build "mrelease-$VERSION" >/dev/null)
	run lintian --fail-on error,warning "$src/../mrelease_$VERSION.dsc"
	[ "$status" -eq 0 ] || fail "lintian failed: $output"
	refute_line --regexp '^[EWIP]: '
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
