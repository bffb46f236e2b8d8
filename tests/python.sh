#!/bin/sh
# tests/python.sh — the Python package's pytest suite (python/tests) over
# the built lib/libnanmap.so, and `pip install` of python/ into a scratch
# folder, whose copy must import and find its own library.
#
# The interpreter: $PYTHON, else the first of python3 and /usr/bin/python3
# that imports numpy and pytest (a pyenv python3 on PATH often has
# neither, while Debian's python3-numpy and python3-pytest sit under
# /usr/bin). None: "python: SKIPPED REASON", counted skipped, not passed.
# The counts are pytest's own (its JUnit report), written to
# $NANMAP_RESULTS as tests/results.sh sums them.
T=python
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

record() {
	[ -z "${NANMAP_RESULTS:-}" ] || printf '%s\t%s\t%s\t%s\n' "$T" "$1" "$2" "$3" >>"$NANMAP_RESULTS"
}

py=
for c in ${PYTHON:-} python3 /usr/bin/python3; do
	if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import numpy, pytest' >/dev/null 2>&1; then
		py=$c
		break
	fi
done
if [ -z "$py" ]; then
	echo "$T: SKIPPED no python3 that imports numpy and pytest (tried ${PYTHON:+$PYTHON, }python3, /usr/bin/python3; apt-get install python3-numpy python3-pytest)"
	record 0 0 1
	exit 0
fi
if [ ! -f lib/libnanmap.so ] || [ ! -x bin/nanmap ]; then
	echo "$T: lib/libnanmap.so or bin/nanmap not built (run make)" >&2
	record 0 1 0
	exit 1
fi

# the checkout's package over the checkout's library; nothing written into the tree
rc=0
(cd python && PYTHONDONTWRITEBYTECODE=1 NANMAP_LIB= "$py" -m pytest -q -rs -p no:cacheprovider \
	--junitxml="$tmp/junit.xml" tests) || rc=$?
counts=$("$py" - "$tmp/junit.xml" <<'PYEOF'
import sys
import xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("0 1 0")
    sys.exit()
s = root if root.tag == "testsuite" else root.find("testsuite")
n, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
print(n - f - e - k, f + e, k)
PYEOF
)
# shellcheck disable=SC2086
set -- $counts
passed=$1 failed=$2 skipped=$3
[ "$rc" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1

# pip install python/ (no network: no build isolation, no dependencies)
if "$py" -m pip --version >/dev/null 2>&1 && "$py" -c 'import setuptools' >/dev/null 2>&1; then
	if "$py" -m pip install -q --no-build-isolation --no-deps --no-cache-dir \
		--target "$tmp/site" ./python >"$tmp/pip.log" 2>&1 &&
		(cd "$tmp" && PYTHONPATH="$tmp/site" NANMAP_LIB= "$py" -c '
import os, nanmap
assert os.path.dirname(nanmap.lib_path) == os.path.dirname(nanmap.__file__), nanmap.lib_path
assert nanmap.round([0.1], "fp16").bits.tolist() == [0x2e66]
'); then
		passed=$((passed + 1))
	else
		echo "$T: FAIL: pip install ./python, or importing the installed copy:" >&2
		cat "$tmp/pip.log" >&2
		failed=$((failed + 1))
	fi
	rm -rf python/build python/nanmap.egg-info
else
	echo "$T: SKIPPED pip install ./python: $py has no pip or setuptools"
	skipped=$((skipped + 1))
fi
echo "$T: $passed passed, $failed failed, $skipped skipped ($py)"
record "$passed" "$failed" "$skipped"
[ "$failed" -eq 0 ]
