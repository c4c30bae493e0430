// tools/bench_context.c: the cost of attention as the context grows (make bench-context). For each
// T from 64 up to a largest (doubling), at a fixed number of tokens per step (the batch is
// tokens / T, at least 1), it runs `./train CONFIG --bench=N` as a child process, once with full
// causal attention and once with a window of W keys, and reads from each: the median ms per step,
// the attention phase's ms per step, and the child's peak resident memory (its own rusage). It
// prints the table, with the growth exponent d log(ms) / d log(T) between successive T, and
// writes it as OUT.md and OUT.csv, and the curves as OUT.svg (log-log). A benchmark, never a test:
//   make bench-context                     (T = 64 .. 4096, 4096 tokens per step, W = 128)
//   tools/bench_context --max-t 8192 --tokens 8192 --steps 5 --out build/ctx8k
#define _DEFAULT_SOURCE  // wait4: the child's own resource usage, its peak memory included
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ROWS 16

typedef struct {
    int T, B, window;
    double ms, attention_ms, rss_mib;
    int ok;
} Row;

typedef struct {
    const char *train, *config, *out;
    int steps, tokens, min_t, max_t, window;
} Options;

static void usage(void) {
    fprintf(
        stderr,
        "usage: bench_context [--train ./train] [--config configs/bench_context.json] [--steps N]\n"
        "                     [--tokens N] [--min-t T] [--max-t T] [--window W (0: none)] [--out "
        "PREFIX]\n");
    exit(2);
}

static int int_arg(const char *name, const char *v, int lo, int hi) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < lo || n > hi) {
        fprintf(stderr, "bench_context: %s expects an integer from %d to %d, got '%s'\n", name, lo,
                hi, v);
        exit(2);
    }
    return (int)n;
}

// Run ./train for one (T, B, window), its output into a pipe; the figures from its lines.
static void measure(const Options *o, Row *r) {
    char bt[32], bb[32], bw[48], bs[32];
    snprintf(bt, sizeof bt, "--model.block_size=%d", r->T);
    snprintf(bb, sizeof bb, "--train.batch_size=%d", r->B);
    snprintf(bw, sizeof bw, "--model.attn_window=%d", r->window);
    snprintf(bs, sizeof bs, "--bench=%d", o->steps);
    char *argv[8] = {(char *)o->train, (char *)o->config, bt, bb, bs, NULL, NULL, NULL};
    if (r->window > 0) argv[5] = bw;  // the full-attention runs do not name the key
    int fd[2];
    if (pipe(fd) != 0) {
        perror("bench_context: pipe");
        exit(1);
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench_context: fork");
        exit(1);
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        execv(o->train, argv);
        fprintf(stderr, "cannot run %s: %s\n", o->train, strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[4096], last_error[512] = "";
    r->ms = r->attention_ms = NAN;
    while (fgets(line, sizeof line, f)) {
        const char *p;
        if (strncmp(line, "bench ", 6) == 0 && (p = strstr(line, "ms_per_step=")))
            r->ms = atof(p + 12);
        if (strncmp(line, "phases (ms/step):", 17) == 0 && (p = strstr(line, " attention ")))
            r->attention_ms = atof(p + 11);
        if (strstr(line, "error")) snprintf(last_error, sizeof last_error, "%.500s", line);
    }
    fclose(f);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("bench_context: wait4");
        exit(1);
    }
    r->rss_mib = ru.ru_maxrss / 1024.0;  // KiB on Linux
    r->ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !isnan(r->ms);
    if (!r->ok)
        fprintf(stderr, "bench_context: T=%d B=%d window=%d failed (exit %d)%s%s", r->T, r->B,
                r->window, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                last_error[0] ? ": " : "\n", last_error);
}

// d log(ms) / d log(T) from the row before (NAN for the first or a failed one)
static double exponent(const Row *rows, int i) {
    if (i == 0 || !rows[i].ok || !rows[i - 1].ok) return NAN;
    return log(rows[i].ms / rows[i - 1].ms) / log((double)rows[i].T / rows[i - 1].T);
}

static void fmt(char *buf, size_t n, double v, const char *f) {
    if (isnan(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, f, v);
}

// The table as markdown: one column per T.
static void write_table(FILE *f, const Row *full, const Row *win, int n, const Options *o) {
    fprintf(f, "| T |");
    for (int i = 0; i < n; i++) fprintf(f, " %d |", full[i].T);
    fprintf(f, "\n|---|");
    for (int i = 0; i < n; i++) fprintf(f, "---|");
    fprintf(f, "\n| batch |");
    for (int i = 0; i < n; i++) fprintf(f, " %d |", full[i].B);
    const Row *sets[2] = {full, win};
    for (int s = 0; s < (o->window > 0 ? 2 : 1); s++) {
        char label[64];
        snprintf(label, sizeof label, s == 0 ? "full" : "window %d", o->window);
        static const char *const what[4] = {"ms/step", "attention ms/step", "growth exponent",
                                            "peak RSS, MiB"};
        for (int w = 0; w < 4; w++) {
            fprintf(f, "\n| %s, %s |", label, what[w]);
            for (int i = 0; i < n; i++) {
                const Row *r = &sets[s][i];
                char b[32];
                double v = !r->ok   ? NAN
                           : w == 0 ? r->ms
                           : w == 1 ? r->attention_ms
                           : w == 2 ? exponent(sets[s], i)
                                    : r->rss_mib;
                fmt(b, sizeof b, v, w == 2 ? "%.2f" : w == 3 ? "%.0f" : "%.1f");
                fprintf(f, " %s |", b);
            }
        }
    }
    fprintf(f, "\n");
}

// Measurements a busy machine has likely disturbed: at a T above the window, a windowed step
// slower than the full one (the window only removes work), and a negative growth exponent (a
// longer context at the same tokens per step never costs less). Written as one line each, with
// the advice; returns how many.
static int write_noise(FILE *f, const Row *full, const Row *win, int n, const Options *o) {
    int k = 0;
    const Row *sets[2] = {full, win};
    for (int i = 0; i < n; i++) {
        if (o->window > 0 && o->window < full[i].T && full[i].ok && win[i].ok &&
            win[i].ms > full[i].ms)
            fprintf(f,
                    "%snoisy: T=%d: the window of %d keys took %.1f ms/step, more than full "
                    "attention's %.1f\n",
                    k++ ? "" : "\n", full[i].T, o->window, win[i].ms, full[i].ms);
        for (int s = 0; s < (o->window > 0 ? 2 : 1); s++) {
            double e = exponent(sets[s], i);
            if (e < 0 && !(s == 1 && o->window >= full[i].T))
                fprintf(f,
                        "%snoisy: T=%d, %s: growth exponent %.2f (a step took less time than at "
                        "T=%d)\n",
                        k++ ? "" : "\n", full[i].T, s == 0 ? "full" : "windowed", e, full[i - 1].T);
        }
    }
    if (k)
        fprintf(f, "(%d noisy measurement%s: rerun with more --steps on an idle machine)\n", k,
                k == 1 ? "" : "s");
    return k;
}

static void write_csv(FILE *f, const Row *full, const Row *win, int n, const Options *o) {
    fprintf(f, "T,batch,window,ms_per_step,attention_ms_per_step,growth_exponent,peak_rss_mib\n");
    const Row *sets[2] = {full, win};
    for (int s = 0; s < (o->window > 0 ? 2 : 1); s++)
        for (int i = 0; i < n; i++) {
            const Row *r = &sets[s][i];
            if (!r->ok) continue;
            fprintf(f, "%d,%d,%d,%.2f,%.2f,%.3f,%.1f\n", r->T, r->B, r->window, r->ms,
                    r->attention_ms, exponent(sets[s], i), r->rss_mib);
        }
}

// Two log-log panels side by side: ms/step and peak RSS against T, full and windowed.
static void write_svg(FILE *f, const Row *full, const Row *win, int n, const Options *o) {
    const double W = 380, H = 260, L = 60, R = 20, TP = 40, BT = 45;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
            "font-family=\"sans-serif\" "
            "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            2 * W, H);
    const Row *sets[2] = {full, win};
    static const char *const colour[2] = {"#1f77b4", "#d62728"};
    for (int panel = 0; panel < 2; panel++) {
        double x0 = panel * W + L, x1 = panel * W + W - R, y0 = H - BT, y1 = TP;
        double lo = INFINITY, hi = 0, tlo = full[0].T, thi = full[n - 1].T;
        for (int s = 0; s < 2; s++)
            for (int i = 0; i < n; i++) {
                const Row *r = &sets[s][i];
                if (!r->ok) continue;
                double v = panel == 0 ? r->ms : r->rss_mib;
                lo = fmin(lo, v);
                hi = fmax(hi, v);
            }
        if (!(hi > 0)) continue;
        lo = pow(10, floor(log10(lo)));
        hi = pow(10, ceil(log10(hi)));
#define PX(t) (x0 + (x1 - x0) * log((t) / tlo) / log(thi / tlo))
#define PY(v) (y0 - (y0 - y1) * log((v) / lo) / log(hi / lo))
        // the title in two short lines, each within its own panel (at 13 and 11 px a character is
        // at most 0.6 em wide: 24 and 40 characters fit in the panel's 300 px)
        fprintf(f, "<text class=\"title\" x=\"%g\" y=\"16\" font-size=\"13\">%s</text>\n", x0,
                panel == 0 ? "ms per training step" : "peak RSS, MiB");
        fprintf(f,
                "<text class=\"title\" x=\"%g\" y=\"31\" font-size=\"11\">against T, log-log; %d "
                "tokens per step</text>\n",
                x0, o->tokens);
        fprintf(
            f,
            "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#999\"/>\n",
            x0, y1, x1 - x0, y0 - y1);
        for (double v = lo; v <= hi * 1.0001; v *= 10)
            fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%g</text>\n", x0 - 4, PY(v) + 4,
                    v);
        for (int i = 0; i < n; i++)
            fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%d</text>\n", PX(full[i].T),
                    y0 + 14, full[i].T);
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">T</text>\n", (x0 + x1) / 2,
                y0 + 30);
        for (int s = 0; s < (o->window > 0 ? 2 : 1); s++) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                    colour[s]);
            for (int i = 0; i < n; i++) {
                const Row *r = &sets[s][i];
                if (r->ok)
                    fprintf(f, "%.1f,%.1f ", PX((double)r->T), PY(panel == 0 ? r->ms : r->rss_mib));
            }
            fprintf(f, "\"/>\n");
            char label[64];
            snprintf(label, sizeof label, s == 0 ? "full causal" : "window %d", o->window);
            fprintf(f, "<text x=\"%g\" y=\"%g\" fill=\"%s\">%s</text>\n", x0 + 8, y1 + 16 + 14 * s,
                    colour[s], label);
        }
#undef PX
#undef PY
    }
    fprintf(f, "</svg>\n");
}

static FILE *open_out(const char *prefix, const char *ext) {
    char path[1024];
    snprintf(path, sizeof path, "%s.%s", prefix, ext);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bench_context: cannot write '%s': %s\n", path, strerror(errno));
        exit(1);
    }
    return f;
}

int main(int argc, char **argv) {
    Options o = {"./train", "configs/bench_context.json", "build/bench-context", 10, 4096, 64, 4096,
                 128};
    for (int i = 1; i < argc; i += 2) {  // each option takes one value
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) usage();
        if (!strcmp(a, "--train"))
            o.train = v;
        else if (!strcmp(a, "--config"))
            o.config = v;
        else if (!strcmp(a, "--out"))
            o.out = v;
        else if (!strcmp(a, "--steps"))
            o.steps = int_arg(a, v, 1, 1000);
        else if (!strcmp(a, "--tokens"))
            o.tokens = int_arg(a, v, 1, 1 << 24);
        else if (!strcmp(a, "--min-t"))
            o.min_t = int_arg(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--max-t"))
            o.max_t = int_arg(a, v, 1, 1 << 20);
        else if (!strcmp(a, "--window"))
            o.window = int_arg(a, v, 0, 1 << 20);
        else
            usage();
    }
    Row full[MAX_ROWS], win[MAX_ROWS];
    int n = 0;
    for (int T = o.min_t; T <= o.max_t && n < MAX_ROWS; T *= 2, n++) {
        int B = o.tokens / T > 0 ? o.tokens / T : 1;
        full[n] = (Row){T, B, 0, NAN, NAN, NAN, 0};
        win[n] = (Row){T, B, o.window, NAN, NAN, NAN, 0};
        measure(&o, &full[n]);
        if (o.window > 0 && o.window < T)
            measure(&o, &win[n]);
        else
            win[n] = full[n],
            win[n].window = o.window;  // a window of T keys or more is the causal mask
        fprintf(stderr,
                "T=%d batch=%d: %.1f ms/step (attention %.1f), %.0f MiB; window %d: %.1f ms/step, "
                "%.0f MiB\n",
                T, B, full[n].ms, full[n].attention_ms, full[n].rss_mib, o.window, win[n].ms,
                win[n].rss_mib);
    }
    if (n == 0) usage();
    char cpu[256] = "unknown CPU";
    FILE *c = fopen("/proc/cpuinfo", "r");
    if (c) {
        char line[512];
        while (fgets(line, sizeof line, c))
            if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
                snprintf(cpu, sizeof cpu, "%s", strchr(line, ':') + 2);
                cpu[strcspn(cpu, "\n")] = 0;
                break;
            }
        fclose(c);
    }
    printf("%s --bench=%d, %d tokens per step, on %s (%ld processors online)\n", o.config, o.steps,
           o.tokens, cpu, sysconf(_SC_NPROCESSORS_ONLN));
    write_table(stdout, full, win, n, &o);
    write_noise(stdout, full, win, n, &o);
    FILE *f = open_out(o.out, "md");
    write_table(f, full, win, n, &o);
    write_noise(f, full, win, n, &o);
    fclose(f);
    f = open_out(o.out, "csv");
    write_csv(f, full, win, n, &o);
    fclose(f);
    f = open_out(o.out, "svg");
    write_svg(f, full, win, n, &o);
    fclose(f);
    printf("wrote %s.md, %s.csv and %s.svg\n", o.out, o.out, o.out);
    for (int i = 0; i < n; i++)
        if (!full[i].ok || (o.window > 0 && !win[i].ok)) return 1;
    return 0;
}
