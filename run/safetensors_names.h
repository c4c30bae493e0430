// run/safetensors_names.h: the one table that maps this project's tensor names to nanoGPT's
// state_dict, as the safetensors export (run/safetensors_export.c) and import (run/safetensors.c)
// both read it.
#ifndef RUN_SAFETENSORS_NAMES_H
#define RUN_SAFETENSORS_NAMES_H

#include <stddef.h>

// Linear weights are stored here as (in, out), y = x W; PyTorch's nn.Linear holds (out, in) and
// computes y = x W^T, so they travel transposed. nanoGPT's c_attn stacks the query, key and value
// weights: rows [0, C) are Wq^T, [C, 2C) Wk^T, [2C, 3C) Wv^T. The LM head is tied to wte.
typedef enum { AS_IS, TRANSPOSED, QKV_ROWS } Layout;
typedef struct {
    const char *ours;    // the model's tensor name (in a layer: after "layerN.")
    const char *theirs;  // nanoGPT's (in a layer: after "transformer.h.N.")
    Layout layout;
    int part;  // QKV_ROWS: 0 query, 1 key, 2 value
} NameRow;
#define LM_HEAD "lm_head.weight"  // nanoGPT's LM head, the tied embedding once more

// The row of one of the model's tensor names ("wte", "layer3.wq"), and its layer (-1 outside one).
const NameRow *row_of(const char *ours, int *layer);
// nanoGPT's name of row r in layer `layer` (-1 outside one) into buf: "transformer.h.3.ln_1.bias".
void their_name(char *buf, size_t n, const NameRow *r, int layer);
// Whether row r is a LayerNorm's bias (nanoGPT's bias=False has none).
int is_layernorm_bias(const NameRow *r);

#endif
