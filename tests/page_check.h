// tests/page_check.h: reads a step-through page (the HTML file report/html.c writes, or Chromium's
// DOM of it after the script ran) back into steps, tables and cells, and checks them against the
// lab's JSON output and a table of what each step must show. Used by tests/test_html.c (the file
// as written, every step visible) and tests/browser_test.c (one step shown per #step=N).
#ifndef PAGE_CHECK_H
#define PAGE_CHECK_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define PC_MAX_EXTRA 4

typedef struct {
    char key[64];
    int where;   // 0 shared, 1 main panel, 2 alt panel (report/html.h's HTML_SHARED, _MAIN, _ALT)
    int hidden;  // inside a panel with the hidden attribute
    int rows, cols;     // data-rows, data-cols
    int n_cells;        // cells read (rows * cols when well formed)
    char (*cells)[32];  // their text, row by row
    char (*marks)[8];   // their class letters: "c" changed, "m" masked, "k" row max, "w" wrong
    int n_extra;
    char extra_key[PC_MAX_EXTRA][64];
    int n_extra_cells;
    char (*extra_cells)[32];  // row by row, n_extra per row
    char (*extra_marks)[8];   // their class letters, as marks
} PcTable;

typedef struct {
    int number;  // data-step
    int hidden;  // the section, or its sequence, has the hidden attribute
    char title[128];
    char caption[2048];  // text, tags dropped, entities decoded
    PcTable *tables;
    int n_tables;
} PcStep;

typedef struct {
    PcStep *steps;
    int n_steps;
    char csp[512];        // the Content-Security-Policy meta's content
    int controls_hidden;  // the Previous/Next bar has the hidden attribute
    int prev_disabled, next_disabled;
    int has_switch, switch_hidden, switch_pressed;
    char status[256];   // the live status line's text
    char command[512];  // the command the page says wrote it
} PcPage;

// Parse html into page. Returns 1, or 0 with a reason in err.
int pc_parse(PcPage *page, const char *html, char *err, size_t errlen);
void pc_free(PcPage *page);

// The numbers under key in the lab's JSON: a path of object members and array indices separated
// by dots ("name", "group.name", "cases.2.weights"); a matrix (array of arrays) or a vector (array
// of numbers, taken as one column, or as one row by a table of one row). Returns NULL when there
// is none.
const cJSON *pc_json_get(const cJSON *root, const char *key);
// JSON number as the page prints it: "%.6f", null as "-inf".
void pc_format(char *buf, size_t n, const cJSON *num);

// What step N of a page must show: its title, a phrase of its caption, and its tables in order,
// each "S:key", "M:key" or "A:key" (shared, main panel, alt panel), with "+key" for each extra
// column: "M:t3.weights_scaled+t3.rowsum_scaled".
typedef struct {
    const char *title;
    const char *phrase;
    const char *tables;
} PcExpect;

// The examples page's 14 steps, and the exercise page's (with the Mask step when causal).
// Returns the count and sets *out.
int pc_examples_expect(const PcExpect **out);
int pc_exercise_expect(const PcExpect **out, int causal);
// The mistakes page's 4 steps (`./lab mistakes --html`).
int pc_mistakes_expect(const PcExpect **out);
// The online softmax page's 9 steps (`./lab online-softmax --html`, blocks of 2 keys).
int pc_online_expect(const PcExpect **out);

// Check one step against its expectation and the JSON: title, phrase, tables (place, key, extra
// keys, shape) and every cell's text equal to the JSON number printed with "%.6f". Returns the
// number of problems, the first described in err.
int pc_check_step(const PcStep *step, const PcExpect *want, const cJSON *json, char *err,
                  size_t errlen);

// The marks of the mistakes page, derived from the JSON's numbers: in S (cases.K.scores) the
// entries above the diagonal masked when -inf (null), wrong otherwise; in P (cases.K.weights)
// above the diagonal masked when 0, wrong otherwise, each row's largest entry boxed; a row sum
// more than 1e-5 from 1 (and a future weight above 0, where shown) wrong. Returns the number of
// problems.
int pc_check_mistake_marks(const PcStep *step, const cJSON *json, char *err, size_t errlen);

// Problems with self-containment: a CSP that does not forbid every fetch, or any http(s)://,
// src=, <link, @import, or url( but of the page's own #id in the text. Returns the number of
// problems, the first in err.
int pc_check_offline(const PcPage *page, const char *html, char *err, size_t errlen);

#endif
