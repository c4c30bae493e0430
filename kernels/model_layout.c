// kernels/model_layout.c: where a GPT's numbers live. One parameter buffer (so a checkpoint is one
// write) and one buffer of activations, each carved into the named views of model.h by the tables
// below; the tensor list of checkpoints, the memory estimate and the attention setup of a
// configuration. Both model.c (the definition) and kernels/model_engine.c compute in these buffers.
#include "kernels/model_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "base/config_keys.h"  // config_enum_index: the enums follow the key table's names

// The layout, written once. Each table lists buffers in the order they are laid out: a row's
// shape is in units of the model's dimensions (V vocabulary, T_max block size, C width, and for
// activations B, T of the batch, NH heads), and `view` is where the buffer's pointer lives.
// Sizing, carving a buffer into views, the tensor list of checkpoints and the initialisation
// all read these tables.
typedef enum { D1, DV, DTMAX, DC, D4C, DHD } ParamDim;  // DHD: the head size C / NH

typedef struct {
    const char *name;
    ParamDim d0, d1;  // shape (d0, d1); d1 = D1 for a vector
    size_t view;      // offset of the pointer in ParamViews (global rows) or LayerParams
    ParamInit init;
    int grad_summed;
} ParamRow;

// checkpoint order: the head, each layer's rows (named layer<l>.<name>), the tail
static const ParamRow PARAMS_HEAD[] = {
    {"wte", DV, DC, offsetof(ParamViews, wte), PINIT_EMBEDDING, 0},     // also the tied LM head
    {"wpe", DTMAX, DC, offsetof(ParamViews, wpe), PINIT_EMBEDDING, 1},  // summed over the batch
};
static const ParamRow PARAMS_LAYER[] = {
    {"ln1_w", DC, D1, offsetof(LayerParams, ln1_w), PINIT_ONES, 1},
    {"ln1_b", DC, D1, offsetof(LayerParams, ln1_b), PINIT_ZEROS, 1},
    {"wq", DC, DC, offsetof(LayerParams, wq), PINIT_MATRIX, 0},
    {"wk", DC, DC, offsetof(LayerParams, wk), PINIT_MATRIX, 0},
    {"wv", DC, DC, offsetof(LayerParams, wv), PINIT_MATRIX, 0},
    {"wo", DC, DC, offsetof(LayerParams, wo), PINIT_RESIDUAL, 0},
    {"ln2_w", DC, D1, offsetof(LayerParams, ln2_w), PINIT_ONES, 1},
    {"ln2_b", DC, D1, offsetof(LayerParams, ln2_b), PINIT_ZEROS, 1},
    {"w_fc", DC, D4C, offsetof(LayerParams, w_fc), PINIT_MATRIX, 0},
    {"w_proj", D4C, DC, offsetof(LayerParams, w_proj), PINIT_RESIDUAL, 0},
};
// with QK-norm, each layer's rows go on with its gains (and LayerNorm's biases), one per head
// column
static const ParamRow PARAMS_QK_LAYERNORM[] = {
    {"q_norm_w", DHD, D1, offsetof(LayerParams, q_norm_w), PINIT_ONES, 1},
    {"q_norm_b", DHD, D1, offsetof(LayerParams, q_norm_b), PINIT_ZEROS, 1},
    {"k_norm_w", DHD, D1, offsetof(LayerParams, k_norm_w), PINIT_ONES, 1},
    {"k_norm_b", DHD, D1, offsetof(LayerParams, k_norm_b), PINIT_ZEROS, 1},
};
static const ParamRow PARAMS_QK_RMSNORM[] = {
    {"q_norm_w", DHD, D1, offsetof(LayerParams, q_norm_w), PINIT_ONES, 1},
    {"k_norm_w", DHD, D1, offsetof(LayerParams, k_norm_w), PINIT_ONES, 1},
};
static const ParamRow PARAMS_TAIL[] = {
    {"lnf_w", DC, D1, offsetof(ParamViews, lnf_w), PINIT_ONES, 1},
    {"lnf_b", DC, D1, offsetof(ParamViews, lnf_b), PINIT_ZEROS, 1},
};
#define ROWS(table) (int)(sizeof(table) / sizeof(table[0]))

static size_t param_dim(const ModelDims *d, ParamDim dim) {
    switch (dim) {
    case DV:
        return (size_t)d->vocab_size;
    case DTMAX:
        return (size_t)d->block_size;
    case DC:
        return (size_t)d->n_embd;
    case D4C:
        return 4 * (size_t)d->n_embd;
    case DHD:
        return (size_t)(d->n_embd / d->n_head);
    default:
        return 1;
    }
}

// The QK-norm rows of each layer for dims (count in *n; none without QK-norm).
static const ParamRow *qk_rows(const ModelDims *d, int *n) {
    *n = d->qk_norm == QK_NORM_LAYERNORM ? ROWS(PARAMS_QK_LAYERNORM)
         : d->qk_norm == QK_NORM_RMSNORM ? ROWS(PARAMS_QK_RMSNORM)
                                         : 0;
    return d->qk_norm == QK_NORM_LAYERNORM ? PARAMS_QK_LAYERNORM : PARAMS_QK_RMSNORM;
}
static int layer_rows(const ModelDims *d) {
    int nq;
    qk_rows(d, &nq);
    return ROWS(PARAMS_LAYER) + nq;
}

static int n_tensors(const ModelDims *d) {
    return ROWS(PARAMS_HEAD) + d->n_layer * layer_rows(d) + ROWS(PARAMS_TAIL);
}

// Tensor i of the checkpoint order: its table row and, for a layer's row, the layer (else -1).
static const ParamRow *param_row(int i, const ModelDims *d, int *layer) {
    int head = ROWS(PARAMS_HEAD), per = layer_rows(d), nq;
    const ParamRow *qk = qk_rows(d, &nq);
    *layer = -1;
    if (i < head) return &PARAMS_HEAD[i];
    i -= head;
    if (i < d->n_layer * per) {
        *layer = i / per;
        int j = i % per;
        return j < ROWS(PARAMS_LAYER) ? &PARAMS_LAYER[j] : &qk[j - ROWS(PARAMS_LAYER)];
    }
    return &PARAMS_TAIL[i - d->n_layer * per];
}

// The tensor list (names, shapes, offsets) for dims; returns the parameter count, or 0 when it
// overflows size_t. t may be NULL to count only.
static size_t list_tensors(const ModelDims *d, TensorInfo *t) {
    size_t offset = 0;
    for (int i = 0; i < n_tensors(d); i++) {
        int l;
        const ParamRow *row = param_row(i, d, &l);
        size_t d0 = param_dim(d, row->d0), d1 = param_dim(d, row->d1), n;
        if (!mul_size(d0, d1, &n) || offset + n < offset) return 0;
        if (t) {
            if (l >= 0)
                snprintf(t[i].name, sizeof t[i].name, "layer%d.%s", l, row->name);
            else
                snprintf(t[i].name, sizeof t[i].name, "%s", row->name);
            t[i].ndim = row->d1 == D1 ? 1 : 2;
            t[i].shape[0] = (int)d0;
            t[i].shape[1] = (int)d1;
            t[i].offset = offset;
            t[i].size = n;
            t[i].init = row->init;
            t[i].grad_summed = row->grad_summed;
        }
        offset += n;
    }
    return offset;
}

int gpt_tensor_table(const ModelDims *d, TensorInfo **out) {
    *out = xcalloc((size_t)n_tensors(d), sizeof(TensorInfo), "tensor table");
    if (list_tensors(d, *out) == 0) {
        free(*out);
        *out = NULL;
        return 0;
    }
    return n_tensors(d);
}

// Point each view of v at its tensor in base.
static void set_param_views(ParamViews *v, real *base, const GPT *m) {
    for (int i = 0; i < m->n_tensors; i++) {
        int l;
        const ParamRow *row = param_row(i, &m->dims, &l);
        char *owner = l >= 0 ? (char *)&v->layers[l] : (char *)v;
        *(real **)(void *)(owner + row->view) = base + m->tensors[i].offset;
    }
}

// Activations: sizes in units of the batch's dimensions.
typedef enum { A_BT, A_BTC, A_4BTC, A_BTV, A_BTH } ActSize;  // A_BTH: B*T*NH, one per head row
typedef struct {
    ActSize size;
    size_t view;
} ActRow;

static const ActRow ACTS_HEAD[] = {{A_BTC, offsetof(Acts, encoded)}};
static const ActRow ACTS_LAYER[] = {
    {A_BTC, offsetof(LayerActs, ln1)},       {A_BT, offsetof(LayerActs, ln1_mean)},
    {A_BT, offsetof(LayerActs, ln1_rstd)},   {A_BTC, offsetof(LayerActs, q)},
    {A_BTC, offsetof(LayerActs, k)},         {A_BTC, offsetof(LayerActs, v)},
    {A_BTC, offsetof(LayerActs, atty)},      {A_BTC, offsetof(LayerActs, res2)},
    {A_BTC, offsetof(LayerActs, ln2)},       {A_BT, offsetof(LayerActs, ln2_mean)},
    {A_BT, offsetof(LayerActs, ln2_rstd)},   {A_4BTC, offsetof(LayerActs, fch)},
    {A_4BTC, offsetof(LayerActs, fch_gelu)}, {A_BTC, offsetof(LayerActs, res3)},
};
// with QK-norm, each layer's rows go on with these
static const ActRow ACTS_QK[] = {
    {A_BTC, offsetof(LayerActs, q_in)},   {A_BTC, offsetof(LayerActs, k_in)},
    {A_BTH, offsetof(LayerActs, q_mean)}, {A_BTH, offsetof(LayerActs, q_rstd)},
    {A_BTH, offsetof(LayerActs, k_mean)}, {A_BTH, offsetof(LayerActs, k_rstd)},
};
static const ActRow ACTS_TAIL[] = {
    {A_BTC, offsetof(Acts, lnf)},      {A_BT, offsetof(Acts, lnf_mean)},
    {A_BT, offsetof(Acts, lnf_rstd)},  {A_BTV, offsetof(Acts, logits)},
    {A_BT, offsetof(Acts, losses)},    {A_BT, offsetof(Acts, lse)},
    {A_BT, offsetof(Acts, logit_max)},
};
static const ActRow GRAD_ACTS[] = {
    {A_BTC, offsetof(GradActs, residual)}, {A_BTC, offsetof(GradActs, ln)},
    {A_BTC, offsetof(GradActs, q)},        {A_BTC, offsetof(GradActs, k)},
    {A_BTC, offsetof(GradActs, v)},        {A_BTC, offsetof(GradActs, atty)},
    {A_4BTC, offsetof(GradActs, fch)},     {A_BTV, offsetof(GradActs, logits)},
};

// The reals of one size class for a batch (B,T), or 0 on overflow.
static size_t act_reals(const ModelDims *d, int B, int T, ActSize size) {
    size_t bt, n;
    if (!mul_size((size_t)B, (size_t)T, &bt)) return 0;
    switch (size) {
    case A_BT:
        return bt;
    case A_BTC:
        return mul_size(bt, (size_t)d->n_embd, &n) ? n : 0;
    case A_4BTC:
        return mul_size(bt, 4 * (size_t)d->n_embd, &n) ? n : 0;
    case A_BTH:
        return mul_size(bt, (size_t)d->n_head, &n) ? n : 0;
    default:
        return mul_size(bt, (size_t)d->vocab_size, &n) ? n : 0;
    }
}

// Lay rows out from *cursor (advancing it), pointing each view of `owner` at its buffer; with
// owner NULL, only add the sizes to *total. Returns 0 on overflow.
static int carve_acts(const ActRow *rows, int n, char *owner, real **cursor, size_t *total,
                      const ModelDims *d, int B, int T) {
    for (int i = 0; i < n; i++) {
        size_t reals = act_reals(d, B, T, rows[i].size);
        if (reals == 0 || *total + reals < *total) return 0;
        *total += reals;
        if (owner) {
            *(real **)(void *)(owner + rows[i].view) = *cursor;
            *cursor += reals;
        }
    }
    return 1;
}

// The activation and activation-gradient buffers' sizes in reals, or 0 on overflow.
typedef struct {
    size_t acts, grads;
} ActSizes;
static int act_sizes(const ModelDims *d, int B, int T, ActSizes *out) {
    size_t layer = 0, total = 0, grads = 0;
    if (!carve_acts(ACTS_LAYER, ROWS(ACTS_LAYER), NULL, NULL, &layer, d, B, T)) return 0;
    if (d->qk_norm && !carve_acts(ACTS_QK, ROWS(ACTS_QK), NULL, NULL, &layer, d, B, T)) return 0;
    if (!mul_size(layer, (size_t)d->n_layer, &total)) return 0;
    if (!carve_acts(ACTS_HEAD, ROWS(ACTS_HEAD), NULL, NULL, &total, d, B, T) ||
        !carve_acts(ACTS_TAIL, ROWS(ACTS_TAIL), NULL, NULL, &total, d, B, T) ||
        !carve_acts(GRAD_ACTS, ROWS(GRAD_ACTS), NULL, NULL, &grads, d, B, T))
        return 0;
    out->acts = total;
    out->grads = grads;
    return 1;
}

size_t gpt_memory_bytes(const ModelDims *d, int B, int T, size_t *n_params_out) {
    size_t n_params = list_tensors(d, NULL);
    if (n_params == 0) return 0;
    if (n_params_out) *n_params_out = n_params;
    ActSizes a;
    if (!act_sizes(d, B, T, &a)) return 0;
    size_t reals = 0, parts[4], bytes;
    if (!mul_size(n_params, 4, &parts[0])) return 0;  // params, grads, adam m, adam v
    parts[1] = a.acts;
    parts[2] = a.grads;
    // what the engine keeps for the backward: each row's maximum and 1/sum, per layer (B,NH,T,2)
    if (!mul_size((size_t)B * T, 2 * (size_t)d->n_head * d->n_layer, &parts[3])) return 0;
    for (int i = 0; i < 4; i++) {
        if (reals + parts[i] < reals) return 0;
        reals += parts[i];
    }
    if (!mul_size(reals, sizeof(real), &bytes)) return 0;
    return bytes;
}

// shared_params: NULL for a model of its own, else the master's parameters (a batch worker,
// which then has no optimizer state).
static void build(GPT *m, const ModelDims *d, AttnSetup attn, int B, int T, real *shared_params) {
    memset(m, 0, sizeof *m);
    m->dims = *d;
    m->attn = attn.spec;
    m->attn_impl = attn.impl;
    m->impl = attn.model;
    m->head_dim = d->n_embd / d->n_head;
    int L = d->n_layer, NH = d->n_head;

    m->n_tensors = n_tensors(d);
    m->tensors = xcalloc((size_t)m->n_tensors, sizeof(TensorInfo), "tensor table");
    m->n_params = list_tensors(d, m->tensors);
    if (m->n_params == 0) die(EXIT_RUNTIME, "model size overflows memory");
    size_t pbytes = m->n_params * sizeof(real);
    m->shares_params = shared_params != NULL;
    m->params = shared_params ? shared_params : xmalloc_aligned(pbytes, "parameters");
    m->grads = xmalloc_aligned(pbytes, "gradients");
    if (!shared_params) {
        m->adam_m = xmalloc_aligned(pbytes, "AdamW first moments");
        m->adam_v = xmalloc_aligned(pbytes, "AdamW second moments");
    }
    m->p.layers = xcalloc((size_t)L, sizeof(LayerParams), "layer views");
    m->g.layers = xcalloc((size_t)L, sizeof(LayerParams), "layer views");
    set_param_views(&m->p, m->params, m);
    set_param_views(&m->g, m->grads, m);

    // the activations, what attention keeps for the backward, its scratch and the row gains are
    // allocated by the first pass that needs them, for what it computes (gpt_begin_pass)
    ActSizes as;
    if (!act_sizes(d, B, T, &as)) die(EXIT_RUNTIME, "activation size overflows memory");
    m->B = B;
    m->T = T;
    m->acts.layers = xcalloc((size_t)L, sizeof(LayerActs), "activation views");
    size_t BT = (size_t)B * T;
    m->inputs = xcalloc(BT, sizeof(int), "inputs");
    m->targets = xcalloc(BT, sizeof(int), "targets");
    m->attn_stats = xcalloc((size_t)L * NH, sizeof(AttnStats), "attention statistics");
}

// A buffer of at least n reals: *buf is kept when it is large enough (*have), else replaced by
// a new one (its content is not kept: every pass writes what it reads).
static real *grow(real **buf, size_t *have, size_t n, const char *what) {
    if (n > *have) {
        free(*buf);
        *buf = xmalloc_aligned(n * sizeof(real), what);
        *have = n;
    }
    return *buf;
}

// Threads that a parallel region inside this pass would run: one when it is nested in an active
// region that takes all the levels OpenMP allows (a batch worker's), else thread_max().
static int pass_threads(void) {
#ifdef _OPENMP
    if (omp_get_active_level() >= omp_get_max_active_levels()) return 1;
#endif
    return thread_max();
}

// The buffers of a pass over (B,T) whose attention is `impl`: the activations and their gradients
// for B*T positions (laid out densely for this B and T, in buffers sized for the capacity), what
// impl keeps for the backward in every layer (the definition's T x T weights only when the
// definition runs), its scratch for the threads that run, and the row gains when statistics are
// collected.
void gpt_begin_pass(GPT *m, const AttentionImpl *impl, const int *inputs, const int *targets, int B,
                    int T) {
    const ModelDims *d = &m->dims;
    int L = d->n_layer, NH = d->n_head;
    if (B > m->B || T > m->T || T > d->block_size)
        die(EXIT_RUNTIME, "internal: batch (%d,%d) exceeds capacity (%d,%d)", B, T, m->B, m->T);
    m->cur_B = B;
    m->cur_T = T;
    m->split_B = 0;
    memcpy(m->inputs, inputs, (size_t)B * T * sizeof(int));
    if (targets) memcpy(m->targets, targets, (size_t)B * T * sizeof(int));
    if (m->collect_stats) memset(m->attn_stats, 0, (size_t)L * NH * sizeof(AttnStats));
    m->pass_attn = impl;
    ActSizes as;
    if (!act_sizes(d, B, T, &as)) die(EXIT_RUNTIME, "activation size overflows memory");
    real *a = grow(&m->act_memory, &m->act_reals, as.acts, "activations");
    real *g = grow(&m->gact_memory, &m->gact_reals, as.grads, "activation gradients");
    size_t total = 0;
    carve_acts(ACTS_HEAD, ROWS(ACTS_HEAD), (char *)&m->acts, &a, &total, d, B, T);
    for (int l = 0; l < L; l++) {
        carve_acts(ACTS_LAYER, ROWS(ACTS_LAYER), (char *)&m->acts.layers[l], &a, &total, d, B, T);
        if (d->qk_norm)
            carve_acts(ACTS_QK, ROWS(ACTS_QK), (char *)&m->acts.layers[l], &a, &total, d, B, T);
    }
    carve_acts(ACTS_TAIL, ROWS(ACTS_TAIL), (char *)&m->acts, &a, &total, d, B, T);
    carve_acts(GRAD_ACTS, ROWS(GRAD_ACTS), (char *)&m->gacts, &g, &total, d, B, T);
    size_t per_layer = impl->saved_reals((AttnShape){B, T, d->n_embd, NH}), saved;
    if (!mul_size(per_layer, (size_t)L, &saved))
        die(EXIT_RUNTIME, "attention's saved tensors overflow memory");
    real *sv = grow(&m->saved_memory, &m->saved_reals, saved, "attention's saved tensors");
    for (int l = 0; l < L; l++) m->acts.layers[l].att = sv + (size_t)l * per_layer;
    // 16 reals of slack: each thread's share starts 64-byte aligned when scratch_reals is a
    // multiple of 16
    size_t scratch = impl->scratch_reals(T, m->head_dim) * (size_t)pass_threads() + 16;
    grow(&m->attn_scratch, &m->scratch_reals, scratch, "attention scratch");
    if (m->collect_stats)
        grow(&m->row_gain, &m->row_gain_reals, (size_t)L * B * T * NH, "row gains");
}

void gpt_build(GPT *m, const ModelDims *d, AttnSetup attn, int B, int T) {
    build(m, d, attn, B, T, NULL);
}

void gpt_build_worker(GPT *w, const GPT *m, int B, int T) {
    build(w, &m->dims, (AttnSetup){m->attn, m->attn_impl, m->impl}, B, T, m->params);
    w->z_loss = m->z_loss;
}

void gpt_set_z_loss(GPT *m, double z_loss) {
    m->z_loss = z_loss;
    for (int i = 0; i < m->n_workers; i++) gpt_set_z_loss(&m->workers[i], z_loss);
}

// The index of a finalized configuration's value of key among the key table's names
// (base/config_keys.c), which the enums follow.
static int enum_of(const char *key, const char *value) {
    int i = config_enum_index(key, value);
    if (i < 0)
        die(EXIT_RUNTIME, "internal: '%s' = '%s' was not checked by config_finalize", key, value);
    return i;
}

AttnSetup attention_setup(const Config *cfg) {
    static const AttentionImpl *const impl_of[] = {&attention_engine, &attention_definition};
    AttnSetup a;
    a.impl = impl_of[enum_of("model.attn_impl", cfg->attn_impl)];
    a.spec = (AttnSpec){(real)cfg->attn_scale, (AttnMask)enum_of("model.attn_mask", cfg->attn_mask),
                        (SoftmaxAxis)enum_of("model.softmax_axis", cfg->softmax_axis),
                        cfg->attn_window, NULL};
    a.model = (ModelImpl)enum_of("model.impl", cfg->impl);
    return a;
}

int gpt_qk_norm_kind(const char *name) { return enum_of("model.qk_norm", name); }

const char *gpt_qk_norm_name(int kind) { return config_enum_name("model.qk_norm", kind); }

ModelDims gpt_dims(const Config *cfg, int vocab_size) {
    return (ModelDims){vocab_size,  cfg->block_size, cfg->n_layer,
                       cfg->n_head, cfg->n_embd,     gpt_qk_norm_kind(cfg->qk_norm)};
}

void gpt_copy_params(GPT *dst, const GPT *src) {
    for (int i = 0; i < dst->n_tensors; i++) {
        int j = gpt_find_tensor(src, dst->tensors[i].name);
        if (j >= 0 && src->tensors[j].size == dst->tensors[i].size)
            memcpy(dst->params + dst->tensors[i].offset, src->params + src->tensors[j].offset,
                   dst->tensors[i].size * sizeof(real));
    }
}

AttnSetup attention_causal(real scale) {
    return (AttnSetup){
        {scale, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, 0, NULL}, &attention_engine, MODEL_ENGINE};
}

int gpt_attention_falls_back(const GPT *m) { return !m->attn_impl->supports(&m->attn); }

void gpt_free(GPT *m) {
    for (int i = 0; i < m->n_workers; i++) gpt_free(&m->workers[i]);
    free(m->workers);
    free(m->tensors);
    if (!m->shares_params) free(m->params);
    free(m->grads);
    free(m->adam_m);
    free(m->adam_v);
    free(m->p.layers);
    free(m->g.layers);
    free(m->act_memory);
    free(m->gact_memory);
    free(m->saved_memory);
    free(m->acts.layers);
    free(m->attn_scratch);
    free(m->inputs);
    free(m->targets);
    free(m->attn_stats);
    free(m->row_gain);
    memset(m, 0, sizeof *m);
}

int gpt_find_tensor(const GPT *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return i;
    return -1;
}
