// teach/lab_pages.h: the step-through pages of `./lab examples --html FILE` and `./lab exercise
// --html FILE` (written with report/html.c), and the table of named numbers they are drawn from,
// which `--json` prints: one table, so the page and the JSON always hold the same numbers under the
// same keys.
#ifndef LAB_PAGES_H
#define LAB_PAGES_H

#include <stdio.h>

#include "base/common.h"
#include "report/html.h"
#include "teach/lab_core.h"

// One named matrix (rows, cols) or vector (rows entries, cols 1, vector set) of numbers. Keys
// are "name" or "group.name"; JSON nests the second kind in an object per group. Non-finite
// numbers (the mask's -inf) are written to JSON as null.
typedef struct {
    char key[64];
    int rows, cols, vector;
    double *v;
} LabArray;

typedef struct {
    LabArray *a;
    int n;
} LabArrays;

void lab_arrays_add(LabArrays *s, const char *key, int rows, int cols, const real *v);
void lab_arrays_add_double(LabArrays *s, const char *key, int rows, int cols, const double *v);
void lab_arrays_add_vector(LabArrays *s, const char *key, int n, const double *v);
// The array under key; exits (a bug, not a user error) when there is none.
const LabArray *lab_arrays_get(const LabArrays *s, const char *key);
// One JSON object, in the order the arrays were added, numbers with %.17g.
void lab_arrays_json(FILE *f, const LabArrays *s);
void lab_arrays_free(LabArrays *s);

// Every number of the worked examples' page: group "t3" (T = 3, d_k = 2): inputs, scores, scaled
// and masked scores, the weights, their row sums and the outputs without a mask (*_nomask_*, the
// lesson's first computation) and with the causal mask, scaled and unscaled; the backward of the
// masked one for dO (key "t3.dO"); and group "one_query" (q = [1,0] over two keys).
void lab_examples_arrays(LabArrays *s);
// The exercise's numbers (ungrouped keys; the first ten are `./lab exercise --json`'s
// original ones, in their order) for an exercise computed by lab_exercise_run.
void lab_exercise_arrays(LabArrays *s, const LabExercise *e);

// Largest exercise `--html` draws (every matrix is on the page).
#define LAB_HTML_MAX_T  32
#define LAB_HTML_MAX_DK 64

// The pages. command is the command line that wrote the page (shown on it).
HtmlPage *lab_examples_page(const LabArrays *s, const char *command);
HtmlPage *lab_exercise_page(const LabArrays *s, const LabExercise *e, const char *command);

// The exercise's verdict, as `./lab exercise` prints it (two lines, no final newline).
void lab_exercise_verdict(char *buf, size_t n, const LabExercise *e);

// ---- the parts the pages share (teach/lab_pages.c) ----
// "group.name" (or "name" without a group), in a small rotating buffer.
const char *lab_key_of(const char *group, const char *name);
// The array group.name as a matrix of step st at `where`, titled `title`, with axis labels.
HtmlMatrix *lab_put(HtmlStep *st, const LabArrays *s, int where, const char *group,
                    const char *name, const char *title, const char *row_axis,
                    const char *col_axis);
// The array group.name as the extra column `label` of m.
void lab_put_extra(HtmlMatrix *m, const LabArrays *s, const char *group, const char *name,
                   const char *label);
// x with %.17g, or null when it is not finite (the mask's -inf).
void lab_json_number(FILE *f, double x);

// ---- `./lab mistakes`: the T = 3 example five ways (lab_mistakes) ----
// Whether a row of weights sums to 1, as the terminal's '!' judges it (within 1e-5).
int lab_sums_to_one(double x);
// What the numbers of mistake k >= 1 show, against the correct case c[0], as the terminal prints
// it after "NAME: " (two lines, the second indented by two spaces, no final newline).
void lab_mistake_reading(char *buf, size_t n, const LabMistake c[LAB_MISTAKES], int k);
// `./lab mistakes --json`: Q, K, V and the cases, numbers with %.17g (null for the mask's -inf).
// Case k's numbers are "cases.K.FIELD" on the page: FIELD = scores, weights, row_sums,
// column_sums, outputs (and future_weight, the weight of each row on the keys after it).
void lab_mistakes_json(FILE *f, const LabMistake c[LAB_MISTAKES]);
// `./lab mistakes --html FILE`: one step per case, the correct case beside each mistake.
HtmlPage *lab_mistakes_page(const LabMistake c[LAB_MISTAKES], const char *command);

// ---- `./lab online-softmax`: the online softmax on the lesson's two problems (lab_online_lesson)
// ---- The numbers of each problem under its group (o->group: "t3", "exercise"): Q, K, V, scores
// (S, scaled), then for each block J = 1, 2, ...: blockJ (T rows of m_old, block max, m_new,
// exp(m_old - m_new), l_old, block sum, l_new; -inf as null) and oJ (o after the block, T x d_k),
// then L (m + ln l), P_online, P (attention_forward's), P_diff (per row, max |P_online - P|),
// O_online, O, O_diff; and without the rescaling: plainJ (T rows of l_old, block sum, l_new),
// o_plainJ, P_plain, plain_rowsum, O_plain, O_plain_diff.
void lab_online_arrays(LabArrays *s, const LabOnline o[LAB_ONLINE_PROBLEMS]);
// The columns of a blockJ table, as the terminal and the page name them.
extern const char *const LAB_ONLINE_BLOCK_COLUMNS[7];
// What block j (0-based) of o does, as the terminal prints it under the block's table (one line,
// no final newline).
void lab_online_block_reading(char *buf, size_t n, const LabOnline *o, int j);
// The end of a problem: the online result against attention.c's (one line, no final newline).
void lab_online_result_reading(char *buf, size_t n, const LabOnline *o);
// The same computed without the rescaling (the mistake): what goes wrong (one line, lower-case
// start).
void lab_online_plain_reading(char *buf, size_t n, const LabOnline *o);
// `./lab online-softmax --html FILE`: per problem a sequence: the scores, one step per block, the
// normalisation; the switch shows the same without the rescaling.
HtmlPage *lab_online_page(const LabArrays *s, const LabOnline o[LAB_ONLINE_PROBLEMS],
                          const char *command);

#endif
