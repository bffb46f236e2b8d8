/*
 * check_claims.c — the claims report (sweep/nm_claims.c) decides each
 * verdict from numbers: synthetic results for the real claim cases
 * (cases/claims/, read from the source tree) give one verdict, and changing
 * the number the rule turns on flips it. The report is written atomically
 * and a rewrite of the same results gives the same bytes.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib.h"
#include "nm_file.h"
#include "nm_case.h"
#include "nm_claims.h"

static char tdir[] = "/tmp/nanmap-claims-XXXXXX";

static const char *const claim_files[] = {
    "fp16_range", "scaled_loss", "ce_logits", "layernorm_eps", "gradacc_divide",
    "bf16_range", "bf16_precision", "sum_stall", "fp8_scaling",
    "mx_floor", "nvfp4_mxfp4", "rht_outliers", "sr_bias", "ftz_scale",
    "gs_spikes_default", "gs_spikes_conservative", "bce_float", "bn_tiny_var", "o2_state",
    "scale_65536", "einsum_fp16", "recompute_fp16", "bf16_unscaled", "rmsnorm_256", "adam_eps",
    "attn_online", "fp8_p_scale",
};
#define NCASES ARRAY_SIZE(claim_files)
static nm_case cases[NCASES];
static nm_case *ptrs[NCASES];

static void setup(void)
{
	strcpy(tdir, "/tmp/nanmap-claims-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tdir));
	for (size_t i = 0; i < NCASES; i++) {
		char p[256], err[512];
		snprintf(p, sizeof p, "cases/claims/%s.case", claim_files[i]);
		ck_assert_msg(nm_case_load(p, &cases[i], err, sizeof err) == 0,
		              "%s (the suite runs from the source tree's root)", err);
		ck_assert_msg(nm_claims_check(&cases[i], err, sizeof err) == 0, "%s", err);
		ptrs[i] = &cases[i];
	}
}

static void teardown(void)
{
	for (size_t i = 0; i < NCASES; i++)
		nm_case_free(&cases[i]);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Write tdir/NAME.csv: the header, then the rows, up to a NULL. */
static void csv(const char *name, const char *header, ...)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s.csv", tdir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", header);
	va_list ap;
	va_start(ap, header);
	for (const char *r = va_arg(ap, const char *); r; r = va_arg(ap, const char *))
		fprintf(f, "%s\n", r);
	va_end(ap);
	ck_assert_int_eq(fclose(f), 0);
}

static void verdict(int id, const char *want)
{
	const char *got = nm_claim_verdict(id, ptrs, NCASES, tdir);
	ck_assert_msg(strcmp(got, want) == 0, "claim %d: want %s, got %s", id, want, got);
}

#define THR_HDR "case,kernel,variant,policy,axis,event,last_ok,first_bad,real_boundary,first_failing_op"
#define R1_HDR "case,kernel,variant,policy,x,backend,status,result.rel_err,result.maxabs"

START_TEST(claim1_fp16_range)
{
	csv("fp16_range", R1_HDR,
	    "fp16_range,accum,sum:seq,\"storage=fp32,accum=fp16\",1e-09,fast,underflow,1,0",
	    "fp16_range,accum,sum:seq,\"storage=fp32,accum=fp16\",1e-07,fast,ok,0.1,1e-07",
	    "fp16_range,accum,sum:seq,\"storage=fp32,accum=fp16\",1e-05,fast,ok,0.001,1e-05",
	    "fp16_range,accum,sum:seq,\"storage=fp32,accum=fp16\",10000,fast,ok,0,10000",
	    "fp16_range,accum,sum:seq,\"storage=fp32,accum=fp16\",100000,fast,inf,inf,0", NULL);
	csv("thresholds", THR_HDR,
	    "fp16_range,accum,sum:seq,\"storage=fp32,accum=fp16\",x,underflow,2.9802324164052159e-08,"
	    "2.9802324164052152e-08,2.98e-08,-",
	    "fp16_range,accum,sum:seq,\"storage=fp32,accum=fp16\",x,inf,65519.998046874993,"
	    "65519.998046875,65520,cvt@to_accum",
	    NULL);
	verdict(1, "partly");
	/* if values vanished right below 6e-5, the statement would hold */
	csv("thresholds", THR_HDR,
	    "fp16_range,accum,sum:seq,\"storage=fp32,accum=fp16\",x,underflow,6.1e-05,6.0e-05,6e-05,-",
	    "fp16_range,accum,sum:seq,\"storage=fp32,accum=fp16\",x,inf,65519.998046874993,"
	    "65519.998046875,65520,cvt@to_accum",
	    NULL);
	verdict(1, "true");
}
END_TEST

#define R2_HDR "case,kernel,variant,policy,S,backend,status,grad.maxabs"

START_TEST(claim2_scaled_loss)
{
	csv("scaled_loss", R2_HDR, "scaled_loss,accum,gradacc,storage=fp32,131072,fast,ok,1966080",
	    "scaled_loss,accum,gradacc,\"storage=fp16,compute=fp32\",131072,fast,inf,0",
	    "scaled_loss,accum,gradacc,storage=fp16,131072,fast,inf,0", NULL);
	verdict(2, "partly");
	csv("scaled_loss", R2_HDR, "scaled_loss,accum,gradacc,storage=fp32,131072,fast,inf,0",
	    "scaled_loss,accum,gradacc,storage=fp16,131072,fast,inf,0", NULL);
	verdict(2, "true");
	csv("scaled_loss", R2_HDR, "scaled_loss,accum,gradacc,storage=fp32,131072,fast,ok,1966080",
	    "scaled_loss,accum,gradacc,storage=fp16,131072,fast,ok,1966080", NULL);
	verdict(2, "false");
}
END_TEST

#define R3_HDR "case,kernel,variant,policy,logit_max,backend,status,loss.rel_err"

START_TEST(claim3_ce)
{
	csv("ce_logits", R3_HDR, "ce_logits,softmax_ce,naive,storage=fp16,8,fast,ok,0.001",
	    "ce_logits,softmax_ce,naive,storage=fp16,16,fast,nan,nan",
	    "ce_logits,softmax_ce,lse,storage=fp16,16,fast,ok,0.05",
	    "ce_logits,softmax_ce,maxsub,storage=fp16,16,fast,ok,0.05",
	    "ce_logits,softmax_ce,naive,\"storage=fp16,compute=fp32\",100,fast,inf,inf",
	    "ce_logits,softmax_ce,maxsub,\"storage=fp16,compute=fp32\",100,fast,ok,1e-8",
	    "ce_logits,softmax_ce,lse,\"storage=fp16,compute=fp32\",100,fast,ok,1e-8", NULL);
	verdict(3, "true");
	csv("ce_logits", R3_HDR, "ce_logits,softmax_ce,naive,storage=fp16,16,fast,nan,nan",
	    "ce_logits,softmax_ce,lse,\"storage=fp16,compute=fp32\",100,fast,overflow,1e-8", NULL);
	verdict(3, "partly");
}
END_TEST

#define R4_HDR "case,kernel,variant,policy,eps,backend,status,y.maxabs,dx.maxabs"

START_TEST(claim4_layernorm)
{
	csv("layernorm_eps", R4_HDR, "layernorm_eps,layernorm,twopass,storage=fp16,1.0000000000000001e-05,fast,ok,0.357,328",
	    "layernorm_eps,layernorm,twopass,storage=fp16,0.001,fast,ok,0.04,30", NULL);
	verdict(4, "false");
	csv("layernorm_eps", R4_HDR, "layernorm_eps,layernorm,twopass,storage=fp16,1.0000000000000001e-05,fast,ok,65504,328",
	    "layernorm_eps,layernorm,twopass,storage=fp16,0.001,fast,ok,0.04,30", NULL);
	verdict(4, "false"); /* 65504 is not above 65504 */
	csv("layernorm_eps", R4_HDR, "layernorm_eps,layernorm,twopass,storage=fp16,1.0000000000000001e-05,fast,inf,0.357,328",
	    "layernorm_eps,layernorm,twopass,storage=fp16,0.001,fast,ok,0.04,30", NULL);
	verdict(4, "true");
}
END_TEST

#define R5_HDR "case,kernel,variant,policy,m,divide,backend,status,grad.maxabs"
#define P5 "\"storage=fp16,compute=fp32,accum=fp16\""

START_TEST(claim5_gradacc)
{
	csv("gradacc_divide", R5_HDR, "gradacc_divide,accum,gradacc," P5 ",1,0,fast,ok,2000",
	    "gradacc_divide,accum,gradacc," P5 ",1,1,fast,ok,2000",
	    "gradacc_divide,accum,gradacc," P5 ",64,0,fast,inf,0",
	    "gradacc_divide,accum,gradacc," P5 ",64,1,fast,ok,2000", NULL);
	verdict(5, "false");
	csv("gradacc_divide", R5_HDR, "gradacc_divide,accum,gradacc," P5 ",1,0,fast,ok,2000",
	    "gradacc_divide,accum,gradacc," P5 ",1,1,fast,ok,2000",
	    "gradacc_divide,accum,gradacc," P5 ",64,0,fast,ok,2000",
	    "gradacc_divide,accum,gradacc," P5 ",64,1,fast,inf,0", NULL);
	verdict(5, "true");
}
END_TEST

#define R6_HDR "case,kernel,variant,policy,x,backend,status"
#define R6P_HDR "case,kernel,variant,policy,n,backend,status,result.rel_err"

START_TEST(claim6_bf16)
{
	csv("bf16_range", R6_HDR, "bf16_range,accum,sum:seq,\"storage=fp32,accum=bf16\",3.39e+38,fast,ok",
	    "bf16_range,accum,sum:seq,\"storage=fp32,accum=bf16\",3.4e+38,fast,inf",
	    "bf16_range,accum,sum:seq,\"storage=fp32,accum=fp32\",3.39e+38,fast,ok",
	    "bf16_range,accum,sum:seq,\"storage=fp32,accum=fp32\",3.4e+38,fast,ok", NULL);
	csv("bf16_precision", R6P_HDR,
	    "bf16_precision,accum,sum:seq,\"storage=fp32,accum=bf16\",1024,fast,ok,0.01",
	    "bf16_precision,accum,sum:seq,\"storage=fp32,accum=fp16\",1024,fast,ok,0.001", NULL);
	verdict(6, "false");
	csv("bf16_range", R6_HDR, "bf16_range,accum,sum:seq,\"storage=fp32,accum=bf16\",3.4e+38,fast,ok",
	    "bf16_range,accum,sum:seq,\"storage=fp32,accum=fp32\",3.4e+38,fast,ok", NULL);
	verdict(6, "partly");
	csv("bf16_precision", R6P_HDR,
	    "bf16_precision,accum,sum:seq,\"storage=fp32,accum=bf16\",1024,fast,ok,0.001",
	    "bf16_precision,accum,sum:seq,\"storage=fp32,accum=fp16\",1024,fast,ok,0.01", NULL);
	verdict(6, "true");
}
END_TEST

#define R7_HDR "case,kernel,variant,policy,n,backend,status,result.rel_err,result.maxabs"

START_TEST(claim7_sum_stall)
{
	csv("sum_stall", R7_HDR, "sum_stall,accum,sum:seq,storage=fp16,1024,fast,ok,nan,1024",
	    "sum_stall,accum,sum:seq,storage=fp16,4096,fast,ok,nan,2048",
	    "sum_stall,accum,sum:seq,\"storage=fp16,accum=fp32\",16777216,fast,ok,nan,16777216",
	    "sum_stall,accum,sum:seq,\"storage=fp16,accum=fp32\",33554432,fast,ok,nan,16777216", NULL);
	verdict(7, "partly");
	csv("sum_stall", R7_HDR, "sum_stall,accum,sum:seq,storage=fp16,1024,fast,ok,nan,1024",
	    "sum_stall,accum,sum:seq,storage=fp16,4096,fast,ok,nan,2048",
	    "sum_stall,accum,sum:seq,\"storage=fp16,accum=fp32\",16777216,fast,ok,nan,16777216",
	    "sum_stall,accum,sum:seq,\"storage=fp16,accum=fp32\",33554432,fast,ok,nan,33554432", NULL);
	verdict(7, "true");
	csv("sum_stall", R7_HDR, "sum_stall,accum,sum:seq,storage=fp16,4096,fast,ok,nan,4096",
	    "sum_stall,accum,sum:seq,\"storage=fp16,accum=fp32\",4096,fast,ok,nan,4096", NULL);
	verdict(7, "false");
	/* a missing results file: unsettled, not a guess */
	char p[300];
	snprintf(p, sizeof p, "%s/sum_stall.csv", tdir);
	ck_assert_int_eq(unlink(p), 0);
	verdict(7, "unsettled");
}
END_TEST

#define R8_HDR "case,kernel,variant,policy,sd,backend,status"
#define E8(s) "\"storage=e4m3,compute=fp32,scale=" s "\""

START_TEST(claim8_fp8)
{
	csv("fp8_scaling", R8_HDR, "fp8_scaling,accum,sum:seq," E8("none") ",1,fast,ok",
	    "fp8_scaling,accum,sum:seq," E8("none") ",1000,fast,nan",
	    "fp8_scaling,accum,sum:seq," E8("tensor") ",1000,fast,ok",
	    "fp8_scaling,accum,sum:seq," E8("mx32:floor") ",1,fast,overflow",
	    "fp8_scaling,accum,sum:seq," E8("mx32:rceil") ",1,fast,ok", NULL);
	verdict(8, "partly");
	csv("fp8_scaling", R8_HDR, "fp8_scaling,accum,sum:seq," E8("none") ",1000,fast,nan",
	    "fp8_scaling,accum,sum:seq," E8("tensor") ",1000,fast,ok",
	    "fp8_scaling,accum,sum:seq," E8("mx32:floor") ",1,fast,ok",
	    "fp8_scaling,accum,sum:seq," E8("mx32:rceil") ",1,fast,ok", NULL);
	verdict(8, "true");
}
END_TEST


/* claims 17–21: the quant kernel's columns */
#define RQ_HDR "case,kernel,variant,policy,%s,backend,status,deq.rel_err,deq.lost,bias.maxabs," \
               "bias_se.maxabs,clipped.maxabs"
#define QP(r) "\"compute=fp32,scale=" r "\""

static void qcsv(const char *name, const char *axes, const char *const *rows, size_t n)
{
	char hdr[300], p[256];
	snprintf(hdr, sizeof hdr, RQ_HDR, axes);
	snprintf(p, sizeof p, "%s/%s.csv", tdir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", hdr);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s,quant,%s\n", name, rows[i]);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(claim17_mx_floor)
{
	/* variant,policy,sd,backend,status,rel_err,lost,bias,bias_se,clipped */
	const char *rows[] = {
	    "row," QP("mxfp8") ",1,fast,ok,0.027,0,0,0,0",
	    "row," QP("mxfp8:floor") ",1,fast,overflow,0.03,0,0,0,0.006",
	    "row," QP("mxfp4") ",1,fast,ok,0.11,0,0,0,0",
	    "row," QP("mxfp4:floor") ",1,fast,overflow,0.11,0,0,0,0.008",
	};
	qcsv("mx_floor", "sd", rows, 4);
	verdict(17, "true");
	rows[3] = "row," QP("mxfp4:floor") ",1,fast,ok,0.11,0,0,0,0";
	qcsv("mx_floor", "sd", rows, 4);
	verdict(17, "partly");
	rows[1] = "row," QP("mxfp8:floor") ",1,fast,ok,0.03,0,0,0,0";
	qcsv("mx_floor", "sd", rows, 4);
	verdict(17, "false");
}
END_TEST

START_TEST(claim18_nvfp4_mxfp4)
{
	const char *rows[] = {
	    "row," QP("nvfp4") ",1,fast,ok,0.09,0,0,0,0",
	    "row," QP("nvfp4") ",100,fast,ok,0.05,0,0,0,0",
	    "row," QP("mxfp4") ",1,fast,ok,0.11,0,0,0,0",
	    "row," QP("mxfp4") ",100,fast,ok,0.1,0,0,0,0",
	};
	qcsv("nvfp4_mxfp4", "outlier_k", rows, 4);
	verdict(18, "true");
	rows[0] = "row," QP("nvfp4") ",1,fast,ok,0.12,0,0,0,0";
	qcsv("nvfp4_mxfp4", "outlier_k", rows, 4);
	verdict(18, "partly");
	rows[1] = "row," QP("nvfp4") ",100,fast,ok,0.2,0,0,0,0";
	qcsv("nvfp4_mxfp4", "outlier_k", rows, 4);
	verdict(18, "false");
}
END_TEST

START_TEST(claim19_rht)
{
	const char *rows[] = {
	    "col," QP("nvfp4") ",1,0.01,fast,ok,0.095,0,0,0,0",
	    "col," QP("nvfp4") ",100,0.01,fast,ok,0.05,0,0,0,0",
	    "col," QP("nvfp4") ",1000,0.01,fast,ok,0.02,0,0,0,0",
	    "col," QP("{nvfp4,rht=no}") ",1,0.01,fast,ok,0.094,0,0,0,0",
	    "col," QP("{nvfp4,rht=no}") ",100,0.01,fast,ok,0.06,0,0,0,0",
	    "col," QP("{nvfp4,rht=no}") ",1000,0.01,fast,ok,0.03,0,0,0,0",
	};
	qcsv("rht_outliers", "outlier_k,outlier_frac", rows, 6);
	verdict(19, "true");
	rows[1] = "col," QP("nvfp4") ",100,0.01,fast,ok,0.07,0,0,0,0";
	qcsv("rht_outliers", "outlier_k,outlier_frac", rows, 6);
	verdict(19, "partly");
	rows[2] = "col," QP("nvfp4") ",1000,0.01,fast,ok,0.04,0,0,0,0";
	qcsv("rht_outliers", "outlier_k,outlier_frac", rows, 6);
	verdict(19, "false");
}
END_TEST

#define SRP(n) QP("{nvfp4,sr_bits=" #n "},role=grad")
START_TEST(claim20_sr)
{
	const char *rows[] = {
	    "row," SRP(2) ",1,fast,ok,0.1,0,0.009,0.0001,0",
	    "row," SRP(32) ",1,fast,ok,0.1,0,0.0002,0.0001,0",
	};
	qcsv("sr_bias", "sd", rows, 2);
	verdict(20, "partly");
	rows[0] = "row," SRP(2) ",1,fast,ok,0.1,0,0.0003,0.0001,0";
	qcsv("sr_bias", "sd", rows, 2);
	verdict(20, "true");
	rows[0] = "row," SRP(2) ",1,fast,ok,0.1,0,0.009,0.0001,0";
	rows[1] = "row," SRP(32) ",1,fast,ok,0.1,0,0.0005,0.0001,0";
	qcsv("sr_bias", "sd", rows, 2);
	verdict(20, "false");
}
END_TEST

START_TEST(claim21_ftz)
{
	const char *rows[] = {
	    "row," QP("mxfp8:floor") ",1e-37,fast,ok,0.03,0,0,0,0",
	    "row," QP("{mxfp8:floor,ftz_scale=yes}") ",1e-37,fast,underflow,1,256,0,0,0",
	};
	qcsv("ftz_scale", "sd", rows, 2);
	verdict(21, "true");
	rows[1] = "row," QP("{mxfp8:floor,ftz_scale=yes}") ",1e-37,fast,ok,0.03,0,0,0,0";
	qcsv("ftz_scale", "sd", rows, 2);
	verdict(21, "false");
}
END_TEST

/* The whole file (nm_file_read), which must exist. */
/* ---- claims 9–16, 22, 23 ---- */

#define R9_HDR "case,kernel,variant,policy,g0,backend,status"
#define S9_HDR "case,kernel,variant,policy,g0,backend,output,index,value"

/* tdir/NAME.csv and NAME-series.csv: one stream (g0 = 1) of n steps, the
 * scale each step ran with and whether it was skipped. */
static void gs_series(const char *name, const double *scale, const int *skipped, size_t n)
{
	char row[200];
	snprintf(row, sizeof row, "%s,gradscaler,pytorch,storage=fp16,1,fast,ok", name);
	csv(name, R9_HDR, row, NULL);
	char p[256];
	snprintf(p, sizeof p, "%s/%s-series.csv", tdir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", S9_HDR);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s,gradscaler,pytorch,storage=fp16,1,fast,scale,%zu,%g\n", name, i,
		        scale[i]);
		fprintf(f, "%s,gradscaler,pytorch,storage=fp16,1,fast,skipped,%zu,%d\n", name, i,
		        skipped[i]);
		fprintf(f, "%s,gradscaler,pytorch,storage=fp16,1,fast,lost,%zu,%g\n", name, i,
		        scale[i] < 2048 ? 0.1 : 0);
	}
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(claim9_gradscaler)
{
	/* defaults: two start-up skips and a spike; conservative: the spike */
	static const double sd[6] = {65536, 32768, 16384, 16384, 8192, 16384};
	static const int kd[6] = {1, 1, 0, 1, 0, 0};
	static const double sc[6] = {2048, 2048, 2048, 2048, 1024, 2048};
	static const int kc[6] = {0, 0, 0, 1, 0, 0};
	static const int k0[6] = {0, 0, 0, 0, 0, 0};
	gs_series("gs_spikes_default", sd, kd, 6);
	gs_series("gs_spikes_conservative", sc, kc, 6);
	verdict(9, "partly");
	/* no spike: the conservative settings skip nothing */
	gs_series("gs_spikes_conservative", sc, k0, 6);
	verdict(9, "true");
	/* as many skips as the defaults */
	gs_series("gs_spikes_conservative", sd, kd, 6);
	verdict(9, "false");
}
END_TEST

#define R10_HDR "case,kernel,variant,policy,x,target,backend,status,first_op"

START_TEST(claim10_bce)
{
	csv("bce_float", R10_HDR, "bce_float,bce,naive,storage=fp16,100,0,fast,inf,log",
	    "bce_float,bce,naive,\"storage=fp16,compute=fp32\",100,0,fast,inf,log",
	    "bce_float,bce,stable,storage=fp16,100,0,fast,ok,", NULL);
	verdict(10, "partly");
	/* if .float() made the naive loss finite at 100 */
	csv("bce_float", R10_HDR, "bce_float,bce,naive,storage=fp16,100,0,fast,inf,log",
	    "bce_float,bce,naive,\"storage=fp16,compute=fp32\",100,0,fast,ok,", NULL);
	verdict(10, "true");
	/* if fp16 held up at 100 and fp32 did not */
	csv("bce_float", R10_HDR, "bce_float,bce,naive,storage=fp16,100,0,fast,ok,",
	    "bce_float,bce,naive,\"storage=fp16,compute=fp32\",100,0,fast,nan,log", NULL);
	verdict(10, "false");
}
END_TEST

#define R11_HDR "case,kernel,variant,policy,sd,backend,status,first_step,y.maxabs"

START_TEST(claim11_batchnorm)
{
	csv("bn_tiny_var", R11_HDR,
	    "bn_tiny_var,batchnorm,twopass,storage=fp16,0.0001,fast,ok,,0.1",
	    "bn_tiny_var,batchnorm,eval,storage=fp16,300,fast,inf,norm,65376", NULL);
	verdict(11, "partly");
	csv("bn_tiny_var", R11_HDR,
	    "bn_tiny_var,batchnorm,twopass,storage=fp16,0.0001,fast,inf,norm,0",
	    "bn_tiny_var,batchnorm,eval,storage=fp16,300,fast,inf,norm,65376", NULL);
	verdict(11, "true");
	csv("bn_tiny_var", R11_HDR,
	    "bn_tiny_var,batchnorm,twopass,storage=fp16,0.0001,fast,ok,,0.1",
	    "bn_tiny_var,batchnorm,eval,storage=fp16,300,fast,ok,,900", NULL);
	verdict(11, "false");
}
END_TEST

#define R12_HDR                                                                                    \
	"case,kernel,variant,policy,X,backend,status,w.rel_err,lost.maxabs,vzero.maxabs,"          \
	"nonfinite.maxabs"

START_TEST(claim12_o2)
{
	csv("o2_state", R12_HDR, "o2_state,optimizer,adamw,storage=fp32,0.001,fast,ok,1e-7,0,0,0",
	    "o2_state,optimizer,adamw,\"storage=fp32,state=fp16\",0.001,fast,inf,inf,0,1,40",
	    "o2_state,optimizer,adamw,\"storage=fp32,grad=fp16\",0.001,fast,ok,4e-5,0,0,0",
	    "o2_state,optimizer,adamw,\"storage=fp16,compute=fp32,state=fp32\",0.001,fast,ok,7e-4,"
	    "0.004,0,0",
	    NULL);
	verdict(12, "false");
	/* if the statement's placement gave O2's weights */
	csv("o2_state", R12_HDR, "o2_state,optimizer,adamw,storage=fp32,0.001,fast,ok,1e-7,0,0,0",
	    "o2_state,optimizer,adamw,\"storage=fp32,state=fp16\",0.001,fast,ok,4e-5,0,0,0",
	    "o2_state,optimizer,adamw,\"storage=fp32,grad=fp16\",0.001,fast,ok,4e-5,0,0,0",
	    "o2_state,optimizer,adamw,\"storage=fp16,compute=fp32,state=fp32\",0.001,fast,ok,7e-4,"
	    "0.004,0,0",
	    NULL);
	verdict(12, "true");
}
END_TEST

#define R13_HDR "case,kernel,variant,policy,S,backend,status,grad.maxabs"

START_TEST(claim13_scale)
{
	csv("scale_65536", R13_HDR, "scale_65536,accum,gradacc,storage=fp32,65536,fast,ok,65536",
	    "scale_65536,accum,gradacc,storage=fp16,65536,fast,inf,0", NULL);
	verdict(13, "partly");
	/* if 65536 were an fp16 value */
	csv("scale_65536", R13_HDR, "scale_65536,accum,gradacc,storage=fp32,65536,fast,ok,65536",
	    "scale_65536,accum,gradacc,storage=fp16,65536,fast,ok,65536", NULL);
	verdict(13, "true");
}
END_TEST

#define R14_HDR "case,kernel,variant,policy,X,backend,status,first_step,c.maxabs"

START_TEST(claim14_einsum)
{
	csv("einsum_fp16", R14_HDR,
	    "einsum_fp16,matmul,seq,\"storage=fp16,compute=fp32\",1,fast,ok,,150",
	    "einsum_fp16,matmul,seq,\"storage=fp16,compute=fp32\",32,fast,inf,store,64064", NULL);
	verdict(14, "partly");
	csv("einsum_fp16", R14_HDR,
	    "einsum_fp16,matmul,seq,\"storage=fp16,compute=fp32\",1,fast,ok,,150",
	    "einsum_fp16,matmul,seq,\"storage=fp16,compute=fp32\",32,fast,ok,,60000", NULL);
	verdict(14, "false");
	csv("einsum_fp16", R14_HDR,
	    "einsum_fp16,matmul,seq,\"storage=fp16,compute=fp32\",1,fast,inf,store,0",
	    "einsum_fp16,matmul,seq,\"storage=fp16,compute=fp32\",32,fast,inf,store,0", NULL);
	verdict(14, "true");
}
END_TEST

#define R15_HDR "case,kernel,variant,policy,L,backend,status"

START_TEST(claim15_recompute)
{
	csv("recompute_fp16", R15_HDR,
	    "recompute_fp16,softmax_ce,naive,\"storage=fp16,compute=fp32\",12,fast,ok",
	    "recompute_fp16,softmax_ce,naive,storage=fp16,12,fast,nan", NULL);
	verdict(15, "partly");
	csv("recompute_fp16", R15_HDR,
	    "recompute_fp16,softmax_ce,naive,\"storage=fp16,compute=fp32\",12,fast,ok",
	    "recompute_fp16,softmax_ce,naive,storage=fp16,12,fast,ok", NULL);
	verdict(15, "false");
}
END_TEST

#define R16_HDR "case,kernel,variant,policy,S,magnitude,backend,status,frac_lost,frac_overflow"

START_TEST(claim16_bf16)
{
	csv("bf16_unscaled", R16_HDR,
	    "bf16_unscaled,backward,maxsub,\"storage=fp16,compute=fp32\",1,1e-06,fast,underflow,0."
	    "09,0",
	    "bf16_unscaled,backward,maxsub,\"storage=fp16,compute=fp32\",65536,1e-06,fast,ok,0,0",
	    "bf16_unscaled,backward,maxsub,\"storage=bf16,compute=fp32\",1,1e-06,fast,ok,0,0",
	    NULL);
	verdict(16, "true");
	csv("bf16_unscaled", R16_HDR,
	    "bf16_unscaled,backward,maxsub,\"storage=fp16,compute=fp32\",1,1e-06,fast,underflow,0."
	    "09,0",
	    "bf16_unscaled,backward,maxsub,\"storage=fp16,compute=fp32\",65536,1e-06,fast,ok,0,0",
	    "bf16_unscaled,backward,maxsub,\"storage=bf16,compute=fp32\",1,1e-06,fast,underflow,0."
	    "1,0",
	    NULL);
	verdict(16, "false");
}
END_TEST

#define R22_HDR "case,kernel,variant,policy,rms,backend,status"

START_TEST(claim22_rmsnorm)
{
	csv("rmsnorm_256", R22_HDR, "rmsnorm_256,rmsnorm,plain,storage=fp16,64,fast,ok",
	    "rmsnorm_256,rmsnorm,plain,storage=fp16,256,fast,inf",
	    "rmsnorm_256,rmsnorm,plain,\"storage=fp16,accum=fp32\",64,fast,ok",
	    "rmsnorm_256,rmsnorm,plain,\"storage=fp16,accum=fp32\",256,fast,inf", NULL);
	verdict(22, "true");
	/* the fp16 accumulator fails four times earlier */
	csv("rmsnorm_256", R22_HDR, "rmsnorm_256,rmsnorm,plain,storage=fp16,64,fast,inf",
	    "rmsnorm_256,rmsnorm,plain,storage=fp16,256,fast,inf",
	    "rmsnorm_256,rmsnorm,plain,\"storage=fp16,accum=fp32\",64,fast,ok",
	    "rmsnorm_256,rmsnorm,plain,\"storage=fp16,accum=fp32\",256,fast,inf", NULL);
	verdict(22, "partly");
	csv("rmsnorm_256", R22_HDR, "rmsnorm_256,rmsnorm,plain,storage=fp16,256,fast,ok",
	    "rmsnorm_256,rmsnorm,plain,\"storage=fp16,accum=fp32\",256,fast,ok", NULL);
	verdict(22, "false");
}
END_TEST

#define R23_HDR "case,kernel,variant,policy,eps,backend,status,eps.maxabs,nonfinite.maxabs"

START_TEST(claim23_eps)
{
	csv("adam_eps", R23_HDR, "adam_eps,optimizer,adamw,storage=fp16,1e-08,fast,nan,0,256",
	    "adam_eps,optimizer,adamw,storage=fp16,1e-07,fast,ok,1.2e-7,0",
	    "adam_eps,optimizer,adamw,\"storage=fp16,compute=fp32\",1e-08,fast,nan,1e-8,256",
	    "adam_eps,optimizer,adamw,\"storage=fp16,compute=fp32\",1e-07,fast,ok,1e-7,0",
	    "adam_eps,optimizer,adamw,\"storage=fp32,state=fp16\",1e-08,fast,nan,1e-8,256",
	    "adam_eps,optimizer,adamw,\"storage=fp32,state=fp16\",1e-07,fast,ok,1e-7,0", NULL);
	verdict(23, "true");
	/* if fp32 opmath kept the step finite at 1e-8 */
	csv("adam_eps", R23_HDR, "adam_eps,optimizer,adamw,storage=fp16,1e-08,fast,nan,0,256",
	    "adam_eps,optimizer,adamw,storage=fp16,1e-07,fast,ok,1.2e-7,0",
	    "adam_eps,optimizer,adamw,\"storage=fp16,compute=fp32\",1e-08,fast,ok,1e-8,0",
	    "adam_eps,optimizer,adamw,\"storage=fp16,compute=fp32\",1e-07,fast,ok,1e-7,0",
	    "adam_eps,optimizer,adamw,\"storage=fp32,state=fp16\",1e-08,fast,ok,1e-8,0",
	    "adam_eps,optimizer,adamw,\"storage=fp32,state=fp16\",1e-07,fast,ok,1e-7,0", NULL);
	verdict(23, "partly");
}
END_TEST

#define R24_HDR "case,kernel,variant,policy,scale,backend,status,O.rel_err,L.rel_err"

START_TEST(claim24_online)
{
	csv("attn_online", R24_HDR, "attn_online,attention,naive,storage=fp16,1,fast,ok,1e-3,4e-4",
	    "attn_online,attention,online,storage=fp16,1,fast,ok,1.1e-3,4e-4",
	    "attn_online,attention,naive,storage=fp16,4096,fast,overflow,inf,inf",
	    "attn_online,attention,online,storage=fp16,4096,fast,overflow,inf,inf",
	    "attn_online,attention,naive,\"storage=bf16,compute=fp32\",1,fast,ok,6e-3,1e-3",
	    "attn_online,attention,online,\"storage=bf16,compute=fp32\",1,fast,ok,6e-3,1e-3", NULL);
	verdict(24, "true");
	/* online's L error twice naive's at one point */
	csv("attn_online", R24_HDR, "attn_online,attention,naive,storage=fp16,1,fast,ok,1e-3,4e-4",
	    "attn_online,attention,online,storage=fp16,1,fast,ok,1.1e-3,8e-4",
	    "attn_online,attention,naive,\"storage=bf16,compute=fp32\",1,fast,ok,6e-3,1e-3",
	    "attn_online,attention,online,\"storage=bf16,compute=fp32\",1,fast,ok,6e-3,1e-3", NULL);
	verdict(24, "partly");
	/* online overflowing where naive does not */
	csv("attn_online", R24_HDR, "attn_online,attention,naive,storage=fp16,1,fast,ok,1e-3,4e-4",
	    "attn_online,attention,online,storage=fp16,1,fast,overflow,inf,inf", NULL);
	verdict(24, "false");
}
END_TEST

#define R25_HDR "case,kernel,variant,policy,scale,p_scale,backend,status,p_lost.maxabs,O.rel_err"

START_TEST(claim25_p_scale)
{
	csv("fp8_p_scale", R25_HDR,
	    "fp8_p_scale,attention,fp8,\"storage=bf16,compute=fp32\",1,448,fast,ok,95,0.08",
	    "fp8_p_scale,attention,fp8,\"storage=bf16,compute=fp32\",1,7168,fast,nan,42,inf",
	    "fp8_p_scale,attention,fp8,\"storage=bf16,compute=fp32\",0.25,448,fast,ok,0,0.05",
	    NULL);
	verdict(25, "partly");
	/* so many flushed in one place that their mass reaches e4m3's rounding */
	csv("fp8_p_scale", R25_HDR,
	    "fp8_p_scale,attention,fp8,\"storage=bf16,compute=fp32\",1,448,fast,ok,40000,0.08",
	    NULL);
	verdict(25, "true");
	csv("fp8_p_scale", R25_HDR,
	    "fp8_p_scale,attention,fp8,\"storage=bf16,compute=fp32\",1,448,fast,ok,0,0.08",
	    "fp8_p_scale,attention,fp8,\"storage=bf16,compute=fp32\",1,7168,fast,nan,0,inf", NULL);
	verdict(25, "false");
}
END_TEST

static char *slurp(const char *path)
{
	char *s = nm_file_read(path, NULL);
	ck_assert_msg(s != NULL, "cannot read %s", path);
	return s;
}

START_TEST(write_report)
{
	csv("sum_stall", R7_HDR, "sum_stall,accum,sum:seq,storage=fp16,4096,fast,ok,nan,2048",
	    "sum_stall,accum,sum:seq,\"storage=fp16,accum=fp32\",33554432,fast,ok,nan,16777216", NULL);
	char md[300], err[512];
	snprintf(md, sizeof md, "%s/claims.md", tdir);
	ck_assert_msg(nm_claims_write(ptrs, NCASES, tdir, md, err, sizeof err) == 0, "%s", err);
	char *a = slurp(md);
	ck_assert_msg(strstr(a, "| 7 | Sums accumulated in FP16 stop growing; FP32 accumulation "
	                        "fixes it. | **partly** |"),
	              "%s", a);
	ck_assert_msg(strstr(a, "| 1 | FP16's dynamic range is about 6e-5 to 6.5e4. | **unsettled** |"),
	              "%s", a);
	ck_assert_msg(strstr(a, "stops at 2048") && strstr(a, "stops too, at 16777216"), "%s", a);
	/* claim 13: an infinite scaled loss is not "scaled loss 0" (maxabs is the
	 * largest finite value, 0 when the loss is inf) */
	csv("scale_65536", R13_HDR, "scale_65536,accum,gradacc,storage=fp32,65536,fast,ok,65536",
	    "scale_65536,accum,gradacc,storage=fp16,65536,fast,inf,0", NULL);
	ck_assert_msg(nm_claims_write(ptrs, NCASES, tdir, md, err, sizeof err) == 0, "%s", err);
	free(a);
	a = slurp(md);
	ck_assert_msg(strstr(a, "- S = 65536, `storage=fp16`: status inf, the scaled loss is not finite\n"),
	              "%s", a);
	ck_assert_msg(!strstr(a, "scaled loss 0"), "%s", a);
	ck_assert_msg(strstr(a, "- S = 65536, `storage=fp32`: status ok, scaled loss 65536\n"), "%s", a);
	ck_assert_msg(nm_claims_write(ptrs, NCASES, tdir, md, err, sizeof err) == 0, "%s", err);
	char *b = slurp(md);
	ck_assert_msg(strcmp(a, b) == 0, "a rewrite changed claims.md");
	free(a);
	free(b);
	/* an unwritable destination is an error naming it */
	ck_assert_int_eq(nm_claims_write(ptrs, NCASES, tdir, "/nonexistent/dir/claims.md", err,
	                                 sizeof err), -1);
	ck_assert_msg(strstr(err, "/nonexistent/dir/claims.md"), "%s", err);
}
END_TEST

START_TEST(bad_claim_keys)
{
	static const struct {
		const char *claim, *want;
	} rows[] = {
	    {"id = 26\n", ":14: key 'id': '26' is not a claim number 1..25"},
	    {"id = 2\nverdict = true\n", ":15: key 'verdict': unknown in [claim]"},
	    {"statement = x\n", ":14: key 'id': missing in [claim]"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		char p[300], err[512];
		snprintf(p, sizeof p, "%s/bad.case", tdir);
		FILE *f = fopen(p, "w");
		ck_assert_ptr_nonnull(f);
		fprintf(f, "[case]\nkernel = accum\nvariants = sum:seq\npolicy = storage=fp16\n"
		           "[input]\ngen = ones\nrows = 1\ncols = 1\nseed = 1\n"
		           "[axis n]\nsets = cols\ngrid = list 1 100\n[claim]\n%s",
		        rows[i].claim);
		fclose(f);
		nm_case c;
		ck_assert_msg(nm_case_load(p, &c, err, sizeof err) == 0, "row %zu: %s", i, err);
		int rc = nm_claims_check(&c, err, sizeof err);
		nm_case_free(&c);
		ck_assert_msg(rc == -1 && strstr(err, rows[i].want), "row %zu: want '%s', got '%s'", i,
		              rows[i].want, rc ? err : "no error");
	}
}
END_TEST

Suite *suite_claims(void)
{
	Suite *s = suite_create("claims");
	TCase *tc = tcase_create("claims");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, claim1_fp16_range);
	tcase_add_test(tc, claim2_scaled_loss);
	tcase_add_test(tc, claim3_ce);
	tcase_add_test(tc, claim4_layernorm);
	tcase_add_test(tc, claim5_gradacc);
	tcase_add_test(tc, claim6_bf16);
	tcase_add_test(tc, claim7_sum_stall);
	tcase_add_test(tc, claim8_fp8);
	tcase_add_test(tc, claim9_gradscaler);
	tcase_add_test(tc, claim10_bce);
	tcase_add_test(tc, claim11_batchnorm);
	tcase_add_test(tc, claim12_o2);
	tcase_add_test(tc, claim13_scale);
	tcase_add_test(tc, claim14_einsum);
	tcase_add_test(tc, claim15_recompute);
	tcase_add_test(tc, claim16_bf16);
	tcase_add_test(tc, claim17_mx_floor);
	tcase_add_test(tc, claim18_nvfp4_mxfp4);
	tcase_add_test(tc, claim19_rht);
	tcase_add_test(tc, claim20_sr);
	tcase_add_test(tc, claim21_ftz);
	tcase_add_test(tc, claim22_rmsnorm);
	tcase_add_test(tc, claim23_eps);
	tcase_add_test(tc, claim24_online);
	tcase_add_test(tc, claim25_p_scale);
	tcase_add_test(tc, write_report);
	tcase_add_test(tc, bad_claim_keys);
	suite_add_tcase(s, tc);
	return s;
}
