// base/outfile.h: the one writer of every output file (checkpoints, logs, summaries, reports,
// pictures, pages, dumps): a file is replaced whole, only ever a regular file, and nothing else
// is touched.
//
// The rules, for every path any program writes:
// - An existing target that is not a regular file (a directory, a FIFO, a device, a socket, or
//   a symbolic link, dangling or not) is refused before anything is written: one line naming
//   the path and what it is, and nothing is created or replaced. A symbolic link is never
//   followed, so nothing outside the directory named is written through one.
// - The bytes go to a temporary file beside the target, PATH.tmp.<pid>.<n>, created with
//   O_CREAT|O_EXCL|O_NOFOLLOW (a new file of this process, never an existing one or a link's
//   target); out_end renames it over PATH, so PATH holds either the old or the new complete
//   file. A replaced file keeps its permission bits.
// - The temporary file is removed on every way out: a failed write, out_cancel, any exit()
//   (die), and a second Ctrl-C (out_remove_temps_now). Only a SIGKILL or a crash can leave one,
//   and out_remove_stale_temps removes exactly those: the name pattern above, a process that no
//   longer runs, a regular file, in the one directory it is given. out_begin removes those of
//   its own target first.
// - An output path that is (or links to) one of the program's inputs is refused before any work
//   (out_is_input): writing it would replace the checkpoint, text or file it was read from.
// - "-" means standard output where the caller allows it (OUT_DASH: a path the user names on the
//   command line); it is written in place, not replaced.
//
// Usage (the whole file, or nothing):
//   FILE *f = out_begin("run/summary.json", 0, err, sizeof err);
//   if (!f) die(EXIT_RUNTIME, "%s", err);
//   fprintf(f, ...);
//   if (!out_end(f, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
// or, exiting with the message on failure: f = out_begin_or_die(path, 0); ...; out_end_or_die(f).
#ifndef OUTFILE_H
#define OUTFILE_H

#include <stddef.h>
#include <stdio.h>

enum {
    OUT_DURABLE = 1,  // fsync the file before the rename and the directory after it (checkpoints)
    OUT_DASH = 2,     // "-" is standard output
};

// At most this many files are written at once by one process.
#define OUT_MAX_OPEN 16

// Begin writing path. NULL with one line in err when the target is not a regular file, its
// directory does not exist or the temporary file cannot be created.
FILE *out_begin(const char *path, int flags, char *err, size_t errlen);
// Finish: flush (and with OUT_DURABLE fsync), check again that the target is not something else
// by now, rename over it. 1, or 0 with one line in err (the temporary file removed, the target
// untouched). The stream is closed either way.
int out_end(FILE *f, char *err, size_t errlen);
// Abandon the file: the temporary file is removed, the target untouched.
void out_cancel(FILE *f);
// The same, exiting with status 1 and the message on failure.
FILE *out_begin_or_die(const char *path, int flags);
void out_end_or_die(FILE *f);

// Whether the output path is (or links to) one of the n input files (NULL entries and "-" are
// none): 1 with one line in err naming both, else 0.
int out_is_input(const char *out, const char *const *inputs, int n, char *err, size_t errlen);

// Whether path may be written: 1 when it does not exist or is a regular file, else 0 with the
// line out_begin would give. For a check before hours of work, not instead of out_begin.
int out_check_target(const char *path, char *err, size_t errlen);

// A log continued line by line (metrics.csv): opened for appending, created when missing
// (*was_empty then 1, as for an existing empty file), refused like out_begin when it is not a
// regular file (never followed when it is a symbolic link). Close it with fclose.
FILE *out_append(const char *path, int *was_empty, char *err, size_t errlen);

// Remove the temporary file of every file being written. Async-signal-safe.
void out_remove_temps_now(void);

// The target of a temporary file's name "TARGET.tmp.<pid>.<n>": its length (and the pid in
// *pid), or 0 when name is not of that form.
size_t out_temp_target(const char *name, long *pid);
// Remove from dir (not below it) every regular file "TARGET.tmp.<pid>.<n>" with is_target(TARGET,
// its length) true whose process no longer runs, or is this process but none of its writers has
// it open (a container repeats pids from run to run). Call it with dir locked, so that no live
// writer of the directory runs in another pid namespace. Returns the number removed, or -1 with a
// message when dir cannot be read.
int out_remove_stale_temps(const char *dir, int (*is_target)(const char *name, size_t n), char *err,
                           size_t errlen);

// Text with & < > " ' escaped for HTML, SVG and XML (NULL writes nothing): the one escaper of
// every page and picture written.
void html_escape(FILE *f, const char *text);

#endif
