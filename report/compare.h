// report/compare.h: the outputs of a side-by-side comparison (--compare KEY=V1,V2[,V3,V4], and its
// alias
// --compare-scaling): compare.csv, report.md and the SVG panels, for 2 to 4 variants of one key,
// and report.html, the same as one self-contained page with attention maps of every variant.
#ifndef COMPARE_H
#define COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"        // real
#include "base/config.h"        // Config: the comparison's reading depends on its key
#include "report/head_stats.h"  // HeadStats: the probe's statistics it logs

#define COMPARE_MAX_VARIANTS 4
// report.html draws the attention maps of at most this many positions of the probe sequence: a
// longer one is drawn from its first COMPARE_MAP_T queries and keys.
#define COMPARE_MAP_T 64

// Collects every variant's per-step numbers during the run; writes the files at the end.
typedef struct CompareLog CompareLog;

// key: the config key compared ("model.attn_scale", "model.attn_mask", "model.softmax_axis",
// "train.lr", ...); values[i]: its value in variant i as given on the command line; n: 2 to 4.
// Variant i is named after its value (its subdirectory's name, see compare_variant_name), except
// that under model.attn_scale "sqrt" is named "scaled" and "none" "unscaled": --compare-scaling
// is key "model.attn_scale" with values {"sqrt", "none"}. The caller makes sure the values are
// distinct and usable as directory names. Returns NULL when n is out of range or an argument is
// NULL. The reading report.md gives depends on the key: the scale (model.attn_scale), a leak
// (model.attn_mask, model.softmax_axis) or any other key.
CompareLog *compare_log_open(const char *out_dir, long max_steps, const char *key,
                             const char *const *values, int n);
// Attention statistics (averaged over layers and heads) measured after `step` updates.
void compare_log_probe(CompareLog *log, int variant, long step, const HeadStats *mean);
// The training loss of update `step` (1-based), and the validation loss and gen_loss evaluated
// after it (each NaN when not evaluated at this step).
void compare_log_step(CompareLog *log, int variant, long step, double loss, double val_loss,
                      double gen_loss);
// The output logits of the same step's training batch (after compare_log_step of that step; a
// call for any other step is ignored): the mean over its positions of log Z = log sum_v exp(z_v),
// and its largest logit z. Without them the panel of the output logits is left out.
void compare_log_logits(CompareLog *log, int variant, long step, double lse_mean, double max_logit);

// The attention weights P of the probe sequence (the first of the fixed probe batch) measured
// after `step` updates, for report.html's maps: P is (L,NH,T,T), P[((l*NH + h)*T + t)*T + u] the
// weight query t gives key u in layer l, head h; text holds the sequence's T characters (code
// points; copied from the first call). Give it at every probe: of each variant the log keeps the
// first, the one nearest the middle of the run (max_steps / 2; the earlier on a tie) and the
// last, cropped to the first COMPARE_MAP_T positions. Calls whose L, NH or T differ from the
// first call's are ignored.
void compare_log_attention(CompareLog *log, int variant, long step, const real *P, int L, int NH,
                           int T, const uint32_t *text);
// The command that ran the comparison, named on report.html (copied; without it "./train").
void compare_log_command(CompareLog *log, const char *command);

// What a variant ends with (NaN for a number not measured).
typedef struct {
    double train_loss, val_loss;  // eval batches; whole validation split (teacher-forced)
    double gen_loss;              // the honest loss on the fixed generation windows
    double gen_loss_tf;           // the teacher-forced loss on those same windows
    const char *sample;  // the sample text the run printed at the end (may be NULL; copied)
} CompareFinal;
void compare_log_final(CompareLog *log, int variant, const CompareFinal *f);

// Write OUT_DIR/compare.csv, OUT_DIR/report.md, the panels (OUT_DIR/scaling.svg for
// model.attn_scale, OUT_DIR/compare.svg otherwise) and OUT_DIR/report.html (report.md's text and
// tables, the panels inline and the attention maps; replaced whole by base/outfile.h),
// then free the log. Returns 0 with a one-line message in err on an I/O error (the log is freed
// either way).
int compare_log_finish(CompareLog *log, const Config *cfg, char *err, size_t errlen);
// Free the log without writing anything (a run stopped early).
void compare_log_discard(CompareLog *log);
// The name of variant i: its subdirectory, its label in the files (NULL when i is out of range).
const char *compare_variant_name(const CompareLog *log, int i);
// The name of the SVG file compare_log_finish writes: "scaling.svg" or "compare.svg".
const char *compare_svg_name(const CompareLog *log);

#endif
