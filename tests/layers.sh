#!/bin/sh
# tests/layers.sh — the include rule of docs/architecture.md: data flows down
# the layers, so a file may include headers of its own layer and of the layers
# below it, never one above; and every project header is named with its
# folder from the root ("emu/engine/kern.h"), the one include path being the
# root. Run by make lint and make test; prints each offending include and
# fails, or one line with the count checked.
# Run from the repository root: sh tests/layers.sh
set -u

# rank FILE: the layer of a file, lowest first; the rooms (sweep, then the
# command), the GPU runner, then tests and benchmarks, which may use anything
rank() {
	case $1 in
	emu/core/*) echo 0 ;;
	emu/recipes/*) echo 1 ;;
	emu/engine/*) echo 2 ;;
	emu/kernels/*) echo 3 ;;
	emu/io/*) echo 4 ;;
	emu/train/*) echo 5 ;;
	emu/sweep/*) echo 6 ;;
	emu/cli/*) echo 7 ;;
	gpu/*) echo 8 ;;
	tests/* | bench/* | docs/examples/*) echo 9 ;;
	*) echo "" ;;
	esac
}

bad=0
checked=0
files=$(git ls-files '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null) ||
	files=$(find emu gpu tests bench docs/examples -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh')
for f in $files; do
	r=$(rank "$f")
	if [ -z "$r" ]; then
		echo "layers: $f: in no layer (add its folder to tests/layers.sh)"
		bad=$((bad + 1))
		continue
	fi
	for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
		checked=$((checked + 1))
		case $f in
		# the installed example includes the installed (flat) header
		docs/examples/*) continue ;;
		esac
		if [ ! -f "$h" ]; then
			echo "layers: $f: #include \"$h\" is not named from the root (emu/LAYER/NAME.h)"
			bad=$((bad + 1))
			continue
		fi
		hr=$(rank "$h")
		if [ -z "$hr" ] || [ "$hr" -gt "$r" ]; then
			echo "layers: $f includes $h, a layer above its own"
			bad=$((bad + 1))
		fi
	done
done
if [ "$bad" -gt 0 ]; then
	echo "layers: $bad includes break the layer rule"
	exit 1
fi
echo "layers: $checked includes checked, none above its file's layer"
