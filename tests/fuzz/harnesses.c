// tests/fuzz/harnesses.c: what each fuzz target does with an input. Every path must either
// accept the input or reject it with a message; crashes, leaks and undefined behaviour are bugs.
#define _POSIX_C_SOURCE 200809L
#include "harnesses.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/checkpoint.h"
#include "run/safetensors.h"
#include "base/config.h"
#include "base/data.h"
#include "model.h"
#include "run/sweep.h"

// Parse as a config, and round-trip what parses.
int fuzz_config_one(const uint8_t *data, size_t size) {
    Config cfg;
    char err[1024];
    config_defaults(&cfg);
    if (config_load_json(&cfg, (const char *)data, size, "fuzz", err, sizeof err) &&
        config_finalize(&cfg, err, sizeof err)) {
        char *json = config_to_json(&cfg);
        Config again;
        config_defaults(&again);
        if (!config_load_json(&again, json, strlen(json), "round trip", err, sizeof err) ||
            !config_finalize(&again, err, sizeof err))
            abort();
        free(json);
        if (memcmp(&cfg, &again, sizeof cfg) != 0) abort();  // the round trip gives the same config
    }
    // the same bytes as a command-line override
    char *arg = malloc(size + 1);
    if (!arg) return 0;
    memcpy(arg, data, size);
    arg[size] = 0;
    config_defaults(&cfg);
    config_apply_override(&cfg, arg, err, sizeof err);
    free(arg);
    return 0;
}

static int write_temp(const uint8_t *data, size_t size, char *path, size_t n) {
    snprintf(path, n, "/tmp/tgpt_fuzz_%ld.bin", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    if (size && fwrite(data, 1, size, f) != size) {
        fclose(f);
        return 0;
    }
    return fclose(f) == 0;
}

// Load as a checkpoint; when it parses and is small, build the model and restore into it.
static void checkpoint_case(const uint8_t *data, size_t size) {
    char path[64], err[1024];
    if (!write_temp(data, size, path, sizeof path)) return;
    Checkpoint ck;
    if (checkpoint_open(&ck, path, err, sizeof err)) {
        size_t n_params = 0;
        size_t bytes = gpt_memory_bytes(&ck.dims, 1, ck.dims.block_size, &n_params);
        if (bytes > 0 && bytes < ((size_t)64 << 20)) {
            GPT m;
            gpt_build(&m, &ck.dims, attention_causal(1), 1, ck.dims.block_size);
            checkpoint_restore(&ck, &m, path, err, sizeof err);
            gpt_free(&m);
        }
        checkpoint_close(&ck);
    }
    remove(path);
}

// Each input is tried as it is (almost always a CRC mismatch after a mutation) and with its CRC
// recomputed, so the fuzzer reaches the record parser and the tensor checks behind the CRC.
int fuzz_checkpoint_one(const uint8_t *data, size_t size) {
    checkpoint_case(data, size);
    if (size >= 16) {
        uint8_t *fixed = malloc(size);
        if (!fixed) return 0;
        memcpy(fixed, data, size);
        uint32_t crc = crc32_update(0, fixed, size - 4);
        for (int i = 0; i < 4; i++) fixed[size - 4 + i] = (uint8_t)(crc >> (8 * i));
        checkpoint_case(fixed, size);
        free(fixed);
    }
    return 0;
}

// Decode as UTF-8, and load as a training text (vocabulary, split) with a small block.
int fuzz_utf8_one(const uint8_t *data, size_t size) {
    uint32_t *cps = NULL;
    size_t n = 0, bad = 0;
    if (utf8_decode(data, size, &cps, &n, &bad)) {
        Vocab v;
        vocab_build(&v, cps, n);
        for (size_t i = 0; i < n; i++)
            if (vocab_lookup(&v, cps[i]) < 0) abort();
        // encoding the code points again gives the input back, byte for byte
        char buf[5];
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            int len = utf8_encode(cps[i], buf);
            if (len <= 0 || at + (size_t)len > size || memcmp(data + at, buf, (size_t)len) != 0)
                abort();
            at += (size_t)len;
        }
        if (at != size) abort();
        vocab_free(&v);
        free(cps);
    } else if (bad >= size) {
        abort();  // the reported offset must lie inside the input
    }
    char path[64], err[1024];
    if (!write_temp(data, size, path, sizeof path)) return 0;
    Dataset ds;
    if (dataset_load(&ds, path, 0.25, 3, err, sizeof err)) {
        if (ds.n_train > ds.n_tokens) abort();
        for (size_t i = 0; i < ds.n_tokens; i++)
            if (ds.tokens[i] < 0 || ds.tokens[i] >= ds.vocab.vocab_size) abort();
        dataset_free(&ds);
    }
    remove(path);
    return 0;
}

// Open as a safetensors file; what opens and is small is built, restored, exported and opened
// again (a file this program writes is always accepted).
int fuzz_safetensors_one(const uint8_t *data, size_t size) {
    char path[64], again[80], err[1024];
    if (!write_temp(data, size, path, sizeof path)) return 0;
    Checkpoint ck;
    if (safetensors_open(&ck, path, NULL, err, sizeof err)) {
        size_t n_params = 0;
        size_t bytes = gpt_memory_bytes(&ck.dims, 1, ck.dims.block_size, &n_params);
        if (bytes > 0 && bytes < ((size_t)64 << 20)) {
            GPT m;
            gpt_build(&m, &ck.dims, attention_causal(1), 1, ck.dims.block_size);
            snprintf(again, sizeof again, "%s.again", path);
            if (checkpoint_restore(&ck, &m, path, err,
                                   sizeof err)) {  // (a forward pass that overflows is refused)
                if (!safetensors_export(again, &m, ck.config_json, &ck.vocab, err, sizeof err))
                    abort();
                Checkpoint back;
                if (!safetensors_open(&back, again, NULL, err, sizeof err)) abort();
                checkpoint_close(&back);
                remove(again);
            }
            gpt_free(&m);
        }
        checkpoint_close(&ck);
    }
    remove(path);
    return 0;
}

// Read as a sweep's sweep.json: what is accepted is a grid and variants a sweep can have written
// (at most SWEEP_MAX_RUNS runs, each variant's name a directory name) and arguments that are a
// config file and overrides only.
int fuzz_sweep_state_one(const uint8_t *data, size_t size) {
    SweepState st;
    char err[1024];
    if (!sweep_state_parse((const char *)data, size, "fuzz", &st, err, sizeof err)) return 0;
    if (st.grid.n < 2 || st.nv < 1 || st.nv > SWEEP_MAX_VARIANTS ||
        st.grid.n * st.nv > SWEEP_MAX_RUNS)
        abort();
    for (int i = 0; i < st.grid.n; i++)
        if (!(sweep_lr(&st.grid, i) > 0)) abort();
    for (int v = 0; v < st.nv; v++)
        if (!st.v[v].name[0] || strchr(st.v[v].name, '/') || strcmp(st.v[v].name, "..") == 0)
            abort();
    int configs = 0;
    for (int i = 0; i < st.n_args; i++) {
        if (st.args[i][0] != '-')
            configs++;
        else if (strncmp(st.args[i], "--", 2) != 0 || !strchr(st.args[i], '=') ||
                 sweep_owned_key(st.args[i]))
            abort();
    }
    if (configs > 1) abort();
    sweep_state_free(&st);
    return 0;
}
