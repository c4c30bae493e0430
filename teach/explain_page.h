// teach/explain_page.h: the page of `./sample CKPT --explain --prompt TEXT --html FILE`: one step
// per predicted position, its attention rows and its effect rows side by side in one table,
// colour-scaled, the characters labelled and the disagreements marked.
#ifndef EXPLAIN_PAGE_H
#define EXPLAIN_PAGE_H

#include <stddef.h>
#include <stdio.h>

#include "teach/explain.h"

// Write the page to path through the one writer (base/outfile.h; "-" is standard output);
// command is shown under the heading.
// Returns 1, or 0 with a one-line reason naming the file in err.
int explain_page_write(const char *path, const Explain *e, const Vocab *v, const char *command,
                       char *err, size_t errlen);
// The same to an open stream; returns 0 when a write failed.
int explain_page_fwrite(FILE *f, const Explain *e, const Vocab *v, const char *command);

#endif
