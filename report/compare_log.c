// report/compare_log.c: the comparison log: every step's losses and the sparse attention probes of
// each variant in growing arrays, the attention weights of the probe sequence at three probes, and
// the queries the written files read them through (report/report.c writes them).
#include "report/compare_log.h"

#include "base/common.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

// The keys with a reading of their own (the rest have the losses' reading, KIND_OTHER).
static const struct {
    const char *key;
    CompareKind kind;
    const char *title;  // of report.md and the SVG
} KNOWN_KEYS[] = {
    {"model.attn_scale", KIND_SCALE, "Attention scale"},
    {"model.attn_mask", KIND_LEAK, "Attention mask"},
    {"model.softmax_axis", KIND_LEAK, "Softmax axis"},
};

// Grow *p (of *cap elements of `elem` bytes) to hold at least `need`; dies on overflow or OOM.
static void *grow(void *p, size_t *cap, size_t need, size_t elem, const char *what) {
    if (need <= *cap) return p;
    size_t ncap = *cap ? *cap : 256;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) die(EXIT_RUNTIME, "size overflow growing %s", what);
        ncap *= 2;
    }
    size_t bytes;
    if (!mul_size(ncap, elem, &bytes)) die(EXIT_RUNTIME, "size overflow growing %s", what);
    void *q = realloc(p, bytes);
    if (!q) die(EXIT_RUNTIME, "out of memory growing %s to %zu bytes", what, bytes);
    *cap = ncap;
    return q;
}

// ---------------------------------------------------------------------------------------------
// the log, filled during the run

// A variant's name: the value, except the scale's "sqrt" and "none" (--compare-scaling's names).
static const char *variant_name(CompareKind kind, const char *value) {
    if (kind == KIND_SCALE && strcmp(value, "sqrt") == 0) return "scaled";
    if (kind == KIND_SCALE && strcmp(value, "none") == 0) return "unscaled";
    return value;
}

CompareLog *compare_log_open(const char *out_dir, long max_steps, const char *key,
                             const char *const *values, int n) {
    if (!key || !values || n < 2 || n > COMPARE_MAX_VARIANTS) return NULL;
    for (int i = 0; i < n; i++)
        if (!values[i]) return NULL;
    CompareLog *log = xcalloc(1, sizeof(CompareLog), "comparison log");
    log->out_dir = xstrdup(out_dir ? out_dir : ".", "comparison log");
    log->max_steps = max_steps;
    log->key = xstrdup(key, "comparison log");
    log->kind = KIND_OTHER;
    log->title = NULL;
    for (size_t k = 0; k < sizeof KNOWN_KEYS / sizeof KNOWN_KEYS[0]; k++)
        if (strcmp(KNOWN_KEYS[k].key, key) == 0) {
            log->kind = KNOWN_KEYS[k].kind;
            log->title = KNOWN_KEYS[k].title;
        }
    log->n = n;
    for (int i = 0; i < n; i++) {
        VarLog *v = &log->v[i];
        v->value = xstrdup(values[i], "comparison log");
        v->name = xstrdup(variant_name(log->kind, values[i]), "comparison log");
        v->final_train = v->final_val = v->final_gen = v->final_gen_tf = NAN;
        for (int k = 0; k < N_SNAPS; k++) v->snap[k].step = -1;
    }
    return log;
}

static VarLog *variant(CompareLog *log, int i) {
    return log && i >= 0 && i < log->n ? &log->v[i] : NULL;
}

void compare_log_probe(CompareLog *log, int i, long step, const HeadStats *mean) {
    VarLog *v = variant(log, i);
    if (!v || !mean) return;
    v->probes =
        grow(v->probes, &v->cap_probes, v->n_probes + 1, sizeof(ProbeRec), "attention probes");
    ProbeRec *r = &v->probes[v->n_probes++];
    r->k.step = step;
    r->k.seq = log->seq++;
    r->s = *mean;
}

void compare_log_step(CompareLog *log, int i, long step, double loss, double val_loss,
                      double gen_loss) {
    VarLog *v = variant(log, i);
    if (!v) return;
    v->steps = grow(v->steps, &v->cap_steps, v->n_steps + 1, sizeof(StepRec), "step losses");
    StepRec *r = &v->steps[v->n_steps++];
    r->k.step = step;
    r->k.seq = log->seq++;
    r->loss = loss;
    r->val = val_loss;
    r->gen = gen_loss;
    r->lse = r->zmax = NAN;
}

void compare_log_logits(CompareLog *log, int i, long step, double lse_mean, double max_logit) {
    VarLog *v = variant(log, i);
    if (!v || v->n_steps == 0 || v->steps[v->n_steps - 1].k.step != step) return;
    v->steps[v->n_steps - 1].lse = lse_mean;
    v->steps[v->n_steps - 1].zmax = max_logit;
}

// Keep P (L,NH,T,T) as snapshot k of step `step`, cropped to the first map_Tm positions.
static void keep_snap(const CompareLog *log, MapSnap *sn, long step, const real *P) {
    int NH = log->map_NH, T = log->map_T, Tm = log->map_Tm;
    size_t heads = (size_t)log->map_L * NH, n;
    if (!mul_size(heads, (size_t)Tm * Tm, &n) || !mul_size(n, sizeof(float), &n))
        die(EXIT_RUNTIME, "size overflow keeping the attention maps");
    if (!sn->P) sn->P = xmalloc(n, "attention maps");
    for (size_t h = 0; h < heads; h++)
        for (int t = 0; t < Tm; t++)
            for (int u = 0; u < Tm; u++)
                sn->P[(h * Tm + t) * Tm + u] = (float)P[(h * T + t) * T + u];
    sn->step = step;
}

void compare_log_attention(CompareLog *log, int i, long step, const real *P, int L, int NH, int T,
                           const uint32_t *text) {
    VarLog *v = variant(log, i);
    if (!v || !P || !text || L < 1 || NH < 1 || T < 1) return;
    if (!log->map_text) {
        log->map_L = L;
        log->map_NH = NH;
        log->map_T = T;
        log->map_Tm = T < COMPARE_MAP_T ? T : COMPARE_MAP_T;
        log->map_text = xmalloc((size_t)log->map_Tm * sizeof(uint32_t), "probe sequence");
        memcpy(log->map_text, text, (size_t)log->map_Tm * sizeof(uint32_t));
    } else if (L != log->map_L || NH != log->map_NH || T != log->map_T) {
        return;
    }
    double mid = (double)log->max_steps / 2;
    if (v->snap[SNAP_FIRST].step < 0) keep_snap(log, &v->snap[SNAP_FIRST], step, P);
    if (v->snap[SNAP_MIDDLE].step < 0 ||
        fabs((double)step - mid) < fabs((double)v->snap[SNAP_MIDDLE].step - mid))
        keep_snap(log, &v->snap[SNAP_MIDDLE], step, P);
    if (step >= v->snap[SNAP_LAST].step) keep_snap(log, &v->snap[SNAP_LAST], step, P);
}

void compare_log_command(CompareLog *log, const char *command) {
    if (!log || !command) return;
    free(log->command);
    log->command = xstrdup(command, "command line");
}

void compare_log_final(CompareLog *log, int i, const CompareFinal *f) {
    VarLog *v = variant(log, i);
    if (!v || !f) return;
    v->final_train = f->train_loss;
    v->final_val = f->val_loss;
    v->final_gen = f->gen_loss;
    v->final_gen_tf = f->gen_loss_tf;
    free(v->sample);
    v->sample = f->sample ? xstrdup(f->sample, "sample text") : NULL;
    v->has_final = 1;
}

const char *compare_variant_name(const CompareLog *log, int i) {
    return log && i >= 0 && i < log->n ? log->v[i].name : NULL;
}

const char *compare_key_value(char *buf, size_t n, const CompareLog *log, const char *key,
                              const char *shared) {
    if (!log || !log->key || strcmp(log->key, key) != 0) {
        snprintf(buf, n, "%s", shared);
        return buf;
    }
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < log->n && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? " / " : "", log->v[i].value);
    return buf;
}

const char *compare_svg_name(const CompareLog *log) {
    return log && log->kind == KIND_SCALE ? "scaling.svg" : "compare.svg";
}

// ---------------------------------------------------------------------------------------------
// the records sorted, and the queries on them

static int cmp_rec(const void *a, const void *b) {
    const RecKey *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

// Sort records (each starting with a RecKey) by step, as they normally arrive, and keep the
// last record of any repeated step. Returns the new count.
static size_t sort_dedupe(void *recs, size_t n, size_t elem) {
    char *r = recs;
    int sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        sorted =
            ((const RecKey *)(r + (i - 1) * elem))->step < ((const RecKey *)(r + i * elem))->step;
    if (sorted) return n;
    qsort(r, n, elem, cmp_rec);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        int same = j > 0 && ((const RecKey *)(r + (j - 1) * elem))->step ==
                                ((const RecKey *)(r + i * elem))->step;
        memmove(r + (same ? j - 1 : j) * elem, r + i * elem, elem);
        if (!same) j++;
    }
    return j;
}

static void sort_variant(VarLog *v) {
    v->n_steps = sort_dedupe(v->steps, v->n_steps, sizeof(StepRec));
    v->n_probes = sort_dedupe(v->probes, v->n_probes, sizeof(ProbeRec));
}

void compare_log_sort(CompareLog *log) {
    for (int v = 0; v < log->n; v++) sort_variant(&log->v[v]);
}

// Number of step records with step <= s (binary search).
size_t steps_upto(const VarLog *v, long s) {
    size_t lo = 0, hi = v->n_steps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->steps[mid].k.step <= s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const StepRec *step_at(const VarLog *v, long s) {
    size_t n = steps_upto(v, s);
    return n > 0 && v->steps[n - 1].k.step == s ? &v->steps[n - 1] : NULL;
}

const HeadStats *probe_at(const VarLog *v, long s) {
    size_t lo = 0, hi = v->n_probes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->probes[mid].k.step < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < v->n_probes && v->probes[lo].k.step == s ? &v->probes[lo].s : NULL;
}

// The latest evaluated (finite) value of a step field (val or gen) at or before step s; NaN if
// none.
static double evaluated_upto(const VarLog *v, size_t field, long s) {
    for (size_t i = steps_upto(v, s); i > 0; i--) {
        double x;
        memcpy(&x, (const char *)&v->steps[i - 1] + field, sizeof x);
        if (isfinite(x)) return x;
    }
    return NAN;
}

double val_upto(const VarLog *v, long s) { return evaluated_upto(v, offsetof(StepRec, val), s); }
double gen_upto(const VarLog *v, long s) { return evaluated_upto(v, offsetof(StepRec, gen), s); }

// Mean of the finite training losses among the last TRAIN_AVG_WINDOW steps at or before s.
double train_avg_upto(const VarLog *v, long s) {
    size_t n = steps_upto(v, s), k = 0;
    double sum = 0;
    for (size_t i = n; i > 0 && n - i < TRAIN_AVG_WINDOW; i--)
        if (isfinite(v->steps[i - 1].loss)) {
            sum += v->steps[i - 1].loss;
            k++;
        }
    return k ? sum / (double)k : NAN;
}

// The last step of the run: the largest step with a loss, else the largest probe step.
long last_step(const CompareLog *log) {
    long end = 0;
    for (int i = 0; i < log->n; i++) {
        const VarLog *v = &log->v[i];
        if (v->n_steps && v->steps[v->n_steps - 1].k.step > end)
            end = v->steps[v->n_steps - 1].k.step;
        if (v->n_probes && v->probes[v->n_probes - 1].k.step > end)
            end = v->probes[v->n_probes - 1].k.step;
    }
    return end;
}

int has_output_logits(const CompareLog *log) {
    for (int i = 0; i < log->n; i++)
        for (size_t k = 0; k < log->v[i].n_steps; k++)
            if (isfinite(log->v[i].steps[k].lse)) return 1;
    return 0;
}

// A statistic of a probe (a HeadStats field at offset `off`), NaN without a probe.
double stat_or_nan(const HeadStats *p, size_t off) {
    if (!p) return NAN;
    double x;
    memcpy(&x, (const char *)p + off, sizeof x);
    return x;
}

// qsort's order of longs, ascending.
int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

// Probe steps where every variant was probed, ascending (malloc'd; *n set).
long *common_probe_steps(const CompareLog *log, size_t *n) {
    const VarLog *a = &log->v[0];
    long *s = xmalloc((a->n_probes + 1) * sizeof(long), "probe steps");
    size_t k = 0;
    for (size_t i = 0; i < a->n_probes; i++) {
        int everywhere = 1;
        for (int v = 1; v < log->n; v++)
            everywhere &= probe_at(&log->v[v], a->probes[i].k.step) != NULL;
        if (everywhere) s[k++] = a->probes[i].k.step;
    }
    *n = k;
    return s;
}

// Whether variant i computes the correct attention: the causal mask and the softmax over the
// keys, the compared key taken from the variant and the other from the shared configuration.
int variant_is_correct(const CompareLog *log, const Config *cfg, int i) {
    const char *mask = strcmp(log->key, "model.attn_mask") == 0 ? log->v[i].value : cfg->attn_mask;
    const char *axis =
        strcmp(log->key, "model.softmax_axis") == 0 ? log->v[i].value : cfg->softmax_axis;
    return strcmp(mask, "causal") == 0 && strcmp(axis, "keys") == 0;
}

// --compare-scaling's pair, sqrt against none and nothing else: its report has its own title and
// introduction (the scale as 1/sqrt(d_k), the variants as scaled and unscaled).
int is_textbook_scale(const CompareLog *log) {
    return log->kind == KIND_SCALE && log->n == 2 && strcmp(log->v[0].value, "sqrt") == 0 &&
           strcmp(log->v[1].value, "none") == 0;
}

void compare_log_discard(CompareLog *log) {
    if (!log) return;
    for (int v = 0; v < log->n; v++) {
        free(log->v[v].value);
        free(log->v[v].name);
        free(log->v[v].steps);
        free(log->v[v].probes);
        free(log->v[v].sample);
        for (int k = 0; k < N_SNAPS; k++) free(log->v[v].snap[k].P);
    }
    free(log->map_text);
    free(log->command);
    free(log->key);
    free(log->out_dir);
    free(log);
}
