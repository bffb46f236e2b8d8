#!/bin/sh
# tests/install.sh — make's own set-up targets, end to end:
#  - make all on a machine without a build dependency stops before the
#    first compile and names the Debian package and the apt-get command
#    (a package that does not exist stands in for the missing one);
#  - make install PREFIX=$tmp installs both libraries (libnanmap.so with
#    its soname links, exporting only emu_* and nm_golden_*, no inih, no
#    hardware oracle) and a nanmap.pc that names $tmp, and pkg-config alone
#    (PKG_CONFIG_PATH=$tmp/lib/pkgconfig, no -I/-L of the source tree) builds
#    docs/examples/golden_check.c against the shared library, and with --static
#    against the static one; each build then checks a golden output;
#  - DESTDIR stages the files without changing the prefix in nanmap.pc;
#  - make uninstall PREFIX=$tmp leaves no file behind;
#  - the closing line of make test counts skipped checks as skipped.
# Run from the repository root after make: sh tests/install.sh
set -u

T=install
. tests/cli/cli_lib.sh
MAKE=${MAKE:-make}
CC=${CC:-cc}
# the makes below run on their own, not in make test's jobserver
unset MAKEFLAGS MFLAGS

# ---- make all names missing dependencies before compiling ----
mkdir -p "$tmp/src"
mkdir -p "$tmp/src/tests" && cp -R Makefile emu "$tmp/src/" && cp -R tests/oracles "$tmp/src/tests/"
rc=0
"$MAKE" -C "$tmp/src" all BUILD_PKGS="build-essential nanmap-no-such-dev" DEPS_INSTALL=no \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -ne 0 ] || fail "make all with a missing package: exit status 0"
grep -qxF "deps: missing Debian packages: nanmap-no-such-dev (run: sudo apt-get install nanmap-no-such-dev)" \
	"$tmp/out" || fail "make all with a missing package: no line naming it and the command"
[ -z "$(find "$tmp/src/build" -name '*.o' 2>/dev/null)" ] || fail "make all compiled before the deps check"
pass=$((pass + 1))

# ---- install into a temporary prefix ----
P=$tmp/prefix
rc=0
"$MAKE" --no-print-directory install PREFIX="$P" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || fail "make install PREFIX=$P: exit status $rc"
for f in bin/nanmap lib/libnanmap.a lib/libnanmap.so lib/libnanmap.so.0 include/nanmap/emu.h \
	include/nanmap/nm_golden.h lib/pkgconfig/nanmap.pc; do
	[ -f "$P/$f" ] || fail "make install: no $P/$f"
done
[ ! -e "$P/include/nanmap/hw.h" ] || fail "make install: the test oracle's hw.h is installed"
grep -qxF "prefix=$P" "$P/lib/pkgconfig/nanmap.pc" || fail "installed nanmap.pc: prefix is not $P"
for f in softmax_ce.golden attention.golden README.md; do
	[ -f "$P/share/nanmap/golden/$f" ] || fail "make install: no $P/share/nanmap/golden/$f"
done
! grep -q ldconfig "$tmp/out" || fail "make install into a prefix the linker does not search ran ldconfig"
pass=$((pass + 1))

# ---- ldconfig when the prefix's lib is one the dynamic linker searches ----
printf '%s\n' "# a stand-in for /etc/ld.so.conf.d/" "$tmp/sys/lib" >"$tmp/ld.conf"
rc=0
"$MAKE" --no-print-directory install PREFIX="$tmp/sys" LD_SO_CONF="$tmp/ld.conf" \
	LDCONFIG="touch $tmp/ldconfig-ran" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || fail "make install into a searched prefix: exit status $rc"
if [ "$(id -u)" = 0 ]; then
	[ -f "$tmp/ldconfig-ran" ] || fail "make install into a searched prefix, as root: no ldconfig"
else
	grep -q "run ldconfig as root" "$tmp/out" || fail "make install into a searched prefix: no ldconfig advice"
fi
pass=$((pass + 1))

# ---- the installed command finds the installed golden files, anywhere ----
G=softmax_ce.naive.fp16-fp16.safe/grad
awk -v t="$G" '$1 == t && NF == 4 { print $3 }' golden/softmax_ce.golden >"$tmp/actual.txt"
mkdir -p "$tmp/elsewhere"
rc=0
(cd "$tmp/elsewhere" && "$P/bin/nanmap" check "$G" "$tmp/actual.txt") >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || fail "installed nanmap check CASE/OUTPUT outside the checkout: exit status $rc"
rc=0
(cd "$tmp/elsewhere" && "$P/bin/nanmap" golden list) >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || fail "installed nanmap golden list outside the checkout: exit status $rc"
grep -qF "$G" "$tmp/out" || fail "installed nanmap golden list: no $G"
pass=$((pass + 1))

# ---- the shared library: versioned, and only the public names ----
real=$(readlink "$P/lib/libnanmap.so.0")
case $real in libnanmap.so.0.*.*) ;; *) fail "libnanmap.so.0 -> '$real', not libnanmap.so.0.X.Y" ;; esac
{ [ -f "$P/lib/$real" ] && [ ! -L "$P/lib/$real" ]; } || fail "$P/lib/$real is not the library file"
[ "$(readlink "$P/lib/libnanmap.so")" = libnanmap.so.0 ] || fail "libnanmap.so does not name libnanmap.so.0"
readelf -d "$P/lib/$real" | grep -q 'Library soname: \[libnanmap.so.0\]' || fail "$real: soname is not libnanmap.so.0"
nm -D --defined-only "$P/lib/libnanmap.so" | awk '{ print $NF }' >"$tmp/exports"
grep -qxF nm_golden_open "$tmp/exports" || fail "libnanmap.so does not export nm_golden_open"
grep -qxF emu_round_core "$tmp/exports" || fail "libnanmap.so does not export emu_round_core"
other=$(grep -v -e '^emu_' -e '^nm_golden_' "$tmp/exports" | head -n 5)
[ -z "$other" ] || fail "libnanmap.so exports more than emu_* and nm_golden_*: $other"
! grep -q -e '^emu_hw_' -e '^ini_' -e '^emu_nan_result$' "$tmp/exports" ||
	fail "libnanmap.so exports an oracle, inih or an internal helper"
! nm -A "$P/lib/libnanmap.a" 2>/dev/null | grep -q -e ' emu_hw_has$' -e ' ini_parse' ||
	fail "libnanmap.a holds the hardware oracle or inih's users"
pass=$((pass + 1))

# ---- the example, built with pkg-config alone ----
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
flags=$(pkg-config --cflags --libs nanmap 2>"$tmp/err") || fail "pkg-config --cflags --libs nanmap"
case " $flags " in
*" -I$PWD"* | *" -L$PWD"*) fail "pkg-config names the source tree: $flags" ;;
esac
cp docs/examples/golden_check.c "$tmp/golden_check.c"
extra=""
if nm lib/libnanmap.a 2>/dev/null | grep -q __asan_init; then
	extra="-fsanitize=address,undefined"
fi
# shellcheck disable=SC2086
(cd "$tmp" && "$CC" -std=c11 -Wall -Wextra -Werror $extra golden_check.c $flags -o golden_check) \
	>"$tmp/out" 2>"$tmp/err" || fail "docs/examples/golden_check.c does not build with: $flags"
readelf -d "$tmp/golden_check" | grep -q 'Shared library: \[libnanmap.so.0\]' ||
	fail "the example built with pkg-config does not use libnanmap.so.0"
rc=0
LD_LIBRARY_PATH="$P/lib" "$tmp/golden_check" golden/softmax_ce.golden "$G" "$tmp/actual.txt" \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || fail "installed example (shared): exit status $rc"
grep -qxF "$G: 32 checked, 0 mismatched" "$tmp/out" || fail "installed example (shared): wrong report"
"$P/bin/nanmap" --version >"$tmp/out" 2>"$tmp/err" || fail "installed nanmap --version"
pass=$((pass + 1))
# the inputs example: a case's every input, through the installed headers
cp docs/examples/golden_inputs.c "$tmp/golden_inputs.c"
# shellcheck disable=SC2086
(cd "$tmp" && "$CC" -std=c11 -Wall -Wextra -Werror $extra golden_inputs.c $flags -o golden_inputs) \
	>"$tmp/out" 2>"$tmp/err" || fail "docs/examples/golden_inputs.c does not build with: $flags"
rc=0
LD_LIBRARY_PATH="$P/lib" "$tmp/golden_inputs" golden/layernorm.golden \
	layernorm.twopass.fp16-fp32.safe >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || fail "installed inputs example: exit status $rc"
grep -qxF "layernorm.twopass.fp16-fp32.safe/dx: 32 checked, 0 mismatched" "$tmp/out" ||
	fail "installed inputs example: wrong report"
pass=$((pass + 1))

# ---- the static library, with what pkg-config --static adds ----
sflags=$(pkg-config --cflags --libs --static nanmap 2>"$tmp/err") || fail "pkg-config --static nanmap"
# -l:libnanmap.a: the archive where both are installed (Libs.private stays as it is)
sflags=$(printf '%s\n' "$sflags" | sed 's/-lnanmap\( \|$\)/-l:libnanmap.a\1/')
# shellcheck disable=SC2086
(cd "$tmp" && "$CC" -std=c11 -Wall -Wextra -Werror $extra golden_check.c $sflags -o golden_static) \
	>"$tmp/out" 2>"$tmp/err" || fail "docs/examples/golden_check.c does not build with: $sflags"
! readelf -d "$tmp/golden_static" | grep -q 'libnanmap' || fail "the static example needs libnanmap.so"
rc=0
"$tmp/golden_static" golden/softmax_ce.golden "$G" "$tmp/actual.txt" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || fail "installed example (static): exit status $rc"
grep -qxF "$G: 32 checked, 0 mismatched" "$tmp/out" || fail "installed example (static): wrong report"
pass=$((pass + 1))

# ---- DESTDIR stages; the prefix stays the real one ----
rc=0
"$MAKE" --no-print-directory install DESTDIR="$tmp/stage" PREFIX=/opt/nanmap \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || fail "make install DESTDIR=: exit status $rc"
grep -qxF "prefix=/opt/nanmap" "$tmp/stage/opt/nanmap/lib/pkgconfig/nanmap.pc" ||
	fail "DESTDIR install: nanmap.pc prefix is not /opt/nanmap"
pass=$((pass + 1))

# ---- uninstall leaves nothing ----
rc=0
"$MAKE" --no-print-directory uninstall PREFIX="$P" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 0 ] || fail "make uninstall PREFIX=$P: exit status $rc"
left=$(find "$P" ! -type d | head -n 5)
[ -z "$left" ] || fail "make uninstall left: $left"
[ ! -e "$P/include/nanmap" ] || fail "make uninstall left $P/include/nanmap"
pass=$((pass + 1))

# the tree's nanmap.pc back to the default prefix
"$MAKE" --no-print-directory nanmap.pc >/dev/null 2>&1 || fail "make nanmap.pc"

# ---- skipped checks are counted as skipped, not passed ----
R=$tmp/results.txt
NANMAP_RESULTS=$R NANMAP_TC_VECTORS=$tmp/no-vectors CK_RUN_SUITE=tc CK_RUN_CASE=hardware \
	NANMAP_QUICK=1 NANMAP_COUNT_FILE=$tmp/counts.txt NANMAP_SKIP_FILE=$tmp/skipped.txt \
	build/tests/check_nanmap >"$tmp/out" 2>"$tmp/err" || fail "check_nanmap, tc hardware"
grep -qxF "check: 1 passed, 0 failed, 1 skipped" "$tmp/out" || fail "check's closing line"
NANMAP_RESULTS=$R sh tests/results.sh skip demo "a step not run" >"$tmp/out" 2>"$tmp/err"
NANMAP_RESULTS=$R sh tests/results.sh run crash sh -c 'exit 3' >>"$tmp/out" 2>"$tmp/err"
NANMAP_RESULTS=$R sh tests/results.sh run quiet true >>"$tmp/out" 2>"$tmp/err"
rc=0
NANMAP_RESULTS=$R sh tests/results.sh total >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 1 ] || fail "results total with a failed step: exit status $rc, want 1"
[ "$(tail -n 1 "$tmp/out")" = "summary: 2 passed, 1 failed, 2 skipped" ] ||
	fail "results total: '$(tail -n 1 "$tmp/out")'"
grep -qxF "failed: crash" "$tmp/out" || fail "results total does not name the failed step"
pass=$((pass + 1))

echo "install: $pass checks passed"
