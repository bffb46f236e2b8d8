/*
 * nm_goldcmd.h — the golden files' cases and `nanmap golden`.
 *
 * The cases are a fixed table: every kernel and variant, storage fp16,
 * bf16, e4m3 and e5m2 with compute in the storage format or in fp32, and
 * three uniform inputs whose scale comes from the storage format (safe: 2,
 * near_overflow: its largest finite value, near_underflow: 8 × its smallest
 * normal). One file per kernel, golden/KERNEL.golden; golden/README.md
 * documents the format. The text of a file is a function of the table and
 * the backend alone, so `nanmap golden update` is deterministic and the
 * tests rebuild it on the fast backend and compare it byte for byte.
 */
#ifndef NANMAP_NM_GOLDCMD_H
#define NANMAP_NM_GOLDCMD_H

#include <stddef.h>
#include <stdint.h>

#include "emu/engine/kern.h"

typedef struct nm_gold_case {
	char id[128];
	const char *kernel, *variant;
	char policy[96];
	size_t rows, cols;
	int gen;       /* the generator's distribution: uniform (inputs in [-X, X)), or ones */
	double scale;  /* the generator's X */
	uint64_t seed; /* FNV-1a of the id: the generator's and the kernel's */
} nm_gold_case;

/* The kernels that have a golden file, in the table's order. */
size_t nm_gold_kernel_count(void);
const char *nm_gold_kernel_at(size_t i);
/* Every case of the table, in order. */
size_t nm_gold_case_count(void);
void nm_gold_case_at(size_t i, nm_gold_case *c);

/*
 * The whole text of golden/KERNEL.golden, its outputs computed on backend
 * kind (EMU_BE_EXACT for the files; the tests use EMU_BE_FAST and expect the
 * same bytes). *text is malloc'ed. 0, or -1 with a one-line reason in err.
 */
int nm_gold_text(const char *kernel, emu_be_kind kind, char **text, size_t *len, size_t *ncases,
                 size_t *nrecords, char *err, size_t errlen);

/*
 * The folder a reading command (golden list and export, check CASE/OUTPUT)
 * takes the golden files from when not told (--dir): golden/ in the current
 * directory (a checkout), else the one make install put beside the command,
 * BIN/../share/nanmap/golden (BIN: the running executable's folder, so any
 * PREFIX and a moved DESTDIR tree work), else "golden" (whose absence the
 * reader reports). golden update writes into golden/ unless told.
 */
const char *nm_golden_default_dir(void);

/*
 * nanmap golden update [--dir DIR]
 * nanmap golden list [--dir DIR]
 * nanmap golden export CASE --inputs FILE [--encodings] [--dir DIR]
 * argv[0] is "golden". Returns the exit status (0, or 2 after one line).
 */
int nm_golden_main(int argc, char **argv);

/*
 * nanmap check GOLDEN ACTUAL [--ulp N] [--nan-sign ignore|strict] [--csv]
 * argv[0] is "check". 0: every element within tolerance; 1: not; 2: bad
 * input (one line naming it).
 */
int nm_check_main(int argc, char **argv);

#endif
