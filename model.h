// model.h: the GPT. One contiguous parameter buffer with named views (so a checkpoint is one
// write), one activation buffer, forward/backward, cross-entropy, AdamW.
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
} ModelDims;

enum { INIT_GPT2 = 0, INIT_FAN_IN = 1 };
// Phases of a training step, for the benchmark's breakdown.
enum { PHASE_MATMUL_FWD, PHASE_MATMUL_BWD, PHASE_ATTENTION, PHASE_OTHER, PHASE_OPTIMIZER, PHASE_COUNT, PHASE_NONE = -1 };

// How a parameter tensor starts (gpt_init): LayerNorm gains 1 and biases 0; the matrices drawn
// from a normal, the residual projections (wo, w_proj) scaled down under GPT-2's init and the
// embeddings scaled by their width under fan_in.
typedef enum { PINIT_ONES, PINIT_ZEROS, PINIT_EMBEDDING, PINIT_MATRIX, PINIT_RESIDUAL } ParamInit;

// A named view into the parameter buffer, in checkpoint order; model.c's parameter table
// (PARAMS_*) is the one place that lists them.
#define TENSOR_NAME_MAX 32
typedef struct {
    char name[TENSOR_NAME_MAX];   // e.g. "wte", "layer0.wq"
    int ndim;                     // 1 or 2; AdamW decays the 2-D ones (the matrices)
    int shape[2];
    size_t offset;                // into the parameter buffer, in reals
    size_t size;                  // element count
    ParamInit init;
    int grad_summed;              // its gradient is a sum over rows, cleared before each backward
} TensorInfo;

// Views of one layer's parameters. Linear weights are stored (in, out): y = x W.
typedef struct {
    real *ln1_w, *ln1_b;          // (C), (C)
    real *wq, *wk, *wv;           // (C, C) each: queries, keys, values
    real *wo;                     // (C, C) attention output projection
    real *ln2_w, *ln2_b;          // (C), (C)
    real *w_fc;                   // (C, 4C)
    real *w_proj;                 // (4C, C)
} LayerParams;

typedef struct {
    real *wte;                    // (V, C) token embedding, also the LM head (tied)
    real *wpe;                    // (T_max, C) position embedding
    LayerParams *layers;          // (L)
    real *lnf_w, *lnf_b;          // (C), (C)
} ParamViews;

// Activations of one layer for a batch (B,T); all views into one buffer.
typedef struct {
    real *ln1, *ln1_mean, *ln1_rstd;  // (B,T,C), (B,T), (B,T)
    real *q, *k, *v;                  // (B,T,C) each
    real *att;                        // what attention keeps for the backward: the engine's max and
                                      // 1/sum of each row (B,NH,T,2), or the definition's P (B,NH,T,T)
    real *atty;                       // (B,T,C) P V, before Wo
    real *res2;                       // (B,T,C) residual after attention
    real *ln2, *ln2_mean, *ln2_rstd;  // (B,T,C), (B,T), (B,T)
    real *fc_dgelu;                   // (B,T,4C) the MLP's ln2 W_fc, then GELU' of it (all backward needs)
    real *fch_gelu;                   // (B,T,4C) GELU(ln2 W_fc)
    real *res3;                       // (B,T,C) residual after the MLP = the layer's output
} LayerActs;

typedef struct {
    real *encoded;                    // (B,T,C) token + position embedding
    LayerActs *layers;
    real *lnf, *lnf_mean, *lnf_rstd;  // (B,T,C), (B,T), (B,T)
    real *logits;                     // (B,T,V) logits, then probabilities after the loss
    real *losses;                     // (B,T)
} Acts;

// Gradients of activations (only what backward needs; same shapes as Acts).
typedef struct {
    real *residual;                   // (B,T,C) gradient flowing down the residual stream
    real *ln, *q, *k, *v, *atty;      // (B,T,C)
    real *fch;                        // (B,T,4C) dL/d GELU(ln2 W_fc), turned into dL/d(ln2 W_fc) in place
    real *logits;                     // (B,T,V)
} GradActs;

typedef struct GPT {
    ModelDims dims;
    AttnSpec attn;                    // the scale of Q K^T, the mask and the softmax axis
    const AttentionImpl *attn_impl;   // the engine (attention_engine) unless set otherwise
    const AttentionImpl *pass_attn;   // what the last forward ran (attention_for_pass), its backward too
    int head_dim;

    size_t n_params;
    real *params, *grads;             // (n_params) each
    real *adam_m, *adam_v;            // AdamW moments (n_params) each
    ParamViews p, g;                  // named views into params and grads
    int n_tensors;
    TensorInfo *tensors;

    int B, T;                         // activation capacity (batch, sequence)
    // The buffers of a pass, allocated by the first pass that needs them and grown when a pass
    // needs more (reals held in each): a model whose batch workers compute never holds them.
    real *act_memory, *gact_memory, *saved_memory;
    size_t act_reals, gact_reals, saved_reals, scratch_reals, row_gain_reals;
    Acts acts;
    GradActs gacts;
    real *attn_scratch;               // per-thread scratch of the attention that runs
    int keep_weights;                 // a forward keeps the weights P in acts.layers[l].att (the maps)
    int *inputs, *targets;            // (B,T) of the last forward
    // Attention knockout (teach/explain.c): NULL, or (L, B, NH, T) for the shape of the next
    // forward: layer l's AttnSpec.knockout (one key removed per row, -1 none); passes with it set
    // run the definition.
    const int *attn_knockout;
    int cur_B, cur_T;                 // shape of the last forward

    // Attention statistics: when collect_stats is set, forward/backward fill attn_stats (L*NH)
    // and row_gain (L, B, NH, T).
    int collect_stats;
    AttnStats *attn_stats;
    real *row_gain;

    // Optional per-phase wall-clock accounting (for --bench): seconds spent in each phase.
    int profile;
    int phase_current;
    double phase_start;
    double phase_seconds[PHASE_COUNT];

    // Batch-parallel training (gpt_forward_backward): one worker per thread, each a GPT that
    // shares these parameters but owns its gradients and activations for its share of the rows.
    struct GPT *workers;
    int n_workers;
    int shares_params;                // set in a worker: params belong to the master
} GPT;

// Switch the phase clock (no-op unless m->profile is set).
void gpt_phase(GPT *m, int phase);

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
} AttnSetup;
// The setup of a finalized configuration, turned here only: the scale config_finalize resolved,
// model.attn_mask, model.softmax_axis, model.attn_window, and model.attn_impl ("engine" or
// "definition").
AttnSetup attention_setup(const Config *cfg);
// The correct model's attention with this scale (causal mask, softmax over keys, no window),
// computed by the engine.
AttnSetup attention_causal(real scale);
// Allocate everything for dims, attention as attn and a batch capacity (B,T). Parameters are
// zero until gpt_init.
void gpt_build(GPT *m, const ModelDims *d, AttnSetup attn, int B, int T);
// Which attention the model and its batch workers compute (setup.spec) and which implementation
// trains it (setup.impl). Passes that collect statistics, and specs the implementation does not
// support, run the definition (see gpt_attention_falls_back).
void gpt_set_attention(GPT *m, AttnSetup setup);
// Whether the attention of a pass over the model runs the definition because the chosen
// implementation does not compute its spec (the engine computes the causal softmax over keys).
int gpt_attention_falls_back(const GPT *m);
void gpt_free(GPT *m);
// Draw the initial parameters from rng, tensor by tensor in checkpoint order.
void gpt_init(GPT *m, int init_scheme, Rng *rng);

// Forward over inputs (B,T) with B <= m->B, T <= m->T. With targets, returns the mean
// cross-entropy over all B*T positions (and leaves probabilities in acts.logits); without
// (targets NULL), returns 0 and leaves logits.
double gpt_forward(GPT *m, const int *inputs, const int *targets, int B, int T);
// Zero the parameter gradients.
void gpt_zero_grad(GPT *m);
// Give the model n_threads batch workers (none when n_threads < 2), each with room for its
// share of a batch of B rows; gpt_forward_backward then splits training batches between them.
void gpt_enable_batch_threads(GPT *m, int n_threads, int B, int T);
// One training batch: forward, backward; returns the mean loss and leaves the gradient of the
// mean loss in m->grads. With workers, each thread runs the whole network on
// its rows (no synchronisation inside the passes) and their gradients are combined, weighted by
// rows, in a fixed order: deterministic for a given thread count, equal to the one-thread result
// up to float rounding. Without, the same as gpt_forward + gpt_backward.
double gpt_forward_backward(GPT *m, const int *x, const int *y, int B, int T);
// The mean loss of a batch (forward only), split between the workers like gpt_forward_backward.
double gpt_loss(GPT *m, const int *x, const int *y, int B, int T);
// Backward of the last forward (which must have had targets): overwrites m->grads with the
// gradient of its mean loss (nothing is accumulated across calls; no gpt_zero_grad needed).
void gpt_backward(GPT *m);
// Backward of the last forward (with targets) for the loss -log p(target) of one row (b*T + t)
// alone: m->grads receives its gradient, and m->gacts.residual its gradient with respect to the
// input embeddings acts.encoded (B,T,C).
void gpt_backward_row(GPT *m, int row);
// Global L2 norm of the gradients, summed in a fixed order (deterministic).
double gpt_grad_norm(const GPT *m);
// Scale all gradients (clipping).
void gpt_scale_grads(GPT *m, real factor);
// One AdamW step (t is 1-based for bias correction); weight decay only on 2-D tensors.
void gpt_adamw_update(GPT *m, double lr, double beta1, double beta2, double eps,
                      double weight_decay, long t);
// True when every parameter and moment is finite.
int gpt_all_finite(const GPT *m);
// Index of a tensor by name, or -1.
int gpt_find_tensor(const GPT *m, const char *name);
// The tensor list (names, shapes, offsets, in checkpoint order) of a model of dims d, without
// building one: *out (malloc'd) receives the entries; returns their count, 0 when the sizes
// overflow (then *out is NULL).
int gpt_tensor_table(const ModelDims *d, TensorInfo **out);

// ---- generation with a key/value cache ----
// The keys and values of every layer for positions [0, len) of one sequence, so each new token
// costs one position's forward pass instead of the whole prefix's.
// Under a window of W < T_max only the last W positions are kept, as a ring of W slots (position
// p in slot p mod W) written twice, at slot and slot + W, so that the window's keys always lie in
// W consecutive slots, oldest first, for the attention's decode step.
typedef struct {
    int len;                 // positions cached
    int ring;                // slots of the ring: W, or T_max (no wrap) without a window
    int slots;               // slots per layer: 2 W with a window, else T_max
    real *k, *v;             // (L, slots, C) each
    real *x, *ln, *q, *atty, *tmp, *h, *h_gelu, *scores, *stat;  // one position's scratch
} KVCache;

void kv_cache_init(KVCache *c, const GPT *m);
void kv_cache_free(KVCache *c);
// Feed `token` at position c->len (which must be < block_size) and write the logits (V) for the
// next token. Bit-identical to the last row of gpt_forward over the same tokens (attention by the
// implementation gpt_forward runs for the model: its own, or the definition for a spec the
// engine does not compute).
void gpt_decode_step(GPT *m, KVCache *c, int token, real *logits);
// Fill the cache with n tokens (n <= block_size) at positions 0..n-1 in one batched forward pass
// and write the logits after the last one. Same values as n decode steps.
void gpt_prefill(GPT *m, KVCache *c, const int *tokens, int n, real *logits);

// ---- the honest loss ----
// Whether the model's attention is the correct one (causal mask, softmax over keys): position t
// then depends on tokens 0..t only, so the usual teacher-forced loss is what generation gets.
int gpt_attention_is_causal(const GPT *m);
// gen_loss: the mean cross-entropy of predicting y[w][t] (the token after x[w][t]) from
// x[w][0..t] only, exactly as generation sees them, over n windows of T tokens (x, y are (n,T)).
// For the correct model, KV-cache decoding gives every position at the cost of one forward; a
// model that sees the future (a masking or softmax-axis mistake) runs one forward per prefix,
// taking its last position. *teacher_forced (may be NULL) receives the usual loss over the same
// windows, in which every position sees the whole window. Needs T <= block_size and m->T >= T.
double gpt_generation_loss(GPT *m, const int *x, const int *y, int n, int T, double *teacher_forced);

// ---- attention statistics on a probe batch ----
// One (layer, head)'s statistics, or their average over all layers and heads.
typedef struct {
    double entropy;          // mean row entropy of P (nats), rows t >= 1
    double entropy_norm;     // mean of entropy / ln(visible keys): 1 = uniform, 0 = one-hot
    double max_weight;       // mean row max weight
    double frac_gt_090;      // fraction of rows whose max weight > 0.9
    double frac_gt_099;      // ... > 0.99
    double future_mass;      // mean weight a row puts on positions after its own: 0 when causal
    double score_std;        // standard deviation of the scaled scores S (unmasked entries)
    double score_absmax;     // max |S|
    double gnorm_wq, gnorm_wk, gnorm_wv, gnorm_wo;  // ||dL/dW|| of the layer's whole matrices
    double ds_over_dp;       // ||dL/dS|| / ||dL/dP|| over the head: gradient surviving the softmax
    double row_gain_median;  // median over rows of ||dL/dS_row|| / ||dL/dP_row||
    double loss;             // the probe batch's loss
} HeadStats;

// Forward and backward on (x, y) with statistics on; fills per_head (L*NH, may be NULL) and
// mean (averages over layers and heads). Leaves the gradients zeroed.
void attention_probe(GPT *m, const int *x, const int *y, int B, int T, HeadStats *per_head, HeadStats *mean);

// ---- layer primitives (exported for the tests and the lab; shapes as in model.c) ----
// inp (B,T) ids -> out (B,T,C) = wte[inp] + wpe[t]
void encoder_forward(real *out, const int *inp, const real *wte, const real *wpe, int B, int T, int C);
void encoder_backward(real *dwte, real *dwpe, const real *dout, const int *inp, int B, int T, int C);
// inp, out (N,C); mean, rstd (N)
void layernorm_forward(real *out, real *mean, real *rstd, const real *inp, const real *w, const real *b, int N, int C);
void layernorm_backward(real *dinp, real *dw, real *db, const real *dout, const real *inp,
                        const real *w, const real *mean, const real *rstd, int N, int C);
// dgelu (may be inp) receives GELU'(inp), which gelu_backward multiplies dout by; with
// GRAD_STORE, dinp may be dout itself (the gradient turned into the input's in place)
void gelu_forward(real *out, real *dgelu, const real *inp, size_t n);
void gelu_backward(real *dinp, const real *dgelu, const real *dout, size_t n, GradWrite write);
void residual_forward(real *out, const real *a, const real *b, size_t n);
// logits (N,V) become probabilities; losses (N)
void crossentropy_forward(real *logits, real *losses, const int *targets, int N, int V);
void crossentropy_backward(real *dlogits, const real *probs, const int *targets, int N, int V);

// FLOPs of one training step (forward + backward) for B,T: 6 * params * tokens plus causal
// attention, as documented in docs/PERFORMANCE.md.
double gpt_flops_per_step(const GPT *m, int B, int T);
// Its terms for B rows of T (B may be a share): the weights' products of the forward, 2 FLOPs per
// weight and token (the backward's are twice that), and attention: 6 L B C (T^2 - (T - W)^2), the
// pairs of a query and a key it sees under the model's window of W keys (W = T without one).
double gpt_product_flops(const GPT *m, double B, int T);
double gpt_attention_flops(const GPT *m, double B, int T);

#endif
