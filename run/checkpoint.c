// run/checkpoint.c: tensor files (checkpoints, debug dumps) with CRC-32 and crash-safe replacement.
#define _POSIX_C_SOURCE 200809L
#include "run/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/config.h"
#include "base/outfile.h"
#include "run/optimizer.h"  // AdamW, the gradient norm, the finiteness check

#define MAX_FILE_BYTES ((uint64_t)1 << 40)

// ---- CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), slicing by 4 bytes ----
static uint32_t crc_table[4][256];
static int crc_ready = 0;
static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 4; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
    crc_ready = 1;
}

uint32_t crc32_update(uint32_t crc, const void *data, size_t n) {
    if (!crc_ready) crc_init();
    const unsigned char *p = data;
    crc = ~crc;
    while (n >= 4) {
        crc ^= (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        crc = crc_table[3][crc & 0xFF] ^ crc_table[2][(crc >> 8) & 0xFF] ^
              crc_table[1][(crc >> 16) & 0xFF] ^ crc_table[0][crc >> 24];
        p += 4;
        n -= 4;
    }
    while (n--) crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

static size_t dtype_size(int dtype) {
    switch (dtype) {
    case DT_F32:
    case DT_I32:
        return 4;
    case DT_U8:
        return 1;
    case DT_F64:
    case DT_U64:
    case DT_I64:
        return 8;
    default:
        return 0;
    }
}

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

// ---- reading ----
static uint32_t rd_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// Length of the record at buf[pos] (header and data), 0 when its header is not a record's (an
// empty name, an unknown dtype, more than 8 dimensions), or SIZE_MAX when it runs past `end`.
static size_t record_length(const unsigned char *buf, size_t pos, size_t end) {
    size_t start = pos;
    if (end - pos < 1) return SIZE_MAX;
    size_t name_len = buf[pos++];
    if (name_len == 0) return 0;
    if (end - pos < name_len + 2) return SIZE_MAX;
    pos += name_len;
    size_t esz = dtype_size(buf[pos]);
    int ndim = buf[pos + 1];
    pos += 2;
    if (esz == 0 || ndim > 8) return 0;
    if (end - pos < 4u * (size_t)ndim) return SIZE_MAX;
    size_t count = 1;
    for (int d = 0; d < ndim; d++, pos += 4)
        if (!mul_size(count, rd_u32(buf + pos), &count)) return SIZE_MAX;
    size_t bytes;
    if (!mul_size(count, esz, &bytes) || bytes > end - pos) return SIZE_MAX;
    return pos + bytes - start;
}

// Why a file's CRC does not match, found by walking its records from byte 12 with the CRC of
// everything walked so far: a complete file (records, then their CRC) followed by more bytes has
// trailing data (*end_out = where the complete file ends); records that run past the end of the
// file were cut off (truncated); anything else is corrupt.
enum { DAMAGE_CORRUPT, DAMAGE_TRUNCATED, DAMAGE_TRAILING };
static int diagnose_damage(const unsigned char *buf, size_t len, size_t *end_out) {
    size_t pos = 12;
    uint32_t crc = crc32_update(0, buf, 12);
    for (;;) {
        if (len - pos < 4) return DAMAGE_TRUNCATED;  // cut inside the CRC or a record
        if (len - pos == 4) return DAMAGE_CORRUPT;   // whole, but the CRC disagrees
        if (rd_u32(buf + pos) == crc) {              // a complete file ends here
            *end_out = pos + 4;
            return DAMAGE_TRAILING;
        }
        size_t n = record_length(buf, pos, len);
        if (n == SIZE_MAX) return DAMAGE_TRUNCATED;
        if (n == 0) return DAMAGE_CORRUPT;
        crc = crc32_update(crc, buf + pos, n);
        pos += n;
    }
}

int tfile_read(TFile *f, const char *path, const char *magic, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    const char *kind = strcmp(magic, "TGPTCKPT") == 0 ? "checkpoint" : "tensor file";
    if (!host_is_little_endian()) {
        snprintf(err, errlen, "'%s': big-endian hosts are not supported", path);
        return 0;
    }
    // a FIFO, a device or a directory is refused before the first read (nothing blocks)
    uint64_t size;
    const char *why;
    FILE *fp = fopen_regular(path, &size, &why);
    if (!fp) {
        snprintf(err, errlen, "cannot open %s '%s': %s", kind, path, why);
        return 0;
    }
    if (size < 16) {
        snprintf(err, errlen, "'%s' is truncated or not a %s (%llu bytes)", path, kind,
                 (unsigned long long)size);
        fclose(fp);
        return 0;
    }
    if (size > MAX_FILE_BYTES) {
        snprintf(err, errlen, "'%s' is too large (%llu bytes)", path, (unsigned long long)size);
        fclose(fp);
        return 0;
    }
    size_t len = (size_t)size;
    // the magic and version first, so a large foreign file is refused without reading it all
    unsigned char head[12];
    if (fread(head, 1, 12, fp) != 12) {
        snprintf(err, errlen, "cannot read '%s': short read", path);
        fclose(fp);
        return 0;
    }
    if (memcmp(head, magic, 8) != 0) {
        snprintf(err, errlen, "'%s' is not a %s file (bad magic)", path,
                 strcmp(magic, "TGPTCKPT") == 0 ? "checkpoint" : magic);
        fclose(fp);
        return 0;
    }
    uint32_t version = rd_u32(head + 8);
    if (version != TFILE_VERSION) {
        snprintf(err, errlen, "'%s' has format version %u; this build reads version %d", path,
                 version, TFILE_VERSION);
        fclose(fp);
        return 0;
    }
    char what[1200];
    snprintf(what, sizeof what, "reading '%.1000s' (%zu bytes)", path, len);
    if (!memory_fits((double)len, what, err, errlen)) {
        fclose(fp);
        return 0;
    }
    unsigned char *buf = malloc(len);
    if (!buf) {
        snprintf(err, errlen, "out of memory reading '%s' (%zu bytes)", path, len);
        fclose(fp);
        return 0;
    }
    memcpy(buf, head, 12);
    size_t got = 12 + fread(buf + 12, 1, len - 12, fp);
    int rerr = ferror(fp);
    fclose(fp);
    if (got != len || rerr) {
        snprintf(err, errlen, "cannot read '%s': short read", path);
        free(buf);
        return 0;
    }
    uint32_t stored = rd_u32(buf + len - 4), actual = crc32_update(0, buf, len - 4);
    if (stored != actual) {
        size_t end = 0;
        int damage = diagnose_damage(buf, len, &end);
        if (damage == DAMAGE_TRUNCATED)
            snprintf(err, errlen,
                     "'%s' is truncated: its records run past the end of the file (%zu bytes)",
                     path, len);
        else if (damage == DAMAGE_TRAILING)
            snprintf(err, errlen,
                     "'%s' has %zu bytes of trailing data after the end of the %s at byte %zu "
                     "(something was appended to it)",
                     path, len - end, kind, end);
        else
            snprintf(err, errlen, "'%s' is corrupt: CRC-32 mismatch (stored %08x, computed %08x)",
                     path, stored, actual);
        free(buf);
        return 0;
    }
    // walk the records, checking every length against the bytes that remain
    size_t pos = 12, end = len - 4;
    int cap = 64;
    TRecord *recs = malloc(sizeof(TRecord) * (size_t)cap);
    if (!recs) {
        free(buf);
        snprintf(err, errlen, "out of memory reading '%s'", path);
        return 0;
    }
    int n = 0;
    while (pos < end) {
        TRecord r;
        memset(&r, 0, sizeof r);
        size_t name_len = buf[pos++];
        if (name_len == 0 || end - pos < name_len + 2) goto bad;
        memcpy(r.name, buf + pos, name_len);
        r.name[name_len] = 0;
        pos += name_len;
        r.dtype = buf[pos++];
        r.ndim = buf[pos++];
        size_t esz = dtype_size(r.dtype);
        if (esz == 0 || r.ndim > 8 || (size_t)(end - pos) < 4u * (size_t)r.ndim) goto bad;
        size_t count = 1;
        for (int d = 0; d < r.ndim; d++) {
            r.shape[d] = rd_u32(buf + pos);
            pos += 4;
            if (!mul_size(count, r.shape[d], &count)) goto bad;
        }
        size_t bytes;
        if (!mul_size(count, esz, &bytes) || bytes > end - pos) goto bad;
        r.count = count;
        r.data = buf + pos;
        pos += bytes;
        if (n == cap) {
            cap *= 2;
            TRecord *nr = realloc(recs, sizeof(TRecord) * (size_t)cap);
            if (!nr) {
                free(recs);
                free(buf);
                snprintf(err, errlen, "out of memory reading '%s'", path);
                return 0;
            }
            recs = nr;
        }
        recs[n++] = r;
    }
    f->buf = buf;
    f->len = len;
    f->records = recs;
    f->n_records = n;
    return 1;
bad:
    snprintf(err, errlen, "'%s' is malformed: record %d at byte %zu runs past the end of the file",
             path, n, pos);
    free(recs);
    free(buf);
    return 0;
}

const TRecord *tfile_find(const TFile *f, const char *name) {
    for (int i = 0; i < f->n_records; i++)
        if (strcmp(f->records[i].name, name) == 0) return &f->records[i];
    return NULL;
}

void tfile_free(TFile *f) {
    free(f->buf);
    free(f->records);
    memset(f, 0, sizeof *f);
}

// ---- writing ----
// Through the one writer (base/outfile.h): a temporary file beside PATH, renamed over it at the
// commit after an fsync; an existing PATH that is not a regular file is refused.
struct TWriter {
    FILE *fp;
    uint32_t crc;
    int failed;
    char path[4096];  // for messages
};

static void tw_bytes(TWriter *w, const void *data, size_t n) {
    if (w->failed || n == 0) return;
    if (fwrite(data, 1, n, w->fp) != n) {
        w->failed = errno ? errno : EIO;
        return;
    }
    w->crc = crc32_update(w->crc, data, n);
}

static void put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

TWriter *tw_open(const char *path, const char *magic, char *err, size_t errlen) {
    TWriter *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory opening '%s'", path);
        return NULL;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    if (!(w->fp = out_begin(path, OUT_DURABLE | OUT_DASH, err, errlen))) {
        free(w);
        return NULL;
    }
    unsigned char hdr[12];
    memcpy(hdr, magic, 8);
    put_u32(hdr + 8, TFILE_VERSION);
    tw_bytes(w, hdr, 12);
    return w;
}

int tw_record(TWriter *w, const char *name, int dtype, int ndim, const uint32_t *shape,
              const void *data) {
    size_t name_len = strlen(name), count = 1;
    if (name_len == 0 || name_len > 255 || ndim > 8) {
        w->failed = EINVAL;
        return 0;
    }
    unsigned char hdr[3 + 255 + 32];
    size_t h = 0;
    hdr[h++] = (unsigned char)name_len;
    memcpy(hdr + h, name, name_len);
    h += name_len;
    hdr[h++] = (unsigned char)dtype;
    hdr[h++] = (unsigned char)ndim;
    for (int d = 0; d < ndim; d++) {
        put_u32(hdr + h, shape[d]);
        h += 4;
        count *= shape[d];
    }
    tw_bytes(w, hdr, h);
    tw_bytes(w, data, count * dtype_size(dtype));
    return !w->failed;
}

int tw_commit(TWriter *w, char *err, size_t errlen) {
    unsigned char tail[4];
    put_u32(tail, w->crc);
    tw_bytes(w, tail, 4);
    int ok;
    if (w->failed) {
        snprintf(err, errlen, "cannot write '%s': %s", w->path, strerror(w->failed));
        out_cancel(w->fp);
        ok = 0;
    } else {
        ok = out_end(w->fp, err, errlen);
    }
    free(w);
    return ok;
}

void tw_abort(TWriter *w) {
    if (!w) return;
    out_cancel(w->fp);
    free(w);
}

// A tensor file's name: NAME.bin.
static int is_tensor_file(const char *name, size_t n) {
    return n > 4 && strncmp(name + n - 4, ".bin", 4) == 0;
}

int checkpoint_remove_stale_temps(const char *dir, char *err, size_t errlen) {
    return out_remove_stale_temps(dir, is_tensor_file, err, errlen);
}

// ---- checkpoints ----
#define REAL_DT   (sizeof(real) == 4 ? DT_F32 : DT_F64)
#define MAX_STEPS 1000000000L  // train.max_steps' upper limit (base/config.c)

// Whether a training state is invalid, describing what is wrong in buf. The writer refuses what
// the reader would: a checkpoint is never written that cannot be loaded.
static int state_problem(const TrainState *st, char *buf, size_t n) {
    if (st->step < 0 || st->step > MAX_STEPS || st->skipped_steps < 0 ||
        st->skipped_steps > st->step) {
        snprintf(buf, n, "an invalid step count (%ld steps, %ld skipped; at most %ld steps)",
                 st->step, st->skipped_steps, MAX_STEPS);
        return 1;
    }
    // xoshiro's one fixed point: from an all-zero state it returns 0 for ever, and the batch
    // sampler's rejection loop would never end
    if ((st->rng.s[0] | st->rng.s[1] | st->rng.s[2] | st->rng.s[3]) == 0) {
        snprintf(buf, n, "an all-zero random state (xoshiro256** would return 0 for ever)");
        return 1;
    }
    // +inf means "not evaluated yet"; a loss is never negative nor NaN
    if (!(st->best_val_loss >= 0)) {
        snprintf(buf, n, "an invalid best_val_loss (%g)", st->best_val_loss);
        return 1;
    }
    if (!(st->elapsed_s >= 0 && st->elapsed_s < 1e12)) {  // seconds: at most 30,000 years
        snprintf(buf, n, "an invalid elapsed_s (%g)", st->elapsed_s);
        return 1;
    }
    return 0;
}

int checkpoint_save(const char *path, const GPT *m, const char *config_json, const Vocab *vocab,
                    const TrainState *st, char *err, size_t errlen) {
    if (!gpt_all_finite(m)) {
        snprintf(err, errlen, "refusing to write '%s': the model holds non-finite values", path);
        return 0;
    }
    char problem[160];
    if (state_problem(st, problem, sizeof problem)) {
        snprintf(err, errlen, "refusing to write '%s': the training state holds %s", path, problem);
        return 0;
    }
    int32_t *cps = xmalloc(sizeof(int32_t) * (size_t)vocab->vocab_size,
                           "vocabulary");  // before the file exists
    for (int i = 0; i < vocab->vocab_size; i++) cps[i] = (int32_t)vocab->chars[i];
    TWriter *w = tw_open(path, "TGPTCKPT", err, errlen);
    if (!w) {
        free(cps);
        return 0;
    }
    uint32_t shape[2];
    shape[0] = (uint32_t)strlen(config_json);
    tw_record(w, "config", DT_U8, 1, shape, config_json);
    shape[0] = (uint32_t)vocab->vocab_size;
    tw_record(w, "vocab", DT_I32, 1, shape, cps);
    free(cps);
    const ModelDims *d = &m->dims;
    int64_t dims[5] = {d->vocab_size, d->block_size, d->n_layer, d->n_head, d->n_embd};
    shape[0] = 5;
    tw_record(w, "dims", DT_I64, 1, shape, dims);
    int64_t state[2] = {st->step, st->skipped_steps};
    shape[0] = 2;
    tw_record(w, "state", DT_I64, 1, shape, state);
    shape[0] = 4;
    tw_record(w, "rng", DT_U64, 1, shape, st->rng.s);
    shape[0] = 1;
    tw_record(w, "best_val_loss", DT_F64, 1, shape, &st->best_val_loss);
    tw_record(w, "elapsed_s", DT_F64, 1, shape, &st->elapsed_s);
    static const char *const prefix[3] = {"", "adam_m.", "adam_v."};
    const real *bufs[3] = {m->params, m->adam_m, m->adam_v};
    char name[TENSOR_NAME_MAX + 16];
    for (int b = 0; b < 3; b++) {
        for (int i = 0; i < m->n_tensors; i++) {
            const TensorInfo *t = &m->tensors[i];
            snprintf(name, sizeof name, "%s%s", prefix[b], t->name);
            shape[0] = (uint32_t)t->shape[0];
            shape[1] = (uint32_t)t->shape[1];
            tw_record(w, name, REAL_DT, t->ndim, shape, bufs[b] + t->offset);
        }
    }
    return tw_commit(w, err, errlen);
}

static int record_is(const TRecord *r, int dtype, size_t count) {
    return r && r->dtype == dtype && r->ndim == 1 && r->count == count;
}

// The header records that are not tensors; every other record of a checkpoint is a parameter,
// an AdamW first moment ("adam_m.") or a second moment ("adam_v.").
static int is_header_record(const char *name) {
    static const char *const names[] = {"config", "vocab",         "dims",     "state",
                                        "rng",    "best_val_loss", "elapsed_s"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) return 1;
    return 0;
}
static int tensor_group(const char *name) {
    return strncmp(name, "adam_m.", 7) == 0 ? 1 : strncmp(name, "adam_v.", 7) == 0 ? 2 : 0;
}

// Element j of a float32 or float64 record (unaligned little-endian data).
static double record_value(const TRecord *r, size_t j) {
    if (r->dtype == DT_F32) {
        float x;
        memcpy(&x, (const unsigned char *)r->data + 4 * j, 4);
        return x;
    }
    double x;
    memcpy(&x, (const unsigned char *)r->data + 8 * j, 8);
    return x;
}

// The config record must be a valid configuration (UTF-8 JSON, every key known and in range)
// describing the model the dims record describes.
// It also gives the dims their QK-norm, which only the config records (a checkpoint from before
// model.qk_norm holds none: its config has no such key).
static int check_config_record(Checkpoint *ck, const char *path, char *err, size_t errlen) {
    Config cfg;
    char cerr[1024];
    config_defaults(&cfg);
    if (!config_load_json(&cfg, ck->config_json, strlen(ck->config_json), NULL, cerr,
                          sizeof cerr) ||
        !config_finalize(&cfg, cerr, sizeof cerr))
        return refuse(err, errlen, "'%s' has an invalid config record: %s", path, cerr);
    ck->dims.qk_norm = gpt_qk_norm_kind(cfg.qk_norm);
    const ModelDims *d = &ck->dims;
    const char *key = cfg.block_size != d->block_size ? "block_size"
                      : cfg.n_layer != d->n_layer     ? "n_layer"
                      : cfg.n_head != d->n_head       ? "n_head"
                      : cfg.n_embd != d->n_embd       ? "n_embd"
                                                      : NULL;
    if (key) {
        int in_dims = !strcmp(key, "block_size") ? d->block_size
                      : !strcmp(key, "n_layer")  ? d->n_layer
                      : !strcmp(key, "n_head")   ? d->n_head
                                                 : d->n_embd;
        int in_cfg = !strcmp(key, "block_size") ? cfg.block_size
                     : !strcmp(key, "n_layer")  ? cfg.n_layer
                     : !strcmp(key, "n_head")   ? cfg.n_head
                                                : cfg.n_embd;
        return refuse(
            err, errlen,
            "'%s' is inconsistent: its dims record says %s %d but its config record says %d", path,
            key, in_dims, in_cfg);
    }
    return 1;
}

// The tensor records must hold exactly the model the dims describe: wte (V,C) and wpe (T,C) fix
// V, T and C, and the total count of parameter values then fixes n_layer. This is checked on
// the file's records, before any model is built from the dims. Also sets ck->has_optimizer.
static int check_tensor_records(Checkpoint *ck, const char *path, char *err, size_t errlen) {
    const TFile *f = &ck->file;
    const ModelDims *d = &ck->dims;
    size_t n_params = 0;
    if (gpt_memory_bytes(d, 1, 1, &n_params) == 0)
        return refuse(err, errlen, "'%s': its dimensions overflow the address space", path);
    static const char *const emb[2] = {"wte", "wpe"};
    const uint32_t rows[2] = {(uint32_t)d->vocab_size, (uint32_t)d->block_size};
    for (int i = 0; i < 2; i++) {
        const TRecord *r = tfile_find(f, emb[i]);
        if (!r) return refuse(err, errlen, "'%s' has no tensor '%s'", path, emb[i]);
        if (r->ndim != 2 || r->shape[0] != rows[i] || r->shape[1] != (uint32_t)d->n_embd)
            return refuse(
                err, errlen,
                "'%s' is inconsistent: tensor '%s' has shape [%u%s%u] but its dims record "
                "makes it [%u,%d]",
                path, emb[i], r->ndim > 0 ? r->shape[0] : 0u, r->ndim > 1 ? "," : "",
                r->ndim > 1 ? r->shape[1] : 0u, rows[i], d->n_embd);
    }
    size_t total[3] = {0, 0, 0};
    for (int i = 0; i < f->n_records; i++) {
        const TRecord *r = &f->records[i];
        if (is_header_record(r->name)) continue;
        if (r->dtype != DT_F32 && r->dtype != REAL_DT)
            return refuse(err, errlen, "'%s': tensor '%s' has an unsupported element type", path,
                          r->name);
        size_t *t = &total[tensor_group(r->name)];
        if (*t + r->count < *t)
            return refuse(err, errlen, "'%s': its tensors overflow the address space", path);
        *t += r->count;
    }
    static const char *const what[3] = {"parameter tensors", "AdamW first moments",
                                        "AdamW second moments"};
    ck->has_optimizer = total[1] > 0 || total[2] > 0;
    for (int g = 0; g < (ck->has_optimizer ? 3 : 1); g++)
        if (total[g] != n_params)
            return refuse(err, errlen,
                          "'%s' is inconsistent: its %s hold %zu values but its dims (vocab %d, "
                          "block_size %d, n_layer %d, n_embd %d) make %zu",
                          path, what[g], total[g], d->vocab_size, d->block_size, d->n_layer,
                          d->n_embd, n_params);
    // every value finite, and the second moments (averages of squares) never negative
    for (int i = 0; i < f->n_records; i++) {
        const TRecord *r = &f->records[i];
        if (is_header_record(r->name)) continue;
        int second_moment = tensor_group(r->name) == 2;
        for (size_t j = 0; j < r->count; j++) {
            double x = record_value(r, j);
            if (!isfinite(x))
                return refuse(
                    err, errlen,
                    "'%s': tensor '%s' holds a non-finite value (%g at index %zu); a checkpoint "
                    "holds finite parameters and optimizer state",
                    path, r->name, x, j);
            if (second_moment && x < 0)
                return refuse(err, errlen,
                              "'%s': tensor '%s' holds a negative second moment (%g at index %zu)",
                              path, r->name, x, j);
        }
    }
    return 1;
}

int checkpoint_open(Checkpoint *ck, const char *path, char *err, size_t errlen) {
    memset(ck, 0, sizeof *ck);
    if (!tfile_read(&ck->file, path, "TGPTCKPT", err, errlen)) return 0;
    const TFile *f = &ck->file;
    const TRecord *cfg = tfile_find(f, "config"), *voc = tfile_find(f, "vocab"),
                  *dims = tfile_find(f, "dims");
    const TRecord *state = tfile_find(f, "state"), *rng = tfile_find(f, "rng"),
                  *best = tfile_find(f, "best_val_loss");
    const char *missing = !cfg     ? "config"
                          : !voc   ? "vocab"
                          : !dims  ? "dims"
                          : !state ? "state"
                          : !rng   ? "rng"
                          : !best  ? "best_val_loss"
                                   : NULL;
    if (missing) {
        snprintf(err, errlen, "'%s' has no '%s' record", path, missing);
        goto fail;
    }
    if (cfg->dtype != DT_U8 || cfg->ndim != 1 || !record_is(dims, DT_I64, 5) ||
        !record_is(state, DT_I64, 2) || !record_is(rng, DT_U64, 4) || !record_is(best, DT_F64, 1) ||
        voc->dtype != DT_I32 || voc->ndim != 1) {
        snprintf(err, errlen, "'%s' has a header record of the wrong type or size", path);
        goto fail;
    }
    ck->config_json = xmalloc(cfg->count + 1, "checkpoint config");
    memcpy(ck->config_json, cfg->data, cfg->count);
    ck->config_json[cfg->count] = 0;
    if (memchr(ck->config_json, 0, cfg->count)) {
        snprintf(err, errlen, "'%s' has an invalid config record: it contains a NUL byte", path);
        goto fail;
    }
    int64_t dv[5], sv[2];
    memcpy(dv, dims->data, sizeof dv);
    memcpy(sv, state->data, sizeof sv);
    // the same limits as the configuration keys (base/config.c): vocab_size, block_size, n_layer,
    // n_head, n_embd; a damaged or hostile file must not make us build an absurd model
    static const int64_t dim_max[5] = {0x110000, 65536, 64, 256, 8192};
    static const char *const dim_name[5] = {"vocab_size", "block_size", "n_layer", "n_head",
                                            "n_embd"};
    for (int i = 0; i < 5; i++)
        if (dv[i] <= 0 || dv[i] > dim_max[i]) {
            snprintf(err, errlen, "'%s' has an invalid %s (%lld; allowed 1..%lld)", path,
                     dim_name[i], (long long)dv[i], (long long)dim_max[i]);
            goto fail;
        }
    ck->dims =
        (ModelDims){(int)dv[0], (int)dv[1], (int)dv[2], (int)dv[3], (int)dv[4], QK_NORM_NONE};
    if ((size_t)ck->dims.vocab_size != voc->count || ck->dims.n_embd % ck->dims.n_head != 0) {
        snprintf(err, errlen,
                 "'%s' is inconsistent: its vocabulary size or head count disagrees with its dims "
                 "record",
                 path);
        goto fail;
    }
    ck->vocab.vocab_size = (int)voc->count;
    ck->vocab.chars = xmalloc(sizeof(uint32_t) * voc->count, "vocabulary");
    memcpy(ck->vocab.chars, voc->data, sizeof(uint32_t) * voc->count);
    // the distinct characters of a valid UTF-8 text without NUL (base/data.c), sorted
    for (size_t i = 0; i < voc->count; i++) {
        uint32_t c = ck->vocab.chars[i];
        if (c == 0 || !unicode_scalar(c) || (i > 0 && c <= ck->vocab.chars[i - 1])) {
            snprintf(
                err, errlen,
                "'%s' has an invalid vocabulary (entry %zu is 0x%lX; expected ascending Unicode "
                "characters other than U+0000 and surrogates)",
                path, i, (unsigned long)c);
            goto fail;
        }
    }
    ck->state.step = (long)sv[0];
    ck->state.skipped_steps = (long)sv[1];
    memcpy(ck->state.rng.s, rng->data, sizeof ck->state.rng.s);
    memcpy(&ck->state.best_val_loss, best->data, sizeof(double));
    const TRecord *elapsed =
        tfile_find(f, "elapsed_s");  // absent from checkpoints of earlier versions: 0
    if (elapsed && !record_is(elapsed, DT_F64, 1)) {
        snprintf(err, errlen, "'%s' has an elapsed_s record of the wrong type or size", path);
        goto fail;
    }
    if (elapsed) memcpy(&ck->state.elapsed_s, elapsed->data, sizeof(double));
    char problem[160];
    if (sv[0] != (long)sv[0] || sv[1] != (long)sv[1] ||
        state_problem(&ck->state, problem, sizeof problem)) {
        if (sv[0] != (long)sv[0] || sv[1] != (long)sv[1])
            snprintf(problem, sizeof problem, "an invalid step count");
        snprintf(err, errlen, "'%s' has %s", path, problem);
        goto fail;
    }
    if (!check_config_record(ck, path, err, errlen) || !check_tensor_records(ck, path, err, errlen))
        goto fail;
    return 1;
fail:
    checkpoint_close(ck);
    return 0;
}

int checkpoint_check_memory(const Checkpoint *ck, int B, int T, const char *path, char *err,
                            size_t errlen) {
    size_t n_params = 0, bytes = gpt_memory_bytes(&ck->dims, B, T, &n_params);
    char what[1400];
    const ModelDims *d = &ck->dims;
    snprintf(
        what, sizeof what,
        "the model of '%.1000s' (%zu parameters; n_layer %d, n_head %d, n_embd %d, block_size %d)",
        path, n_params, d->n_layer, d->n_head, d->n_embd, d->block_size);
    return memory_fits(bytes == 0 ? INFINITY : (double)bytes, what, err, errlen);
}

// Whether the model's forward pass is finite on sequences that hold every token of the vocabulary
// (and every position): values that are each finite can still overflow in it (3e38 in wte
// squares to infinity in the first layer norm), and such a model predicts nothing. Sequence s
// holds tokens (s*T + t) mod V, so ceil(V/T) passes of one sequence cover them all. Returns 0
// with the loss of the first pass that is not finite in *loss.
static int forward_is_finite(GPT *m, double *loss) {
    int T = m->T, V = m->dims.vocab_size;
    int *x = xmalloc((size_t)T * sizeof(int), "the check batch"),
        *y = xmalloc((size_t)T * sizeof(int), "the check batch");
    int ok = 1;
    for (int s = 0; ok && (long)s * T < V; s++) {
        for (int t = 0; t < T; t++) {
            x[t] = (int)(((long)s * T + t) % V);
            y[t] = (int)(((long)s * T + t + 1) % V);
        }
        *loss = gpt_forward(m, x, y, 1, T);
        ok = isfinite(*loss);
    }
    free(x);
    free(y);
    return ok;
}

// The parameter of largest magnitude, the first of them in checkpoint order: the one named when
// the forward pass is not finite.
static void largest_parameter(const GPT *m, char *buf, size_t n) {
    int best_t = 0;
    size_t best_j = 0;
    double best = -1;
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        for (size_t j = 0; j < t->size; j++) {
            double v = fabs((double)m->params[t->offset + j]);
            if (v > best) best = v, best_t = i, best_j = j;
        }
    }
    snprintf(buf, n, "tensor '%s' holds %.6g at index %zu, its largest value",
             m->tensors[best_t].name, (double)m->params[m->tensors[best_t].offset + best_j],
             best_j);
}

int checkpoint_restore(const Checkpoint *ck, GPT *m, const char *path, char *err, size_t errlen) {
    static const char *const prefix[3] = {"", "adam_m.", "adam_v."};
    real *bufs[3] = {m->params, m->adam_m, m->adam_v};
    char name[TENSOR_NAME_MAX + 16];
    int nb = ck->has_optimizer ? 3 : 1;
    for (int b = 0; b < nb; b++) {
        for (int i = 0; i < m->n_tensors; i++) {
            const TensorInfo *t = &m->tensors[i];
            snprintf(name, sizeof name, "%s%s", prefix[b], t->name);
            const TRecord *r = tfile_find(&ck->file, name);
            if (!r) {
                snprintf(err, errlen, "'%s' has no tensor '%s'", path, name);
                return 0;
            }
            if (r->ndim != t->ndim || r->shape[0] != (uint32_t)t->shape[0] ||
                (t->ndim == 2 && r->shape[1] != (uint32_t)t->shape[1])) {
                snprintf(err, errlen,
                         "'%s': tensor '%s' has shape [%u%s%u], the model expects [%d,%d]", path,
                         name, r->shape[0], r->ndim == 2 ? "," : "",
                         r->ndim == 2 ? r->shape[1] : 0u, t->shape[0], t->shape[1]);
                return 0;
            }
            real *dst = bufs[b] + t->offset;
            if (r->dtype == REAL_DT) {
                memcpy(dst, r->data, t->size * sizeof(real));
            } else if (r->dtype == DT_F32) {  // float32 checkpoint into the double-precision build
                for (size_t j = 0; j < t->size; j++) {
                    float x;
                    memcpy(&x, (const unsigned char *)r->data + 4 * j, 4);
                    dst[j] = (real)x;
                }
            } else {
                snprintf(err, errlen, "'%s': tensor '%s' has an unsupported element type", path,
                         name);
                return 0;
            }
            for (size_t j = 0; j < t->size; j++)
                if (!isfinite(dst[j])) {
                    snprintf(err, errlen, "'%s': tensor '%s' holds a non-finite value at index %zu",
                             path, name, j);
                    return 0;
                }
        }
    }
    double loss;
    if (!forward_is_finite(m, &loss)) {
        char worst[TENSOR_NAME_MAX + 96];
        largest_parameter(m, worst, sizeof worst);
        snprintf(err, errlen,
                 "'%s' is unusable: its values are finite but the forward pass on one batch is not "
                 "(loss %g);"
                 " %s",
                 path, loss, worst);
        return 0;
    }
    return 1;
}

void checkpoint_close(Checkpoint *ck) {
    tfile_free(&ck->file);
    free(ck->config_json);
    free(ck->vocab.chars);
    memset(ck, 0, sizeof *ck);
}
