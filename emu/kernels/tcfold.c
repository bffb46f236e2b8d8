/*
 * tcfold.c — the Tensor Core block-FMA order as a fold over the engine's
 * vectors, for every kernel whose sum a Tensor Core computes (accum's
 * dot:tc, attention's :tc GEMMs). The model (emu/kernels/tc.c) rounds a block
 * of k products and C at once, so this is not a chain of maps: the fold
 * switches on the backend — FAST runs emu_tc_dot's blocks through a plan
 * (emu_tc_plan_value, its operands split once), EXACT the independent
 * MPFR model emu_tc_mp_dot, TRUTH the exact dot product — and records one
 * EMU_OP_FMA per block with that block's flags, one EMU_OP_ADD per fp32
 * promotion and one EMU_OP_CVT for the final conversion when promotion is on.
 */
#include <stdlib.h>

#include "emu/engine/kernels.h"
#include "emu/kernels/tc.h"

static inline size_t at(emu_ref r, size_t j)
{
	return r.off + j * r.stride;
}

int emu_fold_tc(emu_be *be, emu_tc_steps st, const emu_tc_model *m, const emu_format *in,
                const emu_format *out, emu_ref acc, emu_ref a, emu_ref b, size_t N, uint64_t base)
{
	size_t k = (size_t)m->k, chunk = m->promote_every ? m->promote_every : N;
	if (be->kind == EMU_BE_TRUTH) {
		mpfr_ptr dst = &acc.v->m[acc.off];
		mpfr_set_zero(dst, 1);
		if (emu_truth_dot_exact(dst, a, b, N)) {
			/* no step can round or raise: the loop below's notes, none
			 * with a flag, and its number */
			for (size_t i0 = 0; i0 < N; i0 += chunk) {
				size_t n = N - i0 < chunk ? N - i0 : chunk;
				for (size_t i = 0; i < n; i += k)
					emu_note(be, st.block, EMU_OP_FMA, 0, base + i0 + i);
				if (m->promote_every)
					emu_note(be, st.promote, EMU_OP_ADD, 0, base + i0);
			}
			if (m->promote_every)
				emu_note(be, st.out, EMU_OP_CVT, 0, base);
			return 0;
		}
		mpfr_t part; /* (dst is +0 still) */
		mpfr_init2(part, EMU_TRUTH_PREC);
		for (size_t i0 = 0; i0 < N; i0 += chunk) {
			size_t n = N - i0 < chunk ? N - i0 : chunk;
			mpfr_set_zero(part, 1);
			for (size_t i = 0; i < n; i += k) {
				for (size_t j = i0 + i; j < i0 + i + k && j < i0 + n; j++)
					mpfr_fma(part, &a.v->m[at(a, j)], &b.v->m[at(b, j)], part,
					         MPFR_RNDN);
				emu_note(be, st.block, EMU_OP_FMA,
				         mpfr_nan_p(part) ? EMU_FLAG_INVALID : 0, base + i0 + i);
			}
			if (m->promote_every) {
				mpfr_add(dst, dst, part, MPFR_RNDN);
				emu_note(be, st.promote, EMU_OP_ADD,
				         mpfr_nan_p(dst) ? EMU_FLAG_INVALID : 0, base + i0);
			} else {
				mpfr_set(dst, part, MPFR_RNDN);
			}
		}
		if (m->promote_every)
			emu_note(be, st.out, EMU_OP_CVT, mpfr_nan_p(dst) ? EMU_FLAG_INVALID : 0,
			         base);
		mpfr_clear(part);
		return 0;
	}
	/* the operands encoded, and on FAST split for the blocks */
	bool fast = be->kind == EMU_BE_FAST;
	emu_bits *ea = malloc((N ? N : 1) * sizeof *ea), *eb = malloc((N ? N : 1) * sizeof *eb);
	emu_tc_opnd *sa = fast ? malloc((N ? N : 1) * sizeof *sa) : NULL;
	emu_tc_opnd *sb = fast ? malloc((N ? N : 1) * sizeof *sb) : NULL;
	int rc = -1;
	if (ea && eb && (!fast || (sa && sb))) {
		for (size_t j = 0; j < N; j++) {
			ea[j] = emu_encode(in, a.v->d[at(a, j)]);
			eb[j] = emu_encode(in, b.v->d[at(b, j)]);
		}
		if (fast) {
			emu_tc_split(in, ea, N, sa);
			emu_tc_split(in, eb, N, sb);
		}
		emu_fold_tc_bits(be, st, m, in, out, acc, ea, eb, sa, sb, N, base);
		rc = 0;
	}
	free(ea);
	free(eb);
	free(sa);
	free(sb);
	return rc;
}

void emu_fold_tc_bits(emu_be *be, emu_tc_steps st, const emu_tc_model *m, const emu_format *in,
                      const emu_format *out, emu_ref acc, const emu_bits *ea, const emu_bits *eb,
                      const emu_tc_opnd *sa, const emu_tc_opnd *sb, size_t N, uint64_t base)
{
	const emu_format *f32 = emu_format_by_name("fp32");
	const emu_env rne = EMU_ENV_DEFAULT;
	emu_tc_model blk = *m;
	blk.promote_every = 0;
	size_t k = (size_t)m->k, chunk = m->promote_every ? m->promote_every : N;
	bool fast = be->kind == EMU_BE_FAST;
	emu_tc_plan plan;
	if (fast && !emu_tc_plan_init(&plan, m, in, out))
		fast = false; /* (m, in and out pass emu_tc_check: never) */
	emu_bits acc32 = emu_encode(f32, 0.0);
	double c = 0;
	for (size_t i0 = 0; i0 < N; i0 += chunk) {
		size_t n = N - i0 < chunk ? N - i0 : chunk;
		c = 0;
		for (size_t i = 0; i < n; i += k) {
			size_t nb = n - i < k ? n - i : k;
			const emu_bits *pa = ea + i0 + i, *pb = eb + i0 + i;
			unsigned fl = 0;
			if (fast) { /* c a value of out, passed on as one */
				c = emu_tc_plan_value(&plan, pa, pb, sa ? sa + i0 + i : NULL,
				                      sb ? sb + i0 + i : NULL, nb, c, &fl);
			} else {
				emu_bits cb = emu_encode(f32, c); /* exact: a value of out */
				emu_result t = emu_tc_mp_dot(&blk, in, out, pa, pb, nb, cb);
				c = emu_decode(out, t.bits);
				fl = t.flags;
			}
			emu_note(be, st.block, EMU_OP_FMA, fl, base + i0 + i);
		}
		if (m->promote_every) { /* an RNE fp32 addition on the CUDA cores */
			emu_bits args[2] = {acc32, emu_encode(f32, c)};
			emu_result s = fast ? emu_add(f32, args[0], args[1], &rne)
			                    : emu_mp_apply(EMU_OP_ADD, f32, NULL, args, &rne);
			acc32 = s.bits;
			emu_note(be, st.promote, EMU_OP_ADD, s.flags, base + i0);
		}
	}
	if (m->promote_every) {
		emu_result t = fast ? emu_convert(out, f32, acc32, &rne)
		                    : emu_mp_apply(EMU_OP_CVT, out, f32, &acc32, &rne);
		c = emu_decode(out, t.bits);
		emu_note(be, st.out, EMU_OP_CVT, t.flags, base);
	}
	acc.v->d[acc.off] = c;
}
