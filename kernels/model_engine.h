// kernels/model_engine.h: the engine, model.c's GPT computed fast (kernels/model_engine.c), and the
// buffer layout both share (kernels/model_layout.c). gpt_forward and gpt_backward run the engine
// unless the model's impl is MODEL_DEFINITION; the tests prove the two equal.
#ifndef MODEL_ENGINE_H
#define MODEL_ENGINE_H

#include "kernels/matmul.h"  // GemmEpilogue
#include "model.h"

// gpt_forward's and gpt_backward's contracts (model.h), computed by the engine; row < 0 is the
// backward of the mean loss, else of row `row`'s loss alone (gpt_backward_row).
double model_engine_forward(GPT *m, const int *inputs, const int *targets, int B, int T);
void model_engine_backward(GPT *m, int row);
// The attention's clock (make bench's phases), as the products' (gemm_clock_*, kernels/matmul.h):
// from engine_attention_clock_start on, the calling thread adds up the wall-clock seconds of the
// attention forwards and backwards it runs in the engine's passes, until _stop.
void engine_attention_clock_start(void);
void engine_attention_clock_stop(void);
double engine_attention_clock_seconds(void);

// ---- what decoding needs (run/decode.c) ----
// The attention decoding runs for the model: the engine when it computes the model's spec, else
// the definition; its decode step continues the rows of its forward bit for bit.
const AttentionImpl *gpt_decoding_attention(const GPT *m);
// Forward without targets over one sequence of n tokens (n <= m->T), attention by
// gpt_decoding_attention: leaves the keys, values and logits of every position in m->acts.
void gpt_forward_prefill(GPT *m, const int *tokens, int n);

// ---- the engine's layers that decoding shares (the same bits as the batch pass) ----
// out = (inp - mean) * rstd * w + b row by row, inp and out (N,C), mean and rstd (N)
void layernorm_engine_forward(real *out, real *mean, real *rstd, const real *inp, const real *w,
                              const real *b, int N, int C);
// out = GELU(inp) and dgelu = GELU'(inp), n values; dgelu may be inp itself
void gelu_engine_forward(real *out, real *dgelu, const real *inp, size_t n);
// The epilogues the layers fuse into their products (a GemmEpilogue's fn, kernels/matmul.h),
// exported for make bench and tools/bench_gemm. ctx: a GeluOut for epi_gelu; the factor (GELU')
// or the residual stream, laid out like C, for epi_times and epi_residual.
typedef struct {
    real *out;
} GeluOut;
void epi_gelu(const void *ctx, real *c, size_t at, int n);
void epi_times(const void *ctx, real *c, size_t at, int n);
void epi_residual(const void *ctx, real *c, size_t at, int n);

// ---- the layout (kernels/model_layout.c) ----
// Begin a pass over inputs (B,T) (targets may be NULL) whose attention is impl: checks the
// capacity, records the shape, inputs and targets, zeroes the statistics and readies the
// buffers (the activations and their gradients laid out densely for this B and T, what impl
// keeps for the backward, its scratch and the row gains).
void gpt_begin_pass(GPT *m, const AttentionImpl *impl, const int *inputs, const int *targets, int B,
                    int T);

#endif
