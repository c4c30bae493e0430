// report/report.c: the comparison's report at the end of the run: the sorted log written as
// compare.csv (report/compare_csv.c), report.md (report/report_md.c, its reading
// report/reading.c), the SVG panels (report/svg.c) and report.html (report/report_html.c).
#include "report/compare.h"

#include <stdio.h>
#include <stdlib.h>

#include "report/compare_log.h"

int compare_log_finish(CompareLog *log, const Config *cfg, char *err, size_t errlen) {
    if (!log) {
        snprintf(err, errlen, "no comparison log to write");
        return 0;
    }
    compare_log_sort(log);
    char *md = compare_md_text(log, cfg, err, errlen);
    int ok = md && compare_write_csv(log, err, errlen) && compare_write_md(log, md, err, errlen) &&
             compare_write_svg(log, cfg, err, errlen) &&
             compare_write_html(log, cfg, md, err, errlen);
    free(md);
    compare_log_discard(log);
    return ok;
}
