// tests/test_explain.c: the measures of teach/explain.c against their definitions: leave-one-out
// against two forward passes of the definition, gradient x input against central finite
// differences, knockout of a position whose weight is exactly 0, a hand-built model whose one head
// copies position j (every measure must name j), the corpus lines' known sources, the
// agreement's even draw over ties, the uniform baseline against a model whose weights are
// uniform, the page's marks against the numbers, and the --explain command line (its JSON
// against its table, its page, its refusals).
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "model.h"
#include "tests/set_attention.h"  // set_attention: another attention on the same weights
#include "teach/explain.h"
#include "teach/explain_page.h"
#include "test.h"
#include "test_numeric.h"

// A small random model (L layers, NH heads) with a batch capacity of 8, on the definition.
static void random_model(GPT *m, int V, int T, int L, int NH, int C, uint64_t seed) {
    ModelDims d = {V, T, L, NH, C, QK_NORM_NONE};
    AttnSetup attn = attention_causal((real)(1.0 / sqrt((double)C / NH)));
    attn.impl = &attention_definition;
    gpt_build(m, &d, attn, 8, T);
    Rng rng;
    rng_seed(&rng, seed);
    gpt_init(m, INIT_GPT2, &rng);
    // larger than the init's 0.02 so that the positions matter to each other
    for (size_t i = 0; i < m->n_params; i++) m->params[i] *= 8;
}

static void random_tokens(int *tok, int n, int V, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < n; i++) tok[i] = (int)(rng_uniform(&rng) * V) % V;
}

// log p(tok[t+1] | tok[0..t]) by one forward pass of the definition over tok[0..n]
static double logp_of(GPT *m, const int *tok, int n, int t) {
    gpt_forward(m, tok, tok + 1, 1, n);
    return -(double)m->acts.losses[t];
}

static void test_loo_brute_force(void) {
    GPT m;
    int V = 7, n = 9;
    random_model(&m, V, 12, 2, 2, 16, 11);
    int tok[10], alt[10];
    random_tokens(tok, n + 1, V, 3);
    int baseline = 2;
    Explain e;
    explain_compute(&m, tok, n, baseline, NULL, 0, &e);
    double worst = 0;
    for (int t = 0; t < n; t++)
        for (int j = 0; j <= t; j++) {
            memcpy(alt, tok, sizeof tok);
            alt[j] = baseline;
            double want = logp_of(&m, tok, n, t) - logp_of(&m, alt, n, t);
            double d = fabs(e.loo[t * n + j] - want);
            worst = d > worst ? d : worst;
            if (tok[j] == baseline) CHECK(e.loo[t * n + j] == 0);
        }
    CHECK_MSG(worst <= (IS_F64 ? 1e-12 : 2e-5),
              "leave-one-out differs from two forward passes by %g", worst);
    // nothing after t moves the prediction at t (causality): the matrix is 0 above the diagonal
    for (int t = 0; t < n; t++)
        for (int j = t + 1; j < n; j++) CHECK(e.loo[t * n + j] == 0);
    explain_free(&e);
    gpt_free(&m);
}

// gradient x input at (t, j) is the derivative of log p along x_j itself, d/de log p(x_j (1 + e))
// at e = 0: wpe[j] (which only position j reads) shifted by e x_j, by central differences.
static void test_gxi_finite_differences(void) {
    GPT m;
    int V = 6, n = 7, C = 12;
    random_model(&m, V, 8, 2, 2, C, 5);
    int tok[8];
    random_tokens(tok, n + 1, V, 9);
    Explain e;
    explain_compute(&m, tok, n, 0, NULL, 0, &e);
    double h = IS_F64 ? 1e-6 : 1e-2, worst = 0, scale = 0;
    real *x = malloc(C * sizeof(real)), *keep = malloc(C * sizeof(real));
    for (int t = 0; t < n; t++)
        for (int j = 0; j <= t; j++) {
            real *wpe = m.p.wpe + (size_t)j * C;
            for (int c = 0; c < C; c++)
                keep[c] = wpe[c], x[c] = m.p.wte[(size_t)tok[j] * C + c] + wpe[c];
            for (int c = 0; c < C; c++) wpe[c] = keep[c] + (real)h * x[c];
            double up = logp_of(&m, tok, n, t);
            for (int c = 0; c < C; c++) wpe[c] = keep[c] - (real)h * x[c];
            double down = logp_of(&m, tok, n, t);
            for (int c = 0; c < C; c++) wpe[c] = keep[c];
            double fd = (up - down) / (2 * h), d = fabs(fd - e.gxi[t * n + j]);
            worst = d > worst ? d : worst;
            scale = fabs(fd) > scale ? fabs(fd) : scale;
        }
    CHECK_MSG(scale > 1e-3, "the test model's gradients are too small to test anything (%g)",
              scale);
    CHECK_MSG(worst <= (IS_F64 ? 1e-6 : 3e-2) * (1 + scale),
              "gradient x input differs from central differences by %g "
              "(largest %g)",
              worst, scale);
    free(x);
    free(keep);
    explain_free(&e);
    gpt_free(&m);
}

// One layer, one head that puts all its weight on position J (scores 1000 apart, so every other
// weight is exactly 0 after exp) and copies J's token into the residual; the MLP is zero. Token
// and position embeddings are one-hot in separate channels, of size A, so every input has the
// same LayerNorm mean and deviation; channel Z is always 0 (it gives a constant query). A is far
// below LayerNorm's sqrt(eps), so LayerNorm is nearly linear there: a LayerNorm of inputs well
// above it is scale-invariant, and gradient x input through it is 0, which would leave position
// J nothing to be named by. The final LayerNorm's gain 3/A turns the tied head's A back into
// logits of order 1.
enum { CV = 5, CT = 8, CZ = CV + CT, CC = CV + CT + 1, CJ = 2 };
static void copy_head_model(GPT *m) {
    const double A = 1e-4;
    ModelDims d = {CV, CT, 1, 1, CC, QK_NORM_NONE};
    gpt_build(m, &d, attention_causal(1), 8, CT);
    memset(m->params, 0, m->n_params * sizeof(real));
    for (int v = 0; v < CV; v++) m->p.wte[v * CC + v] = (real)A;
    for (int p = 0; p < CT; p++) m->p.wpe[p * CC + CV + p] = (real)A;
    LayerParams *P = &m->p.layers[0];
    for (int c = 0; c < CC; c++) P->ln1_w[c] = P->ln2_w[c] = 1, m->p.lnf_w[c] = (real)(3 / A);
    double mu = 2 * A / CC, var = 2 * A * A / CC - mu * mu, rstd = 1 / sqrt(var + 1e-5);
    // q = -ln(x)_Z = mu rstd; k_u = beta ln(x_u)_{position J}; S_J - S_u = q beta A rstd = 1000
    P->wq[CZ * CC + 0] = -1;
    P->wk[(CV + CJ) * CC + 0] = (real)(1000 / (mu * rstd * A * rstd));
    for (int v = 0; v < CV; v++) P->wv[v * CC + v] = 1, P->wo[v * CC + v] = 6;
    set_attention(m, (AttnSetup){m->attn, &attention_definition, MODEL_ENGINE});
}

static void test_copy_head_names_j(void) {
    GPT m;
    copy_head_model(&m);
    // the token at J is 3, and every later position predicts a 3
    int tok[CT + 1] = {1, 4, 3, 3, 3, 3, 3, 3, 3};
    int n = CT;
    Explain e;
    explain_compute(&m, tok, n, 0, NULL, 1, &e);
    const char *names[] = {"attn_l0", "attn_l0h0", "rollout",    "norm_l0",
                           "loo",     "knock_l0",  "knock_l0h0", "gxi"};
    for (int t = CJ + 1; t < n; t++) {
        for (int j = 0; j <= t; j++)
            if (j != CJ)
                CHECK_MSG(e.attn[t * n + j] == 0, "P[%d][%d] = %g, expected exactly 0", t, j,
                          e.attn[t * n + j]);
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            const double *r = explain_row(&e, names[k], t);
            CHECK(r != NULL);
            if (!r) continue;
            // rollout gives J and t itself 0.5 each ((P + I) / 2 with P one-hot): the first of
            // equals is J
            int j = explain_argmax(r, t + 1, 1);
            CHECK_MSG(j == CJ, "row %d: %s names position %d, not %d", t, names[k], j, CJ);
        }
        CHECK(exp(e.logp[t]) > 0.5);
    }
    CHECK_MSG(explain_learned(&e, NULL), "the copy model has not learned its copy prompt");
    explain_free(&e);
    gpt_free(&m);
}

// The learned test: the mean p(next) of the last EXPLAIN_LEARNED_ROWS rows against
// EXPLAIN_LEARNED_P, the earlier rows not counted, and the one line saying so only below it.
static void test_learned_line(void) {
    double logp[5];
    Explain e;
    memset(&e, 0, sizeof e);
    e.n = 5;
    e.logp = logp;
    char line[256];
    double mean;
    for (int i = 0; i < 5; i++) logp[i] = log(0.01);  // the first rows never count
    for (int i = 5 - EXPLAIN_LEARNED_ROWS; i < 5; i++) logp[i] = log(EXPLAIN_LEARNED_P + 0.01);
    CHECK(explain_learned(&e, &mean) && fabs(mean - (EXPLAIN_LEARNED_P + 0.01)) < 1e-12);
    explain_learned_line(&e, line, sizeof line);
    CHECK_MSG(line[0] == 0, "a learned prompt got the line '%s'", line);
    logp[4] = log(0.01);
    CHECK(!explain_learned(&e, &mean));
    explain_learned_line(&e, line, sizeof line);
    CHECK_MSG(strstr(line, EXPLAIN_NOT_LEARNED) == line && strstr(line, "last 3 characters"),
              "the line: '%s'", line);
    e.n = 1;  // a shorter prompt: its rows alone
    logp[0] = log(0.9);
    CHECK(explain_learned(&e, &mean) && fabs(mean - 0.9) < 1e-12);
}

// Knocking out a key whose weight is exactly 0 leaves the prediction bit for bit as it was.
static void test_knockout_zero_weight(void) {
    GPT m;
    copy_head_model(&m);
    int tok[CT + 1] = {2, 0, 4, 1, 4, 0, 4, 2, 4};
    int n = CT, zeros = 0;
    Explain e;
    explain_compute(&m, tok, n, 1, NULL, 1, &e);
    for (int t = 0; t < n; t++)
        for (int j = 0; j <= t; j++)
            if (e.attn[t * n + j] == 0) {
                zeros++;
                CHECK_MSG(e.knock[t * n + j] == 0 && e.knock_head[t * n + j] == 0,
                          "knocking out P[%d][%d] = 0 moved log p by %g", t, j, e.knock[t * n + j]);
            }
    CHECK(zeros >= 10);
    CHECK(e.knock[(CT - 1) * n + CJ] > 1);  // and the one key it copies matters
    explain_free(&e);
    gpt_free(&m);
}

// The corpus lines' sources (data/README.md's formats).
static void test_line_sources(void) {
    int src[64];
    const char *copy = "copy: abc | abc";
    CHECK(explain_line_sources(copy, (int)strlen(copy), src) == KIND_COPY);
    CHECK(src[12] == 6 && src[13] == 7 && src[14] == 8 && src[11] == -1 && src[6] == -1);
    const char *rev = "rev: abcd > dcba";
    CHECK(explain_line_sources(rev, (int)strlen(rev), src) == KIND_REV);
    CHECK(src[12] == 8 && src[15] == 5);
    const char *find = "find: hpefyklb q=f -> 3";
    CHECK(explain_line_sources(find, (int)strlen(find), src) == KIND_FIND);
    CHECK(src[22] == 9 && src[21] == -1);
    const char *kv = "kv: l=9 n=1 f=9 r=7 o=9 ; r? 7";
    CHECK(explain_line_sources(kv, (int)strlen(kv), src) == KIND_KV);
    CHECK(src[29] == 18);
    const char *br = "[ { c h } ( d ) ]";
    CHECK(explain_line_sources(br, (int)strlen(br), src) == KIND_BRACKETS);
    CHECK(src[8] == 2 && src[14] == 10 && src[16] == 0 && src[4] == -1);
    const char *bad[] = {"the old dog sleeps.",     "copy: abc | abd",    "rev: abc > abc",
                         "find: hpefyklb q=f -> 4", "kv: l=9 n=1 ; n? 9", "[ { c h ) ]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(explain_line_sources(bad[i], (int)strlen(bad[i]), src) < 0, "'%s' parsed",
                  bad[i]);
}

static void test_kendall_tau(void) {
    double a[] = {1, 2, 3, 4}, b[] = {10, 20, 30, 40}, c[] = {4, 3, 2, 1}, k[] = {1, 1, 1, 1};
    CHECK_NEAR(kendall_tau_b(a, b, 4), 1, 1e-12);
    CHECK_NEAR(kendall_tau_b(a, c, 4), -1, 1e-12);
    CHECK(isnan(kendall_tau_b(a, k, 4)));
    double x[] = {1, 2, 2, 3}, y[] = {1, 3, 2, 4};  // one tie in x: (5 - 0) / sqrt(5 * 6)
    CHECK_NEAR(kendall_tau_b(x, y, 4), 5 / sqrt(30.0), 1e-12);
}

// Ties are an even draw: top-1 |A n E| / (|A| |E|), misattribution the share of A under 10%;
// uniform weights give 1/n against one maximum, and tau-b is undefined for them (left out).
static void test_agreement_ties(void) {
    double u[4] = {0.25, 0.25, 0.25, 0.25}, e1[4] = {0, 0.05, -1, 0.2};
    Agreement g = {0};
    agreement_add(&g, u, e1, 4);
    CHECK_NEAR(g.top1, 0.25, 1e-15);
    CHECK_NEAR(g.mis, 0.5, 1e-15);  // |e| of 0 and 0.05 are under 0.1
    CHECK(g.rows == 1 && g.mis_rows == 1 && g.tau_rows == 0);
    double two[4] = {0.4, 0.4, 0.1, 0.1}, e2[4] = {0, 1, 0, 0};
    Agreement h = {0};
    agreement_add(&h, two, e2, 4);
    CHECK_NEAR(h.top1, 0.5, 1e-15);
    CHECK_NEAR(h.mis, 0.5, 1e-15);
    CHECK(h.tau_rows == 1);
    double one[3] = {0.1, 0.7, 0.2}, e3[3] = {0, -3, 1}, e4[3] = {1, 1, 0};
    Agreement k = {0};
    agreement_add(&k, one, e3, 3);
    CHECK(k.top1 == 1 && k.mis == 0);
    agreement_add(&k, one, e4, 3);  // the effect's two maxima, one of them a's: 1/2
    CHECK_NEAR(k.top1, 1.5, 1e-15);
    double zero[3] = {0, 0, 0};
    Agreement z = {0};
    agreement_add(&z, one, zero,
                  3);  // no effect anywhere: every position ties, no misattribution row
    CHECK_NEAR(z.top1, 1.0 / 3, 1e-15);
    CHECK(z.mis_rows == 0);
}

// With wq = wk = 0 every score is 0 and every causal row of P is already uniform, so the uniform
// baseline's measures equal the model's own: the weights, their rollout, the norm-weighted
// attention of every layer; and the uniform rollout of one row sums to 1.
static void test_uniform_baseline_is_the_measures_of_uniform_weights(void) {
    GPT m;
    int V = 7, n = 9, L = 3;
    random_model(&m, V, 12, L, 2, 16, 21);
    for (int l = 0; l < L; l++) {
        LayerParams *P = &m.p.layers[l];
        memset(P->wq, 0, (size_t)16 * 16 * sizeof(real));
        memset(P->wk, 0, (size_t)16 * 16 * sizeof(real));
    }
    int tok[10];
    random_tokens(tok, n + 1, V, 4);
    Explain e;
    explain_compute(&m, tok, n, 0, NULL, 0, &e);
    double worst = 0, tol = IS_F64 ? 1e-12 : 1e-5;
    char name[EXPLAIN_NAME], uname[EXPLAIN_NAME];
    for (int t = 0; t < n; t++) {
        double sum = 0;
        for (int j = 0; j <= t; j++) sum += explain_row(&e, "uniform_rollout", t)[j];
        CHECK_NEAR(sum, 1, 1e-12);
        for (int j = 0; j <= t; j++) {
            CHECK(explain_row(&e, "uniform", t)[j] == 1.0 / (t + 1));
            double d =
                fabs(explain_row(&e, "uniform_rollout", t)[j] - explain_row(&e, "rollout", t)[j]);
            worst = d > worst ? d : worst;
            for (int l = 0; l < L; l++) {
                snprintf(name, sizeof name, "attn_l%d", l);
                d = fabs(explain_row(&e, name, t)[j] - explain_row(&e, "uniform", t)[j]);
                worst = d > worst ? d : worst;
                snprintf(name, sizeof name, "norm_l%d", l);
                snprintf(uname, sizeof uname, "uniform_norm_l%d", l);
                const double *a = explain_row(&e, name, t), *b = explain_row(&e, uname, t);
                CHECK(a && b);
                d = fabs(a[j] - b[j]) / (1 + fabs(a[j]));
                worst = d > worst ? d : worst;
            }
        }
    }
    CHECK_MSG(worst <= tol,
              "the uniform baseline differs from the measures of uniform weights by %g", worst);
    // the rollout of uniform weights is not uniform: t keeps the residual's share, and an earlier
    // position is reached by more paths through the layers, so the shares fall with j before t
    const double *r = explain_row(&e, "uniform_rollout", n - 1);
    for (int j = 1; j < n - 1; j++) CHECK(r[j] < r[j - 1]);
    CHECK(r[n - 1] > r[1]);
    explain_free(&e);
    gpt_free(&m);
}

// ---- the command line ----
static char g_dir[64];
static char *g_out;

static int sh(const char *fmt, const char *a, const char *b) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *slurp_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    return buf;
}

// The JSON holds the numbers the table prints: for every row, the top positions and their values.
#include <cjson/cJSON.h>
static int argmax_json(const cJSON *row, int use_abs, double *val) {
    int best = 0, i = 0;
    double bv = 0;
    for (const cJSON *x = row->child; x; x = x->next, i++) {
        double v = x->valuedouble, a = use_abs ? fabs(v) : v;
        if (i == 0 || a > (use_abs ? fabs(bv) : bv)) best = i, bv = v;
    }
    *val = bv;
    return best;
}

static void test_cli_explain_json_matches_terminal(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tgpt_explain_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return;
    }
    char ck[128], path[256];
    snprintf(ck, sizeof ck, "%s/run/checkpoint.bin", g_dir);
    CHECK(sh("./train configs/default.json --model.n_layer=2 --model.n_head=2 --model.n_embd=16 "
             "--model.block_size=16 "
             "--data.val_fraction=0.02 --train.batch_size=4 --train.max_steps=30 "
             "--log.eval_interval=30 "
             "--log.eval_steps=2 --sample.tokens=0 --train.out_dir=%s/run%s > /dev/null 2>&1",
             g_dir, "") == 0);
    const char *prompt = "kv: a=1 b=2 ; a";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "./sample %s --explain --prompt '%s'", ck, prompt);
    snprintf(path, sizeof path, "%s/table.txt", g_dir);
    CHECK(sh("%s > %s", cmd, path) == 0);
    char *table = slurp_file(path);
    snprintf(path, sizeof path, "%s/out.json", g_dir);
    CHECK(sh("%s --json > %s", cmd, path) == 0);
    char *json = slurp_file(path);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    CHECK_MSG(root != NULL, "--json is not JSON");
    if (!root || !table) {
        free(table);
        free(json);
        return;
    }
    CHECK(!strcmp(cJSON_GetObjectItem(root, "loo_baseline_char")->valuestring, " "));
    // a model of 30 steps has not learned the prompt: the table says so first, the JSON too
    const cJSON *learned = cJSON_GetObjectItem(root, "learned");
    CHECK_MSG(cJSON_IsFalse(learned) &&
                  strncmp(table, EXPLAIN_NOT_LEARNED, strlen(EXPLAIN_NOT_LEARNED)) == 0,
              "the 30-step model's table does not open with the line: '%.120s'", table);
    const cJSON *pos = cJSON_GetObjectItem(root, "positions");
    int n = cJSON_GetArraySize(pos), rows = 0;
    CHECK(n == (int)strlen(prompt) - 1);
    // the table's rows, in order: "t char next p(next) pred | cells..."
    char *line = strstr(table, "\n  t char ");
    line = line ? strchr(line + 1, '\n') : NULL;
    for (int t = 0; t < n && line; t++) {
        line++;
        const cJSON *p = cJSON_GetArrayItem(pos, t);
        const cJSON *att = cJSON_GetObjectItem(p, "attention"),
                    *eff = cJSON_GetObjectItem(p, "effects");
        double pn = cJSON_GetObjectItem(p, "p")->valuedouble;
        int tt;
        char rest[512];
        CHECK(sscanf(line, "%d", &tt) == 1 && tt == t);
        char *bar = strchr(line, '|');
        CHECK(bar != NULL);
        if (!bar) break;
        // p(next) is the 4th column: "t 'char' 'next' p"
        char pbuf[32];
        snprintf(pbuf, sizeof pbuf, " %.4f ", pn);
        CHECK_MSG(strstr(line, pbuf) && strstr(line, pbuf) < bar,
                  "row %d: p(next) %s not in the table", t, pbuf);
        // the attention cells: layer 1 mean, rollout, norm layer 1; the effects: leave-one-out,
        // ..., gxi
        const cJSON *cells[4] = {cJSON_GetArrayItem(cJSON_GetObjectItem(att, "mean"), 1),
                                 cJSON_GetObjectItem(att, "rollout"),
                                 cJSON_GetArrayItem(cJSON_GetObjectItem(att, "norm"), 1),
                                 cJSON_GetObjectItem(eff, "loo")};
        snprintf(rest, sizeof rest, "%s", bar);
        char *c = rest;
        for (int k = 0; k < 4; k++) {
            double v;
            int j = argmax_json(cells[k], k == 3, &v), jt = -1;
            while (*c == ' ' || *c == '|') c++;
            CHECK_MSG(sscanf(c, "%d", &jt) == 1 && jt == j,
                      "row %d cell %d: the table names %d, the JSON %d", t, k, jt, j);
            char vb[32];
            snprintf(vb, sizeof vb, k == 3 ? "%+.3f" : "%.3f", v);
            char *sp = strchr(c, '\'');
            sp = sp ? strchr(sp + 1, '\'') : NULL;
            CHECK_MSG(sp && !strncmp(sp + 2, vb, strlen(vb)),
                      "row %d cell %d: the value %s is not the table's", t, k, vb);
            c = sp ? strchr(sp + 2, ' ') : c + strlen(c);
            if (!c) break;
        }
        rows++;
        line = strchr(line, '\n');
    }
    CHECK(rows == n);
    // the agreement the table prints is the JSON's: attn_l0 against loo
    const cJSON *ag = cJSON_GetObjectItem(root, "agreement");
    for (const cJSON *a = ag->child; a; a = a->next)
        if (!strcmp(cJSON_GetObjectItem(a, "measure")->valuestring, "attn_l0") &&
            !strcmp(cJSON_GetObjectItem(a, "effect")->valuestring, "loo")) {
            char want[64];
            snprintf(want, sizeof want, "%-16s %.2f/%+.2f/%.2f", "attn_l0",
                     cJSON_GetObjectItem(a, "top1")->valuedouble,
                     cJSON_GetObjectItem(a, "tau")->valuedouble,
                     cJSON_GetObjectItem(a, "misattribution")->valuedouble);
            CHECK_MSG(strstr(table, want) != NULL, "the table has no '%s'", want);
        }
    cJSON_Delete(root);
    free(table);
    free(json);
    // the page: one step per position, each row keyed like the JSON, the table's digits
    snprintf(path, sizeof path, "%s/page.html", g_dir);
    CHECK(sh("%s --html %s > /dev/null 2>&1", cmd, path) == 0);
    char *page = slurp_file(path);
    char last_pos[64], last_step[32], past[32];
    snprintf(last_pos, sizeof last_pos, "data-key=\"positions[%d]\"", n - 1);
    snprintf(last_step, sizeof last_step, "id=\"step-%d\"", n);
    snprintf(past, sizeof past, "id=\"step-%d\"", n + 1);
    CHECK(page && strstr(page, last_pos) && strstr(page, "data-key=\"effects.loo\"") &&
          strstr(page, last_step) && !strstr(page, past));
    free(page);
    // refusals: one line, exit 2
    const char *bad[][2] = {
        {"--explain --prompt ''", "at least 2"},
        {"--explain --prompt 'copy: abcdefghij | abcdefghij'", "block_size + 1"},
        {"--explain --prompt 'ab~c'", "vocabulary"},
        {"--explain --prompt a", "at least 2"},
        {"--json --prompt ab", "--explain"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(path, sizeof path, "%s/err.txt", g_dir);
        char full[600];
        snprintf(full, sizeof full, "./sample %s %s", ck, bad[i][0]);
        int rc = sh("%s > /dev/null 2> %s", full, path);
        char *err = slurp_file(path);
        int lines = 0;
        for (char *q = err; q && *q; q++) lines += *q == '\n';
        CHECK_MSG(rc == 2 && lines == 1 && err && strstr(err, bad[i][1]),
                  "'%s': exit %d, stderr: %s", full, rc, err ? err : "");
        free(err);
    }
    // a model that sees the future is refused, saying why
    CHECK(sh("./train configs/default.json --model.n_layer=1 --model.n_head=2 --model.n_embd=16 "
             "--model.block_size=16 "
             "--model.attn_mask=none --data.val_fraction=0.02 --train.batch_size=4 "
             "--train.max_steps=2 "
             "--log.eval_interval=2 --log.eval_steps=1 --sample.tokens=0 --train.out_dir=%s/leak%s "
             "> /dev/null 2>&1",
             g_dir, "") == 0);
    CHECK(sh("./sample %s/leak/checkpoint.bin --explain --prompt 'ab' 2> %s/err.txt > /dev/null",
             g_dir, g_dir) == 2);
    snprintf(path, sizeof path, "%s/err.txt", g_dir);
    char *err = slurp_file(path);
    CHECK_MSG(err && strstr(err, "sees the future") && strstr(err, "attn_mask=none"), "%s",
              err ? err : "");
    free(err);
    (void)g_out;
    sh("rm -rf '%s'%s", g_dir, "");
}

// ./sample MODEL ARGS with stdout and stderr in *out and *err (the caller frees them); the exit
// code.
static int sample_run(const char *model, const char *args, char **out, char **err) {
    char cmd[4096], po[128], pe[128];
    snprintf(po, sizeof po, "%s/out.txt", g_dir);
    snprintf(pe, sizeof pe, "%s/err.txt", g_dir);
    snprintf(cmd, sizeof cmd, "timeout 60 ./sample %s %s > %s 2> %s < /dev/null", model, args, po,
             pe);
    int rc = sh("%s%s", cmd, "");
    *out = slurp_file(po);
    *err = slurp_file(pe);
    return rc;
}

static int line_count(const char *s) {
    int n = 0;
    for (; s && *s; s++) n += *s == '\n';
    return n;
}

// --explain --lines reads a regular file only, and only whole lines of it; each switch is given
// at most once; --per-kind belongs to --lines.
static void test_cli_explain_lines_rules(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tgpt_explain_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return;
    }
    char ck[128], args[512], path[256];
    snprintf(ck, sizeof ck, "%s/run/checkpoint.bin", g_dir);
    CHECK(sh("./train configs/default.json --model.n_layer=1 --model.n_head=2 --model.n_embd=16 "
             "--model.block_size=16 "
             "--data.val_fraction=0.02 --train.batch_size=4 --train.max_steps=2 "
             "--log.eval_interval=2 "
             "--log.eval_steps=1 --sample.tokens=0 --train.out_dir=%s/run%s > /dev/null 2>&1",
             g_dir, "") == 0);
    char *out, *err;
    // a directory, a FIFO, /dev/zero: refused at once with one line (timeout 60 ends a hang: 124)
    snprintf(path, sizeof path, "%s/fifo", g_dir);
    CHECK(sh("mkfifo %s%s", path, "") == 0);
    const char *nonfiles[3][2] = {
        {g_dir, "directory"}, {path, "FIFO"}, {"/dev/zero", "character device"}};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "--explain --lines %s", nonfiles[i][0]);
        int rc = sample_run(ck, args, &out, &err);
        CHECK_MSG(rc == 1 && line_count(err) == 1 && strstr(err, nonfiles[i][0]) &&
                      strstr(err, nonfiles[i][1]) && !strstr(out, "accuracy"),
                  "--lines %s: exit %d, stderr: %s", nonfiles[i][0], rc, err ? err : "");
        free(out), free(err);
    }
    // a line of 4095 + 13 bytes whose end would read as "copy: ab | ab" were it cut at 4095: not
    // measured (a note says so); the whole line "copy: ab | ab" is (2 answer characters)
    snprintf(path, sizeof path, "%s/long.txt", g_dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 4095; i++) fputc('x', f);
    fputs("copy: ab | ab\ncopy: ab | ab\n", f);
    fclose(f);
    snprintf(args, sizeof args, "--explain --lines %s", path);
    int rc = sample_run(ck, args, &out, &err);
    CHECK_MSG(rc == 0 && out && strstr(out, "copy predictions: 2\n") &&
                  strstr(err, "1 line(s) over 4095 bytes"),
              "exit %d: %.300s / %s", rc, out ? out : "", err ? err : "");
    free(out), free(err);
    // a file with no line to measure: nothing to report, said in one line (no "accuracy: nan")
    snprintf(path, sizeof path, "%s/none.txt", g_dir);
    f = fopen(path, "w");
    fputs("hello\n", f);
    fclose(f);
    snprintf(args, sizeof args, "--explain --lines %s", path);
    rc = sample_run(ck, args, &out, &err);
    CHECK_MSG(rc == 1 && line_count(err) == 1 && strstr(err, "nothing to measure") &&
                  !strstr(out, "nan"),
              "exit %d: %.300s / %s", rc, out ? out : "", err ? err : "");
    free(out), free(err);
    // each switch once; --per-kind only with --explain --lines
    const char *bad[][2] = {
        {"--explain --prompt ab --json --json", "--json is given twice"},
        {"--explain --explain --prompt ab", "--explain is given twice"},
        {"--per-kind 5", "--per-kind belongs to --explain --lines"},
        {"--explain --prompt ab --per-kind 5", "--per-kind belongs to --explain --lines"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = sample_run(ck, bad[i][0], &out, &err);
        CHECK_MSG(rc == 2 && line_count(err) == 1 && strstr(err, bad[i][1]),
                  "'%s': exit %d, stderr: %s", bad[i][0], rc, err ? err : "");
        free(out), free(err);
    }
    sh("rm -rf '%s'%s", g_dir, "");
}

// One row of the page's step (the section from `step` to `end`): the cells of <tr ...
// data-key=KEY>, their marks (k: the row's largest |value|, w: leave-one-out disagrees, g: knockout
// agrees) and the alpha of their shading. Returns the number of cells, -1 when the row is not
// there.
static int page_row(const char *step, const char *end, const char *key, char marks[][4],
                    double *alpha, int max) {
    char want[96];
    snprintf(want, sizeof want, " data-key=\"%s\">", key);
    const char *r = strstr(step, want);
    if (!r || r > end) return -1;
    const char *row_end = strstr(r, "</tr>");
    int k = 0;
    for (const char *c = strstr(r, "<td class=\"v"); c && c < row_end && k < max;
         c = strstr(c + 1, "<td class=\"v")) {
        const char *q = strchr(c + 12, '"');
        int m = 0;
        for (const char *x = c + 12; x < q && m < 3; x++)
            if (*x != ' ') marks[k][m++] = *x;
        marks[k][m] = 0;
        const char *a = strstr(c, "rgba(");
        int r0, g0, b0;
        alpha[k] =
            a && sscanf(a, "rgba(%d,%d,%d,%lf)", &r0, &g0, &b0, &alpha[k]) == 4 ? alpha[k] : -1;
        k++;
    }
    return k;
}

// The page's marks are the numbers' (a random model of 2 layers, 2 heads; and the copy head):
// in every step each row's largest |value| is boxed; an attention row's top position is marked
// "leave-one-out disagrees" exactly where it is not leave-one-out's top position; a knockout
// row's top is outlined "knockout agrees" exactly where it is the layer's most attended key;
// gradient x input is shaded on its own row's scale (its largest |value| at full shade) with the
// note on why it is small; the not-learned line is there exactly when the model has not learned
// the prompt; the takeaway names the measure with the best top-1 against leave-one-out.
static void check_page_marks(GPT *m, const int *tok, int n, const char *label) {
    Explain e;
    explain_compute(m, tok, n, 0, NULL, 0, &e);
    uint32_t cps[16];
    for (int i = 0; i < m->dims.vocab_size && i < 16; i++) cps[i] = 'a' + (uint32_t)i;
    Vocab v = {m->dims.vocab_size, cps};
    FILE *f = tmpfile();
    CHECK(f && explain_page_fwrite(f, &e, &v, "test"));
    long size = ftell(f);
    char *page = malloc((size_t)size + 1);
    rewind(f);
    page[fread(page, 1, (size_t)size, f)] = 0;
    fclose(f);
    int L = e.L, boxed = 0, wrong = 0, agree = 0, want_wrong = 0, want_agree = 0, bad = 0;
    for (int t = 0; t < n; t++) {
        char id[32], next_id[32];
        snprintf(id, sizeof id, "id=\"step-%d\"", t + 1);
        snprintf(next_id, sizeof next_id, "id=\"step-%d\"", t + 2);
        const char *step = strstr(page, id), *end = step ? strstr(step, next_id) : NULL;
        if (!end) end = step ? strstr(step, "id=\"agreement\"") : NULL;
        CHECK_MSG(step && end, "%s: no step %d", label, t + 1);
        if (!step || !end) break;
        int k = t + 1, jl = explain_argmax(e.loo + (size_t)t * n, k, 1);
        char marks[64][4], key[64];
        double alpha[64];
        // the attention rows, then the effects
        for (int r = 0; r < 2 * L + 1 + L + 2; r++) {
            const double *x;
            int attention = r < 2 * L + 1, ja = -1;
            if (r < L)
                snprintf(key, sizeof key, "attention.mean[%d]", r),
                    x = e.attn_mean + ((size_t)r * n + t) * n;
            else if (r == L)
                snprintf(key, sizeof key, "attention.rollout"), x = e.rollout + (size_t)t * n;
            else if (r < 2 * L + 1)
                snprintf(key, sizeof key, "attention.norm[%d]", r - L - 1),
                    x = e.norm + ((size_t)(r - L - 1) * n + t) * n;
            else if (r < 3 * L + 1) {
                int l = r - 2 * L - 1;
                snprintf(key, sizeof key, "effects.knockout[%d]", l);
                x = e.knock + ((size_t)l * n + t) * n;
                ja = explain_argmax(e.attn_mean + ((size_t)l * n + t) * n, k, 0);
            } else if (r == 3 * L + 1)
                snprintf(key, sizeof key, "effects.loo"), x = e.loo + (size_t)t * n;
            else
                snprintf(key, sizeof key, "effects.grad_x_input"), x = e.gxi + (size_t)t * n;
            int got = page_row(step, end, key, marks, alpha, 64);
            if (got != k) {
                bad++;
                CHECK_MSG(0, "%s step %d: row %s has %d cells, expected %d", label, t + 1, key, got,
                          k);
                continue;
            }
            int top = explain_argmax(x, k, !attention),
                ta = attention ? explain_argmax(x, k, 0) : -1;
            int jk = explain_argmax(x, k, 1);
            for (int j = 0; j < k; j++) {
                int is_k = strchr(marks[j], 'k') != NULL, is_w = strchr(marks[j], 'w') != NULL;
                int is_g = strchr(marks[j], 'g') != NULL;
                int want_w = attention && j == ta && ta != jl,
                    want_g = ja >= 0 && j == ja && ja == jk;
                boxed += is_k, wrong += is_w, agree += is_g, want_wrong += want_w,
                    want_agree += want_g;
                if (is_k != (j == top) || is_w != want_w || is_g != want_g) {
                    bad++;
                    CHECK_MSG(0, "%s step %d, %s, position %d: marks '%s', expected%s%s%s", label,
                              t + 1, key, j, marks[j], j == top ? " k" : "", want_w ? " w" : "",
                              want_g ? " g" : "");
                }
            }
            if (r ==
                3 * L + 2)  // gradient x input: its own row's largest |value| at the full shade
                CHECK_MSG(fabs(alpha[jk] - 0.6) < 1e-9 || x[jk] == 0,
                          "%s step %d: gradient x input's largest |value| "
                          "shaded %.3f, not 0.600 (its own scale)",
                          label, t + 1, alpha[jk]);
        }
        const char *note = strstr(step, "class=\"note gxi-note\"");
        CHECK_MSG(note && note < end && strstr(note, "first-order estimate") &&
                      strstr(note, "own row"),
                  "%s step %d: no note on gradient x input's scale", label, t + 1);
    }
    CHECK_MSG(bad == 0 && boxed > 0 && wrong == want_wrong && agree == want_agree &&
                  want_wrong > 0 && want_agree > 0,
              "%s: %d cells boxed, %d marked disagreeing (expected %d), %d agreeing (expected %d; "
              "both must occur "
              "or the marks are not tested)",
              label, boxed, wrong, want_wrong, agree, want_agree);
    int learned = explain_learned(&e, NULL);
    CHECK_MSG((strstr(page, "id=\"not-learned\"") == NULL) == learned,
              "%s: the model has %slearned the prompt, and the page %s "
              "the not-learned line",
              label, learned ? "" : "not ", learned ? "has" : "lacks");
    // the takeaway: the best top-1 against leave-one-out over the non-uniform attention measures
    char an[64][EXPLAIN_NAME], best_name[EXPLAIN_NAME] = "";
    int na = explain_attention_names(e.L, e.NH, 0, an, 64);
    double best = -1;
    for (int a = 0; a < na; a++) {
        if (!strncmp(an[a], "uniform", 7)) continue;
        Agreement g;
        memset(&g, 0, sizeof g);
        for (int t = 1; t < n; t++)
            agreement_add(&g, explain_row(&e, an[a], t), explain_row(&e, "loo", t), t + 1);
        if (g.top1 / g.rows > best)
            best = g.top1 / g.rows, memcpy(best_name, an[a], sizeof best_name);
    }
    char want[128];
    snprintf(want, sizeof want, "class=\"takeaway\" data-best=\"%s\" data-best-top1=\"%.4f\"",
             best_name, best);
    CHECK_MSG(strstr(page, want) != NULL, "%s: the page has no '%s'", label, want);
    free(page);
    explain_free(&e);
}

static void test_page_marks(void) {
    GPT m;
    random_model(&m, 7, 12, 2, 2, 16, 5);
    int tok[12];
    random_tokens(tok, 12, 7, 9);
    check_page_marks(&m, tok, 11, "random model");
    gpt_free(&m);
    copy_head_model(&m);
    int copy[CT + 1] = {1, 4, 3, 3, 3, 3, 3, 3, 3};
    check_page_marks(&m, copy, CT, "copy head");
    gpt_free(&m);
}

const TestCase tests_explain[] = {
    {"explain_loo_brute_force", test_loo_brute_force},
    {"explain_gxi_finite_differences", test_gxi_finite_differences},
    {"explain_copy_head_names_j", test_copy_head_names_j},
    {"explain_knockout_zero_weight", test_knockout_zero_weight},
    {"explain_line_sources", test_line_sources},
    {"explain_learned_line", test_learned_line},
    {"explain_page_marks", test_page_marks},
    {"explain_kendall_tau", test_kendall_tau},
    {"explain_agreement_ties", test_agreement_ties},
    {"explain_uniform_baseline", test_uniform_baseline_is_the_measures_of_uniform_weights},
    {"cli_explain_json_matches_terminal", test_cli_explain_json_matches_terminal},
    {"cli_explain_lines_rules", test_cli_explain_lines_rules},
    {NULL, NULL},
};
