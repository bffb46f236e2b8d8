/*
 * matmul.c — a GEMM, C = A·B (A m × k, B k × n), accumulated through the
 * policy's accumulator format and stored in the storage format.
 *
 * Why the store is its own step: a GEMM that accumulates in fp32 and writes
 * fp16 (cuBLAS's HGEMM with an fp32 compute type, every autocast matmul)
 * overflows only when the finished sum is stored. The output `acc` is the
 * accumulator before that store and `c` the stored result, so a run shows
 * the one finite and the other infinite, and the first failing operation is
 * the store (step "store").
 *
 * Layout: the input tensor is read as one flat sequence of m·k + k·n
 * values: A row-major (m × k), then B row-major (k × n). Parameters m, n, k
 * give the shape; by default k = cols, m = ⌈rows/2⌉ and n = rows − m, so an
 * input of rows × k values holds A in its first m rows and B in the rest
 * (read as k × n, row-major). m·k + k·n must equal rows·cols. A and B are
 * loaded as two tensors (emu_load_at: each its own scales under a scaling
 * recipe; B's elements numbered after A's).
 *
 * Variants (the order of each dot product c_ij = Σ_l a_il · b_lj):
 *   seq     A and B converted to the accumulator format, each product
 *           rounded there and added in order from +0 (the C loop); with
 *           fma=1, c = fma(a_il, b_lj, c) for l = 0..k−1;
 *   tc[:MODEL]  the Tensor Core block-FMA model (emu/kernels/tc.h, as accum's
 *           dot:tc): blocks of the model's k products and C rounded at
 *           once, fp32 promotion every N_C products (parameter promote);
 *           its input format is the storage format without a scaling
 *           recipe (the operands are the stored values), else the compute
 *           format (the dequantised ones); its output format the
 *           accumulator format where a Tensor Core can write it, else fp32.
 *
 * Element numbering: element l of the dot product of output (i, j) is
 * element (i·n + j)·k + l of its steps (the products, the fold, a Tensor
 * Core block by its first index); the conversions number A's elements
 * from 0 and B's from m·k; the store numbers (i, j) as i·n + j.
 *
 * The weight-gradient geometry (claim 19, dW = dYᵀ·X over the tokens):
 * bt=1 reads B transposed, n × k row-major (cuBLASLt's "TN" layout), and
 * loads it as an n × k tensor, so both operands' blocks and RHT tiles run
 * along k. Three parameters shape the input before anything is rounded, in
 * double: tok_a=σ and tok_b=σ multiply A's column l and B's reduction row l
 * by exp(σ·z_l), z_l one standard normal per l (seed and l: per-token
 * magnitudes; the same z_l for both, so the two operands' magnitudes are
 * correlated when both are set), and chan=C, chan_k=K multiply B's first C
 * output columns by K (outlier channels of X); corr=ρ makes A's row i
 * ρ·(B's column i mod n, as generated) + sqrt(1 − ρ²)·(its own values)
 * before its per-token factor: a gradient correlated with the activation.
 *
 * Outputs: acc (m·n, the accumulator format, or the Tensor Core's output
 * format) and c (m·n, the storage format).
 *
 * The order of operations is emu/kernels/matmul_rows.h, the one source the
 * GPU compiles too (gpu/kern.cu, one thread an output element, and
 * gpu/host_rows.c for the fake device, whose outputs tests/gpu/ compares
 * with this file's; docs/gpu.md); the Tensor Core variant's GEMM between
 * the loads and the store is emu/kernels/tc.h's here and gpu/mma.cu's
 * there. This file shapes the input, loads it and runs the GEMM.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/engine/kernels.h"
#include "emu/engine/krow.h"
#include "emu/kernels/matmul_rows.h"
#include "emu/kernels/tc.h"

static const char *const variants[] = {"seq", "tc", NULL};

enum { SEQ, TC };

/* The steps' names (the row source declares them with their ids). */
static const char *const steps[S_END - EMU_STEP0] = {K_MATMUL_STEPS(K_STEP_NAME)};
static const emu_tc_steps tc_steps = {S_TC_BLOCK, S_PROMOTE, S_TC_OUT};

/* The shape: m, n, k from the parameters and the input's size. */
static bool shape(const emu_kin *in, double *m, double *n, double *k, char *err, size_t errlen)
{
	double R = (double)in->rows, N = (double)in->cols;
	double dm = ceil(R / 2), dn = R - dm;
	if (!emu_kparam_int(in, "matmul", "k", 1, 0x1p31, N, k, err, errlen) ||
	    !emu_kparam_int(in, "matmul", "m", 1, 0x1p31, dm, m, err, errlen) ||
	    !emu_kparam_int(in, "matmul", "n", 1, 0x1p31, dn, n, err, errlen))
		return false;
	if (*n < 1 || *m * *k + *k * *n != R * N) {
		snprintf(err, errlen,
		         "matmul: m=%.0f n=%.0f k=%.0f need m·k + k·n = %.0f values, the input has "
		         "%.0f (A m × k, then B k × n; default k = cols, m = ceil(rows/2), "
		         "n = rows − m)",
		         *m, *n, *k, *m * *k + *k * *n, R * N);
		return false;
	}
	return true;
}

/* The input as the GEMM reads it (see the header): in->x itself
 * (SHAPED_NONE) when no shaping parameter is set, else a shaped copy the
 * caller frees; NULL when out of memory. */
static double shaped_none_;
#define SHAPED_NONE (&shaped_none_)
static double *shaped(const emu_kin *in, size_t m, size_t n, size_t k, bool bt, double tok_a,
                      double tok_b, size_t chan, double chan_k, double corr)
{
	if (tok_a == 0 && tok_b == 0 && (chan == 0 || chan_k == 1) && corr == 0)
		return SHAPED_NONE;
	size_t T = m * k + k * n;
	double *x = malloc(T * sizeof *x);
	if (!x)
		return NULL;
	memcpy(x, in->x, T * sizeof *x);
	double *B = x + m * k;
	for (size_t l = 0; l < k; l++) {
		/* z_l: Box-Muller on two draws keyed by (seed, l) */
		double u1 = ((double)emu_sr_bits(in->seed ^ 0x746f6b, 2 * l) + 0.5) * 0x1p-32;
		double u2 = ((double)emu_sr_bits(in->seed ^ 0x746f6b, 2 * l + 1) + 0.5) * 0x1p-32;
		double z = emu_box_muller(u1, u2);
		double fa = exp(tok_a * z), fb = exp(tok_b * z);
		for (size_t i = 0; i < m; i++) { /* A's row i follows B's column i mod n */
			size_t j = i % n;
			double bij = in->x[m * k + (bt ? j * k + l : l * n + j)];
			x[i * k + l] = fa * (corr * bij + sqrt(1 - corr * corr) * x[i * k + l]);
		}
		for (size_t j = 0; j < n; j++)
			B[bt ? j * k + l : l * n + j] *= fb * (j < chan ? chan_k : 1);
	}
	return x;
}

static int parse_variant(const char *variant, const char **spec)
{
	*spec = NULL;
	if (!variant || !strcmp(variant, "seq"))
		return SEQ;
	if (!strcmp(variant, "tc"))
		return TC;
	if (!strncmp(variant, "tc:", 3) && variant[3]) {
		*spec = variant + 3;
		return TC;
	}
	return -1;
}

/* x, and the two operands read out of it, after the shaping parameters: a
 * (m × k) and b (k × n; bt=1: n × k), each stored as a tensor of its own
 * (b's elements after a's). A kernel's own run reads them out of x itself
 * (shaped, as here), so that they are not copied. */
static int inputs(const emu_policy *pol, const char *variant, const emu_kin *in, emu_kinputs *ki,
                  char *err, size_t errlen)
{
	const char *spec;
	double dm, dn, dk, bt, tok_a, tok_b, chan, chan_k, corr, *a, *b;
	emu_kinput *ta, *tb;

	if (emu_kinputs_x(ki, pol, in, err, errlen) != 0)
		return -1;
	if (parse_variant(variant, &spec) < 0 || in->cols == 0 || in->rows == 0)
		return 0; /* the run refuses them */
	if (!shape(in, &dm, &dn, &dk, err, errlen) ||
	    !emu_kparam_int(in, "matmul", "bt", 0, 1, 0, &bt, err, errlen) ||
	    !emu_kparam_real(in, "matmul", "tok_a", 0, 10, 0, 0, &tok_a, err, errlen) ||
	    !emu_kparam_real(in, "matmul", "tok_b", 0, 10, 0, 0, &tok_b, err, errlen) ||
	    !emu_kparam_int(in, "matmul", "chan", 0, dn, 0, &chan, err, errlen) ||
	    !emu_kparam_real(in, "matmul", "chan_k", 0, 1e30, 0, 1, &chan_k, err, errlen) ||
	    !emu_kparam_real(in, "matmul", "corr", 0, 1, 0, 0, &corr, err, errlen))
		return -1;
	size_t m = (size_t)dm, n = (size_t)dn, k = (size_t)dk;
	if (emu_kinputs_add(ki, in, "matmul", "a", m, k, true, &ta, &a, err, errlen) != 0 ||
	    emu_kinputs_add(ki, in, "matmul", "b", bt ? n : k, bt ? k : n, true, &tb, &b, err,
	                    errlen) != 0)
		return -1;
	ta->fmt = tb->fmt = pol->scale == EMU_SCALE_NONE ? &pol->storage : NULL;
	ta->step = tb->step = EMU_STEP_INPUT;
	tb->e0 = (uint64_t)(m * k);
	ta->of_x = tb->of_x = true;
	if (!a && !b)
		return 0; /* given, or read out of x by the run */
	double *x = shaped(in, m, n, k, bt != 0, tok_a, tok_b, (size_t)chan, chan_k, corr);
	if (!x) {
		snprintf(err, errlen, "matmul: out of memory");
		return -1;
	}
	const double *xin = x == SHAPED_NONE ? in->x : x;
	if (x != SHAPED_NONE)
		ki->item[0].fmt = NULL; /* x itself is not what the kernel stores */
	if (a)
		memcpy(a, xin, m * k * sizeof *a);
	if (b)
		memcpy(b, xin + m * k, k * n * sizeof *b);
	if (x != SHAPED_NONE)
		free(x);
	return 0;
}

/* what the output loop's parts share (emu_rows) */
typedef struct {
	int v, fma;
	bool bt;
	const emu_format *C, *A, *I, *O;
	size_t n, k;
	const emu_tc_model *model;
	emu_vec *Av, *Bv, *acc;
	const emu_bits *EA, *EB; /* tc on fast and exact: A's rows and B's columns encoded in I */
	emu_tc_opnd *SA, *SB;    /* tc on fast: those encodings split */
	struct mm_lanes *L;      /* tc on fast: its blocks as lanes, or NULL */
} mm_rows;

/* A tc GEMM's blocks as lanes (emu_tc_plan_lanes): the plan, A's values
 * and alignment exponents row-major (m × k), B's in panels of W =
 * EMU_TC_LANES columns, k-major within a panel (XB[(j / W)·Wk + Wl + j mod
 * W] the value of B's element (l, j), XEB at the same place its exponent;
 * the columns past n zero), so that a row's W outputs read one stream */
typedef struct mm_lanes {
	emu_tc_plan plan;
	double *XA, *XB;
	int32_t *XEA, *XEB;
} mm_lanes;

/* nl <= EMU_TC_LANES output elements of one row from o on, side by side:
 * their blocks as lanes until the lanes leave one (specials, a tiny or
 * overflowing sum), that output's blocks from there on one by one
 * (emu_tc_plan_value); each output's blocks noted in order, as
 * emu_fold_tc_bits notes them (the model has no promotion): the lanes'
 * blocks at once (inexact their only flag), then the rest one by one. */
static void mm_tc_lanes(emu_be *be, const mm_rows *q, size_t o, size_t nl)
{
	enum { W = EMU_TC_LANES };
	const mm_lanes *L = q->L;
	size_t n = q->n, k = q->k, i = o / n, j = o % n, kb = (size_t)q->model->k;
	size_t l0 = j % W; /* the panel's lanes l0 .. l0 + nl − 1 */
	size_t panel = (j / W) * W * k;
	double c[W] = {0}, cleft[W] = {0};
	unsigned inex[W], gone = 0, all = (1u << nl) - 1;
	uint64_t ninex[W] = {0}, nlane[W] = {0};
	size_t from[W]; /* the first block the lanes left (k: none) */
	for (size_t l = 0; l < nl; l++)
		from[l] = k;
	for (size_t b = 0; b < k && gone != all; b += kb) {
		size_t nb = k - b < kb ? k - b : kb, pb = panel + W * b;
		unsigned left = emu_tc_plan_lanes(&L->plan, L->XA + i * k + b, L->XEA + i * k + b,
		                                  L->XB + pb, L->XEB + pb, W, nb, c, inex) >>
		                l0;
		for (size_t l = 0; l < nl; l++) {
			if (gone >> l & 1)
				continue;
			if (left >> l & 1) { /* its C as the block had it */
				from[l] = b;
				cleft[l] = c[l0 + l];
				gone |= 1u << l;
				continue;
			}
			ninex[l] += inex[l0 + l];
			nlane[l]++;
		}
	}
	for (size_t l = 0; l < nl; l++) {
		emu_a_flags f = {{0}, ninex[l] ? EMU_FLAG_INEXACT : 0, UINT64_MAX, 0};
		f.count[__builtin_ctz(EMU_FLAG_INEXACT)] = ninex[l];
		if (nlane[l])
			emu_note_n(be, S_TC_BLOCK, EMU_OP_FMA, nlane[l], &f);
		double cl = from[l] < k ? cleft[l] : c[l0 + l];
		for (size_t b = from[l]; b < k; b += kb) {
			size_t nb = k - b < kb ? k - b : kb, ia = i * k + b, ib = (j + l) * k + b;
			unsigned fl = 0;
			cl = emu_tc_plan_value(&L->plan, q->EA + ia, q->EB + ib, q->SA + ia, q->SB + ib,
			                       nb, cl, &fl);
			emu_note(be, S_TC_BLOCK, EMU_OP_FMA, fl, (uint64_t)(o + l) * k + b);
		}
		q->acc->d[o + l] = cl;
	}
}

/* output elements o0 .. o1 − 1 (row-major), on be's own scratch */
static int mm_part(emu_be *be, size_t o0, size_t o1, void *arg)
{
	const mm_rows *q = arg;
	size_t n = q->n, k = q->k;
	if (q->v == SEQ) {
		/* up to MM_CHAINS outputs of one row at once */
		enum { MM_CHAINS = 16 };
		emu_vec *p = emu_vec_new(be, MM_CHAINS * k);
		if (!p)
			return -1;
		for (size_t o = o0, m; o < o1; o += m) {
			m = n - o % n < o1 - o ? n - o % n : o1 - o;
			m = m < MM_CHAINS ? m : MM_CHAINS;
			k_matmul_dot(be, q->fma, q->C, q->A, q->Av, q->Bv, q->bt, n, k, o, m, p,
			             q->acc);
		}
		return 0;
	}
	if (q->L) {
		for (size_t o = o0, nl; o < o1; o += nl) {
			nl = n - o % n < o1 - o ? n - o % n : o1 - o;
			/* within one panel of B */
			nl = nl < EMU_TC_LANES - o % n % EMU_TC_LANES
			         ? nl
			         : EMU_TC_LANES - o % n % EMU_TC_LANES;
			mm_tc_lanes(be, q, o, nl);
		}
		return 0;
	}
	for (size_t o = o0; o < o1; o++) {
		size_t i = o / n, j = o % n;
		if (q->EA) {
			emu_fold_tc_bits(be, tc_steps, q->model, q->I, q->O, emu_at(q->acc, o),
			                 q->EA + i * k, q->EB + j * k, q->SA ? q->SA + i * k : NULL,
			                 q->SB ? q->SB + j * k : NULL, k, (uint64_t)o * k);
			continue;
		}
		emu_ref b = q->bt ? emu_row(q->Bv, j * k) : emu_strided(q->Bv, j, n);
		if (emu_fold_tc(be, tc_steps, q->model, q->I, q->O, emu_at(q->acc, o),
		                emu_row(q->Av, i * k), b, k, (uint64_t)o * k) != 0)
			return -1;
	}
	return 0;
}

/* tc on fast and exact: A's rows and B's columns (bt: B's rows) encoded
 * in I once, k values each, as emu_fold_tc would encode them for every
 * output element, and on fast split once for the blocks (split), and laid
 * out in L for lanes when the model's blocks run as lanes (then q->L = L);
 * false out of memory */
static bool mm_encode(mm_rows *q, size_t m, bool split, mm_lanes *L)
{
	size_t n = q->n, k = q->k;
	emu_bits *EA = malloc((m * k + 1) * sizeof *EA);
	emu_bits *EB = malloc((n * k + 1) * sizeof *EB);
	if (!EA || !EB) {
		free(EA);
		free(EB);
		return false;
	}
	for (size_t i = 0; i < m * k; i++)
		EA[i] = emu_encode(q->I, q->Av->d[i]);
	for (size_t j = 0; j < n; j++)
		for (size_t l = 0; l < k; l++)
			EB[j * k + l] = emu_encode(q->I, q->Bv->d[q->bt ? j * k + l : l * n + j]);
	q->EA = EA;
	q->EB = EB;
	if (!split)
		return true;
	q->SA = malloc((m * k + 1) * sizeof *q->SA);
	q->SB = malloc((n * k + 1) * sizeof *q->SB);
	if (!q->SA || !q->SB)
		return false;
	emu_tc_split(q->I, EA, m * k, q->SA);
	emu_tc_split(q->I, EB, n * k, q->SB);
	if (q->model->promote_every || !emu_tc_plan_init(&L->plan, q->model, q->I, q->O) ||
	    !emu_tc_plan_lanes_ok(&L->plan))
		return true;
	enum { W = EMU_TC_LANES };
	size_t np = (n + W - 1) / W; /* panels */
	L->XA = malloc((m * k + 1) * sizeof *L->XA);
	L->XEA = malloc((m * k + 1) * sizeof *L->XEA);
	L->XB = calloc(np * W * k + 1, sizeof *L->XB);
	L->XEB = calloc(np * W * k + 1, sizeof *L->XEB);
	double *x = malloc((k + 1) * sizeof *x);
	int32_t *e = malloc((k + 1) * sizeof *e);
	if (!L->XA || !L->XEA || !L->XB || !L->XEB || !x || !e) {
		free(x);
		free(e);
		return false;
	}
	emu_tc_split_lanes(q->I, q->SA, m * k, L->XA, L->XEA);
	for (size_t j = 0; j < n; j++) { /* column j into its panel */
		emu_tc_split_lanes(q->I, q->SB + j * k, k, x, e);
		size_t pj = (j / W) * W * k + j % W;
		for (size_t l = 0; l < k; l++) {
			L->XB[pj + W * l] = x[l];
			L->XEB[pj + W * l] = e[l];
		}
	}
	free(x);
	free(e);
	q->L = L;
	return true;
}

static int run(emu_be *be, const emu_policy *pol, const char *variant, const emu_kin *in,
               emu_kout *out, char *err, size_t errlen)
{
	const emu_format *S = &pol->storage, *A = &pol->accum;
	const char *spec;
	int v = parse_variant(variant, &spec);
	if (v < 0 || in->cols == 0 || in->rows == 0) {
		snprintf(err, errlen,
		         v < 0 ? "matmul: unknown variant '%s' (seq, tc[:MODEL])"
		               : "matmul: empty input%s",
		         v < 0 ? variant : "");
		return -1;
	}
	double dm, dn, dk, fma, promote, bt, tok_a, tok_b, chan, chan_k, corr;
	if (!shape(in, &dm, &dn, &dk, err, errlen) ||
	    !emu_kparam_int(in, "matmul", "fma", 0, 1, 0, &fma, err, errlen) ||
	    !emu_kparam_int(in, "matmul", "promote", -1, 1e12, -1, &promote, err, errlen) ||
	    !emu_kparam_int(in, "matmul", "bt", 0, 1, 0, &bt, err, errlen) ||
	    !emu_kparam_real(in, "matmul", "tok_a", 0, 10, 0, 0, &tok_a, err, errlen) ||
	    !emu_kparam_real(in, "matmul", "tok_b", 0, 10, 0, 0, &tok_b, err, errlen) ||
	    !emu_kparam_int(in, "matmul", "chan", 0, dn, 0, &chan, err, errlen) ||
	    !emu_kparam_real(in, "matmul", "chan_k", 0, 1e30, 0, 1, &chan_k, err, errlen) ||
	    !emu_kparam_real(in, "matmul", "corr", 0, 1, 0, 0, &corr, err, errlen))
		return -1;
	if (fma && v != SEQ) {
		snprintf(err, errlen, "matmul: fma=1 applies to seq");
		return -1;
	}
	size_t m = (size_t)dm, n = (size_t)dn, k = (size_t)dk;
	emu_steps(be, steps, S_END - EMU_STEP0);
	/* the Tensor Core model, its input format I and its output format O */
	bool tc_raw = v == TC && pol->scale == EMU_SCALE_NONE;
	const emu_format *I = tc_raw ? S : &pol->compute, *O = A;
	emu_tc_model model;
	if (v == TC && emu_tc_setup("matmul", spec, I, A, 0, (long long)promote, &model, &O, err,
	                            errlen) != EMU_OK)
		return -1;
	emu_kinputs ki;
	if (emu_kinputs_take(&emu_kernel_matmul, pol, variant, in, &ki, err, errlen) != 0)
		return -1;
	/* a and b given, or read out of x here (shaped as inputs() shapes them) */
	const double *ain = emu_kinputs_find(&ki, "a")->v, *bin = emu_kinputs_find(&ki, "b")->v;
	emu_vec *acc = emu_kout_vec(be, out, "acc", m * n, O);
	emu_vec *c = emu_kout_vec(be, out, "c", m * n, S);
	emu_vec *Av = emu_vec_new(be, m * k), *Bv = emu_vec_new(be, k * n);
	double *x = ain && bin
	                ? SHAPED_NONE
	                : shaped(in, m, n, k, bt != 0, tok_a, tok_b, (size_t)chan, chan_k, corr);
	if (!acc || !c || !Av || !Bv || !x)
		goto oom;
	const double *xin = x == SHAPED_NONE ? in->x : x;
	if (!ain)
		ain = xin;
	if (!bin)
		bin = xin + m * k;
	if (tc_raw) { /* the stored values themselves */
		emu_input(be, EMU_STEP_INPUT, S, emu_row(Av, 0), ain, 1, m * k, 0, NULL);
		emu_input(be, EMU_STEP_INPUT, S, emu_row(Bv, 0), bin, 1, k * n, m * k, NULL);
	} else if (emu_load_at(be, pol, ain, m, k, 0, Av) != 0 ||
	           emu_load_at(be, pol, bin, bt ? n : k, bt ? k : n, (uint64_t)(m * k), Bv) != 0) {
		goto oom;
	}
	if (x != SHAPED_NONE)
		free(x);
	x = NULL;
	/* the row source, emu/kernels/matmul_rows.h: the GPU's threads run the
	 * output elements one each (seq), or store the GEMM's (tc) */
	mm_rows q = {v,      (int)fma, bt != 0, &pol->compute, A,    I,    O,    n,   k,
	             &model, Av,       Bv,      acc,           NULL, NULL, NULL, NULL, NULL};
	mm_lanes lanes; /* q.L when mm_encode finds the plan's blocks run as lanes */
	memset(&lanes, 0, sizeof lanes);
	if (v == SEQ) {
		k_matmul_to_accum(be, A, Av, 0, m * k, Bv, 0, k * n, m * k);
		emu_truth_split(be, Av, Bv); /* each row is read by n (m) dot products */
		/* FAST gathers each chunk's operands chain after chain: B's columns
		 * laid out as rows once (the TN layout reads the same values, and
		 * elements are numbered by position in the sum, not in memory) */
		emu_vec *BT = be->kind == EMU_BE_FAST && !bt && n > 1 ? emu_vec_new(be, k * n) : NULL;
		if (BT) {
			emu_gather_chains(BT->d, Bv->d, n, 1, k, n); /* column j as row j */
			q.Bv = BT;
			q.bt = true;
		}
	}
	int prc = v == TC && be->kind != EMU_BE_TRUTH && !mm_encode(&q, m, be->kind == EMU_BE_FAST, &lanes)
	              ? -1
	              : emu_rows(be, m * n, 2 * (uint64_t)k, mm_part, &q);
	free((void *)q.EA);
	free((void *)q.EB);
	free(q.SA);
	free(q.SB);
	free(lanes.XA);
	free(lanes.XEA);
	free(lanes.XB);
	free(lanes.XEB);
	emu_truth_split_free(be);
	if (prc != 0)
		goto oom;
	if (v == SEQ)
		k_matmul_store(be, S, acc, c, 0, m * n);
	else
		k_matmul_tc_store(be, S, &pol->compute, O, acc, acc, c, 0, m * n);
	emu_kinputs_free(&ki);
	return 0;
oom:
	if (x && x != SHAPED_NONE)
		free(x);
	emu_kinputs_free(&ki);
	snprintf(err, errlen, "matmul: out of memory");
	return -1;
}

const emu_kernel emu_kernel_matmul = {
    "matmul",
    variants,
    "m=M, n=N, k=K (A m x k then B k x n, row-major, in the input; default k = cols, "
    "m = ceil(rows/2), n = rows - m); fma=0|1 (seq: one FMA per step); promote=N_C (tc: fp32 "
    "promotion every N_C products); bt=0|1 (B read as n x k, row-major: the TN layout); "
    "tok_a=S, tok_b=S (A's column l and B's row l times exp(S·z_l), z_l normal per l), "
    "chan=C, chan_k=K (B's first C output columns times K); corr=R (A's row i correlated "
    "with B's column i mod n)",
    run,
    inputs,
    steps,
    S_END - EMU_STEP0,
};
