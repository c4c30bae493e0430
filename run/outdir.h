// run/outdir.h: the output directory and the files a run writes there: claiming the directory (a
// lock for the run's life; refusing to write over another run), files replaced whole through
// temporary files (base/outfile.h writes every file), and pruning old checkpoints.
#ifndef OUTDIR_H
#define OUTDIR_H

#include <stddef.h>
#include <stdio.h>

// Create path and its parents; 0 with a message when it cannot be created or written.
int ensure_dir(const char *path, char *err, size_t errlen);
// dir/file into out (n bytes); a path that does not fit is a usage error (exit 2).
void join_path(char *out, size_t n, const char *dir, const char *file);

// ---- claiming a directory ----
// Lock dir for the rest of this process's life: an advisory flock on the directory itself, so
// nothing is created and the lock ends with the process however it ends. Returns 0 with a
// message when another process holds it. (Where the file system has no locks, it warns once on
// stderr and goes on unlocked.)
int outdir_lock(const char *dir, char *err, size_t errlen);
// The first file of a run that dir holds (checkpoint.bin, checkpoint_<step>.bin, best.bin,
// metrics.csv, attention.csv, summary.json, compare.csv, report.md, scaling.svg, compare.svg,
// report.html), copied into buf; NULL when it holds none (or does not exist). A symbolic link by
// one of those names counts, dangling or not: it is never written through.
const char *outdir_run_file(const char *dir, char *buf, size_t n);
// Remove those files from dir (train.overwrite=true); every other file stays. Only regular files
// are removed and no symbolic link is followed: when dir itself is not a directory (a symbolic
// link to another run's) or one of those names is not a regular file, nothing is removed and it
// returns 0 with a message.
int outdir_clear_run(const char *dir, char *err, size_t errlen);
// Whether every one of those files that dir holds is a regular file: 0 with the writer's message
// (base/outfile.h: "cannot write 'DIR/metrics.csv': it is a symbolic link ...") when one is not.
// A run checks it at its start rather than fail at its first write there.
int outdir_check_run_files(const char *dir, char *err, size_t errlen);
// Remove the temporary files of those files that a killed writer left in dir, exactly
// NAME.tmp.<pid>.<n> of a process that no longer runs (base/outfile.h). Call with dir locked.
void outdir_remove_stale_temps(const char *dir);
// Whether a and b name the same existing directory.
int outdir_same_dir(const char *a, const char *b);

// Keep the header and the rows of a CSV whose first field (the step) is <= max_step (replaced
// whole, base/outfile.h; exit 1 when it is not a regular file). header (one line, its newline
// included) is the one the log is written with now: an older header that is its leading columns
// (a log written before columns were added at its end) is replaced by it, so the rows appended
// are read under their own names; any other header is kept.
void truncate_csv(const char *path, long max_step, const char *header);

// Keep the `keep` newest checkpoint_<step>.bin in dir with step <= upto and remove the older
// ones, whatever interval wrote them (later ones belong to a run resumed from an earlier step
// and are left alone).
void outdir_prune_checkpoints(const char *dir, int keep, long upto);

#endif
