// report/writer.h: checked writing for the comparison's files (report/writer.c): out() writes
// formatted text unless an earlier write failed; out_close reports the first failure.
#ifndef REPORT_WRITER_H
#define REPORT_WRITER_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f;
    int ok;
    int err_no;
} Out;

// fprintf to o->f while every earlier write succeeded; a failure clears o->ok and keeps errno.
void out(Out *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
// Begin writing dir/name (its path into path) through the one writer (base/outfile.h: a regular
// file only, replaced whole at out_close); 0 with a one-line message in err when it cannot be.
int out_open(Out *o, const char *dir, const char *name, char *path, size_t pathlen, char *err,
             size_t errlen);
// Finish the file: renamed over dir/name when every write succeeded, else removed (the earlier
// file stays); 0 with a one-line message naming path when any write or the close failed.
int out_close(Out *o, const char *path, char *err, size_t errlen);

#endif
