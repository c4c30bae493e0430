// teach/explain.c: the measures of one sequence, attention weights beside what each position
// actually contributes to the prediction (leave-one-out, attention knockout, gradient x input),
// and how often they agree. Every number comes from model.c's forward and backward with the
// definition (attention.c) computing attention; knockout is the definition's AttnSpec.knockout.
// The terminal table and the JSON are teach/explain_report.c, the controlled experiment
// teach/explain_experiment.c.
#include "teach/explain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"

// ---------------------------------------------------------------------------------------------
// running the model on many variants of one sequence

// The log p(targets) of nv variants (inputs and targets (nv, T)), m->B at a time; knock is NULL
// or (nv, L, NH, T) per variant, rearranged to the (L, B, NH, T) of each forward. logp: (nv, T).
static void run_variants(GPT *m, const int *inputs, const int *targets, const int *knock, int nv,
                         int T, double *logp) {
    int L = m->dims.n_layer, NH = m->dims.n_head;
    int *kb = knock ? xmalloc((size_t)L * m->B * NH * T * sizeof(int), "knockout") : NULL;
    for (int b0 = 0; b0 < nv; b0 += m->B) {
        int nb = nv - b0 < m->B ? nv - b0 : m->B;
        if (knock) {
            for (int b = 0; b < nb; b++)
                for (int l = 0; l < L; l++)
                    memcpy(kb + (((size_t)l * nb + b) * NH) * T,
                           knock + (((size_t)(b0 + b) * L + l) * NH) * T,
                           (size_t)NH * T * sizeof(int));
        }
        m->attn_knockout = kb;
        gpt_forward(m, inputs + (size_t)b0 * T, targets + (size_t)b0 * T, nb, T);
        m->attn_knockout = NULL;
        for (size_t i = 0; i < (size_t)nb * T; i++)
            logp[(size_t)b0 * T + i] = -(double)m->acts.losses[i];
    }
    free(kb);
}

// ---------------------------------------------------------------------------------------------
// the measures

// rollout: R = A_{L-1} ... A_0 with A_l = (W_l + I) / 2 (each row still sums to 1), W (L, n, n)
// the layers' weights (mean over heads), R (n, n)
static void rollout(const double *W, int L, int n, double *R) {
    size_t nn = (size_t)n * n;
    double *tmp = xcalloc(nn, sizeof(double), "explain");
    memset(R, 0, nn * sizeof(double));
    for (int t = 0; t < n; t++)
        for (int j = 0; j <= t; j++)
            R[(size_t)t * n + j] = 0.5 * W[(size_t)t * n + j] + 0.5 * (t == j);
    for (int l = 1; l < L; l++) {
        const double *Am = W + (size_t)l * nn;
        for (int t = 0; t < n; t++)
            for (int j = 0; j <= t; j++) {
                double s = 0;
                for (int u = j; u <= t; u++)
                    s += (0.5 * Am[(size_t)t * n + u] + 0.5 * (t == u)) * R[(size_t)u * n + j];
                tmp[(size_t)t * n + j] = s;
            }
        memcpy(R, tmp, nn * sizeof(double));
    }
    free(tmp);
}

void explain_compute(GPT *m, const int *tokens, int n, int baseline, const unsigned char *rows,
                     int per_head, Explain *e) {
    int L = m->dims.n_layer, NH = m->dims.n_head, C = m->dims.n_embd, hd = C / NH;
    if (n < 1 || n > m->T || n > m->dims.block_size)
        die(EXIT_RUNTIME, "internal: explain over %d positions", n);
    memset(e, 0, sizeof *e);
    e->n = n, e->L = L, e->NH = NH, e->baseline = baseline;
    size_t nn = (size_t)n * n;
    e->tokens = xmalloc((size_t)(n + 1) * sizeof(int), "explain");
    memcpy(e->tokens, tokens, (size_t)(n + 1) * sizeof(int));
    e->row = xmalloc((size_t)n, "explain");
    for (int t = 0; t < n; t++) e->row[t] = rows ? rows[t] != 0 : 1;
    e->logp = xcalloc((size_t)n, sizeof(double), "explain");
    e->argmax = xcalloc((size_t)n, sizeof(int), "explain");
    e->attn = xcalloc((size_t)L * NH * nn, sizeof(double), "explain");
    e->attn_mean = xcalloc((size_t)L * nn, sizeof(double), "explain");
    e->rollout = xcalloc(nn, sizeof(double), "explain");
    e->norm = xcalloc((size_t)L * nn, sizeof(double), "explain");
    e->uniform = xcalloc(nn, sizeof(double), "explain");
    e->uniform_rollout = xcalloc(nn, sizeof(double), "explain");
    e->uniform_norm = xcalloc((size_t)L * nn, sizeof(double), "explain");
    e->loo = xcalloc(nn, sizeof(double), "explain");
    e->knock = xcalloc((size_t)L * nn, sizeof(double), "explain");
    if (per_head) e->knock_head = xcalloc((size_t)L * NH * nn, sizeof(double), "explain");
    e->gxi = xcalloc(nn, sizeof(double), "explain");

    // the sequence itself: log p, the weights, the norms, then gradient x input row by row
    const int *x = tokens, *y = tokens + 1;
    m->keep_weights = 1;  // the weights P in acts.layers[l].att: the definition's (the engine keeps
                          // 2 numbers a row)
    gpt_forward(m, x, y, 1, n);
    m->keep_weights = 0;
    int V = m->dims.vocab_size;
    for (int t = 0; t < n; t++) {
        e->logp[t] = -(double)m->acts.losses[t];
        const real *p = m->acts.logits + (size_t)t * V;  // probabilities after the loss
        int best = 0;
        for (int i = 1; i < V; i++)
            if (p[i] > p[best]) best = i;
        e->argmax[t] = best;
    }
    double *f = xmalloc((size_t)NH * n * C * sizeof(double), "explain");  // f[h][j] = v_j^h Wo^h
    double *sum = xmalloc((size_t)C * sizeof(double), "explain");
    for (int l = 0; l < L; l++) {
        const LayerActs *A = &m->acts.layers[l];
        const real *wo = m->p.layers[l].wo;  // (C, C), y = x Wo: head h owns rows h*hd .. h*hd+hd-1
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < n; t++)
                for (int j = 0; j <= t; j++) {
                    double w = A->att[((size_t)h * n + t) * n + j];
                    e->attn[(((size_t)l * NH + h) * n + t) * n + j] = w;
                    e->attn_mean[((size_t)l * n + t) * n + j] += w / NH;
                }
        for (int h = 0; h < NH; h++)
            for (int j = 0; j < n; j++) {
                double *fj = f + ((size_t)h * n + j) * C;
                for (int o = 0; o < C; o++) fj[o] = 0;
                for (int i = 0; i < hd; i++) {
                    double vi = A->v[(size_t)j * C + h * hd + i];
                    const real *wrow = wo + (size_t)(h * hd + i) * C;
                    for (int o = 0; o < C; o++) fj[o] += vi * wrow[o];
                }
            }
        for (int t = 0; t < n; t++)
            for (int j = 0; j <= t; j++) {
                for (int o = 0; o < C; o++) sum[o] = 0;
                for (int h = 0; h < NH; h++) {
                    double w = e->attn[(((size_t)l * NH + h) * n + t) * n + j];
                    const double *fj = f + ((size_t)h * n + j) * C;
                    for (int o = 0; o < C; o++) sum[o] += w * fj[o];
                }
                double s2 = 0;
                for (int o = 0; o < C; o++) s2 += sum[o] * sum[o];
                e->norm[((size_t)l * n + t) * n + j] = sqrt(s2);
            }
        // the same with uniform weights: ||sum_h v_j^h Wo^h|| / (t+1)
        for (int j = 0; j < n; j++) {
            for (int o = 0; o < C; o++) sum[o] = 0;
            for (int h = 0; h < NH; h++)
                for (int o = 0; o < C; o++) sum[o] += f[((size_t)h * n + j) * C + o];
            double s2 = 0;
            for (int o = 0; o < C; o++) s2 += sum[o] * sum[o];
            for (int t = j; t < n; t++)
                e->uniform_norm[((size_t)l * n + t) * n + j] = sqrt(s2) / (t + 1);
        }
    }
    free(f);
    free(sum);
    for (int t = 0; t < n; t++)
        for (int j = 0; j <= t; j++) e->uniform[(size_t)t * n + j] = 1.0 / (t + 1);
    rollout(e->attn_mean, L, n, e->rollout);
    double *u =
        xmalloc((size_t)L * nn * sizeof(double), "explain");  // every layer's weights uniform
    for (int l = 0; l < L; l++) memcpy(u + (size_t)l * nn, e->uniform, nn * sizeof(double));
    rollout(u, L, n, e->uniform_rollout);
    free(u);
    // gradient x input: the backward of row t alone gives d(-log p)/d x in gacts.residual
    const real *enc = m->acts.encoded;
    for (int t = 0; t < n; t++) {
        if (!e->row[t]) continue;
        gpt_backward_row(m, t);
        for (int j = 0; j <= t; j++) {
            double d = 0;
            for (int c = 0; c < C; c++)
                d += (double)m->gacts.residual[(size_t)j * C + c] * enc[(size_t)j * C + c];
            e->gxi[(size_t)t * n + j] = -d;
        }
    }

    // leave-one-out: variant j has the baseline token at j; row t >= j reads its effect
    size_t cap = (size_t)L * (NH + 1) * n * n;  // the most variants x tokens of one run below
    int *in = xmalloc(cap * sizeof(int), "explain");
    int *tg = xmalloc(cap * sizeof(int), "explain");
    double *lp = xmalloc(cap * sizeof(double), "explain");
    for (int j = 0; j < n; j++) {
        memcpy(in + (size_t)j * n, x, (size_t)n * sizeof(int));
        memcpy(tg + (size_t)j * n, y, (size_t)n * sizeof(int));
        in[(size_t)j * n + j] = baseline;
    }
    run_variants(m, in, tg, NULL, n, n, lp);
    for (int j = 0; j < n; j++)
        for (int t = j; t < n; t++) e->loo[(size_t)t * n + j] = e->logp[t] - lp[(size_t)j * n + t];

    // knockout. In the last layer a row's attention output reaches only its own prediction, so
    // one variant per key (and head) removes that key from every row at once. Below it, the
    // changed row would reach later rows through the layers above: each row t is knocked alone,
    // in the sequence cut after t, so nothing but its prediction reads the change.
    int per = per_head ? NH + 1 : 1;  // variants per (layer, key): all heads, then each head
    // the most variants of one run: (L - 1) layers x per x n keys (t >= 0), or per x n (t = -1),
    // each with an (L, NH, T <= n) knockout plan
    int *kn = xmalloc((size_t)(L > 1 ? L - 1 : 1) * per * n * L * NH * n * sizeof(int), "explain");
    for (int t = -1; t < n; t++) {
        if (t >= 0 && !e->row[t]) continue;
        int T = t < 0 ? n : t + 1, nv = 0;
        int l0 = t < 0 ? L - 1 : 0, l1 = t < 0 ? L : L - 1;  // t = -1: the last layer, all rows
        for (int l = l0; l < l1; l++)
            for (int g = 0; g < per; g++)
                for (int j = 0; j < T; j++, nv++) {
                    memcpy(in + (size_t)nv * T, x, (size_t)T * sizeof(int));
                    memcpy(tg + (size_t)nv * T, y, (size_t)T * sizeof(int));
                    int *k = kn + (size_t)nv * L * NH * T;
                    for (size_t i = 0; i < (size_t)L * NH * T; i++) k[i] = -1;
                    for (int h = 0; h < NH; h++)
                        for (int r = t < 0 ? j : t; r < T; r++)
                            if (g == 0 || g - 1 == h) k[((size_t)l * NH + h) * T + r] = j;
                }
        if (!nv) continue;
        run_variants(m, in, tg, kn, nv, T, lp);
        nv = 0;
        for (int l = l0; l < l1; l++)
            for (int g = 0; g < per; g++)
                for (int j = 0; j < T; j++, nv++)
                    for (int r = t < 0 ? j : t; r < T; r++) {
                        if (!e->row[r]) continue;
                        double d = e->logp[r] - lp[(size_t)nv * T + r];
                        if (g == 0)
                            e->knock[((size_t)l * n + r) * n + j] = d;
                        else
                            e->knock_head[(((size_t)l * NH + g - 1) * n + r) * n + j] = d;
                    }
    }
    free(kn);
    free(in);
    free(tg);
    free(lp);
}

void explain_free(Explain *e) {
    free(e->tokens);
    free(e->row);
    free(e->logp);
    free(e->argmax);
    free(e->attn);
    free(e->attn_mean);
    free(e->rollout);
    free(e->norm);
    free(e->uniform);
    free(e->uniform_rollout);
    free(e->uniform_norm);
    free(e->loo);
    free(e->knock);
    free(e->knock_head);
    free(e->gxi);
    memset(e, 0, sizeof *e);
}

const double *explain_row(const Explain *e, const char *name, int t) {
    size_t n = (size_t)e->n, nn = n * n;
    int l = -1, h = -1, used = 0;
    if (t < 0 || t >= e->n) return NULL;
    if (!strcmp(name, "rollout")) return e->rollout + t * n;
    if (!strcmp(name, "uniform")) return e->uniform + t * n;
    if (!strcmp(name, "uniform_rollout")) return e->uniform_rollout + t * n;
    if (!strcmp(name, "loo")) return e->loo + t * n;
    if (!strcmp(name, "gxi")) return e->gxi + t * n;
    const char *rest = NULL;
    const double *base = NULL, *base_head = NULL;
    if (!strncmp(name, "attn_l", 6))
        rest = name + 6, base = e->attn_mean, base_head = e->attn;
    else if (!strncmp(name, "norm_l", 6))
        rest = name + 6, base = e->norm;
    else if (!strncmp(name, "uniform_norm_l", 14))
        rest = name + 14, base = e->uniform_norm;
    else if (!strncmp(name, "knock_l", 7))
        rest = name + 7, base = e->knock, base_head = e->knock_head;
    if (!rest) return NULL;
    if (sscanf(rest, "%dh%d%n", &l, &h, &used) == 2 && rest[used] == 0) {
        if (!base_head || l < 0 || l >= e->L || h < 0 || h >= e->NH) return NULL;
        return base_head + ((size_t)l * e->NH + h) * nn + t * n;
    }
    if (sscanf(rest, "%d%n", &l, &used) == 1 && rest[used] == 0 && l >= 0 && l < e->L)
        return base + (size_t)l * nn + t * n;
    return NULL;
}

int explain_attention_names(int L, int NH, int per_head, char names[][EXPLAIN_NAME], int max) {
    int k = 0;
    for (int l = 0; l < L && k < max; l++) snprintf(names[k++], EXPLAIN_NAME, "attn_l%d", l);
    if (k < max) snprintf(names[k++], EXPLAIN_NAME, "rollout");
    for (int l = 0; l < L && k < max; l++) snprintf(names[k++], EXPLAIN_NAME, "norm_l%d", l);
    if (k < max) snprintf(names[k++], EXPLAIN_NAME, "uniform");
    if (k < max) snprintf(names[k++], EXPLAIN_NAME, "uniform_rollout");
    for (int l = 0; l < L && k < max; l++)
        snprintf(names[k++], EXPLAIN_NAME, "uniform_norm_l%d", l);
    for (int l = 0; per_head && l < L; l++)
        for (int h = 0; h < NH && k < max; h++)
            snprintf(names[k++], EXPLAIN_NAME, "attn_l%dh%d", l, h);
    return k;
}

int explain_effect_names(int L, int NH, int per_head, char names[][EXPLAIN_NAME], int max) {
    int k = 0;
    if (k < max) snprintf(names[k++], EXPLAIN_NAME, "loo");
    for (int l = 0; l < L && k < max; l++) snprintf(names[k++], EXPLAIN_NAME, "knock_l%d", l);
    if (k < max) snprintf(names[k++], EXPLAIN_NAME, "gxi");
    for (int l = 0; per_head && l < L; l++)
        for (int h = 0; h < NH && k < max; h++)
            snprintf(names[k++], EXPLAIN_NAME, "knock_l%dh%d", l, h);
    return k;
}

// ---------------------------------------------------------------------------------------------
// agreement

int explain_argmax(const double *x, int n, int use_abs) {
    int best = 0;
    for (int j = 1; j < n; j++) {
        double a = use_abs ? fabs(x[j]) : x[j], b = use_abs ? fabs(x[best]) : x[best];
        if (a > b) best = j;
    }
    return best;
}

static int sign(double d) { return (d > 0) - (d < 0); }

// tau-b = (concordant - discordant) / sqrt((n0 - ties_x) (n0 - ties_y)), n0 = n(n-1)/2
double kendall_tau_b(const double *x, const double *y, int n) {
    double con = 0, tx = 0, ty = 0, n0 = 0.5 * n * (n - 1);
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++) {
            int a = sign(x[i] - x[k]), b = sign(y[i] - y[k]);
            con += a * b;
            tx += a == 0;
            ty += b == 0;
        }
    if (n0 - tx <= 0 || n0 - ty <= 0) return NAN;
    return con / sqrt((n0 - tx) * (n0 - ty));
}

// Ties are an even draw: A = argmax a and E = argmax |e| as sets; top-1 is the chance that a draw
// from A equals a draw from E, |A n E| / (|A| |E|), and misattribution the share of A whose |e|
// is under 10% of the largest.
void agreement_add(Agreement *g, const double *a, const double *e, int n_keys) {
    if (n_keys < 2) return;
    double ae[64],
        *abs_e = n_keys <= 64 ? ae : xmalloc((size_t)n_keys * sizeof(double), "agreement");
    for (int j = 0; j < n_keys; j++) abs_e[j] = fabs(e[j]);
    double amax = a[explain_argmax(a, n_keys, 0)], emax = abs_e[explain_argmax(abs_e, n_keys, 0)];
    int na = 0, ne = 0, both = 0, low = 0;
    for (int j = 0; j < n_keys; j++) {
        int in_a = a[j] == amax, in_e = abs_e[j] == emax;
        na += in_a, ne += in_e, both += in_a && in_e;
        low += in_a && abs_e[j] < EXPLAIN_MISATTRIBUTION * emax;
    }
    g->rows += 1;
    g->top1 += (double)both / ((double)na * ne);
    double tau = kendall_tau_b(a, abs_e, n_keys);
    if (tau == tau) g->tau_sum += tau, g->tau_rows += 1;
    if (emax > 0) {
        g->mis_rows += 1;
        g->mis += (double)low / na;
    }
    if (abs_e != ae) free(abs_e);
}

void agreement_merge(Agreement *to, const Agreement *from) {
    to->rows += from->rows;
    to->top1 += from->top1;
    to->tau_sum += from->tau_sum;
    to->tau_rows += from->tau_rows;
    to->mis += from->mis;
    to->mis_rows += from->mis_rows;
}

double explain_ratio(double a, double b) { return b > 0 ? a / b : NAN; }
