// report/compare_csv.c: compare.csv, one row per (step, variant) that has a loss or a probe.
// The columns after `variant`, in order; new columns go at the end so that existing readers keep
// working.
#include "report/compare_log.h"
#include "report/writer.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

typedef enum { FROM_STEP, FROM_PROBE } CsvSource;

static const struct {
    const char *name;
    CsvSource src;
    size_t off;     // into StepRec or HeadStats
    int nan_empty;  // a NaN is "not evaluated": an empty field (else written as nan)
} CSV_COLS[] = {
    {"loss", FROM_STEP, offsetof(StepRec, loss), 0},
    {"val_loss", FROM_STEP, offsetof(StepRec, val), 1},
    {"entropy_norm", FROM_PROBE, offsetof(HeadStats, entropy_norm), 0},
    {"max_weight", FROM_PROBE, offsetof(HeadStats, max_weight), 0},
    {"frac_gt_0.9", FROM_PROBE, offsetof(HeadStats, frac_gt_090), 0},
    {"frac_gt_0.99", FROM_PROBE, offsetof(HeadStats, frac_gt_099), 0},
    {"score_std", FROM_PROBE, offsetof(HeadStats, score_std), 0},
    {"gnorm_wq", FROM_PROBE, offsetof(HeadStats, gnorm_wq), 0},
    {"gnorm_wk", FROM_PROBE, offsetof(HeadStats, gnorm_wk), 0},
    {"gnorm_wv", FROM_PROBE, offsetof(HeadStats, gnorm_wv), 0},
    {"gnorm_wo", FROM_PROBE, offsetof(HeadStats, gnorm_wo), 0},
    {"ds_over_dp", FROM_PROBE, offsetof(HeadStats, ds_over_dp), 0},
    {"row_gain_median", FROM_PROBE, offsetof(HeadStats, row_gain_median), 0},
    {"gen_loss", FROM_STEP, offsetof(StepRec, gen), 1},
    {"future_mass", FROM_PROBE, offsetof(HeadStats, future_mass), 0},
};
#define N_CSV_COLS (sizeof CSV_COLS / sizeof CSV_COLS[0])

static void csv_row(Out *o, long step, const char *name, const StepRec *sr, const HeadStats *p) {
    out(o, "%ld,%s", step, name);
    for (size_t c = 0; c < N_CSV_COLS; c++) {
        const void *rec = CSV_COLS[c].src == FROM_STEP ? (const void *)sr : (const void *)p;
        double x = NAN;
        if (rec) memcpy(&x, (const char *)rec + CSV_COLS[c].off, sizeof x);
        if (!rec || (CSV_COLS[c].nan_empty && isnan(x)))
            out(o, ",");
        else
            out(o, ",%.6g", x);
    }
    out(o, "\n");
}

int compare_write_csv(const CompareLog *log, char *err, size_t errlen) {
    char path[2200];
    Out o;
    if (!out_open(&o, log->out_dir, "compare.csv", path, sizeof path, err, errlen)) return 0;
    out(&o, "step,variant");
    for (size_t c = 0; c < N_CSV_COLS; c++) out(&o, ",%s", CSV_COLS[c].name);
    out(&o, "\n");
    size_t is[COMPARE_MAX_VARIANTS] = {0}, ip[COMPARE_MAX_VARIANTS] = {0};
    for (;;) {
        // the next step present in any variant's sorted steps or probes
        int any = 0;
        long s = 0;
        for (int v = 0; v < log->n; v++) {
            const VarLog *L = &log->v[v];
            if (is[v] < L->n_steps && (!any || L->steps[is[v]].k.step < s)) {
                s = L->steps[is[v]].k.step;
                any = 1;
            }
            if (ip[v] < L->n_probes && (!any || L->probes[ip[v]].k.step < s)) {
                s = L->probes[ip[v]].k.step;
                any = 1;
            }
        }
        if (!any) break;
        for (int v = 0; v < log->n; v++) {
            const VarLog *L = &log->v[v];
            const StepRec *sr =
                is[v] < L->n_steps && L->steps[is[v]].k.step == s ? &L->steps[is[v]++] : NULL;
            const HeadStats *p =
                ip[v] < L->n_probes && L->probes[ip[v]].k.step == s ? &L->probes[ip[v]++].s : NULL;
            if (sr || p) csv_row(&o, s, L->name, sr, p);
        }
    }
    return out_close(&o, path, err, errlen);
}
