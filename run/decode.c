// run/decode.c: generation with a key/value cache: the prefill (one batched forward whose keys
// and values are kept), the decode step (one position through the same layer functions), and
// the honest loss, every position predicted from the positions before it only.
#include "run/decode.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"             // the window's first key, the decode step of the implementation
#include "kernels/matmul.h"        // the products of one position
#include "kernels/model_engine.h"  // the prefill and the engine's layers (its batch pass's bits)

#define ROWS(table) (int)(sizeof(table) / sizeof(table[0]))

// ---------------------------------------------------------------------------------------------
// generation with a key/value cache

// One position's scratch of decoding, in layout order (x first: kv_cache_free frees from it).
typedef enum { S_C, S_4C, S_SCORES, S_STAT, S_QK } DecodeSize;
static const struct {
    DecodeSize size;
    size_t view;
} DECODE_SCRATCH[] = {
    {S_C, offsetof(KVCache, x)},        {S_C, offsetof(KVCache, ln)},
    {S_C, offsetof(KVCache, q)},        {S_C, offsetof(KVCache, atty)},
    {S_C, offsetof(KVCache, tmp)},      {S_4C, offsetof(KVCache, h)},
    {S_4C, offsetof(KVCache, h_gelu)},  {S_SCORES, offsetof(KVCache, scores)},
    {S_STAT, offsetof(KVCache, stat)},   // mean and rstd of one LayerNorm row
    {S_QK, offsetof(KVCache, qk_stat)},  // QK-norm's mean and rstd of each head row of q, then of k
};

static size_t decode_reals(DecodeSize size, int C, int T, int NH) {
    return size == S_C        ? (size_t)C
           : size == S_4C     ? 4 * (size_t)C
           : size == S_SCORES ? attention_decode_scratch_reals(T)
           : size == S_QK     ? 2 * (size_t)NH
                              : 2;
}

void kv_cache_init(KVCache *c, const GPT *m) {
    int L = m->dims.n_layer, T = m->dims.block_size, C = m->dims.n_embd, W = m->attn.window;
    c->ring = W > 0 && W < T ? W : T;
    c->slots = c->ring < T ? 2 * c->ring : T;
    size_t kv = (size_t)L * c->slots * C, reals = 0;
    c->len = 0;
    c->k = xmalloc_aligned(kv * sizeof(real), "key cache");
    c->v = xmalloc_aligned(kv * sizeof(real), "value cache");
    for (int i = 0; i < ROWS(DECODE_SCRATCH); i++)
        reals += decode_reals(DECODE_SCRATCH[i].size, C, T, m->dims.n_head);
    real *s = xmalloc_aligned(reals * sizeof(real), "decoding scratch");
    for (int i = 0; i < ROWS(DECODE_SCRATCH); i++) {
        *(real **)(void *)((char *)c + DECODE_SCRATCH[i].view) = s;
        s += decode_reals(DECODE_SCRATCH[i].size, C, T, m->dims.n_head);
    }
}

void kv_cache_free(KVCache *c) {
    free(c->k);
    free(c->v);
    free(c->x);  // the scratch block starts at x
    memset(c, 0, sizeof *c);
}

// Copy the key and value of slot `slot` of layer l to its twin `ring` slots on, when the ring
// wraps (a window shorter than block_size).
static void kv_cache_twin(KVCache *c, int l, int slot, int C) {
    if (c->slots == c->ring) return;
    real *kl = c->k + (size_t)l * c->slots * C, *vl = c->v + (size_t)l * c->slots * C;
    memcpy(kl + (size_t)(slot + c->ring) * C, kl + (size_t)slot * C, (size_t)C * sizeof(real));
    memcpy(vl + (size_t)(slot + c->ring) * C, vl + (size_t)slot * C, (size_t)C * sizeof(real));
}

void gpt_prefill(GPT *m, KVCache *c, const int *tokens, int n, real *logits) {
    int L = m->dims.n_layer, T = m->dims.block_size, C = m->dims.n_embd, V = m->dims.vocab_size;
    if (n < 1 || n > T || n > m->T)
        die(EXIT_RUNTIME, "internal: prefill of %d tokens (block %d)", n, T);
    // one batched forward pass (matrix products, not n matrix-vector ones), then keep its keys
    // and values (those of the last `ring` positions); every row is computed exactly as
    // gpt_decode_step would (gpt_forward_prefill)
    gpt_forward_prefill(m, tokens, n);
    for (int l = 0; l < L; l++)
        for (int p = n > c->ring ? n - c->ring : 0; p < n; p++) {
            int slot = p % c->ring;
            memcpy(c->k + ((size_t)l * c->slots + slot) * C, m->acts.layers[l].k + (size_t)p * C,
                   (size_t)C * sizeof(real));
            memcpy(c->v + ((size_t)l * c->slots + slot) * C, m->acts.layers[l].v + (size_t)p * C,
                   (size_t)C * sizeof(real));
            kv_cache_twin(c, l, slot, C);
        }
    memcpy(logits, m->acts.logits + (size_t)(n - 1) * V, (size_t)V * sizeof(real));
    c->len = n;
}

void gpt_window_logits(GPT *m, const int *tokens, int n, real *logits) {
    int V = m->dims.vocab_size;
    if (n < 1 || n > m->dims.block_size || n > m->T)
        die(EXIT_RUNTIME, "internal: window of %d tokens (block %d)", n, m->dims.block_size);
    gpt_forward_prefill(m, tokens, n);
    memcpy(logits, m->acts.logits + (size_t)(n - 1) * V, (size_t)V * sizeof(real));
}

void gpt_decode_step(GPT *m, KVCache *c, int token, real *logits) {
    int L = m->dims.n_layer, T = m->dims.block_size, C = m->dims.n_embd, NH = m->dims.n_head,
        V = m->dims.vocab_size;
    int pos = c->len;
    if (pos >= T) die(EXIT_RUNTIME, "internal: KV cache full (%d positions)", T);
    // the keys position pos sees, first..pos, lie in consecutive slots from first's on
    int first = attention_first_key(&m->attn, pos), slot = pos % c->ring;
    size_t from = (size_t)(first % c->ring) * C;
    AttentionDecodeFn *decode = gpt_decoding_attention(m)->decode;
    // the same layer functions as gpt_forward, on one row
    encoder_forward(c->x, &token, m->p.wte, m->p.wpe + (size_t)pos * C, 1, 1, C);
    for (int l = 0; l < L; l++) {
        const LayerParams *P = &m->p.layers[l];
        real *k_ring = c->k + (size_t)l * c->slots * C, *v_ring = c->v + (size_t)l * c->slots * C;
        layernorm_engine_forward(c->ln, c->stat, c->stat + 1, c->x, P->ln1_w, P->ln1_b, 1, C);
        linear_forward(c->q, c->ln, P->wq, 1, C, C);
        linear_forward(k_ring + (size_t)slot * C, c->ln, P->wk, 1, C, C);
        linear_forward(v_ring + (size_t)slot * C, c->ln, P->wv, 1, C, C);
        if (m->dims.qk_norm) {  // in place: each value is read before it is overwritten
            const AttentionImpl *impl = gpt_decoding_attention(m);
            QkNorm kind = (QkNorm)m->dims.qk_norm;
            real *kr = k_ring + (size_t)slot * C;
            impl->qk_norm_forward(c->q, c->qk_stat, c->qk_stat + NH, c->q, P->q_norm_w, P->q_norm_b,
                                  (QkNormShape){1, C, NH, kind});
            impl->qk_norm_forward(kr, c->qk_stat, c->qk_stat + NH, kr, P->k_norm_w, P->k_norm_b,
                                  (QkNormShape){1, C, NH, kind});
        }
        kv_cache_twin(c, l, slot, C);
        decode(c->atty, c->scores, c->q, k_ring + from, v_ring + from, pos - first, C, NH,
               &m->attn);
        linear_forward(c->tmp, c->atty, P->wo, 1, C, C);
        residual_forward(c->x, c->tmp, c->x, (size_t)C);
        layernorm_engine_forward(c->ln, c->stat, c->stat + 1, c->x, P->ln2_w, P->ln2_b, 1, C);
        linear_forward(c->h, c->ln, P->w_fc, 1, C, 4 * C);
        gelu_engine_forward(c->h_gelu, c->h, c->h,
                            (size_t)4 * C);  // the batch pass's loop, so the same bits
        linear_forward(c->tmp, c->h_gelu, P->w_proj, 1, 4 * C, C);
        residual_forward(c->x, c->tmp, c->x, (size_t)C);
    }
    layernorm_engine_forward(c->ln, c->stat, c->stat + 1, c->x, m->p.lnf_w, m->p.lnf_b, 1, C);
    gemm_nt(logits, c->ln, m->p.wte, 1, V, C, MM_SET);
    c->len = pos + 1;
}

// ---------------------------------------------------------------------------------------------
// the honest loss

int gpt_attention_is_causal(const GPT *m) {
    return m->attn.mask == ATTN_MASK_CAUSAL && m->attn.axis == SOFTMAX_OVER_KEYS;
}

// -log softmax(logits)[target], in double
static double token_loss(const real *logits, int V, int target) {
    double maxv = logits[0], sum = 0.0;
    for (int i = 1; i < V; i++) maxv = logits[i] > maxv ? logits[i] : maxv;
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - maxv);
    return maxv + log(sum) - (double)logits[target];
}

double gpt_generation_loss(GPT *m, const int *x, const int *y, int n, int T,
                           double *teacher_forced) {
    int V = m->dims.vocab_size;
    if (T > m->dims.block_size || T > m->T || n < 1)
        die(EXIT_RUNTIME, "internal: generation loss over (%d,%d)", n, T);
    double total = 0.0, forced = 0.0;
    real *logits = xmalloc((size_t)V * sizeof(real), "logits");
    KVCache cache;
    int causal = gpt_attention_is_causal(m);
    if (causal) kv_cache_init(&cache, m);
    for (int w = 0; w < n; w++) {
        const int *xw = x + (size_t)w * T, *yw = y + (size_t)w * T;
        if (causal) {
            cache.len = 0;  // position t is decoded after positions 0..t-1, seeing only them
            for (int t = 0; t < T; t++) {
                gpt_decode_step(m, &cache, xw[t], logits);
                total += token_loss(logits, V, yw[t]);
            }
        } else {
            for (int t = 0; t < T; t++) {  // the prefix 0..t, its last position predicting y[t]
                gpt_forward(m, xw, NULL, 1, t + 1);
                total += token_loss(m->acts.logits + (size_t)t * V, V, yw[t]);
            }
        }
    }
    if (teacher_forced) {
        for (int w0 = 0; w0 < n; w0 += m->B) {  // in batches the model has room for
            int nb = n - w0 < m->B ? n - w0 : m->B;
            forced += gpt_forward(m, x + (size_t)w0 * T, y + (size_t)w0 * T, nb, T) * nb;
        }
        *teacher_forced = forced / n;
    }
    if (causal) kv_cache_free(&cache);
    free(logits);
    return total / ((double)n * T);
}
