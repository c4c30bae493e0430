// teach/online_page.c: `./lab online-softmax`: the online softmax on the lesson's two problems,
// block by block, against attention.c's: the numbers, what each block does and the page (declared
// in teach/lab_pages.h).
#include "teach/lab_pages.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const LAB_ONLINE_BLOCK_COLUMNS[7] = {
    "m_old", "block max", "m_new", "exp(m_old - m_new)", "l_old", "block sum", "l_new"};

// "keys 2..3", or "key 4" for a block of one.
static const char *block_keys(char *buf, size_t n, const LabOnline *o, int j) {
    int u0 = j * o->block, u1 = u0 + o->block < o->T ? u0 + o->block : o->T;
    if (u1 - u0 == 1)
        snprintf(buf, n, "key %d", u0);
    else
        snprintf(buf, n, "keys %d..%d", u0, u1 - 1);
    return buf;
}

void lab_online_arrays(LabArrays *s, const LabOnline o[LAB_ONLINE_PROBLEMS]) {
    for (int k = 0; k < LAB_ONLINE_PROBLEMS; k++) {
        const LabOnline *p = &o[k];
        int T = p->T, d = p->dk;
        const char *g = p->group;
        lab_arrays_add(s, lab_key_of(g, "Q"), T, d, p->Q);
        lab_arrays_add(s, lab_key_of(g, "K"), T, d, p->K);
        lab_arrays_add(s, lab_key_of(g, "V"), T, d, p->V);
        lab_arrays_add(s, lab_key_of(g, "scores"), T, T, p->S);
        for (int j = 0; j < p->n_blocks; j++) {
            double table[LAB_ONLINE_MAX_T * 7];
            for (int t = 0; t < T; t++) {
                const real col[7] = {p->m_old[j][t],   p->block_max[j][t], p->m_new[j][t],
                                     p->rescale[j][t], p->l_old[j][t],     p->block_sum[j][t],
                                     p->l_new[j][t]};
                for (int c = 0; c < 7; c++) table[t * 7 + c] = (double)col[c];
            }
            char name[24];
            snprintf(name, sizeof name, "block%d", j + 1);
            lab_arrays_add_double(s, lab_key_of(g, name), T, 7, table);
            snprintf(name, sizeof name, "o%d", j + 1);
            lab_arrays_add(s, lab_key_of(g, name), T, d, p->o[j]);
            double plain[LAB_ONLINE_MAX_T * 3];
            for (int t = 0; t < T; t++) {
                plain[t * 3 + 0] = j ? (double)p->l_plain[j - 1][t] : 0.0;
                plain[t * 3 + 1] = (double)p->block_sum[j][t];
                plain[t * 3 + 2] = (double)p->l_plain[j][t];
            }
            snprintf(name, sizeof name, "plain%d", j + 1);
            lab_arrays_add_double(s, lab_key_of(g, name), T, 3, plain);
            snprintf(name, sizeof name, "o_plain%d", j + 1);
            lab_arrays_add(s, lab_key_of(g, name), T, d, p->o_plain[j]);
        }
        double L[LAB_ONLINE_MAX_T];
        for (int t = 0; t < T; t++) L[t] = (double)p->L[t];
        lab_arrays_add_vector(s, lab_key_of(g, "L"), T, L);
        lab_arrays_add(s, lab_key_of(g, "P_online"), T, T, p->P_online);
        lab_arrays_add(s, lab_key_of(g, "P"), T, T, p->P);
        lab_arrays_add_vector(s, lab_key_of(g, "P_diff"), T, p->P_diff);
        lab_arrays_add(s, lab_key_of(g, "O_online"), T, d, p->O_online);
        lab_arrays_add(s, lab_key_of(g, "O"), T, d, p->O);
        lab_arrays_add_vector(s, lab_key_of(g, "O_diff"), T, p->O_diff);
        lab_arrays_add(s, lab_key_of(g, "P_plain"), T, T, p->P_plain);
        lab_arrays_add_vector(s, lab_key_of(g, "plain_rowsum"), T, p->plain_rowsum);
        lab_arrays_add(s, lab_key_of(g, "O_plain"), T, d, p->O_plain);
        lab_arrays_add_vector(s, lab_key_of(g, "O_plain_diff"), T, p->O_plain_diff);
    }
}

void lab_online_block_reading(char *buf, size_t n, const LabOnline *o, int j) {
    if (j == 0) {
        snprintf(buf, n,
                 "before the first block m = -inf and l = 0, so exp(m_old - m_new) = 0 and l and o "
                 "are this "
                 "block's terms alone.");
        return;
    }
    int grew = 0, r = -1;
    for (int t = 0; t < o->T; t++)
        if (o->m_new[j][t] > o->m_old[j][t]) {
            grew++;
            if (r < 0 || o->rescale[j][t] < o->rescale[j][r]) r = t;
        }
    if (!grew) {
        snprintf(buf, n,
                 "no row finds a larger score in this block: every exp(m_old - m_new) is 1 and the "
                 "block's "
                 "terms are added as they are.");
        return;
    }
    snprintf(buf, n,
             "%d of the %d rows find%s a larger score in this block; row %d's maximum grows from "
             "%.6f to %.6f, so the "
             "l = %.6f it had is multiplied by exp(%.6f - %.6f) = %.6f before this block's %.6f is "
             "added: "
             "l = %.6f (and o likewise).",
             grew, o->T, grew == 1 ? "s" : "", r, (double)o->m_old[j][r], (double)o->m_new[j][r],
             (double)o->l_old[j][r], (double)o->m_old[j][r], (double)o->m_new[j][r],
             (double)o->rescale[j][r], (double)o->block_sum[j][r], (double)o->l_new[j][r]);
}

void lab_online_result_reading(char *buf, size_t n, const LabOnline *o) {
    snprintf(buf, n,
             "P = exp(s - m) / l differs from attention.c's softmax by at most %.3e, and O = o / l "
             "from its "
             "P V by at most %.3e: equal up to " REAL_NAME " rounding.",
             o->max_P_diff, o->max_O_diff);
}

void lab_online_plain_reading(char *buf, size_t n, const LabOnline *o) {
    double lo = INFINITY, hi = -INFINITY;
    int wrong = 0;
    for (int t = 0; t < o->T; t++) {
        lo = fmin(lo, o->plain_rowsum[t]);
        hi = fmax(hi, o->plain_rowsum[t]);
        for (int j = 1; j < o->n_blocks; j++) wrong += o->m_new[j][t] > o->m_old[j][t];
    }
    if (!wrong) {
        snprintf(buf, n,
                 "without the rescaling nothing changes here: no row's maximum grows after its "
                 "first block.");
        return;
    }
    if (o->max_O_plain_diff < 1e-5)
        snprintf(buf, n,
                 "without the rescaling (l and o summed as the blocks come) the rows of P sum to "
                 "%.6f .. %.6f "
                 "instead of 1; O happens to come out right (off by %.3e) because the rows that go "
                 "wrong mix "
                 "values that average the same either way.",
                 lo, hi, o->max_O_plain_diff);
    else
        snprintf(buf, n,
                 "without the rescaling (l and o summed as the blocks come) the rows of P sum to "
                 "%.6f .. %.6f "
                 "instead of 1, and O is off by up to %.6f.",
                 lo, hi, o->max_O_plain_diff);
}

HtmlPage *lab_online_page(const LabArrays *s, const LabOnline o[LAB_ONLINE_PROBLEMS],
                          const char *command) {
    char c[1536], reading[768], keys[32], title[96], name[24];
    HtmlPage *p = html_page_new("The online softmax, block by block", command);
    html_page_switch(p, "With the rescaling exp(m_old - m_new)", "Without it (the mistake)",
                     "Compare without the rescaling");
    html_page_note(
        p,
        "The softmax of each row of scores, and its mix of the values, computed one block of keys "
        "at a "
        "time as a fused attention kernel does (FlashAttention): each row keeps only a running "
        "maximum "
        "m, a running sum l of exp(s - m) and the unnormalised output o. When a block raises the "
        "maximum from m_old to m_new, what was summed so far is multiplied by exp(m_old - m_new). "
        "Computed in " REAL_NAME
        " by `./lab online-softmax` and compared with attention_forward of "
        "the definition (attention.c), which the engine (kernels/attention_engine.c) that trains "
        "by "
        "default is proven equal to. The switch shows what forgetting the rescaling gives.");
    for (int k = 0; k < LAB_ONLINE_PROBLEMS; k++) {
        const LabOnline *q = &o[k];
        const char *g = q->group;
        int T = q->T, d = q->dk;
        if (strcmp(g, "t3") == 0)
            snprintf(c, sizeof c,
                     "The worked example of `./lab examples`: T = 3, d_k = 2, Q = K = "
                     "[[1,0],[0,1],[1,1]], "
                     "V = [[10,0],[0,10],[5,5]], no mask; blocks of %d key%s.",
                     q->block, q->block == 1 ? "" : "s");
        else
            snprintf(c, sizeof c,
                     "The exercise of `./lab exercise`: np.random.seed(0); Q, K, V = "
                     "np.random.randn(%d, "
                     "%d) x 3, no mask; blocks of %d key%s.",
                     T, d, q->block, q->block == 1 ? "" : "s");
        if (strcmp(g, "t3") == 0)
            snprintf(title, sizeof title, "The T = %d example", T);
        else
            snprintf(title, sizeof title, "The exercise: T = %d", T);
        html_page_sequence(p, g, title, c);

        snprintf(
            c, sizeof c,
            "The scores S = Q K^T / sqrt(%d), row t for query t, column u for key u. The online "
            "softmax reads them one block of %d column%s at a time, left to right: %d blocks.",
            d, q->block, q->block == 1 ? "" : "s", q->n_blocks);
        HtmlStep *st = html_page_step(p, "Scores", c);
        lab_put(st, s, HTML_SHARED, g, "Q", "Q", "t", "i");
        lab_put(st, s, HTML_SHARED, g, "K", "K", "u", "i");
        snprintf(title, sizeof title, "S = Q K^T / sqrt(%d)", d);
        html_mat_mark_all(lab_put(st, s, HTML_SHARED, g, "scores", title, "t", "u"),
                          HTML_CELL_CHANGED);

        for (int j = 0; j < q->n_blocks; j++) {
            lab_online_block_reading(reading, sizeof reading, q, j);
            block_keys(keys, sizeof keys, q, j);
            snprintf(
                c, sizeof c,
                "Every row reads the scores of %s (highlighted): m_new = max(m_old, block max), "
                "l_new = l_old * exp(m_old - m_new) + sum exp(s - m_new), o = o * exp(m_old - "
                "m_new) "
                "+ sum exp(s - m_new) V. So: %s",
                keys, reading);
            snprintf(title, sizeof title, "Block %d: %s", j + 1, keys);
            st = html_page_step(p, title, c);
            HtmlMatrix *m = lab_put(st, s, HTML_SHARED, g, "scores", "S", "t", "u");
            int u0 = j * q->block;
            for (int t = 0; t < T; t++)
                for (int u = u0; u < u0 + q->block && u < T; u++)
                    html_mat_mark(m, t, u, HTML_CELL_CHANGED);
            lab_put(st, s, HTML_SHARED, g, "V", "V", "u", "i");
            snprintf(name, sizeof name, "block%d", j + 1);
            m = lab_put(st, s, HTML_MAIN, g, name, "the running maximum and sum", "t", NULL);
            html_mat_col_labels(m, LAB_ONLINE_BLOCK_COLUMNS);
            for (int t = 0; t < T; t++)
                for (int col = 2; col < 7; col++)
                    if (col != 4 && col != 5)
                        html_mat_mark(m, t, col, HTML_CELL_CHANGED);  // m_new, factor, l_new
            snprintf(name, sizeof name, "o%d", j + 1);
            html_mat_mark_all(lab_put(st, s, HTML_MAIN, g, name,
                                      "o = o * exp(m_old - m_new) + sum exp(s - m_new) V", "t",
                                      "i"),
                              HTML_CELL_CHANGED);
            static const char *const plain_cols[3] = {"l_old", "block sum",
                                                      "l_new = l_old + block sum"};
            snprintf(name, sizeof name, "plain%d", j + 1);
            m = lab_put(st, s, HTML_ALT, g, name, "the sum without the rescaling", "t", NULL);
            html_mat_col_labels(m, plain_cols);
            for (int t = 0; t < T; t++) html_mat_mark(m, t, 2, HTML_CELL_CHANGED);
            snprintf(name, sizeof name, "o_plain%d", j + 1);
            html_mat_mark_all(
                lab_put(st, s, HTML_ALT, g, name, "o = o + sum exp(s - m_new) V", "t", "i"),
                HTML_CELL_CHANGED);
        }

        char plain[512];
        lab_online_result_reading(reading, sizeof reading, q);
        lab_online_plain_reading(plain, sizeof plain, q);
        plain[0] = (char)(plain[0] - 'a' + 'A');
        snprintf(
            c, sizeof c,
            "After the last block each row divides by its sum: P = exp(s - m) / l and O = o / l; "
            "L = m + ln l is all a fused backward keeps of the row (it recomputes P = exp(s - L)). "
            "%s The diff columns are the largest |difference| of each row. %s",
            reading, plain);
        st = html_page_step(p, "Normalise", c);
        lab_put(st, s, HTML_SHARED, g, "P", "softmax(S) (attention.c)", "t", "u");
        lab_put(st, s, HTML_SHARED, g, "O", "P V (attention.c)", "t", "i");
        HtmlMatrix *m = lab_put(st, s, HTML_MAIN, g, "P_online", "P = exp(s - m) / l", "t", "u");
        html_mat_mark_all(m, HTML_CELL_CHANGED);
        lab_put_extra(m, s, g, "L", "L");
        lab_put_extra(m, s, g, "P_diff", "diff");
        m = lab_put(st, s, HTML_MAIN, g, "O_online", "O = o / l", "t", "i");
        html_mat_mark_all(m, HTML_CELL_CHANGED);
        lab_put_extra(m, s, g, "O_diff", "diff");
        m = lab_put(st, s, HTML_ALT, g, "P_plain", "P without the rescaling", "t", "u");
        lab_put_extra(m, s, g, "plain_rowsum", "sum");
        for (int t = 0; t < T; t++)
            if (!lab_sums_to_one(q->plain_rowsum[t])) html_mat_extra_mark(m, 0, t, HTML_CELL_WRONG);
        m = lab_put(st, s, HTML_ALT, g, "O_plain", "O without the rescaling", "t", "i");
        lab_put_extra(m, s, g, "O_plain_diff", "diff");
        for (int t = 0; t < T; t++)
            if (q->O_plain_diff[t] > 1e-5) html_mat_extra_mark(m, 0, t, HTML_CELL_WRONG);
    }
    return p;
}
