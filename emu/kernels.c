/* kernels.c — the kernel registry and the helpers every kernel uses. */
#include <string.h>

#include "kernels.h"

static const emu_kernel *const all[] = {
	&emu_kernel_softmax_ce,
	&emu_kernel_layernorm,
	&emu_kernel_accum,
	&emu_kernel_backward,
	&emu_kernel_gradscaler,
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

double emu_kparam_get(const emu_kin *in, const char *name, double dflt)
{
	for (size_t i = 0; i < in->nparams; i++)
		if (strcmp(in->params[i].name, name) == 0)
			return in->params[i].value;
	return dflt;
}

emu_val *emu_kout_add(emu_be *be, emu_kout *out, const char *name, size_t n,
                      const emu_format *fmt)
{
	if (out->n >= EMU_KOUT_MAX)
		return NULL;
	emu_val *v = emu_k_vec(be, n);
	if (!v)
		return NULL;
	out->item[out->n++] = (emu_kout_item){name, v, n, fmt};
	return v;
}
