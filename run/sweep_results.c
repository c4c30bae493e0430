// run/sweep_results.c: a sweep's runs read back from their directories (run/sweep_runs.h): each
// file opened only when it is a regular file of bounded size, every value checked against what
// the run itself writes, and a run's summary.json or checkpoint.bin refused when its config is not
// that run's (a file copied from another sweep).
#define _POSIX_C_SOURCE 200809L
#include "run/sweep_runs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/common.h"     // die, fopen_regular, parse_integer_text
#include "run/checkpoint.h"  // a stopped run's config

// A file of the sweep's read back whole: a regular file only (a FIFO would block, /dev/zero never
// ends) of at most max bytes. NULL with *why set when it cannot be: errno's text, what the file
// is instead, or "is larger than ..." (why is a buffer of whylen bytes).
char *sweep_read_bounded(const char *path, size_t max, size_t *len, char *why, size_t whylen) {
    uint64_t size;
    const char *reason;
    FILE *f = fopen_regular(path, &size, &reason);
    if (!f) {
        snprintf(why, whylen, "%s", reason);
        return NULL;
    }
    char *buf = size <= max ? malloc((size_t)size + 2) : NULL;
    size_t n = buf ? fread(buf, 1, (size_t)size + 1, f) : 0;  // one byte more: a file that grew
    fclose(f);
    if (!buf || n > max) {
        free(buf);
        snprintf(why, whylen, "is larger than %zu bytes, more than a sweep writes there", max);
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

// Whether dir/name exists (lstat: a dangling symbolic link counts).
int sweep_path_exists(const char *dir, const char *name) {
    char p[1600];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

// ---------------------------------------------------------------------------------------------
// reading a run's files

static double json_num(const cJSON *root, const char *key) {
    const cJSON *x = cJSON_GetObjectItem(root, key);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

// The column index of `name` in a CSV header line (-1 when absent).
static int csv_col(const char *header, const char *name) {
    int col = 0;
    size_t n = strlen(name);
    for (const char *p = header; *p; col++) {
        const char *e = strpbrk(p, ",\n\r");
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return col;
        if (!e || *e != ',') break;
        p = e + 1;
    }
    return -1;
}

static double csv_field(const char *line, int col) {
    const char *p = line;
    for (int c = 0; c < col && p; c++) {
        p = strchr(p, ',');
        if (p) p++;
    }
    if (!p || *p == ',' || *p == '\n' || *p == 0) return NAN;
    return strtod(p, NULL);
}

// A log of the run's read back: NULL when it was never written; a file by that name that is not
// a regular file is refused (exit 2).
static FILE *open_run_file(const char *path) {
    uint64_t size;
    const char *why;
    struct stat st;
    if (lstat(path, &st) != 0) return NULL;
    FILE *f = fopen_regular(path, &size, &why);
    if (!f) die(EXIT_USAGE, "cannot read the sweep's file '%s': %s", path, why);
    return f;
}

// A log's step field (its first): an integer from 0 to the run's max_steps, else the log is
// damaged (exit 2, naming the file and line).
static long csv_step(const char *line, const char *path, long lineno, long max_steps) {
    char *end;
    errno = 0;
    long step = strtol(line, &end, 10);
    if (end == line || *end != ',' || errno == ERANGE || step < 0 || step > max_steps)
        die(EXIT_USAGE,
            "'%s' line %ld: the step '%.20s' is not an integer from 0 to %ld, as the run writes "
            "it: a damaged"
            " log (remove the run's directory to train the run again)",
            path, lineno, line, max_steps);
    return step;
}

// The max attention logit of attention.csv: its column score_absmax, the largest |S| of the
// scaled scores before the softmax over the probe rows, per head (docs/scaling.md's measure; the
// signed max_logit beside it is smaller whenever the most negative score is the larger in size).
// Lines of any length are read whole (getline).
static void read_run_logs(SweepRun *r) {
    char path[1400];
    char *line = NULL;
    size_t cap_line = 0;
    snprintf(path, sizeof path, "%s/metrics.csv", r->dir);
    FILE *f = open_run_file(path);
    if (f) {
        if (getline(&line, &cap_line, f) > 0) {
            int lc = csv_col(line, "loss");
            if (getline(&line, &cap_line, f) > 0) {  // step 1: the loss before any update
                csv_step(line, path, 2, r->max_steps);
                r->loss0 = csv_field(line, lc);
            }
        }
        fclose(f);
    }
    free(r->steps);
    free(r->logit);
    r->steps = NULL;
    r->logit = NULL;
    r->n_probes = 0;
    r->max_logit = NAN;
    r->min_entropy = NAN;
    snprintf(path, sizeof path, "%s/attention.csv", r->dir);
    f = open_run_file(path);
    if (!f || getline(&line, &cap_line, f) <= 0) {
        if (f) fclose(f);
        free(line);
        return;
    }
    int cl = csv_col(line, "score_absmax");
    int ce = csv_col(line, "entropy_norm");
    int cap = 0;
    for (long lineno = 2; getline(&line, &cap_line, f) > 0; lineno++) {
        long step = csv_step(line, path, lineno, r->max_steps);
        double lg = csv_field(line, cl), en = csv_field(line, ce);
        if (r->n_probes == 0 || r->steps[r->n_probes - 1] != step) {
            if (r->n_probes == cap) {
                cap = cap ? 2 * cap : 64;
                long *ns = realloc(r->steps, (size_t)cap * sizeof *ns);
                if (ns) r->steps = ns;
                double *nl = realloc(r->logit, (size_t)cap * sizeof *nl);
                if (nl) r->logit = nl;
                if (!ns || !nl) die(EXIT_RUNTIME, "out of memory reading '%s'", path);
            }
            r->steps[r->n_probes] = step;
            r->logit[r->n_probes] = -INFINITY;
            r->n_probes++;
        }
        // the max over the layers and heads at this probe, and over the whole run
        if (lg > r->logit[r->n_probes - 1]) r->logit[r->n_probes - 1] = lg;
        if (isfinite(lg) && !(lg <= r->max_logit)) r->max_logit = lg;
        if (isfinite(en) && !(en >= r->min_entropy)) r->min_entropy = en;
    }
    free(line);
    fclose(f);
}

// The first key of the run's config (want, config_to_json's object) that the file's config
// (got) does not hold as it is, with both values, into what; 1 when every key matches. Where
// the run writes is left out (train.out_dir: a sweep's directory may have moved since; and
// train.overwrite, which a resumed run does not repeat).
static int config_matches(const cJSON *want, const cJSON *got, char *what, size_t n) {
    const cJSON *sec, *item;
    cJSON_ArrayForEach(sec, want) {
        const cJSON *gsec = cJSON_GetObjectItemCaseSensitive(got, sec->string);
        int object = cJSON_IsObject(sec);
        const cJSON *first = object ? sec->child : sec;
        for (item = first; item; item = object ? item->next : NULL) {
            if (object && strcmp(sec->string, "train") == 0 &&
                (strcmp(item->string, "out_dir") == 0 || strcmp(item->string, "overwrite") == 0))
                continue;
            const cJSON *g = object ? cJSON_GetObjectItemCaseSensitive(gsec, item->string) : gsec;
            if (g && cJSON_Compare(item, g, 1)) continue;
            char *ws = cJSON_PrintUnformatted(item), *gs = g ? cJSON_PrintUnformatted(g) : NULL;
            snprintf(what, n, "%s%s%s is %.60s, expected %.60s", sec->string, object ? "." : "",
                     object ? item->string : "", gs ? gs : "missing", ws ? ws : "?");
            free(ws);
            free(gs);
            return 0;
        }
    }
    return 1;
}

// Refuse a file in run r's directory that is another run's: "'PATH' is not run K/N's (...)".
static _Noreturn void foreign_run(const Sweep *s, int k, const char *path, const char *what) {
    const SweepRun *r = &s->runs[k];
    die(EXIT_USAGE,
        "'%s' is not run %d/%d's (%s, lr %g): %s; it is another sweep's or run's (remove '%s' to "
        "train this"
        " run again)",
        path, k + 1, s->n_runs, s->v[r->variant].name, r->lr, what, r->dir);
}

// A run's config text (a summary's "config", a checkpoint's record) against the run's.
static void check_run_config(const Sweep *s, int k, const char *path, const cJSON *got) {
    char what[256];
    cJSON *want = cJSON_Parse(s->runs[k].config_json);
    if (!want) die(EXIT_RUNTIME, "out of memory checking '%s'", path);
    int ok = cJSON_IsObject(got) && config_matches(want, got, what, sizeof what);
    cJSON_Delete(want);
    if (!ok) foreign_run(s, k, path, cJSON_IsObject(got) ? what : "it holds no config");
}

void sweep_check_checkpoint(const Sweep *s, int k, const char *path) {
    Checkpoint ck;
    char err[1200];
    if (!checkpoint_open(&ck, path, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    cJSON *got = cJSON_Parse(ck.config_json);
    checkpoint_close(&ck);
    check_run_config(s, k, path, got);
    cJSON_Delete(got);
}

void sweep_read_run(const Sweep *s, int k) {
    SweepRun *r = (SweepRun *)&s->runs[k];
    char path[1400], why[160];
    r->done = r->diverged = 0;
    read_run_logs(r);
    snprintf(path, sizeof path, "%s/sweep_diverged.txt", r->dir);
    if (sweep_path_exists(r->dir, "sweep_diverged.txt")) {
        char *text = sweep_read_bounded(path, 64, NULL, why, sizeof why);
        if (!text) die(EXIT_USAGE, "cannot read the sweep's file '%s': %s", path, why);
        long long step = -1;
        text[strcspn(text, "\n")] = 0;
        int ok = parse_integer_text(text, &step) && step >= 0 && step <= r->max_steps;
        free(text);
        if (!ok)
            die(EXIT_USAGE,
                "'%s' is not the step at which run %d/%d diverged (an integer from 0 to %ld, as "
                "the sweep"
                " writes it)",
                path, k + 1, s->n_runs, r->max_steps);
        r->done = r->diverged = 1;
        r->diverged_step = (long)step;
        r->train_loss = r->val_loss = NAN;
        return;
    }
    snprintf(path, sizeof path, "%s/summary.json", r->dir);
    if (!sweep_path_exists(r->dir, "summary.json")) return;
    size_t len = 0;
    char *text = sweep_read_bounded(path, SWEEP_STATE_MAX_BYTES, &len, why, sizeof why);
    if (!text) die(EXIT_USAGE, "cannot read the sweep's file '%s': %s", path, why);
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(root))
        die(EXIT_USAGE, "'%s' is not a run's summary (expected the JSON object ./train writes)",
            path);
    // the run it stands for: its config, its steps, its losses
    check_run_config(s, k, path, cJSON_GetObjectItemCaseSensitive(root, "config"));
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(root, "steps");
    r->train_loss = json_num(root, "train_loss");
    r->val_loss = json_num(root, "val_loss");
    r->seconds = json_num(root, "wall_s");
    char what[160];
    if (!cJSON_IsNumber(steps) || steps->valuedouble != floor(steps->valuedouble) ||
        steps->valuedouble < 0 || steps->valuedouble > r->max_steps ||
        (isfinite(r->val_loss) && steps->valuedouble != r->max_steps)) {
        snprintf(what, sizeof what, "its \"steps\" is %.20g, expected %ld",
                 cJSON_IsNumber(steps) ? steps->valuedouble : NAN, r->max_steps);
        cJSON_Delete(root);
        foreign_run(s, k, path, what);
    }
    r->done = 1;
    if (!isfinite(r->val_loss)) {
        r->diverged = 1;
        r->diverged_step = (long)steps->valuedouble;
    }
    cJSON_Delete(root);
}
