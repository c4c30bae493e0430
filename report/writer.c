// report/writer.c: checked writing for the comparison's files: the first failed write of a file is
// remembered and reported once, at its close, naming the file.
#include "report/writer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/outfile.h"

void out(Out *o, const char *fmt, ...) {
    if (!o->ok) return;
    va_list ap;
    va_start(ap, fmt);
    errno = 0;
    int r = vfprintf(o->f, fmt, ap);
    va_end(ap);
    if (r < 0) {
        o->ok = 0;
        o->err_no = errno;
    }
}

int out_open(Out *o, const char *dir, const char *name, char *path, size_t pathlen, char *err,
             size_t errlen) {
    int n = snprintf(path, pathlen, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= pathlen) {
        snprintf(err, errlen, "cannot write %s in '%s': path too long", name, dir);
        return 0;
    }
    o->f = out_begin(path, 0, err, errlen);  // base/outfile.h: a regular file, replaced whole
    o->ok = o->f != NULL;
    o->err_no = 0;
    return o->f != NULL;
}

int out_close(Out *o, const char *path, char *err, size_t errlen) {
    if (o->ok && ferror(o->f)) {
        o->ok = 0;
        o->err_no = EIO;
    }
    FILE *f = o->f;
    o->f = NULL;
    if (!o->ok) {
        out_cancel(f);  // the earlier file stays as it was
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(o->err_no ? o->err_no : EIO));
        return 0;
    }
    return out_end(f, err, errlen);
}
