# tests/sweep/sweep_lib.sh — what the sweep's CLI test scripts share, sourced
# after tests/cli/cli_lib.sh: sweep, status, said and same. sweep_opts (empty
# unless the script sets it) are options every sweep is given.

# sweep DIR [--out|--plots|--docs FOLDER] ARGS...: nanmap sweep with every
# folder under DIR but the one named (an option may be given once).
sweep() {
	d=$1
	shift
	out="$d/results" plots="$d/plots" docs="$d/docs"
	case ${1:-} in
	--out) out=$2 && shift 2 ;;
	--plots) plots=$2 && shift 2 ;;
	--docs) docs=$2 && shift 2 ;;
	esac
	# shellcheck disable=SC2086 # sweep_opts are words
	run sweep ${sweep_opts:-} --out "$out" --plots "$plots" --docs "$docs" "$@"
}

# status WANT DESC: the last run's exit status.
status() {
	[ "$rc" -eq "$1" ] || fail "$2: exit status $rc, want $1"
}

# said LINE DESC: LINE is a whole line of the last run's stderr.
said() {
	grep -qxF -- "$1" "$tmp/err" || fail "$2: stderr has no line '$1'"
}

# same A B DESC: the trees A and B hold the same files with the same bytes
# (but for results/.state/, the sweep's bookkeeping: search timings and
# all), and nothing half-written (no temporaries, no journal) is left in B.
same() {
	(cd "$1" && find . -type f ! -path './results/.state/*' | sort) >"$tmp/la"
	(cd "$2" && find . -type f ! -path './results/.state/*' | sort) >"$tmp/lb"
	cmp -s "$tmp/la" "$tmp/lb" || { diff "$tmp/la" "$tmp/lb" >&2; fail "$3: other files"; }
	while read -r f; do
		cmp -s "$1/$f" "$2/$f" || fail "$3: $f differs"
	done <"$tmp/la"
	left=$(cd "$2" && find . -name '*.tmp.*' -o -name '*.journal')
	[ -z "$left" ] || fail "$3: left behind: $left"
	pass=$((pass + 1))
}
