// report/writer.c: checked writing for the comparison's files: the first failed write of a file is
// remembered and reported once, at its close, naming the file.
#include "report/writer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void out(Out *o, const char *fmt, ...) {
    if (!o->ok) return;
    va_list ap;
    va_start(ap, fmt);
    errno = 0;
    int r = vfprintf(o->f, fmt, ap);
    va_end(ap);
    if (r < 0) { o->ok = 0; o->err_no = errno; }
}

int out_open(Out *o, const char *dir, const char *name, char *path, size_t pathlen,
             char *err, size_t errlen) {
    int n = snprintf(path, pathlen, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= pathlen) {
        snprintf(err, errlen, "cannot write %s in '%s': path too long", name, dir);
        return 0;
    }
    errno = 0;
    o->f = fopen(path, "w");
    o->ok = o->f != NULL;
    o->err_no = errno;
    if (!o->f) {
        snprintf(err, errlen, "cannot create '%s': %s", path, strerror(o->err_no ? o->err_no : EIO));
        return 0;
    }
    return 1;
}

int out_close(Out *o, const char *path, char *err, size_t errlen) {
    if (o->ok && ferror(o->f)) { o->ok = 0; o->err_no = EIO; }
    errno = 0;
    if (fclose(o->f) != 0 && o->ok) { o->ok = 0; o->err_no = errno; }
    o->f = NULL;
    if (!o->ok) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(o->err_no ? o->err_no : EIO));
        return 0;
    }
    return 1;
}
