/*
 * gradscaler.c — PyTorch's GradScaler, simulated bit for bit.
 *
 * The PyTorch lines this follows (pytorch/pytorch main, 2024-2025; the
 * algorithm has not changed since torch 1.6):
 *
 * torch/amp/grad_scaler.py
 *   __init__:   assert growth_factor > 1.0; assert backoff_factor < 1.0
 *               (no check on init_scale or growth_interval)
 *   _lazy_init_scale_growth_tracker:
 *               self._scale = torch.full((), self._init_scale, dtype=torch.float32)
 *               self._growth_tracker = torch.full((), 0, dtype=torch.int32)
 *   unscale_:   inv_scale = self._scale.double().reciprocal().float()
 *               ("FP32 division can be imprecise ... so we carry out the
 *               reciprocal in FP64")
 *   _maybe_opt_step: if not found_inf: optimizer.step()     -> skipped = found_inf
 *   update:     torch._amp_update_scale_(_scale, _growth_tracker, found_inf,
 *                   growth_factor, backoff_factor, growth_interval)
 *
 * aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp
 *   _amp_foreach_non_finite_check_and_unscale_cpu_kernel, per element:
 *       if (!std::isfinite(val_in)) *found_inf_ptr = 1.f;     <- the INPUT
 *       return inv_scale_val == 1.f ? val : val * inv_scale_val;
 *     (reduced types fp16/bf16: val = static_cast<opmath_t>(val_in), the
 *     product in float, then static_cast<scalar_t>)
 *   _amp_update_scale_cpu_kernel:
 *       if (*found_inf_ptr) {
 *         *current_scale_ptr = (*current_scale_ptr) * backoff_factor;
 *         *growth_tracker_ptr = 0;
 *       } else {
 *         auto successful = (*growth_tracker_ptr) + 1;
 *         if (successful == growth_interval) {
 *           auto new_scale = static_cast<float>((*current_scale_ptr) * growth_factor);
 *           if (std::isfinite(new_scale)) *current_scale_ptr = new_scale;
 *           *growth_tracker_ptr = 0;
 *         } else {
 *           *growth_tracker_ptr = successful;
 *         }
 *       }
 * aten/src/ATen/native/cuda/AmpKernels.cu, amp_update_scale_cuda_kernel
 *   (lines 181-202 in release/1.11): the same code with
 *   `double growth_factor, double backoff_factor`.
 *
 * Note the factors are doubles: float * double is a double product, then
 * rounded to float. With the usual factors (2, 0.5, 1.5) the double product
 * is exact, so this equals one fp32 multiplication (the tests check it);
 * with a factor such as 1.1 it is the double product that counts.
 *
 * GPU counterpart: emu/kernels/backward_rows.h's `k_bw_unscale` (unscale_; the scale update
 * runs on the host), compiled by nvcc in gpu/kern.cu and with the emulator's operations in
 * gpu/host_rows.c for the fake device, whose outputs tests/gpu/ compares with this file's
 * (docs/gpu.md).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/draw.h"
#include "emu/kernels/gradscaler.h"

static const emu_format *fp32(void)
{
	return emu_format_by_name("fp32");
}

static const emu_env rne = {EMU_RNE, false, false, false, 0, 0};

emu_bits emu_gs_fp32(double x)
{
	return emu_from_double(fp32(), x, &rne).bits;
}

double emu_gs_value(emu_bits scale)
{
	return emu_decode(fp32(), scale);
}

void emu_gs_config_default(emu_gs_config *c)
{
	*c = (emu_gs_config){
	    .init_scale = 65536.0,
	    .growth_factor = 2.0,
	    .backoff_factor = 0.5,
	    .growth_interval = 2000,
	    .grad_format = NULL,
	    .master_format = NULL,
	    .n_elems = 1,
	    .spread = 6.0,
	    .seed = 0,
	};
}

emu_gs_status emu_gs_config_check(const emu_gs_config *c, char *err, size_t errlen)
{
	if (!fp32()) {
		snprintf(err, errlen, "gradscaler: the fp32 format is missing");
		return EMU_GS_ERR_CONFIG;
	}
	if (!(c->growth_factor > 1.0)) {
		snprintf(err, errlen, "gradscaler: growth_factor must be > 1.0, got %g",
		         c->growth_factor);
		return EMU_GS_ERR_CONFIG;
	}
	if (!(c->backoff_factor < 1.0)) {
		snprintf(err, errlen, "gradscaler: backoff_factor must be < 1.0, got %g",
		         c->backoff_factor);
		return EMU_GS_ERR_CONFIG;
	}
	if (c->growth_interval < 1) {
		snprintf(err, errlen, "gradscaler: growth_interval must be >= 1, got %d",
		         (int)c->growth_interval);
		return EMU_GS_ERR_CONFIG;
	}
	if (c->n_elems < 1) {
		snprintf(err, errlen, "gradscaler: n_elems must be >= 1");
		return EMU_GS_ERR_CONFIG;
	}
	if (!(c->spread >= 0) || isinf(c->spread)) {
		snprintf(err, errlen, "gradscaler: spread must be finite and >= 0, got %g",
		         c->spread);
		return EMU_GS_ERR_CONFIG;
	}
	return EMU_GS_OK;
}

void emu_gs_init(const emu_gs_config *c, emu_gs_state *s)
{
	s->scale = emu_gs_fp32(c->init_scale);
	s->tracker = 0;
	s->step = 0;
}

void emu_gs_update(const emu_gs_config *c, emu_gs_state *s, bool found_inf, bool *grew,
                   bool *refused)
{
	bool g = false, r = false;
	double scale = emu_gs_value(s->scale);
	if (found_inf) {
		/* float * double: a double product, stored to float (RNE) */
		s->scale = emu_gs_fp32(scale * c->backoff_factor);
		s->tracker = 0;
	} else {
		int32_t successful = s->tracker + 1;
		if (successful == c->growth_interval) {
			emu_bits grown = emu_gs_fp32(scale * c->growth_factor);
			if (isfinite(emu_gs_value(grown))) {
				s->scale = grown;
				g = true;
			} else {
				r = true;
			}
			s->tracker = 0;
		} else {
			s->tracker = successful;
		}
	}
	if (grew)
		*grew = g;
	if (refused)
		*refused = r;
}

/* A standard normal draw (Box-Muller; u1 in (0, 1]). */
static double normal(uint64_t seed, uint64_t stream, uint64_t i)
{
	double u1 = emu_draw_unit(emu_draw64s(seed, stream, 2 * i)) + 0x1p-53; /* exact */
	double u2 = emu_draw_unit(emu_draw64s(seed, stream, 2 * i + 1));
	return emu_box_muller(u1, u2);
}

double emu_gs_element(const emu_gs_config *c, uint64_t step, size_t i, double gmax)
{
	if (i == 0)
		return gmax;
	uint64_t k = (step - 1) * (uint64_t)c->n_elems + i;
	double r = exp2(-c->spread * fabs(normal(c->seed, 1, k)));
	double g = gmax * r;
	return (emu_draw64s(c->seed, 2, k) & 1) ? -g : g;
}

static bool nonfinite(const emu_format *f, emu_bits b)
{
	emu_class k = emu_classify(f, b);
	return k == EMU_CLASS_INF || k == EMU_CLASS_NAN;
}

/* dst and src one format (nothing to convert between them) */
static bool same_format(const emu_format *dst, const emu_format *src)
{
	return dst == src || strcmp(dst->name, src->name) == 0;
}

/* b from src to dst; nothing to do within one format (same: same_format's
 * answer, asked once a step) */
static emu_bits cvt(const emu_format *dst, const emu_format *src, bool same, emu_bits b)
{
	return same ? b : emu_convert(dst, src, b, &rne).bits;
}

emu_gs_step emu_gs_step_one(const emu_gs_config *c, emu_gs_state *s, double gmax)
{
	const emu_format *f32 = fp32();
	const emu_format *bw = c->grad_format ? c->grad_format : f32;
	const emu_format *mf = c->master_format ? c->master_format : bw;
	emu_gs_step r;
	memset(&r, 0, sizeof r);
	r.step = ++s->step;
	r.gmax = gmax;
	r.scale = s->scale;
	double scale = emu_gs_value(s->scale);
	/* inv_scale = self._scale.double().reciprocal().float() */
	r.inv_scale = emu_gs_fp32(1.0 / scale);
	bool inv_is_one = r.inv_scale == emu_gs_fp32(1.0);
	r.n_elems = c->n_elems;
	const bool bw_f32 = same_format(bw, f32), mf_bw = same_format(mf, bw),
	           mf_f32 = same_format(mf, f32);
	for (size_t i = 0; i < c->n_elems; i++) {
		double g = emu_gs_element(c, r.step, i, gmax);
		/* backward: fp32(g·scale), rounded once from the exact product
		 * (x + tail), then into the backward's format */
		double x = g * scale;
		double tail = isfinite(x) ? fma(g, scale, -x) : 0.0;
		unsigned fl = 0;
		emu_bits b = emu_encode(f32, emu_round_value(f32, x, tail, &rne, &fl));
		emu_bits scaled = cvt(bw, f32, bw_f32, b);
		/* .grad as the unscale kernel gets it; found_inf looks at this
		 * input; the product is in fp32 (opmath), stored back in .grad's
		 * format */
		emu_bits in = cvt(mf, bw, mf_bw, scaled);
		emu_bits in32 = cvt(f32, mf, mf_f32, in);
		bool bad_in = nonfinite(f32, in32);
		if (bad_in) {
			r.found_inf = true;
			r.n_overflow++;
		}
		emu_bits out32 = inv_is_one ? in32 : emu_mul(f32, in32, r.inv_scale, &rne).bits;
		emu_bits out = cvt(mf, f32, mf_f32, out32);
		if (!bad_in && nonfinite(mf, out))
			r.n_undetected++;
		if (isfinite(g) && g != 0) {
			if (emu_classify(bw, scaled) == EMU_CLASS_ZERO)
				r.n_underflow++;
			else if (emu_classify(mf, out) == EMU_CLASS_ZERO)
				r.n_unscale_underflow++;
		}
	}
	r.frac_underflow = (double)r.n_underflow / (double)r.n_elems;
	r.frac_unscale_underflow = (double)r.n_unscale_underflow / (double)r.n_elems;
	r.frac_overflow = (double)r.n_overflow / (double)r.n_elems;
	r.skipped = r.found_inf;
	emu_gs_update(c, s, r.found_inf, &r.grew, &r.growth_refused);
	r.scale_next = s->scale;
	r.tracker = s->tracker;
	return r;
}

emu_gs_status emu_gs_simulate(const emu_gs_config *c, const double *gmax, size_t nsteps,
                              emu_gs_step *out, char *err, size_t errlen)
{
	emu_gs_status st = emu_gs_config_check(c, err, errlen);
	if (st != EMU_GS_OK)
		return st;
	emu_gs_state s;
	emu_gs_init(c, &s);
	for (size_t t = 0; t < nsteps; t++)
		out[t] = emu_gs_step_one(c, &s, gmax[t]);
	return EMU_GS_OK;
}

/* ---- trajectories ---- */

/* true for a magnitude: >= 0 (not -0), +inf, or NaN */
static bool magnitude_ok(double v)
{
	return isnan(v) || (v >= 0 && !signbit(v));
}

emu_gs_status emu_gs_traj_fill(const emu_gs_traj *t, double *out, size_t n, char *err,
                               size_t errlen)
{
	switch (t->kind) {
	case EMU_GS_CONST:
		if (!magnitude_ok(t->g))
			break;
		for (size_t i = 0; i < n; i++)
			out[i] = t->g;
		return EMU_GS_OK;
	case EMU_GS_DRIFT: {
		if (!(t->g > 0) || isinf(t->g) || !(t->sigma >= 0) || isinf(t->sigma))
			break;
		double l = 0; /* the log of the drift so far */
		for (size_t i = 0; i < n; i++) {
			out[i] = l == 0 ? t->g : t->g * exp(l);
			l += t->sigma * normal(t->seed, 3, i);
		}
		return EMU_GS_OK;
	}
	case EMU_GS_SPIKES:
		if (!magnitude_ok(t->g) || !magnitude_ok(t->spike))
			break;
		for (size_t i = 0; i < n; i++) {
			bool hit = i >= t->first &&
			           (t->period ? (i - t->first) % t->period == 0 : i == t->first);
			out[i] = hit ? t->spike : t->g;
		}
		return EMU_GS_OK;
	case EMU_GS_INF:
		for (size_t i = 0; i < n; i++)
			out[i] = INFINITY;
		return EMU_GS_OK;
	default:
		snprintf(err, errlen, "gradscaler: unknown trajectory kind %d", (int)t->kind);
		return EMU_GS_ERR_CONFIG;
	}
	snprintf(err, errlen,
	         "gradscaler: bad trajectory values (g=%g sigma=%g spike=%g): magnitudes "
	         "must be >= 0, inf or nan; drift needs 0 < g < inf and finite sigma >= 0",
	         t->g, t->sigma, t->spike);
	return EMU_GS_ERR_CONFIG;
}

/* Parse one trimmed token as a magnitude. Returns 0 or sets why. */
static int parse_value(const char *tok, double *v, const char **why)
{
	char *end;
	errno = 0;
	double x = strtod(tok, &end);
	if (end == tok || *end != '\0') {
		*why = "not a number";
		return -1;
	}
	if (errno == ERANGE && isinf(x)) {
		*why = "beyond the double range (write inf)";
		return -1;
	}
	if (isnan(x)) {
		*v = NAN;
		return 0;
	}
	if (x < 0) {
		*why = "negative (a largest |gradient| is >= 0)";
		return -1;
	}
	*v = x == 0 ? 0.0 : x;
	return 0;
}

emu_gs_status emu_gs_traj_read(const char *path, double **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	FILE *fp = fopen(path, "r");
	if (!fp) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return EMU_GS_ERR_IO;
	}
	char *line = NULL;
	size_t cap = 0, len = 0, alloc = 0, lineno = 0;
	double *vals = NULL;
	emu_gs_status st = EMU_GS_OK;
	ssize_t got;
	while ((got = getline(&line, &cap, fp)) >= 0) {
		lineno++;
		if (memchr(line, '\0', (size_t)got)) {
			snprintf(err, errlen, "%s:%zu: NUL byte in line", path, lineno);
			st = EMU_GS_ERR_PARSE;
			break;
		}
		char *p = line, *e = line + got;
		while (p < e && strchr(" \t\r\n\v\f", *p))
			p++;
		while (e > p && strchr(" \t\r\n\v\f", e[-1]))
			e--;
		*e = '\0';
		if (p == e || *p == '#')
			continue;
		double v;
		const char *why = NULL;
		if (parse_value(p, &v, &why) != 0) {
			snprintf(err, errlen, "%s:%zu: '%.40s': %s", path, lineno, p, why);
			st = EMU_GS_ERR_PARSE;
			break;
		}
		if (len == alloc) {
			size_t na = alloc ? 2 * alloc : 256;
			double *nv = realloc(vals, na * sizeof *nv);
			if (!nv) {
				snprintf(err, errlen, "%s: out of memory", path);
				st = EMU_GS_ERR_NOMEM;
				break;
			}
			vals = nv;
			alloc = na;
		}
		vals[len++] = v;
	}
	if (st == EMU_GS_OK && ferror(fp)) {
		snprintf(err, errlen, "%s: read error", path);
		st = EMU_GS_ERR_IO;
	}
	if (st == EMU_GS_OK && len == 0) {
		snprintf(err, errlen, "%s: no values", path);
		st = EMU_GS_ERR_PARSE;
	}
	free(line);
	fclose(fp);
	if (st != EMU_GS_OK) {
		free(vals);
		return st;
	}
	*out = vals;
	*n = len;
	return EMU_GS_OK;
}
