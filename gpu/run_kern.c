/*
 * run_kern.c — the runner's kern step (gpu/run.h): the training kernels of
 * the row sources (softmax_ce, layernorm, rmsnorm, bce, backward, matmul,
 * batchnorm, the optimizers) on the GPU against the engine's kernels on
 * the fast backend, and replayed on the host with the GPU's tables.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/kernels/optimizer.h"
#include "gpu/run.h"

/* ---- kern: the training kernels of gpu/rows.h in the emulator's order of operations ---- */

bool kern_engine(const emu_kernel *k, const emu_policy *pol, const char *variant, const emu_kin *in,
                 emu_run *er)
{
	char err[256];
	if (emu_run_kernel(k, pol, variant, in, EMU_BE_FAST, er, err, sizeof err) == 0)
		return true;
	emu_run_free(er);
	step_failed("kern", err);
	return false;
}

const double *kern_role(const char *step, const emu_kernel *k, const emu_policy *pol,
                        const char *variant, const emu_kin *in, const char *role, emu_kinputs *ki)
{
	char err[256];
	if (emu_kernel_inputs(k, pol, variant, in, ki, err, sizeof err)) {
		step_failed(step, err);
		return NULL;
	}
	const emu_kinput *t = emu_kinputs_find(ki, role);
	if (t && t->v)
		return t->v;
	snprintf(err, sizeof err, "%s %s: no tensor %s among its inputs", k->name,
	         variant ? variant : "", role);
	emu_kinputs_free(ki);
	step_failed(step, err);
	return NULL;
}

/* The second pass of step_kern: fp32's exp, log and log1p correctly rounded
 * on the GPU, so its rows must be identical (and are tagged "cr-fp32"). */
static bool kern_cr;

static void kern_compare(const char *kname, const char *fmts, const emu_run *er,
                         const kern_out *outs, size_t nouts)
{
	char tagged[64];
	snprintf(tagged, sizeof tagged, "%s%s", kname, kern_cr ? " cr-fp32" : "");
	for (int k = 0; k < er->out.n; k++) {
		const emu_kout_item *it = &er->out.item[k];
		const kern_out *g = NULL;
		for (size_t i = 0; i < nouts; i++)
			if (!strcmp(outs[i].name, it->name))
				g = &outs[i];
		if (!g)
			continue;
		if (it->n != g->n) {
			step_failed("kern", "unexpected output size");
			continue;
		}
		/* the approximate exp, log and rsqrt of fp16/bf16 (FACTS §2), expf
		 * and logf: 2 ulp; none in the cr-fp32 pass */
		gpu_cmp row;
		gpu_cmp_init(&row, "kern", tagged, fmts, it->name, it->fmt,
		             (gpu_tol){kern_cr ? 0 : 2, true});
		for (size_t i = 0; i < it->n; i++)
			gpu_cmp_one(&row, i, i, emu_from_float(it->fmt, g->v[i], &env_rne).bits,
			            emu_encode(it->fmt, emu_kout_d(NULL, it, i)));
		add_row(&row);
	}
}

/* GPU outputs against gpu/rows.h on the host with the GPU's tables: exact. */
static void kern_replay(const char *kname, const char *fmts, const kern_out *g, const kern_out *m,
                        const emu_format *const *f, size_t n)
{
	char name[64];
	snprintf(name, sizeof name, "%s replay%s", kname, kern_cr ? " cr-fp32" : "");
	for (size_t k = 0; k < n; k++) {
		gpu_cmp row;
		gpu_cmp_init(&row, "kern", name, fmts, g[k].name, f[k], (gpu_tol){0, true});
		for (size_t i = 0; i < g[k].n; i++)
			gpu_cmp_one(&row, i, i, emu_from_float(f[k], g[k].v[i], &env_rne).bits,
			            emu_from_float(f[k], m[k].v[i], &env_rne).bits);
		add_row(&row);
	}
}

bool kern_tables(const gpu_opts *o, gpu_tables *t)
{
	char path[700];
	const char *p = o->gpu_tables;
	if (!p) {
		snprintf(path, sizeof path, "%s/gpu-tables.txt", o->out_dir);
		FILE *fp = fopen(path, "r");
		if (!fp) {
			gpu_report_note(&run_rep, "kern: no replay rows: no --gpu-tables and no %s",
			                path);
			return false;
		}
		fclose(fp);
		p = path;
	}
	if (gpu_tables_load(p, t, run_err, sizeof run_err)) {
		step_failed("kern", run_err);
		return false;
	}
	gpu_report_note(&run_rep, "kern: replay rows use the tables in %s", p);
	return true;
}

/* backward at loss scales 1 and 2^16 (fp16 gradients overflow at the
 * second on some elements, and underflow at the first) */
static void kern_backward(const gpu_opts *o, const emu_policy *pol, const char *fmts,
                          const gpu_tables *tabs)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const emu_format *f32 = fmt("fp32");
	const size_t R = o->quick ? 16 : 64, D = o->quick ? 32 : 128, K = 8, G = D * K + R * D;
	double *x = malloc(R * D * sizeof *x);
	float *xs = malloc(R * D * sizeof *xs), *ws = malloc(D * K * sizeof *ws);
	float *grad = malloc(G * sizeof *grad), *un = malloc(G * sizeof *un);
	float *mgrad = malloc(G * sizeof *mgrad), *mun = malloc(G * sizeof *mun);
	if (!x || !xs || !ws || !grad || !un || !mgrad || !mun) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < R * D; i++) {
		x[i] = ((double)(rnd(o->seed, 500, i) >> 40) * 0x1p-24 - 0.5) * 4.0;
		xs[i] = (float)emu_decode(S, emu_from_double(S, x[i], &pol->env).bits);
	}
	/* W (D × K, K its default classes) as emu/kernels/backward.c draws it */
	emu_kinputs ki;
	emu_kin inw = {x, R, D, NULL, 0, o->seed, NULL, 0};
	const double *wd = kern_role("kern", &emu_kernel_backward, pol, "maxsub", &inw, "w", &ki);
	if (!wd)
		goto out;
	for (size_t i = 0; i < D * K; i++)
		ws[i] = (float)emu_decode(S, emu_from_double(S, wd[i], &pol->env).bits);
	emu_kinputs_free(&ki);
	for (int sc = 0; sc < 2; sc++) {
		double scale = sc ? 65536.0 : 1.0;
		float inv = (float)emu_decode(f32, emu_from_double(f32, 1 / scale, &env_rne).bits);
		float loss, found;
		emu_kparam par = {"scale", scale};
		emu_kin in = {x, R, D, &par, 1, o->seed, NULL, 0};
		emu_run er;
		char kname[40];
		snprintf(kname, sizeof kname, "backward scale=%g", scale);
		if (gpu_dev_backward(kfmt(S), kfmt(C), kfmt(A), xs, ws, R, D, K, (float)scale, inv,
		                     grad, un, &loss, &found, run_err, sizeof run_err)) {
			step_failed("kern", run_err);
			continue;
		}
		if (!kern_engine(&emu_kernel_backward, pol, "maxsub", &in, &er))
			continue;
		kern_out outs[] = {{"loss", &loss, 1},
		                   {"dW", un, D * K},
		                   {"dX", un + D * K, R * D},
		                   {"found_inf", &found, 1},
		                   {"grad", grad, G}};
		kern_compare(kname, fmts, &er, outs, 5);
		emu_run_free(&er);
		float mloss, mfound;
		if (tabs && gpu_rows_backward(tabs, kfmt(S), kfmt(C), kfmt(A), xs, ws, R, D, K,
		                              (float)scale, inv, mgrad, mun, &mloss, &mfound,
		                              run_err, sizeof run_err)) {
			step_failed("kern", run_err);
		} else if (tabs) {
			kern_out mo[] = {{"loss", &mloss, 1},
			                 {"dW", mun, D * K},
			                 {"dX", mun + D * K, R * D},
			                 {"found_inf", &mfound, 1},
			                 {"grad", mgrad, G}};
			const emu_format *f[] = {A, f32, f32, f32, S};
			kern_replay(kname, fmts, outs, mo, f, 5);
		}
	}
out:
	free(x);
	free(xs);
	free(ws);
	free(grad);
	free(un);
	free(mgrad);
	free(mun);
}

/* rmsnorm (its defaults: eps 1e-6, g = 1, dy = ±1 from the seed) on
 * layernorm's rows, and bce on logits uniform in ±(1 + r mod 4), each
 * variant against the fast backend, and replayed with the GPU's tables where
 * they hold every approximate function the variant calls (not bce stable's
 * log1p). bce's loss is the mean of every element, so one NaN term hides the
 * rest: within ±4 even bf16's 1 + exp(−x) stays above 1, every naive term
 * is finite, and the loss row proves the order of the sum too. */
static void kern_norm_bce(const gpu_opts *o, const emu_policy *pol, const char *fmts,
                          const gpu_tables *rt, const double *xl, const float *xls,
                          const float *dys, size_t R, size_t N)
{
	/* the kernels' own lists: a variant's index is its row source's code */
	const char *const *rn_var = emu_kernel_rmsnorm.variants, *const *bce_var =
	                                                             emu_kernel_bce.variants;
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const emu_format *f32 = fmt("fp32");
	float *y = malloc(R * N * sizeof *y), *dx = malloc(R * N * sizeof *dx);
	float *my = malloc(R * N * sizeof *my), *mdx = malloc(R * N * sizeof *mdx);
	float *rs = malloc(R * sizeof *rs), *ms = malloc(R * sizeof *ms);
	float *mrs = malloc(R * sizeof *mrs), *mms = malloc(R * sizeof *mms);
	float *dg = malloc(N * sizeof *dg), *mdg = malloc(N * sizeof *mdg);
	double *x = malloc(R * N * sizeof *x);
	float *xs = malloc(R * N * sizeof *xs), *ty = malloc(R * N * sizeof *ty);
	float gs = (float)emu_decode(S, emu_from_double(S, 1.0, &pol->env).bits);
	if (!y || !dx || !my || !mdx || !rs || !ms || !mrs || !mms || !dg || !mdg || !x || !xs ||
	    !ty) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (size_t r = 0; r < R; r++)
		for (size_t j = 0; j < N; j++) {
			double u = (double)(rnd(o->seed, 410, r * N + j) >> 40) * 0x1p-24;
			x[r * N + j] = (u - 0.5) * 2.0 * (double)(1 + r % 4);
			xs[r * N + j] =
			    (float)emu_decode(S, emu_from_double(S, x[r * N + j], &pol->env).bits);
		}
	/* bce's targets (0 or 1) as emu/kernels/bce.c draws them */
	emu_kinputs ki;
	emu_kin inb = {x, R, N, NULL, 0, o->seed, NULL, 0};
	const double *tv = kern_role("kern", &emu_kernel_bce, pol, "naive", &inb, "target", &ki);
	if (!tv)
		goto out;
	for (size_t i = 0; i < R * N; i++)
		ty[i] = (float)tv[i];
	emu_kinputs_free(&ki);
	for (int v = 0; rn_var[v]; v++) {
		char kname[40];
		emu_run er;
		const emu_format *SC = v == 2 ? f32 : C; /* fp32stats: statistics in fp32 */
		float epsc = (float)emu_decode(SC, emu_from_double(SC, 1e-6, &pol->env).bits);
		snprintf(kname, sizeof kname, "rmsnorm %s", rn_var[v]);
		emu_kin in = {xl, R, N, NULL, 0, o->seed, NULL, 0};
		if (gpu_dev_rmsnorm(v, kfmt(S), kfmt(C), kfmt(A), xls, dys, R, N, epsc, gs, y, dx,
		                    rs, ms, dg, run_err, sizeof run_err)) {
			step_failed("kern", run_err);
			continue;
		}
		if (!kern_engine(&emu_kernel_rmsnorm, pol, rn_var[v], &in, &er))
			continue;
		kern_out outs[] = {{"y", y, R * N},
		                   {"dx", dx, R * N},
		                   {"rstd", rs, R},
		                   {"ms", ms, R},
		                   {"dg", dg, N}};
		kern_compare(kname, fmts, &er, outs, 5);
		emu_run_free(&er);
		if (rt && gpu_rows_rmsnorm(rt, v, kfmt(S), kfmt(C), kfmt(A), xls, dys, R, N, epsc,
		                           gs, my, mdx, mrs, mms, mdg, run_err, sizeof run_err)) {
			step_failed("kern", run_err);
		} else if (rt) {
			kern_out mo[] = {{"y", my, R * N},
			                 {"dx", mdx, R * N},
			                 {"rstd", mrs, R},
			                 {"ms", mms, R},
			                 {"dg", mdg, N}};
			const emu_format *f[] = {S, S, SC, SC, A};
			kern_replay(kname, fmts, outs, mo, f, 5);
		}
	}
	for (int v = 0; bce_var[v]; v++) {
		char kname[40];
		emu_run er;
		float loss, mloss;
		snprintf(kname, sizeof kname, "bce %s", bce_var[v]);
		emu_kin in = {x, R, N, NULL, 0, o->seed, NULL, 0};
		if (gpu_dev_bce(v, kfmt(S), kfmt(C), kfmt(A), xs, ty, R, N, y, &loss, run_err,
		                sizeof run_err)) {
			step_failed("kern", run_err);
			continue;
		}
		if (!kern_engine(&emu_kernel_bce, pol, bce_var[v], &in, &er))
			continue;
		kern_out outs[] = {{"grad", y, R * N}, {"loss", &loss, 1}};
		kern_compare(kname, fmts, &er, outs, 2);
		emu_run_free(&er);
		if (rt && v == 0 &&
		    gpu_rows_bce(rt, v, kfmt(S), kfmt(C), kfmt(A), xs, ty, R, N, my, &mloss,
		                 run_err, sizeof run_err)) {
			step_failed("kern", run_err);
		} else if (rt && v == 0) {
			kern_out mo[] = {{"grad", my, R * N}, {"loss", &mloss, 1}};
			const emu_format *f[] = {S, A};
			kern_replay(kname, fmts, outs, mo, f, 2);
		}
	}
out:
	free(x);
	free(xs);
	free(ty);
	free(y);
	free(dx);
	free(my);
	free(mdx);
	free(rs);
	free(ms);
	free(mrs);
	free(mms);
	free(dg);
	free(mdg);
}

/* matmul seq (fma 0 and 1), A·B with the input's default shape (A the
 * first ⌈R/2⌉ rows, B the rest, k = N) on values uniform in ±2, against
 * the fast backend: acc and c. No replay: it calls no approximate
 * function, so the tables change nothing. */
static void kern_matmul(const gpu_opts *o, const emu_policy *pol, const char *fmts, size_t R,
                        size_t N)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const size_t m = (R + 1) / 2, n = R - m, k = N;
	double *x = malloc(R * N * sizeof *x);
	float *xs = malloc(R * N * sizeof *xs);
	float *acc = malloc(m * n * sizeof *acc), *c = malloc(m * n * sizeof *c);
	if (!x || !xs || !acc || !c) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < R * N; i++) {
		x[i] = ((double)(rnd(o->seed, 420, i) >> 40) * 0x1p-24 - 0.5) * 4.0;
		xs[i] = (float)emu_decode(S, emu_from_double(S, x[i], &pol->env).bits);
	}
	for (int fma = 0; fma < 2; fma++) {
		char kname[40];
		emu_run er;
		emu_kparam par = {"fma", fma};
		emu_kin in = {x, R, N, &par, 1, o->seed, NULL, 0};
		snprintf(kname, sizeof kname, fma ? "matmul seq fma=1" : "matmul seq");
		if (gpu_dev_matmul(fma, kfmt(S), kfmt(C), kfmt(A), xs, m, n, k, acc, c, run_err,
		                   sizeof run_err)) {
			step_failed("kern", run_err);
			continue;
		}
		if (!kern_engine(&emu_kernel_matmul, pol, "seq", &in, &er))
			continue;
		kern_out outs[] = {{"acc", acc, m * n}, {"c", c, m * n}};
		kern_compare(kname, fmts, &er, outs, 2);
		emu_run_free(&er);
	}
out:
	free(x);
	free(xs);
	free(acc);
	free(c);
}

/* matmul tc with the h200 model (variant "tc:h200"): gpu/mma.cu's mma.sync
 * GEMM, its K order fixed, then matmul_rows.h's store into S, on the first
 * min(R, 64) rows of kern_matmul's input in its default shape (A m×k
 * row-major; B, k×n there, laid out n×k for the GEMM: at full size 32×512
 * by 512×32, since the engine's Tensor Core model takes ~6 s a policy on
 * the whole 128×512 by 512×128), against the fast backend: acc (the Tensor Core's
 * output format: the accumulator format, fp16 or fp32) and c. Only where
 * the storage format is fp16 or bf16: mma.sync takes no fp32 operands. */
static void kern_matmul_tc(const gpu_opts *o, const emu_policy *pol, const char *fmts, size_t Rall,
                           size_t N)
{
	const emu_format *S = &pol->storage, *A = &pol->accum;
	const size_t R = Rall < 64 ? Rall : 64, m = (R + 1) / 2, n = R - m, k = N;
	bool s16 = S->bits == 16 && (S->p == 11 || S->p == 8);
	bool o16 = A->bits == 16 && A->p == 11 && S->p == 11, o32 = A->bits == 32;
	if (!s16 || !(o16 || o32)) {
		gpu_report_note(&run_rep,
		                "kern: no matmul tc:h200 row for %s (mma.sync takes fp16 or "
		                "bf16 operands into an fp32, or fp16's fp16, accumulator)",
		                fmts);
		return;
	}
	double *x = malloc(R * N * sizeof *x);
	uint16_t *a = malloc(m * k * sizeof *a), *bt = malloc(n * k * sizeof *bt);
	float *acc = malloc(m * n * sizeof *acc), *c = malloc(m * n * sizeof *c);
	emu_run er;
	emu_kin in = {x, R, N, NULL, 0, o->seed, NULL, 0};
	if (!x || !a || !bt || !acc || !c) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < R * N; i++) /* kern_matmul's values */
		x[i] = ((double)(rnd(o->seed, 420, i) >> 40) * 0x1p-24 - 0.5) * 4.0;
	for (size_t i = 0; i < m * k; i++)
		a[i] = (uint16_t)emu_from_double(S, x[i], &pol->env).bits;
	for (size_t l = 0; l < k; l++)
		for (size_t j = 0; j < n; j++)
			bt[j * k + l] =
			    (uint16_t)emu_from_double(S, x[m * k + l * n + j], &pol->env).bits;
	if (gpu_dev_matmul_tc(kfmt(S), kfmt(&pol->compute), o16 ? GPU_K_F16 : GPU_K_F32, a, bt, m,
	                      n, k, acc, c, run_err, sizeof run_err)) {
		step_failed("kern", run_err);
		goto out;
	}
	if (!kern_engine(&emu_kernel_matmul, pol, "tc:h200", &in, &er))
		goto out;
	kern_out outs[] = {{"acc", acc, m * n}, {"c", c, m * n}};
	kern_compare("matmul tc:h200", fmts, &er, outs, 2);
	emu_run_free(&er);
out:
	free(x);
	free(a);
	free(bt);
	free(acc);
	free(c);
}

/* batchnorm twopass and welford (training; its defaults: eps 1e-5, gamma
 * 1, beta 0, momentum 0.1, running statistics 0 and 1, dy = ±1 from the
 * seed, as layernorm's), and eval (inference with those running statistics) on R samples of N
 * channels, channel c around 0, 4, 300 or 2000 by c mod 4 with spread ±1, against the fast backend.
 * No replay: its sqrt is correctly rounded on the GPU, nothing to look up. */
static void kern_batchnorm(const gpu_opts *o, const emu_policy *pol, const char *fmts,
                           const float *dys, size_t R, size_t N)
{
	const char *const *bn_var = emu_kernel_batchnorm.variants; /* index: the code */
	static const double off[4] = {0, 4, 300, 2000};
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	const double cd[6] = {1e-5, 1, 0, 0.1, 0, 1};
	float cst[6];
	double *x = malloc(R * N * sizeof *x);
	float *xs = malloc(R * N * sizeof *xs), *y = malloc(R * N * sizeof *y),
	      *dx = malloc(R * N * sizeof *dx), *ch = malloc(6 * N * sizeof *ch);
	if (!x || !xs || !y || !dx || !ch) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (int i = 0; i < 6; i++)
		cst[i] = (float)emu_decode(C, emu_from_double(C, cd[i], &pol->env).bits);
	for (size_t i = 0; i < R * N; i++) {
		double u = (double)(rnd(o->seed, 430, i) >> 40) * 0x1p-24;
		x[i] = off[(i % N) % 4] + (u - 0.5) * 2.0;
		xs[i] = (float)emu_decode(S, emu_from_double(S, x[i], &pol->env).bits);
	}
	for (int v = 0; bn_var[v]; v++) {
		char kname[40];
		emu_run er;
		emu_kin in = {x, R, N, NULL, 0, o->seed, NULL, 0};
		snprintf(kname, sizeof kname, "batchnorm %s", bn_var[v]);
		if (gpu_dev_batchnorm(v, kfmt(S), kfmt(C), kfmt(A), xs, dys, R, N, cst, y, dx, ch,
		                      ch + N, ch + 2 * N, ch + 3 * N, ch + 4 * N, ch + 5 * N,
		                      run_err, sizeof run_err)) {
			step_failed("kern", run_err);
			continue;
		}
		if (!kern_engine(&emu_kernel_batchnorm, pol, bn_var[v], &in, &er))
			continue;
		kern_out outs[] = {{"y", y, R * N},
		                   {"dx", dx, R * N},
		                   {"mean", ch, N},
		                   {"var", ch + N, N},
		                   {"running_mean", ch + 2 * N, N},
		                   {"running_var", ch + 3 * N, N},
		                   {"dgamma", ch + 4 * N, N},
		                   {"dbeta", ch + 5 * N, N}};
		kern_compare(kname, fmts, &er, outs, 8);
		emu_run_free(&er);
	}
out:
	free(x);
	free(xs);
	free(y);
	free(dx);
	free(ch);
}

/* sgd, adamw, adamw_kahan and adamw_sr (their defaults: 10 steps, lr 1e-3,
 * β 0.9 and 0.999, eps 1e-8, weight decay 0 sgd and 0.01 adamw, momentum
 * 0.9, gradients uniform in ±1e-3 from the run's seed) on R·N weights
 * uniform in ±1, against the fast backend: w, m and v. The gradient stream
 * (the kernel's inputs' "grad", stored in the grad format), the variant's
 * code, switches and Python scalars (emu_opt_plan_make) are the library's;
 * adamw_sr draws under the policy's seed. */
static void kern_optimizer(const gpu_opts *o, const emu_policy *pol, const char *fmts, size_t R,
                           size_t N)
{
	static const char *const var[] = {"sgd", "adamw", "adamw_kahan", "adamw_sr"};
	const emu_format *S = &pol->storage, *C = &pol->compute, *G = &pol->grad, *T = &pol->state;
	const size_t n = R * N;
	emu_opt_plan P;
	emu_kin ing = {NULL, R, N, NULL, 0, o->seed, NULL, 0};
	if (emu_opt_plan_make(&ing, "sgd", &P, run_err, sizeof run_err) != 0) {
		step_failed("kern", run_err);
		return;
	}
	const unsigned NS = P.steps;
	emu_opt_plan_free(&P);
	double *x = malloc(n * sizeof *x);
	float *xs = malloc(n * sizeof *xs), *w = malloc(n * sizeof *w), *m = malloc(n * sizeof *m),
	      *vv = malloc(n * sizeof *vv), *gs = malloc(NS * n * sizeof *gs);
	if (!x || !xs || !w || !m || !vv || !gs) {
		step_failed("kern", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		x[i] = ((double)(rnd(o->seed, 440, i) >> 40) * 0x1p-24 - 0.5) * 2.0;
		xs[i] = (float)emu_decode(S, emu_from_double(S, x[i], &pol->env).bits);
	}
	emu_kinputs ki;
	ing.x = x;
	const double *g = kern_role("kern", &emu_kernel_optimizer, pol, "sgd", &ing, "grad", &ki);
	if (!g)
		goto out;
	for (size_t i = 0; i < NS * n; i++) /* step s's gradients from row s − 1 */
		gs[i] = (float)emu_decode(G, emu_from_double(G, g[i], &pol->env).bits);
	emu_kinputs_free(&ki);
	for (int v = 0; v < 4; v++) {
		char kname[40];
		emu_run er;
		emu_kin in = {x, R, N, NULL, 0, o->seed, NULL, 0};
		snprintf(kname, sizeof kname, "optimizer %s", var[v]);
		memcpy(w, xs, n * sizeof *w);
		if (emu_opt_plan_make(&in, var[v], &P, run_err, sizeof run_err) != 0 ||
		    gpu_dev_optimizer(P.variant, P.flags, kfmt(S), kfmt(C), kfmt(G), kfmt(T), gs, n,
		                      P.steps, P.py, pol->env.seed, w, m, vv, run_err,
		                      sizeof run_err)) {
			emu_opt_plan_free(&P);
			step_failed("kern", run_err);
			continue;
		}
		emu_opt_plan_free(&P);
		if (!kern_engine(&emu_kernel_optimizer, pol, var[v], &in, &er))
			continue;
		kern_out outs[] = {{"w", w, n}, {"m", m, n}, {"v", vv, n}};
		kern_compare(kname, fmts, &er, outs, 3);
		emu_run_free(&er);
	}
out:
	free(x);
	free(xs);
	free(w);
	free(m);
	free(vv);
	free(gs);
}

/* the softmax_ce and layernorm rows' outputs: the device's (o1 .. o4) and
 * the replay's (m1 .. m4), R·N, R·N, R and R floats */
typedef struct {
	float *o1, *o2, *o3, *o4, *m1, *m2, *m3, *m4;
} kern_bufs;

/* softmax_ce on x (xs: as stored) and layernorm forward and backward on xl
 * (xls, and dys its dy as stored), every variant, under pol: the device's
 * rows against the engine's, and the replay's (rt) against the device's */
static void kern_softmax_layernorm(const gpu_opts *o, const emu_policy *pol, const char *fmts,
                                   const gpu_tables *rt, const double *x, const double *xl,
                                   const float *xs, const float *xls, const float *dys, size_t R,
                                   size_t N, const kern_bufs *kb)
{
	const emu_format *S = &pol->storage, *C = &pol->compute, *A = &pol->accum;
	/* the kernels' own lists: a variant's index is its row source's code */
	const char *const *sm_var = emu_kernel_softmax_ce.variants, *const *ln_var =
	                                                                emu_kernel_layernorm
	                                                                    .variants;
	float *o1 = kb->o1, *o2 = kb->o2, *o3 = kb->o3, *o4 = kb->o4, *m1 = kb->m1, *m2 = kb->m2,
	      *m3 = kb->m3, *m4 = kb->m4;
	float epsc = (float)emu_decode(C, emu_from_double(C, 1e-5, &pol->env).bits);
	for (int v = 0; sm_var[v] && ln_var[v]; v++) {
		char kname[40];
		emu_run er;
		/* softmax_ce */
		snprintf(kname, sizeof kname, "softmax_ce %s", sm_var[v]);
		emu_kin in = {x, R, N, NULL, 0, o->seed, NULL, 0};
		if (gpu_dev_softmax(v, kfmt(S), kfmt(C), kfmt(A), xs, R, N, o1, o3, run_err,
		                    sizeof run_err)) {
			step_failed("kern", run_err);
		} else if (kern_engine(&emu_kernel_softmax_ce, pol, sm_var[v], &in, &er)) {
			kern_out outs[] = {{"grad", o1, R * N}, {"loss", o3, 1}};
			kern_compare(kname, fmts, &er, outs, 2);
			emu_run_free(&er);
			if (rt && gpu_rows_softmax(rt, v, kfmt(S), kfmt(C), kfmt(A), xs, R, N, m1,
			                           m3, run_err, sizeof run_err)) {
				step_failed("kern", run_err);
			} else if (rt) {
				kern_out mo[] = {{"grad", m1, R * N}, {"loss", m3, 1}};
				const emu_format *f[] = {S, A};
				kern_replay(kname, fmts, outs, mo, f, 2);
			}
		}
		/* layernorm, forward and backward (eps 1e-5, dy = ±1 from the seed) */
		snprintf(kname, sizeof kname, "layernorm %s", ln_var[v]);
		emu_kin inl = {xl, R, N, NULL, 0, o->seed, NULL, 0};
		if (gpu_dev_layernorm(v, kfmt(S), kfmt(C), kfmt(A), xls, dys, R, N, epsc, o1, o2,
		                      o3, o4, run_err, sizeof run_err)) {
			step_failed("kern", run_err);
		} else if (kern_engine(&emu_kernel_layernorm, pol, ln_var[v], &inl, &er)) {
			kern_out outs[] = {
			    {"y", o1, R * N}, {"dx", o2, R * N}, {"rstd", o3, R}, {"var", o4, R}};
			kern_compare(kname, fmts, &er, outs, 4);
			emu_run_free(&er);
			if (rt &&
			    gpu_rows_layernorm(rt, v, kfmt(S), kfmt(C), kfmt(A), xls, dys, R, N,
			                       epsc, m1, m2, m3, m4, run_err, sizeof run_err)) {
				step_failed("kern", run_err);
			} else if (rt) {
				kern_out mo[] = {{"y", m1, R * N},
				                 {"dx", m2, R * N},
				                 {"rstd", m3, R},
				                 {"var", m4, R}};
				const emu_format *f[] = {S, S, C, C};
				kern_replay(kname, fmts, outs, mo, f, 4);
			}
		}
	}
}

void step_kern(const gpu_opts *o)
{
	static const char *const pols[] = {"storage=fp16,compute=fp16,accum=fp16",
	                                   "storage=fp16,compute=fp16,accum=fp32",
	                                   "storage=fp16,compute=fp32",
	                                   "storage=bf16,compute=bf16,accum=fp32",
	                                   "storage=bf16,compute=fp32",
	                                   "storage=fp32"};
	const size_t R = o->quick ? 32 : 256, N = o->quick ? 64 : 512;
	double *x = malloc(R * N * sizeof *x), *xl = malloc(R * N * sizeof *xl);
	float *xs = malloc(R * N * sizeof *xs), *xls = malloc(R * N * sizeof *xls);
	float *dys = malloc(R * N * sizeof *dys), *o1 = malloc(R * N * sizeof *o1);
	float *o2 = malloc(R * N * sizeof *o2), *o3 = malloc(R * sizeof *o3);
	float *o4 = malloc(R * sizeof *o4);
	float *m1 = malloc(R * N * sizeof *m1), *m2 = malloc(R * N * sizeof *m2);
	float *m3 = malloc(R * sizeof *m3), *m4 = malloc(R * sizeof *m4);
	gpu_tables tabs = {NULL, 0};
	bool have_tabs = false;
	if (!x || !xl || !xs || !xls || !dys || !o1 || !o2 || !o3 || !o4 || !m1 || !m2 || !m3 ||
	    !m4) {
		step_failed("kern", "out of memory");
		goto out;
	}
	kern_bufs kb = {o1, o2, o3, o4, m1, m2, m3, m4};
	/* softmax logits uniform in ±8·(1 + 4·(r mod 4)): rows up to ±104, past
	 * exp's fp16 range, so naive overflows on some rows on both sides;
	 * layernorm rows around 0, 4, 300, 2000 with spread ±1: onepass cancels */
	for (size_t r = 0; r < R; r++)
		for (size_t j = 0; j < N; j++) {
			double u = (double)(rnd(o->seed, 400, r * N + j) >> 40) * 0x1p-24;
			static const double off[4] = {0, 4, 300, 2000};
			x[r * N + j] = (u - 0.5) * 16.0 * (double)(1 + 4 * (r % 4));
			xl[r * N + j] = off[r % 4] + (u - 0.5) * 2.0;
		}
	have_tabs = kern_tables(o, &tabs);
	/* every policy with CUDA's expf, logf and log1pf; then the fp32-compute
	 * ones again with those correctly rounded (gpu_dev_fp32_math), rows
	 * tagged "cr-fp32", where the order of operations must agree bit for bit */
	const size_t npol = sizeof pols / sizeof pols[0];
	for (size_t pp = 0; pp < 2 * npol; pp++) {
		size_t p = pp % npol;
		emu_policy pol;
		if (emu_policy_parse(pols[p], &pol, run_err, sizeof run_err)) {
			step_failed("kern", run_err);
			continue;
		}
		const emu_format *S = &pol.storage, *C = &pol.compute, *A = &pol.accum;
		if (pp >= npol && C->p != 24)
			continue;
		if (pp >= npol && !kern_cr) {
			if (gpu_dev_fp32_math(1, run_err, sizeof run_err)) {
				step_failed("kern", run_err);
				break;
			}
			kern_cr = true;
		}
		/* replay where the compute format's approximate functions are tabulated */
		const gpu_tables *rt = have_tabs && C->bits == 16 ? &tabs : NULL;
		char fmts[3 * sizeof S->name + 2];
		snprintf(fmts, sizeof fmts, "%s/%s/%s", S->name, C->name, A->name);
		/* layernorm's dy (±1 from the seed) as emu/kernels/layernorm.c draws it */
		emu_kinputs ki;
		emu_kin ind = {xl, R, N, NULL, 0, o->seed, NULL, 0};
		const double *dy =
		    kern_role("kern", &emu_kernel_layernorm, &pol, "twopass", &ind, "dy", &ki);
		if (!dy)
			continue;
		for (size_t i = 0; i < R * N; i++) {
			xs[i] = (float)emu_decode(S, emu_from_double(S, x[i], &pol.env).bits);
			xls[i] = (float)emu_decode(S, emu_from_double(S, xl[i], &pol.env).bits);
			dys[i] = (float)emu_decode(S, emu_from_double(S, dy[i], &pol.env).bits);
		}
		emu_kinputs_free(&ki);
		kern_softmax_layernorm(o, &pol, fmts, rt, x, xl, xs, xls, dys, R, N, &kb);
		kern_norm_bce(o, &pol, fmts, rt, xl, xls, dys, R, N);
		kern_backward(o, &pol, fmts, rt);
		kern_matmul(o, &pol, fmts, R, N);
		kern_matmul_tc(o, &pol, fmts, R, N);
		kern_batchnorm(o, &pol, fmts, dys, R, N);
		kern_optimizer(o, &pol, fmts, R, N);
	}
	if (kern_cr && gpu_dev_fp32_math(0, run_err, sizeof run_err))
		step_failed("kern", run_err);
	kern_cr = false;
	gpu_report_note(&run_rep,
	                "kern: softmax_ce, layernorm, rmsnorm and bce on %zu rows of %zu, "
	                "matmul seq (fma=0 and 1) on the same input as A then B, and tc:h200 "
	                "(mma.sync, then the store) on its first 64 rows where storage is "
	                "fp16 or bf16, "
	                "batchnorm twopass, welford and eval on as many samples and channels, "
	                "sgd, adamw, adamw_kahan and adamw_sr over 10 steps on as many "
	                "weights, "
	                "backward on %s, against the fast "
	                "backend; exp, log, log1p and fp16/bf16 rsqrt are the GPU's own (hexp, "
	                "hlog, expf, logf, log1pf, hrsqrt), so agreement within 2 ulp is "
	                "accepted and the largest distance is reported; bce stable is not "
	                "replayed (no table holds log1pf)",
	                R, N, o->quick ? "16x32 inputs" : "64x128 inputs, 8 classes");
out:
	gpu_tables_free(&tabs);
	free(m1);
	free(m2);
	free(m3);
	free(m4);
	free(x);
	free(xl);
	free(xs);
	free(xls);
	free(dys);
	free(o1);
	free(o2);
	free(o3);
	free(o4);
}
