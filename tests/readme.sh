#!/bin/sh
# tests/readme.sh — every command in README.md prints what the README says.
#
# Convention: inside a ``` fenced block, a line "$ CMD" is a command and the
# lines after it, up to the next "$ " line or the end of the block, less the
# blank lines that end them, are its output (stdout and stderr together),
# compared character for character; a mismatch prints a diff and fails.
# (Blank lines inside an output stay: nanmap run prints one.) Everything else (blocks
# without "$ ", the lines of the Set up block, indented examples) is text,
# not run. So long commands (make sweep, make test, gpu/check.sh) are never
# written as "$ " lines, and a "$ " line needs nothing a fresh clone lacks.
#
# Each command runs on its own (sh -c, no state shared between lines, exit
# status not compared) with bin/ first on PATH, in a temporary directory that
# links every top-level entry of the repository, so the README's relative
# paths (golden/, tests/data/) work and the files a command writes land there.
# Run from the repository root after make: sh tests/readme.sh [README]
set -u

T=readme
. tests/cli/cli_lib.sh
README=${1:-README.md}
[ -f "$README" ] || { echo "readme: $README not found" >&2; exit 1; }
root=$(pwd)
bindir=$(cd "$(dirname "$N")" && pwd)

# cases: $tmp/cases/K.cmd (the command), K.exp (the expected output), K.line
mkdir -p "$tmp/cases" "$tmp/work"
awk -v d="$tmp/cases" '
	function close_case() { if (cur) { printf "%s", out > (d "/" k ".exp"); close(d "/" k ".exp") } cur = 0 }
	/^```/ { close_case(); inblock = !inblock; next }
	!inblock { next }
	/^\$ / {
		close_case(); k++; cur = 1; out = ""; blanks = ""
		print substr($0, 3) > (d "/" k ".cmd"); close(d "/" k ".cmd")
		print NR > (d "/" k ".line"); close(d "/" k ".line")
		next
	}
	!cur { next }
	/^$/ { blanks = blanks "\n"; next }
	{ out = out blanks $0 "\n"; blanks = "" }
	END { close_case(); print k + 0 > (d "/count") }
' "$README"
count=$(cat "$tmp/cases/count")
[ "$count" -gt 0 ] || fail "$README: no \$ lines in fenced blocks"

for entry in "$root"/* "$root"/.[!.]*; do
	[ -e "$entry" ] || continue
	case ${entry##*/} in .git) continue ;; esac
	ln -s "$entry" "$tmp/work/${entry##*/}"
done

k=1
while [ "$k" -le "$count" ]; do
	cmd=$(cat "$tmp/cases/$k.cmd")
	line=$(cat "$tmp/cases/$k.line")
	(cd "$tmp/work" && PATH="$bindir:$PATH" sh -c "$cmd") >"$tmp/got" 2>&1 </dev/null || true
	if ! cmp -s "$tmp/cases/$k.exp" "$tmp/got"; then
		printf '%s: FAIL: %s:%s: $ %s\n' "$T" "$README" "$line" "$cmd" >&2
		diff -u "$tmp/cases/$k.exp" "$tmp/got" | sed '1,2d' >&2
		exit 1
	fi
	pass=$((pass + 1))
	k=$((k + 1))
done

echo "readme: $pass commands print what $README says"
