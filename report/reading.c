// report/reading.c: the reading in report.md ("What the numbers show"), generated from the
// numbers, for the kind of key compared: the scale (model.attn_scale), a leak (model.attn_mask,
// model.softmax_axis) or any other key.
#include "report/reading.h"

#include "report/compare_log.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Thresholds of the readings, in nats of loss.
#define LEVEL     0.01  // final losses closer than this "end level"
#define GAP_DATED 0.05  // the reading dates the step at which a loss gap first exceeded this
#define FAR       0.1   // a difference above this is "far" above or below
#define ROUNDING                                                                                   \
    1e-3  // gen_loss and the teacher-forced loss on the same windows within this agree up to
          // rounding
#define FUTURE_EPS 1e-6  // a future_mass above this puts weight on positions after the query's own

// ---------------------------------------------------------------------------------------------
// the words and numbers every reading uses

// A "N times" factor, with fewer decimals as it grows.
static const char *times(char *buf, size_t n, double r) {
    if (!isfinite(r))
        snprintf(buf, n, "infinitely many");
    else if (r >= 10)
        snprintf(buf, n, "%.0f", r);
    else
        snprintf(buf, n, "%.1f", r);
    return buf;
}

// A variant's name in the reading: the scale's "scaled" and "unscaled" as words, any other
// value as code (so that "0.5" or "none" reads as a value, not as a number or a word).
static const char *label(char *buf, size_t n, const CompareLog *log, int i) {
    const VarLog *v = &log->v[i];
    if (strcmp(v->name, v->value) != 0)
        snprintf(buf, n, "%s", v->name);
    else
        snprintf(buf, n, "`%s`", v->name);
    return buf;
}

// The loss each variant ends with and where it comes from: the whole-split validation loss when
// every variant has one, else the last evaluation, else the training loss.
static const char *final_losses(const CompareLog *log, long end, double *out_loss) {
    int whole = 1, evals = 1;
    for (int v = 0; v < log->n; v++) {
        const VarLog *L = &log->v[v];
        if (!(L->has_final && isfinite(L->final_val))) whole = 0;
        if (!isfinite(val_upto(L, end))) evals = 0;
    }
    for (int v = 0; v < log->n; v++) {
        const VarLog *L = &log->v[v];
        out_loss[v] = whole ? L->final_val : evals ? val_upto(L, end) : train_avg_upto(L, end);
    }
    return whole   ? "whole-split validation loss"
           : evals ? "last evaluated validation loss"
                   : "training loss (mean of the last 20 steps)";
}

// The gen_loss each variant ends with: the final one when every variant has it, else the last
// evaluated one. Returns whether all are finite.
static int final_gens(const CompareLog *log, long end, double *gen) {
    int whole = 1, all = 1;
    for (int v = 0; v < log->n; v++) whole &= log->v[v].has_final && isfinite(log->v[v].final_gen);
    for (int v = 0; v < log->n; v++) {
        gen[v] = whole ? log->v[v].final_gen : gen_upto(&log->v[v], end);
        all &= isfinite(gen[v]) != 0;
    }
    return all;
}

// The first step at which the loss gap between variants a and b exceeded `thr`: on the common
// validation evaluations, or on the 20-step training average when there are none. Returns -1
// when it never did; *gap gets the gap (b - a) there, *what names the measure.
static long first_gap_step(const CompareLog *log, int ia, int ib, double thr, double *gap,
                           const char **what) {
    const VarLog *a = &log->v[ia], *b = &log->v[ib];
    int any_val = 0;
    for (size_t i = 0; i < a->n_steps; i++) {
        if (!isfinite(a->steps[i].val)) continue;
        const StepRec *r = step_at(b, a->steps[i].k.step);
        if (!r || !isfinite(r->val)) continue;
        any_val = 1;
        double g = r->val - a->steps[i].val;
        if (fabs(g) > thr) {
            *gap = g;
            *what = "validation loss";
            return a->steps[i].k.step;
        }
    }
    if (any_val) {
        *what = "validation loss";
        return -1;
    }
    *what = "20-step mean training loss";
    for (size_t i = 0; i < a->n_steps; i++) {
        long s = a->steps[i].k.step;
        if (!step_at(b, s)) continue;
        double g = train_avg_upto(b, s) - train_avg_upto(a, s);
        if (isfinite(g) && fabs(g) > thr) {
            *gap = g;
            return s;
        }
    }
    return -1;
}

// The variant indices ordered by x ascending (NaN last), into idx.
static void order_by(const double *x, int n, int *idx) {
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            double a = x[idx[j - 1]], b = x[idx[j]];
            if (!(isnan(a) && !isnan(b)) && !(a > b)) break;
            int t = idx[j - 1];
            idx[j - 1] = idx[j];
            idx[j] = t;
        }
}

// "`a` 1.2345, `b` 1.3456 and `c` 1.4567", lowest first; returns whether the order is the same
// as `than`'s (when given).
static int ranking(Out *o, const CompareLog *log, const double *x, const int *than) {
    int idx[COMPARE_MAX_VARIANTS], same = 1;
    char b[96];
    order_by(x, log->n, idx);
    for (int r = 0; r < log->n; r++) {
        if (r > 0) out(o, r + 1 == log->n ? " and " : ", ");
        label(b, sizeof b, log, idx[r]);
        if (isfinite(x[idx[r]]))
            out(o, "%s %.4f", b, x[idx[r]]);
        else
            out(o, "%s (not finite)", b);
        if (than && than[r] != idx[r]) same = 0;
    }
    return same;
}

// ---------------------------------------------------------------------------------------------
// report.md: the reading of the scale. Each variant is read against the reference (the
// 1/sqrt(d_k) one, else the first); with two variants, sqrt and none, this is --compare-scaling's
// reading word for word.

typedef struct {
    int a, b;               // the reference and the variant read against it
    char la[96], lb[96];    // their names in the text
    char ta[128], tb[128];  // their names at the start of a headline
    int textbook;           // a is sqrt and b none: the explanations of dropping the scale apply
    double factor;          // b's scale / a's
    char change[256];       // what b does to the scale: "dropping the scale", ...
    char without[128];      // "without the scale", "with `0.5`"
} ScalePair;

// A variant of the scale at the start of a headline: "Scaled attention", "Unscaled attention",
// "Scale `0.5`".
static void headline_name(char *buf, size_t n, const char *value, const char *name) {
    if (strcmp(value, "sqrt") == 0)
        snprintf(buf, n, "Scaled attention");
    else if (strcmp(value, "none") == 0)
        snprintf(buf, n, "Unscaled attention");
    else
        snprintf(buf, n, "Scale %s", name);
}

static void scale_pair(ScalePair *p, const CompareLog *log, int a, int b, int head_dim) {
    p->a = a;
    p->b = b;
    label(p->la, sizeof p->la, log, a);
    label(p->lb, sizeof p->lb, log, b);
    const char *va = log->v[a].value, *vb = log->v[b].value;
    p->textbook = strcmp(va, "sqrt") == 0 && strcmp(vb, "none") == 0;
    p->factor = config_scale_factor(vb, head_dim) / config_scale_factor(va, head_dim);
    headline_name(p->ta, sizeof p->ta, va, p->la);
    headline_name(p->tb, sizeof p->tb, vb, p->lb);
    if (p->textbook) {
        snprintf(p->change, sizeof p->change, "dropping the scale");
        snprintf(p->without, sizeof p->without, "without the scale");
    } else {
        snprintf(p->change, sizeof p->change, "changing the scale from %s to %s", p->la, p->lb);
        snprintf(p->without, sizeof p->without, "with %s", p->lb);
    }
}

// Peakedness of b's rows against a's at one probe.
static void read_peakedness(Out *o, const ScalePair *pr, const char *when, const HeadStats *s,
                            const HeadStats *u) {
    char b[32];
    double r = s->entropy_norm > 0 ? u->entropy_norm / s->entropy_norm : NAN;
    out(o, "- **Peakedness, %s.** Normalised entropy %.3f %s vs %.3f %s", when, s->entropy_norm,
        pr->la, u->entropy_norm, pr->lb);
    if (!isfinite(r))
        out(o, ". ");
    else if (r < 0.9)
        out(o, ": %s rows are more peaked, at %.2f× the %s entropy. ", pr->lb, r, pr->la);
    else if (r <= 1.1)
        out(o, ": about equally peaked (ratio %.2f). ", r);
    else
        out(o, ": %s rows are *flatter* here, at %.2f× the %s entropy. ", pr->lb, r, pr->la);
    out(o, "%.1f%% of %s rows put more than 0.99 of their weight on a single key (%s: %.1f%%)",
        100 * u->frac_gt_099, pr->lb, pr->la, 100 * s->frac_gt_099);
    out(o, "; mean max weight %.3f vs %.3f", u->max_weight, s->max_weight);
    if (s->score_std > 0 && u->score_std > 0)
        out(o, "; the scores' standard deviation is %.3g vs %.3g (%s× %s)", u->score_std,
            s->score_std, times(b, sizeof b, u->score_std / s->score_std), pr->la);
    out(o, ".\n");
}

// How much gradient passes the softmax, a against b, at one probe.
static void read_survival(Out *o, const ScalePair *pr, const char *when, const HeadStats *s,
                          const HeadStats *u) {
    char b[32];
    out(o, "- **Gradient through the softmax, %s.** ", when);
    double a = s->ds_over_dp, c = u->ds_over_dp;
    if (isfinite(a) && isfinite(c) && a > 0 && c > 0) {
        double r = a / c;
        out(o, "Over whole heads, ‖dL/dS‖/‖dL/dP‖ is %.3g %s vs %.3g %s (%s/%s = %.3g): ", a,
            pr->la, c, pr->lb, pr->la, pr->lb, r);
        if (r > 1.25)
            out(o, "%s times less of the gradient survives the softmax %s. ", times(b, sizeof b, r),
                pr->without);
        else if (r < 0.8)
            out(o, "the %s model passes %s times *more* gradient through the softmax. ", pr->lb,
                times(b, sizeof b, 1 / r));
        else
            out(o, "about the same fraction survives in both. ");
    } else {
        out(o, "‖dL/dS‖/‖dL/dP‖ is %.3g %s vs %.3g %s. ", a, pr->la, c, pr->lb);
    }
    a = s->row_gain_median, c = u->row_gain_median;
    if (isfinite(a) && isfinite(c) && a > 0 && c > 0) {
        double r = a / c;
        out(o, "The median row gain is %.3g vs %.3g (%s/%s = %.3g): ", a, c, pr->la, pr->lb, r);
        if (r > 1.25)
            out(o, "%s times less gradient survives the softmax per row.\n", times(b, sizeof b, r));
        else if (r < 0.8)
            out(o, "the typical %s row passes %s times *more*.\n", pr->lb,
                times(b, sizeof b, 1 / r));
        else
            out(o, "the typical row passes about the same in both.\n");
    } else if (isfinite(a) && a > 0 && c == 0) {
        out(o, "The median %s row passes no gradient at all (median row gain 0, %s %.3g).\n",
            pr->lb, pr->la, a);
    } else {
        out(o, "The median row gain is %.3g %s vs %.3g %s.\n", a, pr->la, c, pr->lb);
    }
}

// "smaller", "about the same" or "larger" for a ratio b/a; NULL when not finite.
static const char *size_word(double q) {
    if (!isfinite(q)) return NULL;
    return q < 0.8 ? "smaller" : q <= 1.25 ? "about the same" : "larger";
}

// Why b's ||dWq|| is not smaller although its rows saturate (starved) or do not: the scale is
// a factor of dQ and dK too.
static void explain_wq_not_smaller(Out *o, const ScalePair *pr, int starved, int smaller,
                                   int head_dim) {
    double sq = sqrt((double)(head_dim > 0 ? head_dim : 1));
    if (pr->textbook && starved)
        out(o,
            "%s against the textbook story (saturation makes Wq's gradient vanish): dropping the "
            "scale also "
            "drops the 1/sqrt(d_k) = 1/%.3g factor from dQ and dK, so whatever does get through "
            "the softmax "
            "is %.3g times larger, and the unsaturated rows dominate the matrix norm. The loss of "
            "gradient is "
            "per row (above), not visible in the whole-matrix norm.",
            smaller ? "Where it is not smaller, that goes" : "That goes", sq, sq);
    else if (pr->textbook)
        out(o,
            "%s: the per-row gains above show the unscaled softmax is not starving the gradient "
            "here, so "
            "dropping the scale simply removes the 1/sqrt(d_k) = 1/%.3g factor from dQ and dK, "
            "making the "
            "same gradient through the softmax up to %.3g times larger.",
            smaller ? "Where it is not smaller, there is no saturation story to tell"
                    : "No saturation story here",
            sq, sq);
    else if (starved)
        out(o,
            "%s against the textbook story (saturation makes Wq's gradient vanish): the scale is a "
            "factor of dQ "
            "and dK as well (%s's is %.3g times %s's), and the unsaturated rows dominate the "
            "matrix norm. The "
            "loss of gradient is per row (above), not visible in the whole-matrix norm.",
            smaller ? "Where it is not smaller, that goes" : "That goes", pr->lb, pr->factor,
            pr->la);
    else
        out(o,
            "%s: the per-row gains above show the %s softmax is not starving the gradient here; "
            "the scale is a "
            "factor of dQ and dK as well (%s's is %.3g times %s's).",
            smaller ? "Where it is not smaller, there is no saturation story to tell"
                    : "No saturation story here",
            pr->lb, pr->lb, pr->factor, pr->la);
}

// ||dL/dWq||, b against a: stated as measured, explained for each outcome.
static void read_wq(Out *o, const ScalePair *pr, const char *when0, const HeadStats *s0,
                    const HeadStats *u0, const char *when1, const HeadStats *s1,
                    const HeadStats *u1, int head_dim) {
    double q0 = s0->gnorm_wq > 0 ? u0->gnorm_wq / s0->gnorm_wq : NAN, q1 = NAN;
    out(o, "- **Whole-matrix ‖dL/dWq‖.** %s: %.3g %s vs %.3g %s", when0, s0->gnorm_wq, pr->la,
        u0->gnorm_wq, pr->lb);
    if (isfinite(q0)) out(o, " (%s/%s = %.3g)", pr->lb, pr->la, q0);
    if (s1 && u1) {
        q1 = s1->gnorm_wq > 0 ? u1->gnorm_wq / s1->gnorm_wq : NAN;
        out(o, "; %s: %.3g vs %.3g", when1, s1->gnorm_wq, u1->gnorm_wq);
        if (isfinite(q1)) out(o, " (%.3g)", q1);
    }
    out(o, ". ");
    const char *w0 = size_word(q0), *w1 = size_word(q1);
    if (!w0 && !w1) {
        out(o, "The gradient norms were not measurable, so no reading is given.\n");
        return;
    }
    if (w0 && w1 && strcmp(w0, w1) != 0)
        out(o, "So %s it is %s at %s and %s at %s. ", pr->lb, w0, when0, w1, when1);
    else
        out(o, "So %s it is %s%s. ", pr->lb, w0 ? w0 : w1, w0 && w1 ? " at both probes" : "");
    int smaller = (w0 && w0[0] == 's') || (w1 && w1[0] == 's');
    int not_smaller = (w0 && w0[0] != 's') || (w1 && w1[0] != 's');
    // did less gradient survive the softmax per row in b at either probe?
    int starved = 0;
    const HeadStats *ss[2] = {s0, s1}, *us[2] = {u0, u1};
    for (int i = 0; i < 2; i++) {
        if (!ss[i] || !us[i]) continue;
        double a = ss[i]->row_gain_median, c = us[i]->row_gain_median;
        if (isfinite(a) && isfinite(c) && a > 0 && (c == 0 || a / c > 1.25)) starved = 1;
    }
    if (smaller) {
        if (starved)
            out(o,
                "%s the textbook story: saturated rows pass almost no gradient back to the queries "
                "and keys. ",
                not_smaller ? "Where it is smaller, that is" : "That is");
        else
            out(o,
                "%s the textbook direction, although the per-row gains above show no extra "
                "saturation "
                "%s, so it comes from how differently the two models have trained, not from the "
                "softmax. ",
                not_smaller ? "Where it is smaller, that matches" : "That matches", pr->lb);
    }
    if (not_smaller) explain_wq_not_smaller(o, pr, starved, smaller, head_dim);
    out(o, "\n");
}

// Which of the pair ends ahead on the final loss, and when their gap opened.
static void read_scale_outcome(Out *o, const CompareLog *log, const ScalePair *pr,
                               const Config *cfg, const long *ps, size_t np, long end) {
    const VarLog *S = &log->v[pr->a], *U = &log->v[pr->b];
    double fl[COMPARE_MAX_VARIANTS];
    const char *measure = final_losses(log, end, fl);
    double fa = fl[pr->a], fb = fl[pr->b];
    if (!isfinite(fa) || !isfinite(fb)) {
        char which[128];
        if (!isfinite(fa) && !isfinite(fb))
            snprintf(which, sizeof which, "either variant");
        else
            snprintf(which, sizeof which, "the %s variant", !isfinite(fa) ? pr->la : pr->lb);
        out(o, "- No finite final loss for %s, so the outcome cannot be compared.\n", which);
        return;
    }
    double gap = fb - fa;
    if (gap >= LEVEL) {
        out(o,
            "- **%s ends ahead.** Final %s: %.4f %s vs %.4f %s; the %s model is lower by %.3f "
            "(%.1f%% below %s).\n",
            pr->ta, measure, fa, pr->la, fb, pr->lb, pr->la, gap, 100 * gap / fb, pr->lb);
    } else if (gap <= -LEVEL) {
        out(o,
            "- **%s ends ahead.** Final %s: %.4f %s vs %.4f %s; the %s model is lower by %.3f "
            "(%.1f%% below %s). ",
            pr->tb, measure, fa, pr->la, fb, pr->lb, pr->lb, -gap, 100 * -gap / fa, pr->la);
        const HeadStats *se = np ? probe_at(S, ps[np - 1]) : NULL,
                        *ue = np ? probe_at(U, ps[np - 1]) : NULL;
        if (se && ue && se->entropy_norm > 0 && ue->entropy_norm / se->entropy_norm < 0.9)
            out(o,
                "Its attention was more peaked (normalised entropy %.3f vs %.3f at step %ld), but "
                "within this "
                "run that peakedness did not hurt the loss.",
                ue->entropy_norm, se->entropy_norm, ps[np - 1]);
        else if (se && ue)
            out(o,
                "Its attention did not end up much more peaked (normalised entropy %.3f vs %.3f at "
                "step %ld), "
                "so saturation had little to hurt within this run.",
                ue->entropy_norm, se->entropy_norm, ps[np - 1]);
        else
            out(o, "Within this run, %s did not hurt the loss.", pr->change);
        const HeadStats *s0 = np ? probe_at(S, ps[0]) : NULL, *u0 = np ? probe_at(U, ps[0]) : NULL;
        const char *small_init = strcmp(cfg->init, "gpt2") == 0
                                     ? ": with the small GPT-2 style init (std 0.02) the "
                                       "raw scores start small"
                                     : "";
        if (s0 && u0 && ps[0] == 0 && u0->entropy_norm >= 0.9 * s0->entropy_norm &&
            u0->frac_gt_099 < 0.05) {
            if (pr->textbook)
                out(o,
                    " At step 0 the unscaled softmax was not saturated (normalised entropy %.3f vs "
                    "%.3f, %.1f%% "
                    "of rows above 0.99)%s, so leaving the scale out mainly let the same weight "
                    "update move the "
                    "scores sqrt(d_k) times further, which can speed up learning.",
                    u0->entropy_norm, s0->entropy_norm, 100 * u0->frac_gt_099, small_init);
            else if (pr->factor > 1)
                out(o,
                    " At step 0 the %s softmax was not saturated (normalised entropy %.3f vs %.3f, "
                    "%.1f%% of rows "
                    "above 0.99)%s, so its %.3g times larger scale mainly let the same weight "
                    "update move the "
                    "scores further, which can speed up learning.",
                    pr->lb, u0->entropy_norm, s0->entropy_norm, 100 * u0->frac_gt_099, small_init,
                    pr->factor);
        }
        out(o, " Longer training or a larger head_dim can change the outcome.\n");
    } else {
        out(o,
            "- **The two variants end level.** Final %s: %.4f %s vs %.4f %s, a gap of %.3f, within "
            "0.01: within "
            "this run, %s neither helped nor hurt the loss.\n",
            measure, fa, pr->la, fb, pr->lb, fabs(gap), pr->change);
    }
    double g = 0;
    const char *what = "";
    long gs = first_gap_step(log, pr->a, pr->b, GAP_DATED, &g, &what);
    if (gs >= 0)
        out(o, "- The %s gap first exceeded 0.05 at step %ld (%s ahead by %.3f there%s).\n", what,
            gs, g > 0 ? pr->la : pr->lb, fabs(g),
            (g > 0 && gap <= -LEVEL) || (g < 0 && gap >= LEVEL) ? "; the lead changed later" : "");
    else if (fabs(gap) > GAP_DATED)
        out(o,
            "- The %s gap stayed within 0.05 at every evaluated step; it exceeds 0.05 only in the "
            "final "
            "measurement.\n",
            what);
    else
        out(o, "- The %s gap never exceeded 0.05.\n", what);
}

static void read_scale_pair(Out *o, const CompareLog *log, const ScalePair *pr, const Config *cfg,
                            const long *ps, size_t np, long end, int head_dim) {
    const VarLog *S = &log->v[pr->a], *U = &log->v[pr->b];
    read_scale_outcome(o, log, pr, cfg, ps, np, end);
    if (np == 0) {
        out(o,
            "- No attention probes were recorded (log.attn_interval = %d), so only the losses can "
            "be "
            "compared.\n",
            cfg->attn_interval);
        return;
    }
    long s0 = ps[0], s1 = ps[np - 1];
    char w0[64], w1[64];
    snprintf(w0, sizeof w0, "step %ld%s", s0, s0 == 0 ? " (identical weights)" : "");
    snprintf(w1, sizeof w1, "step %ld%s", s1, s1 == end ? " (end)" : "");
    read_peakedness(o, pr, w0, probe_at(S, s0), probe_at(U, s0));
    if (s1 != s0) read_peakedness(o, pr, w1, probe_at(S, s1), probe_at(U, s1));
    read_survival(o, pr, w0, probe_at(S, s0), probe_at(U, s0));
    if (s1 != s0) read_survival(o, pr, w1, probe_at(S, s1), probe_at(U, s1));
    read_wq(o, pr, w0, probe_at(S, s0), probe_at(U, s0), w1, s1 != s0 ? probe_at(S, s1) : NULL,
            s1 != s0 ? probe_at(U, s1) : NULL, head_dim);
}

void read_scale(Out *o, const CompareLog *log, const Config *cfg, const long *ps, size_t np,
                long end, int head_dim) {
    int ref = 0;
    for (int i = log->n - 1; i >= 0; i--)
        if (strcmp(log->v[i].value, "sqrt") == 0) ref = i;
    int first = 1;
    for (int b = 0; b < log->n; b++) {
        if (b == ref) continue;
        ScalePair pr;
        scale_pair(&pr, log, ref, b, head_dim);
        if (log->n > 2) out(o, "%s### %s against %s\n\n", first ? "" : "\n", pr.lb, pr.la);
        first = 0;
        read_scale_pair(o, log, &pr, cfg, ps, np, end, head_dim);
    }
}

// ---------------------------------------------------------------------------------------------
// report.md: the reading of a leak (model.attn_mask, model.softmax_axis). A model that sees the
// future is rewarded by the teacher-forced loss and pays in generation: each variant's
// teacher-forced loss and gen_loss against the correct model's, the gap between its gen_loss and
// its teacher-forced loss on the same windows (the measured size of the cheat), its future_mass.

// How x stands to the reference's r: -2 far below, -1 below, 0 level, 1 above, 2 far above (a
// difference that prints as 0.010 is level, whatever the rounding of the subtraction).
static int standing(double x, double r) {
    double d = x - r, e = 1e-9;
    return d < -FAR - e ? -2 : d < -LEVEL - e ? -1 : d <= LEVEL + e ? 0 : d <= FAR + e ? 1 : 2;
}

// " Its <what> is far below `causal`'s: 1.2050 vs 1.7550 (0.550 lower)." Returns the standing,
// or 3 (and says nothing) when either number is missing.
static int state_against(Out *o, const char *what, double x, double r, const char *ref) {
    static const char *const WORD[5] = {"far below", "below", "level with", "above", "far above"};
    if (!isfinite(x) || !isfinite(r)) return 3;
    int st = standing(x, r);
    out(o, " Its %s is %s %s's: %.4f vs %.4f", what, WORD[st + 2], ref, x, r);
    if (st != 0) out(o, " (%.3f %s)", fabs(x - r), x < r ? "lower" : "higher");
    out(o, ".");
    return st;
}

// The final gen_loss minus the teacher-forced loss on the same windows: the measured size of the
// cheat (NaN when either was not measured).
static double cheat(const VarLog *L) { return L->has_final ? L->final_gen - L->final_gen_tf : NAN; }

// The final gen_loss against the teacher-forced loss on the same windows (or, when that was not
// recorded, against the validation loss `val`, on other windows).
static void read_same_windows(Out *o, const VarLog *L, double val, int correct) {
    double gen = L->has_final ? L->final_gen : NAN, tf = L->has_final ? L->final_gen_tf : NAN;
    if (!isfinite(gen)) return;
    if (!isfinite(tf)) {
        if (isfinite(val))
            out(o,
                " Its gen_loss is %.4f against a teacher-forced %.4f on other windows (the "
                "teacher-forced loss on "
                "the generation windows was not recorded), a gap of %.3f.",
                gen, val, gen - val);
        return;
    }
    double c = cheat(L);
    if (fabs(c) <= ROUNDING)
        out(o,
            " On the same windows its gen_loss and its teacher-forced loss agree up to rounding: "
            "%.4f vs %.4f "
            "(difference %.2g)%s.",
            gen, tf, c, correct ? "" : ": no cheat measured");
    else if (c > 0)
        out(o,
            " On the same windows its gen_loss is %.3f above its teacher-forced loss (%.4f vs "
            "%.4f)%s.",
            c, gen, tf,
            correct ? ", more than rounding: the correct model should not see the future"
                    : ": the measured size of the cheat");
    else
        out(o,
            " On the same windows its gen_loss is %.3f *below* its teacher-forced loss (%.4f vs "
            "%.4f)%s.",
            -c, gen, tf, correct ? ", more than rounding" : ": no cheat measured");
}

// future_mass at the last common probe.
static void read_future_mass(Out *o, const CompareLog *log, const VarLog *L, const long *ps,
                             size_t np, int correct, int cheat_measured) {
    if (np == 0) {
        out(o, " Its future_mass was not measured (no attention probes).");
        return;
    }
    double fm = stat_or_nan(probe_at(L, ps[np - 1]), offsetof(HeadStats, future_mass));
    if (fm > FUTURE_EPS) {
        out(o,
            " Its future_mass is %.3g at step %ld: on average %.1f%% of a row's weight lands on "
            "positions after "
            "its own%s.",
            fm, ps[np - 1], 100 * fm, correct ? ", which a causal model must not do" : "");
    } else if (isfinite(fm)) {
        out(o,
            " Its future_mass is %.3g at step %ld: no weight lands on a position after the query's "
            "own",
            fm, ps[np - 1]);
        if (!correct && cheat_measured && strcmp(log->key, "model.softmax_axis") == 0)
            out(o, "; the leak is in the normalisation instead: each weight is divided by a sum "
                   "over the queries "
                   "that see its key, the later ones included");
        out(o, ".");
    }
}

// A variant that is not the correct model, against the correct one (ref, or -1 when none is).
static void read_leak_variant(Out *o, const CompareLog *log, int i, int ref, const double *val,
                              const double *gen, const char *measure, const long *ps, size_t np) {
    const VarLog *L = &log->v[i];
    char li[96], lr[96];
    label(li, sizeof li, log, i);
    out(o, "- **%s.**", li);
    if (ref >= 0) {
        char what[128];
        label(lr, sizeof lr, log, ref);
        snprintf(what, sizeof what, "teacher-forced %s", measure);
        int sv = state_against(o, what, val[i], val[ref], lr),
            sg = state_against(o, "gen_loss", gen[i], gen[ref], lr);
        int val_below = sv < 0, gen_above = sg == 1 || sg == 2;
        if (val_below && gen_above)
            out(o, " That is the signature of a leak: the teacher-forced loss rewards seeing the "
                   "future, and "
                   "generation, which has no future to see, pays for it.");
        else if (val_below && sg != 3)
            out(o,
                " The teacher-forced loss rewards it, but its gen_loss is not above %s's: "
                "generation did not pay "
                "for seeing the future in this run.",
                lr);
        else if (gen_above && sv != 3)
            out(o,
                " Its teacher-forced loss is not below %s's, so the usual loss does not show a "
                "cheat here; "
                "gen_loss shows the cost.",
                lr);
        else if (sv != 3 && sg != 3)
            out(o, " Neither loss shows the symptom of a leak against %s in this run.", lr);
    } else {
        if (isfinite(val[i])) out(o, " Its teacher-forced %s is %.4f.", measure, val[i]);
        if (isfinite(gen[i])) out(o, " Its gen_loss is %.4f.", gen[i]);
    }
    read_same_windows(o, L, val[i], 0);
    read_future_mass(o, log, L, ps, np, 0, cheat(L) > ROUNDING);
    out(o, "\n");
}

void read_leak(Out *o, const CompareLog *log, const Config *cfg, const long *ps, size_t np,
               long end) {
    double val[COMPARE_MAX_VARIANTS], gen[COMPARE_MAX_VARIANTS];
    const char *measure = final_losses(log, end, val);
    int gens = final_gens(log, end, gen);
    int vidx[COMPARE_MAX_VARIANTS];
    order_by(val, log->n, vidx);
    out(o, "- **Ranking.** By the teacher-forced %s, lowest first: ", measure);
    ranking(o, log, val, NULL);
    if (gens) {
        out(o, ". By gen_loss: ");
        int same = ranking(o, log, gen, vidx);
        out(o, same ? ". Both rank the variants the same way.\n"
                    : ". The orders differ: the teacher-forced loss does not rank the models as "
                      "generation does.\n");
    } else {
        out(o, ". gen_loss was not measured for every variant.\n");
    }
    int ref = -1;
    for (int i = log->n - 1; i >= 0; i--)
        if (variant_is_correct(log, cfg, i)) ref = i;
    if (ref >= 0) {
        char lr[96];
        out(o,
            "- **%s is the correct model** (the causal mask, the softmax over the keys): a "
            "position sees only "
            "itself and the past.",
            label(lr, sizeof lr, log, ref));
        read_same_windows(o, &log->v[ref], val[ref], 1);
        read_future_mass(o, log, &log->v[ref], ps, np, 1, 0);
        out(o, "\n");
    } else {
        out(o, "- **No variant here is the correct model** (model.attn_mask = causal with "
               "model.softmax_axis = keys), "
               "so each is read on its own numbers.\n");
    }
    for (int i = 0; i < log->n; i++)
        if (i != ref) read_leak_variant(o, log, i, ref, val, gen, measure, ps, np);
}

// ---------------------------------------------------------------------------------------------
// report.md: the reading of any other key: the final losses, which variant ends ahead and by how
// much, when the gaps opened, and whether gen_loss tells the same story.

void read_other(Out *o, const CompareLog *log, long end) {
    double fl[COMPARE_MAX_VARIANTS], gen[COMPARE_MAX_VARIANTS];
    int idx[COMPARE_MAX_VARIANTS];
    char lw[96], lj[96];
    const char *measure = final_losses(log, end, fl);
    order_by(fl, log->n, idx);
    out(o, "- **Final %s**, lowest first: ", measure);
    ranking(o, log, fl, NULL);
    out(o, ".\n");
    int w = idx[0];
    if (!isfinite(fl[w])) {
        out(o, "- No variant has a finite final loss, so the outcome cannot be compared.\n");
        return;
    }
    label(lw, sizeof lw, log, w);
    double widest = 0;
    for (int r = 1; r < log->n; r++)
        if (isfinite(fl[idx[r]]) && fl[idx[r]] - fl[w] > widest) widest = fl[idx[r]] - fl[w];
    if (widest <= LEVEL) {
        out(o, "- **The variants end level**: every final loss is within 0.01 of %s's %.4f.\n", lw,
            fl[w]);
    } else {
        out(o, "- **%s ends ahead.** Its final loss is lower than ", lw);
        for (int r = 1; r < log->n; r++) {
            int j = idx[r];
            if (r > 1) out(o, r + 1 == log->n ? " and " : ", ");
            label(lj, sizeof lj, log, j);
            double d = fl[j] - fl[w];
            if (!isfinite(d))
                out(o, "%s's (which has none)", lj);
            else if (d <= LEVEL)
                out(o, "%s's by only %.3f (level, within 0.01)", lj, d);
            else
                out(o, "%s's by %.3f (%.1f%% below it)", lj, d, 100 * d / fl[j]);
        }
        out(o, ".\n");
    }
    for (int r = 1; r < log->n; r++) {
        int j = idx[r];
        double g = 0;
        const char *what = "";
        long gs = first_gap_step(log, w, j, GAP_DATED, &g, &what);
        label(lj, sizeof lj, log, j);
        double d = fl[j] - fl[w];
        if (gs >= 0)
            out(o,
                "- The %s gap between %s and %s first exceeded 0.05 at step %ld (%s ahead by %.3f "
                "there%s).\n",
                what, lw, lj, gs, g > 0 ? lw : lj, fabs(g),
                g < 0 && d > LEVEL ? "; the lead changed later" : "");
        else if (fabs(d) > GAP_DATED)
            out(o,
                "- The %s gap between %s and %s stayed within 0.05 at every evaluated step; it "
                "exceeds 0.05 only "
                "in the final measurement.\n",
                what, lw, lj);
        else
            out(o, "- The %s gap between %s and %s never exceeded 0.05.\n", what, lw, lj);
    }
    if (final_gens(log, end, gen)) {
        out(o, "- **gen_loss**, lowest first: ");
        int same = ranking(o, log, gen, idx);
        out(o, same ? ": the same order as the %s.\n" : ": a different order from the %s.\n",
            measure);
    }
    // the same windows: any gap is a model seeing the future
    int honest = 0;
    double largest = 0;
    for (int i = 0; i < log->n; i++) {
        const VarLog *L = &log->v[i];
        double c = cheat(L);
        if (!isfinite(c)) continue;
        if (fabs(c) <= ROUNDING) {
            honest++;
            if (fabs(c) > largest) largest = fabs(c);
        } else {
            out(o,
                "- On the same windows %s's gen_loss is %.3f %s its teacher-forced loss (%.4f vs "
                "%.4f)%s.\n",
                label(lj, sizeof lj, log, i), fabs(c), c > 0 ? "above" : "below", L->final_gen,
                L->final_gen_tf,
                c > 0 ? ": it sees the future, and its teacher-forced losses flatter it" : "");
        }
    }
    if (honest == log->n)
        out(o,
            "- For every variant gen_loss and the teacher-forced loss on the same windows agree up "
            "to rounding "
            "(largest difference %.2g): none sees the future.\n",
            largest);
}
