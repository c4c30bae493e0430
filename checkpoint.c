// checkpoint.c: tensor files (checkpoints, debug dumps) with CRC-32 and crash-safe replacement.
#define _POSIX_C_SOURCE 200809L
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE_BYTES ((size_t)1 << 40)

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
        for (int t = 1; t < 4; t++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
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
    case DT_F32: case DT_I32: return 4;
    case DT_U8: return 1;
    case DT_F64: case DT_U64: case DT_I64: return 8;
    default: return 0;
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

// Whether walking the record headers of buf runs past its end (the file was cut off).
static int records_overrun(const unsigned char *buf, size_t len) {
    size_t pos = 12, end = len - 4;
    while (pos < end) {
        size_t name_len = buf[pos++];
        if (name_len == 0 || end - pos < name_len + 2) return 1;
        pos += name_len;
        size_t esz = dtype_size(buf[pos]);
        int ndim = buf[pos + 1];
        pos += 2;
        if (esz == 0 || ndim > 8 || end - pos < 4u * (size_t)ndim) return 1;
        size_t count = 1;
        for (int d = 0; d < ndim; d++, pos += 4)
            if (!mul_size(count, rd_u32(buf + pos), &count)) return 1;
        size_t bytes;
        if (!mul_size(count, esz, &bytes) || bytes > end - pos) return 1;
        pos += bytes;
    }
    return 0;
}

int tfile_read(TFile *f, const char *path, const char *magic, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    if (!host_is_little_endian()) { snprintf(err, errlen, "'%s': big-endian hosts are not supported", path); return 0; }
    FILE *fp = fopen(path, "rb");
    if (!fp) { snprintf(err, errlen, "cannot open checkpoint '%s': %s", path, strerror(errno)); return 0; }
    struct stat stt;
    if (fstat(fileno(fp), &stt) != 0 || !S_ISREG(stt.st_mode)) {
        snprintf(err, errlen, "'%s' is not a regular file", path);
        fclose(fp);
        return 0;
    }
    size_t len = (size_t)stt.st_size;
    if (len < 16) {
        snprintf(err, errlen, "'%s' is truncated or not a checkpoint (%zu bytes)", path, len);
        fclose(fp);
        return 0;
    }
    if (len > MAX_FILE_BYTES) { snprintf(err, errlen, "'%s' is too large (%zu bytes)", path, len); fclose(fp); return 0; }
    unsigned char *buf = malloc(len);
    if (!buf) { snprintf(err, errlen, "out of memory reading '%s' (%zu bytes)", path, len); fclose(fp); return 0; }
    size_t got = fread(buf, 1, len, fp);
    int rerr = ferror(fp);
    fclose(fp);
    if (got != len || rerr) { snprintf(err, errlen, "cannot read '%s': short read", path); free(buf); return 0; }
    if (memcmp(buf, magic, 8) != 0) {
        snprintf(err, errlen, "'%s' is not a %s file (bad magic)", path, strcmp(magic, "TGPTCKPT") == 0 ? "checkpoint" : magic);
        free(buf);
        return 0;
    }
    uint32_t version = rd_u32(buf + 8);
    if (version != TFILE_VERSION) {
        snprintf(err, errlen, "'%s' has format version %u; this build reads version %d", path, version, TFILE_VERSION);
        free(buf);
        return 0;
    }
    uint32_t stored = rd_u32(buf + len - 4), actual = crc32_update(0, buf, len - 4);
    if (stored != actual) {
        // say "truncated" when the records themselves run past the end (a cut-off copy), else "corrupt"
        if (records_overrun(buf, len))
            snprintf(err, errlen, "'%s' is truncated: its records run past the end of the file (%zu bytes)", path, len);
        else
            snprintf(err, errlen, "'%s' is corrupt: CRC-32 mismatch (stored %08x, computed %08x)", path, stored, actual);
        free(buf);
        return 0;
    }
    // walk the records, checking every length against the bytes that remain
    size_t pos = 12, end = len - 4;
    int cap = 64;
    TRecord *recs = malloc(sizeof(TRecord) * (size_t)cap);
    if (!recs) { free(buf); snprintf(err, errlen, "out of memory reading '%s'", path); return 0; }
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
            if (!nr) { free(recs); free(buf); snprintf(err, errlen, "out of memory reading '%s'", path); return 0; }
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
    snprintf(err, errlen, "'%s' is malformed: record %d at byte %zu runs past the end of the file", path, n, pos);
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
struct TWriter {
    FILE *fp;
    char *path, *tmp_path;
    uint32_t crc;
    int failed;
};

static void tw_bytes(TWriter *w, const void *data, size_t n) {
    if (w->failed || n == 0) return;
    if (fwrite(data, 1, n, w->fp) != n) { w->failed = errno ? errno : EIO; return; }
    w->crc = crc32_update(w->crc, data, n);
}

static void put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}

TWriter *tw_open(const char *path, const char *magic, char *err, size_t errlen) {
    TWriter *w = calloc(1, sizeof *w);
    size_t n = strlen(path);
    if (!w || !(w->path = malloc(n + 1)) || !(w->tmp_path = malloc(n + 8))) {
        snprintf(err, errlen, "out of memory opening '%s'", path);
        if (w) { free(w->path); free(w); }
        return NULL;
    }
    memcpy(w->path, path, n + 1);
    snprintf(w->tmp_path, n + 8, "%s.tmp", path);
    w->fp = fopen(w->tmp_path, "wb");
    if (!w->fp) {
        snprintf(err, errlen, "cannot write '%s': %s", w->tmp_path, strerror(errno));
        free(w->path); free(w->tmp_path); free(w);
        return NULL;
    }
    unsigned char hdr[12];
    memcpy(hdr, magic, 8);
    put_u32(hdr + 8, TFILE_VERSION);
    tw_bytes(w, hdr, 12);
    return w;
}

int tw_record(TWriter *w, const char *name, int dtype, int ndim, const uint32_t *shape, const void *data) {
    size_t name_len = strlen(name), count = 1;
    if (name_len == 0 || name_len > 255 || ndim > 8) { w->failed = EINVAL; return 0; }
    unsigned char hdr[3 + 255 + 32];
    size_t h = 0;
    hdr[h++] = (unsigned char)name_len;
    memcpy(hdr + h, name, name_len);
    h += name_len;
    hdr[h++] = (unsigned char)dtype;
    hdr[h++] = (unsigned char)ndim;
    for (int d = 0; d < ndim; d++) { put_u32(hdr + h, shape[d]); h += 4; count *= shape[d]; }
    tw_bytes(w, hdr, h);
    tw_bytes(w, data, count * dtype_size(dtype));
    return !w->failed;
}

// fsync the directory holding path so the rename itself is durable
static int fsync_dir_of(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) { if (slash == dir) slash[1] = 0; else *slash = 0; }
    else snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int tw_commit(TWriter *w, char *err, size_t errlen) {
    unsigned char tail[4];
    put_u32(tail, w->crc);
    if (!w->failed && fwrite(tail, 1, 4, w->fp) != 4) w->failed = errno ? errno : EIO;
    if (!w->failed && fflush(w->fp) != 0) w->failed = errno;
    if (!w->failed && fsync(fileno(w->fp)) != 0) w->failed = errno;
    if (fclose(w->fp) != 0 && !w->failed) w->failed = errno ? errno : EIO;
    w->fp = NULL;
    if (!w->failed && rename(w->tmp_path, w->path) != 0) w->failed = errno;
    if (!w->failed) fsync_dir_of(w->path);  // best effort: some filesystems refuse directory fsync
    int ok = !w->failed;
    if (!ok) {
        snprintf(err, errlen, "cannot write '%s': %s", w->path, strerror(w->failed));
        remove(w->tmp_path);
    }
    free(w->path);
    free(w->tmp_path);
    free(w);
    return ok;
}

void tw_abort(TWriter *w) {
    if (!w) return;
    if (w->fp) fclose(w->fp);
    remove(w->tmp_path);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

// ---- checkpoints ----
#define REAL_DT (sizeof(real) == 4 ? DT_F32 : DT_F64)

int checkpoint_save(const char *path, const GPT *m, const char *config_json, const Vocab *vocab,
                    const TrainState *st, char *err, size_t errlen) {
    if (!gpt_all_finite(m)) {
        snprintf(err, errlen, "refusing to write '%s': the model holds non-finite values", path);
        return 0;
    }
    TWriter *w = tw_open(path, "TGPTCKPT", err, errlen);
    if (!w) return 0;
    uint32_t shape[2];
    shape[0] = (uint32_t)strlen(config_json);
    tw_record(w, "config", DT_U8, 1, shape, config_json);
    int32_t *cps = xmalloc(sizeof(int32_t) * (size_t)vocab->vocab_size, "vocabulary");
    for (int i = 0; i < vocab->vocab_size; i++) cps[i] = (int32_t)vocab->chars[i];
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

int checkpoint_open(Checkpoint *ck, const char *path, char *err, size_t errlen) {
    memset(ck, 0, sizeof *ck);
    if (!tfile_read(&ck->file, path, "TGPTCKPT", err, errlen)) return 0;
    const TFile *f = &ck->file;
    const TRecord *cfg = tfile_find(f, "config"), *voc = tfile_find(f, "vocab"), *dims = tfile_find(f, "dims");
    const TRecord *state = tfile_find(f, "state"), *rng = tfile_find(f, "rng"), *best = tfile_find(f, "best_val_loss");
    const char *missing = !cfg ? "config" : !voc ? "vocab" : !dims ? "dims" : !state ? "state" : !rng ? "rng" : !best ? "best_val_loss" : NULL;
    if (missing) { snprintf(err, errlen, "'%s' has no '%s' record", path, missing); goto fail; }
    if (cfg->dtype != DT_U8 || !record_is(dims, DT_I64, 5) || !record_is(state, DT_I64, 2) ||
        !record_is(rng, DT_U64, 4) || !record_is(best, DT_F64, 1) || voc->dtype != DT_I32 || voc->ndim != 1) {
        snprintf(err, errlen, "'%s' has a header record of the wrong type or size", path);
        goto fail;
    }
    ck->config_json = xmalloc(cfg->count + 1, "checkpoint config");
    memcpy(ck->config_json, cfg->data, cfg->count);
    ck->config_json[cfg->count] = 0;
    int64_t dv[5], sv[2];
    memcpy(dv, dims->data, sizeof dv);
    memcpy(sv, state->data, sizeof sv);
    // the same limits as the configuration keys (config.c): vocab_size, block_size, n_layer,
    // n_head, n_embd; a damaged or hostile file must not make us build an absurd model
    static const int64_t dim_max[5] = {0x110000, 65536, 64, 256, 8192};
    static const char *const dim_name[5] = {"vocab_size", "block_size", "n_layer", "n_head", "n_embd"};
    for (int i = 0; i < 5; i++)
        if (dv[i] <= 0 || dv[i] > dim_max[i]) {
            snprintf(err, errlen, "'%s' has an invalid %s (%lld; allowed 1..%lld)", path, dim_name[i], (long long)dv[i],
                     (long long)dim_max[i]);
            goto fail;
        }
    ck->dims = (ModelDims){(int)dv[0], (int)dv[1], (int)dv[2], (int)dv[3], (int)dv[4]};
    if ((size_t)ck->dims.vocab_size != voc->count || ck->dims.n_embd % ck->dims.n_head != 0) {
        snprintf(err, errlen, "'%s': vocabulary size or head count disagrees with the dimensions", path);
        goto fail;
    }
    ck->vocab.vocab_size = (int)voc->count;
    ck->vocab.chars = xmalloc(sizeof(uint32_t) * voc->count, "vocabulary");
    memcpy(ck->vocab.chars, voc->data, sizeof(uint32_t) * voc->count);
    for (size_t i = 0; i < voc->count; i++)
        if (ck->vocab.chars[i] > 0x10FFFF || (i > 0 && ck->vocab.chars[i] <= ck->vocab.chars[i - 1])) {
            snprintf(err, errlen, "'%s' has an invalid vocabulary (entry %zu)", path, i);
            goto fail;
        }
    ck->state.step = (long)sv[0];
    ck->state.skipped_steps = (long)sv[1];
    memcpy(ck->state.rng.s, rng->data, sizeof ck->state.rng.s);
    memcpy(&ck->state.best_val_loss, best->data, sizeof(double));
    if (sv[0] < 0 || sv[1] < 0) { snprintf(err, errlen, "'%s' has a negative step count", path); goto fail; }
    const TRecord *elapsed = tfile_find(f, "elapsed_s");  // absent from checkpoints of earlier versions: 0
    if (elapsed) {
        if (!record_is(elapsed, DT_F64, 1)) { snprintf(err, errlen, "'%s' has an elapsed_s record of the wrong type or size", path); goto fail; }
        memcpy(&ck->state.elapsed_s, elapsed->data, sizeof(double));
        if (!(ck->state.elapsed_s >= 0 && ck->state.elapsed_s < 1e12)) {
            snprintf(err, errlen, "'%s' has an invalid elapsed_s (%g)", path, ck->state.elapsed_s);
            goto fail;
        }
    }
    ck->has_optimizer = tfile_find(f, "adam_m.wte") != NULL;
    return 1;
fail:
    checkpoint_close(ck);
    return 0;
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
            if (!r) { snprintf(err, errlen, "'%s' has no tensor '%s'", path, name); return 0; }
            if (r->ndim != t->ndim || r->shape[0] != (uint32_t)t->shape[0] ||
                (t->ndim == 2 && r->shape[1] != (uint32_t)t->shape[1])) {
                snprintf(err, errlen, "'%s': tensor '%s' has shape [%u%s%u], the model expects [%d,%d]", path, name,
                         r->shape[0], r->ndim == 2 ? "," : "", r->ndim == 2 ? r->shape[1] : 0u, t->shape[0], t->shape[1]);
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
                snprintf(err, errlen, "'%s': tensor '%s' has an unsupported element type", path, name);
                return 0;
            }
            for (size_t j = 0; j < t->size; j++)
                if (!isfinite(dst[j])) {
                    snprintf(err, errlen, "'%s': tensor '%s' holds a non-finite value at index %zu", path, name, j);
                    return 0;
                }
        }
    }
    return 1;
}

void checkpoint_close(Checkpoint *ck) {
    tfile_free(&ck->file);
    free(ck->config_json);
    free(ck->vocab.chars);
    memset(ck, 0, sizeof *ck);
}
