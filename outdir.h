// outdir.h: the output directory and the files a run writes there.
#ifndef OUTDIR_H
#define OUTDIR_H

#include <stddef.h>
#include <stdio.h>

// Create path and its parents; 0 with a message when it cannot be created or written.
int ensure_dir(const char *path, char *err, size_t errlen);
// dir/file into out (n bytes); a path that does not fit is a usage error (exit 2).
void join_path(char *out, size_t n, const char *dir, const char *file);
// fopen, or exit 1 naming the file.
FILE *open_or_die(const char *path, const char *mode);
// Keep the header and the rows of a CSV whose first field (the step) is <= max_step.
void truncate_csv(const char *path, long max_step);

#endif
