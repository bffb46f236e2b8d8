/*
 * check_tc.c — the Tensor Core model (emu/kernels/tc.c) and `nanmap dot`'s readers.
 *
 *  - spec strings and presets, table-driven;
 *  - specials (NaN, inf, 0*inf, overflow, signed zeros) against written-down
 *    answers, in both implementations;
 *  - the proof: the integer model equals the MPFR model (emu/kernels/tc_mp.c),
 *    encodings and flags, on 10^5 seeded random cases per GPU preset (spread
 *    over its input/output pairs) and 10^5 on variants (promotion, sat,
 *    directed modes, floors, block precision, c_late and its rounding,
 *    sub-blocks over interleaved products);
 *  - the published hardware vectors (Khattak & Mikaitis, BSD-2), read from
 *    $NANMAP_TC_VECTORS or ../shared/data/tensor-core-vectors: every V100,
 *    A100 and H200 file (14, FP8 -> fp16 included) must match 5000 of 5000,
 *    and B200's FP8 files too where the folder holds them; without the
 *    folder, a skip line;
 *  - DeepSeek-V3 §3.3.2 by test: FP8 (e4m3) dot products of K = 4096 on the
 *    h100 model, maximum relative error without and with promotion to fp32
 *    every 128 products;
 *  - the vector-file readers' error messages.
 * Encodings are compared, never values; a mismatch prints both in hex.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib.h"
#include "emu/cli/nm_dot.h"
#include "emu/kernels/tc.h"

#define IX EMU_FLAG_INEXACT
#define OF (EMU_FLAG_OVERFLOW | EMU_FLAG_INEXACT)
#define INV EMU_FLAG_INVALID
#define UF EMU_FLAG_UNDERFLOW

/* t_rand streams, one per generator */
enum { S_TC_CASE = 0x7c000001, S_TC_VAR, S_TC_ERR };

static emu_tc_model model_of(const char *spec, const emu_format *in, const emu_format *out)
{
	emu_tc_model m;
	char err[200];
	if (emu_tc_parse(spec, in, out, &m, err, sizeof err) != EMU_OK)
		ck_abort_msg("model '%s' (%s -> %s): %s", spec, in->name, out->name, err);
	return m;
}

/* ---- spec strings and presets ---- */

static const struct {
	const char *spec, *in, *out;
	const char *want; /* canonical form, or NULL: must be refused */
} specs[] = {
    {"b200-mxf8f6f4", "e5m2", "fp32",
     "k=32,neab=2,final=rtz,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=pos,nan=ones,zalign=1"},
    {"rtx5090-mxf4nvf4", "e2m1", "fp32",
     "k=64,neab=12,final=rtz,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=pos,nan=ones,zalign=1,gsum=16"},
    {"h100", "fp16", "fp32",
     "k=16,neab=2,final=rtz,cpre=0,floor=-133,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=emin,zsign=pos,nan=ones"},
    {"h200", "bf16", "fp32",
     "k=16,neab=2,final=rtz,cpre=0,floor=-133,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=emin,zsign=pos,nan=ones"},
    {"h100", "fp16", "fp16",
     "k=16,neab=2,final=rne,cpre=1,floor=-133,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=emin,zsign=pos,nan=ones"},
    {"h100", "e4m3", "fp32",
     "k=32,neab=-10,final=rtz,cpre=0,floor=-133,prec=14,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=emin,zsign=pos,nan=ones"},
    {"h100,promote=128", "e5m2", "fp32",
     "k=32,neab=-10,final=rtz,cpre=0,floor=-133,prec=14,promote=128,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=emin,zsign=pos,nan=ones"},
    {"v100", "fp16", "fp32",
     "k=4,neab=0,final=rtz,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"a100", "tf32", "fp32",
     "k=4,neab=1,final=rtz,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"ada", "e4m3", "fp32",
     "k=16,neab=-10,final=rtz,cpre=0,floor=none,prec=14,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"h200", "e5m2", "fp16", /* mma.sync, emulated: two fp16 HMMAs, then C */
     "k=32,neab=2,final=rne,cpre=1,floor=-133,prec=out,promote=0,sat=0,clate=1,cround=rne,"
     "split=2,group=2,csub=emin,zsign=pos,nan=ones"},
    {"b200", "e4m3", "fp32", /* mma.sync: the dot with C = 0, then an RNE addition */
     "k=32,neab=2,final=rtz,cpre=0,floor=-133,prec=out,promote=0,sat=0,clate=1,cround=rne,"
     "split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"b200-tcgen05", "e5m2", "fp32", /* C inside the fused sum */
     "k=32,neab=2,final=rtz,cpre=0,floor=-133,prec=out,promote=0,sat=0,clate=0,cround=rne,"
     "split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"b200-tcgen05", "bf16", "fp32",
     "k=16,neab=2,final=rtz,cpre=0,floor=-133,prec=out,promote=0,sat=0,clate=0,cround=rne,"
     "split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"k=12,split=3,group=2,clate=1,cround=down", "fp16", "fp32",
     "k=12,neab=2,final=rtz,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=1,cround=down,"
     "split=3,group=2,csub=true,zsign=ieee,nan=canon"},
    {"k=16,neab=2,final=rz,cpre=1,promote=128", "fp16", "fp32",
     "k=16,neab=2,final=rtz,cpre=1,floor=none,prec=out,promote=128,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"k=8,neab=-3,final=down,floor=-20,prec=9,sat=1,clate=1", "bf16", "fp16",
     "k=8,neab=-3,final=down,cpre=0,floor=-20,prec=9,promote=0,sat=1,clate=1,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"a100,k=2", "bf16", "fp32",
     "k=2,neab=1,final=rtz,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    /* sm_90's mma.sync: FP8 -> fp32 emulated as FP8 -> fp16 is, C added late */
    {"h200-mma", "e4m3", "fp32",
     "k=32,neab=2,final=rtz,cpre=0,floor=-133,prec=out,promote=0,sat=0,clate=1,cround=rne,"
     "split=2,group=2,csub=emin,zsign=pos,nan=ones"},
    {"h100-mma", "bf16", "fp32", /* every other pair is h100's */
     "k=16,neab=2,final=rtz,cpre=0,floor=-133,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=emin,zsign=pos,nan=ones"},
    {"h200,csub=true,zsign=ieee,nan=canon", "fp16", "fp16",
     "k=16,neab=2,final=rne,cpre=1,floor=-133,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"a100,csub=emin,zsign=pos,nan=ones", "fp16", "fp32",
     "k=8,neab=1,final=rtz,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=emin,zsign=pos,nan=ones"},
    {"csub=14", "fp16", "fp32", NULL},
    {"zsign=neg", "fp16", "fp32", NULL},
    {"nan=0x7fff", "fp16", "fp32", NULL},
    {"", "fp16", "fp32", NULL},
    {"h300", "fp16", "fp32", NULL},
    {"v100", "bf16", "fp32", NULL}, /* V100 has no bf16 */
    {"a100", "e4m3", "fp32", NULL}, /* nor A100 FP8 */
    {"h100", "fp16", "bf16", NULL}, /* no bf16 output */
    {"k=0", "fp16", "fp32", NULL},
    {"k=65537", "fp16", "fp32", NULL},
    {"neab=37", "fp16", "fp32", NULL},
    {"neab=-23", "fp16", "fp32", NULL},
    {"final=rna", "fp16", "fp32", NULL},
    {"final=sr", "fp16", "fp32", NULL},
    {"k=16,,neab=2", "fp16", "fp32", NULL},
    {"k=16,h100", "fp16", "fp32", NULL}, /* the GPU name comes first */
    /* exact groups: only acc=block, split 1, k a multiple, narrow inputs */
    {"k=16,gsum=17", "e2m1", "fp32", NULL},
    {"k=16,gsum=3", "e2m1", "fp32", NULL},
    {"k=16,gsum=4,split=2", "e2m1", "fp32", NULL},
    {"k=16,gsum=4,acc=rd", "e2m1", "fp32", NULL},
    {"k=16,gsum=4", "e5m2", "fp32", NULL},          /* a group sum too wide */
    {"k=16,gsum=16,neab=36", "e4m3", "fp32", NULL}, /* a window too wide */
    {"b200-mxf4nvf4", "e4m3", "fp32", NULL},        /* kind::mxf4nvf4 is e2m1 only */
    {"b200-mxf8f6f4", "fp16", "fp32", NULL},
    {"k=1x", "fp16", "fp32", NULL},
    {"cpre=2", "fp16", "fp32", NULL},
    {"prec=1", "fp16", "fp32", NULL},
    {"promote=-1", "fp16", "fp32", NULL},
    {"colour=blue", "fp16", "fp32", NULL},
    {"b200-tcgen05", "fp16", "fp16", /* kind::f16 -> f16: MMA-Sim's, B200TC.m's floor */
     "k=16,neab=2,final=rne,cpre=1,floor=-15,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"h200-wgmma", "e5m2", "fp16", /* wgmma's native FP8 -> fp16 */
     "k=32,neab=-10,final=rne,cpre=1,floor=-133,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=emin,zsign=pos,nan=ones"},
    {"h100-wgmma", "bf16", "fp32", /* every other pair is h100's */
     "k=16,neab=2,final=rtz,cpre=0,floor=-133,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=emin,zsign=pos,nan=ones"},
    {"t4", "fp16", "fp32",
     "k=8,neab=1,final=rtz,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"rtx5090", "e2m1", "fp16",
     "k=32,neab=2,final=rne,cpre=1,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon"},
    {"mi100", "bf16", "fp32",
     "k=2,neab=0,final=rne,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon,acc=pairwise"},
    {"mi250", "fp16", "fp32",
     "k=4,neab=0,final=rne,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon,acc=pairwise,ftz=1"},
    {"mi300x", "fp32", "fp32",
     "k=1,neab=0,final=rne,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=true,zsign=ieee,nan=canon,acc=fma"},
    {"mi300x,zalign=1", "e5m2fnuz", "fp32",
     "k=16,neab=1,final=rne,cpre=0,floor=none,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=2,group=1,csub=true,zsign=ieee,nan=canon,zalign=1,acc=rd"},
    {"h100,zalign=1", "fp16", "fp32",
     "k=16,neab=2,final=rtz,cpre=0,floor=-133,prec=out,promote=0,sat=0,clate=0,"
     "cround=rne,split=1,group=1,csub=emin,zsign=pos,nan=ones,zalign=1"},
    {"mi300x", "e4m3", "fp32", NULL},              /* CDNA3's fp8 is fnuz */
    {"mi100", "fp16", "fp16", NULL},               /* MFMA accumulates in fp32 */
    {"k=4,acc=pairwise", "fp16", "fp16", NULL},    /* pairwise adds in fp32 */
    {"k=4,acc=fma,clate=1", "fp16", "fp32", NULL}, /* no late C */
    {"k=4,acc=rd,split=2,group=2", "fp16", "fp32", NULL},
    {"k=4,acc=rd,ftz=1", "fp16", "fp32", NULL}, /* ftz is fma's and pairwise's */
    {"k=4,acc=pairwise,floor=-20", "fp16", "fp32", NULL},
    {"acc=tree", "fp16", "fp32", NULL},
    {"zalign=2", "fp16", "fp32", NULL},
    {"split=0", "fp16", "fp32", NULL},
    {"group=0", "fp16", "fp32", NULL},
    {"split=3", "fp16", "fp32", NULL},               /* 16 is no multiple of 3 */
    {"k=32,split=2,group=32", "fp16", "fp32", NULL}, /* nor 32 of 64 */
    {"split=65537", "fp16", "fp32", NULL},
    {"cround=rna", "fp16", "fp32", NULL},
    {"cround=sr", "fp16", "fp32", NULL},
};

START_TEST(test_tc_specs)
{
	for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
		emu_tc_model m;
		char err[200] = "", buf[200];
		const emu_format *in = t_fmt(specs[i].in), *out = t_fmt(specs[i].out);
		emu_status st = emu_tc_parse(specs[i].spec, in, out, &m, err, sizeof err);
		if (st == EMU_OK)
			st = emu_tc_check(&m, in, out, err, sizeof err);
		if (!specs[i].want) {
			ck_assert_msg(st != EMU_OK, "row %zu: '%s' accepted", i, specs[i].spec);
			ck_assert_msg(err[0] != 0, "row %zu: '%s' refused without a reason", i,
			              specs[i].spec);
			continue;
		}
		ck_assert_msg(st == EMU_OK, "row %zu: '%s' refused: %s", i, specs[i].spec, err);
		emu_tc_spec(&m, buf, sizeof buf);
		ck_assert_msg(!strcmp(buf, specs[i].want), "row %zu: '%s' gave %s, want %s", i,
		              specs[i].spec, buf, specs[i].want);
		/* the canonical form reads back as the same model */
		emu_tc_model m2;
		ck_assert_int_eq(emu_tc_parse(buf, in, out, &m2, err, sizeof err), EMU_OK);
		char buf2[200];
		ck_assert_str_eq(emu_tc_spec(&m2, buf2, sizeof buf2), buf);
	}
	/* outputs need IEEE specials and subnormals; inputs need a sign and a zero */
	emu_format nosub;
	char err[200];
	ck_assert_int_eq(emu_format_parse("p=11,emax=15,nosub", &nosub, err, sizeof err), EMU_OK);
	emu_tc_model m = emu_tc_default();
	ck_assert_int_eq(emu_tc_check(&m, t_fmt("fp16"), t_fmt("bf16"), err, sizeof err), EMU_OK);
	ck_assert_int_ne(emu_tc_check(&m, t_fmt("fp16"), &nosub, err, sizeof err), EMU_OK);
	ck_assert_int_ne(emu_tc_check(&m, t_fmt("fp16"), t_fmt("e4m3"), err, sizeof err), EMU_OK);
	ck_assert_int_ne(emu_tc_check(&m, t_fmt("e8m0"), t_fmt("fp32"), err, sizeof err), EMU_OK);
	/* scales: no infinities, p <= 8, a block (a multiple of gsum), acc=block */
	emu_bits one = 127;
	emu_tc_scales sc = {t_fmt("e8m0"), 32, &one, &one};
	ck_assert_int_eq(emu_tc_check_scales(&m, &sc, err, sizeof err), EMU_OK);
	sc.fmt = t_fmt("e5m2");
	ck_assert_int_ne(emu_tc_check_scales(&m, &sc, err, sizeof err), EMU_OK);
	sc.fmt = t_fmt("bf16");
	ck_assert_int_ne(emu_tc_check_scales(&m, &sc, err, sizeof err), EMU_OK);
	sc.fmt = t_fmt("e4m3");
	sc.block = 0;
	ck_assert_int_ne(emu_tc_check_scales(&m, &sc, err, sizeof err), EMU_OK);
	sc.block = 8;
	m.gsum = 16;
	m.k = 64;
	ck_assert_int_ne(emu_tc_check_scales(&m, &sc, err, sizeof err), EMU_OK);
	sc.block = 16;
	ck_assert_int_eq(emu_tc_check_scales(&m, &sc, err, sizeof err), EMU_OK);
	sc.sb = NULL;
	ck_assert_int_ne(emu_tc_check_scales(&m, &sc, err, sizeof err), EMU_OK);
	sc.sb = &one;
	m = emu_tc_default();
	m.acc = EMU_TC_ACC_FMA;
	ck_assert_int_ne(emu_tc_check_scales(&m, &sc, err, sizeof err), EMU_OK);
	/* a dot refused its scales: NaN with invalid, both implementations */
	emu_bits x[16] = {0x38};
	m = emu_tc_default();
	sc.fmt = t_fmt("bf16");
	emu_result r =
	    emu_tc_dot_scaled(&m, t_fmt("e4m3"), t_fmt("e4m3"), t_fmt("fp32"), x, x, 16, 0, &sc);
	ck_assert(r.bits == 0x7fc00000u && r.flags == EMU_FLAG_INVALID);
	r = emu_tc_mp_dot_scaled(&m, t_fmt("e4m3"), t_fmt("e4m3"), t_fmt("fp32"), x, x, 16, 0, &sc);
	ck_assert(r.bits == 0x7fc00000u && r.flags == EMU_FLAG_INVALID);
}
END_TEST

/* ---- specials and hand-checked values ---- */

static const struct {
	const char *spec, *in, *out;
	emu_bits a[4], b[4];
	size_t K;
	emu_bits c; /* binary32 */
	emu_bits want;
	unsigned flags;
	const char *why;
} hand[] = {
    /* fp16: 1 = 0x3c00, 2 = 0x4000, -1 = 0xbc00, inf = 0x7c00, NaN = 0x7e00 */
    {"h100",
     "fp16",
     "fp32",
     {0x3c00, 0x4000},
     {0x3c00, 0x4000},
     2,
     0x3f800000,
     0x40c00000,
     0,
     "1*1 + 2*2 + 1 = 6 exactly"},
    {"h100,nan=canon",
     "fp16",
     "fp32",
     {0x7e00},
     {0x3c00},
     1,
     0,
     0x7fc00000,
     0,
     "NaN operand: quiet"},
    {"h100,nan=canon", "fp16", "fp32", {0x3c00}, {0x3c00}, 1, 0x7fc00000, 0x7fc00000, 0, "NaN C"},
    {"h100,nan=canon", "fp16", "fp32", {0x7c00}, {0}, 1, 0, 0x7fc00000, INV, "inf*0 is invalid"},
    {"h100,nan=canon",
     "fp16",
     "fp32",
     {0x7c00, 0x7c00},
     {0x3c00, 0xbc00},
     2,
     0,
     0x7fc00000,
     INV,
     "inf - inf is invalid"},
    {"h100,nan=canon",
     "fp16",
     "fp32",
     {0x7c00},
     {0x3c00},
     1,
     0xff800000,
     0x7fc00000,
     INV,
     "inf + C = -inf is invalid"},
    /* sm_90 as the H200 answered gpu/tc-rules.txt (docs/gpu-results.md) */
    {"h200", "fp16", "fp32", {0x7e00}, {0x3c00}, 1, 0, 0x7fffffff, 0, "nan=ones: all ones"},
    {"h200", "fp16", "fp16", {0x7c00}, {0}, 1, 0, 0x7fff, INV, "nan=ones in fp16: 0x7fff"},
    {"h200",
     "bf16",
     "fp32",
     {0x7fc1},
     {0x3f80},
     1,
     0,
     0x7fffffff,
     0,
     "nan=ones: a NaN operand's payload and sign are not kept"},
    {"h200",
     "fp16",
     "fp16",
     {0x0800, 0x8004},
     {0x0c00, 0x0001},
     2,
     0x33800000,
     0x0002,
     UF | IX,
     "csub=emin: C = 2^-24 aligns at 2^-14, -2^-46 is chopped, 1.5 * 2^-24 ties to even"},
    {"h200,csub=true",
     "fp16",
     "fp16",
     {0x0800, 0x8004},
     {0x0c00, 0x0001},
     2,
     0x33800000,
     0x0001,
     UF | IX,
     "csub=true: C at 2^-24 keeps -2^-46, the sum is below the tie"},
    {"h200",
     "fp16",
     "fp16",
     {0x8800},
     {0x0800},
     1,
     0,
     0x0000,
     UF | IX,
     "zsign=pos: -2^-26 rounds to +0"},
    {"h200,zsign=ieee",
     "fp16",
     "fp16",
     {0x8800},
     {0x0800},
     1,
     0,
     0x8000,
     UF | IX,
     "zsign=ieee: -2^-26 rounds to -0"},
    {"h200",
     "fp16",
     "fp32",
     {0x8000},
     {0x3c00},
     1,
     0x80000000,
     0,
     0,
     "zsign=pos: (-0)*1 + (-0) = +0"},
    {"h200-mma",
     "e4m3",
     "fp32",
     {0x03},
     {0x01},
     1,
     0x43000000,
     0x43000001,
     IX,
     "mma.sync FP8 -> fp32: C = 128 added late by an RNE FADD, + 0.75 ulp rounds up"},
    {"h100",
     "fp16",
     "fp32",
     {0x7c00, 0x3c00},
     {0xbc00, 0x3c00},
     2,
     0x3f800000,
     0xff800000,
     0,
     "-inf wins over finite terms"},
    {"h100", "fp16", "fp32", {0x3c00}, {0x3c00}, 1, 0x7f800000, 0x7f800000, 0, "C = inf"},
    /* bf16 2^127 = 0x7f00: 2^127 * 2 + 2^127 overflows fp32 */
    {"h100",
     "bf16",
     "fp32",
     {0x7f00},
     {0x4000},
     1,
     0x7f000000,
     0x7f800000,
     OF,
     "overflow is inf even under RZ (the published model)"},
    {"h100,sat=1",
     "bf16",
     "fp32",
     {0x7f00},
     {0x4000},
     1,
     0x7f000000,
     0x7f7fffff,
     OF,
     "sat: overflow is max"},
    {"h100",
     "bf16",
     "fp32",
     {0xff00},
     {0x4000},
     1,
     0xff000000,
     0xff800000,
     OF,
     "negative overflow"},
    {"h100,zsign=ieee",
     "fp16",
     "fp32",
     {0x8000},
     {0x3c00},
     1,
     0x80000000,
     0x80000000,
     0,
     "(-0)*1 + (-0) = -0"},
    {"h100", "fp16", "fp32", {0x8000}, {0x3c00}, 1, 0, 0, 0, "(-0)*1 + (+0) = +0"},
    {"h100", "fp16", "fp32", {0x3c00}, {0x3c00}, 1, 0xbf800000, 0, 0, "1 - 1 = +0"},
    {"h100,final=down,zsign=ieee",
     "fp16",
     "fp32",
     {0x3c00},
     {0x3c00},
     1,
     0xbf800000,
     0x80000000,
     0,
     "1 - 1 = -0 rounding down"},
    {"h100", "fp16", "fp32", {0}, {0}, 0, 0xc0400000, 0xc0400000, 0, "K = 0: D = C"},
    /* RZ: 1 + 2^-24 (from C's window) — C = 1, product 2^-12 * 2^-12 */
    {"h100",
     "fp16",
     "fp32",
     {0x0c00},
     {0x0c00},
     1,
     0x3f800000,
     0x3f800000,
     IX,
     "1 + 2^-24 fits the window (neab 2); RZ to fp32 drops it"},
    {"v100",
     "fp16",
     "fp32",
     {0x3c00, 0x1400},
     {0x3c00, 0x3c00},
     2,
     0,
     0x3f802000,
     0,
     "1 + 2^-10 fits v100's window"},
    {"v100",
     "fp16",
     "fp32",
     {0x3c00, 0x0400},
     {0x3c00, 0x0400},
     2,
     0,
     0x3f800000,
     IX,
     "2^-28 is chopped below v100's 23-bit window"},
    {"h100",
     "fp16",
     "fp16",
     {0x3c00},
     {0x3c00},
     1,
     0x3f500001,
     0x3f40,
     IX,
     "fp16 out: C (0.8125 + 2^-24) rounded to fp16 first, then 1 + 0.8125"},
    {"h100",
     "fp16",
     "fp16",
     {0x7bff, 0x7bff},
     {0x3c00, 0x3c00},
     2,
     0,
     0x7c00,
     OF,
     "fp16 overflow is inf"},
    /* e4m3: 1 = 0x38, 2^-5 = 0x10, 2^-6 = 0x08, so 0x08*0x10 = 2^-11, half an
     * fp16 ulp at 1. h200 FP8 -> fp16 sums k mod 4 in {0,1}, then {2,3}. */
    {"h200",
     "e4m3",
     "fp16",
     {0x38, 0x08, 0, 0x08},
     {0x38, 0x10, 0, 0x10},
     4,
     0,
     0x3c00,
     IX,
     "1 + 2^-11 ties to 1 in the first HMMA, and again in the second"},
    {"h200",
     "e4m3",
     "fp16",
     {0x38, 0, 0x08, 0x08},
     {0x38, 0, 0x10, 0x10},
     4,
     0,
     0x3c01,
     0,
     "positions 2 and 3 share the second HMMA: 1 + 2^-10 exactly"},
    {"h200",
     "e4m3",
     "fp16",
     {0x38},
     {0x38},
     1,
     0x3a000000,
     0x3c00,
     IX,
     "C = 2^-11 joins last, in an fp16 addition: 1 + 2^-11 ties to 1"},
    {"h200",
     "e4m3",
     "fp16",
     {0x38, 0x08},
     {0x38, 0x10},
     2,
     0x3a000000,
     0x3c00,
     IX,
     "1 + 2^-11 -> 1 in the HMMA, then + 2^-11 -> 1: C is no term of the block"},
    /* 1*1 + 3*2^-25 (0.75 ulp): inside the fused sum RZ keeps 1; a separate RNE
     * addition of C rounds 1 + 0.75 ulp up */
    {"b200",
     "e4m3",
     "fp32",
     {0x38},
     {0x38},
     1,
     0x33c00000,
     0x3f800001,
     IX,
     "b200 FP8 mma.sync: RNE_fp32(dot + C)"},
    {"b200-tcgen05",
     "e4m3",
     "fp32",
     {0x38},
     {0x38},
     1,
     0x33c00000,
     0x3f800000,
     IX,
     "tcgen05: C inside the fused sum, RZ"},
    {"b200", "e5m2", "fp32", {0}, {0}, 0, 0xc0400000, 0xc0400000, 0, "K = 0: D = C"},
    /* AMD: bf16 1 = 0x3f80; fp16 2^-12 = 0x0c00, 2^-15 = 0x0200 (subnormal), 2^10 = 0x6400;
     * e4m3fnuz 1 = 0x40; fp32 -2^-40 = 0xab800000, 2^-30 + 2^-50 = 0x30800008 */
    {"mi300x",
     "bf16",
     "fp32",
     {0x3f80},
     {0x3f80},
     1,
     0xab800000,
     0x3f7fffff,
     IX,
     "CDNA3: C floored toward -inf to 24 bits below 2^0, so 1 - 2^-40 gives 1 - 2^-24"},
    {"mi300x",
     "bf16",
     "fp32",
     {0x3f80},
     {0x3f80},
     1,
     0x2b800000,
     0x3f800000,
     IX,
     "CDNA3: a small positive C floors to nothing"},
    {"mi300x",
     "e4m3fnuz",
     "fp32",
     {0x40},
     {0x40},
     1,
     0xab800000,
     0x3f800000,
     IX,
     "CDNA3 fp8: a C more than 25 binades below the products is dropped, not floored"},
    {"mi100",
     "fp16",
     "fp32",
     {0x3c00, 0x0c00, 0x0c00, 0},
     {0x3c00, 0x0c00, 0x0c00, 0x3c00},
     4,
     0,
     0x3f800000,
     IX,
     "CDNA1: (1 + 2^-24) + (2^-24 + 0) in fp32, the first sum a tie to even"},
    {"k=4,neab=3,final=rne",
     "fp16",
     "fp32",
     {0x3c00, 0x0c00, 0x0c00, 0},
     {0x3c00, 0x0c00, 0x0c00, 0x3c00},
     4,
     0,
     0x3f800001,
     0,
     "the same products in one block FMA: 1 + 2^-23 exactly"},
    {"mi100",
     "fp16",
     "fp32",
     {0x0200},
     {0x6400},
     1,
     0x3f800000,
     0x3f840000,
     0,
     "CDNA1 keeps a subnormal fp16 operand: 1 + 2^-15 * 2^10"},
    {"mi250x",
     "fp16",
     "fp32",
     {0x0200},
     {0x6400},
     1,
     0x3f800000,
     0x3f800000,
     0,
     "CDNA2 flushes it: 1"},
    {"h100",
     "bf16",
     "fp32",
     {0x0000},
     {0x7380},
     1,
     0x30800008,
     0x30800008,
     0,
     "0 * 2^104 takes no part in the alignment (the H200)"},
    {"h100,zalign=1",
     "bf16",
     "fp32",
     {0x0000},
     {0x7380},
     1,
     0x30800008,
     0x30800000,
     IX,
     "zalign=1 (MMA-Sim): 0 * 2^104 sets the alignment at 2^-22 and chops C's 2^-50"},
};

/* FTTN's discriminating GEMM (Li et al., arXiv 2403.00232; the entries from
 * LLNL/FTTN's init_host_matrices): fp16, K = 8192, A's row 2^10, then 2^-2
 * at odd and 2^-3 at even k; B's column 2^10, then -2^-3; the MMA chain
 * starts from 0 and D = 2^20 - acc in fp32. Published: 0 on V100, A100 and
 * MI250X, 255.875 on MI100, 191.875 on H100. MMA-Sim's CDNA2 rule (CDNA1's
 * tree and flushing; no subnormal occurs here) gives MI100's number, not
 * MI250X's 0, which one fp32 FMA per product would (docs/tensor-cores.md). */
START_TEST(test_tc_fttn)
{
	static const struct {
		const char *spec;
		double d;
	} rows[] = {
	    {"v100", 0},           {"a100", 0},          {"h100", 191.875},
	    {"mi100", 255.875},    {"b200", 191.875},    {"mi250x", 255.875},
	    {"mi250x,acc=fma", 0}, {"mi300x", 191.8125}, {"turing", 0},
	};
	enum { K = 8192 };
	static emu_bits a[K], b[K];
	const emu_format *in = t_fmt("fp16"), *out = t_fmt("fp32");
	for (size_t k = 0; k < K; k++) {
		a[k] = k == 0 ? 0x6400 : k % 2 ? 0x3400 : 0x3000; /* 2^10, 2^-2, 2^-3 */
		b[k] = k == 0 ? 0x6400 : 0xb000;                  /* 2^10, -2^-3 */
	}
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		emu_tc_model m = model_of(rows[i].spec, in, out);
		emu_bits want = emu_encode(out, 0x1p20 - rows[i].d);
		emu_result f = emu_tc_dot(&m, in, out, a, b, K, 0);
		emu_result p = emu_tc_mp_dot(&m, in, out, a, b, K, 0);
		ck_assert_msg(f.bits == want && p.bits == want,
		              "%s: acc fast 0x%08x, mpfr 0x%08x, want 0x%08x (D = %g)",
		              rows[i].spec, f.bits, p.bits, want, rows[i].d);
	}
	t_count("FTTN GEMM numbers reproduced", ARRAY_SIZE(rows));
}
END_TEST

START_TEST(test_tc_hand)
{
	size_t n_planned = 0, n_direct = 0;
	for (size_t i = 0; i < ARRAY_SIZE(hand); i++) {
		const emu_format *in = t_fmt(hand[i].in), *out = t_fmt(hand[i].out);
		emu_tc_model m = model_of(hand[i].spec, in, out);
		emu_result f = emu_tc_dot(&m, in, out, hand[i].a, hand[i].b, hand[i].K, hand[i].c);
		emu_result p =
		    emu_tc_mp_dot(&m, in, out, hand[i].a, hand[i].b, hand[i].K, hand[i].c);
		char f1[48], f2[48], f3[48];
		ck_assert_msg(f.bits == hand[i].want && f.flags == hand[i].flags,
		              "row %zu (%s): fast 0x%x %s, want 0x%x %s", i, hand[i].why, f.bits,
		              emu_flags_str(f.flags, f1, sizeof f1), hand[i].want,
		              emu_flags_str(hand[i].flags, f2, sizeof f2));
		ck_assert_msg(p.bits == hand[i].want && p.flags == hand[i].flags,
		              "row %zu (%s): mpfr 0x%x %s, want 0x%x %s", i, hand[i].why, p.bits,
		              emu_flags_str(p.flags, f3, sizeof f3), hand[i].want,
		              emu_flags_str(hand[i].flags, f2, sizeof f2));
		/* one block through a GEMM's plan, split operands read directly
		 * where the model lets them */
		emu_tc_plan plan;
		if (hand[i].K > (size_t)m.k || m.promote_every ||
		    !emu_tc_plan_init(&plan, &m, in, out))
			continue;
		emu_tc_opnd sa[64], sb[64];
		emu_tc_split(in, hand[i].a, hand[i].K, sa);
		emu_tc_split(in, hand[i].b, hand[i].K, sb);
		emu_result q =
		    emu_tc_plan_block(&plan, hand[i].a, hand[i].b, sa, sb, hand[i].K, hand[i].c);
		ck_assert_msg(q.bits == hand[i].want && q.flags == hand[i].flags,
		              "row %zu (%s): planned 0x%x %s, want 0x%x %s", i, hand[i].why, q.bits,
		              emu_flags_str(q.flags, f3, sizeof f3), hand[i].want,
		              emu_flags_str(hand[i].flags, f2, sizeof f2));
		n_planned++;
		n_direct += plan.direct;
	}
	t_count("tc hand rows, one block planned", n_planned);
	ck_assert_uint_gt(n_direct, 0);
	/* which plans read split operands: NVIDIA's plain block FMAs; not a
	 * split block, AMD's fused order, or a block too long for 64 bits */
	static const struct {
		const char *gpu, *in, *out;
		bool direct;
	} which[] = {{"h100", "bf16", "fp32", true},  {"h100", "fp16", "fp16", true},
	             {"a100", "tf32", "fp32", true},  {"h100", "e4m3", "fp32", true},
	             {"h100", "e4m3", "fp16", false}, {"mi300x", "bf16", "fp32", false}};
	for (size_t i = 0; i < ARRAY_SIZE(which); i++) {
		emu_tc_model m;
		emu_tc_plan plan;
		const emu_format *in = t_fmt(which[i].in), *out = t_fmt(which[i].out);
		ck_assert_int_eq(emu_tc_preset(which[i].gpu, in, out, &m), EMU_OK);
		ck_assert(emu_tc_plan_init(&plan, &m, in, out));
		ck_assert_msg(plan.direct == which[i].direct, "%s %s -> %s: direct %d",
		              which[i].gpu, which[i].in, which[i].out, plan.direct);
	}
	/* the block-scaled kinds' plans read split operands and scales; a late
	 * C does not */
	emu_tc_model ms;
	emu_bits one = 0x7f;
	emu_tc_scales e8 = {t_fmt("e8m0"), 32, &one, &one};
	emu_tc_plan sp;
	const emu_format *e21 = t_fmt("e2m1"), *f32 = t_fmt("fp32");
	ck_assert_int_eq(emu_tc_preset("b200-mxf4nvf4", e21, f32, &ms), EMU_OK);
	ck_assert(emu_tc_plan_init2(&sp, &ms, e21, e21, f32, &e8) && sp.direct);
	ck_assert_int_eq(emu_tc_preset("b200-mxf8f6f4", t_fmt("e4m3"), f32, &ms), EMU_OK);
	ck_assert(emu_tc_plan_init2(&sp, &ms, t_fmt("e4m3"), t_fmt("e5m2"), f32, &e8) && sp.direct);
	ms.c_late = true;
	ck_assert(emu_tc_plan_init2(&sp, &ms, t_fmt("e4m3"), t_fmt("e5m2"), f32, &e8) &&
	          !sp.direct);
	emu_tc_model big = emu_tc_default();
	emu_tc_plan plan;
	big.k = 65536;
	big.neab = 36;
	ck_assert(emu_tc_plan_init(&plan, &big, t_fmt("bf16"), t_fmt("fp32")) && !plan.direct);
}
END_TEST

/* emu_tc_split of every encoding of every input format of at most 19 bits
 * (tf32's 2^19 included): |x| = P·2^(e − p + 1) with e =
 * max(floor(log2|x|), emin) and P below 2^p for a finite nonzero x, P = 0
 * for a zero, special for NaN and infinities, the sign bit kept, all
 * against emu_decode. */
START_TEST(test_tc_split_all)
{
	static const char *const names[] = {"fp16",     "bf16", "e4m3", "e5m2", "e4m3fnuz",
	                                    "e5m2fnuz", "e3m2", "e2m3", "e2m1", "tf32"};
	uint64_t n = 0;
	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		const emu_format *f = t_fmt(names[k]);
		ck_assert(f->bits <= 19);
		for (uint64_t i = 0; i < (1ull << f->bits); i++) {
			emu_bits b = (emu_bits)i;
			double v = emu_decode(f, b);
			emu_tc_opnd o;
			emu_tc_split(f, &b, 1, &o);
			bool special = isnan(v) || isinf(v);
			ck_assert_msg(
			    o.special == special && (special || o.neg == (signbit(v) != 0)),
			    "%s 0x%x: special %d neg %d for %a", f->name, b, o.special, o.neg, v);
			if (special)
				continue;
			if (v == 0) {
				ck_assert_msg(o.P == 0 && o.e == EMU_TC_ZERO_E, "%s 0x%x: zero",
				              f->name, b);
				continue;
			}
			int fe;
			(void)frexp(v, &fe);
			int e = fe - 1 < f->emin ? f->emin : fe - 1;
			ck_assert_msg(o.e == e && o.P < (1u << f->p) &&
			                  ldexp((double)o.P, o.e - f->p + 1) == fabs(v),
			              "%s 0x%x: P %u e %d for %a", f->name, b, o.P, o.e, v);
			n++;
		}
	}
	t_count("tc operands split, against emu_decode", n);
}
END_TEST

/* ---- fast == MPFR on random cases ---- */

#define TC_KMAX 160

/* A random finite encoding of f near exponent field ce (or a zero, a
 * subnormal, rarely a special). */
static emu_bits rand_enc(const emu_format *f, int ce, uint64_t r)
{
	int m = f->p - 1;
	int top = (int)(f->max_bits >> m); /* largest exponent field of a finite value */
	emu_bits s = (r & 1) ? f->sign_mask : 0;
	unsigned pick = (unsigned)(r >> 1) % 1000;
	emu_bits M = (emu_bits)(r >> 12) & f->man_mask;
	r >>= 40;
	if (pick < 3) /* specials: NaN, inf (or the NaN where there is none) */
		return pick == 0 || !f->has_inf ? f->nan_bits : (s | f->inf_bits);
	if (pick < 40)
		return s; /* ±0 */
	if (pick < 90)
		return s | (M ? M : 1); /* subnormal */
	int e = ce + (int)(r % 8) - 5;
	e = e < 1 ? 1 : e > top ? top : e;
	emu_bits b = s | ((emu_bits)e << m) | M;
	if (emu_is_nan(f, b) || (f->has_inf && (b & ~f->sign_mask) == f->inf_bits))
		b = s | ((emu_bits)e << m);
	return b;
}

typedef struct {
	const char *gpu, *in, *out;
} tc_pair;

static const tc_pair pairs[] = {
    {"v100", "fp16", "fp32"},         {"v100", "fp16", "fp16"},

    {"a100", "fp16", "fp32"},         {"a100", "bf16", "fp32"},
    {"a100", "tf32", "fp32"},         {"a100", "fp16", "fp16"},

    {"h100", "fp16", "fp32"},         {"h100", "bf16", "fp32"},
    {"h100", "tf32", "fp32"},         {"h100", "fp16", "fp16"},
    {"h100", "e4m3", "fp32"},         {"h100", "e5m2", "fp32"},
    {"h100", "e4m3", "fp16"},         {"h100", "e5m2", "fp16"},

    {"ada", "fp16", "fp32"},          {"ada", "bf16", "fp32"},
    {"ada", "tf32", "fp32"},          {"ada", "fp16", "fp16"},
    {"ada", "e4m3", "fp32"},          {"ada", "e5m2", "fp16"},

    {"b200", "fp16", "fp32"},         {"b200", "bf16", "fp32"},
    {"b200", "tf32", "fp32"},         {"b200", "fp16", "fp16"},
    {"b200", "e4m3", "fp32"},         {"b200", "e5m2", "fp32"},

    {"b200-tcgen05", "fp16", "fp32"}, {"b200-tcgen05", "bf16", "fp32"},
    {"b200-tcgen05", "tf32", "fp32"}, {"b200-tcgen05", "e4m3", "fp32"},
    {"b200-tcgen05", "e5m2", "fp32"}, {"h200-mma", "e4m3", "fp32"},
    {"h200-mma", "e5m2", "fp32"},     {"h200-mma", "fp16", "fp16"},
    {"h100-mma", "e4m3", "fp16"},     {"h100-mma", "fp16", "fp16"},

    {"turing", "fp16", "fp32"},       {"turing", "fp16", "fp16"},
    {"h100-wgmma", "e4m3", "fp16"},   {"h100-wgmma", "e5m2", "fp16"},
    {"h100-wgmma", "e4m3", "fp32"},   {"b200-tcgen05", "fp16", "fp16"},
    {"b200-tcgen05", "e4m3", "fp16"}, {"b200-tcgen05", "e2m1", "fp32"},
    {"b200-tcgen05", "e3m2", "fp16"}, {"b200-tcgen05", "e2m3", "fp32"},

    {"rtx5090", "fp16", "fp32"},      {"rtx5090", "bf16", "fp32"},
    {"rtx5090", "fp16", "fp16"},      {"rtx5090", "tf32", "fp32"},
    {"rtx5090", "e4m3", "fp32"},      {"rtx5090", "e5m2", "fp16"},
    {"rtx5090", "e2m3", "fp32"},      {"rtx5090", "e2m1", "fp16"},

    {"mi100", "fp32", "fp32"},        {"mi100", "fp16", "fp32"},
    {"mi100", "bf16", "fp32"},        {"mi250x", "fp32", "fp32"},
    {"mi250x", "fp16", "fp32"},       {"mi250x", "bf16", "fp32"},
    {"mi300x", "fp32", "fp32"},       {"mi300x", "tf32", "fp32"},
    {"mi300x", "fp16", "fp32"},       {"mi300x", "bf16", "fp32"},
    {"mi300x", "e4m3fnuz", "fp32"},   {"mi300x", "e5m2fnuz", "fp32"},
};

/* Variants beyond the presets (any input format pairs with them). */
static const char *const variants[] = {
    "h100,promote=40",
    "h100,promote=7,sat=1",
    "k=5,neab=-7,final=up",
    "k=3,neab=9,final=down,cpre=1",
    "k=16,neab=2,final=rne,floor=-20",
    "k=8,neab=0,final=rtz,prec=9,clate=1",
    "k=32,neab=2,final=rne,cpre=1,clate=1,sat=1",
    "k=1,neab=-22,final=rne",
    "k=64,neab=36,final=rtz,floor=10",
    "a100,clate=1,promote=20,final=up",
    "k=32,neab=-5,final=rne,cpre=1,split=2,group=2,clate=1",
    "k=12,neab=-3,final=up,split=3,group=2,clate=1,cround=down",
    "k=8,neab=0,final=rtz,split=4,clate=1,cround=up,promote=20",
    "k=16,neab=1,final=down,split=2,group=8,floor=-20",
    "k=6,neab=4,final=rtz,split=6,sat=1,clate=1,cround=rtz,prec=9",
    /* the sm_90 rules apart and on other shapes */
    "k=4,neab=0,final=rne,cpre=1,csub=emin",
    "k=8,neab=1,final=down,zsign=pos,clate=1,cround=down",
    "k=16,neab=2,final=rtz,nan=ones,promote=32",
    "h100,csub=true,zsign=ieee,nan=canon",
    "k=32,neab=2,final=rne,cpre=1,split=2,group=2,clate=1,csub=emin,zsign=pos,nan=ones",
    /* MMA-Sim's reading of a zero operand, and AMD's accumulations */
    "h100,zalign=1",
    "k=8,neab=1,final=rne,cpre=1,zalign=1,promote=24",
    "k=8,neab=1,final=rne,acc=rd",
    "k=16,neab=1,final=rne,acc=rd,split=2,zalign=1",
    "k=5,neab=-3,final=rtz,acc=rd,promote=12",
    "k=4,neab=4,final=up,acc=rd,sat=1,zsign=pos,split=2",
    "k=6,neab=1,final=down,acc=rd,zalign=1,nan=ones",
    "k=4,final=rne,acc=pairwise,ftz=1",
    "k=7,final=down,acc=pairwise,zsign=pos",
    "k=2,final=rtz,acc=pairwise,promote=9,sat=1",
    "k=1,final=rne,acc=fma,ftz=1,promote=9",
    "k=3,final=up,acc=fma,cpre=1",
};
static const char *const var_in[] = {"fp16", "bf16",     "tf32",     "e4m3",
                                     "e5m2", "e2m3",     "e4m3fnuz", "e5m2fnuz"};
static const char *const var_out[] = {"fp32", "fp16", "bf16"};

typedef struct {
	emu_tc_model m;
	const emu_format *in, *out;
	const emu_format *inb; /* B's format: in, unless the case is mixed */
	size_t K;
	emu_bits a[TC_KMAX], b[TC_KMAX], c;
	const emu_tc_scales *sc; /* NULL: unscaled */
	emu_tc_scales scales;
	emu_bits sa[TC_KMAX], sb[TC_KMAX];
	char what[2 * T_WHAT_LEN]; /* a preset or spec and three format names */
} tc_case;

/* Fill the operands of case i on stream st: a per-case exponent centre, so
 * terms overlap, cancel and get chopped; C near the products' scale. */
static void gen_operands(tc_case *t, uint64_t st, uint64_t i)
{
	uint64_t r0 = t_rand(st, 4 * i);
	int top = (int)(t->in->max_bits >> (t->in->p - 1));
	int ce = 1 + (int)(r0 % (uint64_t)top);
	size_t k = (size_t)t->m.k;
	switch ((r0 >> 16) % 4) {
	case 0:
		t->K = k;
		break;
	case 1:
		t->K = 2 * k + (r0 >> 20) % 3;
		break;
	default:
		t->K = (r0 >> 20) % (3 * k + 2);
		break;
	}
	if (t->K > TC_KMAX)
		t->K = TC_KMAX;
	/* B's centre: the same exponent in B's format, inside its range */
	int topb = (int)(t->inb->max_bits >> (t->inb->p - 1));
	int ceb = ce - t->in->bias + t->inb->bias;
	ceb = ceb < 1 ? 1 : ceb > topb ? topb : ceb;
	for (size_t j = 0; j < t->K; j++) {
		t->a[j] = rand_enc(t->in, ce, t_rand(st, 4 * i + 1) ^ (j * 0x9e3779b97f4a7c15ull));
		t->b[j] =
		    rand_enc(t->inb, ceb, t_rand(st, 4 * i + 2) ^ (j * 0xc2b2ae3d27d4eb4full));
	}
	/* C: binary32 near the products' exponent 2*(ce - bias) */
	uint64_t rc = t_rand(st, 4 * i + 3);
	unsigned pick = (unsigned)(rc % 100);
	emu_bits s = (rc >> 8) & 1 ? 0x80000000u : 0;
	long e = 2L * (ce - t->in->bias) + 127 + (long)((rc >> 9) % 18) - 12;
	e = e < 1 ? 1 : e > 254 ? 254 : e;
	if (pick < 4)
		t->c = s;
	else if (pick < 5)
		t->c = (rc >> 30) & 1 ? 0x7fc00000u : (s | 0x7f800000u);
	else if (pick < 7)
		t->c = s | (0x7f000000u + ((emu_bits)(rc >> 32) & 0x7fffffu)); /* near overflow */
	else if (pick < 9)
		t->c = s | ((emu_bits)(rc >> 32) & 0x7fffffu); /* subnormal */
	else
		t->c = s | ((emu_bits)e << 23) | ((emu_bits)(rc >> 32) & 0x7fffffu);
}

/* Scales for a scaled case (its format and block set by the setup): near
 * 1 mostly, so terms stay in range; now and then the format's extremes, a
 * zero (ue4m3) or NaN. */
static void gen_scales(tc_case *t, uint64_t st, uint64_t i)
{
	const emu_format *f = t->scales.fmt;
	size_t ns = t->K ? (t->K + t->scales.block - 1) / t->scales.block : 0;
	for (size_t j = 0; j < ns; j++)
		for (int side = 0; side < 2; side++) {
			uint64_t r = t_rand(st, 4 * i + 1) ^
			             ((2 * j + (size_t)side + 1) * 0xd6e8feb86659fd93ull);
			unsigned pick = (unsigned)(r % 100);
			emu_bits x;
			if (pick < 2)
				x = f->nan_bits;
			else if (pick < 6)
				x = (emu_bits)((r >> 8) & ((1u << f->bits) - 1)); /* anything */
			else if (f->p == 1)
				x = (emu_bits)(127 - 12 + (int)((r >> 8) % 25));
			else
				x = (emu_bits)(0x38 - 12 + (int)((r >> 8) % 25)); /* e4m3 near 1 */
			if (emu_is_nan(f, x) && pick >= 2)
				x = f->max_bits;
			(side ? t->sb : t->sa)[j] =
			    x | (f->has_sign && (r >> 40) % 7 == 0 ? f->sign_mask : 0);
		}
	t->scales.sa = t->sa;
	t->scales.sb = t->sb;
	t->sc = &t->scales;
}

static void describe(const tc_case *t, emu_result f, emu_result p, char *buf, size_t len)
{
	char f1[48], f2[48];
	size_t n = (size_t)snprintf(buf, len, "%s K=%zu c=0x%08x a=", t->what, t->K, t->c);
	if (t->sc && n < len)
		n += (size_t)snprintf(buf + n, len - n, "[scales %s/%zu: %x,%x,...] ",
		                      t->sc->fmt->name, t->sc->block, t->sa[0], t->sb[0]);
	for (size_t j = 0; j < t->K && j < 8 && n < len; j++)
		n += (size_t)snprintf(buf + n, len - n, "%x,", t->a[j]);
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, "... b=");
	for (size_t j = 0; j < t->K && j < 8 && n < len; j++)
		n += (size_t)snprintf(buf + n, len - n, "%x,", t->b[j]);
	if (n < len)
		snprintf(buf + n, len - n, "...: fast 0x%x %s, mpfr 0x%x %s", f.bits,
		         emu_flags_str(f.flags, f1, sizeof f1), p.bits,
		         emu_flags_str(p.flags, f2, sizeof f2));
}

/* One scaled block (t->K <= k) through a direct scaled plan against
 * emu_tc_dot_scaled with promotion off: 0 the same bits and flags, 1 they
 * differ, 2 the plan refused a block with no NaN or infinity in its
 * operands or scales, -1 it refused one with. */
static int scaled_plan_differs(const tc_case *t, const emu_tc_plan *plan)
{
	emu_tc_model m0 = t->m;
	m0.promote_every = 0;
	emu_result g = emu_tc_dot_scaled(&m0, t->in, t->inb, t->out, t->a, t->b, t->K, t->c, t->sc);
	emu_tc_opnd xa[TC_KMAX], xb[TC_KMAX], xsa[TC_KMAX], xsb[TC_KMAX];
	size_t ns = t->K ? (t->K - 1) / t->sc->block + 1 : 0;
	emu_tc_split(t->in, t->a, t->K, xa);
	emu_tc_split(t->inb, t->b, t->K, xb);
	emu_tc_split_scales(t->sc->fmt, t->sc->sa, ns, xsa);
	emu_tc_split_scales(t->sc->fmt, t->sc->sb, ns, xsb);
	emu_result q;
	if (emu_tc_plan_scaled(plan, xa, xb, xsa, xsb, t->K, t->c, &q))
		return q.bits != g.bits || q.flags != g.flags;
	/* refused: there must be a NaN or an infinity, by the formats' own
	 * classification (a scale's sign bit ignored) */
	const emu_format *sf = t->sc->fmt;
	bool special = false;
	for (size_t i = 0; i < t->K; i++)
		special |= emu_classify(t->in, t->a[i]) >= EMU_CLASS_INF ||
		           emu_classify(t->inb, t->b[i]) >= EMU_CLASS_INF;
	for (size_t j = 0; j < ns; j++)
		special |= emu_is_nan(sf, t->sc->sa[j] & ~sf->sign_mask) ||
		           emu_is_nan(sf, t->sc->sb[j] & ~sf->sign_mask);
	return special ? -1 : 2;
}

/* Prove fast == MPFR on n cases made by setup(i) + gen_operands. */
typedef void (*tc_setup_fn)(tc_case *t, uint64_t i, const void *ctx);

/* A case's block as lane 0 of emu_tc_plan_lanes, beside seven others with
 * the same A: B and C of other cases of the same setup (other magnitudes:
 * products that cancel, overflow, are tiny or all zero), B negated with C
 * negated, and B all zero. Each lane the lanes decide against
 * emu_tc_plan_value on the same block (bits of the value, the one flag)
 * and, without C's pre-rounding, against the MPFR model's block. Adds the
 * lanes decided to *decided and those left to *left; returns the first
 * lane that differs (with *why), or -1. */
static int lanes_differ(const tc_case *t, const emu_tc_plan *plan, uint64_t stream, uint64_t i,
                        tc_setup_fn setup, const void *ctx, uint64_t *decided, uint64_t *left,
                        char *why, size_t whylen)
{
	enum { W = EMU_TC_LANES };
	size_t K = t->K;
	const emu_format *f32 = t_fmt("fp32");
	emu_bits b[W][TC_KMAX], cb[W];
	for (size_t l = 0; l < W; l++) {
		tc_case u;
		u.sc = NULL;
		setup(&u, i, ctx);
		gen_operands(&u, stream ^ (0x5bd1e995ull * (l + 1)), i);
		for (size_t j = 0; j < K; j++)
			b[l][j] = l == 0 ? t->b[j]
			          : l == 6 ? t->b[j] ^ t->inb->sign_mask
			          : l == 7 ? (j % 3 ? 0 : t->inb->sign_mask)
			          : u.K ? u.b[j % u.K]
			                : t->b[j];
		cb[l] = l == 0 || l == 6 ? t->c ^ (l == 6 ? 0x80000000u : 0) : u.c;
	}
	double xa[TC_KMAX], xb[TC_KMAX][W], x[TC_KMAX], c[W], c0[W];
	int32_t ea[TC_KMAX], eb[TC_KMAX][W], e[TC_KMAX];
	emu_tc_opnd sa[TC_KMAX], sb[W][TC_KMAX];
	emu_tc_split(t->in, t->a, K, sa);
	emu_tc_split_lanes(t->in, sa, K, xa, ea);
	for (size_t l = 0; l < W; l++) {
		emu_tc_split(t->inb, b[l], K, sb[l]);
		emu_tc_split_lanes(t->inb, sb[l], K, x, e);
		for (size_t j = 0; j < K; j++) {
			xb[j][l] = x[j];
			eb[j][l] = e[j];
		}
		/* C as emu_tc_plan_block hands it on: binary32, or first rounded
		 * to the output (a value of it, as emu_tc_plan_value asks) */
		c[l] = c0[l] = t->m.c_preround
		                   ? emu_decode(t->out,
		                                emu_convert(t->out, f32, cb[l], &EMU_ENV_DEFAULT).bits)
		                   : emu_decode(f32, cb[l]);
	}
	unsigned inexact[W];
	unsigned mask = emu_tc_plan_lanes(plan, xa, ea, &xb[0][0], &eb[0][0], W, K, c, inexact);
	emu_tc_model m0 = t->m;
	m0.promote_every = 0;
	for (size_t l = 0; l < W; l++) {
		if (mask >> l & 1) {
			++*left;
			continue;
		}
		++*decided;
		unsigned fl = 0;
		double d = emu_tc_plan_value(plan, t->a, b[l], sa, sb[l], K, c0[l], &fl);
		uint64_t ub, ud;
		memcpy(&ub, &c[l], sizeof ub);
		memcpy(&ud, &d, sizeof ud);
		unsigned lf = inexact[l] ? EMU_FLAG_INEXACT : 0;
		emu_result mp = {emu_encode(t->out, d), fl};
		if (!t->m.c_preround)
			mp = emu_tc_mp_dot2(&m0, t->in, t->inb, t->out, t->a, b[l], K, cb[l]);
		if (ub != ud || lf != fl || emu_encode(t->out, c[l]) != mp.bits || lf != mp.flags) {
			snprintf(why, whylen,
			         "lane %zu of %s K=%zu c=0x%08x b0=0x%x: lanes %a (flags 0x%x), "
			         "plan %a (0x%x), mpfr 0x%x (0x%x)",
			         l, t->what, K, cb[l], K ? b[l][0] : 0, c[l], lf, d, fl, mp.bits,
			         mp.flags);
			return (int)l;
		}
	}
	return -1;
}

static void prove_tc(const char *what, uint64_t n, uint64_t stream, tc_setup_fn setup,
                     const void *ctx)
{
	uint64_t bad = 0, bad_plan = 0, n_plain = 0, n_plan = 0, n_splan = 0, n_sdirect = 0,
	         n_mixed_direct = 0, bad_lanes = 0, n_lanes = 0, n_lanes_left = 0;
	char first[2][600] = {"", ""}, first_plan[680] = "", first_lanes[600] = "";
#pragma omp parallel for schedule(dynamic, 256)                                                   \
    reduction(+ : bad, bad_plan, n_plain, n_plan, n_splan, n_sdirect, n_mixed_direct, bad_lanes,    \
              n_lanes, n_lanes_left)
	for (uint64_t i = 0; i < n; i++) {
		tc_case t;
		t.sc = NULL;
		setup(&t, i, ctx);
		gen_operands(&t, stream, i);
		if (t.sc)
			gen_scales(&t, stream, i);
		emu_result f =
		    emu_tc_dot_scaled(&t.m, t.in, t.inb, t.out, t.a, t.b, t.K, t.c, t.sc);
		emu_result p =
		    emu_tc_mp_dot_scaled(&t.m, t.in, t.inb, t.out, t.a, t.b, t.K, t.c, t.sc);
		if (f.bits != p.bits || f.flags != p.flags) {
			uint64_t k;
#pragma omp atomic capture
			k = bad++;
			if (k < 2) {
				char buf[600];
				describe(&t, f, p, buf, sizeof buf);
#pragma omp critical
				snprintf(first[k], sizeof first[k], "%s", buf);
			}
		}
		/* one block through a GEMM's plan, its operands split, against
		 * emu_tc_dot with promotion off */
		emu_tc_plan plan;
		n_plain += !t.sc;
		if (t.sc && t.K <= (size_t)t.m.k &&
		    emu_tc_plan_init2(&plan, &t.m, t.in, t.inb, t.out, t.sc) && plan.direct) {
			int v = scaled_plan_differs(&t, &plan);
			n_splan += v == 0;
			n_sdirect += v >= 0;
			if (v > 0) {
				uint64_t k;
#pragma omp atomic capture
				k = bad_plan++;
				if (k == 0) {
					emu_tc_model m0 = t.m;
					m0.promote_every = 0;
					emu_result g = emu_tc_dot_scaled(&m0, t.in, t.inb, t.out,
					                                 t.a, t.b, t.K, t.c, t.sc);
					char buf[600];
					describe(&t, g, g, buf, sizeof buf);
#pragma omp critical
					snprintf(
					    first_plan, sizeof first_plan, "scaled plan's (%s) %s",
					    v == 2 ? "refused a finite block" : "result differs",
					    buf);
				}
			}
			continue;
		}
		if (t.sc || t.K > (size_t)t.m.k ||
		    !(t.in == t.inb ? emu_tc_plan_init(&plan, &t.m, t.in, t.out)
		                    : emu_tc_plan_init2(&plan, &t.m, t.in, t.inb, t.out, NULL)))
			continue;
		emu_tc_model m0 = t.m;
		m0.promote_every = 0;
		emu_result g = emu_tc_dot2(&m0, t.in, t.inb, t.out, t.a, t.b, t.K, t.c);
		emu_tc_opnd sa[TC_KMAX], sb[TC_KMAX];
		emu_tc_split(t.in, t.a, t.K, sa);
		emu_tc_split(t.inb, t.b, t.K, sb);
		emu_result q = emu_tc_plan_block(&plan, t.a, t.b, sa, sb, t.K, t.c);
		n_plan++;
		n_mixed_direct += plan.direct && t.in != t.inb;
		if (q.bits != g.bits || q.flags != g.flags) {
			uint64_t k;
#pragma omp atomic capture
			k = bad_plan++;
			if (k == 0) {
				char buf[600];
				describe(&t, q, g, buf, sizeof buf);
#pragma omp critical
				snprintf(first_plan, sizeof first_plan, "plan's %s", buf);
			}
		}
		/* the same block among seven others, as lanes */
		char why[600];
		if (t.K && emu_tc_plan_lanes_ok(&plan) &&
		    lanes_differ(&t, &plan, stream, i, setup, ctx, &n_lanes, &n_lanes_left, why,
		                 sizeof why) >= 0) {
			uint64_t k;
#pragma omp atomic capture
			k = bad_lanes++;
			if (k == 0) {
#pragma omp critical
				snprintf(first_lanes, sizeof first_lanes, "%s", why);
			}
		}
	}
	t_count(what, n);
	ck_assert_msg(bad_lanes == 0, "%s, blocks as lanes: %" PRIu64 " cases differ; first: %s",
	              what, bad_lanes, first_lanes);
	/* most lanes' blocks are finite sums in range: the lanes decide them */
	ck_assert_msg(n_lanes >= n_lanes_left / 2, "%s: lanes decided %" PRIu64 ", left %" PRIu64,
	              what, n_lanes, n_lanes_left);
	if (n_lanes)
		t_count("tc blocks as lanes, against the plan and MPFR", n_lanes);
	ck_assert_msg(bad == 0, "%s: %" PRIu64 " of %" PRIu64 " differ; first: %s | %s", what, bad,
	              n, first[0], first[1]);
	ck_assert_msg(bad_plan == 0, "%s, one block planned: %" PRIu64 " of %" PRIu64 " differ; %s",
	              what, bad_plan, n_plan, first_plan);
	ck_assert_msg(n_plan >= n_plain / 10, "%s: only %" PRIu64 " blocks planned", what, n_plan);
	ck_assert_msg(n_splan >= n_sdirect / 2,
	              "%s: only %" PRIu64 " of %" PRIu64 " scaled blocks planned", what, n_splan,
	              n_sdirect);
	if (n_sdirect)
		t_count("tc scaled blocks, one block planned", n_splan);
	if (n_mixed_direct)
		t_count("tc blocks of two formats, planned direct", n_mixed_direct);
}

/* ctx: the GPU name; its pairs share the cases in turn. */
static void setup_preset(tc_case *t, uint64_t i, const void *ctx)
{
	const char *gpu = ctx;
	size_t idx[ARRAY_SIZE(pairs)], n = 0;
	for (size_t j = 0; j < ARRAY_SIZE(pairs); j++)
		if (!strcmp(pairs[j].gpu, gpu))
			idx[n++] = j;
	const tc_pair *p = &pairs[idx[i % n]];
	t->in = t_fmt(p->in);
	t->inb = t->in;
	t->out = t_fmt(p->out);
	if (emu_tc_preset(gpu, t->in, t->out, &t->m) != EMU_OK)
		abort();
	snprintf(t->what, sizeof t->what, "%s %s -> %s", gpu, p->in, p->out);
}

/* Mixed FP8 operands (e4m3 x e5m2 and e5m2 x e4m3) under every preset with
 * an FP8 row, and under the variants. */
static void setup_mixed(tc_case *t, uint64_t i, const void *ctx)
{
	(void)ctx;
	static const struct {
		const char *gpu, *out;
	} fp8[] = {{"h100", "fp32"}, {"h100", "fp16"}, {"h200-mma", "fp32"},    {"ada", "fp32"},
	           {"ada", "fp16"},  {"b200", "fp32"}, {"b200-tcgen05", "fp32"}};
	bool swap = (i / ARRAY_SIZE(fp8)) % 2;
	t->in = t_fmt(swap ? "e5m2" : "e4m3");
	t->inb = t_fmt(swap ? "e4m3" : "e5m2");
	t->out = t_fmt(fp8[i % ARRAY_SIZE(fp8)].out);
	if (emu_tc_preset(fp8[i % ARRAY_SIZE(fp8)].gpu, t->in, t->out, &t->m) != EMU_OK)
		abort();
	snprintf(t->what, sizeof t->what, "%s %s x %s -> %s", fp8[i % ARRAY_SIZE(fp8)].gpu,
	         t->in->name, t->inb->name, t->out->name);
}

static void setup_variant(tc_case *t, uint64_t i, const void *ctx)
{
	(void)ctx;
	uint64_t r = t_rand(S_TC_VAR, i);
	const char *spec = variants[r % ARRAY_SIZE(variants)];
	r /= ARRAY_SIZE(variants);
	t->in = t_fmt(var_in[r % ARRAY_SIZE(var_in)]);
	r /= ARRAY_SIZE(var_in);
	t->out = t_fmt(var_out[r % ARRAY_SIZE(var_out)]);
	r /= ARRAY_SIZE(var_out);
	/* one case in four multiplies by another input format */
	t->inb = r % 4 == 0 ? t_fmt(var_in[(r / 4) % ARRAY_SIZE(var_in)]) : t->in;
	char err[200];
	const char *gpu_free = spec;
	/* a GPU preset only exists for its own formats: fall back to its knobs */
	if (emu_tc_parse(gpu_free, t->in, t->out, &t->m, err, sizeof err) != EMU_OK) {
		const char *comma = strchr(spec, ',');
		gpu_free = comma ? comma + 1 : "k=16";
		if (emu_tc_parse(gpu_free, t->in, t->out, &t->m, err, sizeof err) != EMU_OK)
			abort();
	}
	/* AMD's fma and pairwise accumulate in fp32 */
	if (emu_tc_check(&t->m, t->in, t->out, err, sizeof err) != EMU_OK)
		t->out = t_fmt("fp32");
	if (emu_tc_check(&t->m, t->inb, t->out, err, sizeof err) != EMU_OK)
		t->inb = t->in;
	snprintf(t->what, sizeof t->what, "%s %s x %s -> %s", gpu_free, t->in->name, t->inb->name,
	         t->out->name);
}

static uint64_t n_cases(uint64_t full)
{
	return t_quick() ? full / 50 : full;
}

START_TEST(test_tc_vs_mpfr_presets)
{
	static const char *const gpus[] = {
	    "v100",     "a100",     "h100",    "ada",   "b200",   "b200-tcgen05", "h200-mma",
	    "h100-mma", "h100-wgmma", "turing", "rtx5090", "mi100", "mi250x",     "mi300x"};
	const char *gpu = gpus[_i];
	char what[T_WHAT_LEN];
	snprintf(what, sizeof what, "tc fast == mpfr, %s preset%s", gpu,
	         !strcmp(gpu, "h100") ? " (= h200)" : "");
	prove_tc(what, n_cases(100000), S_TC_CASE + (uint64_t)_i, setup_preset, gpu);
}
END_TEST

START_TEST(test_tc_vs_mpfr_mixed)
{
	prove_tc("tc fast == mpfr, mixed FP8 operands", n_cases(100000), S_TC_CASE + 98,
	         setup_mixed, NULL);
}
END_TEST

/* B decoded in its own format: e5m2 0x01 is 2^-16, as e4m3 it would be 2^-9;
 * e4m3's 448 times e5m2's 57344 is exact; a B format the model cannot take
 * gives NaN with invalid; and dot2 with one format is dot. */
START_TEST(test_tc_mixed_hand)
{
	const emu_format *e4 = t_fmt("e4m3"), *e5 = t_fmt("e5m2"), *f32 = t_fmt("fp32");
	emu_tc_model m;
	ck_assert_int_eq(emu_tc_preset("h200", e4, f32, &m), EMU_OK);
	emu_bits a[2] = {0x38, 0x7e}, b[2] = {0x01, 0x7b};
	emu_result r = emu_tc_dot2(&m, e4, e5, f32, a, b, 1, 0);
	ck_assert_uint_eq(r.bits, 0x37800000); /* 1 * 2^-16 */
	ck_assert_uint_eq(emu_tc_mp_dot2(&m, e4, e5, f32, a, b, 1, 0).bits, 0x37800000);
	ck_assert_uint_eq(emu_tc_dot(&m, e4, f32, a, b, 1, 0).bits, 0x3b000000); /* 2^-9 */
	r = emu_tc_dot2(&m, e4, e5, f32, a + 1, b + 1, 1, 0);
	ck_assert_uint_eq(r.bits, 0x4bc40000); /* 448 * 57344 = 25690112 */
	ck_assert_uint_eq(r.flags, 0);
	r = emu_tc_dot2(&m, e4, t_fmt("e8m0"), f32, a, b, 1, 0);
	ck_assert(emu_is_nan(f32, r.bits) && r.flags == EMU_FLAG_INVALID);
	for (uint64_t i = 0; i < 2000; i++) {
		emu_bits x[4], y[4];
		for (int k = 0; k < 4; k++) {
			x[k] = (emu_bits)(t_rand(S_TC_CASE + 97, 8 * i + (uint64_t)k) & 0xff);
			y[k] = (emu_bits)(t_rand(S_TC_CASE + 97, 8 * i + 4 + (uint64_t)k) & 0xff);
		}
		emu_result d1 = emu_tc_dot(&m, e5, f32, x, y, 4, 0x3f800000);
		emu_result d2 = emu_tc_dot2(&m, e5, e5, f32, x, y, 4, 0x3f800000);
		ck_assert(d1.bits == d2.bits && d1.flags == d2.flags);
	}
}
END_TEST

START_TEST(test_tc_vs_mpfr_variants)
{
	prove_tc("tc fast == mpfr, variants", n_cases(100000), S_TC_CASE + 99, setup_variant, NULL);
}
END_TEST

/* Block-scaled models: the two block-scaled presets on their formats and
 * generic models with scales and exact groups (chains, promotion, late C,
 * splits), with e8m0 or ue4m3 scales per block of products. */
static void setup_scaled(tc_case *t, uint64_t i, const void *ctx)
{
	(void)ctx;
	static const struct {
		const char *spec, *in, *inb;
	} sv[] = {
	    {"b200-mxf8f6f4", "e4m3", "e4m3"},
	    {"b200-mxf8f6f4", "e5m2", "e2m1"},
	    {"b200-mxf8f6f4", "e3m2", "e2m3"},
	    {"b200-mxf4nvf4", "e2m1", "e2m1"},
	    {"k=16,neab=2,final=rne,zalign=1", "fp16", "fp16"},
	    {"k=32,neab=5,final=rtz,promote=48", "bf16", "bf16"},
	    {"k=8,neab=0,final=up,split=2,group=2,clate=1,cround=down", "e4m3", "e5m2"},
	    {"k=32,neab=-3,final=up,gsum=8", "e4m3", "e4m3"},
	    {"k=16,neab=2,final=down,gsum=4,clate=1,zsign=pos", "e2m3", "e3m2"},
	    {"k=64,neab=12,final=rtz,gsum=16,zalign=1,promote=100", "e2m1", "e2m1"},
	    {"k=48,neab=9,final=rne,gsum=16,prec=9,cpre=1", "e2m1", "e4m3"},
	};
	static const size_t blocks[] = {1, 4, 16, 32};
	uint64_t r = t_rand(S_TC_VAR + 7, i);
	size_t v = r % ARRAY_SIZE(sv);
	r /= ARRAY_SIZE(sv);
	t->in = t_fmt(sv[v].in);
	t->inb = t_fmt(sv[v].inb);
	t->out = t_fmt(v == 10 ? "fp16" : "fp32");
	char err[200];
	if (emu_tc_parse(sv[v].spec, t->in, t->out, &t->m, err, sizeof err) != EMU_OK)
		abort();
	bool ue4m3 = r % 2;
	r /= 2;
	size_t blk = blocks[r % ARRAY_SIZE(blocks)];
	if (t->m.gsum > 1 && blk % (size_t)t->m.gsum)
		blk = (size_t)t->m.gsum;
	if (v < 3)
		blk = 32, ue4m3 = false; /* kind::mxf8f6f4: ue8m0 per 32 */
	t->scales = (emu_tc_scales){t_fmt(ue4m3 ? "e4m3" : "e8m0"), blk, NULL, NULL};
	t->sc = &t->scales; /* gen_scales fills the arrays */
	snprintf(t->what, sizeof t->what, "%s %s x %s -> %s", sv[v].spec, t->in->name, t->inb->name,
	         t->out->name);
}

/*
 * Scaled blocks where the plan's shortcuts matter, through a scaled plan
 * against emu_tc_dot_scaled: mostly zero operands of either sign, pairs of
 * products that cancel inside a group, zero and extreme scales, C a zero, a
 * subnormal or near the products, now and then a NaN or an infinity.
 */
START_TEST(test_tc_scaled_plan_sparse)
{
	static const struct {
		const char *spec, *in, *inb, *sf;
		size_t block;
	} sv[] = {
	    {"b200-mxf8f6f4", "e4m3", "e5m2", "e8m0", 32},
	    {"b200-mxf8f6f4", "e2m1", "e3m2", "e8m0", 32},
	    {"b200-mxf4nvf4", "e2m1", "e2m1", "e4m3", 16},
	    {"b200-mxf4nvf4", "e2m1", "e2m1", "e8m0", 32},
	    {"k=32,neab=-3,final=up,gsum=8", "e4m3", "e4m3", "e4m3", 8},
	    {"k=32,neab=1,final=down,gsum=8", "e2m3", "e4m3", "e8m0", 16},
	    {"k=16,neab=2,final=rne,zalign=1", "fp16", "fp16", "e4m3", 4},
	    {"k=16,neab=2,final=down,zalign=1", "e5m2", "e4m3", "e4m3", 1},
	    {"k=8,neab=0,final=rtz", "e4m3", "e4m3", "e4m3", 2},
	};
	uint64_t n = 0, planned = 0, bad = 0, refused = 0, bad_mp = 0;
	char first[700] = "", first_mp[700] = "";
	for (size_t v = 0; v < ARRAY_SIZE(sv); v++) {
		tc_case t;
		t.in = t_fmt(sv[v].in);
		t.inb = t_fmt(sv[v].inb);
		t.out = t_fmt("fp32");
		ck_assert_int_eq(emu_tc_parse(sv[v].spec, t.in, t.out, &t.m, NULL, 0), EMU_OK);
		const emu_format *sf = t_fmt(sv[v].sf);
		t.scales = (emu_tc_scales){sf, sv[v].block, t.sa, t.sb};
		t.sc = &t.scales;
		snprintf(t.what, sizeof t.what, "%s %s x %s, %s/%zu", sv[v].spec, sv[v].in,
		         sv[v].inb, sv[v].sf, sv[v].block);
		emu_tc_plan plan;
		ck_assert(emu_tc_plan_init2(&plan, &t.m, t.in, t.inb, t.out, t.sc) && plan.direct);
		for (uint64_t i = 0; i < 20000; i++) {
			uint64_t r = t_rand(S_TC_CASE + 200 + v, 8 * i);
			size_t k = (size_t)t.m.k;
			t.K = r % 4 == 0 ? (size_t)(r >> 2) % (k + 1) : k;
			int ce = 1 + (int)((r >> 8) % (uint64_t)(t.in->max_bits >> (t.in->p - 1)));
			int ceb =
			    1 + (int)((r >> 16) % (uint64_t)(t.inb->max_bits >> (t.inb->p - 1)));
			for (size_t j = 0; j < t.K; j++) {
				uint64_t q = t_rand(S_TC_CASE + 200 + v, 8 * i + 1 + j % 7) ^
				             (j * 0x9e3779b97f4a7c15ull);
				t.a[j] = q % 8 < 4 ? ((q >> 3) & 1 ? t.in->sign_mask : 0)
				                   : rand_enc(t.in, ce, q >> 4);
				t.b[j] = (q >> 8) % 8 < 3 ? ((q >> 11) & 1 ? t.inb->sign_mask : 0)
				                          : rand_enc(t.inb, ceb, q >> 12);
				if (j % 2 && (q >> 20) % 3 == 0) { /* cancel the pair */
					t.a[j] = t.a[j - 1] ^ t.in->sign_mask;
					t.b[j] = t.b[j - 1];
				}
			}
			size_t ns = t.K ? (t.K - 1) / sv[v].block + 1 : 0;
			for (size_t j = 0; j < ns; j++)
				for (int side = 0; side < 2; side++) {
					uint64_t q =
					    t_rand(S_TC_CASE + 300 + v, 4 * i + (uint64_t)side) ^
					    (j * 0xd6e8feb86659fd93ull);
					unsigned pick = (unsigned)(q % 64);
					emu_bits x = (emu_bits)((q >> 8) & ((1u << sf->bits) - 1));
					if (pick == 0)
						x = sf->nan_bits;
					else if (pick < 12)
						x = 0; /* ue4m3's zero; e8m0's 2^-127 */
					else if (pick < 16)
						x = sf->max_bits;
					else if (emu_is_nan(sf, x & ~sf->sign_mask))
						x = 1;
					(side ? t.sb : t.sa)[j] = x;
				}
			uint64_t rc = t_rand(S_TC_CASE + 400 + v, i);
			emu_bits sg = (rc >> 8) & 1 ? 0x80000000u : 0;
			switch (rc % 16) {
			case 0:
				t.c = (rc >> 9) & 1 ? 0x7fc00000u : (sg | 0x7f800000u);
				break;
			case 1:
			case 2:
			case 3:
			case 4:
				t.c = sg; /* ±0 */
				break;
			case 5:
			case 6:
				t.c = sg | ((emu_bits)(rc >> 12) & 0x7fffffu); /* subnormal */
				break;
			default:
				t.c = sg | ((emu_bits)(100 + (rc >> 12) % 60) << 23) |
				      ((emu_bits)(rc >> 20) & 0x7fffffu);
			}
			emu_result f = emu_tc_dot_scaled(&t.m, t.in, t.inb, t.out, t.a, t.b, t.K,
			                                 t.c, t.sc),
			           p = emu_tc_mp_dot_scaled(&t.m, t.in, t.inb, t.out, t.a, t.b, t.K,
			                                    t.c, t.sc);
			if ((f.bits != p.bits || f.flags != p.flags) && bad_mp++ == 0)
				describe(&t, f, p, first_mp, sizeof first_mp);
			int d = scaled_plan_differs(&t, &plan);
			n++;
			planned += d == 0;
			refused += d < 0;
			if (d > 0 && bad++ == 0) {
				emu_tc_model m0 = t.m;
				m0.promote_every = 0;
				emu_result g = emu_tc_dot_scaled(&m0, t.in, t.inb, t.out, t.a, t.b,
				                                 t.K, t.c, t.sc);
				describe(&t, g, g, first, sizeof first);
			}
		}
	}
	ck_assert_msg(bad_mp == 0,
	              "%" PRIu64 " of %" PRIu64 " scaled blocks: fast != mpfr; first: %s", bad_mp,
	              n, first_mp);
	ck_assert_msg(bad == 0,
	              "%" PRIu64 " of %" PRIu64 " scaled blocks: the plan differs or "
	              "refused a finite one; first (emu_tc_dot_scaled's result twice): %s",
	              bad, n, first);
	ck_assert_msg(planned > n / 2 && refused > 0, "planned %" PRIu64 ", refused %" PRIu64,
	              planned, refused);
	t_count("tc scaled blocks, sparse and cancelling, planned", planned);
}
END_TEST

START_TEST(test_tc_vs_mpfr_scaled)
{
	prove_tc("tc fast == mpfr, block-scaled and grouped", n_cases(100000), S_TC_CASE + 100,
	         setup_scaled, NULL);
}
END_TEST

/* ---- the published hardware vectors ---- */

static const char *vectors_dir(void)
{
	const char *d = getenv("NANMAP_TC_VECTORS");
	return d && *d ? d : "../shared/data/tensor-core-vectors";
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

typedef struct {
	nm_vecs a, b, c, d;
	bool has_c;
} hw_file;

/* Load <dir>/<G>/<F>/{a,b,c,d} for output `out`; false if d is absent. */
static bool load_hw(const char *G, const char *F, const char *out, hw_file *h)
{
	char pa[512], pb[512], pc[512], pd[512], err[600];
	const char *dir = vectors_dir();
	snprintf(pd, sizeof pd, "%s/%s/%s/d_%s_%s.txt", dir, G, F, G, out);
	if (access(pd, R_OK) != 0)
		return false;
	snprintf(pa, sizeof pa, "%s/%s/%s/a_%s_%s.txt", dir, G, F, G, F);
	snprintf(pb, sizeof pb, "%s/%s/%s/b_%s_%s.txt", dir, G, F, G, F);
	snprintf(pc, sizeof pc, "%s/%s/%s/c_%s_fp32.txt", dir, G, F, G);
	memset(h, 0, sizeof *h);
	ck_assert_msg(nm_read_hex_vectors(pa, &h->a, err, sizeof err) == 0, "%s", err);
	ck_assert_msg(nm_read_hex_vectors(pb, &h->b, err, sizeof err) == 0, "%s", err);
	ck_assert_msg(nm_read_bin_scalars(pd, &h->d, err, sizeof err) == 0, "%s", err);
	h->has_c = nm_read_bin_scalars(pc, &h->c, err, sizeof err) == 0;
	ck_assert_msg(h->a.count == h->d.count && h->b.count == h->d.count && h->a.K == h->b.K,
	              "%s: the a, b and d files disagree in size", pd);
	return true;
}

static void free_hw(hw_file *h)
{
	nm_vecs_free(&h->a);
	nm_vecs_free(&h->b);
	nm_vecs_free(&h->c);
	nm_vecs_free(&h->d);
}

/* How many cases of h the model reproduces; C from the c file when use_c. */
static size_t run_hw(const hw_file *h, const emu_tc_model *m, const emu_format *in,
                     const emu_format *out, bool use_c, size_t *first_bad)
{
	const emu_format *fp32 = t_fmt("fp32");
	const emu_env rne = EMU_ENV_DEFAULT;
	size_t ok = 0, K = h->a.K;
	*first_bad = SIZE_MAX;
	emu_bits *ea = malloc(K * sizeof *ea), *eb = malloc(K * sizeof *eb);
	ck_assert(ea && eb);
	for (size_t i = 0; i < h->d.count; i++) {
		for (size_t j = 0; j < K; j++) {
			emu_result x = emu_convert(in, fp32, h->a.v[i * K + j], &rne);
			emu_result y = emu_convert(in, fp32, h->b.v[i * K + j], &rne);
			ck_assert_msg(x.flags == 0 && y.flags == 0, "case %zu: input %zu not in %s",
			              i, j, in->name);
			ea[j] = x.bits;
			eb[j] = y.bits;
		}
		emu_bits c = use_c && h->has_c ? h->c.v[i] : 0;
		emu_result r = emu_tc_dot(m, in, out, ea, eb, K, c);
		emu_bits w = emu_convert(fp32, out, r.bits, &rne).bits;
		if (w == h->d.v[i])
			ok++;
		else if (*first_bad == SIZE_MAX)
			*first_bad = i;
	}
	free(ea);
	free(eb);
	return ok;
}

/* Every file of the folder that a preset claims. The FP8 -> fp32 H200 files
 * come from wgmma run with C = 0 (the vectors README); the FP8 -> fp16 H200
 * files from mma.sync with fp16(C) (the driver's __float2half(c)); the B200
 * FP8 files from mma.sync with C (FACTS §3). The B200 rows are optional: the
 * shared folder may not hold that GPU. */
static const struct {
	const char *G, *F, *in, *out, *gpu;
	bool use_c;    /* C from the c file, else C = 0 */
	bool required; /* the folder must hold it */
} hw_rows[] = {
    {"V100", "fp16", "fp16", "fp32", "v100", true, true},
    {"V100", "fp16", "fp16", "fp16", "v100", true, true},
    {"A100", "fp16", "fp16", "fp32", "a100", true, true},
    {"A100", "bf16", "bf16", "fp32", "a100", true, true},
    {"A100", "tf32", "tf32", "fp32", "a100", true, true},
    {"A100", "fp16", "fp16", "fp16", "a100", true, true},
    {"H200", "fp16", "fp16", "fp32", "h200", true, true},
    {"H200", "bf16", "bf16", "fp32", "h200", true, true},
    {"H200", "tf32", "tf32", "fp32", "h200", true, true},
    {"H200", "fp16", "fp16", "fp16", "h200", true, true},
    {"H200", "E4M3", "e4m3", "fp32", "h200", false, true},
    {"H200", "E5M2", "e5m2", "fp32", "h200", false, true},
    {"H200", "E4M3", "e4m3", "fp16", "h200", true, true},
    {"H200", "E5M2", "e5m2", "fp16", "h200", true, true},
    {"B200", "E4M3", "e4m3", "fp32", "b200", true, false},
    {"B200", "E5M2", "e5m2", "fp32", "b200", true, false},
};

START_TEST(test_tc_hw_vectors)
{
	const char *dir = vectors_dir();
	if (!is_dir(dir)) {
		t_skip("tc", "hardware vectors: %s not found (set NANMAP_TC_VECTORS)", dir);
		return;
	}
	size_t files = 0, required = 0;
	for (size_t i = 0; i < ARRAY_SIZE(hw_rows); i++) {
		hw_file h;
		required += hw_rows[i].required;
		if (!load_hw(hw_rows[i].G, hw_rows[i].F, hw_rows[i].out, &h)) {
			printf("tc: %s %s -> %s: no such file, skipped\n", hw_rows[i].G,
			       hw_rows[i].in, hw_rows[i].out);
			continue;
		}
		const emu_format *in = t_fmt(hw_rows[i].in), *out = t_fmt(hw_rows[i].out);
		emu_tc_model m = model_of(hw_rows[i].gpu, in, out);
		size_t bad;
		size_t ok = run_hw(&h, &m, in, out, hw_rows[i].use_c, &bad);
		printf("tc: %s %s -> %s (%s): %zu/%zu\n", hw_rows[i].G, hw_rows[i].in,
		       hw_rows[i].out, hw_rows[i].gpu, ok, h.d.count);
		fflush(stdout);
		ck_assert_msg(ok == h.d.count,
		              "%s %s -> %s: %zu of %zu match; first mismatch case %zu",
		              hw_rows[i].G, hw_rows[i].in, hw_rows[i].out, ok, h.d.count, bad + 1);
		t_count("tc hardware vectors matched", ok);
		files += hw_rows[i].required;
		free_hw(&h);
	}
	ck_assert_msg(files == required,
	              "only %zu of the %zu required vector files were found in %s", files, required,
	              dir);
}
END_TEST

/* ---- DeepSeek-V3 §3.3.2: FP8 accumulation error at K = 4096 ---- */

#define ERR_K 4096

/* A random e4m3 encoding of a value drawn uniformly from (-448, 448)·s,
 * rounded to e4m3; s makes a scale so products span the format. */
static emu_bits rand_e4m3(const emu_format *f, uint64_t r, double lo, double hi)
{
	const emu_env rne = EMU_ENV_DEFAULT;
	double u = (double)(r >> 11) * 0x1p-53; /* [0, 1) */
	return emu_from_double(f, lo + (hi - lo) * u, &rne).bits;
}

/* The exact dot product of e4m3 vectors: products are multiples of 2^-18
 * below 2^18, so K = 4096 of them sum exactly in __int128 fixed point. */
static double exact_dot(const emu_format *f, const emu_bits *a, const emu_bits *b, size_t K)
{
	__int128 s = 0;
	for (size_t j = 0; j < K; j++) {
		double p = emu_decode(f, a[j]) * emu_decode(f, b[j]); /* exact */
		s += (__int128)ldexp(p, 18);
	}
	return ldexp((double)s, -18); /* one rounding, far below the errors measured */
}

START_TEST(test_tc_fp8_accumulation_error)
{
	const emu_format *in = t_fmt("e4m3"), *out = t_fmt("fp32"), *fp32 = out;
	emu_tc_model plain = model_of("h100", in, out);
	emu_tc_model promo = model_of("h100,promote=128", in, out);
	const size_t ndots = t_quick() ? 40 : 400;
	double worst[2] = {0, 0}, sum[2] = {0, 0};
#pragma omp parallel for schedule(dynamic, 4) reduction(max : worst[:2]) reduction(+ : sum[:2])
	for (size_t i = 0; i < ndots; i++) {
		emu_bits a[ERR_K], b[ERR_K];
		/* both signs, with a positive mean so the exact result is not near 0 */
		for (size_t j = 0; j < ERR_K; j++) {
			a[j] = rand_e4m3(in, t_rand(S_TC_ERR, 2 * (i * ERR_K + j)), -0.25, 1.0);
			b[j] = rand_e4m3(in, t_rand(S_TC_ERR, 2 * (i * ERR_K + j) + 1), -0.25, 1.0);
		}
		double exact = exact_dot(in, a, b, ERR_K);
		emu_result r0 = emu_tc_dot(&plain, in, out, a, b, ERR_K, 0);
		emu_result r1 = emu_tc_dot(&promo, in, out, a, b, ERR_K, 0);
		double e0 = fabs(emu_decode(fp32, r0.bits) - exact) / fabs(exact);
		double e1 = fabs(emu_decode(fp32, r1.bits) - exact) / fabs(exact);
		worst[0] = fmax(worst[0], e0);
		worst[1] = fmax(worst[1], e1);
		sum[0] += e0;
		sum[1] += e1;
	}
	printf("tc: h100 e4m3 -> fp32, K=%d, %zu dot products: max relative error %.3g%% "
	       "(mean %.3g%%); with promotion to fp32 every 128: %.3g%% (mean %.3g%%)\n",
	       ERR_K, ndots, 100 * worst[0], 100 * sum[0] / (double)ndots, 100 * worst[1],
	       100 * sum[1] / (double)ndots);
	fflush(stdout);
	ck_assert_msg(worst[0] > 0.01 && worst[0] < 0.05,
	              "the tensor-core accumulation error %.3g is not near DeepSeek's 2%%",
	              worst[0]);
	ck_assert_msg(worst[1] < worst[0] / 20, "promotion did not help: %.3g vs %.3g", worst[1],
	              worst[0]);
}
END_TEST

/* ---- the vector-file readers ---- */

static const struct {
	const char *text;
	size_t len;        /* 0: strlen(text) */
	int hex;           /* 1: hex vectors reader, 0: binary scalars */
	const char *error; /* NULL: must be read; else a substring of the message */
} files[] = {
    {"3f800000 40000000\n3f800000 c0000000\n", 0, 1, NULL},
    {"0x3f800000 0X40000000 \r\n3f800000 c0000000", 0, 1, NULL},
    {"3f800000 40000000\n3f800000\n", 0, 1, ":2: 1 values, the first line has 2"},
    {"3f800000 4000000g\n", 0, 1, ":1: value 2 ('4000000g')"},
    {"3f800000 400000000\n", 0, 1, ":1: value 2 ('400000000')"},
    {"3f800000\n\n3f800000\n", 0, 1, ":2: empty line"},
    {"", 0, 1, "no vectors"},
    {"3f80\0"
     "00\n",
     8, 1, ":1: a NUL byte"},
    {"00111111100000000000000000000000\n", 0, 0, NULL},
    {"00111111100000000000000000000000  \n0011111110000000000000000000000\n", 0, 0,
     ":2: expected a binary32 as 32 characters 0/1"},
    {"0011111110000000000000000000000x\n", 0, 0, ":1: expected"},
};

static char *write_tmp(const char *text, size_t len)
{
	static char path[64];
	snprintf(path, sizeof path, "/tmp/nanmap-tc-XXXXXX");
	int fd = mkstemp(path);
	ck_assert(fd >= 0);
	ck_assert(write(fd, text, len) == (ssize_t)len);
	close(fd);
	return path;
}

START_TEST(test_tc_readers)
{
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		size_t len = files[i].len ? files[i].len : strlen(files[i].text);
		char *path = write_tmp(files[i].text, len);
		nm_vecs v = {0};
		char err[600] = "";
		int rc = files[i].hex ? nm_read_hex_vectors(path, &v, err, sizeof err)
		                      : nm_read_bin_scalars(path, &v, err, sizeof err);
		if (!files[i].error) {
			ck_assert_msg(rc == 0, "row %zu refused: %s", i, err);
			ck_assert_msg(v.count >= 1, "row %zu: nothing read", i);
		} else {
			ck_assert_msg(rc != 0, "row %zu accepted", i);
			ck_assert_msg(strstr(err, files[i].error) && strstr(err, path),
			              "row %zu: message '%s' lacks '%s' or the path", i, err,
			              files[i].error);
		}
		nm_vecs_free(&v);
		unlink(path);
	}
	/* a line longer than the limit is refused, not truncated */
	size_t n = NM_DOT_MAX_LINE + 16;
	char *big = malloc(n);
	ck_assert(big != NULL);
	memset(big, '0', n);
	big[n - 1] = '\n';
	char *path = write_tmp(big, n);
	free(big);
	nm_vecs v = {0};
	char err[600];
	ck_assert_int_ne(nm_read_hex_vectors(path, &v, err, sizeof err), 0);
	ck_assert_msg(strstr(err, ":1: line longer than"), "message: %s", err);
	unlink(path);
	/* the values read are the bit patterns */
	path = write_tmp("3f800000 c0000000\n", 18);
	ck_assert_int_eq(nm_read_hex_vectors(path, &v, err, sizeof err), 0);
	ck_assert_uint_eq(v.K, 2);
	ck_assert_uint_eq(v.v[0], 0x3f800000u);
	ck_assert_uint_eq(v.v[1], 0xc0000000u);
	nm_vecs_free(&v);
	unlink(path);
}
END_TEST

Suite *suite_tc(void)
{
	Suite *s = suite_create("tc");
	TCase *tc = tcase_create("model");
	tcase_add_test(tc, test_tc_specs);
	tcase_add_test(tc, test_tc_hand);
	tcase_add_test(tc, test_tc_split_all);
	tcase_add_test(tc, test_tc_fttn);
	tcase_add_test(tc, test_tc_readers);
	suite_add_tcase(s, tc);

	tc = tcase_create("proof");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_tc_vs_mpfr_presets, 0, 14);
	tcase_add_test(tc, test_tc_vs_mpfr_variants);
	tcase_add_test(tc, test_tc_vs_mpfr_scaled);
	tcase_add_test(tc, test_tc_scaled_plan_sparse);
	tcase_add_test(tc, test_tc_vs_mpfr_mixed);
	tcase_add_test(tc, test_tc_mixed_hand);
	suite_add_tcase(s, tc);

	tc = tcase_create("hardware");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_tc_hw_vectors);
	tcase_add_test(tc, test_tc_fp8_accumulation_error);
	suite_add_tcase(s, tc);
	return s;
}
