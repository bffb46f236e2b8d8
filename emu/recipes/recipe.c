/*
 * recipe.c — scaling recipes (recipe.h; the rules and their sources are in
 * docs/recipes.md). Every scale and element step is one rounding through
 * the emulator: fp32 operations on fp32 operands are computed in double and
 * rounded once to fp32, which is the correctly rounded fp32 result (the
 * product is exact in double; a quotient rounded twice, to 53 and then 24
 * bits, is still correctly rounded because 53 >= 2·24 + 2).
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <mpfr.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/recipes/recipe.h"

/* The built-in formats the rules name, looked up once (relaxed atomics:
 * every thread stores the same pointer). */
static const emu_format *fmt(const char *name)
{
	static _Atomic(const emu_format *) cache[4];
	static const char *const names[4] = {"fp32", "e8m0", "e4m3", "bf16"};
	for (int i = 0; i < 4; i++)
		if (names[i][1] == name[1] && strcmp(names[i], name) == 0) {
			const emu_format *f = atomic_load_explicit(&cache[i], memory_order_relaxed);
			if (!f) {
				f = emu_format_by_name(name);
				atomic_store_explicit(&cache[i], f, memory_order_relaxed);
			}
			return f;
		}
	return emu_format_by_name(name);
}

/* fp32(v), to nearest even; overflow gives ±inf, as an fp32 operation does */
static double f32(double v)
{
	if (fabs(v) <= 0x1p-126 || !(fabs(v) < 0x1.fffffefffffffp+127)) { /* tiny, huge, NaN */
		emu_env e = EMU_ENV_DEFAULT;
		return emu_decode(fmt("fp32"), emu_from_double(fmt("fp32"), v, &e).bits);
	}
	return (double)(float)v; /* a normal fp32 result: the host's IEEE conversion (RNE) */
}

static double fminf32(double a, double b) /* CUDA's fminf: a NaN operand loses */
{
	if (isnan(a))
		return b;
	if (isnan(b))
		return a;
	return a < b ? a : b;
}

/* ---- built-ins ---- */

typedef struct {
	const char *name, *spec, *what;
} builtin;

static const builtin builtins[] = {
    {"none", "elem=e4m3,rule=none", "no scale: elements rounded straight to the format"},
    {"tensor", "elem=e4m3,scale=fp32,rule=fp32,block=0x0,sat=no",
     "per tensor: s = fp32(max/amax) (TE current scaling)"},
    {"delayed", "elem=e4m3,scale=fp32,rule=delayed,block=1x0,sat=no,history=16,margin=0",
     "per row, from the amax history of the previous rows (TE delayed scaling)"},
    {"tile128", "elem=e4m3,scale=fp32,rule=recip,block=1x128,sat=no",
     "1x128 tiles, s = 1/fp32(amax/max) (nanmap's legacy tile recipe)"},
    {"mx32:floor", "elem=e4m3,scale=e8m0,rule=legacy_mx,block=1x32,scale_round=down",
     "nanmap's legacy MX: 1x32, OCP floor, scale 1 for a zero block"},
    {"mx32:rceil", "elem=e4m3,scale=e8m0,rule=legacy_mx,block=1x32,scale_round=up",
     "nanmap's legacy MX: 1x32, 2^ceil(log2(amax/max)), scale 1 for a zero block"},
    {"mxfp8", "elem=e4m3,scale=e8m0,rule=te,block=1x32,scale_round=up,amax=fmaxf",
     "MXFP8 as TE: 1x32, E8M0 rounded up from amax/448, E4M3 satfinite"},
    {"mxfp8:e5m2", "elem=e5m2,scale=e8m0,rule=te,block=1x32,scale_round=up,amax=fmaxf",
     "MXFP8 as TE with E5M2 elements"},
    {"mxfp6:e3m2", "elem=e3m2,scale=e8m0,rule=te,block=1x32,scale_round=up,amax=fmaxf",
     "MXFP6 (E3M2) with TE's rounded-up E8M0 scale"},
    {"mxfp6:e2m3", "elem=e2m3,scale=e8m0,rule=te,block=1x32,scale_round=up,amax=fmaxf",
     "MXFP6 (E2M3) with TE's rounded-up E8M0 scale"},
    {"mxfp4", "elem=e2m1,scale=e8m0,rule=te,block=1x32,scale_round=up,amax=fmaxf",
     "MXFP4 (E2M1) with TE's rounded-up E8M0 scale"},
    {"mxfp8:floor", "elem=e4m3,scale=e8m0,rule=floor,apply=div,block=1x32",
     "OCP MX v1.0: X = 2^(floor(log2 amax) - emax), elements clamp"},
    {"mxfp8:e5m2:floor", "elem=e5m2,scale=e8m0,rule=floor,apply=div,block=1x32",
     "OCP MX v1.0 with E5M2 elements"},
    {"mxfp6:e3m2:floor", "elem=e3m2,scale=e8m0,rule=floor,apply=div,block=1x32",
     "OCP MX v1.0 with E3M2 elements"},
    {"mxfp6:e2m3:floor", "elem=e2m3,scale=e8m0,rule=floor,apply=div,block=1x32",
     "OCP MX v1.0 with E2M3 elements"},
    {"mxfp4:floor", "elem=e2m1,scale=e8m0,rule=floor,apply=div,block=1x32",
     "OCP MX v1.0 with E2M1 elements"},
    {"nvfp4",
     "elem=e2m1,scale=e4m3,rule=nvfp4,act=1x16,weight=16x16,grad=1x16,grad_round=sr,rht=yes,"
     "amax=fmaxf",
     "NVFP4 as TE: E4M3 scale per 16 (16x16 weights) and an fp32 tensor scale; SR grads; RHT "
     "on column-wise copies"},
    {"nvfp4:4over6",
     "elem=e2m1,scale=e4m3,rule=nvfp4,act=1x16,weight=16x16,grad=1x16,grad_round=sr,rht=yes,"
     "tbound=256,4over6=mae,amax=fmaxf",
     "NVFP4 with 4over6: each block scales its max to 6 or to 4, whichever errs less"},
    {"deepseek", "elem=e4m3,scale=fp32,rule=deepgemm,act=1x128,weight=128x128,grad=1x128,amin=1e-4",
     "DeepSeek-V3 FP8 (DeepGEMM reference): 1x128 / 128x128, s = 448/max(amax, 1e-4)"},
    {"deepseek:pow2",
     "elem=e4m3,scale=fp32,rule=pow2down,act=1x128,weight=128x128,grad=1x128,amax=fmaxf",
     "DeepSeek-style blocks with TE's power-of-two scale (rounded down)"},
    {"deepseek:ue8m0",
     "elem=e4m3,scale=e8m0,rule=pow2up,act=1x128,weight=128x128,grad=1x128,amin=1e-4",
     "DeepSeek-style blocks with DeepGEMM's UE8M0 scale (SM100): 2^ceil(log2(amax/448))"},
};
#define NBUILTINS (sizeof builtins / sizeof builtins[0])

const char *const emu_recipe_names[] = {
    "none",        "tensor",           "delayed",          "tile128",          "mx32:floor",
    "mx32:rceil",  "mxfp8",            "mxfp8:e5m2",       "mxfp6:e3m2",       "mxfp6:e2m3",
    "mxfp4",       "mxfp8:floor",      "mxfp8:e5m2:floor", "mxfp6:e3m2:floor", "mxfp6:e2m3:floor",
    "mxfp4:floor", "nvfp4",            "nvfp4:4over6",     "deepseek",         "deepseek:pow2",
    "deepseek:ue8m0", NULL};

const char *emu_recipe_describe(const char *name)
{
	for (size_t i = 0; i < NBUILTINS; i++)
		if (strcmp(builtins[i].name, name) == 0)
			return builtins[i].what;
	return NULL;
}

static const char *const role_names[EMU_NROLES] = {"act", "weight", "grad"};

const char *emu_role_name(emu_role r)
{
	return (unsigned)r < EMU_NROLES ? role_names[r] : "?";
}

emu_role emu_role_by_name(const char *name)
{
	for (int r = 0; r < EMU_NROLES; r++)
		if (strcmp(role_names[r], name) == 0)
			return (emu_role)r;
	return EMU_NROLES;
}

static const char *const rule_names[EMU_NRSCALES] = {
    "none", "fp32", "recip", "deepgemm", "pow2down", "pow2up", "floor", "te", "nvfp4", "legacy_mx",
    "delayed"};

/* ---- parsing ---- */

static void recipe_defaults(emu_recipe *r)
{
	memset(r, 0, sizeof *r);
	r->elem = *fmt("e4m3");
	r->scale_fmt = *fmt("fp32");
	r->rule = EMU_RSCALE_NONE;
	r->apply = EMU_RAPPLY_MUL;
	r->scale_mode = EMU_UP;
	for (int k = 0; k < EMU_NROLES; k++) {
		r->brows[k] = 1;
		r->bcols[k] = 0;
		r->elem_mode[k] = EMU_RNE;
	}
	r->sr_bits = 32;
	r->sat = true;
	r->tbound = 448;
	r->delayed_len = 16;
}

static int parse_shape(const char *v, int *rows, int *cols)
{
	char *end;
	long a = strtol(v, &end, 10);
	if (end == v || *end != 'x' || a < 0 || a > 1 << 20)
		return -1;
	const char *w = end + 1;
	long b = strtol(w, &end, 10);
	if (end == w || *end || b < 0 || b > 1 << 20)
		return -1;
	*rows = (int)a;
	*cols = (int)b;
	return 0;
}

static int parse_num(const char *v, double *out)
{
	char *end;
	double d = strtod(v, &end);
	if (end == v || *end || !isfinite(d) || d < 0)
		return -1;
	*out = d;
	return 0;
}

static int parse_int(const char *v, int lo, int hi, int *out)
{
	char *end;
	long d = strtol(v, &end, 10);
	if (end == v || *end || d < lo || d > hi)
		return -1;
	*out = (int)d;
	return 0;
}

static emu_mode mode_of(const char *v)
{
	if (strcmp(v, "rne") == 0)
		return EMU_RNE;
	if (strcmp(v, "rna") == 0)
		return EMU_RNA;
	if (strcmp(v, "sr") == 0)
		return EMU_SR;
	return EMU_NMODES;
}

static int set_key(emu_recipe *r, const char *k, const char *v, char *why, size_t wl)
{
	if (strcmp(k, "elem") == 0 || strcmp(k, "scale") == 0) {
		emu_format f;
		char e[160];
		if (emu_format_parse(v, &f, e, sizeof e) != EMU_OK) {
			snprintf(why, wl, "%s=%s: %s", k, v, e);
			return -1;
		}
		if (k[0] == 'e')
			r->elem = f;
		else
			r->scale_fmt = f;
		return 0;
	}
	if (strcmp(k, "rule") == 0) {
		for (int i = 0; i < EMU_NRSCALES; i++)
			if (strcmp(rule_names[i], v) == 0) {
				r->rule = (emu_rscale)i;
				return 0;
			}
		snprintf(why, wl, "rule=%s: not one of none fp32 recip deepgemm pow2down pow2up floor "
		                  "te nvfp4 legacy_mx delayed", v);
		return -1;
	}
	if (strcmp(k, "apply") == 0) {
		if (strcmp(v, "mul") == 0 || strcmp(v, "div") == 0) {
			r->apply = v[0] == 'm' ? EMU_RAPPLY_MUL : EMU_RAPPLY_DIV;
			return 0;
		}
		snprintf(why, wl, "apply=%s: not mul or div", v);
		return -1;
	}
	int br, bc;
	if (strcmp(k, "block") == 0 || strcmp(k, "act") == 0 || strcmp(k, "weight") == 0 ||
	    strcmp(k, "grad") == 0) {
		if (parse_shape(v, &br, &bc)) {
			snprintf(why, wl, "%s=%s: a block shape is RxC (0 = the whole dimension)", k, v);
			return -1;
		}
		for (int i = 0; i < EMU_NROLES; i++)
			if (k[0] == 'b' || strcmp(k, role_names[i]) == 0) {
				r->brows[i] = br;
				r->bcols[i] = bc;
			}
		return 0;
	}
	if (strcmp(k, "round") == 0 || strcmp(k, "act_round") == 0 ||
	    strcmp(k, "weight_round") == 0 || strcmp(k, "grad_round") == 0) {
		emu_mode m = mode_of(v);
		if (m == EMU_NMODES) {
			snprintf(why, wl, "%s=%s: not rne, rna or sr", k, v);
			return -1;
		}
		for (int i = 0; i < EMU_NROLES; i++)
			if (strcmp(k, "round") == 0 || strncmp(k, role_names[i], strlen(role_names[i])) == 0)
				r->elem_mode[i] = m;
		return 0;
	}
	if (strcmp(k, "scale_round") == 0) {
		static const char *const nm[] = {"rne", "rtz", "up", "down", "rna"};
		for (int i = 0; i < 5; i++)
			if (strcmp(v, nm[i]) == 0) {
				r->scale_mode = (emu_mode)i;
				return 0;
			}
		snprintf(why, wl, "scale_round=%s: not up, down, rne, rna or rtz", v);
		return -1;
	}
	if (strcmp(k, "sr_bits") == 0) {
		if (parse_int(v, 1, 32, &r->sr_bits) == 0)
			return 0;
		snprintf(why, wl, "sr_bits=%s: a whole number from 1 to 32", v);
		return -1;
	}
	if (strcmp(k, "history") == 0 || strcmp(k, "margin") == 0) {
		int *dst = k[0] == 'h' ? &r->delayed_len : &r->delayed_margin;
		if (parse_int(v, k[0] == 'h' ? 1 : 0, 1 << 20, dst) == 0)
			return 0;
		snprintf(why, wl, "%s=%s: a whole number%s", k, v, k[0] == 'h' ? " >= 1" : " >= 0");
		return -1;
	}
	if (strcmp(k, "fmax") == 0 || strcmp(k, "tbound") == 0 || strcmp(k, "amin") == 0) {
		double d;
		if (parse_num(v, &d)) {
			snprintf(why, wl, "%s=%s: a finite number >= 0", k, v);
			return -1;
		}
		if (k[0] == 'f')
			r->fmax = d;
		else if (k[0] == 't')
			r->tbound = d;
		else
			r->amin = f32(d);
		return 0;
	}
	if (strcmp(k, "4over6") == 0) {
		if (strcmp(v, "no") == 0 || strcmp(v, "mae") == 0 || strcmp(v, "mse") == 0) {
			r->four_over_six = v[0] == 'n' ? EMU_R46_NONE : v[1] == 'a' ? EMU_R46_MAE : EMU_R46_MSE;
			return 0;
		}
		snprintf(why, wl, "4over6=%s: not no, mae or mse", v);
		return -1;
	}
	if (strcmp(k, "amax") == 0) {
		static const char *const an[] = {"nan", "fmaxf", "finite"};
		for (int i = 0; i < 3; i++)
			if (strcmp(v, an[i]) == 0) {
				r->amax_rule = (emu_ramax)i;
				return 0;
			}
		snprintf(why, wl, "amax=%s: not nan, fmaxf or finite", v);
		return -1;
	}
	if (strcmp(k, "rht") == 0 && strcmp(v, "all") == 0) {
		r->rht = r->rht_all = true;
		return 0;
	}
	if (strcmp(k, "sat") == 0 || strcmp(k, "rht") == 0 || strcmp(k, "ftz_scale") == 0) {
		int b = emu_bool_by_name(v);
		if (b < 0) {
			snprintf(why, wl, "%s=%s: not yes or no%s", k, v, k[0] == 'r' ? " or all" : "");
			return -1;
		}
		if (k[0] == 's')
			r->sat = b;
		else if (k[0] == 'r')
			r->rht = b, r->rht_all = false;
		else
			r->ftz_scale = b;
		return 0;
	}
	snprintf(why, wl, "unknown key '%s'", k);
	return -1;
}

/* The keys of one list, each at most once: a key given twice is refused, as
 * the policy parser refuses one (the last one winning hid a typo). A key of
 * the list may still override the built-in it follows (mxfp8,elem=e5m2). */
static int apply_keys(emu_recipe *r, char *s, char *why, size_t wl)
{
	char *save = NULL; /* strtok_r: a caller may be inside its own strtok loop */
	const char *seen[64];
	size_t nseen = 0;

	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			snprintf(why, wl, "'%s' is not KEY=VALUE", tok);
			return -1;
		}
		*eq = 0;
		for (size_t i = 0; i < nseen; i++)
			if (strcmp(seen[i], tok) == 0) {
				snprintf(why, wl, "key '%s' given twice", tok);
				return -1;
			}
		if (nseen < sizeof seen / sizeof seen[0])
			seen[nseen++] = tok;
		if (set_key(r, tok, eq + 1, why, wl))
			return -1;
	}
	return 0;
}

emu_status emu_recipe_parse(const char *spec, emu_recipe *out, char *err, size_t errlen)
{
	char buf[512], why[256] = "";
	if (!spec || !*spec || strlen(spec) >= sizeof buf) {
		snprintf(err, errlen, "recipe '%s': empty or longer than %zu characters",
		         spec ? spec : "", sizeof buf - 1);
		return EMU_ERR_BAD_SPEC;
	}
	emu_recipe r;
	recipe_defaults(&r);
	snprintf(buf, sizeof buf, "%s", spec);
	char *rest = buf;
	const char *base = NULL;
	char *comma = strchr(buf, ',');
	char head[512];
	snprintf(head, sizeof head, "%.*s", comma ? (int)(comma - buf) : (int)strlen(buf), buf);
	for (size_t i = 0; i < NBUILTINS; i++)
		if (strcmp(builtins[i].name, head) == 0)
			base = builtins[i].spec;
	if (base) {
		char b2[512];
		snprintf(b2, sizeof b2, "%s", base);
		if (apply_keys(&r, b2, why, sizeof why))
			goto bad; /* a built-in that does not parse: a bug, reported */
		snprintf(r.name, sizeof r.name, "%.63s", spec);
		rest = comma ? comma + 1 : NULL;
	} else if (!strchr(head, '=')) {
		snprintf(err, errlen,
		         "recipe '%s': unknown recipe '%s' (nanmap quant --list shows the built-ins; a "
		         "custom recipe is KEY=VALUE,... as docs/recipes.md says)",
		         spec, head);
		return EMU_ERR_BAD_SPEC;
	} else {
		snprintf(r.name, sizeof r.name, "custom");
	}
	if (rest && *rest && apply_keys(&r, rest, why, sizeof why))
		goto bad;
	if (r.rule == EMU_RSCALE_NVFP4 && r.elem.max <= 0)
		goto bad;
	if (r.rule != EMU_RSCALE_NONE && r.rule != EMU_RSCALE_NVFP4 && !(r.elem.max > 0))
		goto bad;
	if ((r.rule == EMU_RSCALE_E8M0_FLOOR || r.rule == EMU_RSCALE_E8M0_TE ||
	     r.rule == EMU_RSCALE_LEGACY_MX || r.rule == EMU_RSCALE_POW2_UP) &&
	    strcmp(r.scale_fmt.name, "e8m0") != 0) {
		snprintf(why, sizeof why, "rule=%s keeps its scale in e8m0 (scale=e8m0)",
		         rule_names[r.rule]);
		goto bad;
	}
	if (r.rule == EMU_RSCALE_NVFP4 && strcmp(r.scale_fmt.name, "e4m3") != 0) {
		snprintf(why, sizeof why, "rule=nvfp4 keeps its block scale in e4m3 (scale=e4m3)");
		goto bad;
	}
	if (r.four_over_six && r.rule != EMU_RSCALE_NVFP4) {
		snprintf(why, sizeof why, "4over6 needs rule=nvfp4");
		goto bad;
	}
	if (r.elem.p > 24 || r.elem.ebits > 8 || !r.elem.has_sign) {
		snprintf(why, sizeof why, "elem=%s: an element format is signed and at most fp32",
		         r.elem.name);
		goto bad;
	}
	*out = r;
	return EMU_OK;
bad:
	snprintf(err, errlen, "recipe '%s': %s", spec, *why ? why : "inconsistent keys");
	return EMU_ERR_BAD_SPEC;
}

void emu_recipe_spec(const emu_recipe *r, char *buf, size_t len)
{
	static const char *const mn[] = {"rne", "rtz", "up", "down", "rna", "sr"};
	char fm[32] = "", am[32] = "", tb[32];
	if (r->fmax > 0)
		snprintf(fm, sizeof fm, ",fmax=%.17g", r->fmax);
	if (r->amin > 0)
		snprintf(am, sizeof am, ",amin=%.17g", r->amin);
	snprintf(tb, sizeof tb, "%.17g", r->tbound);
	snprintf(buf, len,
	         "elem=%s,scale=%s,rule=%s,apply=%s,act=%dx%d,weight=%dx%d,grad=%dx%d,act_round=%s,"
	         "weight_round=%s,grad_round=%s,sr_bits=%d,sat=%s,rht=%s,tbound=%s%s%s,4over6=%s,"
	         "scale_round=%s,ftz_scale=%s,history=%d,margin=%d,amax=%s",
	         r->elem.name, r->scale_fmt.name, rule_names[r->rule],
	         r->apply == EMU_RAPPLY_MUL ? "mul" : "div", r->brows[0], r->bcols[0], r->brows[1],
	         r->bcols[1], r->brows[2], r->bcols[2], mn[r->elem_mode[0]], mn[r->elem_mode[1]],
	         mn[r->elem_mode[2]], r->sr_bits, r->sat ? "yes" : "no",
	         r->rht_all ? "all" : r->rht ? "yes" : "no", tb, fm, am,
	         r->four_over_six == EMU_R46_NONE  ? "no"
	         : r->four_over_six == EMU_R46_MAE ? "mae"
	                                           : "mse",
	         mn[r->scale_mode], r->ftz_scale ? "yes" : "no", r->delayed_len, r->delayed_margin,
	         r->amax_rule == EMU_AMAX_FMAXF    ? "fmaxf"
	         : r->amax_rule == EMU_AMAX_FINITE ? "finite"
	                                           : "nan");
}

/* ---- SR with n random bits ---- */

/* b decoded, a NaN keeping the encoding's sign (as the array ops keep it) */
static double dec_signed(const emu_format *f, emu_bits b)
{
	double v = emu_decode(f, b);
	return isnan(v) && (b & f->sign_mask) ? -fabs(v) : v;
}

double emu_round_sr_bits(const emu_format *f, double v, int n, bool sat, uint64_t seed,
                         uint64_t index, unsigned *flags)
{
	emu_env env = {EMU_SR, sat, false, false, seed, index};
	if (n >= 32 || isnan(v) || isinf(v)) {
		emu_result r = emu_from_double(f, v, &env);
		*flags |= r.flags;
		return dec_signed(f, r.bits);
	}
	env.mode = EMU_RTZ;
	emu_result lo = emu_from_double(f, v, &env);
	double l = dec_signed(f, lo.bits);
	if (!(lo.flags & EMU_FLAG_INEXACT)) {
		*flags |= lo.flags;
		return l;
	}
	/* the spacing above |l|: |l| is a grid point of f (max when v overflows) */
	double al = fabs(l);
	int e = al >= f->min_normal ? ilogb(al) : f->emin;
	double ulp = ldexp(1.0, e - f->p + 1);
	double frac = (fabs(v) - al) / ulp; /* exact: a power-of-two division */
	uint64_t F = frac >= 1 ? (uint64_t)1 << n : (uint64_t)ldexp(frac, n);
	uint64_t u = emu_sr_bits(seed, index) >> (32 - n);
	bool away = F + u >= (uint64_t)1 << n;
	if (away && al + ulp > f->max) { /* rounding away overflows: as EMU_SR's overflow */
		env.mode = EMU_RNE;
		emu_result r = emu_from_double(f, v > 0 ? al + ulp : -(al + ulp), &env);
		*flags |= r.flags;
		return dec_signed(f, r.bits);
	}
	env.mode = away ? (v > 0 ? EMU_UP : EMU_DOWN) : EMU_RTZ;
	emu_result r = emu_from_double(f, v, &env);
	unsigned fl = r.flags;
	double res = dec_signed(f, r.bits);
	if (fabs(res) == f->min_normal && fabs(v) < f->min_normal && (fl & EMU_FLAG_INEXACT)) {
		/* tininess after rounding: the same dither at v's own exponent,
		 * unbounded below (emu/core/specialize.h) */
		double uf = ldexp(1.0, ilogb(v) - f->p + 1);
		double lf = floor(fabs(v) / uf) * uf; /* exact: a power-of-two grid */
		uint64_t Ff = (uint64_t)ldexp((fabs(v) - lf) / uf, n);
		bool awayf = Ff + u >= (uint64_t)1 << n;
		fl &= ~(unsigned)EMU_FLAG_UNDERFLOW;
		if (lf + (awayf ? uf : 0) < f->min_normal)
			fl |= EMU_FLAG_UNDERFLOW;
	}
	*flags |= fl;
	return res;
}

double emu_round_sr_mean(const emu_format *f, double v, int n, bool bounded)
{
	if (isnan(v) || isinf(v))
		return v;
	emu_env env = {EMU_RTZ, true, false, false, 0, 0};
	double av = fabs(v), l = fabs(dec_signed(f, emu_from_double(f, av, &env).bits));
	if (l == av)
		return v;
	int e = l >= f->min_normal ? ilogb(l) : f->emin;
	double ulp = ldexp(1.0, e - f->p + 1);
	double frac = (av - l) / ulp; /* exact: a power-of-two division */
	n = n > 32 ? 32 : n;
	double F = frac >= 1 ? ldexp(1.0, n) : floor(ldexp(frac, n));
	double hi = bounded && l + ulp > f->max ? f->max : l + ulp;
	double m = l + ldexp(F, -n) * (hi - l);
	return v < 0 ? -m : m;
}

/* ---- scales ---- */

/* TE's float_to_e8m0 (the software path of cvt.rp.satfinite.ue8m0x2.f32)
 * for an fp32 value v >= 0; mode other than EMU_UP rounds by that mode. */
static emu_bits e8m0_te(double v, emu_mode mode)
{
	if (isnan(v))
		return 0xff;
	if (isinf(v))
		return 0xfe;
	if (v == 0)
		return 0x00;
	if (mode != EMU_UP) {
		emu_env e = {mode, true, false, false, 0, 0};
		return emu_from_double(fmt("e8m0"), v, &e).bits;
	}
	int ex;
	double m = frexp(v, &ex); /* v = m·2^ex, m in [0.5, 1) */
	/* fp32 fields: biased exponent and whether the fraction is nonzero */
	int be = ex - 1 + 127;
	bool frac = m != 0.5;
	if (be <= 0) { /* an fp32 subnormal: 0x400000 is 2^-127 */
		return v <= ldexp(1.0, -127) ? 0x00 : 0x01;
	}
	if (frac && be != 0xfe)
		be++;
	return (emu_bits)be;
}

/* TE's exp2f_rcp: 1 for code 0, else the fp32 with bits (254 − code) << 23
 * (code 254 gives +0, code 255 −inf: the bits of −1 << 23). */
static double e8m0_rcp_te(emu_bits c)
{
	if (c == 0)
		return 1;
	if (c == 255)
		return -INFINITY;
	if (c == 254)
		return 0;
	return ldexp(1.0, 127 - (int)c);
}

typedef struct {
	double d, m;
	emu_bits dcode;
	unsigned dflags;
} bscale;

static bscale scale_of(const emu_recipe *r, double a, double hist, double fmax, double s_enc,
                       double t)
{
	bscale b = {1, 1, 0, 0};
	const emu_format *F32 = fmt("fp32"), *E8 = fmt("e8m0");
	emu_env e = EMU_ENV_DEFAULT;
	switch (r->rule) {
	case EMU_RSCALE_NONE:
		break;
	case EMU_RSCALE_FP32_MAX_OVER_AMAX: {
		double s = (a > 0 && isfinite(a)) ? f32(fmax / a) : 1;
		b.m = s;
		b.d = f32(1 / s);
		break;
	}
	case EMU_RSCALE_DELAYED: {
		double s = (hist > 0 && isfinite(hist)) ? f32(ldexp(fmax, -r->delayed_margin) / hist) : 1;
		b.m = s;
		b.d = f32(1 / s);
		break;
	}
	case EMU_RSCALE_FP32_RECIP: {
		double dd = f32(a / fmax);
		double s = (dd > 0 && isfinite(dd)) ? 1 / dd : 1;
		b.m = f32(s);
		b.d = f32(1 / b.m);
		break;
	}
	case EMU_RSCALE_FP32_DEEPGEMM: {
		double ac = a < r->amin ? r->amin : a; /* torch's clamp: NaN stays NaN */
		b.m = f32(fmax / ac);
		b.d = f32(ac / fmax);
		break;
	}
	case EMU_RSCALE_POW2_DOWN: {
		/* TE compute_scale_from_amax: amax inf, 0 or NaN keeps scale 1 */
		double s = (a > 0 && isfinite(a)) ? f32(fmax / a) : 1;
		if (isinf(s))
			s = F32->max;
		if (isfinite(s) && s > 0)
			s = ldexp(1.0, ilogb(s));
		b.m = s;
		b.d = 1 / s;
		break;
	}
	case EMU_RSCALE_POW2_UP: {
		/* DeepGEMM ceil_to_ue8m0 on v's fp32 bits: exponent field plus one
		 * when the fraction is nonzero, clamped to [1, 254] (NaN: 2^127;
		 * inf: 2^127; a tiny or zero v: 2^-126) */
		double ac = a < r->amin ? r->amin : a; /* torch's clamp: NaN stays NaN */
		double v = f32(ac / fmax);
		emu_env e0 = EMU_ENV_DEFAULT;
		emu_bits vb = emu_from_double(F32, v, &e0).bits;
		int ex = (int)((vb >> 23) & 0xff) + ((vb & 0x7fffff) != 0);
		ex = ex < 1 ? 1 : ex > 254 ? 254 : ex;
		b.dcode = (emu_bits)ex;
		b.d = ldexp(1.0, ex - 127);
		b.m = ldexp(1.0, 127 - ex);
		return b;
	}
	case EMU_RSCALE_E8M0_FLOOR: {
		if (isnan(a)) {
			b.dcode = 0xff;
			b.d = b.m = NAN;
			return b;
		}
		double aa = a > 0 ? a : F32->min_normal;
		/* floor(log2 inf) is inf, above the scale's emax: NaN (microxcaling) */
		int x = isinf(aa) ? 1000 : ilogb(aa) - r->elem.emax;
		if (x > 127) {
			b.dcode = 0xff;
			b.d = b.m = NAN;
			return b;
		}
		if (x < -127)
			x = -127;
		b.dcode = (emu_bits)(x + 127);
		b.d = ldexp(1.0, x);
		b.m = ldexp(1.0, -x);
		return b;
	}
	case EMU_RSCALE_E8M0_TE: {
		double v = f32(a * f32(1 / fmax));
		b.dcode = e8m0_te(v, r->scale_mode);
		b.d = emu_decode(E8, b.dcode);
		b.m = e8m0_rcp_te(b.dcode);
		return b;
	}
	case EMU_RSCALE_LEGACY_MX: {
		if (!(a > 0) || !isfinite(a))
			break;
		int x = r->scale_mode == EMU_UP ? (int)ceil(log2(a / fmax)) : ilogb(a) - r->elem.emax;
		if (x < -127)
			x = -127;
		if (x > 127)
			x = 127;
		b.m = ldexp(1.0, -x);
		b.d = ldexp(1.0, x);
		b.dcode = (emu_bits)(x + 127);
		return b;
	}
	case EMU_RSCALE_NVFP4: {
		double v = f32(a * f32(s_enc * f32(1 / fmax)));
		emu_env es = {EMU_RNE, true, false, false, 0, 0};
		emu_result rr = emu_from_double(fmt("e4m3"), v, &es);
		b.dcode = rr.bits;
		b.dflags = rr.flags;
		b.d = emu_decode(fmt("e4m3"), rr.bits);
		b.m = fminf32(f32(1 / f32(b.d * t)), F32->max);
		return b;
	}
	default:
		break;
	}
	emu_result rr = emu_from_double(r->rule == EMU_RSCALE_LEGACY_MX ? E8 : F32, b.d, &e);
	b.dcode = rr.bits;
	b.dflags = rr.flags & ~EMU_FLAG_INEXACT;
	return b;
}

void emu_recipe_block_scale(const emu_recipe *r, double a, double hist, double fmax, double s_enc,
                            double t, double *d, double *m, emu_bits *dcode)
{
	bscale b = scale_of(r, a, hist, fmax > 0 ? fmax : r->fmax > 0 ? r->fmax : r->elem.max, s_enc, t);
	*d = b.d;
	*m = b.m;
	*dcode = b.dcode;
}

/* ---- the random Hadamard transform ---- */

static const int rht_sign[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};

/* y[j·st] = fp32(Σ_i x[i·st] · H_ij), H = (1/4)·diag(s)·H16, x bf16 values
 * (hold_input rounds the input to bf16 first): each sum exact (in double
 * where that is exact, else MPFR at 320 bits, which holds any sum of 16 bf16
 * products) then rounded once; a NaN or inf input makes the sums NaN / inf
 * as IEEE does. */
static void rht16_dir(double *x, size_t st, bool inverse);

/* The lowest set bit of finite nonzero v, as an exponent (v's ulp where
 * its significand ends). */
static int low_bit(double v)
{
	int e;
	double m = frexp(fabs(v), &e); /* m in [1/2, 1): v = m·2^e */
	uint64_t u = (uint64_t)ldexp(m, 53);
	return e - 53 + __builtin_ctzll(u);
}

/* rht16_dir's sums in double when every one is exact there: the terms
 * ±in[i]/4 are finite and normal, and their bits from the highest (16
 * terms: below 2^(max exponent + 5)) down to the lowest set bit of any
 * term span at most 53; then every partial sum is a multiple of that
 * lowest bit below 2^(max exponent + 5), a double, so each addition is
 * exact and the sum is what the 320-bit one gives (the tail 0). Real
 * tensors' tiles nearly always qualify; others (a spread of more than
 * about 2^40, an infinity, a NaN) take the MPFR sums. false: not taken. */
static bool rht16_double(const double *in, double *x, size_t st, bool inverse)
{
	int hi = INT_MIN, lo = INT_MAX;
	for (int i = 0; i < 16; i++) {
		double v = in[i] * 0.25;
		if (!isfinite(v) || (v != 0 && fabs(v) < DBL_MIN))
			return false;
		if (v == 0)
			continue;
		int e = ilogb(v), l = low_bit(v);
		hi = e > hi ? e : hi;
		lo = l < lo ? l : lo;
	}
	if (hi != INT_MIN && hi + 5 - lo > 53)
		return false;
	double out[16];
	emu_env e = EMU_ENV_DEFAULT;
	for (int j = 0; j < 16; j++) {
		double acc = 0;
		for (int i = 0; i < 16; i++) {
			int sg = rht_sign[inverse ? j : i] *
			         ((__builtin_popcount((unsigned)(i & j)) & 1) ? -1 : 1);
			acc += in[i] * 0.25 * sg;
		}
		unsigned fl = 0;
		out[j] = emu_round_value(fmt("fp32"), acc, 0, &e, &fl);
	}
	for (int j = 0; j < 16; j++)
		x[j * st] = out[j];
	return true;
}

/* inverse: x[i·st] = fp32(Σ_j x[j·st] · H_ij), the transpose (H is
 * orthogonal: H·Hᵀ = I), its inputs taken as they are (fp32 values) */
static void rht16_dir(double *x, size_t st, bool inverse)
{
	emu_env e = EMU_ENV_DEFAULT;
	double in[16]; /* forward: bf16 values already (hold_input rounded them) */
	for (int i = 0; i < 16; i++)
		in[i] = x[i * st];
	if (rht16_double(in, x, st, inverse))
		return;
	mpfr_t acc, t;
	mpfr_inits2(320, acc, t, (mpfr_ptr)0);
	for (int j = 0; j < 16; j++) {
		mpfr_set_zero(acc, 1);
		for (int i = 0; i < 16; i++) {
			/* forward: H_ij (row i of the input, column j of the output);
			 * inverse: H_ji, the sign of the output's row */
			int sg = rht_sign[inverse ? j : i] *
			         ((__builtin_popcount((unsigned)(i & j)) & 1) ? -1 : 1);
			mpfr_set_d(t, in[i] * 0.25 * sg, MPFR_RNDN);
			mpfr_add(acc, acc, t, MPFR_RNDN);
		}
		double hi = mpfr_get_d(acc, MPFR_RNDN);
		double lo = 0;
		if (isfinite(hi)) {
			mpfr_sub_d(t, acc, hi, MPFR_RNDN);
			lo = mpfr_get_d(t, MPFR_RNDN);
		}
		unsigned fl = 0;
		x[j * st] = isfinite(hi) ? emu_round_value(fmt("fp32"), hi, lo, &e, &fl) : hi;
		if (mpfr_nan_p(acc))
			x[j * st] = NAN;
	}
	mpfr_clears(acc, t, (mpfr_ptr)0);
}

/* ---- quantise ---- */

void emu_qtensor_free(emu_qtensor *q)
{
	free(q->x);
	free(q->code);
	free(q->q);
	free(q->deq);
	free(q->flags);
	free(q->amax);
	free(q->d);
	free(q->m);
	free(q->dcode);
	free(q->dflags);
	free(q->four);
	memset(q, 0, sizeof *q);
}

static double amax_of(const double *x, size_t r0, size_t r1, size_t c0, size_t c1, size_t cols,
                      emu_ramax rule)
{
	double a = 0;
	for (size_t r = r0; r < r1; r++)
		for (size_t c = c0; c < c1; c++) {
			double v = fabs(x[r * cols + c]);
			if (rule != EMU_AMAX_NAN && (isnan(v) || (rule == EMU_AMAX_FINITE && isinf(v))))
				continue; /* fmaxf drops a NaN operand; finite skips inf too */
			if (!(v <= a))
				a = v; /* NaN sticks: nothing is <= NaN, and NaN is never replaced */
			if (isnan(a))
				return a;
		}
	return a;
}

/* Per element, the block's multiplier (or decode scale, for apply=div)
 * from the per-block array s: the layout of blocks over the tensor. */
static void expand(const emu_qtensor *o, const double *s, double *out)
{
	for (size_t rr = 0; rr < o->rows; rr++) {
		const double *sb = s + (rr / o->brows) * o->nbc;
		double *or = out + rr * o->cols;
		for (size_t bj = 0; bj < o->nbc; bj++) {
			size_t c0 = bj * o->bcols, c1 = c0 + o->bcols < o->cols ? c0 + o->bcols : o->cols;
			for (size_t c = c0; c < c1; c++)
				or[c] = sb[bj];
		}
	}
}

/* The encoding of v, a value of E (the value domain): for finite values of
 * a format with sign, zero and subnormals, assembled from v's binary64
 * fields (exponent field e + bias, the top p − 1 fraction bits; a
 * subnormal is its count of smallest subnormals); anything else, and fnuz
 * (no −0), through emu_encode. */
static emu_bits encode_fast(const emu_format *E, double v)
{
	if (!isfinite(v) || E->nan == EMU_NAN_FNUZ || !E->has_subnormals || !E->has_zero ||
	    !E->has_sign)
		return emu_encode(E, v);
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	emu_bits s = (b >> 63) ? E->sign_mask : 0;
	double a = fabs(v);
	if (a < E->min_normal) /* zero or subnormal: an exact multiple of the quantum */
		return s | (emu_bits)(a / E->min_subnormal);
	int e = (int)((b >> 52) & 0x7ff) - 1023; /* a is normal in binary64 (p <= 24, emin >= -126) */
	emu_bits man = (emu_bits)((b & 0xfffffffffffffull) >> (53 - E->p));
	return s | ((emu_bits)(e + E->bias) << (E->p - 1)) | man;
}

/* The element stage over the whole part, as array operations (the
 * emulator's vector paths): q = E(fp32(x · m)) (or fp32(x / d)), each
 * element i with SR index i0 + i, computed in place in o->q; deq = q · d ·
 * t with d the block's (dblk). md holds, per element, m (mul) or d (div). */
static void quant_elems(const emu_recipe *r, emu_mode mode, const double *md, const double *dblk,
                        double t, uint64_t seed, uint64_t i0, emu_qtensor *o)
{
	const emu_format *E = &r->elem, *F32 = fmt("fp32");
	size_t n = o->rows * o->cols;
	emu_env e = EMU_ENV_DEFAULT;
	double *xs = o->q; /* the scaled values, then (in place) the elements */
	if (r->rule == EMU_RSCALE_NONE)
		memcpy(xs, o->x, n * sizeof *xs);
	else if (r->apply == EMU_RAPPLY_DIV)
		emu_a_div(F32, xs, o->x, 1, md, 1, n, &e, NULL);
	else
		emu_a_mul(F32, xs, o->x, 1, md, 1, n, &e, NULL);
	memset(o->flags, 0, n);
	if (mode == EMU_SR && r->sr_bits < 32) {
		for (size_t i = 0; i < n; i++) {
			unsigned fl = 0;
			o->q[i] = emu_round_sr_bits(E, xs[i], r->sr_bits, r->sat, seed, i0 + i, &fl);
			o->flags[i] = (uint8_t)fl;
		}
	} else {
		emu_env ee = {mode, r->sat, false, false, seed, i0};
		emu_a_cvt(E, o->q, xs, 1, n, &ee, o->flags);
	}
	for (size_t rr = 0; rr < o->rows; rr++) {
		const double *db = dblk + (rr / o->brows) * o->nbc;
		for (size_t bj = 0; bj < o->nbc; bj++) {
			size_t c0 = bj * o->bcols, c1 = c0 + o->bcols < o->cols ? c0 + o->bcols : o->cols;
			double dt = db[bj];
			for (size_t i = rr * o->cols + c0; i < rr * o->cols + c1; i++) {
				double q = o->q[i];
				if (isnan(q)) { /* the value domain keeps no NaN sign: the code's own */
					double x = r->rule == EMU_RSCALE_NONE     ? o->x[i]
					           : r->apply == EMU_RAPPLY_DIV ? f32(o->x[i] / md[i])
					                                         : f32(o->x[i] * md[i]);
					emu_env ei = {mode, r->sat, false, false, seed, i0 + i};
					o->code[i] = emu_from_double(E, x, &ei).bits;
				} else {
					o->code[i] = encode_fast(E, q);
				}
				o->deq[i] = r->rule == EMU_RSCALE_NONE ? q : q * dt * t;
			}
		}
	}
}

static double block_err(const emu_qtensor *o, size_t r0, size_t r1, size_t c0, size_t c1,
                        bool mse)
{
	double s = 0;
	for (size_t r = r0; r < r1; r++)
		for (size_t c = c0; c < c1; c++) {
			size_t i = r * o->cols + c;
			double e = fabs(o->x[i] - o->deq[i]);
			s += mse ? e * e : e;
		}
	return s;
}

/* The 16-point transform of every whole tile of v (rows × cols), down the
 * columns or along the rows; the tiles are independent, so a large tensor's
 * run on every thread (OpenMP; one inside a parallel region), each tile's
 * bits the same. */
static void rht_tiles(double *v, size_t rows, size_t cols, bool colwise, bool inverse)
{
	size_t nt = colwise ? cols * (rows / 16) : rows * (cols / 16);
#pragma omp parallel for schedule(static) if (nt >= 4096)
	for (size_t k = 0; k < nt; k++) {
		if (colwise) /* tile k: column k mod cols, rows from 16·(k / cols) */
			rht16_dir(v + 16 * (k / cols) * cols + k % cols, cols, inverse);
		else
			rht16_dir(v + (k / (cols / 16)) * cols + 16 * (k % (cols / 16)), 1,
			          inverse);
	}
}

/* x as r holds it: fp32, then the RHT where it applies (in place on o) */
static void hold_input(const emu_recipe *r, emu_role role, bool colwise, const double *x,
                       size_t rows, size_t cols, double *o)
{
	size_t n = rows * cols;
	emu_env e = EMU_ENV_DEFAULT;
	bool rht = emu_recipe_rht_applies(r, role, colwise);
	/* an RHT copy takes a bf16 tensor (TE): x rounded once, to bf16 */
	emu_a_cvt(fmt(rht ? "bf16" : "fp32"), o, x, 1, n, &e, NULL);
	if (rht)
		rht_tiles(o, rows, cols, colwise, false);
}

bool emu_recipe_rht_applies(const emu_recipe *r, emu_role role, bool colwise)
{
	return r->rht && (r->rht_all || (colwise && role != EMU_ROLE_WEIGHT));
}

void emu_recipe_unrht(const emu_recipe *r, emu_role role, bool colwise, double *v, size_t rows,
                      size_t cols)
{
	if (emu_recipe_rht_applies(r, role, colwise))
		rht_tiles(v, rows, cols, colwise, true);
}

double emu_recipe_tensor_amax(const emu_recipe *r, emu_role role, bool colwise, const double *x,
                              size_t rows, size_t cols)
{
	bool rht = r->rht && (r->rht_all || (colwise && role != EMU_ROLE_WEIGHT));
	if (!rht) /* fp32 rounding is monotone: the amax of fp32(x) is fp32(amax x) */
		return f32(amax_of(x, 0, rows, 0, cols, cols, r->amax_rule));
	double *t = calloc(rows * cols > 0 ? rows * cols : 1, sizeof *t);
	if (!t)
		return NAN;
	hold_input(r, role, colwise, x, rows, cols, t);
	double a = amax_of(t, 0, rows, 0, cols, cols, r->amax_rule);
	free(t);
	return a;
}

int emu_quantize(const emu_recipe *r, emu_role role, bool colwise, const double *x, size_t rows,
                 size_t cols, uint64_t seed, emu_qtensor *o)
{
	emu_qpart part = {0, rows, seed, NAN, 0};
	return emu_quantize_part(r, role, colwise, x, rows, cols, &part, o);
}

int emu_quantize_part(const emu_recipe *r, emu_role role, bool colwise, const double *x,
                      size_t rows, size_t cols, const emu_qpart *part, emu_qtensor *o)
{
	return emu_quantize_hist(r, role, colwise, x, rows, cols, part, -1, o);
}

/* (ext_hist < 0: the delayed rule's history is the part's rows) */
int emu_quantize_hist(const emu_recipe *r, emu_role role, bool colwise, const double *x,
                      size_t rows, size_t cols, const emu_qpart *part, double ext_hist,
                      emu_qtensor *o)
{
	uint64_t seed = part->seed;
	uint64_t i0 = part->index0 + (uint64_t)part->row0 * cols;
	memset(o, 0, sizeof *o);
	if ((unsigned)role >= EMU_NROLES)
		role = EMU_ROLE_ACT;
	size_t n = rows * cols;
	o->rows = rows;
	o->cols = cols;
	o->colwise = colwise;
	o->elem_p = r->elem.p;
	o->elem = r->elem;
	size_t br = (size_t)r->brows[role], bc = (size_t)r->bcols[role];
	if (colwise) {
		size_t tmp = br;
		br = bc;
		bc = tmp;
	}
	if (r->rule == EMU_RSCALE_NONE)
		br = bc = 0;
	o->brows = br == 0 || br > rows ? (rows ? rows : 1) : br;
	o->bcols = bc == 0 || bc > cols ? (cols ? cols : 1) : bc;
	o->nbr = rows ? (rows + o->brows - 1) / o->brows : 0;
	o->nbc = cols ? (cols + o->bcols - 1) / o->bcols : 0;
	size_t nb = o->nbr * o->nbc, na = n ? n : 1, nbb = nb ? nb : 1;
	o->x = calloc(na, sizeof *o->x);
	o->code = calloc(na, sizeof *o->code);
	o->q = calloc(na, sizeof *o->q);
	o->deq = calloc(na, sizeof *o->deq);
	o->flags = calloc(na, 1);
	o->amax = calloc(nbb, sizeof *o->amax);
	o->d = calloc(nbb, sizeof *o->d);
	o->m = calloc(nbb, sizeof *o->m);
	o->dcode = calloc(nbb, sizeof *o->dcode);
	o->dflags = calloc(nbb, sizeof *o->dflags);
	o->four = calloc(nbb, sizeof *o->four);
	double *row_amax = r->rule == EMU_RSCALE_DELAYED ? calloc(rows ? rows : 1, sizeof(double))
	                                                 : NULL;
	if (!o->x || !o->code || !o->q || !o->deq || !o->flags || !o->amax || !o->d || !o->m ||
	    !o->dcode || !o->dflags || !o->four || (r->rule == EMU_RSCALE_DELAYED && !row_amax)) {
		free(row_amax);
		emu_qtensor_free(o);
		return -1;
	}
	/* 1. the input as the recipe holds it */
	hold_input(r, role, colwise, x, rows, cols, o->x);
	o->tensor_amax = isnan(part->tensor_amax) ? amax_of(o->x, 0, rows, 0, cols, cols, r->amax_rule)
	                                          : part->tensor_amax;
	double fmax = r->fmax > 0 ? r->fmax : r->elem.max;
	o->s_enc = o->t = 1;
	if (r->rule == EMU_RSCALE_NVFP4) {
		double ga = o->tensor_amax;
		double s = fminf32(f32(f32(r->tbound * fmax) / ga), fmt("fp32")->max);
		if (ga == 0 || s == 0)
			s = 1;
		o->s_enc = s;
		o->t = f32(1 / s);
	}
	if (row_amax)
		for (size_t rr = 0; rr < rows; rr++)
			row_amax[rr] = amax_of(o->x, rr, rr + 1, 0, cols, cols, r->amax_rule);
	/* 2.–3. per block: amax and scale */
	emu_mode mode = r->elem_mode[role];
	double hist_fmax = r->four_over_six ? 6 : fmax;
	for (size_t bi = 0; bi < o->nbr; bi++)
		for (size_t bj = 0; bj < o->nbc; bj++) {
			size_t b = bi * o->nbc + bj;
			size_t r0 = bi * o->brows, r1 = r0 + o->brows < rows ? r0 + o->brows : rows;
			size_t c0 = bj * o->bcols, c1 = c0 + o->bcols < cols ? c0 + o->bcols : cols;
			double a = amax_of(o->x, r0, r1, c0, c1, cols, r->amax_rule);
			double hist = ext_hist >= 0 ? ext_hist : 0;
			if (row_amax && ext_hist < 0)
				for (size_t q = r0 > (size_t)r->delayed_len ? r0 - (size_t)r->delayed_len : 0;
				     q < r0; q++)
					hist = row_amax[q] > hist ? row_amax[q] : hist;
			bscale s = scale_of(r, a, hist, hist_fmax, o->s_enc, o->t);
			if (r->ftz_scale && s.d != 0 && fabs(s.d) < fmt("fp32")->min_normal)
				s.d = 0; /* an fp32-subnormal scale read under FTZ (e8m0 2^-127) */
			o->amax[b] = a;
			o->d[b] = s.d;
			o->m[b] = s.m;
			o->dcode[b] = s.dcode;
			o->dflags[b] = s.dflags;
		}
	/* 4.–5. elements, as array operations over the part */
	double *md = calloc(na, sizeof *md);
	if (!md) {
		free(row_amax);
		emu_qtensor_free(o);
		return -1;
	}
	expand(o, r->apply == EMU_RAPPLY_DIV ? o->d : o->m, md);
	quant_elems(r, mode, md, o->d, o->t, seed, i0, o);
	if (r->four_over_six) { /* each block tries its max at 4, keeps the smaller error */
		double *keep = calloc(na * 3, sizeof *keep);
		uint8_t *kfl = calloc(na, 1);
		double *d4 = calloc(nbb, sizeof *d4), *m4 = calloc(nbb, sizeof *m4);
		emu_bits *c4 = calloc(nbb, sizeof *c4);
		int rc = keep && kfl && d4 && m4 && c4 ? 0 : -1;
		if (rc == 0) {
			memcpy(keep, o->q, n * sizeof *keep);
			memcpy(keep + na, o->deq, n * sizeof *keep);
			for (size_t i = 0; i < n; i++)
				keep[2 * na + i] = (double)o->code[i];
			memcpy(kfl, o->flags, n);
			for (size_t b = 0; b < nb; b++) {
				emu_recipe_block_scale(r, o->amax[b], 0, 4, o->s_enc, o->t, &d4[b], &m4[b],
				                       &c4[b]);
			}
			expand(o, r->apply == EMU_RAPPLY_DIV ? d4 : m4, md);
			quant_elems(r, mode, md, d4, o->t, seed, i0, o);
			for (size_t bi = 0; bi < o->nbr; bi++)
				for (size_t bj = 0; bj < o->nbc; bj++) {
					size_t b = bi * o->nbc + bj;
					size_t r0 = bi * o->brows, r1 = r0 + o->brows < rows ? r0 + o->brows : rows;
					size_t c0 = bj * o->bcols, c1 = c0 + o->bcols < cols ? c0 + o->bcols : cols;
					bool mse = r->four_over_six == EMU_R46_MSE;
					double e4 = block_err(o, r0, r1, c0, c1, mse);
					/* the 6-scaled error, from the kept values */
					double e6 = 0;
					for (size_t rr = r0; rr < r1; rr++)
						for (size_t c = c0; c < c1; c++) {
							size_t i = rr * cols + c;
							double e = fabs(o->x[i] - keep[na + i]);
							e6 += mse ? e * e : e;
						}
					if (e4 < e6) {
						o->four[b] = true;
						o->d[b] = d4[b];
						o->m[b] = m4[b];
						o->dcode[b] = c4[b];
						o->dflags[b] = 0;
						continue;
					}
					for (size_t rr = r0; rr < r1; rr++)
						for (size_t c = c0; c < c1; c++) {
							size_t i = rr * cols + c;
							o->q[i] = keep[i];
							o->deq[i] = keep[na + i];
							o->code[i] = (emu_bits)keep[2 * na + i];
							o->flags[i] = kfl[i];
						}
				}
		}
		free(keep);
		free(kfl);
		free(d4);
		free(m4);
		free(c4);
		if (rc) {
			free(md);
			free(row_amax);
			emu_qtensor_free(o);
			return -1;
		}
	}
	free(md);
	free(row_amax);
	return 0;
}

/* ---- statistics ---- */

void emu_qstats_init(emu_qstats *st)
{
	memset(st, 0, sizeof *st);
}

void emu_qstats_add(emu_qstats *st, const emu_qtensor *q, const double *x0)
{
	size_t n = q->rows * q->cols;
	double tol = ldexp(1.0, -q->elem_p);
	st->n += n;
	if (!isnan(st->amax) && !(q->tensor_amax <= st->amax)) /* NaN sticks */
		st->amax = q->tensor_amax;
	for (size_t i = 0; i < n; i++) {
		double x = x0[i], y = q->deq[i];
		if (isnan(x)) {
			st->nan_in++;
			continue;
		}
		if (isinf(x)) {
			st->inf_in++;
			continue;
		}
		if (q->flags[i] & EMU_FLAG_OVERFLOW)
			st->saturated++;
		if (!isfinite(y)) {
			st->nonfinite_out++;
			continue;
		}
		double e = y - x;
		st->sum_x2 += x * x;
		st->sum_e2 += e * e;
		st->sum_e += e;
		st->n_err++;
		if (x != 0) {
			double rel = fabs(e) / fabs(x);
			if (y == 0)
				st->flushed++;
			if (y == 0 || rel >= 1)
				st->lost++;
			if (rel < tol)
				st->within++;
			st->sum_rel += rel;
			st->n_rel++;
			if (rel > st->max_rel)
				st->max_rel = rel;
		}
	}
	size_t nblk = q->nbr * q->nbc;
	st->blocks += nblk;
	for (size_t b = 0; b < nblk; b++) {
		double d = q->d[b] * q->t;
		if (isnan(d))
			st->nan_scale++;
		else if (d == 0)
			st->zero_scale++;
		else if (isinf(d))
			st->inf_scale++;
		else {
			int k = ilogb(d) + 150;
			st->exp_hist[k < 0 ? 0 : k > 299 ? 299 : k]++;
		}
	}
}

void emu_qstats_finish(emu_qstats *st)
{
	st->mean_rel = st->n_rel ? st->sum_rel / (double)st->n_rel : 0;
	st->sqnr_db = st->sum_e2 > 0 ? 10 * log10(st->sum_x2 / st->sum_e2) : INFINITY;
	st->bias = st->bias_se = 0;
	if (st->n_err) {
		double k = (double)st->n_err, mean = st->sum_e / k;
		double var = st->n_err > 1 ? (st->sum_e2 - k * mean * mean) / (k - 1) : 0;
		double scale = st->amax > 0 && isfinite(st->amax) ? st->amax : 1;
		st->bias = mean / scale;
		st->bias_se = var > 0 ? sqrt(var / k) / scale : 0;
	}
}

double emu_qblock_sqnr(const emu_qtensor *q, const double *x0, size_t block)
{
	size_t bi = block / (q->nbc ? q->nbc : 1), bj = block % (q->nbc ? q->nbc : 1);
	size_t r0 = bi * q->brows, r1 = r0 + q->brows < q->rows ? r0 + q->brows : q->rows;
	size_t c0 = bj * q->bcols, c1 = c0 + q->bcols < q->cols ? c0 + q->bcols : q->cols;
	double sx = 0, se = 0;
	for (size_t r = r0; r < r1; r++)
		for (size_t c = c0; c < c1; c++) {
			size_t i = r * q->cols + c;
			if (!isfinite(x0[i]))
				continue;
			double e = q->deq[i] - x0[i];
			if (isnan(e))
				return NAN;
			sx += x0[i] * x0[i];
			se += e * e;
		}
	return se > 0 ? 10 * log10(sx / se) : INFINITY;
}
