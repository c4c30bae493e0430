// report/html.h: self-contained HTML pages that step through small matrices, one step at a time.
//
// A page is a list of sequences (e.g. "one query", "T = 3 forward", "T = 3 backward"), each a
// list of steps; a step is a title, a caption of one or two sentences, and matrices whose cells
// can be marked (changed in this step, masked, largest in the row). Every matrix is drawn in one
// of three places of its step: SHARED (the inputs both variants use), MAIN (e.g. scaled by
// 1/sqrt(d_k)) or ALT (e.g. without the scale), which a switch shows next to MAIN.
//
// The file needs nothing but itself: inline CSS and a small plain script written here, a
// Content-Security-Policy that forbids every network request, no external script, style sheet,
// font or image. Without JavaScript every step is shown in order; with it, Previous / Next
// buttons and the arrow keys move between steps, Play advances by itself, each step shown for its
// reading time (at least HTML_PLAY_EVERY_MS), and starts over after the last step (a page opened
// without #step=N plays from the start, unless the reader prefers reduced motion), and FILE#step=N
// (1-based over the whole page, `&alt=1` to switch ALT on) opens step N directly, paused.
//
// Numbers are printed with printf's "%.6f" (as ./lab prints them) unless html_mat_format says
// otherwise; non-finite values print as printf prints them ("-inf"). Every matrix and extra
// column carries a key (data-key) naming the same numbers in the program's JSON output, so a
// test can compare the page with it.
//
// Usage:
//   HtmlPage *p = html_page_new("Attention, step by step", "./lab examples --html page.html");
//   html_page_switch(p, "Scaled by 1/sqrt(2)", "Without the scale", "Show without the scale");
//   html_page_sequence(p, "t3", "T = 3, forward", "Three tokens ...");
//   HtmlStep *s = html_page_step(p, "Scores", "Each query is compared with each key ...");
//   HtmlMatrix *m = html_step_matrix(s, HTML_SHARED, "t3.scores", "S = Q K^T", 3, 3);
//   html_mat_fill_real(m, scores);
//   html_mat_mark_all(m, HTML_CELL_CHANGED);
//   if (!html_page_write(p, "page.html", err, sizeof err)) ...;
//   html_page_free(p);
#ifndef HTML_H
#define HTML_H

#include <stddef.h>
#include <stdio.h>

#include "base/common.h"
#include "base/outfile.h"  // html_escape

// Where a matrix is drawn within its step.
enum { HTML_SHARED = 0, HTML_MAIN = 1, HTML_ALT = 2 };

// Marks of a cell (or-ed together). Each has a visible cue besides colour (bold, a box, grey).
enum {
    HTML_CELL_CHANGED = 1,  // this step wrote it: highlighted
    HTML_CELL_MASKED = 2,   // hidden by the causal mask (-inf score, weight 0): greyed
    HTML_CELL_MAX = 4,      // the largest weight of its row: boxed
    HTML_CELL_WRONG =
        8,  // what a mistake breaks (a weight on the future, a row sum not 1): red, dashed box
};

#define HTML_MAX_EXTRA     3      // extra columns per matrix (row sums, row maxima)
#define HTML_PLAY_EVERY_MS 5000   // Play's least time per step; a step with more text stays longer
#define HTML_READ_WPM      200    // Play's reading pace: words a minute
#define HTML_READ_WPM_STR  "200"  // the same, for the page's script

typedef struct HtmlPage HtmlPage;
typedef struct HtmlStep HtmlStep;
typedef struct HtmlMatrix HtmlMatrix;

// A new empty page. title is the <title> and heading; command is the command that wrote the
// page, shown under the heading. Both are plain text (escaped when written).
HtmlPage *html_page_new(const char *title, const char *command);
// A paragraph under the heading. Text is escaped; `backquoted` parts are set as code.
void html_page_note(HtmlPage *p, const char *text);
// Labels of the MAIN and ALT panels and of the switch that shows ALT (the switch appears only
// when some step has an ALT matrix).
void html_page_switch(HtmlPage *p, const char *main_label, const char *alt_label,
                      const char *switch_label);
// Start a sequence: the steps added after it belong to it. id: letters, digits, '-' and '_' only
// (an HTML id); title and intro are text as for html_page_note (intro may be NULL).
void html_page_sequence(HtmlPage *p, const char *id, const char *title, const char *intro);
// A step of the current sequence (a sequence is started if there is none). The caption is text
// as for html_page_note. The page owns the step.
HtmlStep *html_page_step(HtmlPage *p, const char *title, const char *caption);
int html_page_n_steps(const HtmlPage *p);

// A (rows, cols) matrix of zeros in the step, drawn at `where`; key names its numbers in the
// program's JSON output ("t3.scores"); name is shown above it ("S = Q K^T"). The step owns it.
HtmlMatrix *html_step_matrix(HtmlStep *s, int where, const char *key, const char *name, int rows,
                             int cols);
void html_mat_set(HtmlMatrix *m, int r, int c, double v);
void html_mat_fill(HtmlMatrix *m, const double *v);               // v is (rows, cols), row-major
void html_mat_fill_real(HtmlMatrix *m, const real *v);            // the same from `real`
void html_mat_mark(HtmlMatrix *m, int r, int c, unsigned flags);  // or-ed into the cell's marks
void html_mat_mark_all(HtmlMatrix *m, unsigned flags);
// Header labels: what the rows and columns index ("query", "key"); the row header is shown in
// the corner cell. Either may be NULL.
void html_mat_axes(HtmlMatrix *m, const char *row_axis, const char *col_axis);
// Names of the columns instead of their indices (cols strings).
void html_mat_col_labels(HtmlMatrix *m, const char *const *labels);
// printf format of the numbers (one double conversion, e.g. "%.6f" or "%.3e"; at most 15 chars).
void html_mat_format(HtmlMatrix *m, const char *fmt);
// One more column to the right, set apart: label on top, v (rows values), key naming it in the
// JSON output. At most HTML_MAX_EXTRA.
void html_mat_extra(HtmlMatrix *m, const char *key, const char *label, const double *v);
// Marks (HTML_CELL_*) of row r of extra column e (0 = the first added), or-ed in.
void html_mat_extra_mark(HtmlMatrix *m, int e, int r, unsigned flags);

// Write the page to path, replaced whole by the one writer (base/outfile.h: only a regular file,
// through a temporary file beside it; "-" is standard output). Returns 1, or 0 with a one-line
// reason naming the file in err.
int html_page_write(const HtmlPage *p, const char *path, char *err, size_t errlen);
// Write the page to an open stream. Returns 0 when a write failed.
int html_page_fwrite(const HtmlPage *p, FILE *f);
void html_page_free(HtmlPage *p);

// ---- pieces, for other pages in the same style (a report without steps) ----
// <!DOCTYPE html> to <body>, with the CSP, the style sheet, the heading and the command.
void html_write_head(FILE *f, const char *title, const char *command);
// The same with more style rules after the page's own (extra_css may be NULL).
void html_write_head_css(FILE *f, const char *title, const char *command, const char *extra_css);
// The closing </body></html>, with the script when `script` (step pages: it expects their
// controls) is set; a page of other content passes 0.
void html_write_tail(FILE *f, int script);
// Text escaped, with `backquoted` parts set as <code>.
void html_text(FILE *f, const char *text);
// A matrix of zeros that belongs to no step (set it up with the html_mat_* functions, write it
// with html_write_matrix, free it with html_matrix_free).
HtmlMatrix *html_matrix_new(const char *key, const char *name, int rows, int cols);
void html_matrix_free(HtmlMatrix *m);
// One matrix as a <figure> holding a <table>.
void html_write_matrix(FILE *f, const HtmlMatrix *m);
// The subset of Markdown the trainer's report.md is written in, as HTML: "#" to "###" headings,
// paragraphs (lines joined), "- " list items, pipe tables (a header row, then the alignment row
// "|:---|---:|", left-aligned columns get class "l"; each table in a sideways scroller), fenced
// code blocks (a fence of three or more backquotes, closed by the same fence), and within a line
// **bold**, *italics* and `code`. Everything else is text, escaped.
void html_markdown(FILE *f, const char *md);

#endif
