/*
 * policy.c — precision policies: one spec string names, per kernel, the
 * storage, compute and accumulator formats, the rounding mode, overflow
 * rule, subnormal handling and (for small formats) a scaling recipe.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine/kern.h"

static emu_status fail(char *err, size_t len, const char *msg, const char *arg)
{
	if (err && len)
		snprintf(err, len, msg, arg);
	return EMU_ERR_BAD_SPEC;
}

/* Split "k=v,k={a,b},..." at top-level commas. */
static const char *next_item(const char *s, char *item, size_t len)
{
	size_t n = 0;
	int depth = 0;
	while (*s && (depth > 0 || *s != ',')) {
		if (*s == '{')
			depth++;
		else if (*s == '}')
			depth--;
		if (n + 1 < len)
			item[n++] = *s;
		s++;
	}
	item[n] = 0;
	return *s == ',' ? s + 1 : s;
}

/* The legacy kinds as recipes of emu/recipes/recipe.h, their element format the
 * policy's storage: emu_recipe_block_scale gives their scales. */
static emu_status legacy_recipe(emu_policy *p, char *err, size_t errlen)
{
	char spec[96];
	switch (p->scale) {
	case EMU_SCALE_TENSOR:
		snprintf(spec, sizeof spec, "tensor");
		break;
	case EMU_SCALE_TILE128:
		snprintf(spec, sizeof spec, "tile128");
		break;
	case EMU_SCALE_MX32:
		snprintf(spec, sizeof spec, "%s", p->mx_rceil ? "mx32:rceil" : "mx32:floor");
		break;
	case EMU_SCALE_DELAYED:
		snprintf(spec, sizeof spec, "delayed,history=%d,margin=%d", p->delayed_len,
		         p->delayed_margin);
		break;
	default:
		snprintf(spec, sizeof spec, "none");
		break;
	}
	if (emu_recipe_parse(spec, &p->recipe, err, errlen) != EMU_OK)
		return EMU_ERR_BAD_SPEC;
	p->recipe.elem = p->storage;
	return EMU_OK;
}

static emu_status parse_fmt(const char *v, emu_format *f, char *err, size_t len)
{
	char buf[128];
	size_t n = strlen(v);
	if (n >= 2 && v[0] == '{' && v[n - 1] == '}') {
		if (n - 2 >= sizeof buf)
			return fail(err, len, "format spec too long in policy: '%s'", v);
		memcpy(buf, v + 1, n - 2);
		buf[n - 2] = 0;
		v = buf;
	}
	return emu_format_parse(v, f, err, len);
}

emu_status emu_policy_parse(const char *spec, emu_policy *out, char *err, size_t errlen)
{
	emu_policy p;
	memset(&p, 0, sizeof p);
	p.env = EMU_ENV_DEFAULT;
	bool have_storage = false, have_compute = false, have_accum = false;
	bool have_grad = false, have_state = false;
	char item[160];
	if (strlen(spec) >= sizeof p.spec)
		return fail(err, errlen, "policy too long: '%.60s...'", spec);
	/* each key at most once: "compute=fp16,compute=bf16" is a mistake, not
	 * a request for the last one */
	static const char *const keys[] = {"storage",    "compute",    "accum", "round",
	                                   "overflow",   "subnormals", "seed",  "scale",
	                                   "role",       "grad",       "state"};
	unsigned seen = 0;
	for (const char *s = spec; *s;) {
		s = next_item(s, item, sizeof item);
		char *eq = strchr(item, '=');
		if (!eq)
			return fail(err, errlen, "policy item '%s' is not key=value", item);
		*eq = 0;
		const char *k = item, *v = eq + 1;
		emu_status st = EMU_OK;
		for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (strcmp(k, keys[i]) == 0) {
				if (seen & (1u << i))
					return fail(err, errlen, "policy key '%s' given twice", k);
				seen |= 1u << i;
			}
		if (strcmp(k, "storage") == 0) {
			st = parse_fmt(v, &p.storage, err, errlen);
			have_storage = true;
		} else if (strcmp(k, "compute") == 0) {
			st = parse_fmt(v, &p.compute, err, errlen);
			have_compute = true;
		} else if (strcmp(k, "accum") == 0) {
			st = parse_fmt(v, &p.accum, err, errlen);
			have_accum = true;
		} else if (strcmp(k, "grad") == 0) {
			st = parse_fmt(v, &p.grad, err, errlen);
			have_grad = true;
		} else if (strcmp(k, "state") == 0) {
			st = parse_fmt(v, &p.state, err, errlen);
			have_state = true;
		} else if (strcmp(k, "round") == 0) {
			p.env.mode = emu_mode_by_name(v);
			if (p.env.mode == EMU_NMODES)
				return fail(err, errlen, "unknown rounding mode '%s' (rne rtz up down rna sr)", v);
		} else if (strcmp(k, "overflow") == 0) {
			if (strcmp(v, "ieee") != 0 && strcmp(v, "sat") != 0)
				return fail(err, errlen, "unknown overflow rule '%s' (ieee sat)", v);
			p.env.sat = strcmp(v, "sat") == 0;
		} else if (strcmp(k, "subnormals") == 0) {
			if (strcmp(v, "keep") != 0 && strcmp(v, "ftz") != 0 && strcmp(v, "daz") != 0 &&
			    strcmp(v, "ftzdaz") != 0)
				return fail(err, errlen, "unknown subnormal rule '%s' (keep ftz daz ftzdaz)", v);
			p.env.ftz = strstr(v, "ftz") != NULL;
			p.env.daz = strstr(v, "daz") != NULL;
		} else if (strcmp(k, "seed") == 0) {
			/* digits (or 0x and hex digits) only: strtoull alone would take
			 * "-3" as 2^64 - 3, and blanks and a '+' */
			char *end;
			bool hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
			size_t ok = strspn(v + (hex ? 2 : 0), hex ? "0123456789abcdefABCDEF" : "0123456789");
			errno = 0;
			p.env.seed = strtoull(v, &end, hex ? 16 : 10);
			if (ok == 0 || v[(hex ? 2 : 0) + ok] != '\0' || *end || errno == ERANGE)
				return fail(err, errlen,
				            "bad seed '%s' in policy (an unsigned 64-bit integer)", v);
		} else if (strcmp(k, "scale") == 0) {
			int L, m;
			char tail;
			if (strcmp(v, "none") == 0)
				p.scale = EMU_SCALE_NONE;
			else if (strcmp(v, "tensor") == 0)
				p.scale = EMU_SCALE_TENSOR;
			else if (strcmp(v, "tile128") == 0)
				p.scale = EMU_SCALE_TILE128;
			else if (strcmp(v, "mx32:floor") == 0 || strcmp(v, "mx32") == 0)
				p.scale = EMU_SCALE_MX32;
			else if (strcmp(v, "mx32:rceil") == 0)
				p.scale = EMU_SCALE_MX32, p.mx_rceil = true;
			else if (sscanf(v, "delayed:%d:%d%c", &L, &m, &tail) == 2 && L > 0 && L <= 1 << 20 &&
			         m >= 0 && m < 64)
				p.scale = EMU_SCALE_DELAYED, p.delayed_len = L, p.delayed_margin = m;
			else {
				/* any other recipe: a name, or a spec in braces */
				char rs[160], rerr[200];
				size_t n = strlen(v);
				bool braced = n >= 2 && v[0] == '{' && v[n - 1] == '}';
				snprintf(rs, sizeof rs, "%.*s", braced ? (int)(n - 2) : (int)n,
				         braced ? v + 1 : v);
				if (emu_recipe_parse(rs, &p.recipe, rerr, sizeof rerr) != EMU_OK)
					return fail(err, errlen,
					            "%s (scale= also takes the legacy none tensor "
					            "delayed:L:margin mx32:floor mx32:rceil tile128)",
					            rerr);
				p.scale = EMU_SCALE_RECIPE;
			}
		} else if (strcmp(k, "role") == 0) {
			p.role = emu_role_by_name(v);
			if (p.role == EMU_NROLES)
				return fail(err, errlen, "unknown role '%s' (act weight grad)", v);
		} else {
			return fail(err, errlen,
			            "unknown policy key '%s' (keys: storage compute accum round overflow "
			            "subnormals seed scale role grad state)",
			            k);
		}
		if (st != EMU_OK)
			return st;
	}
	if (p.scale == EMU_SCALE_RECIPE) { /* the recipe's elements are the storage */
		const emu_format *a = &p.storage, *b = &p.recipe.elem;
		if (have_storage &&
		    (a->p != b->p || a->ebits != b->ebits || a->bias != b->bias ||
		     a->has_sign != b->has_sign || a->has_inf != b->has_inf ||
		     a->has_subnormals != b->has_subnormals || a->has_zero != b->has_zero ||
		     a->nan != b->nan))
		{
			if (err && errlen)
				snprintf(err, errlen,
				         "policy '%s': scale=%s stores %s elements, storage=%s contradicts it",
				         spec, p.recipe.name, p.recipe.elem.name, p.storage.name);
			return EMU_ERR_BAD_SPEC;
		}
		p.storage = p.recipe.elem;
		have_storage = true;
	}
	if (!have_storage)
		return fail(err, errlen, "policy '%s' names no storage format", spec);
	if (p.scale != EMU_SCALE_RECIPE && legacy_recipe(&p, err, errlen) != EMU_OK)
		return EMU_ERR_BAD_SPEC;
	if (!have_compute)
		p.compute = p.storage;
	if (!have_accum)
		p.accum = p.compute;
	if (!have_grad)
		p.grad = p.storage;
	if (!have_state)
		p.state = p.storage;
	snprintf(p.spec, sizeof p.spec, "%s", spec);
	*out = p;
	return EMU_OK;
}
