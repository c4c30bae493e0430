// run/flops.c: the FLOPs of a training step, which MFU and --bench's rates divide by the time
// (docs/PERFORMANCE.md, the FLOP count).
#include "run/flops.h"

double gpt_attention_flops(const GPT *m, double B, int T) {
    // causal attention's T^2 (its T^2 / 2 pairs of a query and a key it sees, x 2), less the
    // (T - W)^2 that a window of W keys hides (each query sees at most W keys)
    int W = m->attn.window > 0 && m->attn.window < T ? m->attn.window : T;
    double seen = (double)T * T - (double)(T - W) * (T - W);
    return 6.0 * m->dims.n_layer * B * seen * m->dims.n_embd;
}

double gpt_product_flops(const GPT *m, double B, int T) {
    double L = m->dims.n_layer, C = m->dims.n_embd, V = m->dims.vocab_size;
    double matrix_params = 12.0 * L * C * C + V * C;  // the weights that take part in matmuls
    return 2.0 * matrix_params * B * T;
}

double gpt_flops_per_step(const GPT *m, int B, int T) {
    return 3.0 * gpt_product_flops(m, B, T) +
           gpt_attention_flops(m, B, T);  // forward 2, backward 4
}
