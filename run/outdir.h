// run/outdir.h: the output directory and the files a run writes there: claiming the directory (a
// lock for the run's life; refusing to write over another run), files replaced whole through
// temporary files, and pruning old checkpoints.
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

// ---- claiming a directory ----
// Lock dir for the rest of this process's life: an advisory flock on the directory itself, so
// nothing is created and the lock ends with the process however it ends. Returns 0 with a
// message when another process holds it. (Where the file system has no locks, it warns once on
// stderr and goes on unlocked.)
int outdir_lock(const char *dir, char *err, size_t errlen);
// The first file of a run that dir holds (checkpoint.bin, checkpoint_<step>.bin, best.bin,
// metrics.csv, attention.csv, summary.json, compare.csv, report.md, scaling.svg), copied into
// buf; NULL when it holds none (or does not exist).
const char *outdir_run_file(const char *dir, char *buf, size_t n);
// Remove those files from dir (train.overwrite=true); every other file stays.
void outdir_clear_run(const char *dir);
// Remove the temporary files of those files (NAME.tmp, NAME.tmp.<pid>.<n>) that a killed
// process left in dir. Call with dir locked: no live writer then has one open.
void outdir_remove_stale_temps(const char *dir);
// Whether a and b name the same existing directory.
int outdir_same_dir(const char *a, const char *b);

// ---- files replaced whole ----
// Writing goes to PATH.tmp.<pid>.<n>; outfile_commit renames it over PATH, so PATH always holds
// either the old or the new complete file. The temporary file is removed on every way out: a
// failure (exit 1), any exit(), a second Ctrl-C (outdir_remove_temp_now); after a SIGKILL, at
// the next start (outdir_remove_stale_temps). One such file is open at a time.
FILE *outfile_open(const char *path);
void outfile_commit(FILE *f);
// Remove the temporary file being written, if any. Async-signal-safe.
void outdir_remove_temp_now(void);

// Keep the header and the rows of a CSV whose first field (the step) is <= max_step.
void truncate_csv(const char *path, long max_step);

// Keep the `keep` newest checkpoint_<step>.bin in dir with step <= upto and remove the older
// ones, whatever interval wrote them (later ones belong to a run resumed from an earlier step
// and are left alone).
void outdir_prune_checkpoints(const char *dir, int keep, long upto);

#endif
