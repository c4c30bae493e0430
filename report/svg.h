// report/svg.h: the SVG panels of a comparison (report/svg.c), which report.html draws inline
// too: their table, their place in the SVG, each variant's colour and dash, and one panel drawn.
#ifndef REPORT_SVG_H
#define REPORT_SVG_H

#include <stddef.h>

#include "report/compare.h"
#include "report/writer.h"

// The SVG's width, the plot area's left and right edges, and the k-th panel's plot area: its top
// at PANEL_TOP + k * PANEL_PITCH, PANEL_H high (pixels).
#define SVG_W       900
#define PLOT_X0     82.0
#define PLOT_X1     872.0
#define PANEL_TOP   118.0
#define PANEL_H     168.0
#define PANEL_PITCH 220.0

// Variant v's line: its colour and its dash pattern (NULL: solid).
extern const char *const VARIANT_COLOR[COMPARE_MAX_VARIANTS];
extern const char *const VARIANT_DASH[COMPARE_MAX_VARIANTS];

// The SVG's panels, top to bottom; the leak's two only in a leak comparison, the output logits'
// only when the log has them (compare_log_logits).
typedef enum {
    PANEL_LOSS,
    PANEL_ENTROPY,
    PANEL_MAX_LOGIT,
    PANEL_MAX_WEIGHT,
    PANEL_GRADIENT,
    PANEL_OUTPUT_LOGITS,
    PANEL_GEN_LOSS,
    PANEL_FUTURE_MASS
} PanelKind;

typedef struct {
    PanelKind kind;
    const char *title;  // after its letter: "(a) "
    const char *ylabel;
    const char *summary;  // in report.md's list of files
    int leak_only;
} PanelInfo;

extern const PanelInfo PANELS[];
extern const size_t N_PANELS;
// Whether PANELS[i] is drawn for this comparison.
int panel_shown(const CompareLog *log, size_t i);

// The k-th shown panel, PANELS[i], at its place in the SVG (its top PANEL_TOP + k * PANEL_PITCH),
// its step axis up to the run's last step; x_label: name the axis under it.
void draw_panel(Out *o, const CompareLog *log, size_t i, int k, int x_label);
// The title of the k-th shown panel, PANELS[i]: "(a) Loss", ...
void panel_title(char *buf, size_t n, size_t i, int k);
// A variant's name in the SVG's key.
void svg_variant_label(char *buf, size_t n, const CompareLog *log, const Config *cfg, int i);

#endif
