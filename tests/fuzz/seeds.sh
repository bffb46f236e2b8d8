# tests/fuzz/seeds.sh — sourced by run.sh and replay.sh: the harnesses and
# the seed directory each starts from (fuzz_seeds NAME prints it).
FUZZ_ALL="npy golden case plot gputab safetensors"
fuzz_seeds() {
	case "$1" in
	npy) echo tests/fuzz/corpus ;;
	*) echo "tests/fuzz/corpus_$1" ;;
	esac
}
