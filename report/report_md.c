// report/report_md.c: report.md, the comparison as a document: the introduction (what each variant
// computes), the configuration, the side-by-side table, the reading (report/reading.c), the samples
// and the list of files.
#define _POSIX_C_SOURCE 200809L
#include "report/compare_log.h"
#include "report/reading.h"
#include "report/svg.h"
#include "report/writer.h"

#include "base/common.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// What each value of the leak keys computes, for report.md's introduction.
static const struct {
    const char *key, *value, *what;
} VALUE_MEANING[] = {
    {"model.attn_mask", "causal",
     "sets the scores above the diagonal to -inf, so a position sees only itself and the "
     "past (correct)"},
    {"model.attn_mask", "zero",
     "sets the scores above the diagonal to 0 instead of -inf, so the future positions "
     "keep weight after the softmax (the mistake)"},
    {"model.attn_mask", "none",
     "masks nothing: every position sees the whole window (the mistake)"},
    {"model.softmax_axis", "keys",
     "normalises each query's row of weights over the keys, so every row sums to 1 "
     "(correct)"},
    {"model.softmax_axis", "queries",
     "normalises each key's column over the queries that see it, after the causal "
     "mask (the mistake)"},
};

static const char *value_meaning(const char *key, const char *value) {
    for (size_t i = 0; i < sizeof VALUE_MEANING / sizeof VALUE_MEANING[0]; i++)
        if (strcmp(VALUE_MEANING[i].key, key) == 0 && strcmp(VALUE_MEANING[i].value, value) == 0)
            return VALUE_MEANING[i].what;
    return NULL;
}

// ---------------------------------------------------------------------------------------------
// helpers

static const char *const COUNT_WORD[] = {"no", "one", "two", "three", "four"};
static const char *const COUNT_TITLE[] = {"No", "One", "Two", "Three", "Four"};

// Format a number into buf, or an em dash when it was not measured.
static const char *fnum(char *buf, size_t n, const char *fmt, double x) {
    if (isnan(x))
        snprintf(buf, n, "—");
    else
        snprintf(buf, n, fmt, x);
    return buf;
}

// "a / b / c" for a table cell: one number per variant.
static void cell(Out *o, const char *fmt, const double *x, int n) {
    char b[64];
    for (int i = 0; i < n; i++) out(o, "%s%s", i ? " / " : " ", fnum(b, sizeof b, fmt, x[i]));
    out(o, " |");
}

// Items i = 0..n-1 as "A", "A and B" or "A, B and C", each printed by item(o, ctx, i).
static void join(Out *o, int n, void (*item)(Out *, const void *, int), const void *ctx) {
    for (int i = 0; i < n; i++) {
        if (i > 0) out(o, i + 1 == n ? " and " : ", ");
        item(o, ctx, i);
    }
}

// The element of s[0..n) nearest to target (the first on a tie).
static long nearest(const long *s, size_t n, double target) {
    long best = s[0];
    for (size_t i = 1; i < n; i++)
        if (fabs((double)s[i] - target) < fabs((double)best - target)) best = s[i];
    return best;
}

// ---------------------------------------------------------------------------------------------
// report.md: the document

// The table's columns after `step`; `honest` ones (gen_loss, future_mass), which tell a leak, are
// left out of the scale's report, which reads what the scale does to the softmax.
typedef enum { MD_VAL, MD_GEN, MD_TRAIN, MD_PROBE } MdSource;

static const struct {
    const char *head;
    const char *fmt;
    double mult;
    MdSource src;
    size_t off;  // MD_PROBE: into HeadStats
    int honest;
} MD_COLS[] = {
    {"val loss", "%.4f", 1, MD_VAL, 0, 0},
    {"gen loss", "%.4f", 1, MD_GEN, 0, 1},
    {"train loss", "%.4f", 1, MD_TRAIN, 0, 0},
    {"future mass", "%.3g", 1, MD_PROBE, offsetof(HeadStats, future_mass), 1},
    {"entropy_norm", "%.3f", 1, MD_PROBE, offsetof(HeadStats, entropy_norm), 0},
    {"max weight", "%.3f", 1, MD_PROBE, offsetof(HeadStats, max_weight), 0},
    {"rows > 0.99", "%.1f%%", 100, MD_PROBE, offsetof(HeadStats, frac_gt_099), 0},
    {"score std", "%.3g", 1, MD_PROBE, offsetof(HeadStats, score_std), 0},
    {"‖dS‖/‖dP‖", "%.3g", 1, MD_PROBE, offsetof(HeadStats, ds_over_dp), 0},
    {"row gain (median)", "%.3g", 1, MD_PROBE, offsetof(HeadStats, row_gain_median), 0},
    {"‖dWq‖", "%.3g", 1, MD_PROBE, offsetof(HeadStats, gnorm_wq), 0},
};
#define N_MD_COLS (sizeof MD_COLS / sizeof MD_COLS[0])

static int md_col_shown(const CompareLog *log, size_t c) {
    return !MD_COLS[c].honest || log->kind != KIND_SCALE;
}

// Column c of variant L's row at step s (the whole-split losses at the end; the probe batch's
// loss as the training loss before any step).
static double md_value(const VarLog *L, size_t c, long s, long end) {
    const HeadStats *p = probe_at(L, s);
    switch (MD_COLS[c].src) {
    case MD_VAL:
        return s == end && L->has_final && isfinite(L->final_val) ? L->final_val : val_upto(L, s);
    case MD_GEN:
        return s == end && L->has_final && isfinite(L->final_gen) ? L->final_gen : gen_upto(L, s);
    case MD_TRAIN:
        return steps_upto(L, s) == 0 && p ? p->loss : train_avg_upto(L, s);
    case MD_PROBE:
        return MD_COLS[c].mult * stat_or_nan(p, MD_COLS[c].off);
    }
    return NAN;
}

// The steps the table shows: the first and last probes, the probes nearest to a quarter, half
// and three quarters of the run, and the end (into rows, at least 8; returns the count).
static size_t table_steps(const CompareLog *log, const long *ps, size_t np, long end, long *rows) {
    const VarLog *S = &log->v[0];
    size_t nr = 0;
    if (np > 0) {
        rows[nr++] = ps[0];
        for (int q = 1; q <= 3; q++) rows[nr++] = nearest(ps, np, 0.25 * q * (double)end);
        rows[nr++] = ps[np - 1];
    } else if (S->n_steps > 0) {  // no probes: pick the rows from the loss steps
        long *ls = xmalloc(S->n_steps * sizeof(long), "table steps");
        for (size_t i = 0; i < S->n_steps; i++) ls[i] = S->steps[i].k.step;
        for (int q = 1; q <= 3; q++) rows[nr++] = nearest(ls, S->n_steps, 0.25 * q * (double)end);
        free(ls);
    }
    rows[nr++] = end;
    qsort(rows, nr, sizeof(long), cmp_long);
    size_t k = 0;
    for (size_t i = 0; i < nr; i++)
        if (k == 0 || rows[k - 1] != rows[i]) rows[k++] = rows[i];
    return k;
}

static void md_table(Out *o, const CompareLog *log, const long *ps, size_t np, long end) {
    long rows[8];
    size_t nr = table_steps(log, ps, np, end, rows);
    out(o, "## Side by side\n\nEach cell: **");
    for (int v = 0; v < log->n; v++) out(o, "%s%s", v ? " / " : "", log->v[v].name);
    out(o, "**.\n\n| step |");
    for (size_t c = 0; c < N_MD_COLS; c++)
        if (md_col_shown(log, c)) out(o, " %s |", MD_COLS[c].head);
    out(o, "\n|:---|");
    for (size_t c = 0; c < N_MD_COLS; c++)
        if (md_col_shown(log, c)) out(o, "---:|");
    out(o, "\n");
    for (size_t i = 0; i < nr; i++) {
        long s = rows[i];
        out(o, "| %ld%s |", s, s == end ? " (end)" : s == 0 ? " (init)" : "");
        for (size_t c = 0; c < N_MD_COLS; c++) {
            if (!md_col_shown(log, c)) continue;
            double x[COMPARE_MAX_VARIANTS];
            for (int v = 0; v < log->n; v++) x[v] = md_value(&log->v[v], c, s, end);
            cell(o, MD_COLS[c].fmt, x, log->n);
        }
        out(o, "\n");
    }
    out(o,
        "\nval loss: the last evaluation at or before the step; at the end, the whole validation "
        "split. "
        "train loss: mean of the last %d training losses up to the step (at step 0, the loss of "
        "the fixed "
        "probe batch before any update). Attention columns are averages over all layers and heads "
        "on the "
        "fixed probe batch; — = not measured at that step. entropy_norm: row entropy / ln(visible "
        "keys), "
        "1 = uniform, 0 = one-hot. ‖dS‖/‖dP‖: the fraction of the gradient reaching the weights P "
        "that "
        "survives the softmax into the scores S, over whole heads; row gain: the same per row, "
        "median over "
        "rows. ‖dWq‖: the norm of the gradient of the whole query matrix.",
        TRAIN_AVG_WINDOW);
    if (log->kind != KIND_SCALE)
        out(o, " gen loss: the honest loss on the fixed generation windows, each character "
               "predicted from the "
               "characters before it only, as in generation (val loss and train loss are "
               "teacher-forced: every "
               "position is computed with the whole window in view); the last evaluation at or "
               "before the step, "
               "at the end the final one. future mass: the mean weight a row puts on positions "
               "after its own (0 "
               "for a causal model).");
    out(o, "\n\n");
}

// What a variant of the scale or a leak computes, for the introduction.
static void md_variant_meaning(Out *o, const CompareLog *log, int i, int head_dim) {
    const VarLog *v = &log->v[i];
    const char *what = value_meaning(log->key, v->value);
    out(o, "**%s** ", v->name);
    int scale = log->kind == KIND_SCALE;
    if (what)
        out(o, "%s", what);
    else if (scale && strcmp(v->value, "sqrt") == 0)
        out(o, "multiplies the attention scores Q·Kᵀ by 1/sqrt(d_k) = 1/sqrt(%d) = %.4g", head_dim,
            config_scale_factor(v->value, head_dim));
    else if (scale && strcmp(v->value, "none") == 0)
        out(o, "does not scale the attention scores");
    else if (scale)
        out(o, "multiplies the attention scores by %s", v->value);
    else
        out(o, "has `%s` = %s", log->key, v->value);
}

static void variant_value(Out *o, const void *ctx, int i) {
    const CompareLog *log = ctx;
    out(o, "**%s**", log->v[i].value);
}

static void md_intro(Out *o, const CompareLog *log, const Config *cfg, int head_dim) {
    const char *run = cfg->name[0] ? cfg->name : "comparison";
    if (is_textbook_scale(log)) {
        out(o, "# Attention scale: 1/sqrt(d_k) vs none — %s\n\n", run);
        out(o,
            "Two models trained side by side from identical initial weights on identical batches. "
            "The only "
            "difference: **scaled** multiplies the attention scores Q·Kᵀ by 1/sqrt(d_k) = "
            "1/sqrt(%d) = %.4g; "
            "**unscaled** does not.\n\n",
            head_dim, config_scale_factor("sqrt", head_dim));
        return;
    }
    if (log->title)
        out(o, "# %s: ", log->title);
    else
        out(o, "# `%s`: ", log->key);
    for (int i = 0; i < log->n; i++) out(o, "%s%s", i ? " vs " : "", log->v[i].value);
    out(o, " — %s\n\n", run);
    out(o,
        "%s models trained side by side from identical initial weights on identical batches. The "
        "only "
        "difference is `%s`: ",
        COUNT_TITLE[log->n], log->key);
    if (log->kind == KIND_OTHER) {
        join(o, log->n, variant_value, log);
    } else {
        for (int i = 0; i < log->n; i++) {
            if (i > 0) out(o, "; ");
            md_variant_meaning(o, log, i, head_dim);
        }
    }
    out(o, ".");
    // the attention settings the variants share
    static const struct {
        const char *key;
        size_t off;
    } SHARED[] = {
        {"model.attn_scale", offsetof(Config, attn_scale_str)},
        {"model.attn_mask", offsetof(Config, attn_mask)},
        {"model.softmax_axis", offsetof(Config, softmax_axis)},
    };
    int first = 1;
    for (size_t k = 0; k < sizeof SHARED / sizeof SHARED[0]; k++) {
        if (strcmp(SHARED[k].key, log->key) == 0) continue;
        out(o, "%s`%s` = %s", first ? " Shared by all: " : ", ", SHARED[k].key,
            (const char *)cfg + SHARED[k].off);
        first = 0;
    }
    out(o, "%s\n\n", first ? "" : ".");
}

// The table of the configuration; a compared key in it (train.lr) shows each variant's value.
static void md_config(Out *o, const CompareLog *log, const Config *cfg, int head_dim) {
    char lr_shared[32], lr[160];
    snprintf(lr_shared, sizeof lr_shared, "%g", cfg->lr);
    compare_key_value(lr, sizeof lr, log, "train.lr", lr_shared);
    out(o, "## Configuration\n\n");
    out(o, "| n_layer | n_head | n_embd | head_dim | block_size | batch_size | max_steps | init | "
           "lr | seed |\n");
    out(o, "|---:|---:|---:|---:|---:|---:|---:|:---|---:|---:|\n");
    out(o, "| %d | %d | %d | %d | %d | %d | %d | %s | %s | %d |\n\n", cfg->n_layer, cfg->n_head,
        cfg->n_embd, head_dim, cfg->block_size, cfg->batch_size, cfg->max_steps, cfg->init, lr,
        cfg->seed);
    out(o, "Data: `%s`. Attention probed every %d steps, validation every %d steps.\n\n",
        cfg->data_path, cfg->attn_interval, cfg->eval_interval);
}

// A fence of backticks longer than any run of backticks in the text, so the text needs no escaping.
static int fence_length(const char *s) {
    int longest = 0, run = 0;
    for (; *s; s++) {
        run = *s == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    return longest < 3 ? 3 : longest + 1;
}

static void md_samples(Out *o, const CompareLog *log) {
    int any = 0;
    for (int i = 0; i < log->n; i++) any |= log->v[i].sample != NULL;
    if (!any) return;
    out(o, "\n## Samples\n\nThe text each variant generated at the end of training, as the run "
           "printed it.\n");
    for (int i = 0; i < log->n; i++) {
        const char *s = log->v[i].sample;
        out(o, "\n**%s**:\n\n", log->v[i].name);
        if (!s) {
            out(o, "(no sample)\n");
            continue;
        }
        int fl = fence_length(s);
        size_t n = strlen(s);
        for (int k = 0; k < fl; k++) out(o, "`");
        out(o, "\n%s%s", s, n > 0 && s[n - 1] == '\n' ? "" : "\n");
        for (int k = 0; k < fl; k++) out(o, "`");
        out(o, "\n");
    }
}

typedef struct {
    const CompareLog *log;
    const char *file;
} VariantFile;

static void variant_file(Out *o, const void *ctx, int i) {
    const VariantFile *vf = ctx;
    out(o, "`%s/%s`", vf->log->v[i].name, vf->file);
}

static void panel_summary(Out *o, const void *ctx, int k) {
    const CompareLog *log = ctx;
    for (size_t i = 0; i < N_PANELS; i++)
        if (panel_shown(log, i) && k-- == 0) out(o, "%s", PANELS[i].summary);
}

static void md_files(Out *o, const CompareLog *log) {
    char all[32];
    if (log->n == 2)
        snprintf(all, sizeof all, "both variants");
    else
        snprintf(all, sizeof all, "all %s variants", COUNT_WORD[log->n]);
    int np = 0;
    for (size_t i = 0; i < N_PANELS; i++) np += panel_shown(log, i);
    out(o, "\n## Files\n\n- `%s`: ", compare_svg_name(log));
    join(o, np, panel_summary, log);
    out(o, " over training, %s overlaid.\n", all);
    out(o, "- `compare.csv`: every step of %s (losses, and the attention averages where probed).\n",
        all);
    VariantFile attention = {log, "attention.csv"}, metrics = {log, "metrics.csv"};
    out(o, "- ");
    join(o, log->n, variant_file, &attention);
    out(o, ": the statistics per layer and head at every probe; ");
    join(o, log->n, variant_file, &metrics);
    out(o, ": the training logs.\n");
}

// The whole of report.md.
static void md_document(Out *o, const CompareLog *log, const Config *cfg) {
    int head_dim = cfg->n_head > 0 ? cfg->n_embd / cfg->n_head : 0;
    long end = last_step(log);
    size_t np = 0;
    long *ps = common_probe_steps(log, &np);
    md_intro(o, log, cfg, head_dim);
    md_config(o, log, cfg, head_dim);
    md_table(o, log, ps, np, end);
    out(o, "## What the numbers show\n\n");
    if (log->kind == KIND_SCALE)
        read_scale(o, log, cfg, ps, np, end, head_dim);
    else if (log->kind == KIND_LEAK)
        read_leak(o, log, cfg, ps, np, end);
    else
        read_other(o, log, end);
    free(ps);
    if (log->kind != KIND_SCALE) md_samples(o, log);
    md_files(o, log);
}

// report.md's text, built in memory (report.html shows the same): malloc'd, or NULL with a
// message in err.
char *compare_md_text(const CompareLog *log, const Config *cfg, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    Out o = {open_memstream(&text, &len), 1, 0};
    if (!o.f) {
        snprintf(err, errlen, "cannot build report.md in memory: %s",
                 strerror(errno ? errno : ENOMEM));
        return NULL;
    }
    md_document(&o, log, cfg);
    int ok = o.ok && !ferror(o.f);
    if (fclose(o.f) != 0 || !ok) {
        snprintf(err, errlen, "cannot build report.md in memory: %s",
                 strerror(o.err_no ? o.err_no : ENOMEM));
        free(text);
        return NULL;
    }
    return text;
}

int compare_write_md(const CompareLog *log, const char *md, char *err, size_t errlen) {
    char path[2200];
    Out o;
    if (!out_open(&o, log->out_dir, "report.md", path, sizeof path, err, errlen)) return 0;
    out(&o, "%s", md);
    return out_close(&o, path, err, errlen);
}
