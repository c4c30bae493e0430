// tests/test_config.c: defaults, loading, round trip, overrides and every class of config error.
#define _POSIX_C_SOURCE 200809L
#include "base/config.h"
#include "test.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ----------------------------------------------------------------------------
// helpers

// A fresh mkdtemp directory per test; files written into it are removed by tmp_cleanup.
static char g_dir[64];
static char g_files[8][160];
static int g_nfiles;

static int tmp_setup(void) {
    snprintf(g_dir, sizeof(g_dir), "/tmp/test_config_XXXXXX");
    g_nfiles = 0;
    return mkdtemp(g_dir) != NULL;
}

static void tmp_cleanup(void) {
    for (int i = 0; i < g_nfiles; i++) unlink(g_files[i]);
    rmdir(g_dir);
}

// Write `text` to DIR/name and return the path (valid until tmp_cleanup).
static const char *tmp_file(const char *name, const char *text) {
    if (g_nfiles >= 8) return NULL;
    char *path = g_files[g_nfiles++];
    snprintf(path, sizeof(g_files[0]), "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    ok &= fclose(f) == 0;
    return ok ? path : NULL;
}

// Load JSON text over the defaults, expecting failure with a message containing every one of
// the given fragments (NULL-terminated).
static void expect_json_error(const char *json, const char *frag1, const char *frag2) {
    Config c, before;
    config_defaults(&c);
    before = c;
    char err[512] = "";
    int ok = config_load_json(&c, json, strlen(json), "t.json", err, sizeof(err));
    CHECK_MSG(!ok, "accepted: %s", json);
    CHECK_MSG(strncmp(err, "t.json", 6) == 0, "message lacks origin: %s", err);
    if (frag1) CHECK_MSG(strstr(err, frag1) != NULL, "'%s' not in: %s", frag1, err);
    if (frag2) CHECK_MSG(strstr(err, frag2) != NULL, "'%s' not in: %s", frag2, err);
    CHECK_MSG(strchr(err, '\n') == NULL, "message is not one line: %s", err);
    CHECK_MSG(memcmp(&c, &before, sizeof(c)) == 0, "failed load changed the config: %s", json);
}

static void expect_override_error(const char *arg, const char *frag1, const char *frag2) {
    Config c, before;
    config_defaults(&c);
    before = c;
    char err[512] = "";
    int ok = config_apply_override(&c, arg, err, sizeof(err));
    CHECK_MSG(!ok, "accepted: --%s", arg);
    if (frag1) CHECK_MSG(strstr(err, frag1) != NULL, "'%s' not in: %s", frag1, err);
    if (frag2) CHECK_MSG(strstr(err, frag2) != NULL, "'%s' not in: %s", frag2, err);
    CHECK_MSG(memcmp(&c, &before, sizeof(c)) == 0, "failed override changed the config: --%s", arg);
}

static int load_ok(Config *c, const char *json) {
    char err[512] = "";
    int ok = config_load_json(c, json, strlen(json), "t.json", err, sizeof(err));
    CHECK_MSG(ok, "rejected: %s: %s", json, err);
    return ok;
}

// ----------------------------------------------------------------------------
// tests

static void test_defaults(void) {
    Config c;
    config_defaults(&c);
    CHECK(strcmp(c.name, "") == 0);
    CHECK(c.n_layer == 4 && c.n_head == 4 && c.n_embd == 128 && c.block_size == 64);
    CHECK(strcmp(c.attn_scale_str, "sqrt") == 0);
    CHECK(strcmp(c.init, "gpt2") == 0);
    CHECK(strcmp(c.data_path, "data/default.txt") == 0);
    CHECK(c.val_fraction == 0.1);
    CHECK(c.batch_size == 12 && c.max_steps == 2000);
    CHECK(c.lr == 1e-3 && c.min_lr == 1e-4);
    CHECK(c.warmup_steps == 100 && c.lr_decay_steps == 0);
    CHECK(c.beta1 == 0.9 && c.beta2 == 0.99 && c.eps == 1e-8);
    CHECK(c.weight_decay == 0.1 && c.grad_clip == 1.0);
    CHECK(c.seed == 1337 && c.threads == 0 && c.ckpt_interval == 500 && c.keep_checkpoints == 0);
    CHECK(c.max_bad_steps == 5 && c.spike_zscore == 0 && c.spike_window == 50);
    CHECK(strcmp(c.out_dir, "") == 0);
    CHECK(c.log_interval == 10 && c.eval_interval == 250 && c.eval_steps == 20 &&
          c.attn_interval == 50);
    CHECK(c.sample_tokens == 300 && c.sample_temperature == 0.8 && c.sample_top_k == 40);
    CHECK(strcmp(c.sample_prompt, "\n") == 0);

    char err[256] = "";
    CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s", err);
    CHECK(strcmp(c.name, "run") == 0);
    CHECK(strcmp(c.out_dir, "out/run") == 0);
    CHECK(c.attn_scale == 1.0 / sqrt(32.0));  // "sqrt" resolved once, for head_dim 128 / 4

    // Every default passes its own validation: the defaults written as JSON load back cleanly.
    char *json = config_to_json(&c);
    Config d;
    config_defaults(&d);
    load_ok(&d, json);
    free(json);
}

static void test_valid_file(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    const char *path =
        tmp_file("tiny.json", "{\n"
                              "  \"model\": {\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 64, "
                              "\"attn_scale\": \"none\", \"init\": \"fan_in\"},\n"
                              "  \"data\": {\"path\": \"data/tiny.txt\", \"val_fraction\": 0.05},\n"
                              "  \"train\": {\"lr\": 3e-4, \"min_lr\": 0, \"max_steps\": 10, "
                              "\"seed\": 7, \"spike_zscore\": 4.5},\n"
                              "  \"log\": {},\n"
                              "  \"sample\": {\"tokens\": 0, \"temperature\": 1.0, \"top_k\": 0, "
                              "\"prompt\": \"ROMEO:\"}\n"
                              "}\n");
    CHECK(path != NULL);
    Config c;
    config_defaults(&c);
    char err[512] = "";
    int ok = config_load_file(&c, path, err, sizeof(err));
    CHECK_MSG(ok, "%s", err);
    CHECK(strcmp(c.name, "tiny") == 0);  // no "name": the file's base name
    CHECK(c.n_layer == 2 && c.n_head == 2 && c.n_embd == 64);
    CHECK(c.block_size == 64);  // untouched keys keep their defaults
    CHECK(strcmp(c.init, "fan_in") == 0);
    CHECK(strcmp(c.data_path, "data/tiny.txt") == 0 && c.val_fraction == 0.05);
    CHECK(c.lr == 3e-4 && c.min_lr == 0 && c.max_steps == 10 && c.seed == 7 &&
          c.spike_zscore == 4.5);
    CHECK(c.sample_tokens == 0 && c.sample_temperature == 1.0 && c.sample_top_k == 0);
    CHECK(strcmp(c.sample_prompt, "ROMEO:") == 0);
    CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s", err);
    CHECK(strcmp(c.out_dir, "out/tiny") == 0);
    CHECK(c.attn_scale == 1.0);

    // An explicit "name" wins over the file name.
    path = tmp_file("other.json", "{\"name\": \"custom\", \"train\": {\"out_dir\": \"/tmp/x\"}}");
    config_defaults(&c);
    CHECK_MSG(config_load_file(&c, path, err, sizeof(err)), "%s", err);
    CHECK(strcmp(c.name, "custom") == 0);
    CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s", err);
    CHECK(strcmp(c.out_dir, "/tmp/x") == 0);
    tmp_cleanup();
}

// Resolved JSON -> load -> same Config, byte for byte, and the same JSON again.
static void round_trip(const Config *c) {
    char *json = config_to_json(c);
    Config d;
    config_defaults(&d);
    char err[512] = "";
    int ok = config_load_json(&d, json, strlen(json), "resolved", err, sizeof(err));
    CHECK_MSG(ok, "%s\n%s", err, json);
    CHECK_MSG(config_finalize(&d, err, sizeof(err)), "%s", err);
    CHECK_MSG(memcmp(c, &d, sizeof(d)) == 0, "round trip changed the config:\n%s", json);
    char *again = config_to_json(&d);
    CHECK(strcmp(json, again) == 0);
    free(again);
    free(json);
}

static void test_round_trip(void) {
    Config c;
    char err[512] = "";
    config_defaults(&c);
    CHECK(config_finalize(&c, err, sizeof(err)));
    round_trip(&c);

    config_defaults(&c);
    load_ok(&c,
            "{\"name\": \"rt\", \"model\": {\"attn_scale\": 0.125, \"n_embd\": 96, \"n_head\": 3},"
            " \"train\": {\"lr\": 0.0003, \"min_lr\": 1.2345678901234567e-05, \"eps\": 1e-12, "
            "\"seed\": 2147483647},"
            " \"data\": {\"val_fraction\": 0.30000000000000004},"
            " \"sample\": {\"prompt\": \"a \\\"quoted\\\" \\\\ line\\n\\ttab \\u00e9 \\u0001\"}}");
    CHECK(config_apply_override(&c, "train.grad_clip=0.1", err, sizeof(err)));
    CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s", err);
    CHECK(c.attn_scale == 0.125);
    CHECK(strcmp(c.sample_prompt, "a \"quoted\" \\ line\n\ttab \xc3\xa9 \x01") == 0);
    round_trip(&c);

    // attn_scale as given on the command line in a non-canonical spelling still round-trips.
    CHECK(config_apply_override(&c, "model.attn_scale=.5e0", err, sizeof(err)));
    CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s", err);
    CHECK(c.attn_scale == 0.5);
    round_trip(&c);
    CHECK(config_apply_override(&c, "model.attn_scale=none", err, sizeof(err)));
    CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s", err);
    round_trip(&c);

    // The resolved JSON has the section structure and attn_scale as a string or a number.
    char *json = config_to_json(&c);
    CHECK(strstr(json, "\"model\": {") && strstr(json, "\"sample\": {") &&
          strstr(json, "\"attn_scale\": \"none\""));
    free(json);
}

static void test_overrides(void) {
    Config c;
    config_defaults(&c);
    char err[512] = "";
    CHECK_MSG(config_apply_override(&c, "model.n_layer=8", err, sizeof(err)), "%s", err);
    CHECK_MSG(config_apply_override(&c, "train.lr=2e-3", err, sizeof(err)), "%s", err);
    CHECK_MSG(config_apply_override(&c, "train.seed=-0", err, sizeof(err)), "%s", err);
    CHECK_MSG(config_apply_override(&c, "model.init=fan_in", err, sizeof(err)), "%s", err);
    CHECK_MSG(config_apply_override(&c, "data.path=a=b.txt", err, sizeof(err)), "%s",
              err);  // value may hold '='
    CHECK_MSG(config_apply_override(&c, "name=exp1", err, sizeof(err)), "%s", err);
    CHECK_MSG(config_apply_override(&c, "train.out_dir=", err, sizeof(err)), "%s", err);
    CHECK_MSG(config_apply_override(&c, "model.attn_scale=0.125", err, sizeof(err)), "%s", err);
    CHECK(c.n_layer == 8 && c.lr == 2e-3 && c.seed == 0);
    CHECK(strcmp(c.init, "fan_in") == 0 && strcmp(c.data_path, "a=b.txt") == 0 &&
          strcmp(c.name, "exp1") == 0);
    CHECK(strcmp(c.attn_scale_str, "0.125") == 0);
    CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s", err);
    CHECK(c.attn_scale == 0.125);
    CHECK_MSG(config_apply_override(&c, "model.attn_scale=sqrt", err, sizeof(err)), "%s", err);
    CHECK(strcmp(c.attn_scale_str, "sqrt") == 0);
    CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s", err);
    CHECK(strcmp(c.out_dir, "out/exp1") == 0);
    CHECK(c.attn_scale == 1.0 / sqrt(128.0 / 4.0));
    // model.attn_impl: the two names, and the older ones read as them
    static const char *const impl_names[][2] = {{"engine", "engine"},
                                                {"definition", "definition"},
                                                {"fast", "engine"},
                                                {"reference", "definition"}};
    for (int i = 0; i < 4; i++) {
        char arg[64];
        snprintf(arg, sizeof arg, "model.attn_impl=%s", impl_names[i][0]);
        CHECK_MSG(config_apply_override(&c, arg, err, sizeof(err)), "%s", err);
        CHECK_MSG(strcmp(c.attn_impl, impl_names[i][1]) == 0, "%s gave %s", arg, c.attn_impl);
    }
    CHECK(!config_apply_override(&c, "model.attn_impl=slow", err, sizeof(err)) &&
          strstr(err, "engine, definition"));
    Config old;  // an older configuration, as a checkpoint holds it
    config_defaults(&old);
    load_ok(&old, "{\"model\": {\"attn_impl\": \"reference\"}}");
    CHECK(strcmp(old.attn_impl, "definition") == 0);
}

static void test_invalid_json(void) {
    expect_json_error("{\n  \"model\": {\n    \"n_layer\": 4\n  \"x\": 1}}",
                      "t.json:4:3: invalid JSON", NULL);
    expect_json_error("{\"a\": 1} trailing", "t.json:1:10: invalid JSON", NULL);
    expect_json_error("", "t.json:1:1: invalid JSON", NULL);
    expect_json_error("{\"train\": {\"lr\": NaN}}", "t.json:1:18: invalid JSON", NULL);
    expect_json_error("{\"train\": {\"lr\": Infinity}}", "invalid JSON", NULL);
    expect_json_error("{\"x\\u0000y\": 1}", "t.json:1:4: invalid JSON", "u0000");
    {
        const char text[] = "{}\0{\"model\": 1}";  // an embedded NUL byte inside the given length
        Config c;
        config_defaults(&c);
        char err[256] = "";
        CHECK(!config_load_json(&c, text, sizeof(text) - 1, "t.json", err, sizeof(err)));
        CHECK_MSG(strstr(err, "t.json:1:3: invalid JSON") != NULL, "%s", err);
    }
    expect_json_error("[1, 2]", "top level must be a JSON object, got array", NULL);
    expect_json_error("\"str\"", "top level must be a JSON object, got string", NULL);

    // From a file the message starts with the path.
    if (!tmp_setup()) SKIP("mkdtemp failed");
    const char *path = tmp_file("bad.json", "{\n  \"train\": {\n    \"lr\": 0.1,,\n  }\n}\n");
    Config c;
    config_defaults(&c);
    char err[512] = "", want[256];
    CHECK(!config_load_file(&c, path, err, sizeof(err)));
    snprintf(want, sizeof(want), "%s:3:", path);
    CHECK_MSG(strncmp(err, want, strlen(want)) == 0 && strstr(err, "invalid JSON"), "%s", err);
    tmp_cleanup();
}

static void test_unknown_key(void) {
    expect_json_error("{\"model\": {\"n_embed\": 64}}", "unknown key 'model.n_embed'",
                      "did you mean 'model.n_embd'?");
    expect_json_error("{\"modle\": {}}", "unknown key 'modle'", "did you mean 'model'?");
    expect_json_error("{\"model\": {\"lr\": 1}}", "unknown key 'model.lr'",
                      "did you mean 'train.lr'?");
    expect_json_error("{\"lr\": 1}", "unknown key 'lr'", "did you mean 'train.lr'?");
    expect_json_error("{\"model.n_layer\": 1}", "'model.n_layer'", "nest it");
    expect_json_error("{\"completely_different\": 1}", "unknown key 'completely_different'", NULL);
    expect_json_error("{\"sample\": {\"tokens\": 5, \"max_tokens\": 5}}",
                      "unknown key 'sample.max_tokens'", "did you mean");
}

static void test_duplicate_key(void) {
    expect_json_error("{\"model\": {\"n_layer\": 2, \"n_layer\": 3}}",
                      "duplicate key 'model.n_layer'", NULL);
    expect_json_error("{\"model\": {\"n_layer\": 2}, \"model\": {\"n_head\": 2}}",
                      "duplicate key 'model'", NULL);
    expect_json_error("{\"name\": \"a\", \"name\": \"b\"}", "duplicate key 'name'", NULL);
}

static void test_case_variant_key(void) {
    expect_json_error("{\"model\": {\"N_Layer\": 2}}", "unknown key 'model.N_Layer'",
                      "did you mean 'model.n_layer'?");
    expect_json_error("{\"Model\": {\"n_layer\": 2}}", "unknown key 'Model'",
                      "did you mean 'model'?");
    expect_json_error("{\"NAME\": \"x\"}", "unknown key 'NAME'", "did you mean 'name'?");
    // Not silently the same key as its lower-case twin either.
    expect_json_error("{\"train\": {\"lr\": 0.01, \"LR\": 0.02}}", "unknown key 'train.LR'",
                      "case-sensitive");
}

static void test_wrong_type(void) {
    expect_json_error("{\"train\": {\"lr\": \"0.1\"}}", "'train.lr' must be a number, got string",
                      NULL);
    expect_json_error("{\"model\": {\"n_layer\": true}}",
                      "'model.n_layer' must be an integer, got boolean", NULL);
    expect_json_error("{\"data\": {\"path\": 5}}", "'data.path' must be a string, got number",
                      NULL);
    expect_json_error("{\"name\": null}", "'name' must be a string, got null", NULL);
    expect_json_error("{\"model\": 4}", "'model' must be an object, got number", NULL);
    expect_json_error("{\"model\": {\"n_layer\": {\"deeper\": 1}}}", "'model.n_layer'",
                      "got object");
    expect_json_error("{\"model\": {\"attn_scale\": [1]}}", "'model.attn_scale'", "got array");
    expect_json_error("{\"model\": {\"attn_scale\": \"0.5\"}}", "'model.attn_scale'",
                      "\"sqrt\", \"none\"");
    expect_json_error("{\"model\": {\"init\": \"xavier\"}}",
                      "'model.init' must be one of gpt2, fan_in", "xavier");
}

static void test_out_of_range(void) {
    expect_json_error("{\"model\": {\"n_layer\": 0}}", "'model.n_layer' = 0 is out of range 1..64",
                      NULL);
    expect_json_error("{\"train\": {\"lr\": 20}}", "'train.lr' = 20 is out of range (0, 10]", NULL);
    expect_json_error("{\"train\": {\"lr\": 0}}", "'train.lr' = 0 is out of range (0, 10]", NULL);
    expect_json_error("{\"train\": {\"beta2\": 1}}", "'train.beta2' = 1 is out of range [0, 1)",
                      NULL);
    expect_json_error("{\"data\": {\"val_fraction\": 1}}", "'data.val_fraction'", "(0, 1)");
    expect_json_error("{\"train\": {\"threads\": -1}}", "'train.threads' = -1", "0..1024");
    expect_json_error("{\"sample\": {\"temperature\": -0.5}}", "'sample.temperature' = -0.5",
                      "[0, ");  // 0 is greedy
    expect_json_error("{\"model\": {\"attn_scale\": -0.5}}",
                      "'model.attn_scale' = -0.5 is out of range", NULL);
    expect_json_error("{\"train\": {\"lr\": 1e999}}", "'train.lr' must be a finite number", NULL);
    expect_json_error("{\"data\": {\"path\": \"\"}}", "'data.path' must not be empty", NULL);
}

static void test_non_integer(void) {
    expect_json_error("{\"model\": {\"n_layer\": 3.5}}",
                      "'model.n_layer' must be an integer, got 3.5", NULL);
    expect_json_error("{\"model\": {\"n_layer\": 1e300}}",
                      "'model.n_layer' = 1e+300 is out of range", NULL);
    expect_json_error("{\"train\": {\"seed\": 4294967297}}",
                      "'train.seed' = 4294967297 is out of range", NULL);
    expect_json_error("{\"train\": {\"seed\": -2147483649}}", "'train.seed'", "out of range");
    Config c;
    config_defaults(&c);
    load_ok(&c,
            "{\"model\": {\"n_layer\": 8.0}, \"train\": {\"max_steps\": 1e3}}");  // integral values
                                                                                  // are integers
    CHECK(c.n_layer == 8 && c.max_steps == 1000);
}

static void test_divisibility(void) {
    Config c;
    config_defaults(&c);
    char err[512] = "";
    CHECK(config_apply_override(&c, "model.n_embd=130", err, sizeof(err)));
    CHECK(!config_finalize(&c, err, sizeof(err)));
    CHECK_MSG(strstr(err, "'model.n_embd' (130)") && strstr(err, "'model.n_head' (4)"), "%s", err);
}

// model.attn_window: 0 by default; a window of 1 .. block_size with the causal mask; refused, in
// one line naming the key and the value: negative, larger than block_size, with the mask "zero"
// or "none" (no causal mask to narrow).
static void test_attn_window(void) {
    Config c;
    char err[512] = "";
    config_defaults(&c);
    CHECK(c.attn_window == 0);
    CHECK(config_apply_override(&c, "model.attn_window=64", err, sizeof(err)));
    CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s", err);
    CHECK(c.attn_window == 64);
    char *json = config_to_json(&c);
    CHECK_MSG(strstr(json, "\"attn_window\": 64"), "%s", json);
    Config d;
    config_defaults(&d);
    CHECK_MSG(config_load_json(&d, json, strlen(json), "resolved", err, sizeof(err)) &&
                  config_finalize(&d, err, sizeof(err)),
              "%s", err);
    CHECK(d.attn_window == 64);
    free(json);

    config_defaults(&c);
    CHECK(!config_apply_override(&c, "model.attn_window=-1", err, sizeof(err)));
    CHECK_MSG(strstr(err, "'model.attn_window' = -1 is out of range 0..65536") &&
                  !strchr(err, '\n'),
              "%s", err);

    config_defaults(&c);
    CHECK(config_apply_override(&c, "model.attn_window=65", err, sizeof(err)));
    CHECK(!config_finalize(&c, err, sizeof(err)));
    CHECK_MSG(strstr(err, "'model.attn_window' (65)") && strstr(err, "'model.block_size' (64)") &&
                  !strchr(err, '\n'),
              "%s", err);

    const char *mistakes[] = {"zero", "none"};
    for (int i = 0; i < 2; i++) {
        config_defaults(&c);
        char arg[64];
        snprintf(arg, sizeof arg, "model.attn_mask=%s", mistakes[i]);
        CHECK(config_apply_override(&c, arg, err, sizeof(err)));
        CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s",
                  err);  // no window: the mistake alone is allowed
        CHECK(config_apply_override(&c, "model.attn_window=8", err, sizeof(err)));
        CHECK(!config_finalize(&c, err, sizeof(err)));
        CHECK_MSG(strstr(err, "'model.attn_window' (8)") &&
                      strstr(err, "'model.attn_mask' causal") && strstr(err, mistakes[i]),
                  "%s", err);
    }

    // a JSON file too
    static const char text[] = "{\"model\": {\"block_size\": 16, \"attn_window\": 17}}";
    config_defaults(&c);
    CHECK_MSG(config_load_json(&c, text, strlen(text), "w.json", err, sizeof(err)), "%s", err);
    CHECK(!config_finalize(&c, err, sizeof(err)));
    CHECK_MSG(strstr(err, "'model.attn_window' (17)") && strstr(err, "(16)"), "%s", err);
}

static void test_finalize_checks(void) {
    Config c;
    char err[512] = "";
    config_defaults(&c);
    CHECK(config_apply_override(&c, "train.min_lr=0.01", err, sizeof(err)));
    CHECK(!config_finalize(&c, err, sizeof(err)));
    CHECK_MSG(strstr(err, "'train.min_lr' (0.01)") && strstr(err, "'train.lr' (0.001)"), "%s", err);

    config_defaults(&c);
    CHECK(config_apply_override(&c, "name=a/b", err, sizeof(err)));
    CHECK(!config_finalize(&c, err, sizeof(err)));
    CHECK_MSG(strstr(err, "'name'") && strstr(err, "a/b"), "%s", err);
    config_defaults(&c);
    CHECK(config_apply_override(&c, "name=..", err, sizeof(err)));
    CHECK(!config_finalize(&c, err, sizeof(err)));

    // Warmup longer than the run is allowed (a deliberately short run).
    config_defaults(&c);
    CHECK(config_apply_override(&c, "train.warmup_steps=5000", err, sizeof(err)));
    CHECK_MSG(config_finalize(&c, err, sizeof(err)), "%s", err);

    // Fields set directly in code are validated too.
    config_defaults(&c);
    c.batch_size = 0;
    CHECK(!config_finalize(&c, err, sizeof(err)));
    CHECK_MSG(strstr(err, "'train.batch_size' = 0"), "%s", err);

    // finalize is idempotent.
    config_defaults(&c);
    CHECK(config_finalize(&c, err, sizeof(err)));
    Config d = c;
    CHECK(config_finalize(&d, err, sizeof(err)));
    CHECK(memcmp(&c, &d, sizeof(c)) == 0);
}

static void test_bad_override(void) {
    expect_override_error("model.n_embed=64", "unknown key 'model.n_embed'",
                          "did you mean 'model.n_embd'?");
    expect_override_error("Train.LR=0.1", "unknown key 'Train.LR'", "did you mean 'train.lr'?");
    expect_override_error("model.n_layer", "'--model.n_layer' needs a value", NULL);
    expect_override_error("model=3", "'--model' is a section", NULL);
    expect_override_error("model.n_layer=abc", "'model.n_layer' must be an integer, got 'abc'",
                          NULL);
    expect_override_error("model.n_layer=3.5", "'model.n_layer' must be an integer", NULL);
    expect_override_error("model.n_layer= 4", "'model.n_layer' must be an integer", NULL);
    expect_override_error("model.n_layer=", "'model.n_layer' must be an integer", NULL);
    expect_override_error("model.n_layer=99999999999999999999", "'model.n_layer'",
                          "out of range 1..64");
    expect_override_error("model.n_layer=65", "'model.n_layer' = 65 is out of range 1..64", NULL);
    expect_override_error("train.lr=abc", "'train.lr' must be a number, got 'abc'", NULL);
    expect_override_error("train.lr=0x10", "'train.lr' must be a number", NULL);
    expect_override_error("train.lr=nan", "'train.lr' must be a number", NULL);
    expect_override_error("train.lr=1e999", "'train.lr' must be a finite number", NULL);
    expect_override_error("train.lr=1.0x", "'train.lr' must be a number", NULL);
    expect_override_error("model.attn_scale=half", "'model.attn_scale'", "\"sqrt\", \"none\"");
    expect_override_error("model.attn_scale=0", "'model.attn_scale' = 0 is out of range", NULL);
    expect_override_error("model.init=xavier", "'model.init' must be one of gpt2, fan_in", NULL);
    char arg[400];
    snprintf(arg, sizeof(arg), "name=%0200d", 0);
    expect_override_error(arg, "'name' is too long", "at most 127");
    expect_override_error("sample.prompt=", "'sample.prompt' must not be empty", NULL);
}

static void test_deep_nesting(void) {
    // Far past cJSON's nesting limit of 1000: must be a clean error, not a stack overflow.
    size_t depth = 10000;
    char *deep = malloc(2 * depth + 64);
    CHECK(deep != NULL);
    if (!deep) return;
    size_t n = (size_t)sprintf(deep, "{\"model\": {\"n_layer\": ");
    memset(deep + n, '[', depth);
    memset(deep + n + depth, ']', depth);
    strcpy(deep + n + 2 * depth, "}}");
    expect_json_error(deep, "invalid JSON", "nested deeper");
    memset(deep, '[', depth);
    deep[depth] = '\0';
    expect_json_error(deep, "t.json:1:", "invalid JSON");
    free(deep);
    // Within cJSON's limit but deeper than a section: an ordinary type error.
    expect_json_error("{\"train\": {\"lr\": [[[[1]]]]}}", "'train.lr' must be a number, got array",
                      NULL);
}

static void test_file_errors(void) {
    Config c;
    config_defaults(&c);
    char err[512] = "";
    CHECK(!config_load_file(&c, "/nonexistent/dir/x.json", err, sizeof(err)));
    CHECK_MSG(strstr(err, "cannot read config '/nonexistent/dir/x.json'") &&
                  strstr(err, "No such file"),
              "%s", err);

    if (!tmp_setup()) SKIP("mkdtemp failed");
    CHECK(!config_load_file(&c, g_dir, err, sizeof(err)));  // a directory
    CHECK_MSG(strstr(err, "cannot read config"), "%s", err);

    // Over 16 MB: a sparse file, so the test writes almost nothing.
    const char *big = tmp_file("big.json", "{}");
    CHECK(big && truncate(big, 16 * 1024 * 1024 + 1) == 0);
    CHECK(!config_load_file(&c, big, err, sizeof(err)));
    CHECK_MSG(strstr(err, "larger than 16 MB"), "%s", err);
    // Exactly 16 MB is read (and here fails as JSON: NUL bytes follow the "{}").
    CHECK(truncate(big, 16 * 1024 * 1024) == 0);
    CHECK(!config_load_file(&c, big, err, sizeof(err)));
    CHECK_MSG(strstr(err, "invalid JSON"), "%s", err);

    // A value error from a file names the file and the key.
    const char *path = tmp_file("range.json", "{\"train\": {\"batch_size\": 0}}");
    CHECK(!config_load_file(&c, path, err, sizeof(err)));
    CHECK_MSG(strncmp(err, path, strlen(path)) == 0 && strstr(err, "'train.batch_size' = 0"), "%s",
              err);

    // Error buffers are never overrun; a tiny one gets a cut but terminated message.
    char small[8];
    memset(small, 'x', sizeof(small));
    CHECK(!config_load_file(&c, path, small, sizeof(small)));
    CHECK(memchr(small, '\0', sizeof(small)) != NULL);
    tmp_cleanup();
}

static void test_reference(void) {
    for (int markdown = 0; markdown <= 1; markdown++) {
        FILE *f = tmpfile();
        CHECK(f != NULL);
        if (!f) return;
        config_print_reference(f, markdown);
        long size = ftell(f);
        CHECK(size > 0);
        char *text = malloc((size_t)size + 1);
        rewind(f);
        CHECK(text && fread(text, 1, (size_t)size, f) == (size_t)size);
        text[size] = '\0';
        fclose(f);
        // Every key of the resolved JSON of the defaults (so every key of the table) appears in the
        // reference, as its dotted path followed by a blank or a backquote
        Config c;
        config_defaults(&c);
        char *json = config_to_json(&c);
        cJSON *root = cJSON_Parse(json);
        CHECK(root != NULL);
        int n_keys = 0;
        for (cJSON *sec = root ? root->child : NULL; sec; sec = sec->next) {
            for (cJSON *k = cJSON_IsObject(sec) ? sec->child : sec; k;
                 k = cJSON_IsObject(sec) ? k->next : NULL) {
                char path[160], a[176];
                if (cJSON_IsObject(sec))
                    snprintf(path, sizeof path, "%s.%s", sec->string, k->string);
                else
                    snprintf(path, sizeof path, "%s", sec->string);
                snprintf(a, sizeof a, markdown ? "| `%s` |" : "\n  %s ",
                         path);  // a row of the table
                CHECK_MSG(strstr(text, a) != NULL, "%s missing from the %s reference", path,
                          markdown ? "markdown" : "plain");
                n_keys++;
            }
        }
        CHECK_MSG(n_keys >= 39, "only %d keys in the resolved config", n_keys);
        cJSON_Delete(root);
        free(json);
        if (markdown) CHECK(strstr(text, "| key | type | default | range | meaning |") != NULL);
        CHECK(strstr(text, "gpt2, fan_in") != NULL);
        free(text);
    }
}

const TestCase tests_config[] = {
    {"config_defaults", test_defaults},
    {"config_valid_file", test_valid_file},
    {"config_round_trip", test_round_trip},
    {"config_overrides", test_overrides},
    {"config_invalid_json", test_invalid_json},
    {"config_unknown_key", test_unknown_key},
    {"config_duplicate_key", test_duplicate_key},
    {"config_case_variant_key", test_case_variant_key},
    {"config_wrong_type", test_wrong_type},
    {"config_out_of_range", test_out_of_range},
    {"config_non_integer", test_non_integer},
    {"config_divisibility", test_divisibility},
    {"config_finalize_checks", test_finalize_checks},
    {"config_attn_window", test_attn_window},
    {"config_bad_override", test_bad_override},
    {"config_deep_nesting", test_deep_nesting},
    {"config_file_errors", test_file_errors},
    {"config_reference", test_reference},
    {NULL, NULL},
};
