// tests/test_induction.c: the induction probe and its scores (run/induction.c). The probe is its
// definition (a random letter sequence twice, the targets one ahead); the scores of hand-made
// weights are known exactly (a perfect previous-token head, a perfect induction head, uniform
// heads); on a model, the scores are those of the weights a forward of the definition gives, and
// measuring changes neither the parameters nor the gradients. (make check-safetensors re-derives
// them from a float64 forward of its own, tests/safetensors_check.py.)
#define _POSIX_C_SOURCE 200809L  // mkdtemp, popen
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"
#include "model.h"
#include "run/induction.h"
#include "test.h"
#include "test_numeric.h"

static Vocab vocab_of(const char *chars) {
    Vocab v;
    v.vocab_size = (int)strlen(chars);
    v.chars = malloc((size_t)v.vocab_size * sizeof(uint32_t));
    for (int i = 0; i < v.vocab_size; i++) v.chars[i] = (unsigned char)chars[i];
    return v;
}

static void test_induction_probe_is_a_sequence_twice(void) {
    Vocab v = vocab_of("\n !.abcdefghijklmnopqrstuvwxyz");
    Induction *ind = induction_new(&v, 1337, 3, 20, 2, 2);
    CHECK(ind && ind->L == 10 && ind->B == 3 && ind->T == 20 && ind->step == -1);
    int letters_only = 1, twice = 1, shifted = 1, rows_differ = 0;
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < 20; t++) {
            int x = ind->x[b * 20 + t];
            letters_only &= v.chars[x] >= 'a' && v.chars[x] <= 'z';
            if (t >= 10) twice &= x == ind->x[b * 20 + t - 10];
            if (t < 19)
                shifted &= ind->y[b * 20 + t] == ind->x[b * 20 + t + 1];
            else
                shifted &= ind->y[b * 20 + t] == ind->x[b * 20];  // r[(t + 1) mod L] = r[0]
            if (b > 0) rows_differ |= x != ind->x[t];
        }
    CHECK(letters_only && twice && shifted && rows_differ);
    // the same seed, the same probe; another seed, another
    Induction *same = induction_new(&v, 1337, 3, 20, 2, 2),
              *other = induction_new(&v, 1338, 3, 20, 2, 2);
    CHECK(memcmp(same->x, ind->x, 60 * sizeof(int)) == 0 &&
          memcmp(same->y, ind->y, 60 * sizeof(int)) == 0);
    CHECK(memcmp(other->x, ind->x, 60 * sizeof(int)) != 0);
    induction_free(ind);
    induction_free(same);
    induction_free(other);
    // fewer than INDUCTION_MIN_LETTERS letters: every character of the vocabulary
    Vocab digits = vocab_of("0123456789abc");
    int ids[32];
    CHECK(induction_alphabet(&digits, ids) == 13 && ids[12] == 12);
    CHECK(induction_alphabet(&v, ids) == 26 && ids[0] == 4);
    // T < 4: no second copy worth measuring
    CHECK(induction_new(&v, 1, 2, 3, 1, 1) == NULL);
    free(v.chars);
    free(digits.chars);
}

// Weights (B=2, NH=3, T=8, L=4) of three heads: head 0 a perfect previous-token head (row 0 on
// itself), head 1 a perfect induction head on the second copy (uniform on the first), head 2
// uniform over the t + 1 keys a causal row sees.
static void test_induction_scores_of_known_heads(void) {
    enum { B = 2, NH = 3, T = 8, L = 4 };
    Induction ind = {0};
    ind.B = B, ind.T = T, ind.L = L, ind.n_heads = NH;
    double prev[NH], induct[NH];
    ind.prev_token = prev, ind.induction = induct;
    real *att = calloc((size_t)B * NH * T * T, sizeof(real)), losses[B * T];
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            real *p0 = att + ((size_t)(b * NH + 0) * T + t) * T,
                 *p1 = att + ((size_t)(b * NH + 1) * T + t) * T,
                 *p2 = att + ((size_t)(b * NH + 2) * T + t) * T;
            p0[t > 0 ? t - 1 : 0] = 1;
            for (int u = 0; u <= t; u++) p1[u] = t >= L ? (u == t - L + 1) : (real)(1.0 / (t + 1));
            for (int u = 0; u <= t; u++) p2[u] = (real)(1.0 / (t + 1));
            // the loss: 3 on the first copy, 1 on the second, 9 on the predictions of r[0]
            losses[b * T + t] = t == L - 1 || t == T - 1 ? 9 : t < L ? 3 : 1;
        }
    const real *layers[1] = {att};
    induction_scores(&ind, layers, losses, 1, NH);
    double mean_prev = 0, mean_ind = 0;  // uniform rows: the mean of 1/(t+1) over the rows scored
    for (int t = 1; t < T; t++) mean_prev += 1.0 / (t + 1) / (T - 1);
    for (int t = L; t < 2 * L; t++) mean_ind += 1.0 / (t + 1) / L;
    CHECK_NEAR(prev[0], 1.0, 1e-12);
    CHECK_NEAR(induct[1], 1.0, 1e-12);
    CHECK_NEAR(prev[2], mean_prev, 1e-7);
    CHECK_NEAR(induct[2], mean_ind, 1e-7);
    // the previous-token head on the second copy attends to t-1, which is t-L+1 only when L = 2
    CHECK_NEAR(induct[0], 0.0, 1e-12);
    // the induction head's row t = L (its first) puts weight 1 on key 1, which is not t-1 = L-1
    double prev1 = 0;
    for (int t = 1; t < L; t++) prev1 += 1.0 / (t + 1);
    CHECK_NEAR(prev[1], prev1 / (T - 1), 1e-7);
    CHECK_NEAR(ind.first_copy_loss, 3.0, 1e-12);
    CHECK_NEAR(ind.second_copy_loss, 1.0, 1e-12);
    free(att);
}

// On a model: the scores of induction_measure are those of the weights and losses its forward
// leaves (the definition's P), the parameters, the gradients and the next training pass are
// untouched by it.
static void test_induction_measure_on_a_model(void) {
    Vocab v = vocab_of("abcdefghijklmnop");
    ModelDims d = {16, 12, 2, 2, 8, QK_NORM_NONE};
    GPT m;
    gpt_build(&m, &d, attention_causal((real)(1.0 / sqrt(4.0))), 3, 12);
    Rng rng;
    rng_seed(&rng, 5);
    gpt_init(&m, INIT_FAN_IN, &rng);
    Induction *ind = induction_new(&v, 9, 3, 12, 2, 2);
    real *before = malloc(m.n_params * sizeof(real));
    memcpy(before, m.params, m.n_params * sizeof(real));
    gpt_zero_grad(&m);
    induction_measure(&m, ind, 7);
    CHECK(ind->step == 7);
    CHECK(memcmp(before, m.params, m.n_params * sizeof(real)) == 0);
    int grads_zero = 1;
    for (size_t i = 0; i < m.n_params; i++) grads_zero &= m.grads[i] == 0;
    CHECK(grads_zero);
    // the same forward by hand: the definition's weights, every row a distribution over its keys
    m.keep_weights = 1;
    double loss = gpt_forward(&m, ind->x, ind->y, 3, 12);
    m.keep_weights = 0;
    int rows_sum_to_one = 1;
    for (int l = 0; l < 2; l++)
        for (size_t r = 0; r < (size_t)3 * 2 * 12; r++) {
            double s = 0;
            for (int u = 0; u < 12; u++) s += m.acts.layers[l].att[r * 12 + u];
            rows_sum_to_one &= fabs(s - 1) < 1e-5;
        }
    CHECK(rows_sum_to_one);
    for (int k = 0; k < 4; k++) {
        const real *P = m.acts.layers[k / 2].att;
        int h = k % 2;
        double prev = 0, induct = 0;
        for (int b = 0; b < 3; b++)
            for (int t = 1; t < 12; t++) {
                prev += P[(((size_t)b * 2 + h) * 12 + t) * 12 + t - 1] / 33.0;
                if (t >= 6) induct += P[(((size_t)b * 2 + h) * 12 + t) * 12 + t - 5] / 18.0;
            }
        CHECK_NEAR(ind->prev_token[k], prev, 1e-12);
        CHECK_NEAR(ind->induction[k], induct, 1e-12);
        CHECK(prev > 0 && prev < 1 && induct > 0 && induct < 1);
    }
    // the two copies' losses average to about the forward's loss (the rows of r[0] aside)
    double first = 0, second = 0;
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < 5; t++)
            first += m.acts.losses[b * 12 + t] / 15.0,
                second += m.acts.losses[b * 12 + 6 + t] / 15.0;
    CHECK_NEAR(ind->first_copy_loss, first, 1e-12);
    CHECK_NEAR(ind->second_copy_loss, second, 1e-12);
    CHECK(fabs(loss - 0.5 * (first + second)) < 0.5);
    induction_free(ind);
    free(before);
    free(v.chars);
    gpt_free(&m);
}

// tools/induction_report on hand-written logs (a 2-layer run whose layer-1 head 1 passes 0.4 at
// step 20, one that never passes, a 1-layer control): the lines docs/induction.md's figures are
// read from.
static void write_text(const char *dir, const char *name, const char *text) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_induction_report_reads_the_logs(void) {
    if (access("tools/induction_report", X_OK) != 0)
        SKIP("tools/induction_report is not built (make test builds it)");
    char dir[] = "/tmp/tgpt_induction_XXXXXX", cmd[1024], out[4096] = "";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/scale/sqrt %s/scale/none %s/onelayer", dir, dir, dir);
    CHECK(system(cmd) == 0);
    const char *metrics = "step,loss,val_loss,first_copy_loss,second_copy_loss,in_context\n"
                          "10,3,,3.3,3.2,-0.1\n20,2,,3.4,1.4,-2.0\n30,2,,3.5,0.5,-3.0\n";
    const char *flat = "step,loss,val_loss,first_copy_loss,second_copy_loss,in_context\n"
                       "10,3,,3.3,3.3,0\n20,3,,3.3,3.35,0.05\n30,3,,3.3,3.25,-0.05\n";
    char path[600];
    snprintf(path, sizeof path, "%s/scale/sqrt", dir);
    write_text(path, "metrics.csv", metrics);
    // the leading columns left out, as docs/induction/ keeps them; layer 0's 0.9 is not counted
    write_text(path, "attention.csv",
               "step,layer,head,prev_token,induction\n"
               "10,0,0,0.5,0.9\n10,0,1,0.1,0.0\n10,1,0,0.1,0.1\n10,1,1,0.1,0.3\n"
               "20,0,0,0.6,0.0\n20,0,1,0.1,0.0\n20,1,0,0.1,0.1\n20,1,1,0.1,0.45\n"
               "30,0,0,0.7,0.0\n30,0,1,0.1,0.0\n30,1,0,0.1,0.1\n30,1,1,0.1,0.8\n");
    snprintf(path, sizeof path, "%s/scale/none", dir);
    write_text(path, "metrics.csv", flat);
    write_text(path, "attention.csv",
               "step,layer,head,prev_token,induction\n"
               "10,0,0,0.2,0\n10,1,0,0.1,0.2\n20,0,0,0.3,0\n20,1,0,0.1,0.35\n30,0,0,0.4,0\n30,1,0,"
               "0.1,0.1\n");
    snprintf(path, sizeof path, "%s/onelayer", dir);
    write_text(path, "metrics.csv", flat);
    write_text(
        path, "attention.csv",
        "step,layer,head,prev_token,induction\n10,0,0,0.3,0.05\n20,0,0,0.4,0.5\n30,0,0,0.4,0.2\n");
    snprintf(cmd, sizeof cmd, "./tools/induction_report %s 2>&1", dir);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    CHECK(p && pclose(p) == 0);
    static const char *const want[] = {
        "threshold: 0.40\n",
        "sqrt passed: 1\n",
        "sqrt first step: 20\n",
        "sqrt final induction: 0.800 (layer 1 head 1, step 30)\n",
        "sqrt final prev token: 0.700\n",
        "sqrt final second copy loss: 0.500\n",
        "sqrt final in context: -3.000 (step 30)\n",
        "sqrt largest induction: 0.800\n",
        "sqrt lowest in context: -3.000\n",
        "none passed: 0\n",
        "none largest induction: 0.350\n",
        "none lowest in context: -0.050\n",
        "onelayer passed: 1\n",
        "onelayer first step: 20\n",
        "onelayer final induction: 0.200 (layer 0",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK_MSG(strstr(out, want[i]), "no '%s' in:\n%s", want[i], out);
    CHECK_MSG(!strstr(out, "none first step"), "%s", out);
    // --phase-step: the scaled run's first step; --threshold moves it
    snprintf(cmd, sizeof cmd,
             "./tools/induction_report --phase-step %s/scale/sqrt && "
             "./tools/induction_report --threshold 0.25 --phase-step %s/scale/sqrt && "
             "./tools/induction_report --phase-step %s/scale/none",
             dir, dir, dir);
    p = popen(cmd, "r");
    n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    CHECK(p && pclose(p) == 0);
    CHECK_MSG(strcmp(out, "20\n10\nnone\n") == 0, "%s", out);
    // the page: written, with the table's rows
    snprintf(
        cmd, sizeof cmd,
        "./tools/induction_report --html %s/r.html %s > /dev/null && grep -c '<tr><td>' %s/r.html",
        dir, dir, dir);
    p = popen(cmd, "r");
    n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    CHECK(p && pclose(p) == 0);
    CHECK_MSG(strcmp(out, "3\n") == 0, "table rows: %s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

// induction_mix_text (the page's induction data): percent 0 is the text itself; at 50 every line of
// the text is there, in order, and between them only lines of 6-16 letters written twice, about
// half the lines of the result; the same seed gives the same text, another seed another.
static void test_induction_mix_text(void) {
    const char *text = "the cat sat.\ncopy: abc | abc\nrev: ab > ba\n(a b)\n";
    char big[4000];
    size_t nb = 0;
    for (int i = 0; i < 60; i++)
        nb += (size_t)snprintf(big + nb, sizeof big - nb, "line %d here\n", i);
    size_t n = 0;
    char *same = induction_mix_text(text, strlen(text), 0, 7, &n);
    CHECK(n == strlen(text) && strcmp(same, text) == 0);
    free(same);
    char *mix = induction_mix_text(big, nb, 50, 7, &n),
         *again = induction_mix_text(big, nb, 50, 7, &n);
    size_t n2 = 0;
    char *other = induction_mix_text(big, nb, 50, 8, &n2);
    CHECK(strcmp(mix, again) == 0 && strlen(mix) == n && strcmp(mix, other) != 0);
    int next = 0, repeated = 0, bad = 0;
    for (char *line = mix; *line;) {
        char *end = strchr(line, '\n');
        CHECK(end);
        if (!end) break;
        int len = (int)(end - line);
        char want[32];
        snprintf(want, sizeof want, "line %d here", next);
        if (len == (int)strlen(want) && strncmp(line, want, (size_t)len) == 0)
            next++;
        else {
            int ok = len % 2 == 0 && len >= 12 && len <= 32 &&
                     strncmp(line, line + len / 2, (size_t)len / 2) == 0;
            for (int i = 0; i < len; i++) ok &= line[i] >= 'a' && line[i] <= 'z';
            repeated += ok;
            bad += !ok;
        }
        line = end + 1;
    }
    CHECK_MSG(next == 60 && bad == 0, "%d of 60 lines of the text in order, %d lines neither", next,
              bad);
    CHECK_MSG(repeated >= 35 && repeated <= 95, "%d repeated lines beside 60 (about 60 expected)",
              repeated);
    free(mix), free(again), free(other);
}

const TestCase tests_induction[] = {
    {"induction_report_reads_the_logs", test_induction_report_reads_the_logs},
    {"induction_probe_is_a_sequence_twice", test_induction_probe_is_a_sequence_twice},
    {"induction_scores_of_known_heads", test_induction_scores_of_known_heads},
    {"induction_measure_on_a_model", test_induction_measure_on_a_model},
    {"induction_mix_text", test_induction_mix_text},
    {NULL, NULL},
};
