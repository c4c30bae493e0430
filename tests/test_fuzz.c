// tests/test_fuzz.c: replay the fuzz seed corpora and every input that ever crashed a fuzz
// target (tests/fuzz/regressions/<target>/) through the same harnesses `make fuzz` builds. A
// regression input that crashes again fails the suite (or brings it down, which fails it too).
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/harnesses.h"
#include "test.h"

// Feed every regular file in dir to fn; returns the count (-1 when dir cannot be opened).
static int replay_dir(const char *dir, int (*fn)(const uint8_t *, size_t)) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
        size_t got = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
        fclose(f);
        if (!buf) continue;
        fn(buf, got);
        free(buf);
        count++;
    }
    closedir(d);
    return count;
}

static void replay(const char *target, int (*fn)(const uint8_t *, size_t)) {
    char dir[256];
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", target);
    int seeds = replay_dir(dir, fn);
    CHECK_MSG(seeds > 0, "no seed inputs in %s", dir);
    snprintf(dir, sizeof dir, "tests/fuzz/regressions/%s", target);
    int regressions = replay_dir(dir, fn);
    fprintf(stderr, "  replayed %d seed and %d regression inputs for %s\n", seeds,
            regressions < 0 ? 0 : regressions, target);
}

static void test_fuzz_replay_config(void) { replay("config", fuzz_config_one); }
static void test_fuzz_replay_checkpoint(void) { replay("checkpoint", fuzz_checkpoint_one); }
static void test_fuzz_replay_utf8(void) { replay("utf8", fuzz_utf8_one); }
static void test_fuzz_replay_safetensors(void) { replay("safetensors", fuzz_safetensors_one); }
static void test_fuzz_replay_sweep_state(void) { replay("sweep_state", fuzz_sweep_state_one); }

const TestCase tests_fuzz[] = {
    {"fuzz_replay_config", test_fuzz_replay_config},
    {"fuzz_replay_checkpoint", test_fuzz_replay_checkpoint},
    {"fuzz_replay_utf8", test_fuzz_replay_utf8},
    {"fuzz_replay_safetensors", test_fuzz_replay_safetensors},
    {"fuzz_replay_sweep_state", test_fuzz_replay_sweep_state},
    {NULL, NULL},
};
