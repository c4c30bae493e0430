// run/safetensors_names.c: the table of this project's tensor names and nanoGPT's, and the
// look-ups the safetensors export and import share (see run/safetensors_names.h).
#include "run/safetensors_names.h"

#include <stdio.h>
#include <string.h>

static const NameRow HEAD_NAMES[] = {
    {"wte", "transformer.wte.weight", AS_IS, 0},
    {"wpe", "transformer.wpe.weight", AS_IS, 0},
};
static const NameRow LAYER_NAMES[] = {
    {"ln1_w", "ln_1.weight", AS_IS, 0},
    {"ln1_b", "ln_1.bias", AS_IS, 0},
    {"wq", "attn.c_attn.weight", QKV_ROWS, 0},
    {"wk", "attn.c_attn.weight", QKV_ROWS, 1},
    {"wv", "attn.c_attn.weight", QKV_ROWS, 2},
    {"wo", "attn.c_proj.weight", TRANSPOSED, 0},
    {"ln2_w", "ln_2.weight", AS_IS, 0},
    {"ln2_b", "ln_2.bias", AS_IS, 0},
    {"w_fc", "mlp.c_fc.weight", TRANSPOSED, 0},
    {"w_proj", "mlp.c_proj.weight", TRANSPOSED, 0},
    // QK-norm's gains and biases (model.qk_norm): nanoGPT has no such tensors
    {"q_norm_w", "attn.q_norm.weight", AS_IS, 0},
    {"q_norm_b", "attn.q_norm.bias", AS_IS, 0},
    {"k_norm_w", "attn.k_norm.weight", AS_IS, 0},
    {"k_norm_b", "attn.k_norm.bias", AS_IS, 0},
};
static const NameRow TAIL_NAMES[] = {
    {"lnf_w", "transformer.ln_f.weight", AS_IS, 0},
    {"lnf_b", "transformer.ln_f.bias", AS_IS, 0},
};
#define N_ROWS(t) (int)(sizeof(t) / sizeof(t[0]))

// The row of one of the model's tensor names ("wte", "layer3.wq"), and its layer (-1 outside one).
const NameRow *row_of(const char *ours, int *layer) {
    *layer = -1;
    int n = 0;
    if (sscanf(ours, "layer%d.%n", layer, &n) == 1 && n > 0) {
        for (int i = 0; i < N_ROWS(LAYER_NAMES); i++)
            if (strcmp(ours + n, LAYER_NAMES[i].ours) == 0) return &LAYER_NAMES[i];
        return NULL;
    }
    *layer = -1;
    for (int i = 0; i < N_ROWS(HEAD_NAMES); i++)
        if (strcmp(ours, HEAD_NAMES[i].ours) == 0) return &HEAD_NAMES[i];
    for (int i = 0; i < N_ROWS(TAIL_NAMES); i++)
        if (strcmp(ours, TAIL_NAMES[i].ours) == 0) return &TAIL_NAMES[i];
    return NULL;
}

void their_name(char *buf, size_t n, const NameRow *r, int layer) {
    if (layer >= 0)
        snprintf(buf, n, "transformer.h.%d.%s", layer, r->theirs);
    else
        snprintf(buf, n, "%s", r->theirs);
}

int is_layernorm_bias(const NameRow *r) {
    return strcmp(r->theirs + strlen(r->theirs) - 5, ".bias") == 0;
}
