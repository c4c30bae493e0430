// teach/lab_lessons.c: ./lab's lesson commands, examples, mistakes, exercise, softmax and
// online-softmax: each one's --help, its options, and its numbers (computed by teach/lab_core.c)
// as terminal tables, as JSON or as a step-through page (teach/lab_pages.c).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"         // real, REAL_NAME, die, xmalloc
#include "teach/lab_args.h"      // the options' parsing, --html and --json, write_page
#include "teach/lab_commands.h"  // the commands' declarations
#include "teach/lab_core.h"      // the computations: lab_attention, lab_exercise_run, ...
#include "teach/lab_pages.h"     // the pages and the JSON of their numbers

// ---------------------------------------------------------------------------------------------
// usage

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

int cmd_examples(int argc, char **argv) {
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

int cmd_mistakes(int argc, char **argv) {
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

int cmd_exercise(int argc, char **argv) {
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

int cmd_softmax(int argc, char **argv) {
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

int cmd_online_softmax(int argc, char **argv) {
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
