// lab.c: the command line of ./lab (float32) and ./lab64 (float64, -DREAL_DOUBLE): worked
// attention examples, the NumPy-seeded scaling exercise, the softmax Jacobian and the whole-model
// gradient check. This file is the table of the commands and the program's --help; each command's
// options and output live in teach/lab_lessons.c and teach/lab_gradcheck.c, the computations in
// teach/lab_core.c (so the tests can call them) and in attention.c.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/common.h"         // g_progname, die, REAL_NAME, the exit codes
#include "teach/lab_args.h"      // is_help
#include "teach/lab_commands.h"  // the commands

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
