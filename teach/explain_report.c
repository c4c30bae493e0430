// teach/explain_report.c: the measures of one sequence (teach/explain.c) as a reader gets them:
// whether the model has learned the prompt, the terminal table (each row's prediction, its most
// attended and most effective positions, the agreement tables) and every number as one JSON
// object.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"    // xmalloc
#include "base/data.h"      // Vocab, utf8_encode
#include "teach/explain.h"  // Explain, the measures' names and their agreement

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

    char an[EXPLAIN_MAX_NAMES][EXPLAIN_NAME], en[EXPLAIN_MAX_NAMES][EXPLAIN_NAME];
    int na = explain_attention_names(L, e->NH, 0, an, EXPLAIN_MAX_NAMES);
    int ne = explain_effect_names(L, e->NH, 0, en, EXPLAIN_MAX_NAMES);
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
            double tau = explain_ratio(x->tau_sum, x->tau_rows);
            char tc[16];
            if (tau == tau)
                snprintf(tc, sizeof tc, "%+.2f", tau);
            else
                snprintf(tc, sizeof tc, "n/a");
            snprintf(cell, sizeof cell, "%.2f/%s/%.2f", explain_ratio(x->top1, x->rows), tc,
                     explain_ratio(x->mis, x->mis_rows));
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
            snprintf(cell, sizeof cell, "%.2f/%+.2f", explain_ratio(x->top1, x->rows),
                     explain_ratio(x->tau_sum, x->tau_rows));
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
    char an[EXPLAIN_MAX_NAMES][EXPLAIN_NAME], en[EXPLAIN_MAX_NAMES][EXPLAIN_NAME];
    int per_head = e->knock_head != NULL;
    int na = explain_attention_names(L, NH, per_head, an, EXPLAIN_MAX_NAMES);
    int ne = explain_effect_names(L, NH, per_head, en, EXPLAIN_MAX_NAMES);
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
            jnum(f, explain_ratio(g.top1, g.rows));
            fprintf(f, ",\"tau\":");
            jnum(f, explain_ratio(g.tau_sum, g.tau_rows));
            fprintf(f, ",\"tau_rows\":%g,\"misattribution\":", g.tau_rows);
            jnum(f, explain_ratio(g.mis, g.mis_rows));
            fprintf(f, "}");
        }
    fprintf(f, "]}\n");
}
