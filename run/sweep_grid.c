// run/sweep_grid.c: the grid of --sweep, the reading of sweep.json and the learning-rate
// sensitivity (see run/sweep.h): no I/O, so the tests and the fuzz target call it directly.
#define _POSIX_C_SOURCE 200809L
#include "run/sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/common.h"       // refuse, parse_decimal_text
#include "base/config_keys.h"  // config_find_key

int sweep_parse(const char *spec, SweepGrid *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    const char *eq = strchr(spec, '=');
    size_t klen = eq ? (size_t)(eq - spec) : strlen(spec);
    static const char *const SHAPE_KEYS[] = {"model.n_layer", "model.n_head", "model.n_embd",
                                             "model.block_size", NULL};
    for (int i = 0; SHAPE_KEYS[i]; i++)
        if (strlen(SHAPE_KEYS[i]) == klen && strncmp(spec, SHAPE_KEYS[i], klen) == 0)
            return refuse(
                err, errlen,
                "--sweep %.*s: it changes a tensor's shape, and every run of a sweep starts from"
                " the same weights: sweep train.lr (--sweep train.lr=A..B/N)",
                (int)klen, spec);
    if (klen != 8 || strncmp(spec, "train.lr", 8) != 0 || !eq)
        return refuse(
            err, errlen,
            "--sweep expects train.lr=A..B/N (N log-spaced learning rates from A to B), got '%s'",
            spec);
    snprintf(g->key, sizeof g->key, "train.lr");
    const char *p = eq + 1, *dots = strstr(p, ".."), *slash = dots ? strchr(dots + 2, '/') : NULL;
    if (!dots || !slash)
        return refuse(err, errlen,
                      "--sweep expects train.lr=A..B/N, e.g. train.lr=1e-3..1e-1/5, got '%s'",
                      spec);
    char a[64], b[64], n[32];
    if ((size_t)(dots - p) >= sizeof a || (size_t)(slash - dots - 2) >= sizeof b ||
        strlen(slash + 1) >= sizeof n)
        return refuse(err, errlen, "--sweep: '%s' is too long for train.lr=A..B/N", spec);
    snprintf(a, sizeof a, "%.*s", (int)(dots - p), p);
    snprintf(b, sizeof b, "%.*s", (int)(slash - dots - 2), dots + 2);
    snprintf(n, sizeof n, "%s", slash + 1);
    // the numbers as --train.lr takes them: plain decimal, no space, no hexadecimal
    long long cnt = 0;
    if (!parse_decimal_text(a, &g->lo) || !parse_decimal_text(b, &g->hi) || !isfinite(g->lo) ||
        !isfinite(g->hi) || g->lo <= 0 || g->hi <= 0)
        return refuse(err, errlen,
                      "--sweep %s: A and B must be learning rates > 0 (finite decimal numbers)",
                      spec);
    if (g->lo >= g->hi)
        return refuse(err, errlen, "--sweep %s: the range must go up, A < B (got %g..%g)", spec,
                      g->lo, g->hi);
    if (!parse_integer_text(n, &cnt) || cnt < 2 || cnt > SWEEP_MAX_RUNS)
        return refuse(err, errlen,
                      "--sweep %s: N must be a whole number of points from 2 to %d, got '%s'", spec,
                      SWEEP_MAX_RUNS, n);
    g->n = (int)cnt;
    return 1;
}

const char *const COMPARABLE_KEYS[] = {"model.attn_scale",
                                       "model.attn_impl",
                                       "model.attn_mask",
                                       "model.softmax_axis",
                                       "train.lr",
                                       "train.min_lr",
                                       "train.warmup_steps",
                                       "train.lr_decay_steps",
                                       "train.beta1",
                                       "train.beta2",
                                       "train.eps",
                                       "train.weight_decay",
                                       "train.grad_clip",
                                       "train.max_bad_steps",
                                       "train.spike_zscore",
                                       "model.qk_norm",
                                       "train.z_loss",
                                       "train.spike_window",
                                       NULL};

int sweep_owned_key(const char *arg) {
    static const char *const OWNED[] = {
        "--train.lr=", "--train.min_lr=", "--train.out_dir=", "--train.overwrite=", NULL};
    for (int k = 0; OWNED[k]; k++)
        if (strncmp(arg, OWNED[k], strlen(OWNED[k])) == 0) return 1;
    return 0;
}

void sweep_state_free(SweepState *st) {
    for (int i = 0; i < st->n_args; i++) free(st->args[i]);
    free(st->args);
    st->args = NULL;
    st->n_args = 0;
}

// A string item of at most max - 1 bytes into out.
static int state_string(const cJSON *root, const char *key, char *out, size_t max,
                        const char *origin, char *err, size_t errlen) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsString(x) || strlen(x->valuestring) >= max)
        return refuse(err, errlen,
                      "'%s': \"%s\" is %s; expected a string of at most %zu bytes, as ./train "
                      "--sweep writes it",
                      origin, key, x ? "not such a string" : "missing", max - 1);
    memcpy(out, x->valuestring, strlen(x->valuestring) + 1);
    return 1;
}

static int state_number(const cJSON *root, const char *key, double *out, const char *origin,
                        char *err, size_t errlen) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
        return refuse(err, errlen,
                      "'%s': \"%s\" is %s; expected a finite number, as ./train --sweep writes it",
                      origin, key, x ? "not a number" : "missing");
    *out = x->valuedouble;
    return 1;
}

// A variant's name is a directory name under the sweep's, and a value --compare takes (a number
// or a word: letters, digits, '.', '_', '+', '-'), which sweep.csv, sweep.svg and report.md
// hold as they are: not "." or "..".
static int directory_name(const char *name) {
    return name[0] &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") ==
               strlen(name) &&
           strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

static int state_variants(const cJSON *root, SweepState *st, const char *origin, char *err,
                          size_t errlen) {
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(root, "variants");
    int n = cJSON_IsArray(vs) ? cJSON_GetArraySize(vs) : -1;
    if (n < 1 || n > SWEEP_MAX_VARIANTS)
        return refuse(err, errlen, "'%s': \"variants\" %s; expected an array of 1 to %d variants",
                      origin,
                      n < 0    ? "is not an array"
                      : n == 0 ? "is empty"
                               : "has too many",
                      SWEEP_MAX_VARIANTS);
    if (n == 1 && st->compare_key[0])
        return refuse(err, errlen,
                      "'%s': \"compare_key\" is '%s' with one variant; expected \"\" (a comparison "
                      "has 2 to %d)",
                      origin, st->compare_key, SWEEP_MAX_VARIANTS);
    if (n > 1) {
        const char *k = st->compare_key;
        char probe[80];
        snprintf(probe, sizeof probe, "--%s=", k);
        int comparable = 0;
        for (int i = 0; COMPARABLE_KEYS[i]; i++) comparable |= strcmp(COMPARABLE_KEYS[i], k) == 0;
        if (!comparable || sweep_owned_key(probe))
            return refuse(
                err, errlen,
                "'%s': \"compare_key\" '%s' is not a config key a sweep's --compare varies", origin,
                k);
    }
    const cJSON *it;
    st->nv = 0;
    cJSON_ArrayForEach(it, vs) {
        SweepVariant *v = &st->v[st->nv];
        char what[48];
        snprintf(what, sizeof what, "variant %d", st->nv + 1);
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name"),
                    *ov = cJSON_GetObjectItemCaseSensitive(it, "override");
        if (!cJSON_IsString(nm) || !cJSON_IsString(ov) ||
            strlen(nm->valuestring) >= sizeof v->name ||
            strlen(ov->valuestring) >= sizeof v->override)
            return refuse(
                err, errlen,
                "'%s': %s is not {\"name\": NAME, \"override\": KEY=VALUE} with a name of at most"
                " %zu bytes",
                origin, what, sizeof v->name - 1);
        snprintf(v->name, sizeof v->name, "%s", nm->valuestring);
        snprintf(v->override, sizeof v->override, "%s", ov->valuestring);
        if (!directory_name(v->name))
            return refuse(err, errlen,
                          "'%s': %s's name '%.80s' is not a directory name as --compare makes them "
                          "(letters, digits, '.', '_', '+',"
                          " '-'; not '.' or '..')",
                          origin, what, v->name);
        for (int j = 0; j < st->nv; j++)
            if (strcmp(st->v[j].name, v->name) == 0)
                return refuse(err, errlen, "'%s': the variant name '%s' is given twice", origin,
                              v->name);
        if (n == 1 && (strcmp(v->name, "base") != 0 || v->override[0]))
            return refuse(
                err, errlen,
                "'%s': the one variant is '%s' with override '%s'; expected \"base\" with none",
                origin, v->name, v->override);
        size_t kl = strlen(st->compare_key);
        if (n > 1 && (strncmp(v->override, st->compare_key, kl) != 0 || v->override[kl] != '=' ||
                      !v->override[kl + 1]))
            return refuse(err, errlen, "'%s': %s's override '%s' does not set the compared key %s",
                          origin, what, v->override, st->compare_key);
        st->nv++;
    }
    return 1;
}

static int state_args(const cJSON *root, SweepState *st, const char *origin, char *err,
                      size_t errlen) {
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(root, "args");
    int n = cJSON_IsArray(args) ? cJSON_GetArraySize(args) : -1;
    if (n < 0 || n > SWEEP_MAX_ARGS)
        return refuse(err, errlen, "'%s': \"args\" %s; expected an array of at most %d arguments",
                      origin, n < 0 ? "is not an array" : "is too long", SWEEP_MAX_ARGS);
    st->args = calloc((size_t)n + 1, sizeof(char *));
    if (!st->args) return refuse(err, errlen, "out of memory reading '%s'", origin);
    int configs = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, args) {
        const char *a = cJSON_IsString(it) ? it->valuestring : NULL;
        if (!a || strlen(a) >= 4096)
            return refuse(err, errlen, "'%s': argument %d is not a string of at most 4095 bytes",
                          origin, st->n_args + 1);
        // what a sweep writes: its config file, and --KEY=VALUE for config keys it does not set
        // itself
        const char *eq = strchr(a, '=');
        char key[160] = "";
        if (strncmp(a, "--", 2) == 0 && eq && (size_t)(eq - a - 2) < sizeof key)
            snprintf(key, sizeof key, "%.*s", (int)(eq - a - 2), a + 2);
        int config_file = a[0] && a[0] != '-' && configs++ == 0;
        if (!config_file && (!key[0] || config_find_key(key) < 0 || sweep_owned_key(a)))
            return refuse(err, errlen,
                          "'%s': argument %d '%.200s' is not one a sweep stores (its config file "
                          "and --KEY=VALUE"
                          " config overrides other than train.lr, train.min_lr, train.out_dir and "
                          "train.overwrite)",
                          origin, st->n_args + 1, a);
        st->args[st->n_args] = strdup(a);
        if (!st->args[st->n_args]) return refuse(err, errlen, "out of memory reading '%s'", origin);
        st->n_args++;
    }
    return 1;
}

int sweep_state_parse(const char *text, size_t len, const char *origin, SweepState *st, char *err,
                      size_t errlen) {
    memset(st, 0, sizeof *st);
    cJSON *root = cJSON_ParseWithLength(text, len);
    int ok = 0;
    double n = 0, lo = 0, hi = 0;
    char key[32];
    if (!cJSON_IsObject(root)) {
        refuse(err, errlen,
               "'%s' is not a sweep's state (expected the JSON object ./train --sweep writes)",
               origin);
        goto done;
    }
    if (!state_string(root, "cwd", st->cwd, sizeof st->cwd, origin, err, errlen) ||
        !state_string(root, "key", key, sizeof key, origin, err, errlen) ||
        !state_string(root, "compare_key", st->compare_key, sizeof st->compare_key, origin, err,
                      errlen) ||
        !state_string(root, "command", st->command, sizeof st->command, origin, err, errlen) ||
        !state_number(root, "lo", &lo, origin, err, errlen) ||
        !state_number(root, "hi", &hi, origin, err, errlen) ||
        !state_number(root, "n", &n, origin, err, errlen) ||
        !state_number(root, "min_lr_ratio", &st->min_lr_ratio, origin, err, errlen))
        goto done;
    if (st->cwd[0] != '/') {
        refuse(err, errlen, "'%s': \"cwd\" '%s' is not an absolute directory", origin, st->cwd);
        goto done;
    }
    if (strcmp(key, "train.lr") != 0) {
        refuse(err, errlen, "'%s': \"key\" is '%s'; expected train.lr, the key a sweep varies",
               origin, key);
        goto done;
    }
    // the grid as sweep_parse takes it
    if (!(lo > 0 && lo < hi)) {
        refuse(err, errlen, "'%s': \"lo\" %g and \"hi\" %g are not learning rates with 0 < lo < hi",
               origin, lo, hi);
        goto done;
    }
    if (n != floor(n) || n < 2 || n > SWEEP_MAX_RUNS) {
        refuse(err, errlen, "'%s': \"n\" is %g; expected a whole number of points from 2 to %d",
               origin, n, SWEEP_MAX_RUNS);
        goto done;
    }
    if (!(st->min_lr_ratio >= 0 && st->min_lr_ratio <= 1)) {
        refuse(err, errlen,
               "'%s': \"min_lr_ratio\" is %g; expected train.min_lr / train.lr, from 0 to 1",
               origin, st->min_lr_ratio);
        goto done;
    }
    snprintf(st->grid.key, sizeof st->grid.key, "train.lr");
    st->grid.lo = lo;
    st->grid.hi = hi;
    st->grid.n = (int)n;
    if (!state_variants(root, st, origin, err, errlen)) goto done;
    if (st->grid.n * st->nv > SWEEP_MAX_RUNS) {
        refuse(err, errlen,
               "'%s': the grid is %d points x %d variants = %d runs; a sweep has at most %d",
               origin, st->grid.n, st->nv, st->grid.n * st->nv, SWEEP_MAX_RUNS);
        goto done;
    }
    ok = state_args(root, st, origin, err, errlen);
done:
    cJSON_Delete(root);
    if (!ok) sweep_state_free(st);
    return ok;
}

// lr_i = A (B/A)^(i/(N-1)): equal steps in log lr
double sweep_lr(const SweepGrid *g, int i) {
    if (i == 0) return g->lo;
    if (i == g->n - 1) return g->hi;
    return g->lo * pow(g->hi / g->lo, (double)i / (double)(g->n - 1));
}

// S = (1/N) sum_i min(L_i, L_0) - min_i L_i, a diverged run's L_i taken as L_0
double sweep_sensitivity(const double *loss, int n, double loss0) {
    double sum = 0, best = INFINITY;
    for (int i = 0; i < n; i++) {
        double l = isfinite(loss[i]) && loss[i] < loss0 ? loss[i] : loss0;
        sum += l;
        if (l < best) best = l;
    }
    return n > 0 ? sum / n - best : NAN;
}
