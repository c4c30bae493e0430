// tests/test_robust.c: hostile and damaged inputs below the programs: checkpoints validated
// before anything is built from them (crafted headers, dimensions that disagree with the config
// record or the tensors, trailing data, truncation, non-finite values, an all-zero random state),
// temporary files that are unique and never left behind, FIFOs and devices refused without
// blocking, the math helpers defined for every float, strict numbers and UTF-8 configs.
// Runs in the float32 and the float64 suite.
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/checkpoint.h"
#include "base/common.h"
#include "base/config.h"
#include "base/data.h"
#include "base/outfile.h"
#include "kernels/fastmath.h"
#include "kernels/model_engine.h"  // the engine's GELU
#include "base/rng.h"
#include "craft.h"
#include "test.h"

// ---------------------------------------------------------------------------------------------
// crafting tensor files (tests/craft.h)

int craft_load(Craft *c, const char *path) {
    TFile f;
    char err[512];
    memset(c, 0, sizeof *c);
    if (!tfile_read(&f, path, "TGPTCKPT", err, sizeof err)) {
        fprintf(stderr, "  %s\n", err);
        return 0;
    }
    c->recs = calloc((size_t)f.n_records + 16, sizeof(CraftRec));
    c->n = f.n_records;
    for (int i = 0; i < f.n_records; i++) {
        const TRecord *r = &f.records[i];
        CraftRec *o = &c->recs[i];
        snprintf(o->name, sizeof o->name, "%s", r->name);
        o->dtype = r->dtype;
        o->ndim = r->ndim;
        memcpy(o->shape, r->shape, sizeof o->shape);
        size_t esz = r->dtype == DT_U8 ? 1 : r->dtype == DT_F32 || r->dtype == DT_I32 ? 4 : 8;
        o->bytes = r->count * esz;
        o->data = malloc(o->bytes ? o->bytes : 1);
        memcpy(o->data, r->data, o->bytes);
    }
    tfile_free(&f);
    return 1;
}

CraftRec *craft_find(Craft *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->recs[i].name, name) == 0) return &c->recs[i];
    return NULL;
}

void craft_set(CraftRec *r, int dtype, size_t count, const void *data, size_t elem_bytes) {
    free(r->data);
    r->dtype = dtype;
    r->ndim = 1;
    r->shape[0] = (uint32_t)count;
    r->bytes = count * elem_bytes;
    r->data = malloc(r->bytes ? r->bytes : 1);
    memcpy(r->data, data, r->bytes);
}

void craft_drop(Craft *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->recs[i].name, name) == 0) {
            free(c->recs[i].data);
            memmove(&c->recs[i], &c->recs[i + 1], sizeof(CraftRec) * (size_t)(c->n - i - 1));
            c->n--;
            return;
        }
}

int craft_write(const Craft *c, const char *path) {
    char err[512];
    TWriter *w = tw_open(path, "TGPTCKPT", err, sizeof err);
    if (!w) {
        fprintf(stderr, "  %s\n", err);
        return 0;
    }
    for (int i = 0; i < c->n; i++) {
        const CraftRec *r = &c->recs[i];
        tw_record(w, r->name, r->dtype, r->ndim, r->shape, r->data);
    }
    if (!tw_commit(w, err, sizeof err)) {
        fprintf(stderr, "  %s\n", err);
        return 0;
    }
    return 1;
}

void craft_free(Craft *c) {
    for (int i = 0; i < c->n; i++) free(c->recs[i].data);
    free(c->recs);
    memset(c, 0, sizeof *c);
}

// ---------------------------------------------------------------------------------------------
// fixtures

static char g_rdir[64];

static void rdir_make(void) {
    snprintf(g_rdir, sizeof g_rdir, "/tmp/tgpt_robust_XXXXXX");
    if (!mkdtemp(g_rdir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static void rdir_remove(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_rdir);
    if (system(cmd) != 0) fprintf(stderr, "  (could not remove %s)\n", g_rdir);
}

static const char *rpath(const char *name) {
    static char buf[4][256];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_rdir, name);
    return buf[k];
}

// The names in g_rdir that contain `part`.
static int count_entries(const char *part) {
    DIR *d = opendir(g_rdir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && strstr(e->d_name, part)) n++;
    closedir(d);
    return n;
}

// A small valid checkpoint (V 8, T 8, L 2, NH 2, C 8; the config record agrees) at path.
static void write_good_checkpoint(const char *path) {
    Config cfg;
    char err[512];
    config_defaults(&cfg);
    cfg.n_layer = 2;
    cfg.n_head = 2;
    cfg.n_embd = 8;
    cfg.block_size = 8;
    CHECK_MSG(config_finalize(&cfg, err, sizeof err), "%s", err);
    char *json = config_to_json(&cfg);
    ModelDims d = {8, 8, 2, 2, 8, QK_NORM_NONE};
    GPT m;
    gpt_build(&m, &d, attention_causal((real)cfg.attn_scale), 1, 8);
    Rng rng;
    rng_seed(&rng, 5);
    gpt_init(&m, INIT_GPT2, &rng);
    for (size_t i = 0; i < m.n_params; i++) {
        m.adam_m[i] = (real)1e-3;
        m.adam_v[i] = (real)1e-6;
    }
    uint32_t chars[8];
    for (int i = 0; i < 8; i++) chars[i] = (uint32_t)('a' + i);
    Vocab v = {8, chars};
    TrainState st = {10, {{0}}, 2.5, 1, 0};
    rng_seed(&st.rng, 11);
    CHECK_MSG(checkpoint_save(path, &m, json, &v, &st, err, sizeof err), "%s", err);
    gpt_free(&m);
    free(json);
}

// checkpoint_open must refuse path with a message containing both needles (NULL: any).
static void expect_refused(const char *path, const char *n1, const char *n2, const char *what) {
    Checkpoint ck;
    char err[1024] = "";
    int ok = checkpoint_open(&ck, path, err, sizeof err);
    if (ok) checkpoint_close(&ck);
    CHECK_MSG(!ok, "%s: the checkpoint was accepted", what);
    CHECK_MSG(!ok && strchr(err, '\n') == NULL, "%s: the message is not one line: %s", what, err);
    if (n1) CHECK_MSG(strstr(err, n1) != NULL, "%s: message lacks '%s': %s", what, n1, err);
    if (n2) CHECK_MSG(strstr(err, n2) != NULL, "%s: message lacks '%s': %s", what, n2, err);
}

// Load the good checkpoint, let edit() change it, write it as name, and expect it refused.
typedef void (*EditFn)(Craft *c);
static void refused_after(EditFn edit, const char *n1, const char *n2, const char *what) {
    Craft c;
    CHECK(craft_load(&c, rpath("good.bin")));
    edit(&c);
    CHECK(craft_write(&c, rpath("bad.bin")));
    craft_free(&c);
    expect_refused(rpath("bad.bin"), n1, n2, what);
}

static void set_i64(Craft *c, const char *rec, int index, int64_t v) {
    CraftRec *r = craft_find(c, rec);
    memcpy(r->data + 8 * (size_t)index, &v, 8);
}

static void set_config(Craft *c, const char *json) {
    craft_set(craft_find(c, "config"), DT_U8, strlen(json), json, 1);
}

// The good checkpoint's config text with one "key": value replaced (e.g. "\"n_layer\": 2").
static void replace_in_config(Craft *c, const char *from, const char *to) {
    CraftRec *r = craft_find(c, "config");
    char *text = calloc(r->bytes + strlen(to) + 1, 1);
    memcpy(text, r->data, r->bytes);
    char *at = strstr(text, from);
    CHECK_MSG(at != NULL, "'%s' not in the config record", from);
    if (at) {
        char *out = calloc(r->bytes + strlen(to) + 1, 1);
        size_t pre = (size_t)(at - text);
        memcpy(out, text, pre);
        strcpy(out + pre, to);
        strcat(out, at + strlen(from));
        set_config(c, out);
        free(out);
    }
    free(text);
}

// Set element `index` of a float tensor record (float32 or float64) to x.
static void set_value(Craft *c, const char *rec, size_t index, double x) {
    CraftRec *r = craft_find(c, rec);
    if (r->dtype == DT_F32) {
        float v = (float)x;
        memcpy(r->data + 4 * index, &v, 4);
    } else
        memcpy(r->data + 8 * index, &x, 8);
}

// Run fn in a child process that an alarm kills after `seconds`: returns the child's exit code
// (0 when every CHECK in it held), or -1 when it hung or crashed.
static int in_child(void (*fn)(void), int seconds) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        alarm((unsigned)seconds);
        g_test_failed = 0;
        fn();
        fflush(stderr);
        _exit(g_test_failed ? 1 : 0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(st))
        fprintf(stderr, "  the child died of signal %d (SIGALRM = %d: it hung)\n", WTERMSIG(st),
                SIGALRM);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// ---------------------------------------------------------------------------------------------
// checkpoints: validated before anything is built

static void test_good_checkpoint_opens(void) {
    rdir_make();
    write_good_checkpoint(rpath("good.bin"));
    Checkpoint ck;
    char err[1024];
    CHECK_MSG(checkpoint_open(&ck, rpath("good.bin"), err, sizeof err), "%s", err);
    CHECK(ck.has_optimizer && ck.state.step == 10 && ck.state.skipped_steps == 1 &&
          ck.dims.n_layer == 2);
    CHECK_MSG(
        checkpoint_check_memory(&ck, 1, ck.dims.block_size, rpath("good.bin"), err, sizeof err),
        "%s", err);
    GPT m;
    gpt_build(&m, &ck.dims, attention_causal(1), 1, ck.dims.block_size);
    CHECK_MSG(checkpoint_restore(&ck, &m, rpath("good.bin"), err, sizeof err), "%s", err);
    gpt_free(&m);
    checkpoint_close(&ck);
    // +inf best_val_loss (nothing evaluated yet) is a valid state
    Craft c;
    CHECK(craft_load(&c, rpath("good.bin")));
    set_value(&c, "best_val_loss", 0, INFINITY);
    CHECK(craft_write(&c, rpath("inf.bin")));
    craft_free(&c);
    CHECK_MSG(checkpoint_open(&ck, rpath("inf.bin"), err, sizeof err), "%s", err);
    checkpoint_close(&ck);
    rdir_remove();
}

static void edit_dims_layers(Craft *c) { set_i64(c, "dims", 2, 3); }
static void edit_huge_header(Craft *c) {
    // the crafted header of the hunt: large dimensions, the config record agreeing, but the
    // tensors of the small model (building it first would allocate gigabytes)
    set_i64(c, "dims", 1, 65536);
    set_i64(c, "dims", 2, 64);
    set_i64(c, "dims", 3, 64);
    set_i64(c, "dims", 4, 8192);
    replace_in_config(c, "\"n_layer\": 2", "\"n_layer\": 64");
    replace_in_config(c, "\"n_head\": 2", "\"n_head\": 64");
    replace_in_config(c, "\"n_embd\": 8", "\"n_embd\": 8192");
    replace_in_config(c, "\"block_size\": 8", "\"block_size\": 65536");
}
static void edit_layers_everywhere(Craft *c) {
    set_i64(c, "dims", 2, 3);
    replace_in_config(c, "\"n_layer\": 2", "\"n_layer\": 3");
}
static void edit_block_everywhere(Craft *c) {
    set_i64(c, "dims", 1, 16);
    replace_in_config(c, "\"block_size\": 8", "\"block_size\": 16");
}
static void edit_extra_tensor(Craft *c) {
    c->recs[c->n] = *craft_find(c, "lnf_b");
    CraftRec *r = &c->recs[c->n++];
    snprintf(r->name, sizeof r->name, "layer2.ln1_w");
    unsigned char *copy = malloc(r->bytes);
    memcpy(copy, r->data, r->bytes);
    r->data = copy;
}
static void edit_no_second_moments(Craft *c) {
    for (int i = c->n - 1; i >= 0; i--)
        if (strncmp(c->recs[i].name, "adam_v.", 7) == 0) craft_drop(c, c->recs[i].name);
}
static void edit_heads(Craft *c) { set_i64(c, "dims", 3, 3); }
static void edit_vocab_count(Craft *c) {
    uint32_t seven[7] = {'a', 'b', 'c', 'd', 'e', 'f', 'g'};
    craft_set(craft_find(c, "vocab"), DT_I32, 7, seven, 4);
}

static void test_inconsistent_dims_refused(void) {
    rdir_make();
    write_good_checkpoint(rpath("good.bin"));
    refused_after(edit_dims_layers, "inconsistent", "n_layer 3 but its config record says 2",
                  "dims vs config record");
    refused_after(edit_huge_header, "inconsistent", "'wte'",
                  "huge dims, config agreeing, small tensors");
    refused_after(edit_layers_everywhere, "inconsistent", "parameter tensors",
                  "dims and config vs tensors");
    refused_after(edit_block_everywhere, "inconsistent", "'wpe'", "block_size vs wpe");
    refused_after(edit_extra_tensor, "inconsistent", "parameter tensors", "an extra tensor");
    refused_after(edit_no_second_moments, "inconsistent", "AdamW second moments",
                  "first moments only");
    refused_after(edit_heads, "head count", NULL, "n_head not dividing n_embd");
    refused_after(edit_vocab_count, "inconsistent", "vocabulary size", "vocab record vs dims");
    rdir_remove();
}

static void test_trailing_data_and_truncation(void) {
    rdir_make();
    write_good_checkpoint(rpath("good.bin"));
    FILE *f = fopen(rpath("good.bin"), "rb");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len + 64);
    CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    struct {
        const char *name;
        long keep;
        const char *append;
        const char *n1, *n2;
    } cases[] = {
        {"appended text", len, "some garbage\n", "13 bytes of trailing data", "appended"},
        {"one byte appended", len, "x", "1 bytes of trailing data", NULL},
        {"cut in half", len / 2, "", "truncated", NULL},
        {"cut inside the CRC", len - 2, "", "truncated", NULL},
        {"cut after the last record", len - 4, "", "truncated", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        f = fopen(rpath("damaged.bin"), "wb");
        fwrite(buf, 1, (size_t)cases[i].keep, f);
        fputs(cases[i].append, f);
        fclose(f);
        expect_refused(rpath("damaged.bin"), cases[i].n1, cases[i].n2, cases[i].name);
    }
    // a bit flipped inside the data is neither
    buf[len / 2] ^= 0x04;
    f = fopen(rpath("damaged.bin"), "wb");
    fwrite(buf, 1, (size_t)len, f);
    fclose(f);
    expect_refused(rpath("damaged.bin"), "corrupt", "CRC", "a flipped bit");
    free(buf);
    rdir_remove();
}

static void edit_nan_param(Craft *c) { set_value(c, "wte", 3, NAN); }
static void edit_inf_moment(Craft *c) { set_value(c, "adam_m.lnf_b", 0, INFINITY); }
static void edit_nan_second(Craft *c) { set_value(c, "adam_v.layer1.wq", 5, NAN); }
static void edit_negative_second(Craft *c) { set_value(c, "adam_v.wpe", 2, -1e-3); }

static void test_non_finite_refused(void) {
    rdir_make();
    write_good_checkpoint(rpath("good.bin"));
    refused_after(edit_nan_param, "non-finite", "'wte'", "a NaN parameter");
    refused_after(edit_inf_moment, "non-finite", "'adam_m.lnf_b'", "an infinite first moment");
    refused_after(edit_nan_second, "non-finite", "'adam_v.layer1.wq'", "a NaN second moment");
    refused_after(edit_negative_second, "negative second moment", "'adam_v.wpe'",
                  "a negative second moment");
    rdir_remove();
}

static void edit_zero_rng(Craft *c) { memset(craft_find(c, "rng")->data, 0, 32); }
static void edit_nan_best(Craft *c) { set_value(c, "best_val_loss", 0, NAN); }
static void edit_negative_best(Craft *c) { set_value(c, "best_val_loss", 0, -1.0); }
static void edit_minus_inf_best(Craft *c) { set_value(c, "best_val_loss", 0, -INFINITY); }
static void edit_negative_step(Craft *c) { set_i64(c, "state", 0, -1); }
static void edit_huge_step(Craft *c) { set_i64(c, "state", 0, (int64_t)1 << 40); }
static void edit_skipped_beyond(Craft *c) { set_i64(c, "state", 1, 11); }

static void test_restored_state_validated(void) {
    rdir_make();
    write_good_checkpoint(rpath("good.bin"));
    refused_after(edit_zero_rng, "all-zero random state", NULL, "all-zero RNG");
    refused_after(edit_nan_best, "best_val_loss", "nan", "NaN best_val_loss");
    refused_after(edit_negative_best, "best_val_loss", NULL, "negative best_val_loss");
    refused_after(edit_minus_inf_best, "best_val_loss", NULL, "-inf best_val_loss");
    refused_after(edit_negative_step, "step count", NULL, "negative step");
    refused_after(edit_huge_step, "step count", NULL, "step beyond train.max_steps' limit");
    refused_after(edit_skipped_beyond, "step count", NULL, "more skipped steps than steps");
    rdir_remove();
}

static void edit_config_not_json(Craft *c) { set_config(c, "{\"model\": {\"n_layer\": 2,,}}"); }
static void edit_config_not_utf8(Craft *c) {
    replace_in_config(c, "\"name\": \"run\"", "\"name\": \"r\xff\xfeun\"");
}
static void edit_config_surrogate(Craft *c) {
    replace_in_config(c, "\"name\": \"run\"", "\"name\": \"\\ud800\"");
}
static void edit_config_nul(Craft *c) {
    CraftRec *r = craft_find(c, "config");
    r->data[3] = 0;
}
static void edit_config_unknown_key(Craft *c) {
    replace_in_config(c, "\"n_layer\"", "\"n_layers\"");
}
static void edit_config_type(Craft *c) {
    int64_t zero = 0;
    craft_set(craft_find(c, "config"), DT_I64, 1, &zero, 8);
}

static void test_config_record_validated(void) {
    rdir_make();
    write_good_checkpoint(rpath("good.bin"));
    refused_after(edit_config_not_json, "invalid config record", "invalid JSON",
                  "config record not JSON");
    refused_after(edit_config_not_utf8, "invalid config record", "UTF-8",
                  "config record not UTF-8");
    refused_after(edit_config_surrogate, "invalid config record", NULL, "a lone surrogate escape");
    refused_after(edit_config_nul, "invalid config record", "NUL", "a NUL in the config record");
    refused_after(edit_config_unknown_key, "invalid config record", "n_layers", "an unknown key");
    refused_after(edit_config_type, "header record", NULL, "a config record of the wrong type");
    rdir_remove();
}

static void set_vocab(Craft *c, uint32_t first, uint32_t last) {
    uint32_t v[8] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
    v[0] = first;
    v[7] = last;
    craft_set(craft_find(c, "vocab"), DT_I32, 8, v, 4);
}
static void edit_vocab_surrogate(Craft *c) { set_vocab(c, 'a', 0xD800); }
static void edit_vocab_beyond(Craft *c) { set_vocab(c, 'a', 0x110000); }
static void edit_vocab_unsorted(Craft *c) { set_vocab(c, 'a', 'b'); }
static void edit_vocab_nul(Craft *c) { set_vocab(c, 0, 'h'); }
static void edit_wte_int(Craft *c) { craft_find(c, "wte")->dtype = DT_I32; }

static void test_vocab_and_types_validated(void) {
    rdir_make();
    write_good_checkpoint(rpath("good.bin"));
    refused_after(edit_vocab_surrogate, "invalid vocabulary", "0xD800", "a surrogate code point");
    refused_after(edit_vocab_beyond, "invalid vocabulary", "0x110000", "beyond U+10FFFF");
    refused_after(edit_vocab_unsorted, "invalid vocabulary", NULL, "unsorted");
    refused_after(edit_vocab_nul, "invalid vocabulary", NULL, "U+0000");
    if (sizeof(real) == 4)
        refused_after(edit_wte_int, "unsupported element type", "'wte'", "an int32 tensor");
    rdir_remove();
}

// The writer refuses what the reader would, and leaves no file behind.
static void test_save_refuses_invalid_state(void) {
    rdir_make();
    ModelDims d = {8, 8, 1, 1, 8, QK_NORM_NONE};
    GPT m;
    gpt_build(&m, &d, attention_causal(1), 1, 8);
    uint32_t chars[8] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
    Vocab v = {8, chars};
    char err[512];
    TrainState zero = {0, {{0}}, INFINITY, 0, 0};
    CHECK(!checkpoint_save(rpath("z.bin"), &m, "{}", &v, &zero, err, sizeof err));
    CHECK_MSG(strstr(err, "refusing") && strstr(err, "all-zero random state"), "%s", err);
    TrainState nan_best = {0, {{1, 2, 3, 4}}, NAN, 0, 0};
    CHECK(!checkpoint_save(rpath("z.bin"), &m, "{}", &v, &nan_best, err, sizeof err));
    CHECK_MSG(strstr(err, "best_val_loss"), "%s", err);
    CHECK(count_entries("z.bin") == 0);
    gpt_free(&m);
    rdir_remove();
}

// ./sample and ./lab get ./train's memory check: a model too large for the machine is refused
// from its dimensions alone.
static void test_memory_check(void) {
    Checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.dims = (ModelDims){0x110000, 65536, 64, 256, 8192, QK_NORM_NONE};
    char err[1024] = "";
    CHECK(!checkpoint_check_memory(&ck, 1, 65536, "huge.bin", err, sizeof err));
    CHECK_MSG(strstr(err, "huge.bin") && strstr(err, "GiB"), "%s", err);
    ck.dims = (ModelDims){8, 8, 1, 1, 8, QK_NORM_NONE};
    CHECK_MSG(checkpoint_check_memory(&ck, 1, 8, "small.bin", err, sizeof err), "%s", err);
    CHECK(!memory_fits(1e30, "a test", err, sizeof err) && strstr(err, "a test needs"));
    CHECK(!memory_fits(NAN, "a test", err, sizeof err));
}

// ---------------------------------------------------------------------------------------------
// temporary files

static void test_temp_files_unique_and_removed(void) {
    rdir_make();
    char err[512];
    const char *path = rpath("ck.bin");
    TWriter *a = tw_open(path, "TGPTCKPT", err, sizeof err),
            *b = tw_open(path, "TGPTCKPT", err, sizeof err);
    CHECK(a && b);
    CHECK_MSG(count_entries("ck.bin.tmp.") == 2,
              "two writers of one path must have two temporary files");
    uint32_t shape[1] = {3};
    if (a) {
        tw_record(a, "x", DT_U8, 1, shape, "abc");
        CHECK(tw_commit(a, err, sizeof err));
    }
    tw_abort(b);
    CHECK(count_entries("ck.bin.tmp") == 0 && count_entries("ck.bin") == 1);
    // a target that is not a regular file (here a directory) is refused before anything is written
    mkdir(rpath("dir.bin"), 0777);
    TWriter *c = tw_open(rpath("dir.bin"), "TGPTCKPT", err, sizeof err);
    CHECK_MSG(c == NULL && strstr(err, "dir.bin") && strstr(err, "is a directory"), "%s",
              c ? "(accepted)" : err);
    if (c) tw_abort(c);
    CHECK(count_entries("dir.bin.tmp") == 0);
    // a commit whose target became something else meanwhile removes its temporary file
    c = tw_open(rpath("late.bin"), "TGPTCKPT", err, sizeof err);
    CHECK(c != NULL);
    mkdir(rpath("late.bin"), 0777);
    if (c) CHECK_MSG(!tw_commit(c, err, sizeof err) && strstr(err, "is a directory"), "%s", err);
    CHECK(count_entries("late.bin.tmp") == 0);
    rdir_remove();
}

static void touch(const char *name) {
    FILE *f = fopen(rpath(name), "w");
    if (f) fclose(f);
}

// exit() (die) while a writer is open removes its temporary file. (The child says it wrote with
// a file, not its exit code, which LeakSanitizer may change at exit.)
static void child_exits_while_writing(void) {
    char err[512];
    TWriter *w = tw_open(rpath("ck.bin"), "TGPTCKPT", err, sizeof err);
    if (w && count_entries("ck.bin.tmp.") == 1) touch("child_was_writing");
    exit(1);
}

static void test_temp_removed_on_exit(void) {
    rdir_make();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) child_exits_while_writing();
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK_MSG(WIFEXITED(st) && count_entries("child_was_writing") == 1,
              "the child did not write (status %d)", st);
    CHECK_MSG(count_entries("ck.bin") == 0, "exit() left the temporary file");
    rdir_remove();
}

static void test_remove_stale_temps(void) {
    rdir_make();
    char name[128], err[512];
    touch("checkpoint.bin.tmp.999999999.0");  // a process that cannot exist
    snprintf(name, sizeof name, "best.bin.tmp.%ld.3", (long)getpid());
    touch(name);                  // ours, but no writer of ours has it open
    touch("checkpoint.bin");      // not temporary files of this program:
    touch("checkpoint.bin.tmp");  // no pid: a name alone is not enough
    touch("checkpoint.bin.tmp.backup");
    touch("notes.tmp");
    touch("x.tmp.12a.0");
    touch("notes.txt.tmp.999999999.0");              // the pattern, but not of a tensor file
    touch("checkpoint.bin.tmp.1.0");                 // pid 1 runs: its writer may be live
    mkdir(rpath("best.bin.tmp.999999999.1"), 0777);  // the pattern, but a directory
    TWriter *open_one = tw_open(rpath("live.bin"), "TGPTCKPT", err, sizeof err);
    int removed = checkpoint_remove_stale_temps(g_rdir, err, sizeof err);
    CHECK_MSG(removed == 2, "removed %d", removed);
    CHECK(count_entries("checkpoint.bin.tmp.999999999") == 0 &&
          count_entries("best.bin.tmp.") == 1);
    CHECK(count_entries("checkpoint.bin") == 4 && count_entries("notes.tmp") == 1 &&
          count_entries("x.tmp.12a.0") == 1);
    CHECK(count_entries("notes.txt.tmp.999999999.0") == 1 &&
          count_entries("checkpoint.bin.tmp.1.0") == 1);
    CHECK_MSG(count_entries("live.bin.tmp.") == 1, "the open writer's file was removed");
    tw_abort(open_one);
    CHECK(checkpoint_remove_stale_temps("/nonexistent/dir", err, sizeof err) == -1 &&
          strstr(err, "/nonexistent/dir"));
    rdir_remove();
}

// The one writer (base/outfile.h): a regular file replaced whole, keeping its permissions; a
// symbolic link (to a file or dangling), a directory or a FIFO refused with nothing written or
// created through it; a cancelled or failed file leaves the target as it was; the temporary
// file's name pattern is parsed exactly.
static void test_one_writer(void) {
    rdir_make();
    char err[1024];
    FILE *f = out_begin(rpath("a.txt"), 0, err, sizeof err);
    CHECK_MSG(f != NULL, "%s", err);
    if (f) {
        fputs("first\n", f);
        CHECK_MSG(count_entries("a.txt") == 1 && count_entries("a.txt.tmp.") == 1,
                  "not written beside the target");
        CHECK(out_end(f, err, sizeof err));
    }
    CHECK(chmod(rpath("a.txt"), 0600) == 0);
    f = out_begin(rpath("a.txt"), 0, err, sizeof err);
    if (f) {
        fputs("second\n", f);
        CHECK(out_end(f, err, sizeof err));
    }
    struct stat st;
    CHECK(stat(rpath("a.txt"), &st) == 0 && (st.st_mode & 0777) == 0600);
    char buf[64] = "";
    FILE *r = fopen(rpath("a.txt"), "r");
    if (r) {
        if (!fgets(buf, sizeof buf, r)) buf[0] = 0;
        fclose(r);
    }
    CHECK_MSG(strcmp(buf, "second\n") == 0, "%s", buf);
    // cancelled: the target stays, no temporary file
    f = out_begin(rpath("a.txt"), 0, err, sizeof err);
    if (f) {
        fputs("third\n", f);
        out_cancel(f);
    }
    r = fopen(rpath("a.txt"), "r");
    if (r) {
        if (!fgets(buf, sizeof buf, r)) buf[0] = 0;
        fclose(r);
    }
    CHECK(strcmp(buf, "second\n") == 0 && count_entries(".tmp") == 0);
    // symbolic links: to a file, and dangling; neither is followed
    CHECK(symlink(rpath("a.txt"), rpath("to_a")) == 0 &&
          symlink(rpath("nowhere.txt"), rpath("dangling")) == 0);
    f = out_begin(rpath("to_a"), OUT_DASH, err, sizeof err);
    CHECK_MSG(!f && strstr(err, "is a symbolic link") && strstr(err, "to_a"), "%s",
              f ? "(accepted)" : err);
    f = out_begin(rpath("dangling"), 0, err, sizeof err);
    CHECK_MSG(!f && strstr(err, "is a symbolic link (to '"), "%s", f ? "(accepted)" : err);
    int was_empty;
    f = out_append(rpath("dangling"), &was_empty, err, sizeof err);
    CHECK_MSG(!f && strstr(err, "symbolic link"), "%s", f ? "(accepted)" : err);
    CHECK(count_entries("nowhere") == 0 && lstat(rpath("to_a"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(!out_check_target(rpath("to_a"), err, sizeof err) &&
          out_check_target(rpath("a.txt"), err, sizeof err) &&
          out_check_target(rpath("new.txt"), err, sizeof err));
    // a log appended to: created empty, then continued
    f = out_append(rpath("log.csv"), &was_empty, err, sizeof err);
    CHECK(f && was_empty);
    if (f) {
        fputs("h\n", f);
        fclose(f);
    }
    f = out_append(rpath("log.csv"), &was_empty, err, sizeof err);
    CHECK(f && !was_empty);
    if (f) fclose(f);
    // a target that became a directory before the end: refused, the temporary file removed
    f = out_begin(rpath("late"), 0, err, sizeof err);
    CHECK(f != NULL && mkdir(rpath("late"), 0777) == 0);
    if (f) CHECK_MSG(!out_end(f, err, sizeof err) && strstr(err, "is a directory"), "%s", err);
    CHECK(count_entries("late.tmp") == 0);
    // the temporary file's name, exactly TARGET.tmp.<pid>.<n>
    static const struct {
        const char *name;
        size_t target;
        long pid;
    } names[] = {{"metrics.csv.tmp.123.0", 11, 123},
                 {"a.tmp.1.99", 1, 1},
                 {"x.tmp.b.tmp.7.2", 7, 7},
                 {"metrics.csv.tmp", 0, 0},
                 {"metrics.csv.tmp.123", 0, 0},
                 {"metrics.csv.tmp.12a.0", 0, 0},
                 {"metrics.csv.tmp.123.x", 0, 0},
                 {".tmp.1.0", 0, 0},
                 {"m.tmp.0.0", 0, 0},
                 {"m.tmp.1234567890.0", 0, 0},
                 {"summary.json.tmp.backup", 0, 0},
                 {"m.tmp..0", 0, 0},
                 {"m.tmp.1.", 0, 0}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        long pid = 0;
        size_t t = out_temp_target(names[i].name, &pid);
        CHECK_MSG(t == names[i].target && (!t || pid == names[i].pid), "%s: target %zu, pid %ld",
                  names[i].name, t, pid);
    }
    rdir_remove();
}

// ---------------------------------------------------------------------------------------------
// nothing blocks: FIFOs and devices are refused before any read

static void fifo_checks(void) {
    const char *fifo = rpath("fifo");
    uint64_t size;
    const char *why = NULL;
    char err[1024] = "";
    FILE *f = fopen_regular(fifo, &size, &why);
    CHECK_MSG(!f && why && strstr(why, "FIFO"), "%s", why ? why : "(accepted)");
    f = fopen_regular("/dev/zero", &size, &why);
    CHECK_MSG(!f && why && strstr(why, "character device"), "%s", why ? why : "(accepted)");
    f = fopen_regular(g_rdir, &size, &why);
    CHECK_MSG(!f && why && strstr(why, "s a directory"), "%s", why ? why : "(accepted)");
    touch("regular");
    f = fopen_regular(rpath("regular"), &size, &why);
    CHECK(f && size == 0);
    if (f) fclose(f);
    // the one writer refuses a target that is not a regular file, before anything is written
    f = out_begin(fifo, 0, err, sizeof err);
    CHECK_MSG(!f && strstr(err, "is a FIFO (named pipe), not a regular file") && strstr(err, fifo),
              "%s", f ? "(accepted)" : err);
    f = out_begin("/dev/null", OUT_DASH, err, sizeof err);
    CHECK_MSG(!f && strstr(err, "is a character device"), "%s", f ? "(accepted)" : err);
    f = out_begin(g_rdir, 0, err, sizeof err);
    CHECK_MSG(!f && strstr(err, "is a directory"), "%s", f ? "(accepted)" : err);
    int was_empty;
    f = out_append(fifo, &was_empty, err, sizeof err);
    CHECK_MSG(!f && strstr(err, "FIFO"), "%s", f ? "(accepted)" : err);
    CHECK(count_entries("fifo.tmp") == 0);
    // every loader of a user path
    Dataset ds;
    CHECK(!dataset_load(&ds, fifo, 0.1, 3, err, sizeof err) && strstr(err, "FIFO") &&
          strstr(err, fifo));
    CHECK(!dataset_load(&ds, "/dev/zero", 0.1, 3, err, sizeof err) &&
          strstr(err, "character device"));
    Config cfg;
    config_defaults(&cfg);
    CHECK(!config_load_file(&cfg, fifo, err, sizeof err) && strstr(err, "FIFO"));
    CHECK(!config_load_file(&cfg, "/dev/zero", err, sizeof err) && strstr(err, "character device"));
    Checkpoint ck;
    CHECK(!checkpoint_open(&ck, fifo, err, sizeof err) && strstr(err, "FIFO"));
    CHECK(!checkpoint_open(&ck, "/dev/zero", err, sizeof err) && strstr(err, "character device"));
    TFile tf;
    CHECK(!tfile_read(&tf, fifo, "TGPTDUMP", err, sizeof err) && strstr(err, "FIFO"));
}

static void test_fifo_and_devices_refused(void) {
    rdir_make();
    if (mkfifo(rpath("fifo"), 0600) != 0) {
        rdir_remove();
        SKIP("mkfifo failed: %s", strerror(errno));
    }
    CHECK_MSG(in_child(fifo_checks, 20) == 0, "a FIFO or device check failed or blocked");
    rdir_remove();
}

// ---------------------------------------------------------------------------------------------
// the math helpers, defined for every float (the sanitizer build, make test-asan, traps on
// undefined behaviour such as the shift of a negative exponent that fast_exp(NaN) once did)

static void test_fastmath_every_input(void) {
    static const double inputs[] = {
        0.0,  -0.0,  1e-45, -1e-45,  1e-38,    1.0,      -1.0,      2.5, -2.5, 30,   -30,
        86.9, -86.9, -87.0, -87.5,   88.0,     88.5,     89,        -89, 100,  -100, 1e4,
        -1e4, 1e30,  -1e30, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, NAN, -NAN};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        volatile real x = (real)inputs[i];  // not folded at compile time
        real e = fast_exp(x), r = fast_erf(x);
        if (isnan(x)) {
            CHECK_MSG(isnan(e) && isnan(r), "fast_exp/fast_erf(NaN) = %g / %g", (double)e,
                      (double)r);
            continue;
        }
        CHECK_MSG(e >= 0 && !isnan(e), "fast_exp(%g) = %g", (double)x, (double)e);
        CHECK_MSG(r >= -1 && r <= 1, "fast_erf(%g) = %g", (double)x, (double)r);
        if (isinf(x)) CHECK_MSG(r == (x > 0 ? 1 : -1), "fast_erf(%g) = %g", (double)x, (double)r);
        if (x == INFINITY) CHECK_MSG(e > (real)1e38, "fast_exp(inf) = %g", (double)e);
        if (x == -INFINITY) CHECK_MSG(e < (real)1e-37, "fast_exp(-inf) = %g", (double)e);
        // in range, the helpers stay the accurate approximations they were
        if (fabs((double)x) <= 80) {
            CHECK_MSG(fabs((double)e - exp((double)x)) <= 1e-6 * exp((double)x),
                      "fast_exp(%g) = %.9g", (double)x, (double)e);
            CHECK_MSG(fabs((double)r - erf((double)x)) <= 1e-6, "fast_erf(%g) = %.9g", (double)x,
                      (double)r);
        }
    }
}

// GELU's two exponentials take fast_exp_nonpositive, which must be fast_exp bit for bit on every
// input it gets (x <= 0, -inf included): over every 97th float bit pattern of the negative half
// and both zeros. Its NaN comes out finite, and fast_erf and GELU still give NaN.
static void test_fastmath_nonpositive_exp_same_bits(void) {
#ifdef REAL_DOUBLE
    SKIP("the float64 build uses libm's exp for both");
#else
    long differ = 0, checked = 0;
    for (uint64_t u = 0x80000000u; u <= 0xff800000u; u += 97) {
        uint32_t bits = (uint32_t)u;
        float x;
        memcpy(&x, &bits, sizeof x);
        float a = fast_exp(x), b = fast_exp_nonpositive(x);
        checked++;
        if (memcmp(&a, &b, sizeof a) != 0 && differ++ < 3)
            fprintf(stderr, "  x = %.9g: %.9g against %.9g\n", (double)x, (double)a, (double)b);
    }
    float zero = 0.0f, minus_inf = -INFINITY;
    float e0 = fast_exp(zero), n0 = fast_exp_nonpositive(zero), ei = fast_exp(minus_inf),
          ni = fast_exp_nonpositive(minus_inf);
    CHECK_MSG(differ == 0 && memcmp(&e0, &n0, sizeof e0) == 0 && memcmp(&ei, &ni, sizeof ei) == 0,
              "fast_exp_nonpositive differs from fast_exp on %ld of %ld inputs", differ, checked);
    volatile float nan_in = NAN;
    CHECK_MSG(isnan(fast_erf(nan_in)), "fast_erf(NaN) = %g", (double)fast_erf(nan_in));
    real out, dgelu, x_nan = nan_in;
    gelu_engine_forward(&out, &dgelu, &x_nan, 1);
    CHECK_MSG(isnan(out) && isnan(dgelu), "GELU(NaN) = %g, GELU'(NaN) = %g", (double)out,
              (double)dgelu);
#endif
}

// ---------------------------------------------------------------------------------------------
// loops bounded on restored data

static void rng_zero_state(void) {
    Rng z;
    memset(&z, 0, sizeof z);
    uint64_t ns[] = {3, 7, 1000, (uint64_t)1 << 63 | 1};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) CHECK(rng_below(&z, ns[i]) < ns[i]);
}

// the unbounded rejection loop rng_below had: the bound changes no draw of a working state
static uint64_t below_reference(Rng *r, uint64_t n) {
    if (n <= 1) return 0;
    const uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t x = rng_next(r);
        if (x >= threshold) return x % n;
    }
}

static void test_rng_below_bounded(void) {
    CHECK_MSG(in_child(rng_zero_state, 10) == 0, "rng_below on the all-zero state did not return");
    Rng a, b;
    rng_seed(&a, 42);
    rng_seed(&b, 42);
    uint64_t ns[] = {2, 3, 65, 1000003, ((uint64_t)1 << 63) + 1, UINT64_MAX};
    for (int i = 0; i < 30000; i++) {
        uint64_t n = ns[i % 6];
        uint64_t x = rng_below(&a, n), y = below_reference(&b, n);
        if (x != y) {
            CHECK_MSG(x == y, "draw %d differs: %llu vs %llu", i, (unsigned long long)x,
                      (unsigned long long)y);
            break;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// strict text

static void test_strict_numbers(void) {
    static const struct {
        const char *s;
        int ok;
        long long v;
    } ints[] = {
        {"0", 1, 0},   {"16", 1, 16}, {"+5", 1, 5},
        {"-3", 1, -3}, {"007", 1, 7}, {"", 0, 0},
        {" 5", 0, 0},  {"5 ", 0, 0},  {"0x10", 0, 0},
        {"2.7", 0, 0}, {"1e3", 0, 0}, {"-", 0, 0},
        {"+", 0, 0},   {"5a", 0, 0},  {"inf", 0, 0},
        {"--5", 0, 0}, {"\t5", 0, 0}, {"99999999999999999999999", 1, 9223372036854775807LL},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        long long v = -42;
        int ok = parse_integer_text(ints[i].s, &v);
        CHECK_MSG(ok == ints[i].ok && (!ok || v == ints[i].v),
                  "parse_integer_text('%s') = %d, %lld", ints[i].s, ok, v);
    }
    static const struct {
        const char *s;
        int ok;
        double v;
    } nums[] = {
        {"0.8", 1, 0.8},  {"1e-3", 1, 1e-3}, {".5", 1, 0.5}, {"5.", 1, 5.0}, {"-2", 1, -2},
        {"+1E2", 1, 100}, {"", 0, 0},        {" 1", 0, 0},   {"1 ", 0, 0},   {"0x1", 0, 0},
        {"inf", 0, 0},    {"nan", 0, 0},     {"1e", 0, 0},   {"e5", 0, 0},   {"1-2", 0, 0},
        {".", 0, 0},      {"1,5", 0, 0},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        double v = -42;
        int ok = parse_decimal_text(nums[i].s, &v);
        CHECK_MSG(ok == nums[i].ok && (!ok || v == nums[i].v), "parse_decimal_text('%s') = %d, %g",
                  nums[i].s, ok, v);
    }
    double big = 0;
    CHECK(parse_decimal_text("1e999", &big) && isinf(big));  // parsed; every range check refuses it
}

static void test_utf8_invalid_offset(void) {
    static const struct {
        const char *s;
        size_t bad;
    } cases[] = {
        {"plain", 5},     {"caf\xc3\xa9", 5},      {"a\xff", 1},
        {"ab\xc3", 2},    {"\xed\xa0\x80", 0},  // a surrogate
        {"x\xc0\xaf", 1}, {"\xf4\x90\x80\x80", 0}, {"ok \xe2\x82\xac \x80", 7},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = strlen(cases[i].s);
        size_t got = utf8_invalid_offset((const unsigned char *)cases[i].s, len);
        CHECK_MSG(got == cases[i].bad, "case %zu: offset %zu, expected %zu", i, got, cases[i].bad);
    }
}

// Every string in a config is valid UTF-8, or the config is refused with the byte offset.
static void test_config_strings_are_utf8(void) {
    Config c;
    char err[1024];
    config_defaults(&c);
    const char bad_value[] = "{\"name\": \"ab\xff\"}";
    CHECK(!config_load_json(&c, bad_value, strlen(bad_value), "c.json", err, sizeof err));
    CHECK_MSG(strstr(err, "c.json") && strstr(err, "UTF-8") && strstr(err, "byte offset 12"), "%s",
              err);
    const char bad_key[] = "{\"model\": {\"n_\xc3\x28layer\": 2}}";
    CHECK(!config_load_json(&c, bad_key, strlen(bad_key), "c.json", err, sizeof err));
    CHECK_MSG(strstr(err, "UTF-8") && strstr(err, "byte offset 14"), "%s", err);
    const char surrogate[] = "{\"name\": \"\\udc00x\"}";  // a lone surrogate escape
    CHECK_MSG(!config_load_json(&c, surrogate, strlen(surrogate), "c.json", err, sizeof err),
              "accepted %s", surrogate);
    const char good[] = "{\"name\": \"caf\xc3\xa9\", \"sample\": {\"prompt\": \"\xe2\x82\xac \"}}";
    CHECK_MSG(config_load_json(&c, good, strlen(good), "c.json", err, sizeof err), "%s", err);
    CHECK(!config_apply_override(&c, "sample.prompt=\xe2\x82", err, sizeof err));
    CHECK_MSG(strstr(err, "sample.prompt") && strstr(err, "UTF-8"), "%s", err);
    CHECK(!config_apply_override(&c,
                                 "data.path=a\xc0\xaf"
                                 "b",
                                 err, sizeof err) &&
          strstr(err, "byte 1"));
    // fields set in code are checked by config_finalize
    config_defaults(&c);
    snprintf(c.out_dir, sizeof c.out_dir, "out/\xfe");
    CHECK(!config_finalize(&c, err, sizeof err));
    CHECK_MSG(strstr(err, "train.out_dir") && strstr(err, "UTF-8"), "%s", err);
}

const TestCase tests_robust[] = {
    {"robust_good_checkpoint_opens", test_good_checkpoint_opens},
    {"robust_inconsistent_dims_refused", test_inconsistent_dims_refused},
    {"robust_trailing_data_and_truncation", test_trailing_data_and_truncation},
    {"robust_non_finite_refused", test_non_finite_refused},
    {"robust_restored_state_validated", test_restored_state_validated},
    {"robust_config_record_validated", test_config_record_validated},
    {"robust_vocab_and_types_validated", test_vocab_and_types_validated},
    {"robust_save_refuses_invalid_state", test_save_refuses_invalid_state},
    {"robust_memory_check", test_memory_check},
    {"robust_temp_files_unique_and_removed", test_temp_files_unique_and_removed},
    {"robust_temp_removed_on_exit", test_temp_removed_on_exit},
    {"robust_remove_stale_temps", test_remove_stale_temps},
    {"robust_one_writer", test_one_writer},
    {"robust_fifo_and_devices_refused", test_fifo_and_devices_refused},
    {"robust_fastmath_every_input", test_fastmath_every_input},
    {"robust_fastmath_nonpositive_exp_same_bits", test_fastmath_nonpositive_exp_same_bits},
    {"robust_rng_below_bounded", test_rng_below_bounded},
    {"robust_strict_numbers", test_strict_numbers},
    {"robust_utf8_invalid_offset", test_utf8_invalid_offset},
    {"robust_config_strings_are_utf8", test_config_strings_are_utf8},
    {NULL, NULL},
};
