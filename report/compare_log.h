// report/compare_log.h: the comparison log's records (report/compare_log.c keeps them) and the
// queries that the files it writes read them through: the report's own header, for report/*.c only.
#ifndef COMPARE_LOG_H
#define COMPARE_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "report/compare.h"

// ---------------------------------------------------------------------------------------------
// what is compared

// The scale has the reading of --compare-scaling; a leak (a model that sees the future) the
// teacher-forced loss against gen_loss; any other key the losses only.
typedef enum { KIND_SCALE, KIND_LEAK, KIND_OTHER } CompareKind;

// ---------------------------------------------------------------------------------------------
// the log

// Every record starts with this: the step it belongs to and its arrival order (a later record
// for the same step wins).
typedef struct {
    long step;
    size_t seq;
} RecKey;

typedef struct {
    RecKey k;
    double loss, val, gen;  // val and gen are NaN when not evaluated
    double lse, zmax;       // the output logits' mean log Z and largest logit; NaN when not logged
} StepRec;

typedef struct {
    RecKey k;
    HeadStats s;
} ProbeRec;

// The attention weights of the probe sequence at one probe: (L,NH,Tm,Tm), the first Tm queries
// and keys of each head (float: a picture's precision).
typedef struct {
    long step;  // -1: none kept
    float *P;
} MapSnap;

// The probes whose weights the log keeps: report.html's columns.
enum { SNAP_FIRST, SNAP_MIDDLE, SNAP_LAST, N_SNAPS };

typedef struct {
    char *value;  // the compared key's value, as given
    char *name;   // the subdirectory and the name in the files
    StepRec *steps;
    size_t n_steps, cap_steps;
    ProbeRec *probes;
    size_t n_probes, cap_probes;
    double final_train, final_val, final_gen, final_gen_tf;
    char *sample;
    int has_final;
    MapSnap snap[N_SNAPS];
} VarLog;

struct CompareLog {
    char *out_dir;
    long max_steps;
    size_t seq;
    char *key;
    CompareKind kind;
    const char *title;
    int n;
    VarLog v[COMPARE_MAX_VARIANTS];
    // the attention maps: the shape of the first compare_log_attention call, the sequence
    int map_L, map_NH, map_T, map_Tm;  // map_Tm = min(map_T, COMPARE_MAP_T)
    uint32_t *map_text;                // (map_Tm) code points; NULL before the first call
    char *command;                     // the command line, for report.html (NULL: "./train")
};

// ---------------------------------------------------------------------------------------------
// queries, once compare_log_sort has sorted each variant's records by step (duplicates dropped)

void compare_log_sort(CompareLog *log);

// Number of step records with step <= s.
size_t steps_upto(const VarLog *v, long s);
// The step record of step s, or NULL.
const StepRec *step_at(const VarLog *v, long s);
// The probe of step s, or NULL.
const HeadStats *probe_at(const VarLog *v, long s);
// The latest evaluated (finite) validation loss / gen_loss at or before step s; NaN if none.
double val_upto(const VarLog *v, long s);
double gen_upto(const VarLog *v, long s);

#define TRAIN_AVG_WINDOW 20

// Mean of the finite training losses among the last TRAIN_AVG_WINDOW steps at or before s.
double train_avg_upto(const VarLog *v, long s);
// The last step of the run: the largest step with a loss, else the largest probe step.
long last_step(const CompareLog *log);
// Whether any variant logged its output logits (compare_log_logits).
int has_output_logits(const CompareLog *log);
// A statistic of a probe (a HeadStats field at offset `off`), NaN without a probe.
double stat_or_nan(const HeadStats *p, size_t off);
// Probe steps where every variant was probed, ascending (malloc'd; *n set).
long *common_probe_steps(const CompareLog *log, size_t *n);
// Whether variant i computes the correct attention (the causal mask and the softmax over the keys).
int variant_is_correct(const CompareLog *log, const Config *cfg, int i);
// --compare-scaling's pair (sqrt against none, nothing else): its report keeps its own wording.
int is_textbook_scale(const CompareLog *log);
// qsort's order of longs, ascending.
int cmp_long(const void *a, const void *b);
// The configuration key `key` ("train.lr") as the variants ran it, into buf: when it is the key
// compared, each variant's value joined by " / " (the variants' order, as the side-by-side cells);
// else `shared`, the configuration's value as the caller formatted it. Returns buf.
const char *compare_key_value(char *buf, size_t n, const CompareLog *log, const char *key,
                              const char *shared);

// ---------------------------------------------------------------------------------------------
// the files compare_log_finish writes in log->out_dir, each 1 on success or 0 with a one-line
// message in err

// compare.csv (report/compare_csv.c)
int compare_write_csv(const CompareLog *log, char *err, size_t errlen);
// report.md's text, built in memory (malloc'd, or NULL with a message), and report.md
// (report/report_md.c)
char *compare_md_text(const CompareLog *log, const Config *cfg, char *err, size_t errlen);
int compare_write_md(const CompareLog *log, const char *md, char *err, size_t errlen);
// scaling.svg or compare.svg (report/svg.c)
int compare_write_svg(const CompareLog *log, const Config *cfg, char *err, size_t errlen);
// report.html from report.md's text md (report/report_html.c)
int compare_write_html(const CompareLog *log, const Config *cfg, const char *md, char *err,
                       size_t errlen);

#endif
