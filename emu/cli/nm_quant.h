/*
 * nm_quant.h — `nanmap quant`: what a scaling recipe (emu/recipes/recipe.h) does
 * to a tensor or a whole checkpoint: saturation, flushes, SQNR, relative
 * error, SR bias, the block scales' exponents, the worst blocks, and the
 * dequantised tensor or its encodings. docs/quant.md is the reference.
 */
#ifndef NANMAP_NM_QUANT_H
#define NANMAP_NM_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "emu/recipes/recipe.h"

/*
 * nanmap quant --recipe NAME|SPEC (--input FILE | --gen DIST --n N [--rows R]
 *              [--scale X] [--outliers K:F]) [--role act|weight|grad]
 *              [--colwise] [--tensor NAME]... [--seed S] [--per-block [K]]
 *              [--csv|--json] [--out FILE] [--encodings] [--progress] [--list]
 * argv[0] is the command's name ("quant"). Returns the exit status: 0, or 2
 * after exactly one line on stderr.
 */
int nm_quant_main(int argc, char **argv);

/*
 * The command's quantising path on a tensor in memory (rows × cols,
 * row-major): the same parts, passes and statistics as `nanmap quant`
 * without reading or writing files; for the bench. 0, or -1 when out of
 * memory.
 */
int nm_quant_stream(const emu_recipe *r, emu_role role, bool colwise, const double *x, size_t rows,
                    size_t cols, uint64_t seed, emu_qstats *st);

#endif
