/* kernels.c — the kernel registry and the helpers every kernel uses. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/engine/kernels.h"

static const emu_kernel *const all[] = {
	&emu_kernel_softmax_ce,
	&emu_kernel_layernorm,
	&emu_kernel_accum,
	&emu_kernel_backward,
	&emu_kernel_gradscaler,
	&emu_kernel_rmsnorm,
	&emu_kernel_bce,
	&emu_kernel_quant,
	&emu_kernel_optimizer,
	&emu_kernel_batchnorm,
	&emu_kernel_matmul,
	&emu_kernel_attention,
};

size_t emu_kernel_count(void)
{
	return sizeof all / sizeof all[0];
}

const emu_kernel *emu_kernel_at(size_t i)
{
	return i < emu_kernel_count() ? all[i] : NULL;
}

const emu_kernel *emu_kernel_by_name(const char *name)
{
	for (size_t i = 0; i < emu_kernel_count(); i++)
		if (strcmp(all[i]->name, name) == 0)
			return all[i];
	return NULL;
}

int emu_variant_index(const char *const *names, const char *variant)
{
	if (!variant)
		return 0;
	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], variant) == 0)
			return i;
	return -1;
}

bool emu_kernel_reads_param(const emu_kernel *k, const char *name)
{
	size_t n = strlen(name);
	const char *doc = k->params_doc ? k->params_doc : "";

	if (n == 0)
		return false;
	for (const char *p = strstr(doc, name); p; p = strstr(p + 1, name)) {
		bool start =
		    p == doc || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
		                  (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9'));
		if (start && p[n] == '=')
			return true;
	}
	return false;
}

static const emu_kparam *kparam_find(const emu_kin *in, const char *name)
{
	for (size_t i = 0; i < in->nparams; i++)
		if (strcmp(in->params[i].name, name) == 0)
			return &in->params[i];
	return NULL;
}

double emu_kparam_get(const emu_kin *in, const char *name, double dflt)
{
	const emu_kparam *p = kparam_find(in, name);

	return p ? p->value : dflt;
}

/*
 * The range checks read the value as a double and compare before any
 * conversion: a parameter such as label=1e300 must be refused here, since
 * converting it to an integer type first would be undefined behaviour.
 */
bool emu_kparam_int(const emu_kin *in, const char *kernel, const char *name, double lo,
                    double hi, double dflt, double *out, char *err, size_t errlen)
{
	const emu_kparam *p = kparam_find(in, name);

	if (!p) {
		*out = dflt;
		return true;
	}
	if (!(p->value >= lo && p->value <= hi) || p->value != floor(p->value)) {
		snprintf(err, errlen, "%s: %s=%g must be an integer in [%.17g, %.17g]", kernel, name,
		         p->value, lo, hi);
		return false;
	}
	*out = p->value;
	return true;
}

bool emu_kparam_real(const emu_kin *in, const char *kernel, const char *name, double lo,
                     double hi, unsigned open, double dflt, double *out, char *err,
                     size_t errlen)
{
	const emu_kparam *p = kparam_find(in, name);
	double v;
	bool ok;

	if (!p) {
		*out = dflt;
		return true;
	}
	v = p->value;
	ok = isfinite(v) && ((open & EMU_KP_ABOVE_LO) ? v > lo : v >= lo) &&
	     ((open & EMU_KP_BELOW_HI) ? v < hi : v <= hi);
	if (ok) {
		*out = v;
		return true;
	}
	if (isinf(lo) && isinf(hi))
		snprintf(err, errlen, "%s: %s=%g must be a finite number", kernel, name, v);
	else if (isinf(hi))
		snprintf(err, errlen, "%s: %s=%g must be finite and %s %.9g", kernel, name, v,
		         (open & EMU_KP_ABOVE_LO) ? ">" : ">=", lo);
	else
		snprintf(err, errlen, "%s: %s=%g must be finite, in %c%.9g, %.9g%c", kernel, name,
		         v, (open & EMU_KP_ABOVE_LO) ? '(' : '[', lo, hi,
		         (open & EMU_KP_BELOW_HI) ? ')' : ']');
	return false;
}

emu_vec *emu_kout_vec(emu_be *be, emu_kout *out, const char *name, size_t n,
                      const emu_format *fmt)
{
	if (out->n >= EMU_KOUT_MAX)
		return NULL;
	emu_vec *v = emu_vec_new(be, n);
	if (!v)
		return NULL;
	out->item[out->n++] = (emu_kout_item){name, v, n, fmt};
	return v;
}

double emu_kout_d(const emu_be *be, const emu_kout_item *it, size_t j)
{
	(void)be;
	return it->vec->m ? mpfr_get_d(&it->vec->m[j], MPFR_RNDN) : it->vec->d[j];
}

mpfr_srcptr emu_kout_mp(const emu_kout_item *it, size_t j)
{
	return &it->vec->m[j];
}

/*
 * The values each kernel allocates (emu_vec_new and emu_kout_vec, read off
 * their run functions): the stored input, the outputs and the temporaries
 * that grow with the input; fixed scratch of a few values is left out.
 */
double emu_kernel_values(const emu_kernel *k, size_t rows, size_t cols, const emu_kin *in)
{
	double R = (double)rows, N = (double)cols;

	if (k == &emu_kernel_softmax_ce)
		return 2 * R * N + 2 * N; /* X, grad; e and its accumulator copy */
	if (k == &emu_kernel_layernorm)
		return 3 * R * N + 2 * R + 6 * N; /* X, y, dx; rstd, var; yc, dy, two rows, counts, dy's doubles */
	if (k == &emu_kernel_accum)
		return 2.5 * R * N + R + N; /* X, B or grad, dot's raw doubles; results; gradacc's row */
	if (k == &emu_kernel_backward) {
		double K = in ? emu_kparam_get(in, "classes", 8) : 8;
		if (!(K >= 1 && K <= 4096))
			K = 8;
		return 3 * R * N + 3 * N * K + R * K +
		       fmax(R, fmax(N, K)); /* x, dX, grad; w, dW; dl; the product row */
	}
	if (k == &emu_kernel_bce)
		return 4 * R * N + 4 * N; /* X, targets, loss terms, grad; four row temporaries */
	if (k == &emu_kernel_gradscaler)
		return 5 * R * N; /* scale, skipped, lost; the gradients and steps */
	if (k == &emu_kernel_rmsnorm)
		return 4 * R * N + 2 * R + 7 * N; /* X, y, dx, dy·x̂; rstd, ms; dg, x̂, g, dy, two rows, raw */
	if (k == &emu_kernel_quant)
		return 4 * R * N; /* deq; a column-wise legacy load's transpose and its vector;
		                     retile's row-wise copy */
	if (k == &emu_kernel_optimizer)
		return 12 * R * N; /* w m v g; g, w, a state in compute; a d w_old; Kahan's u c; raw */
	if (k == &emu_kernel_batchnorm)
		return 6 * R * N + 2 * R + 16 * N; /* X, x - mean, dy, y, dx, dy's doubles; two columns; per-channel vectors */
	if (k == &emu_kernel_matmul) {
		double dm = ceil(R / 2);
		double m = in ? emu_kparam_get(in, "m", dm) : dm;
		double n = in ? emu_kparam_get(in, "n", R - dm) : R - dm;
		double kk = in ? emu_kparam_get(in, "k", N) : N;
		if (!(m >= 1 && m <= 0x1p31 && n >= 0 && n <= 0x1p31 && kk >= 1 && kk <= 0x1p31))
			m = dm, n = R - dm, kk = N;
		return R * N + 2 * m * n + kk; /* A and B; acc and c; the products of one dot */
	}
	if (k == &emu_kernel_attention) {
		/* the largest of the variants (the variant is not known here): Q K V, their
		 * accumulator copies and their raw doubles, or fp8's quantised copies (each
		 * up to R·N); O, L and :bwd's dQ dK dV, dO and O's copy (R·N/3 each); P
		 * and its copy, and :bwd's dP and dS, or fp8:bwd's P8, dS, dS8 and dS's
		 * copy (seq_q × seq_k each); the row's S, e and their copies */
		double nq = in ? emu_kparam_get(in, "seq_q", R) : R;
		double nk = in ? emu_kparam_get(in, "seq_k", R) : R;
		if (!(nq >= 1 && nq <= R))
			nq = R;
		if (!(nk >= 1 && nk <= R))
			nk = R;
		return 5 * R * N + 7 * R * N / 3 + 6 * nq * nk + 6 * nk + 3 * nq + N;
	}
	return 4 * R * N;
}

