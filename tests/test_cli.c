// tests/test_cli.c: the programs as a user runs them: bad input of every kind (exit code, one
// clear line on stderr, no file harmed), exact resume, determinism, sampling, the debug dump.
// Runs ./train and ./sample from the repository root (make test does).
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "run/checkpoint.h"
#include "base/config.h"
#include "craft.h"
#include "programs.h"
#include "test.h"

static void write_file(const char *name, const void *data, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}
static void write_text(const char *name, const char *text) { write_file(name, text, strlen(text)); }

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

// A tiny model that trains in about a second on the embedded corpus.
static void write_tiny_config(const char *name, int steps) {
    char buf[2048];
    snprintf(
        buf, sizeof buf,
        "{\"name\": \"tiny\",\n"
        " \"model\": {\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 16, \"block_size\": 16},\n"
        " \"data\": {\"path\": \"data/default.txt\", \"val_fraction\": 0.02},\n"
        " \"train\": {\"batch_size\": 4, \"max_steps\": %d, \"lr_decay_steps\": 40, "
        "\"warmup_steps\": 5,\n"
        "           \"ckpt_interval\": 10, \"out_dir\": \"%s/out\", \"seed\": 7, \"threads\": 2},\n"
        " \"log\": {\"log_interval\": 10, \"eval_interval\": 20, \"eval_steps\": 2, "
        "\"attn_interval\": 10},\n"
        " \"sample\": {\"tokens\": 20}}\n",
        steps, g_dir);
    write_text(name, buf);
}

// Assert: exit code, exactly one line on stderr, containing every needle.
static void expect_error(int code, int expect_code, const char *n1, const char *n2) {
    CHECK_MSG(code == expect_code, "exit code %d, expected %d; stderr: %s", code, expect_code,
              g_err);
    CHECK_MSG(count_lines(g_err) == 1, "stderr has %d lines: %s", count_lines(g_err), g_err);
    if (n1) CHECK_MSG(strstr(g_err, n1) != NULL, "stderr lacks '%s': %s", n1, g_err);
    if (n2) CHECK_MSG(strstr(g_err, n2) != NULL, "stderr lacks '%s': %s", n2, g_err);
}

// Pre-existing files in the output directory, which no failed start may touch.
static void write_sentinels(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/out", g_dir);
    mkdir(dir, 0777);
    write_text("out/checkpoint.bin", "previous good checkpoint");
    write_text("out/metrics.csv", "step,loss\n1,2.5\n");
}

static void check_sentinels(void) {
    char path[256], buf[256];
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "previous good checkpoint") == 0,
              "a failed start changed out/checkpoint.bin");
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "step,loss\n1,2.5\n") == 0, "a failed start changed out/metrics.csv");
}

// ---- bad input, tried systematically ----
// Every row runs one command against a fixture directory (`@` stands for it) and requires the
// documented exit code (2 for usage and configuration errors, 1 for runtime errors) and exactly
// one line on stderr containing the needles. After all rows, the files that existed before
// (a previous run's outputs and a good checkpoint) must be byte-identical.
typedef struct {
    const char *name, *cmd;
    int code;
    const char *needle1, *needle2;
} BadInput;
static const BadInput BAD_INPUTS[] = {
    // configuration files (exit 2)
    {"invalid JSON", "./train @/c_invalid.json", 2, "invalid JSON", ":1:"},
    {"unknown key", "./train @/c_unknown.json", 2, "model.n_embed", "model.n_embd"},
    {"duplicate key", "./train @/c_duplicate.json", 2, "duplicate", "model.n_layer"},
    {"case-variant key", "./train @/c_case.json", 2, "N_LAYER", "model.n_layer"},
    {"wrong type", "./train @/c_type.json", 2, "train.lr", "number"},
    {"negative lr", "./train @/c_neglr.json", 2, "train.lr", NULL},
    {"zero batch", "./train @/c_zerobatch.json", 2, "train.batch_size", NULL},
    {"negative block_size", "./train @/c_negblock.json", 2, "model.block_size", NULL},
    {"zero max_steps", "./train @/c_zerosteps.json", 2, "train.max_steps", NULL},
    {"n_embd not divisible by n_head", "./train @/c_heads.json", 2, "n_embd", "n_head"},
    {"NaN literal", "./train @/c_nan.json", 2, "invalid JSON", NULL},
    {"Infinity literal", "./train @/c_inf.json", 2, "invalid JSON", NULL},
    {"huge number", "./train @/c_huge.json", 2, "model.n_layer", NULL},
    {"fractional integer", "./train @/c_frac.json", 2, "model.n_layer", "integer"},
    {"unknown attn_scale", "./train @/c_scale.json", 2, "model.attn_scale", NULL},
    {"unknown init", "./train @/c_init.json", 2, "model.init", NULL},
    {"top level not an object", "./train @/c_array.json", 2, "object", NULL},
    {"section not an object", "./train @/c_section.json", 2, "model", NULL},
    {"model larger than this machine's memory", "./train @/c_memory.json", 2, "memory", "GiB"},
    // more heads add no T x T weights (the engine keeps 2 numbers per row and head): still refused
    // by size, not by overflow (gpt_memory_bytes's overflow: tests/test_model.c)
    {"model with 256 heads of a 65536-long block", "./train @/c_memory.json --model.n_head=256", 2,
     "memory", "GiB"},
    {"deep nesting", "./train @/c_deep.json", 2, "invalid JSON", NULL},
    {"empty config file", "./train @/c_empty.json", 2, "invalid JSON", NULL},
    {"binary config file", "./train @/c_binary.json", 2, "c_binary.json", NULL},
    {"name too long", "./train @/c_longname.json", 2, "name", NULL},
    {"missing config file", "./train @/c_missing.json", 2, "c_missing.json", NULL},
    // command line (exit 2)
    {"unknown option", "./train --no-such-option", 2, "--no-such-option", NULL},
    {"override without value", "./train --train.max_steps", 2, "train.max_steps", NULL},
    {"misspelt override", "./train --train.max_step=5", 2, "train.max_step", "train.max_steps"},
    {"override of the wrong type", "./train --train.max_steps=abc", 2, "train.max_steps", NULL},
    {"negative attn_scale", "./train --model.attn_scale=-1", 2, "model.attn_scale", NULL},
    {"unknown qk_norm", "./train --model.qk_norm=cube", 2, "model.qk_norm",
     "none, layernorm, rmsnorm"},
    {"negative z_loss", "./train --train.z_loss=-1", 2, "train.z_loss", "[0, 1]"},
    {"NaN z_loss", "./train --train.z_loss=nan", 2, "train.z_loss", "number"},
    {"huge z_loss", "./train --train.z_loss=2", 2, "train.z_loss", "[0, 1]"},
    {"overflowing z_loss", "./train --train.z_loss=1e400", 2, "train.z_loss", "finite"},
    {"resume with another qk_norm",
     "./train --resume @/run/checkpoint.bin --model.qk_norm=layernorm", 2,
     "model.qk_norm 'layernorm' differs from the 'none'", "keeps its model"},
    {"bench of 0 steps", "./train --bench=0", 2, "--bench", NULL},
    {"two config files", "./train a.json b.json", 2, "b.json", NULL},
    {"config and --resume", "./train @/cfg.json --resume @/run/checkpoint.bin", 2, "--resume",
     NULL},
    {"sample without checkpoint", "./sample", 2, "CHECKPOINT", NULL},
    {"sample with bad temperature", "./sample @/run/checkpoint.bin --temperature=-1", 2,
     "--temperature", NULL},
    {"sample with unknown option", "./sample @/run/checkpoint.bin --frobnicate", 2, "--frobnicate",
     NULL},
    // a mistyped config path names the nearest file; the Shakespeare text missing names the command
    // that fetches it
    {"mistyped config path", "./train configs/defualt.json", 2,
     "(did you mean 'configs/default.json'?)", NULL},
    {"mistyped config directory", "./train config/default.json", 2,
     "(did you mean 'configs/default.json'?)", NULL},
    {"Tiny Shakespeare not downloaded",
     "./train configs/shakespeare_char.json --data.path=@/nowhere/tinyshakespeare.txt", 1,
     "run `make shakespeare` first", NULL},
    // a prompt character the model does not know: the message lists what it does know, compactly
    {"sample: a prompt character outside the vocabulary",
     "./sample @/run/checkpoint.bin --prompt 'the CAT'", 2,
     "'C' (U+0043) is not in the model's vocabulary: the vocabulary (",
     "is lowercase letters, digits and '"},
    {"sample with a misspelt option", "./sample @/run/checkpoint.bin --topk 3", 2, "'--topk'",
     "did you mean '--top-k'"},
    {"sample with a misspelt option, underscore", "./sample @/run/checkpoint.bin --temprature=1", 2,
     "'--temprature=1'", "did you mean '--temperature'"},
    // data (exit 1)
    {"missing data file", "./train @/cfg.json --data.path=@/nope.txt", 1, "nope.txt", NULL},
    // a link to itself: its own reason, and no "did you mean" of another file (the line ends there)
    {"symbolic link loop as data.path", "./train @/cfg.json --data.path=@/data_loop", 1,
     "data_loop'", "symbolic links\n"},
    {"empty data file", "./train @/cfg.json --data.path=@/empty.txt", 1, "empty", NULL},
    {"data shorter than a block", "./train @/cfg.json --data.path=@/short.txt", 1, "short.txt",
     "block_size"},
    {"invalid UTF-8", "./train @/cfg.json --data.path=@/bad_utf8.txt", 1, "UTF-8", "37"},
    {"binary data", "./train @/cfg.json --data.path=@/binary.bin", 1, "binary.bin", NULL},
    {"data path is a directory", "./train @/cfg.json --data.path=@", 1, "@", NULL},
    // output directory (exit 1)
    {"out_dir is a file", "./train @/cfg.json --train.out_dir=@/afile", 1, "afile",
     "not a directory"},
    // checkpoints (exit 1, except a shape change on resume: 2)
    {"truncated checkpoint", "./train --resume @/trunc.bin", 1, "trunc.bin", "truncated"},
    {"zero-length checkpoint", "./train --resume @/zero.bin", 1, "zero.bin", NULL},
    {"foreign file as checkpoint", "./train --resume @/foreign.bin", 1, "foreign.bin", NULL},
    {"bit-flipped checkpoint", "./train --resume @/flip.bin", 1, "flip.bin", "CRC"},
    {"checkpoint of another version", "./train --resume @/version.bin", 1, "version.bin",
     "version"},
    {"missing checkpoint", "./train --resume @/none.bin", 1, "none.bin", NULL},
    {"sample: truncated checkpoint", "./sample @/trunc.bin", 1, "trunc.bin", NULL},
    {"sample: zero-length checkpoint", "./sample @/zero.bin", 1, "zero.bin", NULL},
    {"sample: foreign checkpoint", "./sample @/foreign.bin", 1, "foreign.bin", NULL},
    {"sample: bit-flipped checkpoint", "./sample @/flip.bin", 1, "flip.bin", "CRC"},
    {"sample: checkpoint of another version", "./sample @/version.bin", 1, "version.bin", NULL},
    {"sample: prompt outside the vocabulary",
     "./sample @/run/checkpoint.bin --prompt '\xc3\xa9t\xc3\xa9'", 2, "vocabulary", NULL},
    {"resume changing the model shape", "./train --resume @/run/checkpoint.bin --model.n_embd=32",
     2, "shape", NULL},
    {"resume on text outside the vocabulary",
     "./train --resume @/run/checkpoint.bin --train.max_steps=50 --data.path=@/cfg.json", 1,
     "vocabulary", NULL},
    // nothing blocks: a FIFO, a device or a directory is refused before the first read (every
    // row runs under a timeout: a hang fails it)
    {"FIFO as config", "./train @/fifo", 2, "fifo", "FIFO"},
    {"FIFO as data", "./train @/cfg.json --data.path=@/fifo", 1, "fifo", "FIFO"},
    {"FIFO as checkpoint to resume", "./train --resume @/fifo", 1, "fifo", "FIFO"},
    {"sample: FIFO as checkpoint", "./sample @/fifo", 1, "fifo", "FIFO"},
    {"lab: FIFO as config", "./lab gradcheck @/fifo", 2, "fifo", "FIFO"},
    {"sample: FIFO as attention map",
     "./sample @/run/checkpoint.bin --prompt ab --attention-map @/fifo", 1, "fifo",
     "is a FIFO (named pipe), not a regular file"},
    {"/dev/zero as config", "./train /dev/zero", 2, "/dev/zero", "character device"},
    {"/dev/zero as data", "./train @/cfg.json --data.path=/dev/zero", 1, "/dev/zero",
     "character device"},
    {"/dev/zero as checkpoint to resume", "./train --resume /dev/zero", 1, "/dev/zero",
     "character device"},
    {"sample: /dev/zero as checkpoint", "./sample /dev/zero", 1, "/dev/zero", "character device"},
    {"lab: /dev/zero as config", "./lab gradcheck /dev/zero", 2, "/dev/zero", "character device"},
    {"directory as config", "./train @/run", 2, "run", "directory"},
    {"directory as checkpoint to resume", "./train --resume @/run", 1, "run", "directory"},
    {"sample: directory as checkpoint", "./sample @/run", 1, "run", "directory"},
    // checkpoints validated before anything is built from them (exit 1)
    {"resume: dims disagree with the config record", "./train --resume @/ck_dims.bin", 1,
     "inconsistent", "n_layer"},
    {"sample: dims disagree with the config record", "./sample @/ck_dims.bin", 1, "inconsistent",
     "n_layer"},
    {"sample: crafted huge dims", "./sample @/ck_huge.bin", 1, "inconsistent", "wte"},
    {"resume: crafted huge dims", "./train --resume @/ck_huge.bin", 1, "inconsistent", "wte"},
    {"sample: dims disagree with the tensors", "./sample @/ck_layers.bin", 1, "inconsistent",
     "parameter tensors"},
    {"resume: trailing garbage", "./train --resume @/ck_trailing.bin", 1, "trailing data", NULL},
    {"sample: trailing garbage", "./sample @/ck_trailing.bin", 1, "trailing data", NULL},
    {"resume: NaN parameter", "./train --resume @/ck_nan.bin", 1, "non-finite", "wte"},
    {"sample: NaN parameter", "./sample @/ck_nan.bin", 1, "non-finite", "wte"},
    {"resume: infinite optimizer state", "./train --resume @/ck_inf_adam.bin", 1, "non-finite",
     "adam_v.lnf_w"},
    {"sample: infinite optimizer state", "./sample @/ck_inf_adam.bin", 1, "non-finite",
     "adam_v.lnf_w"},
    {"resume: all-zero RNG state", "./train --resume @/ck_zero_rng.bin", 1, "all-zero random state",
     NULL},
    {"sample: all-zero RNG state", "./sample @/ck_zero_rng.bin", 1, "all-zero random state", NULL},
    {"resume: NaN best_val_loss", "./train --resume @/ck_nan_best.bin", 1, "best_val_loss", NULL},
    {"sample: surrogate in the vocabulary", "./sample @/ck_surrogate.bin", 1, "invalid vocabulary",
     "0xDC00"},
    {"resume: config record not JSON", "./train --resume @/ck_cfg_json.bin", 1,
     "invalid config record", "invalid JSON"},
    {"sample: config record not UTF-8", "./sample @/ck_cfg_utf8.bin", 1, "invalid config record",
     "UTF-8"},
    // configs: every string valid UTF-8, or refused with the byte offset (exit 2)
    {"config not UTF-8", "./train @/c_utf8.json", 2, "UTF-8", "byte offset 15"},
    {"config with a lone surrogate escape", "./train @/c_surrogate.json", 2, "c_surrogate.json",
     NULL},
    {"override not UTF-8", "./train @/cfg.json '--sample.prompt=ab\xc3'", 2, "sample.prompt",
     "UTF-8"},
    {"lab: config not UTF-8", "./lab gradcheck @/c_utf8.json", 2, "UTF-8", "byte offset 15"},
    // strict numeric flags (exit 2, naming the flag and the value)
    // standard output that cannot be written: exit 1, saying so, not exit 0 with the output lost
    {"sample: standard output on /dev/full", "./sample @/run/checkpoint.bin --tokens 5 > /dev/full",
     1, "standard output", NULL},
    {"sample --probs: standard output on /dev/full",
     "./sample @/run/checkpoint.bin --prompt ab --probs 3 > /dev/full", 1, "standard output", NULL},
    {"sample --explain --json: standard output on /dev/full",
     "./sample @/run/checkpoint.bin --explain --prompt 'abab' --json > /dev/full", 1,
     "standard output", NULL},
    {"lab --json: standard output on /dev/full", "./lab examples --json > /dev/full", 1,
     "standard output", NULL},
    // --vocab-from names the vocabulary of a safetensors file without one: never left unread
    {"sample: --vocab-from with a checkpoint",
     "./sample @/run/checkpoint.bin --vocab-from @/cfg.json", 1, "holds its own vocabulary",
     "--vocab-from"},
    {"train: --vocab-from with a checkpoint",
     "./train @/cfg.json --init-from @/run/checkpoint.bin --vocab-from @/cfg.json "
     "--train.out_dir=@/vocab_run",
     1, "holds its own vocabulary", "--vocab-from"},
    {"sample: hexadecimal --tokens", "./sample @/run/checkpoint.bin --tokens 0x10", 2, "--tokens",
     "'0x10'"},
    {"sample: --tokens with a space", "./sample @/run/checkpoint.bin --tokens ' 5'", 2, "--tokens",
     "' 5'"},
    {"sample: fractional --tokens", "./sample @/run/checkpoint.bin --tokens 2.7", 2, "--tokens",
     "'2.7'"},
    {"sample: empty --tokens", "./sample @/run/checkpoint.bin --tokens=", 2, "--tokens", "''"},
    {"sample: overflowing --tokens", "./sample @/run/checkpoint.bin --tokens 99999999999999999999",
     2, "--tokens", "99999999999999999999"},
    {"sample: exponent --top_k", "./sample @/run/checkpoint.bin --top_k 1e3", 2, "--top_k",
     "'1e3'"},
    {"sample: negative --top_k", "./sample @/run/checkpoint.bin --top_k -1", 2, "--top_k", "'-1'"},
    {"sample: fractional --seed", "./sample @/run/checkpoint.bin --seed 1.5", 2, "--seed", "'1.5'"},
    {"sample: inf --temperature", "./sample @/run/checkpoint.bin --temperature inf", 2,
     "--temperature", "'inf'"},
    {"sample: nan --temperature", "./sample @/run/checkpoint.bin --temperature nan", 2,
     "--temperature", "'nan'"},
    {"sample: hexadecimal --temperature", "./sample @/run/checkpoint.bin --temperature 0x1p-1", 2,
     "--temperature", "0x1p-1"},
    {"sample: --temperature with a space", "./sample @/run/checkpoint.bin --temperature ' 0.5'", 2,
     "--temperature", NULL},
    {"lab: --T with a space", "./lab exercise --T ' 3'", 2, "--T", "' 3'"},
    {"lab: hexadecimal --seed", "./lab exercise --seed 0x10", 2, "--seed", "'0x10'"},
    {"lab: hexadecimal score", "./lab softmax --scores 0x10,1", 2, "--scores", "0x10"},
    {"lab: infinite score", "./lab softmax --scores 1,inf", 2, "--scores", NULL},
    // unknown short flags are named as such, and a missing command is a usage error (exit 2)
    {"train: unknown short flag", "./train -x", 2, "unknown option '-x'", NULL},
    {"sample: unknown short flag", "./sample -x", 2, "unknown option '-x'", NULL},
    {"sample: unknown short flag after the checkpoint", "./sample @/run/checkpoint.bin -t 5", 2,
     "unknown option '-t'", NULL},
    {"lab: unknown short flag", "./lab -x", 2, "unknown option '-x'", NULL},
    {"lab: unknown short flag of a command", "./lab exercise -x", 2, "unknown option '-x'", NULL},
    {"lab: a mistyped option of a command", "./lab examples --htm x", 2, "did you mean '--html'",
     NULL},
    {"lab: a mistyped option of exercise", "./lab exercise --sed 3", 2, "did you mean '--seed'",
     NULL},
    // another run's output directory (exit 2): a new run, a comparison, or a resume writing there
    {"new run over a finished run", "./train @/cfg.json", 2, "already holds a run (checkpoint.bin)",
     "--train.overwrite=true"},
    {"new run over a finished run offers the resume", "./train @/cfg.json", 2,
     "--resume @/out/checkpoint.bin", "--name"},
    {"new run over a finished run names a free directory to type", "./train @/cfg.json", 2,
     "add --train.out_dir=@/out-2, which is free", NULL},
    {"comparison over a finished run", "./train @/cfg.json --compare-scaling", 2,
     "already holds a run", "--train.overwrite=true"},
    {"resume writing over another run",
     "./train --resume @/run/checkpoint.bin --train.out_dir=@/out", 2, "holds another run",
     "--train.out_dir=@/run"},
    {"overwrite that is not a boolean", "./train @/cfg.json --train.overwrite=yes", 2,
     "train.overwrite", "true"},
    // top-level keys on the command line (exit 2 for bad ones)
    {"misspelt top-level key", "./train @/cfg.json --nme=x", 2, "nme", "name"},
    {"top-level key with a bad value", "./train @/cfg.json --name=a/b", 2, "name",
     "path component"},
    // --compare (exit 2)
    {"compare a shape key", "./train @/cfg.json --compare model.n_embd=16,32", 2, "--compare",
     "model.n_embd=16,32"},
    {"compare one value", "./train @/cfg.json --compare train.lr=0.01", 2, "--compare", "2 to 4"},
    {"compare a value twice", "./train @/cfg.json --compare train.lr=0.01,0.01", 2, "twice", NULL},
    {"compare a value that is no directory", "./train @/cfg.json --compare train.lr=0.01,..", 2,
     "directory", NULL},
    {"compare a value the config refuses", "./train @/cfg.json --compare train.lr=0.01,0.00001", 2,
     "0.00001", "train.min_lr"},
    {"compare with resume", "./train --resume @/run/checkpoint.bin --compare train.lr=0.01,0.02", 2,
     "--resume", NULL},
    // values compared as parsed, and the modes that a comparison cannot be (exit 2)
    {"compare one scale twice, spelt two ways",
     "./train @/cfg.json --compare model.attn_scale=1,01", 2, "'1' and '01'",
     "same value of model.attn_scale"},
    {"compare one scale twice, a trailing zero",
     "./train @/cfg.json --compare model.attn_scale=sqrt,0.5,0.50", 2, "'0.5' and '0.50'",
     "same value of model.attn_scale"},
    {"compare one lr twice, spelt two ways", "./train @/cfg.json --compare train.lr=0.01,1e-2", 2,
     "'0.01' and '1e-2'", "same value of train.lr"},
    {"compare with a dump",
     "./train @/cfg.json --compare train.lr=0.01,0.02 --dump-state @/dump.bin", 2, "--dump-state",
     "comparison"},
    {"compare-scaling with a dump", "./train @/cfg.json --compare-scaling --dump-state @/dump.bin",
     2, "--dump-state", "--compare-scaling"},
    {"compare with a benchmark", "./train @/cfg.json --compare train.lr=0.01,0.02 --bench 2", 2,
     "--bench", "comparison"},
    {"benchmark with a dump", "./train @/cfg.json --bench 2 --dump-state @/dump.bin", 2, "--bench",
     "--dump-state"},
    // an option given twice is refused, in every program (exit 2)
    {"--resume twice", "./train --resume @/run/checkpoint.bin --resume @/run/checkpoint.bin", 2,
     "--resume is given twice", NULL},
    {"--dump-state twice", "./train @/cfg.json --dump-state @/d1.bin --dump-state @/d2.bin", 2,
     "--dump-state is given twice", "'@/d1.bin' and '@/d2.bin'"},
    {"--bench twice", "./train --bench 2 --bench=3", 2, "--bench is given twice", NULL},
    {"an override twice", "./train @/cfg.json --train.lr=0.01 --train.lr=0.02", 2,
     "--train.lr is given twice", "'0.01' and '0.02'"},
    {"a top-level override twice", "./train @/cfg.json --name=a --name=b", 2,
     "--name is given twice", NULL},
    {"sample: --prompt twice", "./sample @/run/checkpoint.bin --prompt a --prompt b", 2,
     "--prompt is given twice", "'a' and 'b'"},
    {"sample: --top-k twice, spelt two ways", "./sample @/run/checkpoint.bin --top_k 3 --top-k=4",
     2, "--top-k is given twice", NULL},
    {"sample: --attention-map twice",
     "./sample @/run/checkpoint.bin --prompt ab --attention-map @/m1.svg --attention-map @/m2.svg",
     2, "--attention-map is given twice", NULL},
    {"lab: --T twice", "./lab exercise --T 3 --T 4", 2, "--T is given twice", "'3' and '4'"},
    {"lab: --json twice", "./lab examples --json --json", 2, "--json is given twice", NULL},
    {"lab: --html twice", "./lab mistakes --html @/p1.html --html @/p2.html", 2,
     "--html is given twice", NULL},
    {"lab: online-softmax --block twice", "./lab online-softmax --block 1 --block 2", 2,
     "--block is given twice", NULL},
    {"lab: online-softmax --json and --html -", "./lab online-softmax --json --html -", 2,
     "standard output", NULL},
    {"lab: --scores twice", "./lab softmax --scores 1,2 --scores 3,4", 2, "--scores is given twice",
     NULL},
    {"lab: a gradcheck override twice", "./lab gradcheck --model.n_embd=8 --model.n_embd=16", 2,
     "--model.n_embd is given twice", NULL},
    // standard output is asked for with "-", once (exit 2)
    {"lab: --json and --html -", "./lab examples --json --html -", 2, "standard output", NULL},
    {"sample: --attention-map - with --tokens",
     "./sample @/run/checkpoint.bin --prompt ab --attention-map - --tokens 5", 2, "standard output",
     "--tokens"},
    {"sample: --export - with --attention-map -",
     "./sample @/run/checkpoint.bin --prompt ab --export - --attention-map -", 2,
     "--export - writes to standard output", "--attention-map -"},
    {"sample: --export - with --probs",
     "./sample @/run/checkpoint.bin --prompt ab --export - --probs 3", 2, "standard output",
     "--probs"},
    {"sample: --export to a FIFO", "./sample @/run/checkpoint.bin --export @/fifo", 1, "@/fifo",
     "FIFO"},
    {"sample: --export through a dangling link",
     "./sample @/run/checkpoint.bin --export @/dangling", 1, "@/dangling", "symbolic link"},
    {"sample: --export twice", "./sample @/run/checkpoint.bin --export @/e1 --export @/e2", 2,
     "--export is given twice", NULL},
    // finite values whose forward pass is not: refused where they are loaded (exit 1)
    {"sample: finite but huge wte", "./sample @/ck_huge_wte.bin", 1,
     "forward pass on one batch is not", "tensor 'wte' holds 3e+38 at index 7"},
    {"resume: finite but huge wte", "./train --resume @/ck_huge_wte.bin --train.max_steps=20", 1,
     "ck_huge_wte.bin", "tensor 'wte' holds 3e+38"},
    {"sample: finite but huge embedding of the last character", "./sample @/ck_huge_last.bin", 1,
     "forward pass on one batch is not", "tensor 'wte' holds 3e+38 at index"},
    // every step skipped: nothing trained, exit 1 (the test build's fault injection)
    {"every step skipped",
     "env TGPT_TEST_NONFINITE=0:100 build/train-test @/cfg.json --train.max_steps=3 "
     "--train.max_bad_steps=10"
     " --train.out_dir=@/skipped",
     1, "every one of the 3 steps", "nothing was trained"},
    {"every resumed step skipped",
     "env TGPT_TEST_NONFINITE=0:100 build/train-test --resume @/resumable/checkpoint.bin"
     " --train.max_steps=14 --train.max_bad_steps=10",
     1, "every one of the 4 steps from step 11 to 14", "@/resumable/checkpoint.bin (step 10)"},
    // outputs that are not regular files: refused before anything is written (exit 1)
    {"dump to a FIFO", "./train @/cfg.json --dump-state @/fifo", 1, "@/fifo",
     "is a FIFO (named pipe), not a regular file"},
    {"dump to a directory", "./train @/cfg.json --dump-state @/run", 1, "@/run", "is a directory"},
    {"dump through a symbolic link", "./train @/cfg.json --dump-state @/link_to_afile", 1,
     "@/link_to_afile", "is a symbolic link"},
    {"dump through a dangling symbolic link", "./train @/cfg.json --dump-state @/dangling", 1,
     "@/dangling", "is a symbolic link (to '@/outside/target')"},
    {"lab: page to a FIFO", "./lab examples --html @/fifo", 1, "@/fifo", "FIFO"},
    {"lab: page through a dangling symbolic link", "./lab mistakes --html @/dangling", 1,
     "@/dangling", "symbolic link"},
    {"lab: page to a directory", "./lab exercise --html @/run", 1, "@/run", "is a directory"},
    {"sample: map through a symbolic link",
     "./sample @/run/checkpoint.bin --prompt ab --attention-map @/link_to_afile", 1,
     "@/link_to_afile", "symbolic link"},
    {"sample: map to a directory",
     "./sample @/run/checkpoint.bin --prompt ab --attention-map @/run", 1, "@/run",
     "is a directory"},
    // a run's own file that is a symbolic link counts as a run file (dangling or not): never
    // written through
    {"new run where metrics.csv is a dangling link", "./train @/cfg.json --train.out_dir=@/dang", 2,
     "already holds a run (metrics.csv)", NULL},
    {"overwrite where metrics.csv is a dangling link",
     "./train @/cfg.json --train.out_dir=@/dang --train.overwrite=true", 2, "@/dang/metrics.csv",
     "not a regular file"},
    {"resume where metrics.csv is a dangling link",
     "./train --resume @/linked/checkpoint.bin --train.max_steps=12", 1, "@/linked/metrics.csv",
     "symbolic link"},
    {"overwrite of a comparison whose variant is a link to another run",
     "./train @/cfg.json --compare train.lr=0.01,0.02 --train.out_dir=@/cmp --train.overwrite=true",
     2, "@/cmp/0.01", "symbolic link"},
    {"comparison whose variant is a link to an empty directory",
     "./train @/cfg.json --compare train.lr=0.01,0.02 --train.out_dir=@/cmp2", 2, "@/cmp2/0.01",
     "symbolic link"},
    // the corpus generator's repeated sequences (docs/induction.md): a percentage, 0 to 100
    {"gencorpus --repeat above 100", "./tools/gencorpus --repeat 101 -o @/g.txt", 2, "--repeat",
     "'101'"},
    {"gencorpus --repeat negative", "./tools/gencorpus --repeat -5 -o @/g.txt", 2, "--repeat",
     "'-5'"},
    {"gencorpus --repeat not a number", "./tools/gencorpus --repeat half -o @/g.txt", 2, "--repeat",
     "'half'"},
    {"gencorpus --repeat a fraction", "./tools/gencorpus --repeat 0.5 -o @/g.txt", 2, "--repeat",
     "0 to 100"},
    {"gencorpus --repeat without a value", "./tools/gencorpus -o @/g.txt --repeat", 2, "--repeat",
     "0 to 100"},
    // the induction experiment's table and page (tools/induction_report)
    {"induction_report --threshold above 1", "./tools/induction_report --threshold 1.5 @", 2,
     "--threshold", "'1.5'"},
    {"induction_report --threshold not a number", "./tools/induction_report --threshold high @", 2,
     "--threshold", "'high'"},
    {"induction_report --threshold 0", "./tools/induction_report --threshold 0 @", 2, "--threshold",
     "between 0 and 1"},
    {"induction_report --map without a file", "./tools/induction_report --map before @", 2, "--map",
     "CAPTION=FILE.svg"},
    {"induction_report --html without a file", "./tools/induction_report @ --html", 2, "--html",
     "file name"},
    {"induction_report unknown option", "./tools/induction_report --seeds 3 @", 2, "'--seeds'",
     NULL},
    {"induction_report without a directory", "./tools/induction_report --threshold 0.5", 2,
     "no seed directory", NULL},
    {"induction_report --phase-step of two runs", "./tools/induction_report --phase-step @ @", 2,
     "--phase-step", "one run"},
    {"induction_report of a directory without the runs", "./tools/induction_report @/emptydir", 1,
     "@/emptydir/scale/sqrt/attention.csv", "make demo-induction"},
};

typedef struct {
    const char *file, *json;
} ConfigFixture;
static const ConfigFixture CONFIG_FIXTURES[] = {
    {"c_invalid.json", "{\"model\": {\"n_layer\": 2,,}}"},
    {"c_unknown.json", "{\"model\": {\"n_embed\": 64}}"},
    {"c_duplicate.json", "{\"model\": {\"n_layer\": 2, \"n_layer\": 3}}"},
    {"c_case.json", "{\"model\": {\"N_LAYER\": 2}}"},
    {"c_type.json", "{\"train\": {\"lr\": \"fast\"}}"},
    {"c_neglr.json", "{\"train\": {\"lr\": -0.001}}"},
    {"c_zerobatch.json", "{\"train\": {\"batch_size\": 0}}"},
    {"c_negblock.json", "{\"model\": {\"block_size\": -4}}"},
    {"c_zerosteps.json", "{\"train\": {\"max_steps\": 0}}"},
    {"c_heads.json", "{\"model\": {\"n_embd\": 30, \"n_head\": 4}}"},
    {"c_nan.json", "{\"train\": {\"lr\": NaN}}"},
    {"c_inf.json", "{\"train\": {\"lr\": Infinity}}"},
    {"c_huge.json", "{\"model\": {\"n_layer\": 1e300}}"},
    {"c_frac.json", "{\"model\": {\"n_layer\": 2.5}}"},
    {"c_scale.json", "{\"model\": {\"attn_scale\": \"cube\"}}"},
    {"c_init.json", "{\"model\": {\"init\": \"xavier\"}}"},
    {"c_array.json", "[1, 2]"},
    {"c_section.json", "{\"model\": 3}"},
    {"c_memory.json",
     "{\"model\": {\"n_layer\": 64, \"n_embd\": 8192, \"n_head\": 64, \"block_size\": 65536},"
     " \"train\": {\"batch_size\": 65536}}"},
    {"c_empty.json", ""},
    {"c_binary.json", "\x01\x02\x7f garbage \x10"},
    {"c_utf8.json", "{\"name\": \"caf\xc3\xa9\xff\"}"},
    {"c_surrogate.json", "{\"name\": \"x\\ud800y\"}"},
    {"c_longname.json", "{\"name\": "
                        "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                        "xxxxxxxxxxxxxxxxxxxxxxxx"
                        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                        "xxxxxxxxxxxxxxxxxxxxxx\"}"},
};

// Crafted checkpoints: the good one with one thing changed, and a valid CRC (tests/craft.h).
static void craft_i64(Craft *c, const char *rec, int index, int64_t v) {
    memcpy(craft_find(c, rec)->data + 8 * (size_t)index, &v, 8);
}
static void craft_f32(Craft *c, const char *rec, size_t index, float v) {
    memcpy(craft_find(c, rec)->data + 4 * index, &v, 4);
}
static void craft_config(Craft *c, const char *from, const char *to) {
    CraftRec *r = craft_find(c, "config");
    char text[8192], out[8192];
    snprintf(text, sizeof text, "%.*s", (int)r->bytes, (const char *)r->data);
    char *at = strstr(text, from);
    CHECK_MSG(at != NULL, "'%s' not in the config record", from);
    if (!at) return;
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    craft_set(r, DT_U8, strlen(out), out, 1);
}

static void make_crafted_checkpoints(const char *good) {
    static const char *const names[] = {"ck_dims.bin",     "ck_huge.bin",      "ck_layers.bin",
                                        "ck_nan.bin",      "ck_inf_adam.bin",  "ck_zero_rng.bin",
                                        "ck_nan_best.bin", "ck_surrogate.bin", "ck_cfg_json.bin",
                                        "ck_cfg_utf8.bin", "ck_huge_wte.bin",  "ck_huge_last.bin"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        Craft c;
        if (!craft_load(&c, good)) {
            CHECK(0);
            return;
        }
        switch (i) {
        case 0:
            craft_i64(&c, "dims", 2, 3);
            break;  // n_layer 3 in dims, 2 in the config record
        case 1:     // large dimensions, the config record agreeing, the tensors of the small model
            craft_i64(&c, "dims", 1, 65536);
            craft_i64(&c, "dims", 2, 64);
            craft_i64(&c, "dims", 3, 64);
            craft_i64(&c, "dims", 4, 8192);
            craft_config(&c, "\"n_layer\": 2", "\"n_layer\": 64");
            craft_config(&c, "\"n_head\": 2", "\"n_head\": 64");
            craft_config(&c, "\"n_embd\": 16", "\"n_embd\": 8192");
            craft_config(&c, "\"block_size\": 16", "\"block_size\": 65536");
            break;
        case 2:
            craft_i64(&c, "dims", 2, 3);
            craft_config(&c, "\"n_layer\": 2", "\"n_layer\": 3");
            break;
        case 3:
            craft_f32(&c, "wte", 7, NAN);
            break;
        case 4:
            craft_f32(&c, "adam_v.lnf_w", 0, INFINITY);
            break;
        case 5:
            memset(craft_find(&c, "rng")->data, 0, 32);
            break;
        case 6: {
            double nan = NAN;
            memcpy(craft_find(&c, "best_val_loss")->data, &nan, 8);
            break;
        }
        case 7: {
            uint32_t cp = 0xDC00;
            memcpy(craft_find(&c, "vocab")->data + craft_find(&c, "vocab")->bytes - 4, &cp, 4);
            break;
        }
        case 8:
            craft_config(&c, "{", "{,");
            break;
        case 9:
            craft_config(&c, "\"tiny\"", "\"ti\xffny\"");
            break;
        case 10:
            craft_f32(&c, "wte", 7, 3e38f);
            break;  // finite, but its square is not
        case 11:
            craft_f32(&c, "wte", craft_find(&c, "wte")->bytes / 4 - 5, 3e38f);
            break;  // the last character's row
        }
        char path[256];
        snprintf(path, sizeof path, "%s/%s", g_dir, names[i]);
        CHECK(craft_write(&c, path));
        craft_free(&c);
    }
    // trailing garbage: the good file with text appended
    unsigned char *bytes = NULL;
    size_t len = 0;
    CHECK(file_bytes(good, &bytes, &len));
    unsigned char *longer = malloc(len + 32);
    memcpy(longer, bytes, len);
    memcpy(longer + len, "appended by mistake\n", 20);
    write_file("ck_trailing.bin", longer, len + 20);
    free(longer);
    free(bytes);
}

static void make_bad_input_fixture(void) {
    write_tiny_config("cfg.json", 10);
    for (size_t i = 0; i < sizeof CONFIG_FIXTURES / sizeof CONFIG_FIXTURES[0]; i++)
        write_text(CONFIG_FIXTURES[i].file, CONFIG_FIXTURES[i].json);
    char *deep = malloc(200010);
    size_t n = 0;
    memcpy(deep, "{\"model\": ", 10);
    n = 10;
    for (int i = 0; i < 100000; i++) deep[n++] = '[';
    deep[n] = 0;
    write_text("c_deep.json", deep);
    free(deep);
    write_text("short.txt", "abcabc");
    write_file("empty.txt", "", 0);
    const unsigned char bad_utf8[] =
        "hello world, this is fine until here \xff\xfe and then it is not valid";
    write_file("bad_utf8.txt", bad_utf8, sizeof bad_utf8 - 1);
    const unsigned char binary[] = {'a', 'b', 0, 'c', 'd', 0, 0, 1, 2, 3};
    write_file("binary.bin", binary, sizeof binary);
    write_text("afile", "precious");
    // a good checkpoint, and damaged copies of it
    CHECK(run("./train %s/cfg.json --train.out_dir=%s/run", g_dir, g_dir) == 0);
    char path[256];
    snprintf(path, sizeof path, "%s/run/checkpoint.bin", g_dir);
    unsigned char *good = NULL;
    size_t len = 0;
    CHECK(file_bytes(path, &good, &len));
    write_file("trunc.bin", good, len / 2);
    write_file("zero.bin", "", 0);
    write_text("foreign.bin", "#!/bin/sh\necho this is not a checkpoint at all\n");
    unsigned char *bytes = malloc(len);
    memcpy(bytes, good, len);
    bytes[len / 3] ^= 0x10;
    write_file("flip.bin", bytes, len);
    memcpy(bytes, good, len);
    bytes[8] = 99;  // format version
    write_file("version.bin", bytes, len);
    write_file("good_copy.bin", good, len);
    free(bytes);
    free(good);
    make_crafted_checkpoints(path);
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/fifo", g_dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    write_sentinels();
    // symbolic links where outputs go: to a file, dangling (to where nothing may be created), a
    // run's own file, a comparison's variant directory
    CHECK(run("cd '%s' && ln -s afile link_to_afile && ln -s data_loop data_loop && mkdir outside "
              "emptydir dang cmp cmp2 &&"
              " ln -s '%s/outside/target' dangling && ln -s '%s/outside/dang_metrics.csv' "
              "dang/metrics.csv &&"
              " cp -a run resumable && cp -a run linked && rm linked/metrics.csv &&"
              " ln -s '%s/outside/linked_metrics.csv' linked/metrics.csv &&"
              " ln -s '%s/run' cmp/0.01 && ln -s '%s/emptydir' cmp2/0.01",
              g_dir, g_dir, g_dir, g_dir, g_dir, g_dir) == 0);
}

// Nothing was created through the links of the fixture, and the link targets are as they were.
static void check_links_untouched(void) {
    char path[256];
    struct stat st;
    static const char *const absent[] = {"outside/target",
                                         "outside/dang_metrics.csv",
                                         "outside/linked_metrics.csv",
                                         "dump.bin",
                                         "d1.bin",
                                         "d2.bin",
                                         "m1.svg",
                                         "m2.svg",
                                         "p1.html",
                                         "p2.html",
                                         "e1",
                                         "e2"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, absent[i]);
        CHECK_MSG(lstat(path, &st) != 0, "%s was created", absent[i]);
    }
    static const char *const links[] = {"link_to_afile",      "dangling", "dang/metrics.csv",
                                        "linked/metrics.csv", "cmp/0.01", "cmp2/0.01"};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, links[i]);
        CHECK_MSG(lstat(path, &st) == 0 && S_ISLNK(st.st_mode),
                  "%s is no longer the symbolic link it was", links[i]);
    }
    snprintf(path, sizeof path, "%s/emptydir", g_dir);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", path);
    CHECK_MSG(system(cmd) == 0, "something was written into emptydir through cmp2/0.01");
    snprintf(path, sizeof path, "%s/fifo", g_dir);
    CHECK_MSG(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
}

static void test_bad_input_table(void) {
    tmpdir("cli");
    make_bad_input_fixture();
    size_t rows = sizeof BAD_INPUTS / sizeof BAD_INPUTS[0];
    _Static_assert(sizeof BAD_INPUTS / sizeof BAD_INPUTS[0] >= 100,
                   "the bad-input table covers at least 100 cases");
    for (size_t i = 0; i < rows; i++) {
        const BadInput *b = &BAD_INPUTS[i];
        char cmd[1024], n1[256] = "", n2[256] = "";
        expand_at(cmd, sizeof cmd, b->cmd, g_dir);
        if (b->needle1) expand_at(n1, sizeof n1, b->needle1, g_dir);
        if (b->needle2) expand_at(n2, sizeof n2, b->needle2, g_dir);
        // every train command also names the sentinel directory as its output
        if (strncmp(cmd, "./train ", 8) == 0 && !strstr(cmd, "--resume") &&
            !strstr(cmd, "out_dir")) {
            size_t l = strlen(cmd);
            snprintf(cmd + l, sizeof cmd - l, " --train.out_dir=%s/out", g_dir);
        }
        int before = g_test_failed;
        g_test_failed = 0;
        // under a timeout: a program that blocks (on a FIFO, say) fails its row (exit 124)
        expect_error(run("timeout -k 5 60 %s", cmd), b->code, b->needle1 ? n1 : NULL,
                     b->needle2 ? n2 : NULL);
        if (g_test_failed) fprintf(stderr, "  ^ in row \"%s\": %s\n", b->name, cmd);
        g_test_failed |= before;
    }
    check_sentinels();
    check_links_untouched();
    char path[256], afile[64];
    snprintf(path, sizeof path, "%s/afile", g_dir);
    slurp(path, afile, sizeof afile);
    CHECK_MSG(strcmp(afile, "precious") == 0, "the file given as out_dir was changed");
    unsigned char *good = NULL, *now = NULL;
    size_t ng = 0, nn = 0;
    snprintf(path, sizeof path, "%s/good_copy.bin", g_dir);
    CHECK(file_bytes(path, &good, &ng));
    snprintf(path, sizeof path, "%s/run/checkpoint.bin", g_dir);
    CHECK(file_bytes(path, &now, &nn));
    CHECK_MSG(ng == nn && ng > 0 && memcmp(good, now, ng) == 0,
              "a failed resume changed the good checkpoint");
    free(good);
    free(now);
    cleanup();
}

static void test_help_and_version(void) {
    tmpdir("cli");
    CHECK(run("./train --help") == 0 && strstr(g_out, "model.attn_scale") &&
          strstr(g_out, "--resume"));
    CHECK(run("./train --version") == 0 && strstr(g_out, "OpenMP") && strstr(g_out, "SIMD"));
    CHECK(run("./sample --help") == 0 && strstr(g_out, "--prompt"));
    // every command `./lab --help` lists: named by `./lab` without a command and by the README's
    // line of ./lab commands, and each has its own --help
    CHECK(run("./lab --help") == 0);
    static char help[sizeof g_out], readme[262144];
    snprintf(help, sizeof help, "%s", g_out);
    slurp("README.md", readme, sizeof readme);
    // the line of the ./lab commands: the "./lab examples" line that goes on "also: ..."
    char readme_line[512] = "";
    for (const char *rl = strstr(readme, "\n./lab examples "); rl && !readme_line[0];
         rl = strstr(rl + 1, "\n./lab examples ")) {
        int len = (int)strcspn(rl + 1, "\n");
        char line[512];
        snprintf(line, sizeof line, "%.*s", len, rl + 1);
        if (strstr(line, "also:")) snprintf(readme_line, sizeof readme_line, "%s", line);
    }
    const char *list = strstr(help, "\ncommands:\n");
    CHECK(list != NULL);
    int n_commands = 0;
    for (const char *l = list ? list + strlen("\ncommands:\n") : NULL;
         l && strncmp(l, "  ", 2) == 0; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (l[2] == ' ') continue;  // a continuation line
        char name[64];
        if (sscanf(l + 2, "%63[a-z0-9-]", name) != 1) continue;
        n_commands++;
        // ./lab alone: the menu on stdout, one line a command (its name, then what it shows), and
        // exit 2 (a usage error: no command was given)
        CHECK(run("./lab") == 2);
        char line[80];
        snprintf(line, sizeof line, "\n  %s ", name);
        const char *at = strstr(g_out, line);
        CHECK_MSG(at != NULL, "./lab without a command has no line for '%s': %s", name, g_out);
        if (at) {
            size_t len = strcspn(at + 1, "\n");
            CHECK_MSG(len > strlen(line) + 20 && len < 110,
                      "./lab's line for '%s' is not one line of what it does: %.*s", name, (int)len,
                      at + 1);
        }
        CHECK_MSG(run("./lab %s --help", name) == 0, "./lab %s --help", name);
        char word[80];
        snprintf(word, sizeof word, " %s", name);
        CHECK_MSG(strstr(readme_line, word) != NULL, "README.md's line \"%s\" does not name %s",
                  readme_line, name);
    }
    CHECK_MSG(n_commands >= 5, "%d commands in ./lab --help", n_commands);
    cleanup();
}

// ./sample takes both spellings of its multi-word options (--top-k and --top_k), and temperature
// 0 is greedy: the same text whatever the seed.
static void test_sample_options(void) {
    tmpdir("cli");
    // a small model of the default config: the options, not the model, are under test
    CHECK(run("./train configs/default.json --model.n_layer=2 --model.n_embd=32 "
              "--train.max_steps=3 --sample.tokens=0 "
              "--train.out_dir=%s/run",
              g_dir) == 0);
    static char a[sizeof g_out], b[sizeof g_out];
    CHECK(run("./sample %s/run/checkpoint.bin --tokens 30 --top-k 5 --seed 3", g_dir) == 0);
    snprintf(a, sizeof a, "%s", g_out);
    CHECK(run("./sample %s/run/checkpoint.bin --tokens=30 --top_k=5 --seed=3", g_dir) == 0);
    CHECK_MSG(strcmp(a, g_out) == 0 && strlen(a) > 30, "--top-k and --top_k gave different text");
    CHECK(run("./sample %s/run/checkpoint.bin --tokens 30 --temperature 0 --seed 1", g_dir) == 0);
    snprintf(b, sizeof b, "%s", g_out);
    CHECK(run("./sample %s/run/checkpoint.bin --tokens 30 --temperature 0 --seed 2", g_dir) == 0);
    CHECK_MSG(strcmp(b, g_out) == 0, "greedy sampling depends on the seed");
    CHECK(run("./sample %s/run/checkpoint.bin --help", g_dir) == 0 && strstr(g_out, "--top-k") &&
          !strstr(g_out, "[--top_k"));
    // past block_size (64) greedy output is what --probs ranks first after the same text (both
    // crop to the last 64 characters): a prompt of 62, then 4 characters, the last 3 past the block
    const char *prompt = "the cat sat on the mat and the dog sat on the log by the door a";
    char text[256], quoted[600];
    // the output: the prompt, the 4 characters, a newline
    CHECK(run("./sample %s/run/checkpoint.bin --prompt '%s' --tokens 4 --temperature 0", g_dir,
              prompt) == 0 &&
          strlen(g_out) == strlen(prompt) + 5 && strncmp(g_out, prompt, strlen(prompt)) == 0);
    snprintf(b, sizeof b, "%.4s", g_out + strlen(prompt));
    for (int k = 1; k < 4; k++) {
        snprintf(text, sizeof text, "%s%.*s", prompt, k, b);
        size_t q = 0;  // the text single-quoted for the shell
        for (const char *c = text; *c && q + 5 < sizeof quoted; c++) {
            if (*c == '\'') {
                memcpy(quoted + q, "'\\''", 4);
                q += 4;
            } else
                quoted[q++] = *c;
        }
        quoted[q] = 0;
        CHECK(run("./sample %s/run/checkpoint.bin --prompt '%s' --probs 1", g_dir, quoted) == 0);
        char want[8];
        if (b[k] == '\n')
            snprintf(want, sizeof want, "'\\n'");
        else
            snprintf(want, sizeof want, "'%c'", b[k]);
        CHECK_MSG(strncmp(g_out, want, strlen(want)) == 0,
                  "character %d past a %zu-character prompt: greedy '%c', "
                  "--probs ranks first %.8s",
                  k, strlen(prompt), b[k], g_out);
    }
    CHECK(run("./sample %s/run/checkpoint.bin --prompt '%s' --tokens 4 --temperature 0 --context "
              "restart",
              g_dir, prompt) == 0 &&
          strlen(g_out) == strlen(prompt) + 5);
    expect_error(run("./sample %s/run/checkpoint.bin --context half", g_dir), 2, "--context",
                 "'half' is not a context policy (expected crop or restart)");
    expect_error(run("./sample %s/run/checkpoint.bin --explain --prompt ab --context crop", g_dir),
                 2, "--explain", "drop --context");
    cleanup();
}

// ---- output directory problems ----
static void test_bad_out_dir(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 4);
    write_text("afile", "precious");
    expect_error(run("./train %s/cfg.json --train.out_dir=%s/afile", g_dir, g_dir), 1, "afile",
                 "not a directory");
    char buf[64];
    char path[128];
    snprintf(path, sizeof path, "%s/afile", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK(strcmp(buf, "precious") == 0);
    // a directory that cannot be created: under a read-only one (root ignores permissions: a
    // path under /proc, where nobody creates directories, stands in for it)
    char ro[128];
    snprintf(ro, sizeof ro, "%s/ro", g_dir);
    mkdir(ro, 0555);
    if (geteuid() != 0)
        expect_error(run("./train %s/cfg.json --train.out_dir=%s/ro/sub", g_dir, g_dir), 1, "ro",
                     NULL);
    else
        expect_error(run("./train %s/cfg.json --train.out_dir=/proc/tgpt_no/sub", g_dir), 1,
                     "cannot create output directory", NULL);
    cleanup();
}

// ---- a real run: outputs, determinism, exact resume, checkpoints that reject damage ----

// The metrics without the wall-clock column: step, loss, lr, grad_norm, val_loss.
static void metrics_without_ms(const char *path, char *out, size_t n) {
    char raw[65536];
    slurp(path, raw, sizeof raw);
    size_t o = 0;
    for (char *line = strtok(raw, "\n"); line && o < n - 200; line = strtok(NULL, "\n")) {
        char *f[6];
        int k = 0;
        for (char *p = line; k < 6; k++) {
            f[k] = p;
            p = strchr(p, ',');
            if (!p) {
                k++;
                break;
            }
            *p++ = 0;
        }
        o += (size_t)snprintf(out + o, n - o, "%s,%s,%s,%s,%s\n", f[0], k > 1 ? f[1] : "",
                              k > 2 ? f[2] : "", k > 3 ? f[3] : "", k > 5 ? f[5] : "");
    }
}

static int same_tensors(const char *a, const char *b) {
    Checkpoint ca, cb;
    char err[512];
    if (!checkpoint_open(&ca, a, err, sizeof err)) {
        fprintf(stderr, "  %s\n", err);
        return 0;
    }
    if (!checkpoint_open(&cb, b, err, sizeof err)) {
        fprintf(stderr, "  %s\n", err);
        checkpoint_close(&ca);
        return 0;
    }
    int same = ca.file.n_records == cb.file.n_records && ca.state.step == cb.state.step &&
               memcmp(ca.state.rng.s, cb.state.rng.s, sizeof ca.state.rng.s) == 0;
    for (int i = 0; same && i < ca.file.n_records; i++) {
        const TRecord *ra = &ca.file.records[i];
        if (strcmp(ra->name, "config") == 0 || strcmp(ra->name, "elapsed_s") == 0)
            continue;  // wall-clock time differs
        const TRecord *rb = tfile_find(&cb.file, ra->name);
        size_t esz = ra->dtype == DT_U8                                                  ? 1
                     : ra->dtype == DT_F64 || ra->dtype == DT_U64 || ra->dtype == DT_I64 ? 8
                                                                                         : 4;
        if (!rb || rb->count != ra->count || memcmp(ra->data, rb->data, ra->count * esz) != 0) {
            fprintf(stderr, "  tensor %s differs\n", ra->name);
            same = 0;
        }
    }
    checkpoint_close(&ca);
    checkpoint_close(&cb);
    return same;
}

// ---- outputs go where the user pointed, and nowhere else ----

static int path_exists(const char *fmt, ...) {
    char path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    struct stat st;
    return lstat(path, &st) == 0;
}

static int file_lines(const char *fmt, ...) {
    char path[512];
    static char buf[1 << 17];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    slurp(path, buf, sizeof buf);
    return count_lines(buf);
}

// A resumed run continues in its checkpoint's directory, wherever that is now: moved (mv) or
// copied (cp -a), a single run or a comparison's variant; --train.out_dir on the resume chooses
// another. The moved and copied run continues bit for bit as if it had stayed.
static void test_resume_in_place(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 4);
    CHECK(run("./train %s/cfg.json --train.out_dir=%s/A", g_dir, g_dir) == 0);
    CHECK(run("mv %s/A %s/B", g_dir, g_dir) == 0);
    int code = run("./train --resume %s/B/checkpoint.bin --train.max_steps=8", g_dir);
    char want[256];
    snprintf(want, sizeof want, "writing to %s/B\n", g_dir);
    CHECK_MSG(code == 0 && strstr(g_out, want), "exit %d: %s%s", code, g_out, g_err);
    CHECK_MSG(!path_exists("%s/A", g_dir),
              "the resume re-created the directory the run was moved from");
    CHECK(file_lines("%s/B/metrics.csv", g_dir) == 1 + 8);
    // a copy resumes in the copy; the original stays at step 8
    CHECK(run("cp -a %s/B %s/C", g_dir, g_dir) == 0);
    code = run("./train --resume %s/C/checkpoint.bin --train.max_steps=10", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    CHECK(file_lines("%s/C/metrics.csv", g_dir) == 1 + 10 &&
          file_lines("%s/B/metrics.csv", g_dir) == 1 + 8);
    static char sumc[1 << 16];
    char path[256];
    snprintf(path, sizeof path, "%s/C/summary.json", g_dir);
    slurp(path, sumc, sizeof sumc);
    CHECK_MSG(strstr(sumc, "\"steps\": 10"), "%s", sumc);
    // bit for bit: the same losses and weights as 10 steps in one go (step, loss, lr, grad_norm:
    // each segment also evaluates at its last step)
    CHECK(run("./train %s/cfg.json --train.max_steps=10 --train.out_dir=%s/S", g_dir, g_dir) == 0);
    static char ms[65536];
    CHECK(run("cut -d, -f1-4 %s/S/metrics.csv", g_dir) == 0);
    snprintf(ms, sizeof ms, "%s", g_out);
    CHECK(run("cut -d, -f1-4 %s/C/metrics.csv", g_dir) == 0);
    CHECK_MSG(strcmp(ms, g_out) == 0 && count_lines(ms) == 11,
              "the moved and copied run's metrics differ from the straight run's");
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/S/checkpoint.bin", g_dir);
    snprintf(b, sizeof b, "%s/C/checkpoint.bin", g_dir);
    CHECK(same_tensors(a, b));
    // --train.out_dir on the resume: there, and the copy is left as it was
    code = run("./train --resume %s/C/checkpoint.bin --train.max_steps=12 --train.out_dir=%s/D",
               g_dir, g_dir);
    CHECK_MSG(code == 0 && path_exists("%s/D/checkpoint.bin", g_dir) &&
                  file_lines("%s/C/metrics.csv", g_dir) == 1 + 10,
              "exit %d: %s", code, g_err);
    // a comparison moved: each variant resumes in its own directory under the new place
    CHECK(run("./train %s/cfg.json --compare train.lr=0.001,0.002 --train.out_dir=%s/X", g_dir,
              g_dir) == 0);
    CHECK(run("mv %s/X %s/Y", g_dir, g_dir) == 0);
    code = run("./train --resume %s/Y/0.002/checkpoint.bin --train.max_steps=6", g_dir);
    snprintf(want, sizeof want, "writing to %s/Y/0.002\n", g_dir);
    CHECK_MSG(code == 0 && strstr(g_out, want), "exit %d: %s%s", code, g_out, g_err);
    CHECK(!path_exists("%s/X", g_dir) && file_lines("%s/Y/0.002/metrics.csv", g_dir) == 1 + 6 &&
          file_lines("%s/Y/0.001/metrics.csv", g_dir) == 1 + 4);
    cleanup();
}

// Only the temporary files this program made are removed: NAME.tmp.<pid>.<n> of a run file,
// of a process no longer running, a regular file in the run's own directory. A user's files
// with similar names stay, at a new run's start and with --train.overwrite=true, and no link is
// followed.
static void test_only_own_temps_removed(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 2);
    static const char *const kept[] = {"summary.json.tmp.backup",
                                       "report.md.tmp",
                                       "metrics.csv.tmp",
                                       "notes.txt.tmp.999999999.0",
                                       "checkpoint.bin.tmp.1.0",
                                       "checkpoint.bin.tmp.x.0",
                                       "my.bin"};
    CHECK(run("mkdir %s/out && cd %s/out && touch summary.json.tmp.backup report.md.tmp "
              "metrics.csv.tmp"
              " notes.txt.tmp.999999999.0 checkpoint.bin.tmp.1.0 checkpoint.bin.tmp.x.0 my.bin"
              " metrics.csv.tmp.999999999.0 && mkdir best.bin.tmp.999999999.1 && echo precious > "
              "%s/victim &&"
              " ln -s %s/victim summary.json.tmp.999999999.2",
              g_dir, g_dir, g_dir, g_dir) == 0);
    for (int round = 0; round < 2; round++) {  // a new run, then one replacing it
        int code = run("./train %s/cfg.json%s", g_dir, round ? " --train.overwrite=true" : "");
        CHECK_MSG(code == 0, "round %d: exit %d: %s", round, code, g_err);
        for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
            CHECK_MSG(path_exists("%s/out/%s", g_dir, kept[i]), "round %d removed %s", round,
                      kept[i]);
        CHECK_MSG(!path_exists("%s/out/metrics.csv.tmp.999999999.0", g_dir),
                  "a killed writer's temporary file stayed");
        CHECK_MSG(path_exists("%s/out/best.bin.tmp.999999999.1", g_dir), "a directory was removed");
        CHECK_MSG(path_exists("%s/out/summary.json.tmp.999999999.2", g_dir),
                  "a symbolic link was removed");
        char buf[64], path[256];
        snprintf(path, sizeof path, "%s/victim", g_dir);
        slurp(path, buf, sizeof buf);
        CHECK_MSG(strcmp(buf, "precious\n") == 0, "the file a link points to was changed");
    }
    cleanup();
}

// "-" is standard output where a file is named on the command line: the page, the map or the
// dump alone on stdout (the same bytes as in a file), the line that names it on stderr.
static void test_dash_is_stdout(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 2);
    CHECK(run("./train %s/cfg.json", g_dir) == 0);
    int code = run("./lab examples --html -");
    CHECK_MSG(code == 0 && strncmp(g_out, "<!DOCTYPE html>", 15) == 0 && strstr(g_out, "</html>") &&
                  !strstr(g_out, "-- unscaled (scale 1)") && strstr(g_err, "standard output"),
              "exit %d: %.200s / %s", code, g_out, g_err);
    code = run("./sample %s/out/checkpoint.bin --prompt ab --attention-map -", g_dir);
    CHECK_MSG(code == 0 && strncmp(g_out, "<svg", 4) == 0 && strstr(g_out, "</svg>\n") &&
                  strstr(g_err, "standard output"),
              "exit %d: %.200s / %s", code, g_out, g_err);
    CHECK(run("./train %s/cfg.json --dump-state %s/dump.bin", g_dir, g_dir) == 0);
    code = run("./train %s/cfg.json --dump-state - > %s/dump_stdout.bin", g_dir, g_dir);
    CHECK_MSG(code == 0 && strstr(g_err, "wrote the dump to standard output"), "exit %d: %s", code,
              g_err);
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/dump.bin", g_dir);
    snprintf(b, sizeof b, "%s/dump_stdout.bin", g_dir);
    unsigned char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    CHECK(file_bytes(a, &x, &nx) && file_bytes(b, &y, &ny));
    CHECK_MSG(nx > 1000 && nx == ny && memcmp(x, y, nx) == 0,
              "the dump on stdout (%zu bytes) differs from the file (%zu)", ny, nx);
    free(x);
    free(y);
    TFile tf;
    char err[512];
    CHECK_MSG(tfile_read(&tf, b, "TGPTDUMP", err, sizeof err), "%s", err);
    tfile_free(&tf);
    cleanup();
}

// Device nodes as outputs, in a private mount namespace (unshare -m, a tmpfs, mknod) so that
// nothing of the machine's /dev is at stake: /dev/full and /dev/null stand-ins are refused by
// every program that writes a file the user names, and by a run whose metrics.csv is one; every
// node is still the device it was. Skipped, saying why, where no namespace or node can be made.
static void test_device_nodes_refused(void) {
    tmpdir("cli");
    if (geteuid() != 0) {
        cleanup();
        SKIP("making device nodes needs root");
    }
    char ns[128];
    snprintf(ns, sizeof ns, "%s/ns", g_dir);
    mkdir(ns, 0777);
    if (run("unshare -m sh -c 'mount -t tmpfs tgpt_test %s && mknod %s/full c 1 7'", ns, ns) != 0) {
        char why[256];
        snprintf(why, sizeof why, "no private mount namespace with a device node here: %.200s",
                 g_err);
        cleanup();
        SKIP("%s", why);
    }
    write_tiny_config("cfg.json", 2);
    CHECK(run("./train %s/cfg.json --train.out_dir=%s/run", g_dir, g_dir) == 0);
    // one shell in the namespace: each program's exit code and stderr go to files outside it
    int code = run("unshare -m sh -c 'set -u; D=%s; mount -t tmpfs tgpt_test $D && mknod $D/full c "
                   "1 7 && mknod $D/null c 1 3 &&"
                   " mkdir $D/run && mknod $D/run/metrics.csv c 1 3 &&"
                   " { ./train %s/cfg.json --dump-state $D/full 2>%s/e1; echo $? >%s/c1;"
                   "   ./lab examples --html $D/full 2>%s/e2; echo $? >%s/c2;"
                   "   ./sample %s/run/checkpoint.bin --prompt ab --attention-map $D/null 2>%s/e3; "
                   "echo $? >%s/c3;"
                   "   ./train %s/cfg.json --train.out_dir=$D/run --train.overwrite=true 2>%s/e4; "
                   "echo $? >%s/c4;"
                   "   stat -c %%F $D/full $D/null $D/run/metrics.csv >%s/types; ls -A $D $D/run "
                   ">%s/names; }'",
                   ns, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir,
                   g_dir, g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    static const char *const needle[4] = {"/full", "/full", "/null", "/run/metrics.csv"};
    for (int i = 0; i < 4; i++) {
        char path[256], c[16];
        snprintf(path, sizeof path, "%s/c%d", g_dir, i + 1);
        slurp(path, c, sizeof c);
        snprintf(path, sizeof path, "%s/e%d", g_dir, i + 1);
        slurp(path, g_err, sizeof g_err);
        expect_error(atoi(c), i == 3 ? 2 : 1, needle[i],
                     i == 3 ? "not a regular file" : "is a character device");
    }
    char path[256], buf[4096];
    snprintf(path, sizeof path, "%s/types", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK_MSG(
        strcmp(buf, "character special file\ncharacter special file\ncharacter special file\n") ==
            0,
        "a device node was replaced: %s", buf);
    snprintf(path, sizeof path, "%s/names", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK_MSG(!strstr(buf, ".tmp"), "a temporary file was left: %s", buf);
    cleanup();
}

static void test_train_outputs_and_determinism(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 40);
    int code = run("./train %s/cfg.json", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    // the last line of stdout
    char *last = g_out + strlen(g_out);
    while (last > g_out && last[-1] == '\n') *--last = 0;
    while (last > g_out && last[-1] != '\n') last--;
    CHECK_MSG(strncmp(last, "final: step=40 train_loss=", 26) == 0 && strstr(last, " val_loss=") &&
                  strstr(last, " gen_loss=") && strstr(last, " tokens_per_s="),
              "last line: %s", last);
    char path[256], buf[65536], m1[65536], m2[65536];
    snprintf(path, sizeof path, "%s/out/summary.json", g_dir);
    slurp(path, buf, sizeof buf);
    {  // gen_loss beside the teacher-forced loss on the same windows, as summary.json has them
        cJSON *sj = cJSON_Parse(buf);
        const cJSON *gl = cJSON_GetObjectItemCaseSensitive(sj, "gen_loss");
        const cJSON *tf = cJSON_GetObjectItemCaseSensitive(sj, "gen_loss_teacher_forced");
        const cJSON *gw = cJSON_GetObjectItemCaseSensitive(sj, "gen_windows");
        char want[160];
        snprintf(want, sizeof want,
                 " gen_loss=%.4f (teacher-forced on the same %d windows: %.4f) tokens_per_s=",
                 cJSON_IsNumber(gl) ? gl->valuedouble : -1, cJSON_IsNumber(gw) ? gw->valueint : -1,
                 cJSON_IsNumber(tf) ? tf->valuedouble : -1);
        CHECK_MSG(cJSON_IsNumber(gw) && gw->valueint == 8 && strstr(last, want),
                  "last line: %s, expected %s", last, want);
        // and on the evaluation lines: in full with its meaning on the first (step 20), in short
        // after
        const char *e20 = strstr(g_out, "step    20: "), *e40 = strstr(g_out, "step    40: ");
        const char *nl20 = e20 ? strchr(e20, '\n') : NULL, *nl40 = e40 ? strchr(e40, '\n') : NULL;
        CHECK_MSG(
            e20 && nl20 && strstr(e20, "(teacher-forced on the same 8 windows: ") < nl20 &&
                strstr(e20, "(teacher-forced on the same 8 windows: ") &&
                strncmp(
                    nl20 + 1,
                    "  gen loss predicts each character from only the characters before it",
                    strlen(
                        "  gen loss predicts each character from only the characters before it")) ==
                    0,
            "%s", g_out);
        CHECK_MSG(e40 && nl40 && strstr(e40, ", gen loss ") < nl40 &&
                      strstr(e40, " (teacher-forced ") < nl40 &&
                      (!strstr(e40, "on the same 8 windows: ") ||
                       strstr(e40, "on the same 8 windows: ") > nl40) &&
                      strstr(g_out, "  gen loss predicts") == nl20 + 1 &&
                      !strstr(nl20 + 2, "  gen loss predicts"),
                  "the evaluation after the first is not in short, or the meaning is repeated: %s",
                  g_out);
        cJSON_Delete(sj);
    }
    CHECK(strstr(buf, "\"val_loss\"") && strstr(buf, "\"best_val_loss\"") &&
          strstr(buf, "\"params\"") && strstr(buf, "\"tokens_per_s\"") &&
          strstr(buf, "\"wall_s\"") && strstr(buf, "\"config\"") && strstr(buf, "\"gen_loss\"") &&
          strstr(buf, "\"gen_loss_teacher_forced\""));
    snprintf(path, sizeof path, "%s/out/attention.csv", g_dir);
    slurp(path, buf, sizeof buf);
    const char *header = "step,layer,head,entropy,entropy_norm,max_weight,frac_gt_0.9,frac_gt_0.99,"
                         "score_std,score_absmax,"
                         "gnorm_wq,gnorm_wk,gnorm_wv,gnorm_wo,ds_over_dp,row_gain_median,future_"
                         "mass,max_logit,mean_max_logit,"
                         "prev_token,induction\n";
    CHECK(strncmp(buf, header, strlen(header)) == 0);
    {  // every row ends with the two induction scores, each in (0, 1)
        int rows_scored = 0;
        for (const char *line = strchr(buf, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
            const char *end = strchr(line, '\n'), *c = end;
            int commas = 0;
            while (c > line && commas < 2) commas += *--c == ',';
            double prev = NAN, induct = NAN;
            rows_scored += sscanf(c, ",%lf,%lf", &prev, &induct) == 2 && prev > 0 && prev < 1 &&
                           induct > 0 && induct < 1;
        }
        CHECK_MSG(rows_scored == 5 * 2 * 2,
                  "%d of 20 attention.csv rows have both induction scores", rows_scored);
    }
    CHECK_MSG(count_lines(buf) == 1 + 5 * 2 * 2, "attention.csv has %d lines",
              count_lines(buf));  // steps 0,10,..,40
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    slurp(path, buf, sizeof buf);
    {  // the copies' losses and the in-context score on the rows of the probe steps (10, 20, 30,
       // 40) only
        int probe_rows = 0, empty_rows = 0;
        for (const char *line = strchr(buf, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
            int step = atoi(line);
            const char *end = strchr(line, '\n'), *c = end;
            int commas = 0;
            while (c > line && commas < 3) commas += *--c == ',';
            double first, second, in_context;
            if (step % 10 == 0)
                probe_rows += sscanf(c, ",%lf,%lf,%lf", &first, &second, &in_context) == 3 &&
                              first > 0 && second > 0 && fabs(second - first - in_context) < 2e-6;
            else
                empty_rows += strncmp(c, ",,,\n", 4) == 0;
        }
        CHECK_MSG(probe_rows == 4 && empty_rows == 36,
                  "%d probe rows with the copies' losses, %d rows without", probe_rows, empty_rows);
    }
    metrics_without_ms(path, m1, sizeof m1);
    CHECK(count_lines(m1) == 41);
    // the learning rate of steps 1, 5, 6 and 40: linear warmup over 5 steps, then the cosine to
    // min_lr at step 40 (lr 1e-3, min_lr 1e-4)
    {
        static const int rows[4] = {1, 5, 6, 40};
        static const char *const lrs[4] = {"1.666667e-04", "8.333333e-04", "1.000000e-03",
                                           "1.018116e-04"};
        for (int k = 0; k < 4; k++) {
            const char *line = m1;
            for (int i = 0; i < rows[k]; i++) line = strchr(line, '\n') + 1;
            char want[64];
            snprintf(want, sizeof want, "%d,", rows[k]);
            const char *lr = strchr(strchr(line, ',') + 1, ',') + 1;  // the third field
            CHECK_MSG(strncmp(line, want, strlen(want)) == 0 &&
                          strncmp(lr, lrs[k], strlen(lrs[k])) == 0,
                      "row %d: %.60s (lr %s expected)", rows[k], line, lrs[k]);
        }
    }
    snprintf(path, sizeof path, "%s/out/best.bin", g_dir);
    CHECK(access(path, R_OK) == 0);
    // a second run with the same seed and threads gives the same losses and the same weights
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    char saved[256];
    snprintf(saved, sizeof saved, "%s/first.bin", g_dir);
    CHECK(rename(path, saved) == 0);
    CHECK(run("./train %s/cfg.json --train.overwrite=true", g_dir) == 0);
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    metrics_without_ms(path, m2, sizeof m2);
    CHECK_MSG(strcmp(m1, m2) == 0, "metrics differ between identical runs");
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    CHECK(same_tensors(saved, path));
    // sampling from the checkpoint
    CHECK(run("./sample %s --prompt 'the ' --tokens 50 --seed 3", path) == 0);
    CHECK_MSG(strncmp(g_out, "the ", 4) == 0 && strlen(g_out) >= 54, "sample: %s", g_out);
    char first[4096];
    snprintf(first, sizeof first, "%.4000s", g_out);
    CHECK(run("./sample %s --prompt 'the ' --tokens 50 --seed 3", path) == 0 &&
          strcmp(first, g_out) == 0);
    expect_error(run("./sample %s --prompt '\xc3\xa9t\xc3\xa9'", path), 2, "vocabulary", NULL);
    snprintf(buf, sizeof buf, "%s/map.svg", g_dir);
    CHECK(run("./sample %s --prompt 'copy: ab | ab' --attention-map %s", path, buf) == 0);
    static char svg[1 << 20];  // the map: weights printed in the cells, over 64 KiB
    slurp(buf, svg, sizeof svg);
    CHECK(strncmp(svg, "<svg", 4) == 0 && strstr(svg, "layer 1, head 1") && strstr(svg, "</svg>"));
    // the debug dump
    snprintf(buf, sizeof buf, "%s/dump.bin", g_dir);
    CHECK(run("./train %s/cfg.json --dump-state %s", g_dir, buf) == 0);
    TFile f;
    char err[512];
    CHECK(tfile_read(&f, buf, "TGPTDUMP", err, sizeof err));
    const TRecord *logits = tfile_find(&f, "logits"), *g = tfile_find(&f, "grad.layer1.wq"),
                  *loss = tfile_find(&f, "loss");
    CHECK(logits && logits->ndim == 3 && logits->shape[0] == 4 && logits->shape[1] == 16);
    CHECK(g && g->ndim == 2 && g->shape[0] == 16 && g->shape[1] == 16);
    CHECK(loss && loss->count == 1 && tfile_find(&f, "inputs") && tfile_find(&f, "targets") &&
          tfile_find(&f, "param.wte"));
    // with --resume: the checkpoint's weights, on the batch its next step would train on
    char dump2[256];
    snprintf(dump2, sizeof dump2, "%s/dump_resumed.bin", g_dir);
    CHECK(strstr(g_out, "on the first training batch"));
    CHECK(run("./train --resume %s --dump-state %s", path, dump2) == 0);
    CHECK_MSG(strstr(g_out, "on the next training batch (step 41's)") && !strstr(g_out, "first"),
              "%s", g_out);
    TFile f2, ck;
    CHECK(tfile_read(&f2, dump2, "TGPTDUMP", err, sizeof err));
    CHECK(tfile_read(&ck, path, "TGPTCKPT", err, sizeof err));
    const TRecord *pw = tfile_find(&f2, "param.layer1.wq"), *cw = tfile_find(&ck, "layer1.wq");
    const TRecord *p0 = tfile_find(&f, "param.layer1.wq");
    CHECK(pw && cw && p0 && pw->count == cw->count &&
          memcmp(pw->data, cw->data, cw->count * 4) == 0);
    CHECK(pw && p0 && memcmp(pw->data, p0->data, p0->count * 4) != 0);  // not the initial weights
    const TRecord *in1 = tfile_find(&f, "inputs"), *in2 = tfile_find(&f2, "inputs");
    CHECK(in1 && in2 &&
          memcmp(in1->data, in2->data, in1->count * 4) != 0);  // step 41's batch, not step 1's
    tfile_free(&f2);
    tfile_free(&ck);
    tfile_free(&f);
    cleanup();
}

// Field `col` (0-based) of one CSV line, as a number (NaN when empty or absent).
static double csv_number(const char *line, int col) {
    for (int c = 0; c < col && line; c++) {
        line = strpbrk(line, ",\n");
        if (line && *line == '\n') return NAN;
        if (line) line++;
    }
    if (!line || *line == ',' || *line == '\n' || *line == 0) return NAN;
    return strtod(line, NULL);
}

// The 0-based column of `name` in a CSV header line, -1 when absent.
static int csv_column(const char *header, const char *name) {
    size_t n = strlen(name);
    int col = 0;
    for (const char *p = header; *p && *p != '\n'; col++) {
        size_t len = strcspn(p, ",\n");
        if (len == n && strncmp(p, name, n) == 0) return col;
        p += len;
        if (*p == ',') p++;
    }
    return -1;
}

// The logit columns: metrics.csv's lse_mean and max_logit of step 1 equal a recomputation from
// the logits of --dump-state (the same first batch at the same initial weights: the dump's loss
// is step 1's), and every row's mean log Z is at most its max_logit + ln V (log Z of a position
// is at most its largest logit + ln V). In attention.csv every row has -score_absmax <=
// mean_max_logit <= max_logit <= score_absmax, and some head's mean is below its max. A run
// with logs of the older columns resumes under the whole header.
static void test_logit_columns(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 20);
    int code = run("./train %s/cfg.json", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    char path[256], err[512];
    static char buf[1 << 18];
    snprintf(path, sizeof path, "%s/dump.bin", g_dir);
    CHECK(run("./train %s/cfg.json --dump-state %s --train.out_dir=%s/dumped", g_dir, path,
              g_dir) == 0);
    TFile f;
    if (!tfile_read(&f, path, "TGPTDUMP", err, sizeof err)) {
        CHECK_MSG(0, "%s", err);
        cleanup();
        return;
    }
    const TRecord *lg = tfile_find(&f, "logits"), *ls = tfile_find(&f, "loss");
    CHECK(lg && lg->ndim == 3 && lg->dtype == DT_F32 && ls && ls->dtype == DT_F64);
    int V = lg ? (int)lg->shape[2] : 0;
    size_t N = lg ? lg->count / (size_t)V : 0;
    double lse_sum = 0, top = -INFINITY, dump_loss = NAN;
    if (ls) memcpy(&dump_loss, ls->data, sizeof dump_loss);
    for (size_t i = 0; i < N; i++) {
        float z[256];
        if (V > 256) break;
        memcpy(z, (const char *)lg->data + i * (size_t)V * sizeof(float),
               (size_t)V * sizeof(float));
        double m = -INFINITY, sum = 0;
        for (int j = 0; j < V; j++) m = z[j] > m ? z[j] : m;
        for (int j = 0; j < V; j++) sum += exp(z[j] - m);
        lse_sum += m + log(sum);
        if (m > top) top = m;
    }
    tfile_free(&f);
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    slurp(path, buf, sizeof buf);
    int cl = csv_column(buf, "loss"), ce = csv_column(buf, "lse_mean"),
        cm = csv_column(buf, "max_logit");
    CHECK_MSG(cl == 1 && ce >= 0 && cm >= 0, "metrics.csv's header: %.200s", buf);
    const char *row1 = strchr(buf, '\n');
    if (ce >= 0 && cm >= 0 && row1) {
        row1++;
        CHECK_NEAR(csv_number(row1, cl), dump_loss,
                   2e-5);  // the same batch and weights as the dump
        CHECK_NEAR(csv_number(row1, ce), lse_sum / (double)N, 2e-5);
        CHECK_NEAR(csv_number(row1, cm), top, 2e-5);
        int rows = 0;
        for (const char *line = row1; *line; line = strchr(line, '\n') + 1, rows++) {
            double lse = csv_number(line, ce), mx = csv_number(line, cm);
            CHECK_MSG(isfinite(lse) && isfinite(mx) && lse <= mx + log((double)V) + 1e-5,
                      "a row's lse_mean %g and max_logit %g: %.80s", lse, mx, line);
        }
        CHECK(rows == 20);
    }
    snprintf(path, sizeof path, "%s/out/attention.csv", g_dir);
    slurp(path, buf, sizeof buf);
    int ca = csv_column(buf, "score_absmax"), cx = csv_column(buf, "max_logit"),
        cn = csv_column(buf, "mean_max_logit");
    CHECK_MSG(ca == 9 && cx == 17 && cn == 18, "attention.csv's header: %.300s",
              buf);  // appended after future_mass
    int rows = 0, below = 0;
    for (const char *line = strchr(buf, '\n'); line && line[1];
         line = strchr(line + 1, '\n'), rows++) {
        double absmax = csv_number(line + 1, ca), mx = csv_number(line + 1, cx),
               mean = csv_number(line + 1, cn);
        CHECK_MSG(isfinite(mean) && mean <= mx && mx <= absmax && -absmax <= mean, "%.200s",
                  line + 1);
        below += mean < mx;
    }
    CHECK_MSG(rows == 3 * 2 * 2 && below > 0, "%d rows, %d with the mean below the max", rows,
              below);  // steps 0, 10, 20
    // a run whose logs were written before these columns (its rows and header cut to the older
    // columns) resumes under the whole header: its old rows leave the new fields empty, the
    // rows appended fill them
    CHECK(run("cd %s/out && cut -d, -f1-7 metrics.csv > m && mv m metrics.csv && cut -d, -f1-17 "
              "attention.csv > a &&"
              " mv a attention.csv",
              g_dir) == 0);
    code = run("./train --resume %s/out/checkpoint.bin --train.max_steps=30", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    slurp(path, buf, sizeof buf);
    ce = csv_column(buf, "lse_mean");
    const char *r5 = strstr(buf, "\n5,"), *r25 = strstr(buf, "\n25,");
    CHECK_MSG(ce == 7 && r5 && r25 && isnan(csv_number(r5 + 1, ce)) &&
                  isfinite(csv_number(r25 + 1, ce)),
              "metrics.csv after the resume: %.300s", buf);
    snprintf(path, sizeof path, "%s/out/attention.csv", g_dir);
    slurp(path, buf, sizeof buf);
    cn = csv_column(buf, "mean_max_logit");
    const char *a30 = strstr(buf, "\n30,");
    CHECK_MSG(cn == 18 && a30 && isfinite(csv_number(a30 + 1, cn)),
              "attention.csv after the resume: %.300s", buf);
    cleanup();
}

static void test_resume_is_exact(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 40);
    char path[256], straight[65536], resumed[65536], saved[256];
    CHECK(run("./train %s/cfg.json", g_dir) == 0);
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    metrics_without_ms(path, straight, sizeof straight);
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    snprintf(saved, sizeof saved, "%s/straight.bin", g_dir);
    CHECK(rename(path, saved) == 0);
    // 20 steps, stop, resume to 40: the logs continue without repeats and the weights agree bit for
    // bit
    CHECK(run("./train %s/cfg.json --train.max_steps=20 --train.overwrite=true", g_dir) == 0);
    int code = run("./train --resume %s --train.max_steps=40", path);
    CHECK_MSG(code == 0, "resume exit %d: %s", code, g_err);
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    metrics_without_ms(path, resumed, sizeof resumed);
    CHECK_MSG(strcmp(straight, resumed) == 0, "metrics differ:\n%s\nvs\n%s", straight, resumed);
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    CHECK(same_tensors(saved, path));
    // the same from step 25, between two attention probes (every 10 steps): the resume probes at
    // once (not logged) so the progress line shows the attention from its first step, and the
    // probe changes nothing
    CHECK(run("./train %s/cfg.json --train.max_steps=25 --train.overwrite=true", g_dir) == 0);
    code = run("./train --resume %s --train.max_steps=40 --log.log_interval=1", path);
    CHECK_MSG(code == 0, "resume exit %d: %s", code, g_err);
    const char *first = strstr(g_out, "step    26/40");
    const char *eol = first ? strchr(first, '\n') : NULL;
    const char *attn = first ? strstr(first, "attn H") : NULL;
    CHECK_MSG(first && eol && attn && attn < eol,
              "the first progress line after the resume lacks 'attn H':\n%s", g_out);
    // (the first segment evaluated at its last step, 25, which the straight run did not: compare
    // step, loss, lr and grad_norm)
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    metrics_without_ms(path, resumed, sizeof resumed);
    for (char *a = straight, *b = resumed; *a || *b;) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        const char *ca = memchr(a, ',', la), *cb = memchr(b, ',', lb);
        for (int k = 0; k < 3 && ca && cb; k++) {  // to the comma before val_loss
            ca = memchr(ca + 1, ',', la - (size_t)(ca + 1 - a));
            cb = memchr(cb + 1, ',', lb - (size_t)(cb + 1 - b));
        }
        CHECK_MSG(ca && cb && ca - a == cb - b && memcmp(a, b, (size_t)(ca - a)) == 0,
                  "metrics differ after a resume at step 25:"
                  " %.*s vs %.*s",
                  (int)la, a, (int)lb, b);
        if (!ca || !cb || ca - a != cb - b || memcmp(a, b, (size_t)(ca - a)) != 0) break;
        a += la + (a[la] != 0);
        b += lb + (b[lb] != 0);
    }
    char resumed_attn[65536], apath[256];
    snprintf(apath, sizeof apath, "%s/out/attention.csv", g_dir);
    slurp(apath, resumed_attn, sizeof resumed_attn);
    CHECK(count_lines(resumed_attn) == 1 + 5 * 2 * 2);  // steps 0, 10, 20, 30, 40: nothing at 25
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    CHECK(same_tensors(saved, path));
    // summary.json's wall_s covers both segments, segment_wall_s the last one
    char sum[65536];
    snprintf(apath, sizeof apath, "%s/out/summary.json", g_dir);
    slurp(apath, sum, sizeof sum);
    const char *w = strstr(sum, "\"wall_s\": "), *sw = strstr(sum, "\"segment_wall_s\": ");
    Checkpoint ck;
    char err[512];
    CHECK(checkpoint_open(&ck, path, err, sizeof err));
    CHECK_MSG(w && sw && atof(w + 10) > atof(sw + 18) &&
                  atof(w + 10) >= ck.state.elapsed_s - 0.01 && ck.state.elapsed_s > 0,
              "wall_s %s, segment_wall_s %s, checkpoint elapsed_s %g", w ? w + 10 : "?",
              sw ? sw + 18 : "?", ck.state.elapsed_s);
    checkpoint_close(&ck);
    // a resume that changes the model's shape is refused, and the checkpoint is untouched
    unsigned char *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    CHECK(file_bytes(path, &before, &nb));
    expect_error(run("./train --resume %s --model.n_embd=32", path), 2, "shape", NULL);
    expect_error(
        run("./train --resume %s --train.max_steps=50 --data.path=%s/cfg.json", path, g_dir), 1,
        "vocabulary", NULL);
    CHECK(file_bytes(path, &after, &na));
    CHECK(nb == na && memcmp(before, after, nb) == 0);
    free(before);
    free(after);
    cleanup();
}

// Extending a finished run keeps its learning-rate schedule: the decay horizon (lr_decay_steps 0
// = max_steps) is fixed when the run starts, so a larger max_steps on resume continues at min_lr
// instead of restarting the cosine: after the warmup the learning rate never goes up. Setting
// lr_decay_steps on the resume changes the schedule on purpose.
static void test_extend_keeps_lr_schedule(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 30);
    CHECK(run("./train %s/cfg.json --train.lr_decay_steps=0", g_dir) == 0);
    char path[256], ckpt[256], line[256];
    snprintf(ckpt, sizeof ckpt, "%s/out/checkpoint.bin", g_dir);
    Checkpoint ck;
    char err[512];
    CHECK(checkpoint_open(&ck, ckpt, err, sizeof err));
    CHECK_MSG(ck.config_json && strstr(ck.config_json, "\"lr_decay_steps\": 30"), "%s",
              ck.config_json ? ck.config_json : "");
    checkpoint_close(&ck);
    int code = run("./train --resume %s --train.max_steps=60", ckpt);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    FILE *f = fopen(path, "r");
    double prev = INFINITY, min_lr = 1e-4;
    int rows = 0, rises = 0, at_min = 0;
    while (f && fgets(line, sizeof line, f)) {
        long step;
        double loss, lr;
        if (sscanf(line, "%ld,%lf,%lf", &step, &loss, &lr) != 3) continue;
        rows++;
        if (step > 6 && lr > prev * (1 + 1e-9))
            rises++;  // after the warmup (steps 1-5) and the peak (6)
        if (step > 30) at_min += fabs(lr - min_lr) <= 1e-9;
        prev = lr;
    }
    if (f) fclose(f);
    CHECK_MSG(rows == 60 && rises == 0 && at_min == 30,
              "%d rows, the learning rate rose %d times, %d of 30 steps at min_lr", rows, rises,
              at_min);
    // lr_decay_steps given on the resume is a new schedule: the cosine of the new horizon
    code = run("./train --resume %s --train.max_steps=70 --train.lr_decay_steps=100", ckpt);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    f = fopen(path, "r");
    double lr61 = 0;
    while (f && fgets(line, sizeof line, f)) {
        long step;
        double loss, lr;
        if (sscanf(line, "%ld,%lf,%lf", &step, &loss, &lr) == 3 && step == 61) lr61 = lr;
    }
    if (f) fclose(f);
    CHECK_MSG(lr61 > 2 * min_lr, "lr at step 61 with lr_decay_steps=100: %g", lr61);
    cleanup();
}

// The time left is estimated from recent step times once a few steps have run: "eta ?" before.
static void test_eta_waits_for_step_times(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 12);
    int code = run("./train %s/cfg.json --log.log_interval=1", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    const char *s1 = strstr(g_out, "step     1/12"), *s3 = strstr(g_out, "step     3/12"),
               *s4 = strstr(g_out, "step     4/12");
    CHECK_MSG(s1 && s3 && s4, "%s", g_out);
    if (s1 && s3 && s4) {
        const char *e1 = strstr(s1, "eta "), *e3 = strstr(s3, "eta "), *e4 = strstr(s4, "eta ");
        CHECK_MSG(e1 && e1[4] == '?' && e3 && e3[4] == '?', "steps 1-3 claim a time left: %s",
                  g_out);
        CHECK_MSG(e4 && e4[4] >= '0' && e4[4] <= '9', "step 4 has no time left: %s", g_out);
    }
    cleanup();
}

// --bench's table of the step's products one by one adds up to its products' phases: the same
// clock, each call on one line of its kind, and every phase has its lines.
static void test_bench_products_add_up_to_their_phases(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 12);
    int code = run("./train %s/cfg.json --bench=2", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    const char *names[2] = {"matmul_fwd", "matmul_bwd"};
    const char *phases = strstr(g_out, "phases (ms/step):"),
               *table = strstr(g_out, "the step's products one by one");
    CHECK_MSG(phases && table, "no phases or no products table: %s", g_out);
    if (!phases || !table) {
        cleanup();
        return;
    }
    for (int p = 0; p < 2; p++) {
        const char *at = strstr(phases, names[p]);
        double phase_ms = at ? atof(at + strlen(names[p])) : -1, sum = 0;
        int lines = 0;
        for (const char *l = strchr(table, '\n'); l && l[1] == ' '; l = strchr(l + 1, '\n')) {
            char name[16];
            if (sscanf(l + 1, "%15s", name) != 1 || strcmp(name, names[p])) continue;
            const char *ms = strstr(l, " a step ");
            CHECK_MSG(ms != NULL, "a products line without its time: %.120s", l + 1);
            if (ms) sum += atof(ms + 8);
            lines++;
        }
        // the table prints 3 decimals a line, the phase 2
        CHECK_MSG(lines > 0 && fabs(sum - phase_ms) <= 0.005 + 0.0005 * lines,
                  "%s: %d lines adding up to %.3f ms, the phase %.2f ms: %s", names[p], lines, sum,
                  phase_ms, g_out);
    }
    cleanup();
}

// --compare KEY=V1,V2[,V3,V4] trains one variant per value side by side, in out_dir/<value>/:
// the same initial weights and batches, so the first loss is the same and the lr differs.
static void test_compare_values(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 10);
    int code = run("./train %s/cfg.json --compare train.lr=0.001,0.003,0.01", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    CHECK(strstr(g_out, "comparing train.lr 0.001 vs 0.003 vs 0.01") &&
          strstr(g_out, "final 0.001: step=10") && strstr(g_out, "final 0.01: step=10"));
    const char *values[3] = {"0.001", "0.003", "0.01"};
    char path[256], m[3][65536];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/out/%s/metrics.csv", g_dir, values[i]);
        metrics_without_ms(path, m[i], sizeof m[i]);
        CHECK_MSG(count_lines(m[i]) == 11, "%s: %s", values[i], m[i]);
    }
    // row 1: the same loss (same weights, same batch); later rows differ (another lr)
    CHECK(strncmp(strchr(m[0], '\n') + 1, strchr(m[2], '\n') + 1, 10) == 0 &&
          strcmp(m[0], m[2]) != 0);
    // the comparison's report, over the three variants (compare.svg: scaling.svg is the scale's)
    static char csv[1 << 16];
    snprintf(path, sizeof path, "%s/out/compare.csv", g_dir);
    slurp(path, csv, sizeof csv);
    CHECK(strstr(csv, ",0.001,") && strstr(csv, ",0.003,") && strstr(csv, ",0.01,") &&
          strstr(csv, "gen_loss"));
    snprintf(path, sizeof path, "%s/out/compare.svg", g_dir);
    CHECK(access(path, F_OK) == 0);
    snprintf(path, sizeof path, "%s/out/report.md", g_dir);
    CHECK(access(path, F_OK) == 0);
    CHECK(strstr(g_out, "wrote ") && strstr(g_out, "compare.svg"));
    // a variant resumes on its own, in its directory
    code = run("./train --resume %s/out/0.003/checkpoint.bin --train.max_steps=12", g_dir);
    CHECK_MSG(code == 0 && strstr(g_out, "final: step=12"), "exit %d: %s", code, g_err);
    cleanup();
}

// model.attn_impl: the definition trains the same model as the engine, up to float rounding: the
// losses of 30 steps agree to 1e-4 (the engine and the definition differ by a few float
// roundings per step, which training amplifies only slowly over so few steps), and
// --dump-state works with both. EXTRA: more options for both (QK-norm's kinds below).
static void expect_impls_agree(const char *extra) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 30);
    double loss[2][31];
    static const char *const impls[2] = {"engine", "definition"};
    for (int k = 0; k < 2; k++) {
        int code = run("./train %s/cfg.json --model.attn_impl=%s %s --train.out_dir=%s/%s", g_dir,
                       impls[k], extra, g_dir, impls[k]);
        CHECK_MSG(code == 0, "%s %s: exit %d: %s", impls[k], extra, code, g_err);
        char path[256];
        static char buf[1 << 16];
        snprintf(path, sizeof path, "%s/%s/metrics.csv", g_dir, impls[k]);
        slurp(path, buf, sizeof buf);
        int n = 0;
        for (char *line = strchr(buf, '\n'); line && line[1] && n < 31;
             line = strchr(line + 1, '\n'))
            loss[k][n++] = strtod(strchr(line + 1, ',') + 1, NULL);
        CHECK_MSG(n == 30, "%s %s: %d metrics rows", impls[k], extra, n);
        char dump[256];
        snprintf(dump, sizeof dump, "%s/%s.dump", g_dir, impls[k]);
        CHECK(run("./train %s/cfg.json --model.attn_impl=%s %s --dump-state %s", g_dir, impls[k],
                  extra, dump) == 0);
        CHECK(access(dump, R_OK) == 0);
    }
    double worst = 0;
    for (int i = 0; i < 30; i++) worst = fmax(worst, fabs(loss[0][i] - loss[1][i]));
    CHECK_MSG(worst <= 1e-4, "%s: the losses of the two implementations differ by up to %g", extra,
              worst);
}
static void test_attn_impl_definition_matches_engine(void) {
    expect_impls_agree("");
    // a mistake dumps too (trained by the definition)
    CHECK(run("./train %s/cfg.json --model.attn_mask=zero --dump-state %s/zero.dump", g_dir,
              g_dir) == 0 &&
          strstr(g_out, "wrote"));
    cleanup();
}
// With QK-norm on, each kind, and z-loss: the same agreement (the norms' forward and backward of
// the engine's pass against the definition's, inside the whole model's training).
static void test_attn_impl_definition_matches_engine_qk_norm(void) {
    expect_impls_agree("--model.qk_norm=layernorm --train.z_loss=1e-2");
    cleanup();
    expect_impls_agree("--model.qk_norm=rmsnorm");
    cleanup();
}

// --compare-scaling trains both variants from identical initial weights on identical batches.
// With head_dim = 1, 1/sqrt(head_dim) = 1: the two variants are then the same computation, so
// their logs and final weights must agree bit for bit, which they can only do if the initial
// weights and every batch are the same.
static void test_compare_scaling_same_start_and_batches(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 30);
    int code =
        run("./train %s/cfg.json --compare-scaling --model.n_embd=4 --model.n_head=4", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    char a[256], b[256], ma[65536], mb[65536];
    snprintf(a, sizeof a, "%s/out/scaled/metrics.csv", g_dir);
    snprintf(b, sizeof b, "%s/out/unscaled/metrics.csv", g_dir);
    metrics_without_ms(a, ma, sizeof ma);
    metrics_without_ms(b, mb, sizeof mb);
    CHECK(count_lines(ma) == 31);
    CHECK_MSG(strcmp(ma, mb) == 0,
              "the variants' losses differ although their computations are identical");
    snprintf(a, sizeof a, "%s/out/scaled/checkpoint.bin", g_dir);
    snprintf(b, sizeof b, "%s/out/unscaled/checkpoint.bin", g_dir);
    CHECK(same_tensors(a, b));
    // the comparison files, with the documented columns
    char path[256], buf[65536];
    snprintf(path, sizeof path, "%s/out/compare.csv", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK(
        strncmp(
            buf,
            "step,variant,loss,val_loss,entropy_norm,max_weight,frac_gt_0.9,frac_gt_0.99,score_std,"
            "gnorm_wq,gnorm_wk,gnorm_wv,gnorm_wo,ds_over_dp,row_gain_median\n",
            130) == 0);
    CHECK(strstr(buf, ",scaled,") && strstr(buf, ",unscaled,"));
    snprintf(path, sizeof path, "%s/out/report.md", g_dir);
    CHECK(access(path, R_OK) == 0);
    snprintf(path, sizeof path, "%s/out/scaling.svg", g_dir);
    slurp(path, buf, sizeof buf);
    size_t len = strlen(buf);
    while (len > 0 && buf[len - 1] == '\n') len--;
    CHECK(strstr(buf, "<svg") != NULL && len >= 6 && strncmp(buf + len - 6, "</svg>", 6) == 0);
    // and with a real head dimension, the variants differ from the first step on
    code = run("./train %s/cfg.json --compare-scaling --train.max_steps=5 --train.out_dir=%s/out2",
               g_dir, g_dir);
    CHECK(code == 0);
    snprintf(a, sizeof a, "%s/out2/scaled/metrics.csv", g_dir);
    snprintf(b, sizeof b, "%s/out2/unscaled/metrics.csv", g_dir);
    metrics_without_ms(a, ma, sizeof ma);
    metrics_without_ms(b, mb, sizeof mb);
    CHECK(strcmp(ma, mb) != 0);
    cleanup();
}

// A variant of a comparison starts as it would alone: --compare model.qk_norm=none,layernorm gives
// its layernorm variant the first run's weights and QK-norm's gains 1 and biases 0, which the
// first run lacks (not 0, which would make every score 0: uniform attention at step 0). So the
// variant trains exactly as the lone run --model.qk_norm=layernorm (the same seed: the same draws
// and batches) and as the first run of the reversed comparison: the same losses and final tensors.
static void test_compare_qk_norm_variant_starts_as_alone(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 10);
    static const char *const runs[3][2] = {
        {"--compare model.qk_norm=none,layernorm", "second/layernorm"},
        {"--compare model.qk_norm=layernorm,none", "first/layernorm"},
        {"--model.qk_norm=layernorm", "alone"}};
    for (int k = 0; k < 3; k++) {
        const char *dir = k == 2 ? "alone" : k == 0 ? "second" : "first";
        int code =
            run("./train %s/cfg.json %s --train.out_dir=%s/%s", g_dir, runs[k][0], g_dir, dir);
        CHECK_MSG(code == 0, "%s: exit %d: %s", runs[k][0], code, g_err);
    }
    // step 0's attention statistics of the second variant: scores of normalised rows, not 0
    char path[256], other[256];
    static char buf[1 << 16];
    snprintf(path, sizeof path, "%s/second/layernorm/attention.csv", g_dir);
    slurp(path, buf, sizeof buf);
    int col = csv_column(buf, "score_std"), heads = 0;
    CHECK(col >= 0);
    for (const char *line = strchr(buf, '\n'); col >= 0 && line && strncmp(line + 1, "0,", 2) == 0;
         line = strchr(line + 1, '\n')) {
        double sd = csv_number(line + 1, col);
        CHECK_MSG(sd > 0.1, "step 0 of the layernorm variant: score_std %g (gains not 1?): %.80s",
                  sd, line + 1);
        heads++;
    }
    CHECK_MSG(heads == 4, "%d step-0 rows in %s", heads, path);
    // the same run three ways: the metrics (but the wall clock) and the final tensors
    char m[3][65536];
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s/metrics.csv", g_dir, runs[k][1]);
        metrics_without_ms(path, m[k], sizeof m[k]);
        CHECK(count_lines(m[k]) == 11);
    }
    CHECK_MSG(strcmp(m[0], m[2]) == 0,
              "the second variant's metrics differ from the lone run's:\n%s\n%s", m[0], m[2]);
    CHECK_MSG(strcmp(m[1], m[2]) == 0, "the first variant's metrics differ from the lone run's");
    snprintf(other, sizeof other, "%s/alone/checkpoint.bin", g_dir);
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s/checkpoint.bin", g_dir, runs[k][1]);
        CHECK_MSG(same_tensors(path, other), "%s and the lone run's checkpoint differ", path);
    }
    cleanup();
}

// train.keep_checkpoints = N keeps checkpoint_<step>.bin for the last N checkpoint steps.
static void test_keep_checkpoints(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 40);  // checkpoints every 10 steps
    CHECK(run("./train %s/cfg.json --train.keep_checkpoints=2", g_dir) == 0);
    const char *expect[] = {"checkpoint_30.bin", "checkpoint_40.bin", "checkpoint.bin", "best.bin"};
    const char *gone[] = {"checkpoint_10.bin", "checkpoint_20.bin"};
    char path[256];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/out/%s", g_dir, expect[i]);
        CHECK_MSG(access(path, R_OK) == 0, "%s missing", expect[i]);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/out/%s", g_dir, gone[i]);
        CHECK_MSG(access(path, F_OK) != 0, "%s should have been removed", gone[i]);
    }
    // resumed with another interval: every older checkpoint_<step>.bin goes, not only the one
    // the new interval would compute
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    CHECK(run("./train --resume %s --train.max_steps=60 --train.ckpt_interval=7 "
              "--train.keep_checkpoints=2",
              path) == 0);
    CHECK(run("ls %s/out | grep '^checkpoint_' | tr '\\n' ' '", g_dir) == 0);
    CHECK_MSG(strcmp(g_out, "checkpoint_56.bin checkpoint_60.bin ") == 0, "left: %s", g_out);
    cleanup();
}

// summary.json is JSON whatever the strings hold, and top-level keys work on the command line.
static void test_summary_is_json_and_top_level_keys(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 10);
    const char *name = "we\"ird \\ n\xc3\xa4me {}";  // a quote, a backslash and UTF-8
    int code =
        run("./train %s/cfg.json --name='%s' --sample.prompt='say \"hi\"\t' --train.out_dir=%s/x",
            g_dir, name, g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    char path[256], buf[65536];
    snprintf(path, sizeof path, "%s/x/summary.json", g_dir);
    slurp(path, buf, sizeof buf);
    cJSON *root = cJSON_Parse(buf);
    CHECK_MSG(root != NULL, "summary.json is not JSON:\n%s", buf);
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(root, "config");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(cfg, "name");
    CHECK_MSG(cJSON_IsString(n) && strcmp(n->valuestring, name) == 0, "name: %s",
              cJSON_IsString(n) ? n->valuestring : "?");
    const cJSON *sample = cJSON_GetObjectItemCaseSensitive(cfg, "sample");
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(sample, "prompt");
    CHECK(cJSON_IsString(prompt) && strcmp(prompt->valuestring, "say \"hi\"\t") == 0);
    const char *numbers[] = {"train_loss", "val_loss",     "best_val_loss", "steps",
                             "params",     "tokens_per_s", "wall_s"};
    for (int i = 0; i < 7; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, numbers[i]);
        CHECK_MSG(cJSON_IsNumber(v), "%s is not a number", numbers[i]);
    }
    cJSON_Delete(root);
    cleanup();
}

// The committed corpus is exactly what the committed generator writes.
static void test_corpus_is_reproducible(void) {
    tmpdir("cli");
    CHECK_MSG(access("tools/gencorpus", X_OK) == 0,
              "tools/gencorpus is not built (make test builds it)");
    int code = run("./tools/gencorpus -o %s/corpus.txt && cmp %s/corpus.txt data/default.txt",
                   g_dir, g_dir);
    CHECK_MSG(code == 0, "data/default.txt differs from ./tools/gencorpus output: %s%s", g_out,
              g_err);
    cleanup();
}

// docs/CONFIG.md's configuration reference is the one the program prints (no key undocumented).
static void test_config_doc_documents_every_key(void) {
    tmpdir("cli");
    char path[128];
    snprintf(path, sizeof path, "%s/ref.md", g_dir);
    FILE *f = fopen(path, "w");
    config_print_reference(f, 1);
    fclose(f);
    static char ref[65536], doc[262144];
    slurp(path, ref, sizeof ref);
    slurp("docs/CONFIG.md", doc, sizeof doc);
    CHECK_MSG(strlen(ref) > 100 && strstr(doc, ref) != NULL,
              "docs/CONFIG.md's configuration reference is out of date: paste "
              "`config_print_reference` output");
    cleanup();
}

// The names in the first column of the tables under "### `NAME`" of docs/FORMAT.md (each
// `backquoted`), in order, joined by ','; "" when there is no such section.
static void format_doc_names(const char *doc, const char *name, char *out, size_t n) {
    char heading[128];
    snprintf(heading, sizeof heading, "\n### `%s`", name);
    out[0] = 0;
    const char *p = strstr(doc, heading);
    if (!p) return;
    p = strchr(p + 1, '\n');
    size_t k = 0;
    while (p && *++p && strncmp(p, "##", 2) != 0) {
        const char *eol = strchr(p, '\n');
        if (strncmp(p, "| `", 3) == 0) {
            const char *a = p + 3, *b = strchr(a, '`');
            if (b && (!eol || b < eol))
                k += (size_t)snprintf(out + k, n - k, "%s%.*s", k ? "," : "", (int)(b - a), a);
        }
        p = eol;
    }
}

// The first line of a file.
static void first_line(const char *path, char *out, size_t n) {
    slurp(path, out, n);
    out[strcspn(out, "\n")] = 0;
}

// The top-level keys of a JSON file, in order, joined by ','.
static void json_keys(const char *path, char *out, size_t n) {
    static char buf[65536];
    slurp(path, buf, sizeof buf);
    cJSON *j = cJSON_Parse(buf);
    size_t k = 0;
    out[0] = 0;
    for (const cJSON *it = j ? j->child : NULL; it; it = it->next)
        k += (size_t)snprintf(out + k, n - k, "%s%s", k ? "," : "", it->string);
    cJSON_Delete(j);
}

// docs/FORMAT.md lists every column of metrics.csv, attention.csv and compare.csv and every key
// of summary.json, in the order a run writes them, and its table of what a run writes names them.
static void test_docs_list_every_output_column(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 20);
    CHECK(run("./train %s/cfg.json --sample.tokens=0", g_dir) == 0);
    CHECK(run("./train %s/cfg.json --sample.tokens=0 --train.out_dir=%s/cmp --compare "
              "train.lr=1e-3,2e-3",
              g_dir, g_dir) == 0);
    CHECK(run("./train %s/cfg.json --sample.tokens=0 --train.out_dir=%s/sweep --sweep "
              "train.lr=1e-3..2e-3/2",
              g_dir, g_dir) == 0);
    static char doc[131072];
    slurp("docs/FORMAT.md", doc, sizeof doc);
    const char *readme = strstr(doc, "\n## What a run writes\n");  // the table of a run's files
    CHECK_MSG(readme != NULL, "docs/FORMAT.md has no section \"What a run writes\"");
    if (!readme) readme = "";
    static const struct {
        const char *doc_name, *file;
        int json;
    } outputs[] = {
        {"metrics.csv", "out/metrics.csv", 0},   {"attention.csv", "out/attention.csv", 0},
        {"compare.csv", "cmp/compare.csv", 0},   {"sweep.csv", "sweep/sweep.csv", 0},
        {"summary.json", "out/summary.json", 1},
    };
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++) {
        char path[256], written[4096], documented[4096];
        snprintf(path, sizeof path, "%s/%s", g_dir, outputs[i].file);
        if (outputs[i].json)
            json_keys(path, written, sizeof written);
        else
            first_line(path, written, sizeof written);
        format_doc_names(doc, outputs[i].doc_name, documented, sizeof documented);
        CHECK_MSG(written[0] && strcmp(written, documented) == 0,
                  "%s writes\n  %s\nbut docs/FORMAT.md lists\n  %s", outputs[i].file, written,
                  documented);
        // the table of a run's files: the CSV header as written, or every key in backquotes
        char row[64];
        snprintf(row, sizeof row, "\n| `%s` | ", outputs[i].doc_name);
        const char *r = strstr(readme, row);
        if (strcmp(outputs[i].doc_name, "compare.csv") == 0)
            continue;  // described with the comparison's files
        CHECK_MSG(r != NULL, "docs/FORMAT.md's table of a run's files has no row for %s",
                  outputs[i].doc_name);
        if (!r) continue;
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)strcspn(r + 1, "\n"), r + 1);
        if (!outputs[i].json) {
            char want[4200];
            snprintf(want, sizeof want, "`%s`", written);
            CHECK_MSG(strstr(line, want) != NULL, "docs/FORMAT.md's row for %s lacks %s",
                      outputs[i].doc_name, want);
        } else {
            for (char *save = NULL, *key = strtok_r(written, ",", &save); key;
                 key = strtok_r(NULL, ",", &save)) {
                char want[128];
                snprintf(want, sizeof want, "`%s`", key);
                CHECK_MSG(strstr(line, want) != NULL, "docs/FORMAT.md's row for %s lacks %s",
                          outputs[i].doc_name, want);
            }
        }
    }
    cleanup();
}

// The check above must see a missing column: a section without one of the written names.
static void test_docs_format_reader(void) {
    char names[256];
    format_doc_names(
        "x\n### `a.csv`\n\n| column | meaning |\n|---|---|\n| `step` | s |\n| `loss` | l |\n\n"
        "## next\n| `other` | o |\n",
        "a.csv", names, sizeof names);
    CHECK_MSG(strcmp(names, "step,loss") == 0, "read '%s'", names);
    format_doc_names("x\n", "a.csv", names, sizeof names);
    CHECK(names[0] == 0);
}

// `make shakespeare` without a network (a closed local port here): exit 1, one line naming where
// to put a local copy and --data.path, and no file left behind; with the file there, nothing to do.
static void test_shakespeare_without_network(void) {
    tmpdir("cli");
    int code = run("TINYSHAKESPEARE_URL=http://127.0.0.1:9/input.txt sh tools/get-shakespeare.sh "
                   "-o %s/data/ts.txt",
                   g_dir);
    char want[160];
    snprintf(want, sizeof want, "put it at %s/data/ts.txt", g_dir);
    expect_error(code, 1, want, "--data.path=");
    CHECK(run("ls -A %s/data", g_dir) == 0 && g_out[0] == 0);  // no partial download
    write_text("data/ts.txt", "a local copy\n");
    CHECK(run("TINYSHAKESPEARE_URL=http://127.0.0.1:9/input.txt sh tools/get-shakespeare.sh -o "
              "%s/data/ts.txt",
              g_dir) == 0);
    char path[256], buf[64];
    snprintf(path, sizeof path, "%s/data/ts.txt", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK(strcmp(buf, "a local copy\n") == 0);
    cleanup();
}

// Whether n bytes at data hold the text needle.
static int holds(const void *data, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp((const char *)data + i, needle, k) == 0) return 1;
    return 0;
}

static int occurrences(const char *s, const char *sub) {
    int n = 0;
    for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub)) n++;
    return n;
}

// model.attn_window from the command line to every output: a windowed run trains (the definition
// computes it) and resumes, summary.json and the checkpoint hold the window, ./sample generates
// with it and --attention-map hatches the keys outside it, --dump-state runs with it (other logits
// than without); a checkpoint whose config has no attn_window (written before the key) loads as
// 0; a bad window is a one-line config error.
static void test_attn_window(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 20);
    int code = run("./train %s/cfg.json --model.attn_window=4", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    CHECK(strstr(g_out, "final: step=20") && strstr(g_out, "gen_loss="));
    char path[256], ckpt[256], buf[65536];
    snprintf(path, sizeof path, "%s/out/summary.json", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK_MSG(strstr(buf, "\"attn_window\": 4"), "summary.json: %.400s", buf);
    snprintf(ckpt, sizeof ckpt, "%s/out/checkpoint.bin", g_dir);
    TFile f;
    char err[512];
    CHECK(tfile_read(&f, ckpt, "TGPTCKPT", err, sizeof err) || (fprintf(stderr, "%s\n", err), 0));
    const TRecord *cr = tfile_find(&f, "config");
    CHECK(cr && holds(cr->data, cr->count, "\"attn_window\": 4"));
    tfile_free(&f);
    code = run("./train --resume %s --train.max_steps=30", ckpt);
    CHECK_MSG(code == 0 && strstr(g_out, "final: step=30"), "resume: exit %d: %s", code, g_err);
    CHECK(run("./sample %s --prompt 'the ' --tokens 30 --seed 3", ckpt) == 0 &&
          strncmp(g_out, "the ", 4) == 0);
    // the map: a prompt of 13 characters seen through a window of 4 draws 1 + 2 + 3 + 10 x 4 = 46
    // cells per head (the causal mask alone would draw 91), in 2 layers x 2 heads
    static char svg[1 << 20];
    snprintf(buf, sizeof buf, "%s/map.svg", g_dir);
    CHECK(run("./sample %s --prompt 'copy: ab | ab' --attention-map %s", ckpt, buf) == 0);
    slurp(buf, svg, sizeof svg);
    CHECK_MSG(strstr(svg, "window of 4 keys") && strstr(svg, "or one outside the window"),
              "the map does not name the window");
    CHECK_MSG(occurrences(svg, "<title>P[") == 4 * 46, "%d cells drawn, expected %d",
              occurrences(svg, "<title>P["), 4 * 46);
    // --dump-state with and without the window: the same batch, other logits
    char d0[256], d4[256];
    snprintf(d0, sizeof d0, "%s/d0.bin", g_dir);
    snprintf(d4, sizeof d4, "%s/d4.bin", g_dir);
    CHECK(run("./train %s/cfg.json --dump-state %s", g_dir, d0) == 0);
    CHECK(run("./train %s/cfg.json --model.attn_window=4 --dump-state %s", g_dir, d4) == 0 &&
          strstr(g_out, "wrote"));
    TFile a, b;
    if (tfile_read(&a, d0, "TGPTDUMP", err, sizeof err) &&
        tfile_read(&b, d4, "TGPTDUMP", err, sizeof err)) {
        const TRecord *la = tfile_find(&a, "logits"), *lb = tfile_find(&b, "logits");
        const TRecord *ia = tfile_find(&a, "inputs"), *ib = tfile_find(&b, "inputs"),
                      *cb = tfile_find(&b, "config");
        CHECK(la && lb && la->count == lb->count && memcmp(la->data, lb->data, la->count * 4) != 0);
        CHECK(ia && ib && memcmp(ia->data, ib->data, ia->count * 4) == 0);
        CHECK(cb && holds(cb->data, cb->count, "\"attn_window\": 4"));
        tfile_free(&a);
        tfile_free(&b);
    } else {
        CHECK_MSG(0, "%s", err);
    }
    // a checkpoint written before the key: its config record without attn_window loads as 0
    code = run("./train %s/cfg.json --train.overwrite=true", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    CHECK(run("./sample %s --prompt 'the ' --tokens 30 --seed 3", ckpt) == 0);
    char with_key[4096];
    snprintf(with_key, sizeof with_key, "%.4000s", g_out);
    if (tfile_read(&f, ckpt, "TGPTCKPT", err, sizeof err)) {
        char old[256];
        snprintf(old, sizeof old, "%s/old.bin", g_dir);
        TWriter *w = tw_open(old, "TGPTCKPT", err, sizeof err);
        CHECK(w != NULL);
        int removed = 0;
        for (int i = 0; w && i < f.n_records; i++) {
            const TRecord *r = &f.records[i];
            if (strcmp(r->name, "config") != 0) {
                tw_record(w, r->name, r->dtype, r->ndim, r->shape, r->data);
                continue;
            }
            char *text = calloc(r->count + 1, 1), *line;
            memcpy(text, r->data, r->count);
            if ((line = strstr(text, ",\n    \"attn_window\": 0")) != NULL) {
                char *end = strchr(line + 2, '\n');
                memmove(line, end, strlen(end) + 1);
                removed = 1;
            }
            uint32_t shape[1] = {(uint32_t)strlen(text)};
            tw_record(w, "config", DT_U8, 1, shape, text);
            free(text);
        }
        CHECK_MSG(removed, "the checkpoint's config has no \"attn_window\": 0 line");
        CHECK(w && tw_commit(w, err, sizeof err));
        tfile_free(&f);
        CHECK(run("./sample %s --prompt 'the ' --tokens 30 --seed 3", old) == 0);
        CHECK_MSG(strcmp(g_out, with_key) == 0,
                  "the old checkpoint samples '%s', with the key '%s'", g_out, with_key);
        code = run("./train --resume %s --train.max_steps=25 --train.out_dir=%s", old, g_dir);
        CHECK_MSG(code == 0, "resuming the old checkpoint: exit %d: %s", code, g_err);
    } else {
        CHECK_MSG(0, "%s", err);
    }
    // bad windows: one line naming the key, exit 2
    expect_error(run("./train %s/cfg.json --model.attn_window=17", g_dir), 2,
                 "'model.attn_window' (17)", "(16)");
    expect_error(run("./train %s/cfg.json --model.attn_window=-2", g_dir), 2, "model.attn_window",
                 "out of range");
    expect_error(run("./train %s/cfg.json --model.attn_window=4 --model.attn_mask=none", g_dir), 2,
                 "'model.attn_window' (4)", "causal");
    expect_error(run("./train %s/cfg.json --model.attn_window=4 --model.attn_mask=zero", g_dir), 2,
                 "'model.attn_window' (4)", "zero");
    cleanup();
}

// Whether two files hold the same bytes.
static int same_bytes(const char *a, const char *b) {
    unsigned char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    int same =
        file_bytes(a, &x, &nx) && file_bytes(b, &y, &ny) && nx == ny && memcmp(x, y, nx) == 0;
    free(x), free(y);
    return same;
}

// No output replaces an input: an output path that is (or links to) the checkpoint, the data or
// another input is refused with one line, and the input keeps its bytes.
static void test_output_never_replaces_input(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 2);
    CHECK(run("./train %s/cfg.json", g_dir) == 0);
    CHECK(run("cp %s/out/checkpoint.bin %s/saved.bin && ln -s out/checkpoint.bin %s/link.bin && ln "
              "%s/out/checkpoint.bin "
              "%s/hard.bin && printf 'copy: ab | ab\\n' > %s/lines.txt",
              g_dir, g_dir, g_dir, g_dir, g_dir, g_dir) == 0);
    char ck[128], saved[128];
    snprintf(ck, sizeof ck, "%s/out/checkpoint.bin", g_dir);
    snprintf(saved, sizeof saved, "%s/saved.bin", g_dir);
    const struct {
        const char *cmd, *out;
    } cases[] = {
        {"./sample @/out/checkpoint.bin --export @/out/checkpoint.bin", "@/out/checkpoint.bin"},
        {"./sample @/out/checkpoint.bin --export @/link.bin", "@/link.bin"},
        {"./sample @/out/checkpoint.bin --export @/hard.bin", "@/hard.bin"},
        {"./sample @/out/checkpoint.bin --explain --prompt ab --html @/out/checkpoint.bin",
         "@/out/checkpoint.bin"},
        {"./sample @/out/checkpoint.bin --prompt ab --attention-map @/out/checkpoint.bin",
         "@/out/checkpoint.bin"},
        {"./sample @/out/checkpoint.bin --vocab-from @/lines.txt --export @/lines.txt",
         "@/lines.txt"},
        {"./train --resume @/out/checkpoint.bin --dump-state @/out/checkpoint.bin",
         "@/out/checkpoint.bin"},
        {"./train --resume @/out/checkpoint.bin --dump-state @/link.bin", "@/link.bin"},
        {"./train @/cfg.json --dump-state @/cfg.json", "@/cfg.json"},
        {"./train @/cfg.json --init-from @/out/checkpoint.bin --dump-state @/out/checkpoint.bin",
         "@/out/checkpoint.bin"},
        {"./train @/cfg.json --data.path=@/lines.txt --dump-state @/lines.txt", "@/lines.txt"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[1024], out[256];
        expand_at(cmd, sizeof cmd, cases[i].cmd, g_dir);
        snprintf(out, sizeof out, "%s%s", g_dir, cases[i].out + 1);
        char before[4096] = "", after[4096] = "";
        slurp(out, before, sizeof before);
        int code = run("%s", cmd);
        slurp(out, after, sizeof after);
        CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, out) &&
                      strstr(g_err, "the input"),
                  "%s: exit %d: %s", cmd, code, g_err);
        CHECK_MSG(strcmp(before, after) == 0 && same_bytes(ck, saved), "%s replaced an input", cmd);
    }
    // an output beside the input, and "-", are written as before
    CHECK_MSG(run("./sample %s --export %s/out/model.safetensors", ck, g_dir) == 0, "%s", g_err);
    CHECK_MSG(run("./train --resume %s --dump-state - > /dev/null", ck) == 0, "%s", g_err);
    cleanup();
}

// ./sample stopped by SIGINT or SIGTERM while it writes leaves no temporary file; the next write
// of a name removes the temporary files that killed writers of it left (a process that no longer
// runs), and no other. build/sample-test raises the signal while the temporary file exists.
static void test_sample_temps_removed(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 2);
    CHECK(run("./train %s/cfg.json", g_dir) == 0);
    const char *sigs[2][2] = {{"INT", "130"}, {"TERM", "143"}};
    for (int i = 0; i < 2; i++) {
        int code = run("TGPT_TEST_SIGNAL_WRITING=%s build/sample-test %s/out/checkpoint.bin "
                       "--export %s/m.safetensors; "
                       "echo $? > %s/code; ls -a %s",
                       sigs[i][0], g_dir, g_dir, g_dir, g_dir);
        char rc[16] = "";
        char cpath[128];
        snprintf(cpath, sizeof cpath, "%s/code", g_dir);
        slurp(cpath, rc, sizeof rc);
        CHECK_MSG(code == 0 && strncmp(rc, sigs[i][1], 3) == 0, "SIG%s: exit %s", sigs[i][0], rc);
        CHECK_MSG(!strstr(g_out, "m.safetensors.tmp."), "SIG%s left a temporary file: %s",
                  sigs[i][0], g_out);
        CHECK(!path_exists("%s/m.safetensors", g_dir));
    }
    // killed writers' leftovers (pid 999999999 runs nowhere: above any pid_max) go with the next
    // write of that name; a live process's (this one's parent shell is alive: the test's own pid)
    // and another name's stay
    CHECK(run("cd %s && touch m.safetensors.tmp.999999999.0 m.safetensors.tmp.999999999.7 "
              "m.safetensors.tmp.%ld.0 "
              "other.safetensors.tmp.999999999.0",
              g_dir, (long)getpid()) == 0);
    CHECK_MSG(run("./sample %s/out/checkpoint.bin --export %s/m.safetensors", g_dir, g_dir) == 0,
              "%s", g_err);
    CHECK(path_exists("%s/m.safetensors", g_dir));
    CHECK(!path_exists("%s/m.safetensors.tmp.999999999.0", g_dir) &&
          !path_exists("%s/m.safetensors.tmp.999999999.7", g_dir));
    CHECK(path_exists("%s/m.safetensors.tmp.%ld.0", g_dir, (long)getpid()));
    CHECK(path_exists("%s/other.safetensors.tmp.999999999.0", g_dir));
    cleanup();
}

// Resuming an older checkpoint in its own directory, where checkpoint.bin is later, is refused
// (it would replace checkpoint.bin and drop the logs' later rows); --rewind does it on purpose,
// another out_dir branches.
static void test_resume_older_checkpoint_refused(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 20);
    CHECK(run("./train %s/cfg.json --train.keep_checkpoints=3 --log.log_interval=1", g_dir) == 0);
    char ck[128], saved[128];
    snprintf(ck, sizeof ck, "%s/out/checkpoint.bin", g_dir);
    snprintf(saved, sizeof saved, "%s/saved.bin", g_dir);
    CHECK(run("cp %s %s", ck, saved) == 0);
    int rows = file_lines("%s/out/metrics.csv", g_dir);
    int code = run("./train --resume %s/out/checkpoint_10.bin --train.max_steps=30", g_dir);
    expect_error(code, 2, "checkpoint_10.bin' is at step 10", "is at step 20");
    CHECK(strstr(g_err, "--rewind") && strstr(g_err, "--train.out_dir"));
    CHECK(same_bytes(ck, saved) && file_lines("%s/out/metrics.csv", g_dir) == rows);
    // the latest checkpoint itself resumes as before; another directory branches
    code = run(
        "./train --resume %s/out/checkpoint_10.bin --train.max_steps=12 --train.out_dir=%s/branch",
        g_dir, g_dir);
    CHECK_MSG(code == 0 && same_bytes(ck, saved), "branch: exit %d: %s", code, g_err);
    code = run("./train --resume %s/out/checkpoint_10.bin --train.max_steps=12 --rewind", g_dir);
    CHECK_MSG(code == 0 && !same_bytes(ck, saved), "rewind: exit %d: %s", code, g_err);
    code = run("./train %s/cfg.json --rewind", g_dir);
    expect_error(code, 2, "--rewind goes with --resume", NULL);
    cleanup();
}

// --train.overwrite=true removes exactly the names the trainer writes: checkpoint_<step>.bin as
// it prints the step ("%ld"), not a user's checkpoint_0007.bin or checkpoint_+7.bin.
static void test_overwrite_removes_exact_names(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 2);
    CHECK(run("./train %s/cfg.json", g_dir) == 0);
    CHECK(run("cd %s/out && touch checkpoint_0007.bin checkpoint_00.bin checkpoint_+7.bin "
              "checkpoint_7.bin checkpoint_0.bin",
              g_dir) == 0);
    CHECK_MSG(run("./train %s/cfg.json --train.overwrite=true", g_dir) == 0, "%s", g_err);
    CHECK(path_exists("%s/out/checkpoint_0007.bin", g_dir) &&
          path_exists("%s/out/checkpoint_00.bin", g_dir) &&
          path_exists("%s/out/checkpoint_+7.bin", g_dir));
    CHECK(!path_exists("%s/out/checkpoint_7.bin", g_dir) &&
          !path_exists("%s/out/checkpoint_0.bin", g_dir));
    cleanup();
}

// A directory that should be one and is a file is named once as what it is.
static void test_not_a_directory_message(void) {
    tmpdir("cli");
    write_tiny_config("cfg.json", 2);
    CHECK(run("mkdir %s/cmp && touch %s/cmp/0.01", g_dir, g_dir) == 0);
    int code = run("./train %s/cfg.json --compare train.lr=0.01,0.02 --train.out_dir=%s/cmp", g_dir,
                   g_dir);
    expect_error(code, 2, "/cmp/0.01' is not a directory: a variant writes", NULL);
    CHECK_MSG(!strstr(g_err, "not a directory, not a directory"), "%s", g_err);
    cleanup();
}

// Every key ./lab gradcheck accepts takes effect: model.qk_norm builds the model it names, whose
// norms' gains (and LayerNorm's biases) are among the tensors checked.
static void test_lab_gradcheck_qk_norm(void) {
    tmpdir("labqk");
    int code = run("./lab gradcheck --model.qk_norm=layernorm");
    CHECK_MSG(code == 0 && strstr(g_out, "layer0.q_norm_w") && strstr(g_out, "layer0.k_norm_b"),
              "exit %d: %s %s", code, g_out, g_err);
    code = run("./lab gradcheck --model.qk_norm=rmsnorm");
    CHECK_MSG(code == 0 && strstr(g_out, "layer0.q_norm_w") && !strstr(g_out, "q_norm_b"),
              "exit %d: %s %s", code, g_out, g_err);
    cleanup();
}

const TestCase tests_cli[] = {
    {"cli_shakespeare_without_network", test_shakespeare_without_network},
    {"cli_docs_list_every_output_column", test_docs_list_every_output_column},
    {"cli_docs_format_reader", test_docs_format_reader},
    {"cli_keep_checkpoints", test_keep_checkpoints},
    {"cli_lab_gradcheck_qk_norm", test_lab_gradcheck_qk_norm},
    {"cli_attn_window", test_attn_window},
    {"cli_compare_values", test_compare_values},
    {"cli_extend_keeps_lr_schedule", test_extend_keeps_lr_schedule},
    {"cli_eta_waits_for_step_times", test_eta_waits_for_step_times},
    {"cli_bench_products_add_up_to_their_phases", test_bench_products_add_up_to_their_phases},
    {"cli_summary_is_json_and_top_level_keys", test_summary_is_json_and_top_level_keys},
    {"cli_compare_scaling_same_start_and_batches", test_compare_scaling_same_start_and_batches},
    {"cli_compare_qk_norm_variant_starts_as_alone", test_compare_qk_norm_variant_starts_as_alone},
    {"cli_corpus_is_reproducible", test_corpus_is_reproducible},
    {"cli_config_doc_documents_every_key", test_config_doc_documents_every_key},
    {"cli_bad_input_table", test_bad_input_table},
    {"cli_resume_in_place", test_resume_in_place},
    {"cli_only_own_temps_removed", test_only_own_temps_removed},
    {"cli_device_nodes_refused", test_device_nodes_refused},
    {"cli_dash_is_stdout", test_dash_is_stdout},
    {"cli_help_and_version", test_help_and_version},
    {"cli_attn_impl_definition_matches_engine", test_attn_impl_definition_matches_engine},
    {"cli_attn_impl_definition_matches_engine_qk_norm",
     test_attn_impl_definition_matches_engine_qk_norm},
    {"cli_sample_options", test_sample_options},
    {"cli_bad_out_dir", test_bad_out_dir},
    {"cli_train_outputs_and_determinism", test_train_outputs_and_determinism},
    {"cli_logit_columns", test_logit_columns},
    {"cli_resume_is_exact", test_resume_is_exact},
    {"cli_output_never_replaces_input", test_output_never_replaces_input},
    {"cli_sample_temps_removed", test_sample_temps_removed},
    {"cli_resume_older_checkpoint_refused", test_resume_older_checkpoint_refused},
    {"cli_overwrite_removes_exact_names", test_overwrite_removes_exact_names},
    {"cli_not_a_directory_message", test_not_a_directory_message},
    {NULL, NULL},
};
