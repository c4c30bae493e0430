// report.h: the outputs of --compare-scaling: compare.csv, report.md and scaling.svg.
#ifndef REPORT_H
#define REPORT_H

#include <stddef.h>

#include "config.h"
#include "model.h"

// Collects both variants' per-step numbers during the run; writes the files at the end.
// variant 0 is "scaled" (attn_scale sqrt), 1 is "unscaled" (attn_scale none).
typedef struct CompareLog CompareLog;

CompareLog *compare_log_open(const char *out_dir, long max_steps);
// Attention statistics (averaged over layers and heads) measured after `step` updates.
void compare_log_probe(CompareLog *log, int variant, long step, const HeadStats *mean);
// The training loss of update `step` (1-based) and the validation loss evaluated after it (NaN if not evaluated).
void compare_log_step(CompareLog *log, int variant, long step, double loss, double val_loss);
// The final train loss (eval batches) and whole-split validation loss.
void compare_log_final(CompareLog *log, int variant, double train_loss, double val_loss);
// Write OUT_DIR/compare.csv, OUT_DIR/report.md, OUT_DIR/scaling.svg and free the log.
int compare_log_finish(CompareLog *log, const Config *cfg, char *err, size_t errlen);
// Free the log without writing anything (a run stopped early).
void compare_log_discard(CompareLog *log);

#endif
