// report/reading.h: report.md's reading of a comparison (report/reading.c), one per kind of key.
// Each takes the probe steps every variant has (ps, np ascending) and the last step of the run.
#ifndef REPORT_READING_H
#define REPORT_READING_H

#include <stddef.h>

#include "report/compare.h"
#include "report/writer.h"

// The scale: each variant against the 1/sqrt(d_k) one (else the first): the outcome, peakedness,
// the gradient through the softmax, the gradient of Wq.
void read_scale(Out *o, const CompareLog *log, const Config *cfg, const long *ps, size_t np,
                long end, int head_dim);
// A leak: the teacher-forced loss against gen_loss, each variant against the correct model.
void read_leak(Out *o, const CompareLog *log, const Config *cfg, const long *ps, size_t np,
               long end);
// Any other key: the final losses, who ends ahead and when the gaps opened.
void read_other(Out *o, const CompareLog *log, long end);

#endif
