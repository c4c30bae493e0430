// model.h: the GPT: its dimensions, its parameters and activations (named views into one buffer
// each, laid out by kernels/model_layout.c), the forward and backward passes and their layers.
// model.c is the definition; kernels/model_engine.c computes the same function fast (the tests
// prove them equal) and is what trains unless model.impl says "definition".
#ifndef MODEL_H
#define MODEL_H

#include "attention.h"
#include "base/common.h"
#include "base/config.h"
#include "base/rng.h"

typedef struct {
    int vocab_size;  // V
    int block_size;  // maximum sequence length, T_max
    int n_layer;     // L
    int n_head;      // NH
    int n_embd;      // C
    int qk_norm;     // QkNorm (attention.h): QK_NORM_NONE, or the norm of queries and keys with its
                     // parameters
} ModelDims;

enum { INIT_GPT2 = 0, INIT_FAN_IN = 1 };

// How a parameter tensor starts (gpt_init): LayerNorm gains 1 and biases 0; the matrices drawn
// from a normal, the residual projections (wo, w_proj) scaled down under GPT-2's init and the
// embeddings scaled by their width under fan_in.
typedef enum { PINIT_ONES, PINIT_ZEROS, PINIT_EMBEDDING, PINIT_MATRIX, PINIT_RESIDUAL } ParamInit;

// A named view into the parameter buffer, in checkpoint order; model.c's parameter table
// (PARAMS_*) is the one place that lists them.
#define TENSOR_NAME_MAX 32
typedef struct {
    char name[TENSOR_NAME_MAX];  // e.g. "wte", "layer0.wq"
    int ndim;                    // 1 or 2; AdamW decays the 2-D ones (the matrices)
    int shape[2];
    size_t offset;  // into the parameter buffer, in reals
    size_t size;    // element count
    ParamInit init;
    int grad_summed;  // its gradient is a sum over rows, cleared before each backward
} TensorInfo;

// Views of one layer's parameters. Linear weights are stored (in, out): y = x W.
typedef struct {
    real *ln1_w, *ln1_b;  // (C), (C)
    real *wq, *wk, *wv;   // (C, C) each: queries, keys, values
    real *wo;             // (C, C) attention output projection
    real *ln2_w, *ln2_b;  // (C), (C)
    real *w_fc;           // (C, 4C)
    real *w_proj;         // (4C, C)
    // QK-norm's gains and biases (hd) each, shared by the heads; NULL without QK-norm (and the
    // biases NULL under RMSNorm)
    real *q_norm_w, *q_norm_b, *k_norm_w, *k_norm_b;
} LayerParams;

typedef struct {
    real *wte;            // (V, C) token embedding, also the LM head (tied)
    real *wpe;            // (T_max, C) position embedding
    LayerParams *layers;  // (L)
    real *lnf_w, *lnf_b;  // (C), (C)
} ParamViews;

// Activations of one layer for a batch (B,T); all views into one buffer.
typedef struct {
    real *ln1, *ln1_mean, *ln1_rstd;  // (B,T,C), (B,T), (B,T)
    real *q, *k, *v;  // (B,T,C) each: the queries and keys attention sees (after QK-norm)
    // with QK-norm only (else NULL): the projections before it (B,T,C) and each head row's mean
    // and rstd (B,T,NH)
    real *q_in, *k_in, *q_mean, *q_rstd, *k_mean, *k_rstd;
    real *att;   // what attention keeps for the backward: the engine's max and
                 // 1/sum of each row (B,NH,T,2), or the definition's P (B,NH,T,T)
    real *atty;  // (B,T,C) P V, before Wo
    real *res2;  // (B,T,C) residual after attention
    real *ln2, *ln2_mean, *ln2_rstd;  // (B,T,C), (B,T), (B,T)
    real *fch;       // (B,T,4C) x = ln2 W_fc; the engine keeps GELU'(x) here instead
    real *fch_gelu;  // (B,T,4C) GELU(ln2 W_fc)
    real *res3;      // (B,T,C) residual after the MLP = the layer's output
} LayerActs;

typedef struct {
    real *encoded;  // (B,T,C) token + position embedding
    LayerActs *layers;
    real *lnf, *lnf_mean, *lnf_rstd;  // (B,T,C), (B,T), (B,T)
    real *logits;                     // (B,T,V) logits, then probabilities after the loss
    real *losses;                     // (B,T)
    real *lse, *logit_max;  // (B,T) each row's log Z = log sum_v exp(logit_v) and largest logit
                            // (with targets)
} Acts;

// Gradients of activations (only what backward needs; same shapes as Acts).
typedef struct {
    real *residual;               // (B,T,C) gradient flowing down the residual stream
    real *ln, *q, *k, *v, *atty;  // (B,T,C)
    real *fch;     // (B,T,4C) dL/d GELU(ln2 W_fc), turned into dL/d(ln2 W_fc) in place
    real *logits;  // (B,T,V)
} GradActs;

// Which code computes a GPT's passes: the engine (kernels/model_engine.c) or the definition
// (model.c).
typedef enum { MODEL_ENGINE = 0, MODEL_DEFINITION = 1 } ModelImpl;

typedef struct GPT {
    ModelDims dims;
    ModelImpl impl;                  // model.impl
    AttnSpec attn;                   // the scale of Q K^T, the mask and the softmax axis
    const AttentionImpl *attn_impl;  // the engine (attention_engine) unless set otherwise
    const AttentionImpl
        *pass_attn;  // what the last forward ran (attention_for_pass), its backward too
    int head_dim;

    size_t n_params;
    real *params, *grads;   // (n_params) each
    real *adam_m, *adam_v;  // AdamW moments (n_params) each
    ParamViews p, g;        // named views into params and grads
    int n_tensors;
    TensorInfo *tensors;

    int B, T;  // activation capacity (batch, sequence)
    // The buffers of a pass, allocated by the first pass that needs them and grown when a pass
    // needs more (reals held in each): a model whose batch workers compute never holds them.
    real *act_memory, *gact_memory, *saved_memory;
    size_t act_reals, gact_reals, saved_reals, scratch_reals, row_gain_reals;
    Acts acts;
    GradActs gacts;
    real *attn_scratch;     // per-thread scratch of the attention that runs
    int keep_weights;       // a forward keeps the weights P in acts.layers[l].att (the maps)
    int *inputs, *targets;  // (B,T) of the last forward
    // Attention knockout (teach/explain.c): NULL, or (L, B, NH, T) for the shape of the next
    // forward: layer l's AttnSpec.knockout (one key removed per row, -1 none); passes with it set
    // run the definition.
    const int *attn_knockout;
    int cur_B, cur_T;  // shape of the last forward

    // z-loss (train.z_loss): the backward adds the gradient of z_loss * mean(log(Z)^2) over the
    // rows; 0 leaves the loss alone. A forward with targets sets the statistics of its logits:
    // the mean of log Z, its mean square, and the largest logit (see gpt_logit_stats).
    double z_loss;
    double lse_mean, lse_sq_mean, max_logit;

    // Attention statistics: when collect_stats is set, forward/backward fill attn_stats (L*NH)
    // and row_gain (L, B, NH, T).
    int collect_stats;
    AttnStats *attn_stats;
    real *row_gain;

    // Batch-parallel training (run/workers.c): one worker per thread,
    // each a GPT that shares these parameters but owns its gradients and activations for its
    // share of the rows.
    struct GPT *workers;
    int n_workers;
    int split_B;        // rows the last forward split between the workers (0: none)
    int shares_params;  // set in a worker: params belong to the master
} GPT;

// Bytes a model of these dimensions allocates to train a batch (B,T) with the engine (its
// parameters, gradients and moments, activations and their gradients; nothing T x T), or 0 when
// the size overflows size_t. Checked before allocating so absurd configs are refused with the size.
size_t gpt_memory_bytes(const ModelDims *d, int B, int T, size_t *n_params_out);
// What attention computes and which implementation runs it: the spec (the scale of Q K^T, the
// mask, the softmax axis, the window) and the implementation that trains (the engine or the
// definition).
typedef struct {
    AttnSpec spec;
    const AttentionImpl *impl;
    ModelImpl model;  // and the code that computes the rest of the model (model.impl)
} AttnSetup;
// The setup of a finalized configuration, turned here only: the scale config_finalize resolved,
// model.attn_mask, model.softmax_axis, model.attn_window, model.attn_impl and model.impl.
AttnSetup attention_setup(const Config *cfg);
// The correct model's attention with this scale (causal mask, softmax over keys, no window),
// computed by the engines.
AttnSetup attention_causal(real scale);
// The QkNorm of a model.qk_norm name ("none", "layernorm", "rmsnorm"; config_finalize checked it),
// and the name of a QkNorm (the key table's).
int gpt_qk_norm_kind(const char *name);
const char *gpt_qk_norm_name(int kind);
// The dimensions a finalized configuration gives a model of a vocabulary of vocab_size tokens.
ModelDims gpt_dims(const Config *cfg, int vocab_size);
// Copy src's parameters into dst tensor by tensor, matched by name (the models may differ in
// their QK-norm tensors, which keep dst's values where src has none).
void gpt_copy_params(GPT *dst, const GPT *src);
// Allocate everything for dims, attention as attn and a batch capacity (B,T). Parameters are
// zero until gpt_init. attn is the model's for its life: which attention it computes (attn.spec)
// and which implementation trains it (attn.impl); passes that collect statistics, and specs the
// implementation does not support, run the definition (gpt_attention_falls_back).
void gpt_build(GPT *m, const ModelDims *d, AttnSetup attn, int B, int T);
// A batch worker of m (run/workers.c) with room for B rows of T: m's parameters (shared, not
// copied) and attention, its own gradients and activations, no optimizer state.
void gpt_build_worker(GPT *w, const GPT *m, int B, int T);
// Whether the attention of a pass over the model runs the definition because the chosen
// implementation does not compute its spec (the engine computes the causal softmax over keys).
int gpt_attention_falls_back(const GPT *m);
void gpt_free(GPT *m);
// Draw the initial parameters from rng, tensor by tensor in checkpoint order.
void gpt_init(GPT *m, int init_scheme, Rng *rng);

// Forward over inputs (B,T) with B <= m->B, T <= m->T. With targets, returns the mean
// cross-entropy over all B*T positions (and leaves probabilities in acts.logits, log Z in
// acts.lse and the logits' statistics in lse_mean, lse_sq_mean, max_logit); without (targets
// NULL), returns 0 and leaves logits. The z-loss is not in the returned loss: the objective the
// backward differentiates is that loss plus m->z_loss * m->lse_sq_mean.
double gpt_forward(GPT *m, const int *inputs, const int *targets, int B, int T);
// Zero the parameter gradients.
void gpt_zero_grad(GPT *m);
// Set the z-loss coefficient of the model and its batch workers.
void gpt_set_z_loss(GPT *m, double z_loss);
// Backward of the last forward (which must have had targets): overwrites m->grads with the
// gradient of its mean loss (nothing is accumulated across calls; no gpt_zero_grad needed).
void gpt_backward(GPT *m);
// Backward of the last forward (with targets) for the loss -log p(target) of one row (b*T + t)
// alone: m->grads receives its gradient, and m->gacts.residual its gradient with respect to the
// input embeddings acts.encoded (B,T,C).
void gpt_backward_row(GPT *m, int row);
// Index of a tensor by name, or -1.
int gpt_find_tensor(const GPT *m, const char *name);
// The tensor list (names, shapes, offsets, in checkpoint order) of a model of dims d, without
// building one: *out (malloc'd) receives the entries; returns their count, 0 when the sizes
// overflow (then *out is NULL).
int gpt_tensor_table(const ModelDims *d, TensorInfo **out);

// The attention layer l of the last forward computed: the model's, with its knockouts.
AttnSpec gpt_layer_spec(const GPT *m, int l);
// The mean of the last forward's losses over its N rows; sets lse_mean, lse_sq_mean, max_logit.
double gpt_mean_loss(GPT *m, int N);

// ---- the layers (model.c; shapes as there) ----
void encoder_forward(real *out, const int *inp, const real *wte, const real *wpe, int B, int T,
                     int C);
void encoder_backward(real *dwte, real *dwpe, const real *dout, const int *inp, int B, int T,
                      int C);
void layernorm_forward(real *out, real *mean, real *rstd, const real *inp, const real *w,
                       const real *b, int N, int C);
void layernorm_backward(real *dinp, real *dw, real *db, const real *dout, const real *inp,
                        const real *w, const real *mean, const real *rstd, int N, int C);
void matmul_forward(real *out, const real *inp, const real *weight, int N, int C, int OC);
void matmul_backward(real *dinp, real *dweight, const real *dout, const real *inp,
                     const real *weight, int N, int C, int OC);
void lm_head_forward(real *logits, const real *inp, const real *wte, int N, int C, int V);
void lm_head_backward(real *dinp, real *dwte, const real *dlogits, const real *inp, const real *wte,
                      int N, int C, int V);
void gelu_forward(real *out, const real *inp, size_t n);
void gelu_backward(real *dinp, const real *inp, const real *dout, size_t n);
void residual_forward(real *out, const real *a, const real *b, size_t n);
void crossentropy_forward(real *logits, real *losses, real *lse, real *rowmax, const int *targets,
                          int N, int V);
void crossentropy_backward(real *dlogits, const real *probs, const int *targets, int N, int V);
void zloss_backward(real *dlogits, const real *probs, const real *lse, double z, int N, int V);

#endif
