// lab.c: the command line of ./lab (float32) and ./lab64 (float64, -DREAL_DOUBLE): worked
// attention examples, the NumPy-seeded scaling exercise, the softmax Jacobian and the whole-model
// gradient check. The computations live in teach/lab_core.c (so the tests can call them) and in
// attention.c; this file parses arguments and prints.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attention.h"
#include "base/common.h"
#include "base/config.h"
#include "teach/lab_core.h"
#include "teach/lab_pages.h"
#include "model.h"

#define GRADCHECK_TOKEN_SEED  42  // the built-in random token sequence
#define GRADCHECK_SAMPLE_SEED 7   // which elements are sampled in big tensors
#define GRADCHECK_ALL_BELOW                                                                        \
    5000                        // models up to this many parameters are checked element by element
#define GRADCHECK_SAMPLES   8   // else this many elements per tensor
#define GRADCHECK_MAX_T     16  // default sequence length: min(block_size, this)
#define GRADCHECK_MAX_BYTES (1024.0 * 1024.0 * 1024.0)

// ---------------------------------------------------------------------------------------------
// usage

static void usage_main(FILE *f) {
    fprintf(
        f,
        "usage: lab COMMAND [options]        (lab COMMAND --help for the options of one command)\n"
        "\n"
        "Experiments on attention and its backward pass, computed with the definition "
        "(attention.c),\n"
        "which the engine (kernels/attention_engine.c) that trains by default is proven equal to, "
        "and\n"
        "the model (model.c). This build computes in %s; `lab64` is the float64 build.\n"
        "\n"
        "commands:\n"
        "  examples    the course's worked examples (T = 3, and one query over two keys): weights\n"
        "              and outputs, scaled by 1/sqrt(d_k) and unscaled, without and with the "
        "causal mask\n"
        "              (--html FILE: a page that steps through them, forward and backward)\n"
        "  exercise    Q, K, V from np.random.seed(S); np.random.randn(T, d_k): scores, both "
        "weight\n"
        "              matrices, per-row max weight and entropy, and which is more peaked "
        "(--json,\n"
        "              --html FILE)\n"
        "  softmax     p = softmax(s), its Jacobian diag(p) - p p^T, the vector-Jacobian product "
        "from\n"
        "              softmax_backward against finite differences, and how the gradient vanishes "
        "as\n"
        "              the scores grow\n"
        "  mistakes    the T = 3 example five ways: correct, without the scale, masking with 0 "
        "instead\n"
        "              of -inf, the softmax over the wrong axis, no mask: weights, row and column "
        "sums\n"
        "              (--json, --html FILE)\n"
        "  online-softmax  the softmax computed one block of keys at a time with a running maximum "
        "m\n"
        "              and sum l, rescaled by exp(m_old - m_new) when the maximum grows (a fused "
        "kernel's\n"
        "              forward), on the T = 3 example and the exercise's T = 5, against "
        "attention.c's\n"
        "              softmax (--json, --html FILE)\n"
        "  gradcheck   the whole model's backward against finite differences, one row per tensor;\n"
        "              exit code 0 when every tensor passes, 1 when one fails\n"
        "\n"
        "Bad arguments are reported on one line on stderr with exit code 2; each option is given "
        "at\n"
        "most once. --html - writes the page to standard output (and nothing else there).\n",
        REAL_NAME);
}

static void usage_examples(FILE *f) {
    fprintf(
        f,
        "usage: lab examples [--json] [--html FILE]\n"
        "\n"
        "Prints the course's worked examples as tables of weights and outputs:\n"
        "  1. T = 3, d_k = 2: Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], scaled by\n"
        "     1/sqrt(2) and unscaled, without the mask (softmax_forward row by row) and with the "
        "causal\n"
        "     mask (attention_forward with B = 1, NH = 1, C = d_k).\n"
        "  2. one query q = [1,0] over keys [1,0], [0,1] with values [10,0], [0,10], scaled and\n"
        "     unscaled (a lone query that is the last position: the causal mask hides nothing).\n"
        "  --html FILE  also write FILE, one self-contained HTML page (no network, no external "
        "file) that\n"
        "               steps through example 1 as the lesson computes it, without a mask (Scores, "
        "Scale,\n"
        "               Softmax, Mix), then with the causal mask (Mask, Softmax, Mix), its "
        "backward for\n"
        "               dO = [[1,-1],[1,-1],[1,-1]] (dV, dP, dS, dQ, dK), then example 2, scaled "
        "and, with a\n"
        "               switch, unscaled; Play steps through on a loop; FILE#step=N opens step N\n"
        "  --json       print the page's numbers instead of the tables: one JSON object with the "
        "groups\n"
        "               one_query and t3 (%%.17g; null for the mask's -inf)\n");
}

static void usage_mistakes(FILE *f) {
    fprintf(
        f,
        "usage: lab mistakes [--json] [--html FILE]\n"
        "\n"
        "The T = 3 worked example (Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = "
        "2)\n"
        "computed five ways by attention_forward: correct (scaled by 1/sqrt(d_k), -inf above the\n"
        "diagonal, softmax over each row), without the scale, masking with 0 instead of -inf, the\n"
        "softmax over the queries (each column) instead of the keys, and no mask at all (the "
        "mistake\n"
        "`make demo-mistakes` trains as attn_mask none). For each: the weights, marking with\n"
        "* the weights on future positions (u > t), each row's sum, marking with ! a row that does "
        "not\n"
        "sum to 1, the column sums and the outputs P V.\n"
        "  --html FILE  also write FILE, one self-contained HTML page (no network, no external "
        "file) with\n"
        "               a step per case: S before the mask and as the softmax takes it, the "
        "weights with their row sums and\n"
        "               future weight (what the mistake breaks marked), the column sums and the "
        "outputs;\n"
        "               a switch shows the correct case beside each mistake; FILE#step=N opens "
        "step N\n"
        "  --json       the same numbers as one JSON object (numbers with %%.17g; null for the "
        "mask's -inf),\n"
        "               to check against numpy; the page's tables carry their keys "
        "(cases.K.weights, ...)\n");
}

static void usage_exercise(FILE *f) {
    fprintf(
        f,
        "usage: lab exercise [--seed S] [--T T] [--dk D] [--causal] [--json] [--html FILE]\n"
        "\n"
        "Draws Q, K, V (in that order) exactly as NumPy's\n"
        "    np.random.seed(S); Q = np.random.randn(T, D); K = np.random.randn(T, D); V = "
        "np.random.randn(T, D)\n"
        "and prints them, the raw scores Q K^T (before scale and mask), the weights scaled by "
        "1/sqrt(D)\n"
        "and unscaled, each row's max weight and entropy (nats), and a verdict comparing their "
        "means\n"
        "(over the rows that see at least two keys).\n"
        "  --seed S   0 to 4294967295 (default 0)\n"
        "  --T T      sequence length, 1 to %d (default 5)\n"
        "  --dk D     query/key width, 1 to %d (default 8)\n"
        "  --causal   apply the causal mask (row t sees keys 0..t)\n"
        "  --json     print one JSON object with keys Q, K, V, scores, weights_scaled,\n"
        "             weights_unscaled, rowmax_scaled, rowmax_unscaled, entropy_scaled,\n"
        "             entropy_unscaled, then the page's numbers: scores_scaled, masked_* (with\n"
        "             --causal; null for -inf), row_stats, rowsum_*, out_*, dO, dP, and for * = "
        "scaled\n"
        "             and unscaled dV_*, dS_*, dS_r_*, dS_sum_*, dS_gain_*, dQ_*, dK_* (numbers "
        "with %%.17g)\n"
        "  --html FILE  also write FILE, one self-contained HTML page that steps through the "
        "exercise,\n"
        "             forward and backward (dO = np.random.randn(T, D), drawn after V), scaled "
        "and\n"
        "             unscaled; T up to %d and D up to %d\n",
        LAB_MAX_T, LAB_MAX_DK, LAB_HTML_MAX_T, LAB_HTML_MAX_DK);
}

static void usage_softmax(FILE *f) {
    fprintf(
        f,
        "usage: lab softmax [--scores \"2,1,0.1\"] [--upstream \"1,0,0\"]\n"
        "\n"
        "For scores s (comma-separated, 1 to %d finite numbers of magnitude <= 1e6; default "
        "2,1,0.1)\n"
        "prints p = softmax(s), the Jacobian J = diag(p) - p p^T, and for an upstream gradient\n"
        "g = dL/dp (same length; default 1 then zeros, i.e. L = p_0) the vector-Jacobian product\n"
        "dL/ds = p * (g - sum(g * p)) from softmax_backward(), J^T g from the matrix, and central\n"
        "finite differences of g . softmax(s), with the largest difference. Then a table over the\n"
        "factors 0.25 ... 32 applied to s: max p, entropy, ||J||_F and ||dL/ds||, showing the "
        "gradient\n"
        "vanish as the softmax saturates.\n",
        LAB_MAX_SCORES);
}

static void usage_online(FILE *f) {
    fprintf(
        f,
        "usage: lab online-softmax [--block N] [--json] [--html FILE]\n"
        "\n"
        "The softmax of each row of scores, and O = P V, computed one block of keys at a time as a "
        "fused\n"
        "attention kernel (FlashAttention) does: per row a running maximum m, a running sum\n"
        "l = sum exp(s_u - m) and an unnormalised output o = sum exp(s_u - m) V[u] over the keys "
        "seen so far.\n"
        "A block whose scores raise the maximum from m_old to m_new first multiplies l and o by\n"
        "exp(m_old - m_new). At the end P = exp(s - m) / l, O = o / l and L = m + ln l. Shown "
        "for:\n"
        "  1. the T = 3 example (Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2, "
        "scaled\n"
        "     by 1/sqrt(2));\n"
        "  2. the exercise's T = 5 (np.random.seed(0); Q, K, V = np.random.randn(5, 8) x 3, scaled "
        "by\n"
        "     1/sqrt(8)),\n"
        "both without the mask, each block's m, l and o printed, and the result against "
        "attention.c's\n"
        "softmax and P V (the largest difference).\n"
        "  --block N    keys per block, 1 to %d (default 2; a block larger than T is one block)\n"
        "  --json       the same numbers as one JSON object (groups t3 and exercise; numbers with "
        "%%.17g,\n"
        "               null for -inf), to check against numpy\n"
        "  --html FILE  also write FILE, one self-contained HTML page that steps through both: "
        "the\n"
        "               scores, one step per block, the normalisation; FILE#step=N opens step N\n",
        LAB_ONLINE_MAX_T);
}

static void usage_gradcheck(FILE *f) {
    fprintf(
        f,
        "usage: lab gradcheck [CONFIG] [--section.key=value ...] [--samples N] [--T N] "
        "[--break-backward]\n"
        "\n"
        "Compares the gradient of the mean cross-entropy computed by gpt_backward with "
        "sixth-order\n"
        "central differences of gpt_forward, one row per parameter tensor: max |analytic - "
        "numeric|,\n"
        "rel err = that / the tensor's largest |gradient|, pass or FAIL. Exit code 0 when every "
        "tensor\n"
        "passes, 1 when one fails.\n"
        "\n"
        "Without CONFIG the model is tiny: n_layer 2, n_head 2, n_embd 8, block_size 6, "
        "model.init\n"
        "fan_in (queries and keys of unit size, so every gradient, wq's and wk's included, stands "
        "far\n"
        "above float32's finite-difference noise), and the trainer's defaults otherwise\n"
        "(model.attn_scale sqrt, train.seed 1337); overrides apply on top, e.g. --model.init=gpt2\n"
        "--model.attn_scale=none. With CONFIG the\n"
        "model shape, model.init, model.attn_scale and train.seed come from it. Either way the "
        "input\n"
        "is a fixed random token sequence over a vocabulary of %d (no data file is read): %d\n"
        "sequences of T tokens. Each checked element costs 6 forward passes.\n"
        "  --samples N       elements checked per tensor; 0 = every element (default: every "
        "element\n"
        "                    for models up to %d parameters, else %d per tensor, drawn with a "
        "fixed seed)\n"
        "  --T N             tokens per sequence, 1 to block_size (default min(block_size, %d))\n"
        "  --break-backward  drop the \"- rowsum(dP * P)\" term of the softmax backward\n"
        "                    (the lab's own broken backward, teach/lab_core.c): the check must "
        "then FAIL on wq and wk\n"
        "\n"
        "Tolerance: rel err <= 1e-6 with step 2e-3 in float64 (lab64); in float32 (lab) the check "
        "is\n"
        "rough: step 1e-2, rel err <= 5e-2, and tensors with tiny gradients cannot be resolved.\n",
        GRADCHECK_TINY_VOCAB, GRADCHECK_TINY_BATCH, GRADCHECK_ALL_BELOW, GRADCHECK_SAMPLES,
        GRADCHECK_MAX_T);
}

// ---------------------------------------------------------------------------------------------
// argument helpers

// strict: digits only ("0x10", " 5", "2.7" and "" are refused), see base/common.h
static long long parse_int(const char *opt, const char *v, long long lo, long long hi) {
    return flag_integer(opt, v, lo, hi);
}

// A command's options, each at most once (option_once): the value of --NAME, or whether a is the
// switch NAME.
static const char *lab_option(int argc, char **argv, int *i, const char *name) {
    const char *v = option_value(argc, argv, i, name);
    if (v) option_once(name, v);
    return v;
}

static int lab_switch(const char *a, const char *name) {
    if (strcmp(a, name) != 0) return 0;
    option_once(name, NULL);
    return 1;
}

static int is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

static _Noreturn void unknown_option(const char *cmd, const char *a) {
    // each command's options, for "did you mean" (as train and sample say it)
    static const struct {
        const char *cmd;
        const char *opts[8];
    } options[] = {
        {"examples", {"--json", "--html", "--help"}},
        {"mistakes", {"--json", "--html", "--help"}},
        {"exercise", {"--seed", "--T", "--dk", "--causal", "--json", "--html", "--help"}},
        {"softmax", {"--scores", "--upstream", "--help"}},
        {"online-softmax", {"--block", "--json", "--html", "--help"}},
        {"gradcheck", {"--samples", "--T", "--break-backward", "--help"}},
    };
    const char *guess = NULL;
    for (size_t i = 0; a[0] == '-' && i < sizeof options / sizeof options[0]; i++) {
        if (strcmp(options[i].cmd, cmd) != 0) continue;
        int n = 0;
        while (n < 8 && options[i].opts[n]) n++;
        char typed[128];
        snprintf(typed, sizeof typed, "%.*s", (int)strcspn(a, "="), a);
        guess = closest_name(typed, options[i].opts, n);
    }
    if (guess) die(EXIT_USAGE, "%s: unknown option '%s' (did you mean '%s'?)", cmd, a, guess);
    die(EXIT_USAGE, "%s: unknown %s '%s' (see lab %s --help)", cmd,
        a[0] == '-' ? "option" : "argument", a, cmd);
}

// Parse "a,b,c" into out (at most max entries). Returns the count; dies with exit 2 on malformed
// lists: empty items, non-numbers, non-finite or huge values, too many entries.
static int parse_list(const char *opt, const char *text, real *out, int max) {
    int n = 0;
    const char *p = text;
    for (;;) {
        // one item: spaces, a plain decimal number (parse_decimal_text: no hex, inf or nan), spaces
        while (*p == ' ' || *p == '\t') p++;
        size_t len = strcspn(p, ", \t");
        char item[64];
        double x;
        if (len == 0 || len >= sizeof item)
            die(EXIT_USAGE,
                "%s expects comma-separated numbers like \"2,1,0.1\"; item %d of '%s' is not a "
                "number",
                opt, n + 1, text);
        memcpy(item, p, len);
        item[len] = 0;
        if (!parse_decimal_text(item, &x))
            die(EXIT_USAGE,
                "%s expects comma-separated numbers like \"2,1,0.1\"; item %d of '%s' is not a "
                "number",
                opt, n + 1, text);
        if (!isfinite(x) || fabs(x) > 1e6)
            die(EXIT_USAGE, "%s: item %d of '%s' must be a finite number of magnitude <= 1e6", opt,
                n + 1, text);
        if (n >= max) die(EXIT_USAGE, "%s takes at most %d numbers", opt, max);
        out[n++] = (real)x;
        p += len;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == 0) return n;
        if (*p != ',')
            die(EXIT_USAGE,
                "%s expects comma-separated numbers like \"2,1,0.1\"; unexpected '%c' in '%s'", opt,
                *p, text);
        p++;
    }
}

// The FILE of --html FILE: not empty; "-" is standard output (then the page is all it prints).
static const char *html_path(const char *cmd, const char *v) {
    if (!*v) die(EXIT_USAGE, "%s: --html expects a file name, e.g. --html page.html", cmd);
    return v;
}

static int is_stdout(const char *path) { return path && strcmp(path, "-") == 0; }

// --json and --html - would both print to standard output.
static void check_one_stdout(const char *cmd, int json, const char *html) {
    if (json && is_stdout(html))
        die(EXIT_USAGE, "%s: --json and --html - both print to standard output: give one", cmd);
}

// The command line as the page shows it: ./lab (or ./lab64) and the arguments, quoted where a
// shell would need it.
static const char *command_line(int argc, char **argv) {
    static char buf[1024];
    return command_line_text(buf, sizeof buf, sizeof(real) == 8 ? "./lab64" : "./lab", argc, argv);
}

// Write the page to path and free it; exit 1 naming the file when it cannot be written.
static void write_page(HtmlPage *page, const char *path) {
    char err[1024];
    int steps = html_page_n_steps(page);
    int ok = html_page_write(page, path, err, sizeof err);
    html_page_free(page);
    if (!ok) die(EXIT_RUNTIME, "%s", err);
    if (strcmp(path, "-") == 0)
        fprintf(stderr, "lab: wrote the page to standard output (%d steps)\n", steps);
    else
        fprintf(stderr,
                "lab: wrote %s (%d steps; open it in a browser, FILE#step=N opens step N)\n", path,
                steps);
}

// ---------------------------------------------------------------------------------------------
// printing

static void print_matrix(const char *title, const real *M, int rows, int cols) {
    printf("%s\n", title);
    for (int i = 0; i < rows; i++) {
        printf("  ");
        for (int j = 0; j < cols; j++) printf(" %10.6f", (double)M[(size_t)i * cols + j]);
        printf("\n");
    }
}

static void print_vector(const char *label, const real *v, int n) {
    printf("%-32s [", label);
    for (int i = 0; i < n; i++) printf("%s%.6f", i ? ", " : "", (double)v[i]);
    printf("]\n");
}

static void print_dvector(const char *label, const double *v, int n) {
    printf("%-32s [", label);
    for (int i = 0; i < n; i++) printf("%s%.6f", i ? ", " : "", v[i]);
    printf("]\n");
}

// weights (Tq,Tk) and outputs (Tq,dk) side by side, one row per query
static void print_weights_outputs(const real *w, const real *out, int Tq, int Tk, int dk) {
    printf("  %-5s", "query");
    printf("  %-*s", Tk * 11 - 1, "weights");
    printf("   outputs\n");
    for (int t = 0; t < Tq; t++) {
        printf("  %-5d", t);
        for (int u = 0; u < Tk; u++) printf(" %10.6f", (double)w[(size_t)t * Tk + u]);
        printf("  ");
        for (int i = 0; i < dk; i++) printf(" %10.6f", (double)out[(size_t)t * dk + i]);
        printf("\n");
    }
}

// ---------------------------------------------------------------------------------------------
// examples

static void example_case(const real *Q, int Tq, const real *K, const real *V, int Tk, int dk,
                         int scaled, int causal) {
    real w[16], out[16], scores[16];
    real scale = scaled ? (real)(1.0 / sqrt((double)dk)) : (real)1;
    lab_attention(out, w, scores, Q, Tq, K, V, Tk, dk, scale, causal);
    if (scaled)
        printf("-- scaled by 1/sqrt(%d) = %.6f, %s --\n", dk, (double)scale,
               causal ? "causal mask" : "no mask");
    else
        printf("-- unscaled (scale 1), %s --\n", causal ? "causal mask" : "no mask");
    print_weights_outputs(w, out, Tq, Tk, dk);
}

static int cmd_examples(int argc, char **argv) {
    const char *html = NULL;
    int json = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if (is_help(a)) {
            usage_examples(stdout);
            return 0;
        }
        if ((v = lab_option(argc, argv, &i, "--html")))
            html = html_path("examples", v);
        else if (lab_switch(a, "--json"))
            json = 1;
        else
            unknown_option("examples", a);
    }
    check_one_stdout("examples", json, html);
    if (json || html) {
        LabArrays numbers = {0};
        lab_examples_arrays(&numbers);
        if (json) lab_arrays_json(stdout, &numbers);
        if (html) {
            HtmlPage *page = lab_examples_page(&numbers, command_line(argc, argv));
            write_page(page, html);
        }
        lab_arrays_free(&numbers);
        if (json || is_stdout(html)) return 0;
    }
    static const real Q3[] = {1, 0, 0, 1, 1, 1};
    static const real V3[] = {10, 0, 0, 10, 5, 5};
    printf("Example 1: T = 3, d_k = 2, Q = K (each token's query is its key)   [%s]\n", REAL_NAME);
    print_matrix("Q = K", Q3, 3, 2);
    print_matrix("V", V3, 3, 2);
    real scores[9], w[9], out[6];
    lab_attention(out, w, scores, Q3, 3, Q3, V3, 3, 2, 1, 0);
    print_matrix("raw scores Q K^T (before scale and mask)", scores, 3, 3);
    printf("\n");
    for (int causal = 0; causal <= 1; causal++)
        for (int scaled = 1; scaled >= 0; scaled--) {
            example_case(Q3, 3, Q3, V3, 3, 2, scaled, causal);
            printf("\n");
        }
    printf("Without the mask row 2 (q = [1,1]) scores 1, 1, 2 and the scale flattens its weights; "
           "with the\n"
           "mask row 0 sees only itself (weight 1, output V[0]) and row 1 only keys 0 and 1: the "
           "weights\n"
           "above the diagonal are exactly 0 and each row still sums to 1. Row 2 sees every key, "
           "so it is\n"
           "the same with and without the mask; scaled row 1 is Example 2 below with the keys "
           "swapped.\n\n");

    static const real q1[] = {1, 0};
    static const real K1[] = {1, 0, 0, 1};
    static const real V1[] = {10, 0, 0, 10};
    printf("Example 2: one query q = [1,0] over keys [1,0], [0,1] with values [10,0], [0,10]\n");
    printf("(scores 1 and 0; the lone query is the last position, so the causal mask hides "
           "nothing)\n");
    for (int scaled = 1; scaled >= 0; scaled--) {
        example_case(q1, 1, K1, V1, 2, 2, scaled, 0);
        printf("\n");
    }
    printf("Scaling by 1/sqrt(2) turns the score gap 1 into 0.707: the weights move from "
           "0.731/0.269 to\n"
           "0.670/0.330, and the output from 7.31/2.69 to 6.70/3.30.\n");
    return 0;
}

// ---------------------------------------------------------------------------------------------
// mistakes

static int cmd_mistakes(int argc, char **argv) {
    int json = 0;
    const char *html = NULL;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if (is_help(a)) {
            usage_mistakes(stdout);
            return 0;
        }
        if (lab_switch(a, "--json"))
            json = 1;
        else if ((v = lab_option(argc, argv, &i, "--html")))
            html = html_path("mistakes", v);
        else
            unknown_option("mistakes", a);
    }
    check_one_stdout("mistakes", json, html);
    LabMistake c[LAB_MISTAKES];
    lab_mistakes(c);
    if (html) write_page(lab_mistakes_page(c, command_line(argc, argv)), html);
    if (json) {
        lab_mistakes_json(stdout, c);
        return 0;
    }
    if (is_stdout(html)) return 0;
    printf("mistakes: the T = 3 example five ways   [%s]\n", REAL_NAME);
    printf("Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2; row t is query t, "
           "column u key u\n");
    printf("(* = weight on a future position u > t, which a causal model must not see; ! = a row "
           "that does not\n"
           "sum to 1)\n\n");
    for (int k = 0; k < LAB_MISTAKES; k++) {
        const LabMistake *m = &c[k];
        printf("%d. %s: %s\n", k + 1, m->name, m->what);
        printf("  query   weights                              row sum    outputs\n");
        for (int t = 0; t < 3; t++) {
            printf("  %-5d", t);
            for (int u = 0; u < 3; u++)
                printf("  %9.6f%c", (double)m->weights[t * 3 + u],
                       u > t && m->weights[t * 3 + u] > 0 ? '*' : ' ');
            printf("  %8.6f%c", m->row_sums[t], lab_sums_to_one(m->row_sums[t]) ? ' ' : '!');
            printf("  %10.6f %10.6f\n", (double)m->out[t * 2], (double)m->out[t * 2 + 1]);
        }
        printf("  column sums %9.6f   %9.6f   %9.6f\n\n", m->col_sums[0], m->col_sums[1],
               m->col_sums[2]);
    }
    // what the numbers show, read from them
    for (int k = 1; k < LAB_MISTAKES; k++) {
        char reading[512];
        lab_mistake_reading(reading, sizeof reading, c, k);
        printf("%s: %s\n", c[k].name, reading);
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// exercise

static void exercise_verdict(const LabExercise *e) {
    char verdict[512];
    lab_exercise_verdict(verdict, sizeof verdict, e);
    printf("%s\n", verdict);
}

static int cmd_exercise(int argc, char **argv) {
    long long seed = 0, T = 5, dk = 8;
    int causal = 0, json = 0;
    const char *html = NULL;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if (is_help(a)) {
            usage_exercise(stdout);
            return 0;
        }
        if ((v = lab_option(argc, argv, &i, "--seed")))
            seed = parse_int("--seed", v, 0, 4294967295LL);
        else if ((v = lab_option(argc, argv, &i, "--T")))
            T = parse_int("--T", v, 1, LAB_MAX_T);
        else if ((v = lab_option(argc, argv, &i, "--dk")))
            dk = parse_int("--dk", v, 1, LAB_MAX_DK);
        else if (lab_switch(a, "--causal"))
            causal = 1;
        else if (lab_switch(a, "--json"))
            json = 1;
        else if ((v = lab_option(argc, argv, &i, "--html")))
            html = html_path("exercise", v);
        else
            unknown_option("exercise", a);
    }
    check_one_stdout("exercise", json, html);
    if (html && (T > LAB_HTML_MAX_T || dk > LAB_HTML_MAX_DK))
        die(EXIT_USAGE,
            "exercise: --html draws every matrix: --T must be at most %d and --dk at most %d (got "
            "%lld "
            "and %lld)",
            LAB_HTML_MAX_T, LAB_HTML_MAX_DK, T, dk);
    LabExercise e;
    if (!lab_exercise_run(&e, (uint32_t)seed, (int)T, (int)dk, causal))
        die(EXIT_USAGE, "exercise: bad sizes");
    int n = e.T, d = e.dk;
    if (json || html) {
        LabArrays numbers = {0};
        lab_exercise_arrays(&numbers, &e);
        if (json) lab_arrays_json(stdout, &numbers);
        if (html) write_page(lab_exercise_page(&numbers, &e, command_line(argc, argv)), html);
        lab_arrays_free(&numbers);
        if (json || is_stdout(html)) {
            lab_exercise_free(&e);
            return 0;
        }
    }
    printf("exercise: np.random.seed(%lld); Q, K, V = np.random.randn(%d, %d) x 3, %s   [%s]\n",
           seed, n, d, causal ? "causal mask" : "no mask", REAL_NAME);
    print_matrix("Q", e.Q, n, d);
    print_matrix("K", e.K, n, d);
    print_matrix("V", e.V, n, d);
    print_matrix("raw scores Q K^T (before scale and mask)", e.scores, n, n);
    char title[96];
    snprintf(title, sizeof title, "weights, scaled by 1/sqrt(%d) = %.6f%s", d,
             1.0 / sqrt((double)d), causal ? " (masked entries are exactly 0)" : "");
    print_matrix(title, e.weights_scaled, n, n);
    print_matrix("weights, unscaled", e.weights_unscaled, n, n);
    printf("%-5s  %12s  %12s  %14s  %14s\n", "row", "max scaled", "max unscaled", "entropy scaled",
           "entropy unscaled");
    for (int t = 0; t < n; t++)
        printf("%-5d  %12.6f  %12.6f  %14.6f  %14.6f\n", t, e.rowmax_scaled[t],
               e.rowmax_unscaled[t], e.entropy_scaled[t], e.entropy_unscaled[t]);
    if (causal)
        printf("(entropy in nats: ln(t + 1) for uniform weights over row t's t + 1 keys, 0 for "
               "one-hot)\n");
    else
        printf("(entropy in nats: ln(%d) = %.6f for uniform weights, 0 for one-hot)\n", n,
               log((double)n));
    exercise_verdict(&e);
    lab_exercise_free(&e);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// softmax

static int cmd_softmax(int argc, char **argv) {
    real s[LAB_MAX_SCORES], g[LAB_MAX_SCORES];
    int n = 3, ng = -1;
    s[0] = 2;
    s[1] = 1;
    s[2] = (real)0.1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if (is_help(a)) {
            usage_softmax(stdout);
            return 0;
        }
        if ((v = lab_option(argc, argv, &i, "--scores")))
            n = parse_list("--scores", v, s, LAB_MAX_SCORES);
        else if ((v = lab_option(argc, argv, &i, "--upstream")))
            ng = parse_list("--upstream", v, g, LAB_MAX_SCORES);
        else
            unknown_option("softmax", a);
    }
    if (ng < 0) {  // default upstream: dL/dp = e_0, i.e. L = p_0
        for (int i = 0; i < n; i++) g[i] = i == 0 ? 1 : 0;
    } else if (ng != n) {
        die(EXIT_USAGE,
            "--upstream has %d number%s but --scores has %d: they must have the same length", ng,
            ng == 1 ? "" : "s", n);
    }
    real p[LAB_MAX_SCORES] = {0}, ds[LAB_MAX_SCORES] = {0}, jg[LAB_MAX_SCORES] = {0};
    double fd[LAB_MAX_SCORES] = {0};
    real *J = xmalloc((size_t)n * n * sizeof(real), "softmax Jacobian");
    lab_softmax_vjp(ds, p, s, g, n);
    lab_softmax_jacobian(J, p, n);
    double h = lab_softmax_fd_step();
    lab_softmax_vjp_fd(fd, s, g, n, h);
    double max_fd = 0.0, max_jg = 0.0;
    for (int j = 0; j < n; j++) {
        double acc = 0.0;
        for (int i = 0; i < n; i++) acc += (double)J[(size_t)i * n + j] * g[i];
        jg[j] = (real)acc;
        max_fd = fmax(max_fd, fabs((double)ds[j] - fd[j]));
        max_jg = fmax(max_jg, fabs((double)ds[j] - acc));
    }
    printf("softmax   [%s]\n", REAL_NAME);
    print_vector("scores s", s, n);
    print_vector("p = softmax(s)", p, n);
    print_matrix("Jacobian J = diag(p) - p p^T  (J[i][j] = dp_i/ds_j; symmetric, rows sum to 0)", J,
                 n, n);
    print_vector(ng < 0 ? "upstream g = dL/dp (default e_0)" : "upstream g = dL/dp", g, n);
    print_vector("J^T g (the matrix product)", jg, n);
    print_vector("softmax_backward: p*(g - g.p)", ds, n);
    char label[64];
    snprintf(label, sizeof label, "central differences (h = %g)", h);
    print_dvector(label, fd, n);
    printf("max |softmax_backward - J^T g|          = %.3e\n", max_jg);
    printf("max |softmax_backward - finite diffs|   = %.3e\n", max_fd);
    printf("\nsaturation: the same scores multiplied by a factor, same upstream g\n");
    printf("%7s  %10s  %10s  %10s  %12s\n", "factor", "max p", "entropy", "||J||_F", "||dL/ds||");
    static const double factors[] = {0.25, 0.5, 1, 2, 4, 8, 16, 32};
    for (int k = 0; k < 8; k++) {
        LabSoftmaxScale row;
        lab_softmax_scale_row(&row, s, g, n, factors[k]);
        printf("%7g  %10.6f  %10.6f  %10.3e  %12.3e\n", row.factor, row.max_p, row.entropy,
               row.jac_frob, row.vjp_norm);
    }
    printf("As max p -> 1 every entry of J, p_i (1 - p_i) on the diagonal and -p_i p_j off it, "
           "goes to 0:\n"
           "the softmax saturates and almost no gradient reaches the scores (nor Q and K behind "
           "them).\n");
    free(J);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// online softmax

static int cmd_online_softmax(int argc, char **argv) {
    long long block = 2;
    int json = 0;
    const char *html = NULL;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if (is_help(a)) {
            usage_online(stdout);
            return 0;
        }
        if ((v = lab_option(argc, argv, &i, "--block")))
            block = parse_int("--block", v, 1, LAB_ONLINE_MAX_T);
        else if (lab_switch(a, "--json"))
            json = 1;
        else if ((v = lab_option(argc, argv, &i, "--html")))
            html = html_path("online-softmax", v);
        else
            unknown_option("online-softmax", a);
    }
    check_one_stdout("online-softmax", json, html);
    LabOnline o[LAB_ONLINE_PROBLEMS];
    if (!lab_online_lesson(o, (int)block)) die(EXIT_USAGE, "online-softmax: bad sizes");
    if (json || html) {
        LabArrays numbers = {0};
        lab_online_arrays(&numbers, o);
        if (json) lab_arrays_json(stdout, &numbers);
        if (html) write_page(lab_online_page(&numbers, o, command_line(argc, argv)), html);
        lab_arrays_free(&numbers);
        if (json || is_stdout(html)) return 0;
    }
    printf("online-softmax: softmax(S) and P V one block of keys at a time   [%s]\n", REAL_NAME);
    printf("Each row keeps a running maximum m, a running sum l = sum exp(s_u - m) over the keys "
           "seen so far\n"
           "and o = sum exp(s_u - m) V[u]. A block that raises the maximum from m_old to m_new "
           "first multiplies\n"
           "l and o by exp(m_old - m_new) (each term exp(s_u - m_old) becomes exp(s_u - m_new)); "
           "then its own\n"
           "terms are added. At the end P = exp(s - m) / l, O = o / l and L = m + ln l: no row of "
           "P is kept\n"
           "while the blocks are read.\n\n");
    for (int k = 0; k < LAB_ONLINE_PROBLEMS; k++) {
        const LabOnline *q = &o[k];
        int T = q->T, d = q->dk;
        if (k == 0)
            printf("1. The T = 3 example: Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], "
                   "d_k = 2, no mask\n");
        else
            printf("2. The exercise: np.random.seed(0); Q, K, V = np.random.randn(%d, %d) x 3, no "
                   "mask\n",
                   T, d);
        printf("   blocks of %d key%s: %d blocks\n", q->block, q->block == 1 ? "" : "s",
               q->n_blocks);
        char title[96];
        snprintf(title, sizeof title, "scores S = Q K^T / sqrt(%d)", d);
        print_matrix(title, q->S, T, T);
        for (int j = 0; j < q->n_blocks; j++) {
            int u0 = j * q->block, u1 = u0 + q->block < T ? u0 + q->block : T;
            if (u1 - u0 == 1)
                printf("block %d: key %d\n", j + 1, u0);
            else
                printf("block %d: keys %d..%d\n", j + 1, u0, u1 - 1);
            printf("  %-5s", "row");
            for (int c = 0; c < 7; c++)
                printf(" %*s", c == 3 ? 18 : 10, LAB_ONLINE_BLOCK_COLUMNS[c]);
            printf("\n");
            for (int t = 0; t < T; t++) {
                const real col[7] = {q->m_old[j][t],   q->block_max[j][t], q->m_new[j][t],
                                     q->rescale[j][t], q->l_old[j][t],     q->block_sum[j][t],
                                     q->l_new[j][t]};
                printf("  %-5d", t);
                for (int c = 0; c < 7; c++) printf(" %*.6f", c == 3 ? 18 : 10, (double)col[c]);
                printf("\n");
            }
            print_matrix("  o = o * exp(m_old - m_new) + sum exp(s - m_new) V (unnormalised)",
                         q->o[j], T, d);
            char reading[768];
            lab_online_block_reading(reading, sizeof reading, q, j);
            printf("  %s\n", reading);
        }
        print_matrix("P = exp(s - m) / l", q->P_online, T, T);
        print_matrix("softmax(S), attention.c", q->P, T, T);
        print_matrix("O = o / l", q->O_online, T, d);
        print_matrix("P V, attention.c", q->O, T, d);
        printf("%-5s  %12s  %14s  %14s\n", "row", "L = m + ln l", "max |P diff|", "max |O diff|");
        for (int t = 0; t < T; t++)
            printf("%-5d  %12.6f  %14.3e  %14.3e\n", t, (double)q->L[t], q->P_diff[t],
                   q->O_diff[t]);
        char result[512];
        lab_online_result_reading(result, sizeof result, q);
        printf("%s\n", result);
        lab_online_plain_reading(result, sizeof result, q);
        printf("The mistake: %s\n\n", result);
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// gradcheck

static int cmd_gradcheck(int argc, char **argv) {
    const char *config_path = NULL;
    const char **overrides = xcalloc((size_t)argc, sizeof(char *), "arguments");
    int n_overrides = 0, break_backward = 0;
    long long samples = -1, seq = -1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if (is_help(a)) {
            usage_gradcheck(stdout);
            free(overrides);
            return 0;
        }
        if (lab_switch(a, "--break-backward")) {
            break_backward = 1;
            continue;
        }
        if ((v = lab_option(argc, argv, &i, "--samples"))) {
            samples = parse_int("--samples", v, 0, 1000000000);
            continue;
        }
        if ((v = lab_option(argc, argv, &i, "--T"))) {
            seq = parse_int("--T", v, 1, 65536);
            continue;
        }
        if (strncmp(a, "--", 2) == 0 && strchr(a, '.') && strchr(a, '=')) {
            char key[160];
            snprintf(key, sizeof key, "%.*s", (int)(strchr(a, '=') - a), a);
            option_once(key, strchr(a, '=') + 1);
            overrides[n_overrides++] = a + 2;
            continue;
        }
        if (strncmp(a, "--", 2) == 0 && strchr(a, '.'))
            die(EXIT_USAGE, "gradcheck: override '%s' has no value: write %s=VALUE", a, a);
        if (a[0] == '-') unknown_option("gradcheck", a);
        if (config_path)
            die(EXIT_USAGE, "gradcheck: more than one config file given: '%s' and '%s'",
                config_path, a);
        config_path = a;
    }
    Config cfg;
    char err[1024];
    config_defaults(&cfg);
    if (config_path) {
        if (!config_load_file(&cfg, config_path, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    } else {
        ModelDims tiny;
        gradcheck_tiny_dims(&tiny);
        cfg.n_layer = tiny.n_layer;
        cfg.n_head = tiny.n_head;
        cfg.n_embd = tiny.n_embd;
        cfg.block_size = tiny.block_size;
        // unit-size queries and keys: under GPT-2's init (std 0.02) the gradients of wq and wk are
        // ~1e-5, below what float32 finite differences resolve, and those are the tensors the
        // softmax backward is checked by
        snprintf(cfg.init, sizeof cfg.init, "fan_in");
    }
    for (int i = 0; i < n_overrides; i++)
        if (!config_apply_override(&cfg, overrides[i], err, sizeof err)) die(EXIT_USAGE, "%s", err);
    if (!config_finalize(&cfg, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    free(overrides);

    ModelDims d = gpt_dims(&cfg, GRADCHECK_TINY_VOCAB);
    if (seq > cfg.block_size)
        die(EXIT_USAGE, "gradcheck: --T %lld exceeds model.block_size %d", seq, cfg.block_size);
    int B = GRADCHECK_TINY_BATCH;
    int T = seq > 0                            ? (int)seq
            : cfg.block_size < GRADCHECK_MAX_T ? cfg.block_size
                                               : GRADCHECK_MAX_T;
    size_t n_params = 0, bytes = gpt_memory_bytes(&d, B, T, &n_params);
    if (bytes == 0 || (double)bytes > GRADCHECK_MAX_BYTES)
        die(EXIT_USAGE,
            "gradcheck: the model (n_layer %d, n_embd %d, block_size %d) is too large for a "
            "gradient check "
            "(limit %.0f MiB): use a small model",
            d.n_layer, d.n_embd, d.block_size, GRADCHECK_MAX_BYTES / 1048576.0);
    int per_tensor = samples >= 0                      ? (int)samples
                     : n_params <= GRADCHECK_ALL_BELOW ? 0
                                                       : GRADCHECK_SAMPLES;

    int init = strcmp(cfg.init, "fan_in") == 0 ? INIT_FAN_IN : INIT_GPT2;
    GPT m;
    AttnSetup attn = attention_setup(&cfg);
    if (break_backward)
        attn.impl = &lab_broken_attention;  // the softmax backward without its rowsum term
    gpt_build(&m, &d, attn, B, T);
    Rng rng;
    rng_seed(&rng, (uint64_t)cfg.seed);
    gpt_init(&m, init, &rng);
    int *x = xmalloc((size_t)B * T * sizeof(int), "tokens"),
        *y = xmalloc((size_t)B * T * sizeof(int), "tokens");
    gradcheck_tokens(x, y, B, T, d.vocab_size, GRADCHECK_TOKEN_SEED);

    size_t checked = 0;
    for (int i = 0; i < m.n_tensors; i++)
        checked += per_tensor > 0 && m.tensors[i].size > (size_t)per_tensor ? (size_t)per_tensor
                                                                            : m.tensors[i].size;
    printf("gradient check [%s]: n_layer %d, n_head %d, n_embd %d, block_size %d, vocab %d\n",
           REAL_NAME, d.n_layer, d.n_head, d.n_embd, d.block_size, d.vocab_size);
    printf("init %s, attn_scale %s (%.6g), train.seed %d; %zu parameters, %zu checked (%s)\n",
           cfg.init, cfg.attn_scale_str, cfg.attn_scale, cfg.seed, n_params, checked,
           per_tensor == 0 ? "every element" : "a seeded sample per tensor");
    printf("attention: mask %s, softmax over %s, %s", cfg.attn_mask, cfg.softmax_axis,
           cfg.attn_window > 0 ? "window of " : "every earlier key\n");
    if (cfg.attn_window > 0) printf("%d key%s\n", cfg.attn_window, cfg.attn_window == 1 ? "" : "s");
    printf("input: %d fixed random sequences of %d tokens; loss: mean cross-entropy (gpt_forward "
           "with targets)\n",
           B, T);
    printf("numeric gradient: sixth-order central differences, step %g (%zu forward passes)\n",
           gradcheck_step(), 6 * checked);
    if (sizeof(real) != 8)
        printf("note: float32 build: finite differences in float32 are a rough check only "
               "(tolerance %g);"
               " run ./lab64 gradcheck for the float64 check\n",
               gradcheck_tolerance());
    if (break_backward) {
        printf("--break-backward: the softmax backward drops \"- rowsum(dP * P)\": expect FAIL on "
               "wq and wk, and on\n"
               "every tensor their wrong gradient flows into (LayerNorms and layers below, wte, "
               "wpe)\n");
        if (sizeof(real) != 8 && init == INIT_GPT2)
            printf("note: under the gpt2 init the wq/wk gradients are too small for float32 finite "
                   "differences:"
                   " use ./lab64 or model.init fan_in (the default without CONFIG) to see the "
                   "failure\n");
    }
    printf("\n");

    GradcheckRow *rows = xcalloc((size_t)m.n_tensors, sizeof(GradcheckRow), "gradient check rows");
    gradcheck_model(&m, x, y, B, T, per_tensor, GRADCHECK_SAMPLE_SEED, rows);
    int failed = gradcheck_print(stdout, rows, m.n_tensors);
    free(rows);
    free(x);
    free(y);
    gpt_free(&m);
    return failed ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------

// At exit, standard output flushed and checked: output lost to a full disk or /dev/full ends the
// program with exit 1 and one line, not exit 0.
static void check_stdout(void) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return;
    fprintf(stderr, "%s: error: cannot write to standard output: %s\n", g_progname,
            strerror(errno ? errno : EIO));
    _exit(EXIT_RUNTIME);
}

int main(int argc, char **argv) {
    g_progname = "lab";
    atexit(check_stdout);
    // every message that lists the commands is made from this one table
    static const struct {
        const char *name;
        int (*run)(int, char **);
        const char *what;
    } commands[] = {
        {"examples", cmd_examples,
         "the lesson's worked examples (T = 3; one query over two keys), scaled and unscaled"},
        {"exercise", cmd_exercise,
         "the scaling exercise: Q, K, V from np.random.seed(S), which weights are more peaked"},
        {"softmax", cmd_softmax,
         "the softmax's Jacobian, and how its gradient vanishes as the scores grow"},
        {"mistakes", cmd_mistakes,
         "the T = 3 example five ways: correct and four classic mistakes"},
        {"online-softmax", cmd_online_softmax,
         "the softmax one block of keys at a time, as a fused kernel computes it"},
        {"gradcheck", cmd_gradcheck, "the whole model's backward against finite differences"},
    };
    enum { N_COMMANDS = sizeof commands / sizeof commands[0] };
    char words[256] = "";
    size_t nw = 0;
    for (int i = 0; i < N_COMMANDS; i++) {
        nw += (size_t)snprintf(words + nw, sizeof words - nw, "%s%s",
                               i == 0               ? ""
                               : i + 1 < N_COMMANDS ? ", "
                                                    : " or ",
                               commands[i].name);
    }
    // no command: the menu, one line a command
    if (argc < 2) {
        printf("usage: lab COMMAND [options]   (lab COMMAND --help: its options; lab --help: "
               "more)\n\n");
        for (int i = 0; i < N_COMMANDS; i++)
            printf("  %-15s %s\n", commands[i].name, commands[i].what);
        printf("\ne.g. lab examples, then lab examples --html steps.html and open the page\n");
        return EXIT_USAGE;  // a usage error all the same: no command was given
    }
    if (is_help(argv[1])) {
        usage_main(stdout);
        return 0;
    }
    const char *cmd = argv[1];
    if (cmd[0] == '-')
        die(EXIT_USAGE, "unknown option '%s': expected a command (%s; see lab --help)", cmd, words);
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(argc, argv);
    die(EXIT_USAGE, "unknown command '%s': expected %s (see lab --help)", cmd, words);
}
