/*
 * gradscaler.h — a step-by-step, bit-exact simulation of PyTorch's dynamic
 * loss scaling (torch.amp.GradScaler). docs/gradscaler.md has the algorithm,
 * the PyTorch source lines it follows, and what the tests show.
 *
 * One step of the simulation is one training iteration:
 *   1. backward: every gradient element g_i (a double, the "true" gradient)
 *      is scaled, g_i·scale rounded once to fp32, then rounded into the
 *      gradient format (grad_format: fp32 by default; fp16/bf16 model a
 *      backward pass that runs in that format), then converted to the format
 *      of .grad (master_format, default: the same);
 *   2. unscale_: inv_scale = fp32(1/double(scale)); found_inf is set when a
 *      scaled element (the kernel's input) is inf or NaN; each element is
 *      multiplied by inv_scale in fp32 ("opmath") and stored back in .grad's
 *      format;
 *   3. step: skipped iff found_inf;
 *   4. update: _amp_update_scale_ (backoff, growth tracker, growth unless the
 *      grown scale is inf in fp32).
 * The scale is an fp32 scalar throughout, kept as its encoding; every
 * rounding goes through the emulator (RNE), so results are exact.
 */
#ifndef NANMAP_GRADSCALER_H
#define NANMAP_GRADSCALER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/emu.h"

typedef enum emu_gs_status {
	EMU_GS_OK = 0,
	EMU_GS_ERR_CONFIG, /* a setting PyTorch would reject (or that cannot run) */
	EMU_GS_ERR_IO,     /* a trajectory file could not be opened or read */
	EMU_GS_ERR_PARSE,  /* a trajectory file line is not a value >= 0, inf or nan */
	EMU_GS_ERR_NOMEM
} emu_gs_status;

/* GradScaler's settings, and how the simulated gradient looks. */
typedef struct emu_gs_config {
	double init_scale;               /* 65536 (2^16); stored as fp32(init_scale) */
	double growth_factor;            /* 2.0; must be > 1 (PyTorch asserts it) */
	double backoff_factor;           /* 0.5; must be < 1 (PyTorch asserts it) */
	int32_t growth_interval;         /* 2000; >= 1 here (PyTorch does not check) */
	const emu_format *grad_format;   /* the backward's gradients; NULL means fp32 */
	const emu_format *master_format; /* .grad as unscale_ reads and writes it; NULL
	                                    means grad_format (fp16 backward into fp32
	                                    master gradients: grad fp16, master fp32) */
	size_t n_elems;                  /* gradient elements per step, >= 1; 1: the max only */
	double spread;                   /* log2 spread of the elements below the max */
	uint64_t seed;                   /* draws of the elements below the max */
} emu_gs_config;

/* PyTorch's defaults; one gradient element (the largest), fp32 storage. */
void emu_gs_config_default(emu_gs_config *c);

/* Check c as PyTorch's constructor does (plus what the simulation needs).
 * On error writes a one-line reason into err. */
emu_gs_status emu_gs_config_check(const emu_gs_config *c, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The scaler's state between steps: what GradScaler keeps in _scale and
 * _growth_tracker. */
typedef struct emu_gs_state {
	emu_bits scale;  /* fp32 encoding */
	int32_t tracker; /* consecutive unskipped steps since the last growth/backoff */
	uint64_t step;   /* steps done so far */
} emu_gs_state;

/* What one step did. */
typedef struct emu_gs_step {
	uint64_t step;       /* 1-based */
	double gmax;         /* the trajectory's largest |gradient| for this step */
	emu_bits scale;      /* fp32 encoding of the scale this step ran with */
	emu_bits inv_scale;  /* fp32 encoding of fp32(1/double(scale)) */
	emu_bits scale_next; /* fp32 encoding after update() */
	int32_t tracker;     /* growth tracker after update() */
	bool found_inf;      /* a scaled gradient element was inf or NaN */
	bool skipped;        /* optimizer.step() skipped (== found_inf, one optimizer) */
	bool grew;           /* update() multiplied the scale by growth_factor */
	bool growth_refused; /* the tracker reached the interval but the grown scale was inf */
	size_t n_elems;      /* elements simulated */
	size_t n_underflow;  /* nonzero finite g_i whose scaled gradient is 0: lost in
	                        the backward pass, what loss scaling fights */
	size_t n_unscale_underflow;    /* scaled gradient nonzero, unscaled one 0: lost when
	                              unscale_ stores the true magnitude back */
	size_t n_overflow;             /* elements whose scaled gradient is inf or NaN */
	size_t n_undetected;           /* unscaled gradient inf/NaN although the scaled one was
	                                  finite: found_inf misses it (e.g. scale 0: 0·inf) */
	double frac_underflow;         /* n_underflow / n_elems */
	double frac_unscale_underflow; /* n_unscale_underflow / n_elems */
	double frac_overflow;          /* n_overflow / n_elems */
} emu_gs_step;

/* The state before the first step: scale = fp32(init_scale) (RNE), tracker 0.
 * c must have passed emu_gs_config_check. */
void emu_gs_init(const emu_gs_config *c, emu_gs_state *s);

/* Run one step whose largest |gradient| is gmax (>= 0, inf or NaN).
 * c must have passed emu_gs_config_check. */
emu_gs_step emu_gs_step_one(const emu_gs_config *c, emu_gs_state *s, double gmax);

/* From emu_gs_init, run nsteps steps with the largest |gradient| gmax[t]
 * and write out[t]. */
emu_gs_status emu_gs_simulate(const emu_gs_config *c, const double *gmax, size_t nsteps,
                              emu_gs_step *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The true gradient element i (0-based) of step (1-based) given the step's
 * largest |gradient|: element 0 is gmax, the others gmax·2^(-spread·|z|)
 * with z ~ N(0,1) and a random sign, drawn from (seed, step, i). */
double emu_gs_element(const emu_gs_config *c, uint64_t step, size_t i, double gmax);

/* update() alone (torch._amp_update_scale_): found_inf decides backoff or
 * growth. Sets *grew / *refused when not NULL. */
void emu_gs_update(const emu_gs_config *c, emu_gs_state *s, bool found_inf, bool *grew,
                   bool *refused);

/* fp32(x) as an encoding (RNE) and the value of an fp32 encoding. */
emu_bits emu_gs_fp32(double x);
double emu_gs_value(emu_bits scale);

/* ---- trajectories: the largest |gradient| of each step ---- */
typedef enum emu_gs_kind {
	EMU_GS_CONST = 0, /* g every step */
	EMU_GS_DRIFT,     /* log-normal random walk: g, then ·exp(sigma·N(0,1)) each step */
	EMU_GS_SPIKES,    /* g, and spike at steps first, first+period, ... (0-based) */
	EMU_GS_INF,       /* inf every step */
	EMU_GS_NKINDS
} emu_gs_kind;

typedef struct emu_gs_traj {
	emu_gs_kind kind;
	double g;        /* CONST value; DRIFT start; SPIKES base */
	double sigma;    /* DRIFT: standard deviation of the natural log per step */
	uint64_t seed;   /* DRIFT */
	double spike;    /* SPIKES: the value at a spike (inf and NaN allowed) */
	uint64_t first;  /* SPIKES: 0-based index of the first spike */
	uint64_t period; /* SPIKES: steps between spikes; 0: only the first */
} emu_gs_traj;

/* Fill out[0..n-1] with the trajectory. DRIFT depends on libm's exp, log,
 * cos and sqrt (the same on one platform); the simulation of a given
 * trajectory is exact everywhere. */
emu_gs_status emu_gs_traj_fill(const emu_gs_traj *t, double *out, size_t n, char *err,
                               size_t errlen) __attribute__((warn_unused_result));

/* Read a trajectory file: one value per line (a decimal or hex float >= 0,
 * inf or nan in any case); blank lines and lines starting with '#' are
 * skipped. *out is malloc'ed (free() it); errors name the file and line. */
emu_gs_status emu_gs_traj_read(const char *path, double **out, size_t *n, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
