// run/safetensors_export.c: a model's weights written as a safetensors file under nanoGPT's
// tensor names (see run/safetensors.h and docs/FORMAT.md).
#include "run/safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "base/outfile.h"           // out_begin, out_end: the file replaced whole
#include "run/safetensors_names.h"  // NameRow, row_of, their_name: nanoGPT's names of the tensors

// One tensor of the file: its name and shape, and where its values come from in the model.
typedef struct {
    char name[96];
    int ndim;
    size_t shape[2];
    const TensorInfo *src[3];  // the model's tensor(s): three for c_attn
    Layout layout;
} OutTensor;

// Value (r, c) of an exported tensor, from the model's parameters.
static float out_value(const GPT *m, const OutTensor *t, size_t r, size_t c) {
    const real *p = m->params;
    switch (t->layout) {
    case TRANSPOSED:
        return (float)p[t->src[0]->offset + c * t->shape[0] + r];
    case QKV_ROWS: {
        size_t C = t->shape[1], part = r / C, o = r % C;
        return (float)p[t->src[part]->offset + c * C + o];
    }
    default:
        return (float)p[t->src[0]->offset + r * (t->ndim == 2 ? t->shape[1] : 1) + c];
    }
}

static size_t out_count(const OutTensor *t) {
    return t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
}

// Whether every LayerNorm bias of the model is zero (then the file is nanoGPT's bias=False as is).
static int layernorm_biases_zero(const GPT *m) {
    for (int i = 0; i < m->n_tensors; i++) {
        int l;
        const NameRow *r = row_of(m->tensors[i].name, &l);
        if (!r || !is_layernorm_bias(r)) continue;
        for (size_t j = 0; j < m->tensors[i].size; j++)
            if (m->params[m->tensors[i].offset + j] != 0) return 0;
    }
    return 1;
}

// The file's tensors in nanoGPT's state_dict order; returns their count.
static int list_out_tensors(const GPT *m, int with_ln_bias, OutTensor *out) {
    int n = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *ti = &m->tensors[i];
        int l;
        const NameRow *r = row_of(ti->name, &l);
        if (!r || (is_layernorm_bias(r) && !with_ln_bias) ||
            (r->layout == QKV_ROWS && r->part != 0))
            continue;
        OutTensor *t = &out[n++];
        memset(t, 0, sizeof *t);
        their_name(t->name, sizeof t->name, r, l);
        t->layout = r->layout;
        t->src[0] = ti;
        t->ndim = ti->ndim;
        size_t d0 = (size_t)ti->shape[0], d1 = ti->ndim == 2 ? (size_t)ti->shape[1] : 1;
        t->shape[0] = d0;
        t->shape[1] = d1;
        if (r->layout == TRANSPOSED) {
            t->shape[0] = d1;
            t->shape[1] = d0;
        }
        if (r->layout == QKV_ROWS) {  // wq, wk, wv follow each other in the model's table
            t->src[1] = ti + 1;
            t->src[2] = ti + 2;
            t->shape[0] = 3 * d1;
            t->shape[1] = d0;
        }
    }
    // the tied LM head, as nanoGPT's state_dict lists it: the embedding once more
    out[n] = out[0];
    snprintf(out[n].name, sizeof out[n].name, "%s", LM_HEAD);
    return n + 1;
}

int safetensors_attention_is_nanogpts(const GPT *m) {
    return m->attn.scale == (real)(1.0 / sqrt((double)m->head_dim)) &&
           m->attn.mask == ATTN_MASK_CAUSAL && m->attn.axis == SOFTMAX_OVER_KEYS &&
           m->attn.window == 0 && m->dims.qk_norm == QK_NORM_NONE;
}

static void add_meta_int(cJSON *meta, const char *key, long v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    cJSON_AddStringToObject(meta, key, buf);
}

int safetensors_export(const char *path, const GPT *m, const char *config_json, const Vocab *vocab,
                       char *err, size_t errlen) {
    int with_ln_bias = !layernorm_biases_zero(m);
    OutTensor *t = xcalloc((size_t)m->n_tensors + 1, sizeof *t, "export table");
    int n = list_out_tensors(m, with_ln_bias, t);
    cJSON *head = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(head, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    cJSON_AddStringToObject(meta, "architecture", "nanoGPT GPT, bias=False");
    cJSON_AddStringToObject(meta, "layernorm_bias", with_ln_bias ? "true" : "false");
    cJSON_AddStringToObject(meta, "attention_as_nanogpt",
                            safetensors_attention_is_nanogpts(m) ? "true" : "false");
    if (m->dims.qk_norm)  // only then: a file without QK-norm keeps the metadata it always had
        cJSON_AddStringToObject(meta, "qk_norm", gpt_qk_norm_name(m->dims.qk_norm));
    add_meta_int(meta, "vocab_size", m->dims.vocab_size);
    add_meta_int(meta, "block_size", m->dims.block_size);
    add_meta_int(meta, "n_layer", m->dims.n_layer);
    add_meta_int(meta, "n_head", m->dims.n_head);
    add_meta_int(meta, "n_embd", m->dims.n_embd);
    char *chars = xmalloc((size_t)vocab->vocab_size * 4 + 1, "vocabulary text");
    size_t len = 0;
    for (int i = 0; i < vocab->vocab_size; i++)
        len += (size_t)utf8_encode(vocab->chars[i], chars + len);
    chars[len] = 0;
    cJSON_AddStringToObject(meta, "vocab", chars);
    free(chars);
    cJSON_AddStringToObject(meta, "config", config_json);
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_AddObjectToObject(head, t[i].name);
        cJSON_AddStringToObject(e, "dtype", "F32");
        cJSON *shape = cJSON_AddArrayToObject(e, "shape"),
              *offs = cJSON_AddArrayToObject(e, "data_offsets");
        for (int d = 0; d < t[i].ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
        size_t bytes = 4 * out_count(&t[i]);
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(offset + bytes)));
        offset += bytes;
    }
    char *json = cJSON_PrintUnformatted(head);
    cJSON_Delete(head);
    if (!json) {
        free(t);
        snprintf(err, errlen, "cannot write '%s': out of memory for its header", path);
        return 0;
    }
    // the header padded with spaces to a multiple of 8 bytes, so the data starts aligned
    size_t hlen = strlen(json), padded = (hlen + 7) / 8 * 8;
    unsigned char len8[8];
    for (int b = 0; b < 8; b++) len8[b] = (unsigned char)((uint64_t)padded >> (8 * b));
    FILE *f = out_begin(path, OUT_DASH, err, errlen);
    if (!f) {
        free(json);
        free(t);
        return 0;
    }
    fwrite(len8, 1, 8, f);
    fwrite(json, 1, hlen, f);
    for (size_t i = hlen; i < padded; i++) fputc(' ', f);
    free(json);
    for (int i = 0; i < n; i++) {
        size_t cols = t[i].ndim == 2 ? t[i].shape[1] : 1;
        for (size_t r = 0; r < t[i].shape[0]; r++)
            for (size_t c = 0; c < cols; c++) {
                float x = out_value(m, &t[i], r, c);
                fwrite(&x, 4, 1, f);  // the host is little endian (checked by the loader)
            }
    }
    free(t);
    return out_end(f, err, errlen) ? n : 0;
}
