/*
 * apply.c — table-driven dispatch over emu_op, so tests, the CLI and
 * benchmarks walk every operation the same way.
 */
#include <string.h>

#include "emu/core/internal.h"

static const struct {
	const char *name;
	int arity;
} ops[EMU_NOPS] = {
	[EMU_OP_CVT] = {"cvt", 1},   [EMU_OP_ADD] = {"add", 2},     [EMU_OP_SUB] = {"sub", 2},
	[EMU_OP_MUL] = {"mul", 2},   [EMU_OP_DIV] = {"div", 2},     [EMU_OP_FMA] = {"fma", 3},
	[EMU_OP_SQRT] = {"sqrt", 1}, [EMU_OP_EXP] = {"exp", 1},     [EMU_OP_LOG] = {"log", 1},
	[EMU_OP_EXP2] = {"exp2", 1}, [EMU_OP_RSQRT] = {"rsqrt", 1}, [EMU_OP_MIN] = {"min", 2},
	[EMU_OP_MAX] = {"max", 2},   [EMU_OP_NEG] = {"neg", 1},     [EMU_OP_ABS] = {"abs", 1},
	[EMU_OP_LOG1P] = {"log1p", 1},
};

int emu_op_arity(emu_op op)
{
	return op < EMU_NOPS ? ops[op].arity : 0;
}

const char *emu_op_name(emu_op op)
{
	return op < EMU_NOPS ? ops[op].name : "?";
}

emu_op emu_op_by_name(const char *name)
{
	for (int i = 0; i < EMU_NOPS; i++)
		if (strcmp(ops[i].name, name) == 0)
			return (emu_op)i;
	return EMU_NOPS;
}

emu_result emu_apply(emu_op op, const emu_format *f, const emu_format *src, const emu_bits *a,
                     const emu_env *env)
{
	switch (op) {
	case EMU_OP_CVT:
		return emu_convert(f, src, a[0], env);
	case EMU_OP_ADD:
		return emu_add(f, a[0], a[1], env);
	case EMU_OP_SUB:
		return emu_sub(f, a[0], a[1], env);
	case EMU_OP_MUL:
		return emu_mul(f, a[0], a[1], env);
	case EMU_OP_DIV:
		return emu_div(f, a[0], a[1], env);
	case EMU_OP_FMA:
		return emu_fma(f, a[0], a[1], a[2], env);
	case EMU_OP_SQRT:
		return emu_sqrt(f, a[0], env);
	case EMU_OP_EXP:
		return emu_exp(f, a[0], env);
	case EMU_OP_LOG:
		return emu_log(f, a[0], env);
	case EMU_OP_EXP2:
		return emu_exp2(f, a[0], env);
	case EMU_OP_RSQRT:
		return emu_rsqrt(f, a[0], env);
	case EMU_OP_MIN:
		return emu_min(f, a[0], a[1], env);
	case EMU_OP_MAX:
		return emu_max(f, a[0], a[1], env);
	case EMU_OP_NEG:
		return emu_neg(f, a[0], env);
	case EMU_OP_ABS:
		return emu_abs(f, a[0], env);
	case EMU_OP_LOG1P:
		return emu_log1p(f, a[0], env);
	default:
		return (emu_result){f->nan_bits, EMU_FLAG_INVALID};
	}
}
