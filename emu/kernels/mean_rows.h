/*
 * mean_rows.h — the mean loss the row-wise losses share (softmax_ce, bce,
 * the loss-scaled backward), written once in the row vocabulary
 * (emu/engine/krow.h): the row sources that take it include it, and so the
 * engine, gpu/kern.cu and gpu/host_rows.c compile it with them.
 */
#ifndef NANMAP_MEAN_ROWS_H
#define NANMAP_MEAN_ROWS_H

/* out = (Σ a[j], j = 0 .. n − 1) / cnt in A: one sequential fold from +0
 * into sum (step s_sum), then one division (step s_div); a holds values of
 * A, sum is scratch, cnt the count already in A. A macro, like the
 * vocabulary it is made of, since the loops have no step ids to pass. */
#define K_MEAN(s_sum, s_div, A, a, n, sum, cnt, out)                                               \
	do {                                                                                       \
		K_FILL(sum, 0, 1);                                                                 \
		K_FOLD(s_sum, ADD, A, sum, a, n, 0);                                               \
		K_OP2(s_div, DIV, A, out, sum, cnt, 0);                                            \
	} while (0)

#endif
