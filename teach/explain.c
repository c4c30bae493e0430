// teach/explain.c: attention weights beside what each position actually contributes to the
// prediction (leave-one-out, attention knockout, gradient x input), and how often they agree.
// Every number comes from model.c's forward and backward with the definition (attention.c)
// computing attention; knockout is the definition's AttnSpec.knockout.
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

static double ratio(double a, double b) { return b > 0 ? a / b : NAN; }

// ---------------------------------------------------------------------------------------------
// output

// A token as printable text: the character, or \n, \t, \\ and \" spelled out.
static void token_text(const Vocab *v, int tok, char *buf) {
    uint32_t cp = v->chars[tok];
    if (cp == '\n')
        strcpy(buf, "\\n");
    else if (cp == '\t')
        strcpy(buf, "\\t");
    else if (cp == '\\')
        strcpy(buf, "\\\\");
    else if (cp == '"')
        strcpy(buf, "\\\"");
    else if (cp < 0x20 || cp == 0x7f)
        snprintf(buf, 12, "\\u%04x", (unsigned)cp);
    else
        buf[utf8_encode(cp, buf)] = 0;
}

#define MAX_NAMES 160

int explain_learned(const Explain *e, double *mean_p) {
    int k = e->n < EXPLAIN_LEARNED_ROWS ? e->n : EXPLAIN_LEARNED_ROWS;
    double s = 0;
    for (int t = e->n - k; t < e->n; t++) s += exp(e->logp[t]);
    double mean = k > 0 ? s / k : 0;
    if (mean_p) *mean_p = mean;
    return mean >= EXPLAIN_LEARNED_P;
}

void explain_learned_line(const Explain *e, char *buf, size_t len) {
    double mean;
    if (explain_learned(e, &mean)) {
        buf[0] = 0;
        return;
    }
    int k = e->n < EXPLAIN_LEARNED_ROWS ? e->n : EXPLAIN_LEARNED_ROWS;
    snprintf(buf, len,
             EXPLAIN_NOT_LEARNED
             " (mean p(next) %.3f over the prompt's last %d characters, under %g)",
             mean, k, EXPLAIN_LEARNED_P);
}

void explain_print(FILE *f, const Explain *e, const Vocab *v) {
    int n = e->n, L = e->L;
    char ch[16], nx[16], pr[16], bl[16];
    char top_attn[EXPLAIN_NAME], top_norm[EXPLAIN_NAME];
    snprintf(top_attn, sizeof top_attn, "attn_l%d", L - 1);
    snprintf(top_norm, sizeof top_norm, "norm_l%d", L - 1);
    token_text(v, e->baseline, bl);
    char warn[256];
    explain_learned_line(e, warn, sizeof warn);
    if (warn[0]) fprintf(f, "%s\n\n", warn);
    fprintf(f,
            "Each row t predicts the character after it. Attention: layer %d's weights (mean over "
            "heads),\n"
            "the rollout through all layers, layer %d's norm-weighted attention. Effects on log "
            "p(next):\n"
            "leave-one-out (the character replaced by '%s'), knockout (the layer and key whose "
            "removal\n"
            "costs most) and gradient x input. Each cell: the position j, its character, the "
            "value.\n\n",
            L - 1, L - 1, bl);
    fprintf(f, "%3s %-6s %-6s %7s %-9s | %-16s %-16s %-16s | %-16s %-19s %-16s\n", "t", "char",
            "next", "p(next)", "predicted", top_attn, "rollout", top_norm, "leave-one-out",
            "knockout", "grad x input");
    for (int t = 0; t < n; t++) {
        char q1[24], q2[24], q3[24];
        token_text(v, e->tokens[t], ch);
        token_text(v, e->tokens[t + 1], nx);
        token_text(v, e->argmax[t], pr);
        snprintf(q1, sizeof q1, "'%s'", ch);
        snprintf(q2, sizeof q2, "'%s'", nx);
        snprintf(q3, sizeof q3, "'%s'", pr);
        fprintf(f, "%3d %-6s %-6s %7.4f %-9s |", t, q1, q2, exp(e->logp[t]), q3);
        const char *names[3] = {top_attn, "rollout", top_norm};
        for (int k = 0; k < 3; k++) {
            const double *r = explain_row(e, names[k], t);
            int j = explain_argmax(r, t + 1, 0);
            char c[16], cell[40];
            token_text(v, e->tokens[j], c);
            snprintf(cell, sizeof cell, "%d'%s' %.3f", j, c, r[j]);
            fprintf(f, " %-16s", cell);
        }
        fprintf(f, " |");
        {
            const double *r = e->loo + (size_t)t * n;
            int j = explain_argmax(r, t + 1, 1);
            char c[16], cell[40];
            token_text(v, e->tokens[j], c);
            snprintf(cell, sizeof cell, "%d'%s' %+.3f", j, c, r[j]);
            fprintf(f, " %-16s", cell);
        }
        if (e->row[t]) {
            int bl_ = 0, bj = 0;
            for (int l = 0; l < L; l++)
                for (int j = 0; j <= t; j++)
                    if (fabs(e->knock[((size_t)l * n + t) * n + j]) >
                        fabs(e->knock[((size_t)bl_ * n + t) * n + bj]))
                        bl_ = l, bj = j;
            char c[16], cell[48];
            token_text(v, e->tokens[bj], c);
            snprintf(cell, sizeof cell, "%d'%s' %+.3f l%d", bj, c,
                     e->knock[((size_t)bl_ * n + t) * n + bj], bl_);
            fprintf(f, " %-19s", cell);
            const double *r = e->gxi + (size_t)t * n;
            int j = explain_argmax(r, t + 1, 1);
            token_text(v, e->tokens[j], c);
            snprintf(cell, sizeof cell, "%d'%s' %+.3f", j, c, r[j]);
            fprintf(f, " %-16s", cell);
        }
        fputc('\n', f);
    }

    char an[MAX_NAMES][EXPLAIN_NAME], en[MAX_NAMES][EXPLAIN_NAME];
    int na = explain_attention_names(L, e->NH, 0, an, MAX_NAMES);
    int ne = explain_effect_names(L, e->NH, 0, en, MAX_NAMES);
    Agreement *g = xcalloc((size_t)na * ne, sizeof(Agreement), "agreement");
    Agreement *c = xcalloc((size_t)ne * ne, sizeof(Agreement), "agreement");
    double *abs_a = xmalloc((size_t)n * sizeof(double), "agreement");
    for (int t = 1; t < n; t++) {
        if (!e->row[t]) continue;
        for (int b = 0; b < ne; b++) {
            const double *er = explain_row(e, en[b], t);
            for (int a = 0; a < na; a++)
                agreement_add(&g[a * ne + b], explain_row(e, an[a], t), er, t + 1);
            for (int a = 0; a < ne; a++) {
                const double *ar = explain_row(e, en[a], t);
                for (int j = 0; j <= t; j++) abs_a[j] = fabs(ar[j]);
                agreement_add(&c[a * ne + b], abs_a, er, t + 1);
            }
        }
    }
    fprintf(f,
            "\nAgreement over the %d rows with at least two positions: top-1 (the most attended "
            "position is\n"
            "the one with the largest |effect|) / Kendall tau-b with |effect| / misattribution "
            "(the most\n"
            "attended position has under %.0f%% of the largest |effect|); ties are an even draw. "
            "The uniform\n"
            "rows put 1/(t+1) on every visible key in place of the weights (tau: n/a, a constant "
            "ranking).\n",
            (int)g[0].rows, 100 * EXPLAIN_MISATTRIBUTION);
    fprintf(f, "%-16s", "");
    for (int b = 0; b < ne; b++) fprintf(f, " %-17s", en[b]);
    fputc('\n', f);
    for (int a = 0; a < na; a++) {
        fprintf(f, "%-16s", an[a]);
        for (int b = 0; b < ne; b++) {
            const Agreement *x = &g[a * ne + b];
            char cell[40];
            double tau = ratio(x->tau_sum, x->tau_rows);
            char tc[16];
            if (tau == tau)
                snprintf(tc, sizeof tc, "%+.2f", tau);
            else
                snprintf(tc, sizeof tc, "n/a");
            snprintf(cell, sizeof cell, "%.2f/%s/%.2f", ratio(x->top1, x->rows), tc,
                     ratio(x->mis, x->mis_rows));
            fprintf(f, " %-17s", cell);
        }
        fputc('\n', f);
    }
    fprintf(f, "\nThe ceiling: how far the effects agree with each other (top-1 / tau-b of |a| "
               "with |b|).\n");
    fprintf(f, "%-16s", "");
    for (int b = 0; b < ne; b++) fprintf(f, " %-12s", en[b]);
    fputc('\n', f);
    for (int a = 0; a < ne; a++) {
        fprintf(f, "%-16s", en[a]);
        for (int b = 0; b < ne; b++) {
            const Agreement *x = &c[a * ne + b];
            char cell[40];
            snprintf(cell, sizeof cell, "%.2f/%+.2f", ratio(x->top1, x->rows),
                     ratio(x->tau_sum, x->tau_rows));
            fprintf(f, " %-12s", a == b ? "-" : cell);
        }
        fputc('\n', f);
    }
    free(g);
    free(c);
    free(abs_a);
}

// One JSON number (%.9g; null when not finite).
static void jnum(FILE *f, double x) {
    if (isfinite(x))
        fprintf(f, "%.9g", x);
    else
        fputs("null", f);
}

static void jrow(FILE *f, const double *r, int n) {
    fputc('[', f);
    for (int j = 0; j < n; j++) {
        if (j) fputc(',', f);
        jnum(f, r[j]);
    }
    fputc(']', f);
}

static void jstr(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

// A token as a JSON string.
static void jtok(FILE *f, const Vocab *v, int tok) {
    char buf[8] = {0};
    buf[utf8_encode(v->chars[tok], buf)] = 0;
    jstr(f, buf);
}

void explain_json(FILE *f, const Explain *e, const Vocab *v, const char *checkpoint) {
    int n = e->n, L = e->L, NH = e->NH;
    fprintf(f, "{\"schema\":\"explain-1\",\"checkpoint\":");
    jstr(f, checkpoint);
    fprintf(f, ",\"n_layer\":%d,\"n_head\":%d,\"loo_baseline_char\":", L, NH);
    jtok(f, v, e->baseline);
    double mean_p;
    int learned = explain_learned(e, &mean_p);
    fprintf(f, ",\"learned\":%s,\"learned_mean_p\":", learned ? "true" : "false");
    jnum(f, mean_p);
    fprintf(f, ",\"learned_threshold\":%g,\"misattribution_threshold\":%g,\"tokens\":[",
            EXPLAIN_LEARNED_P, EXPLAIN_MISATTRIBUTION);
    for (int i = 0; i <= n; i++) {
        if (i) fputc(',', f);
        jtok(f, v, e->tokens[i]);
    }
    fprintf(f, "],\n\"positions\":[");
    for (int t = 0; t < n; t++) {
        int k = t + 1;
        fprintf(f, "%s\n{\"t\":%d,\"char\":", t ? "," : "", t);
        jtok(f, v, e->tokens[t]);
        fprintf(f, ",\"next\":");
        jtok(f, v, e->tokens[t + 1]);
        fprintf(f, ",\"predicted\":");
        jtok(f, v, e->argmax[t]);
        fprintf(f, ",\"logp\":");
        jnum(f, e->logp[t]);
        fprintf(f, ",\"p\":");
        jnum(f, exp(e->logp[t]));
        fprintf(f, ",\"effects_computed\":%s,\n \"attention\":{\"heads\":[",
                e->row[t] ? "true" : "false");
        for (int l = 0; l < L; l++) {
            fprintf(f, "%s[", l ? "," : "");
            for (int h = 0; h < NH; h++) {
                if (h) fputc(',', f);
                jrow(f, e->attn + (((size_t)l * NH + h) * n + t) * n, k);
            }
            fputc(']', f);
        }
        fprintf(f, "],\"mean\":[");
        for (int l = 0; l < L; l++) {
            if (l) fputc(',', f);
            jrow(f, e->attn_mean + ((size_t)l * n + t) * n, k);
        }
        fprintf(f, "],\"rollout\":");
        jrow(f, e->rollout + (size_t)t * n, k);
        fprintf(f, ",\"norm\":[");
        for (int l = 0; l < L; l++) {
            if (l) fputc(',', f);
            jrow(f, e->norm + ((size_t)l * n + t) * n, k);
        }
        fprintf(f, "]},\n \"effects\":{\"loo\":");
        jrow(f, e->loo + (size_t)t * n, k);
        if (e->row[t]) {
            fprintf(f, ",\"knockout\":[");
            for (int l = 0; l < L; l++) {
                if (l) fputc(',', f);
                jrow(f, e->knock + ((size_t)l * n + t) * n, k);
            }
            fprintf(f, "]");
            if (e->knock_head) {
                fprintf(f, ",\"knockout_head\":[");
                for (int l = 0; l < L; l++) {
                    fprintf(f, "%s[", l ? "," : "");
                    for (int h = 0; h < NH; h++) {
                        if (h) fputc(',', f);
                        jrow(f, e->knock_head + (((size_t)l * NH + h) * n + t) * n, k);
                    }
                    fputc(']', f);
                }
                fputc(']', f);
            }
            fprintf(f, ",\"grad_x_input\":");
            jrow(f, e->gxi + (size_t)t * n, k);
        }
        fprintf(f, "}}");
    }
    fprintf(f, "],\n\"agreement\":[");
    char an[MAX_NAMES][EXPLAIN_NAME], en[MAX_NAMES][EXPLAIN_NAME];
    int per_head = e->knock_head != NULL;
    int na = explain_attention_names(L, NH, per_head, an, MAX_NAMES);
    int ne = explain_effect_names(L, NH, per_head, en, MAX_NAMES);
    int first = 1;
    for (int a = 0; a < na + ne; a++)
        for (int b = 0; b < ne; b++) {
            // attention measures (the uniform baseline's among them) against every effect, then
            // effect against effect
            const char *name = a < na ? an[a] : en[a - na];
            if (a >= na && a - na == b) continue;
            Agreement g = {0};
            for (int t = 1; t < n; t++) {
                if (!e->row[t]) continue;
                const double *er = explain_row(e, en[b], t);
                const double *ar = explain_row(e, name, t);
                if (a < na) {
                    agreement_add(&g, ar, er, t + 1);
                    continue;
                }
                double *abs_a = xmalloc((size_t)(t + 1) * sizeof(double), "agreement");
                for (int j = 0; j <= t; j++) abs_a[j] = fabs(ar[j]);
                agreement_add(&g, abs_a, er, t + 1);
                free(abs_a);
            }
            fprintf(
                f,
                "%s\n{\"measure\":\"%s\",\"kind\":\"%s\",\"effect\":\"%s\",\"rows\":%g,\"top1\":",
                first ? "" : ",", name, a < na ? "attention" : "effect", en[b], g.rows);
            first = 0;
            jnum(f, ratio(g.top1, g.rows));
            fprintf(f, ",\"tau\":");
            jnum(f, ratio(g.tau_sum, g.tau_rows));
            fprintf(f, ",\"tau_rows\":%g,\"misattribution\":", g.tau_rows);
            jnum(f, ratio(g.mis, g.mis_rows));
            fprintf(f, "}");
        }
    fprintf(f, "]}\n");
}

// ---------------------------------------------------------------------------------------------
// the controlled experiment

const char *const EXPLAIN_KIND_NAMES[KIND_COUNT] = {"copy", "rev", "find", "kv", "brackets"};

static int is_lower(int c) { return c >= 'a' && c <= 'z'; }

int explain_line_sources(const char *s, int len, int *src) {
    for (int i = 0; i < len; i++) src[i] = -1;
    if (len > 6 && !strncmp(s, "copy: ", 6)) {  // copy: SPAN | SPAN
        int a = 6, k = 0;
        while (a + k < len && is_lower(s[a + k])) k++;
        int b = a + k + 3;
        if (k < 1 || b + k != len || strncmp(s + a + k, " | ", 3) ||
            strncmp(s + a, s + b, (size_t)k))
            return -1;
        for (int i = 0; i < k; i++) src[b + i] = a + i;
        return KIND_COPY;
    }
    if (len > 5 && !strncmp(s, "rev: ", 5)) {  // rev: SPAN > NAPS
        int a = 5, k = 0;
        while (a + k < len && is_lower(s[a + k])) k++;
        int b = a + k + 3;
        if (k < 1 || b + k != len || strncmp(s + a + k, " > ", 3)) return -1;
        for (int i = 0; i < k; i++) {
            if (s[b + i] != s[a + k - 1 - i]) return -1;
            src[b + i] = a + k - 1 - i;
        }
        return KIND_REV;
    }
    if (len == 23 && !strncmp(s, "find: ", 6)) {  // find: LLLLLLLL q=X -> D
        if (strncmp(s + 14, " q=", 3) || strncmp(s + 18, " -> ", 4) || s[22] < '0' || s[22] > '7')
            return -1;
        int d = s[22] - '0';
        if (s[6 + d] != s[17]) return -1;
        src[22] = 6 + d;
        return KIND_FIND;
    }
    if (len > 4 && !strncmp(s, "kv: ", 4)) {  // kv: k=v k=v ... ; K? V
        int p = 4, found = -1;
        if (len < 10 || s[len - 2] != ' ' || s[len - 3] != '?' || s[len - 5] != ' ' ||
            s[len - 6] != ';')
            return -1;
        char key = s[len - 4];
        while (p + 3 < len - 6 && s[p + 1] == '=') {
            if (s[p] == key) found = p + 2;
            p += 4;
        }
        if (found < 0 || s[found] != s[len - 1]) return -1;
        src[len - 1] = found;
        return KIND_KV;
    }
    if (len > 0 &&
        (s[0] == '(' || s[0] == '[' || s[0] == '{')) {  // brackets: closers match openers
        int stack[64], top = 0;
        for (int i = 0; i < len; i++) {
            char c = s[i];
            if (c == '(' || c == '[' || c == '{') {
                if (top == 64) return -1;
                stack[top++] = i;
            } else if (c == ')' || c == ']' || c == '}') {
                if (!top) return -1;
                char o = s[stack[top - 1]];
                if ((c == ')' && o != '(') || (c == ']' && o != '[') || (c == '}' && o != '{'))
                    return -1;
                src[i] = stack[--top];
            }
        }
        return top == 0 ? KIND_BRACKETS : -1;
    }
    return -1;
}

typedef struct {
    Agreement *g;  // (nrow, ncol): the measures against the effects and the true source
    double *
        where;  // (nrow, 4): where each measure's top position lies: first, self, delimiter, source
    long predictions, correct;
} KindStats;

// A delimiter of the corpus's lines: neither a letter, a digit nor a bracket (the space, ':',
// '|', '>', '=', ';', '?', '-', and the newline before each line).
static int is_delimiter(int c) {
    return !(is_lower(c) || (c >= '0' && c <= '9') || c == '(' || c == ')' || c == '[' ||
             c == ']' || c == '{' || c == '}');
}

int explain_experiment(FILE *f, GPT *m, const Vocab *v, const char *path, int per_kind,
                       int baseline, char *err, size_t errlen) {
    uint64_t size;
    const char *why;
    FILE *in = fopen_regular(
        path, &size, &why);  // a regular file only: a FIFO or /dev/zero never blocks or loops
    if (!in) {
        snprintf(err, errlen, "cannot read the lines to measure '%s': %s", path, why);
        return 0;
    }
    int L = m->dims.n_layer, NH = m->dims.n_head, Tmax = m->dims.block_size;
    char an[MAX_NAMES][EXPLAIN_NAME], en[MAX_NAMES][EXPLAIN_NAME];
    int na = explain_attention_names(L, NH, 0, an, MAX_NAMES);
    int ne = explain_effect_names(L, NH, 0, en, MAX_NAMES);
    // rows: the attention measures (the uniform baseline's among them), then each effect's
    // |effect| as a measure (the ceiling); columns: the effects, then the true source (1 there, 0
    // elsewhere)
    int nrow = na + ne, ncol = ne + 1;
    KindStats ks[KIND_COUNT + 1];  // the kinds, then all of them together
    for (int k = 0; k <= KIND_COUNT; k++) {
        ks[k].g = xcalloc((size_t)nrow * ncol, sizeof(Agreement), "experiment");
        ks[k].where = xcalloc((size_t)nrow * 4, sizeof(double), "experiment");
        ks[k].predictions = ks[k].correct = 0;
    }
    char line[4096];
    int *tok = xmalloc((size_t)(Tmax + 2) * sizeof(int), "experiment");
    int src[4096];
    unsigned char *rows = xmalloc((size_t)Tmax + 1, "experiment");
    long lineno = 0;
    int newline = vocab_lookup(v, '\n');
    if (newline < 0) {
        snprintf(
            err, errlen,
            "the model's vocabulary has no newline, which the experiment puts before each line");
        fclose(in);
        return 0;
    }
    long too_long = 0;
    while (fgets(line, sizeof line, in)) {
        lineno++;
        int len = (int)strcspn(line, "\n");
        int c =
            line[len]
                ? '\n'
                : getc(in);  // a line longer than the buffer (4095 bytes): none of it is measured
        if (c != '\n' && c != EOF) {
            while ((c = getc(in)) != EOF && c != '\n') {}
            too_long++;
            continue;
        }
        line[len] = 0;
        int kind = explain_line_sources(line, len, src);
        if (kind < 0 || ks[kind].predictions >= per_kind) continue;
        int done = 1;
        for (int k = 0; k < KIND_COUNT; k++) done &= ks[k].predictions >= per_kind;
        if (done) break;
        // tokens: "\n" + line; row t = i predicts line[i] (position i + 1), its source at src[i] +
        // 1
        if (len + 1 > Tmax + 1) continue;
        tok[0] = newline;
        int bad = 0;
        for (int i = 0; i < len; i++) {
            tok[i + 1] = vocab_lookup(v, (unsigned char)line[i]);
            bad |= tok[i + 1] < 0;
        }
        if (bad) {
            snprintf(err, errlen,
                     "'%s' line %ld: a character that is not in the model's vocabulary", path,
                     lineno);
            fclose(in);
            return 0;
        }
        int last = -1, want = 0;
        for (int i = 0; i < len; i++) {
            rows[i] = src[i] >= 0 && ks[kind].predictions + want < per_kind;
            if (rows[i]) last = i, want++;
        }
        int n = last + 1;  // positions 0..last predict up to line[last]
        Explain e;
        explain_compute(m, tok, n, baseline, rows, 0, &e);
        for (int t = 0; t < n; t++) {
            if (!rows[t]) continue;
            int keys = t + 1, truth = src[t] + 1;
            double *tr = xcalloc((size_t)keys, sizeof(double), "experiment");
            double *ab = xcalloc((size_t)keys, sizeof(double), "experiment");
            tr[truth] = 1;
            // each measure's row is scored once and counted for its kind and for all kinds
            KindStats *both[2] = {&ks[kind], &ks[KIND_COUNT]};
            for (int kk = 0; kk < 2; kk++) {
                both[kk]->predictions++;
                both[kk]->correct += e.argmax[t] == e.tokens[t + 1];
            }
            for (int a = 0; a < nrow; a++) {
                // the measure: an attention row, or an effect's |effect| (the ceiling)
                const double *ar =
                    a < na ? explain_row(&e, an[a], t) : explain_row(&e, en[a - na], t);
                for (int j = 0; j < keys; j++) ab[j] = a < na ? ar[j] : fabs(ar[j]);
                // where its top position lies (ties an even draw): position 0 (the newline), t
                // itself, a delimiter of the line, the true source
                double top = ab[explain_argmax(ab, keys, 0)], tied = 0, w[4] = {0, 0, 0, 0};
                for (int j = 0; j < keys; j++) {
                    if (ab[j] != top) continue;
                    tied++;
                    w[0] += j == 0;
                    w[1] += j == t;
                    w[2] += j > 0 && is_delimiter(line[j - 1]);
                    w[3] += j == truth;
                }
                for (int kk = 0; kk < 2; kk++)
                    for (int q = 0; q < 4; q++) both[kk]->where[a * 4 + q] += w[q] / tied;
                for (int b = 0; b < ncol; b++) {
                    if (a >= na && a - na == b) continue;  // an effect against itself
                    Agreement d = {0};
                    agreement_add(&d, ab, b < ne ? explain_row(&e, en[b], t) : tr, keys);
                    for (int kk = 0; kk < 2; kk++) agreement_merge(&both[kk]->g[a * ncol + b], &d);
                }
            }
            free(tr);
            free(ab);
        }
        explain_free(&e);
    }
    fclose(in);
    free(tok);
    free(rows);
    if (too_long)
        fprintf(stderr,
                "note: '%s': %ld line(s) over %d bytes not measured (no line of the measured kinds "
                "is that long)\n",
                path, too_long, (int)sizeof line - 1);
    if (ks[KIND_COUNT].predictions == 0) {
        for (int k = 0; k <= KIND_COUNT; k++) free(ks[k].g), free(ks[k].where);
        snprintf(err, errlen,
                 "'%s' has no copy, rev, find, kv or bracket line of at most block_size (%d) "
                 "characters: "
                 "nothing to measure",
                 path, Tmax);
        return 0;
    }

    fprintf(f,
            "# attention against effects on held-out lines of %s (one row per answer character)\n",
            path);
    fprintf(f,
            "# predictions per kind, then accuracy (the most likely character is the right one)\n");
    for (int k = 0; k <= KIND_COUNT; k++) {
        const char *kn = k < KIND_COUNT ? EXPLAIN_KIND_NAMES[k] : "all";
        fprintf(f, "%s predictions: %ld\n%s accuracy: %.4f\n", kn, ks[k].predictions, kn,
                ratio((double)ks[k].correct, (double)ks[k].predictions));
    }
    // one figure a line, "KIND STAT MEASURE EFFECT: value" (a doc can name each one)
    fprintf(f,
            "# where each measure's top position lies, the share of rows: the first position (the "
            "newline\n"
            "# before the line), the predicting position itself, a delimiter, the true source\n");
    for (int k = 0; k <= KIND_COUNT; k++) {
        const char *kn = k < KIND_COUNT ? EXPLAIN_KIND_NAMES[k] : "all";
        for (int a = 0; a < nrow; a++) {
            fprintf(f, "%s top %s:", kn, a < na ? an[a] : en[a - na]);
            for (int q = 0; q < 4; q++)
                fprintf(f, " %.4f", ratio(ks[k].where[a * 4 + q], (double)ks[k].predictions));
            fputc('\n', f);
        }
    }
    const char *stat_names[3] = {"top1", "tau", "mis"};
    for (int k = KIND_COUNT; k >= 0; k--) {
        const char *kn = k < KIND_COUNT ? EXPLAIN_KIND_NAMES[k] : "all";
        fprintf(f,
                "# %s: each measure against each effect and the true source: top-1, tau-b, "
                "misattribution\n",
                kn);
        for (int st = 0; st < 3; st++)
            for (int a = 0; a < nrow; a++)
                for (int b = 0; b < ncol; b++) {
                    if (a >= na && a - na == b) continue;  // an effect against itself
                    const Agreement *g = &ks[k].g[a * ncol + b];
                    double val = st == 0   ? ratio(g->top1, g->rows)
                                 : st == 1 ? ratio(g->tau_sum, g->tau_rows)
                                           : ratio(g->mis, g->mis_rows);
                    fprintf(f, "%s %s %s %s: ", kn, stat_names[st], a < na ? an[a] : en[a - na],
                            b < ne ? en[b] : "truth");
                    if (val == val)
                        fprintf(f, "%.4f\n", val);
                    else
                        fprintf(f, "n/a\n");  // tau of a constant ranking (uniform weights)
                }
    }
    for (int k = 0; k <= KIND_COUNT; k++) free(ks[k].g), free(ks[k].where);
    return 1;
}
