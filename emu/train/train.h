/*
 * train.h — whole training runs on the kernel engine: a small GPT-2
 * (docs/train.md gives every tensor, operation and order), AdamW with
 * warm-up, cosine decay and clipping, gradient accumulation, PyTorch's
 * GradScaler, in any training policy (a format for each tensor role), on the
 * fast or the exact backend, bit for bit reproducible from the seed.
 *
 * Every operation of a step runs through kern.h's maps and folds under a
 * step id named "BLOCK.KERNEL.STEP" (layer1.attn.exp), so a run counts the
 * flags of every site and names the first operation that raised overflow,
 * invalid or divbyzero: step, micro-batch, layer, kernel, operation, element.
 */
#ifndef NANMAP_TRAIN_H
#define NANMAP_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/engine/kern.h"
#include "emu/engine/kernels.h"
#include "emu/kernels/gradscaler.h"
#include "emu/kernels/tcscaled.h"

/* The tensor roles a training policy gives a format (docs/train.md). */
typedef enum {
	EMU_TR_MASTER = 0, /* parameters as the optimizer holds them, and .grad */
	EMU_TR_STATE,      /* AdamW's m and v, and its arithmetic */
	EMU_TR_GEMM,       /* every GEMM's operands and output (forward, dgrad, wgrad) */
	EMU_TR_ACCUM,      /* the GEMMs' accumulation */
	EMU_TR_ACT,        /* activations between kernels: residual stream, norm and GELU outputs */
	EMU_TR_COMPUTE,    /* elementwise work: norms, softmax, GELU, attention's scores */
	EMU_TR_REDUCE,     /* the sums of norms and softmax */
	EMU_TR_GRAD,       /* activation gradients between kernels */
	EMU_TR_LOSS,       /* softmax cross-entropy and its gradient */
	EMU_TR_NROLES
} emu_train_role;

typedef struct {
	char name[48];
	emu_format f[EMU_TR_NROLES];
	bool scaler; /* dynamic loss scaling (GradScaler) */
	/* the blocks' linear layers (qkv, proj, fc, fcproj) quantised by a
	 * scaling recipe and multiplied by a Tensor Core model: forward
	 * x (act) · Wᵀ (weight), dgrad dy (grad) · W (weight), wgrad dyᵀ (grad)
	 * · x (act), every operand blocked along the contraction; the output
	 * in gemm. The logits GEMM and attention's products stay in gemm. */
	bool scaled;
	emu_recipe recipe;
	emu_gemm_model model;
	/* Transformer Engine's HYBRID format: the gradients' copies (dgrad's
	 * and wgrad's dy) quantised to e5m2, the forward's to the recipe's
	 * element (e4m3), so dgrad and wgrad multiply e5m2 by e4m3 */
	bool hybrid;
	/* a delayed-scaling recipe (rule delayed): each operand of each scaled
	 * GEMM keeps the amax of its last recipe.delayed_len calls, and its
	 * scale is fmax·2^-margin over their largest (1 before the first) */
} emu_train_policy;

const char *emu_train_role_name(emu_train_role r);
/* A preset by name: fp32 bf16 fp16-amp fp16-pure bf16-pure fp8-current
 * fp8-delayed mxfp8 nvfp4. 0, or -1 with a
 * reason naming the presets. */
int emu_train_policy_preset(const char *name, emu_train_policy *p, char *err, size_t errlen);
/* "PRESET[+ROLE=FORMAT...]" (':' separates as well as '+'): a preset and
 * overrides, the form a policy's name is printed in. 0 or -1. */
int emu_train_policy_parse(const char *spec, emu_train_policy *p, char *err, size_t errlen);
/* Apply "ROLE=FORMAT" (FORMAT a name or a custom spec) to p. 0 or -1. */
int emu_train_policy_set(emu_train_policy *p, const char *item, char *err, size_t errlen);
/* The preset names, NULL-terminated. */
extern const char *const emu_train_presets[];

typedef enum {
	EMU_TASK_COPY = 0,
	EMU_TASK_REVERSE,
	EMU_TASK_SORT,
	EMU_TASK_MODADD,
	EMU_TASK_TEXT
} emu_train_task;

typedef enum {
	EMU_ARCH_GPT2 = 0, /* LayerNorm, GELU MLP, biases, tied head */
	EMU_ARCH_LLAMA     /* RMSNorm, SwiGLU MLP, no biases, untied head */
} emu_train_arch;

typedef struct {
	/* model */
	emu_train_arch arch;
	size_t layers, d, heads, seq, vocab, batch;
	size_t ffn; /* the MLP's hidden width; 0: emu_train_ffn's default */
	double ln_eps;
	/* data */
	emu_train_task task;
	const unsigned char *text; /* EMU_TASK_TEXT: the bytes (not owned) */
	size_t text_len;
	uint64_t seed;
	/* optimisation */
	size_t steps, micro; /* micro-batches per step */
	bool divide_loss;    /* each micro-batch's loss divided by micro */
	double lr, min_lr, wd, beta1, beta2, eps, clip; /* clip 0: none */
	size_t warmup;
	emu_gs_config gs; /* used when the policy's scaler is on */
	/* validation every val_every steps (0: never), val_batches batches */
	size_t val_every, val_batches;
	/* fault injection: at step spike_step (1-based; 0 none) the logits of
	 * that step's first micro-batch are multiplied by spike_factor */
	size_t spike_step;
	double spike_factor;
	/* and the learning rate of step lr_spike_step multiplied by lr_spike */
	size_t lr_spike_step;
	double lr_spike;
	/* a near-constant batch: at step flat_step (0 none) each position's
	 * embedding output of the first micro-batch is pulled towards its mean
	 * over the features until its variance is flat_var (computed in
	 * binary64, then stored in act): the tiny-variance input of LayerNorm */
	size_t flat_step;
	double flat_var;
	/* the loss weighted by loss_weight before backward (as a loss term's
	 * weight, or any constant factor, scales every gradient): 1 */
	double loss_weight;
	emu_train_policy pol;
	emu_be_kind backend; /* EMU_BE_FAST or EMU_BE_EXACT */
} emu_train_cfg;

/* Defaults: 2 layers, d 32, 2 heads, seq 16, vocab 16, batch 4, copy task,
 * 100 steps, lr 1e-3 with 10 warm-up steps and cosine to 0.1·lr, wd 0.1,
 * betas 0.9 0.95, eps 1e-8, clip 1, policy fp32, fast backend. */
void emu_train_cfg_default(emu_train_cfg *c);
/* The MLP's hidden width: c->ffn, else 4·d (gpt2) or 8·d/3 rounded up to a
 * multiple of 8 (llama's SwiGLU, the same parameter count as 4·d with two
 * matrices in). */
size_t emu_train_ffn(const emu_train_cfg *c);
const char *emu_train_arch_name(emu_train_arch a);
/* Check sizes and settings; 0, or -1 with one line in err. */
int emu_train_cfg_check(const emu_train_cfg *c, char *err, size_t errlen);

/* Per layer (index 0 the embedding, 1..L the blocks, L+1 the head: final
 * norm, logits, loss) and direction (0 forward, 1 backward): operations and
 * how many raised overflow, underflow, invalid; the largest |value| and the
 * number of NaN and infinite values among the block's outputs (forward: its
 * output tensors; backward: the gradients it produced). */
typedef struct {
	uint64_t ops, overflow, underflow, invalid;
	double amax;
	uint64_t nan, inf;
} emu_train_lstat;

typedef struct {
	uint64_t step;    /* 1-based */
	double loss;      /* mean over the step's micro-batches, of the losses as computed */
	double val_loss;  /* NaN when not computed this step */
	double grad_norm; /* global norm of the unscaled gradients, before clipping */
	double lr;
	double scale; /* the loss scale this step ran with (1 without a scaler) */
	bool skipped; /* the optimizer step was skipped (GradScaler found inf/NaN) */
	uint64_t overflow, underflow, invalid; /* over every operation of the step */
	uint64_t nonfinite_params;             /* parameters inf or NaN after the step */
} emu_train_row;

/* The first operation of the run that raised overflow, invalid or
 * divbyzero, and the first tensor that held a NaN or an infinity. */
typedef struct {
	bool set;
	uint64_t step;
	unsigned micro;
	char site[64]; /* BLOCK.KERNEL.STEP */
	const char *op;
	uint64_t element;
	unsigned flags;
	char param[48];     /* an optimizer site's element as a parameter: "wte[80]" */
	bool nonfinite_set; /* the first tensor of the run holding inf or NaN */
	uint64_t nonfinite_step;
	char nonfinite_tensor[64];
	uint64_t nonfinite_index;
	double nonfinite_value;
	bool loss_nonfinite; /* the step's loss was inf or NaN */
	char chain[512];     /* "layer1.attn.exp overflow -> layer1.attn.out inf -> loss nan" */
} emu_train_fail;

typedef struct emu_train emu_train;

/* A model initialised from cfg (copied; text must outlive the trainer).
 * NULL with a reason in err. */
emu_train *emu_train_new(const emu_train_cfg *cfg, char *err, size_t errlen);
void emu_train_free(emu_train *t);
size_t emu_train_nparams(const emu_train *t);
/* One optimizer step (all micro-batches); row filled. 0, or -1 out of memory. */
int emu_train_step(emu_train *t, emu_train_row *row);
/* The layer statistics of the last step: (layers + 2) × 2 entries,
 * [layer·2 + direction]. */
const emu_train_lstat *emu_train_lstats(const emu_train *t, size_t *n);
const emu_train_fail *emu_train_first_fail(const emu_train *t);
/* The loss of one batch on the current parameters (no update): batch k of
 * the training (val false) or validation stream. */
double emu_train_eval(emu_train *t, bool val, uint64_t k);

/* Parameters (master format values), their gradients of the last step
 * (master format, as AdamW read them: unscaled and clipped) and names:
 * tensor i of n. */
size_t emu_train_ntensors(const emu_train *t);
const char *emu_train_tensor(const emu_train *t, size_t i, double **values, double **grads,
                             size_t *count);
/* Gradients of the loss of batch 0 of the training stream on the current
 * parameters, scaled by 1 (no scaler), without an update: into
 * emu_train_tensor's grads. Returns the loss. */
double emu_train_grad(emu_train *t);

/* The tokens of batch k of the training (val false) or validation stream:
 * inputs and targets, batch × seq each. */
void emu_train_batch(emu_train *t, bool val, uint64_t k, int *inputs, int *targets);

/* A whole training run as a kernel of emu/engine/kernels.h (the sweeps'
 * points, docs/train.md): the variant names the preset, the parameters the
 * model and run; outputs loss, skipped and scale, one value a step. Kept out
 * of the registry (the kernels' proofs iterate over it): emu/sweep looks it
 * up by name. */
extern const emu_kernel emu_kernel_train;

/* ---- checkpoints (.safetensors, docs/train.md lists the tensors) ---- */
/* Parameters, AdamW's m and v (F64: every format's values exactly), the
 * step, AdamW's step count, the scaler's state and the model's settings;
 * written atomically. 0, or -1 with "PATH: reason" in err. */
int emu_train_save(const emu_train *t, const char *path, char *err, size_t errlen);
/* Continue from a checkpoint: the model, data and policy must be this
 * run's (one line naming the difference otherwise). 0 or -1. */
int emu_train_load(emu_train *t, const char *path, char *err, size_t errlen);
/* Take src's state (a run of the same model, data and seed under any
 * policy or backend): parameters, AdamW's m and v, the step counts, and
 * the scaler's state where both run one; each value rounded to t's master
 * or state format (*changed: how many values that changed). The first
 * failure is cleared: t's next step is a replay of src's. 0, or -1 with a
 * reason when the models differ. */
int emu_train_adopt(emu_train *t, const emu_train *src, size_t *changed, char *err, size_t errlen);
/* Do a[0..n) and b[0..n) hold the same bits (NaN payloads and signs of
 * zero included)? */
bool emu_train_same_bits(const double *a, const double *b, size_t n);
/* Steps done so far. */
uint64_t emu_train_steps_done(const emu_train *t);
/* Write DIR/init.safetensors (the parameters now) and DIR/grad.safetensors
 * (batch 0's inputs, targets, loss and the gradients emu_train_grad gives):
 * what another framework checks its forward and backward against. */
int emu_train_dump(emu_train *t, const char *dir, char *err, size_t errlen);

/* A golden run (docs/train.md, golden/train/): the model of cfg trained
 * cfg->steps steps, written to one .safetensors file: init.NAME (the
 * parameters before step 1), and per step s stepS.inputs and stepS.targets
 * (I64, micro × batch × seq), stepS.loss, stepS.grad_norm, stepS.scale,
 * stepS.skipped (F64, one each), stepS.grad.NAME (the gradients as AdamW
 * read them: unscaled, clipped) and stepS.NAME (the parameters after it).
 * 0, or -1 with a reason. */
int emu_train_golden(const emu_train_cfg *cfg, const char *path, char *err, size_t errlen);
/* The golden runs' model: arch, 1 layer, d 8, 2 heads, seq 4, vocab 6,
 * batch 2, 3 steps, lr 1e-2 after 1 warm-up step, seed 1, the preset's
 * policy. 0, or -1 for an unknown preset. */
int emu_train_golden_cfg(emu_train_cfg *c, const char *preset, emu_train_arch arch, char *err,
                         size_t errlen);

#endif
