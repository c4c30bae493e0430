// report/html_markdown.c: the Markdown subset report.md is written in, as HTML (html_markdown,
// report/html.h), for report.html.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"  // xmalloc
#include "report/html.h"

// Text of one line with **bold**, *italics* and `code` set as HTML. A '*' opens italics only
// when another follows it on the line; an unclosed '`' or "**" is text.
static void md_inline(FILE *f, const char *s, size_t n) {
    const char *end = s + n;
    int bold = 0, em = 0;
    while (s < end) {
        const char *span = s;  // the plain text up to the next marker
        while (span < end && *span != '`' && *span != '*') span++;
        if (span > s) {
            char *text = xmalloc((size_t)(span - s) + 1, "Markdown text");
            memcpy(text, s, (size_t)(span - s));
            text[span - s] = 0;
            html_escape(f, text);
            free(text);
            s = span;
            continue;
        }
        if (*s == '`') {
            const char *close = memchr(s + 1, '`', (size_t)(end - s - 1));
            if (!close) {
                fputc('`', f);
                s++;
                continue;
            }
            char *code = xmalloc((size_t)(close - s), "Markdown code");
            memcpy(code, s + 1, (size_t)(close - s - 1));
            code[close - s - 1] = 0;
            fputs("<code>", f);
            html_escape(f, code);
            fputs("</code>", f);
            free(code);
            s = close + 1;
        } else if (s + 1 < end && s[1] == '*') {
            int closes = bold;
            for (const char *q = s + 2; !closes && q + 1 < end; q++)
                closes = q[0] == '*' && q[1] == '*';
            fputs(closes ? (bold ? "</strong>" : "<strong>") : "**", f);
            if (closes) bold = !bold;
            s += 2;
        } else {
            int closes = em || memchr(s + 1, '*', (size_t)(end - s - 1)) != NULL;
            fputs(closes ? (em ? "</em>" : "<em>") : "*", f);
            if (closes) em = !em;
            s++;
        }
    }
    if (em) fputs("</em>", f);
    if (bold) fputs("</strong>", f);
}

// The cells of a table row "| a | b |": start and length of each, trimmed; returns the count.
static int md_cells(const char *line, size_t n, const char **cell, size_t *len, int max) {
    const char *p = line, *end = line + n;
    while (end > p && (end[-1] == ' ' || end[-1] == '\r')) end--;
    if (p < end && *p == '|') p++;
    if (end > p && end[-1] == '|') end--;
    int k = 0;
    while (p <= end && k < max) {
        const char *bar = p;
        while (bar < end && *bar != '|') bar++;
        const char *a = p, *b = bar;
        while (a < b && *a == ' ') a++;
        while (b > a && b[-1] == ' ') b--;
        cell[k] = a;
        len[k++] = (size_t)(b - a);
        if (bar >= end) break;
        p = bar + 1;
    }
    return k;
}

// The length of the fence that opens a code block on this line (3 or more backquotes), or 0.
static size_t md_fence(const char *line, size_t n) {
    size_t k = 0;
    while (k < n && line[k] == '`') k++;
    return k >= 3 && k == n ? k : 0;
}

#define MD_MAX_COLS 32

void html_markdown(FILE *f, const char *md) {
    enum { NONE, PARA, LIST, TABLE } open = NONE;
    int left[MD_MAX_COLS] = {0}, row = 0;
    const char *p = md ? md : "";
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const char *next = nl ? nl + 1 : p + n;
        // a fenced code block: verbatim up to the same fence
        size_t fence = md_fence(p, n);
        int table_line = n > 0 && p[0] == '|';
        int item = n >= 2 && p[0] == '-' && p[1] == ' ';
        int blank = n == 0 || strspn(p, " \r") >= n;
        int heading = 0;
        while ((size_t)heading < n && heading < 4 && p[heading] == '#') heading++;
        if (!(heading >= 1 && heading <= 3 && (size_t)heading < n && p[heading] == ' '))
            heading = 0;
        // close what this line does not continue
        if ((open == PARA && (blank || fence || table_line || item || heading)) ||
            (open == LIST && !item) || (open == TABLE && !table_line)) {
            fputs(open == PARA   ? "</p>\n"
                  : open == LIST ? "</ul>\n"
                                 : "</tbody></table></div>\n",
                  f);
            open = NONE;
        }
        if (fence) {
            const char *q = next;
            fputs("<pre><code>", f);
            int first = 1;
            while (*q) {
                const char *qn = strchr(q, '\n');
                size_t m = qn ? (size_t)(qn - q) : strlen(q);
                const char *qnext = qn ? qn + 1 : q + m;
                if (m == fence && md_fence(q, m) == fence) {
                    q = qnext;
                    break;
                }
                char *line = xmalloc(m + 1, "Markdown code");
                memcpy(line, q, m);
                line[m] = 0;
                if (!first) fputc('\n', f);
                html_escape(f, line);
                free(line);
                first = 0;
                q = qnext;
            }
            fputs("</code></pre>\n", f);
            p = q;
            continue;
        }
        if (heading) {
            fprintf(f, "<h%d>", heading);
            md_inline(f, p + heading + 1, n - (size_t)heading - 1);
            fprintf(f, "</h%d>\n", heading);
        } else if (item) {
            if (open != LIST) fputs("<ul>\n", f);
            open = LIST;
            fputs("<li>", f);
            md_inline(f, p + 2, n - 2);
            fputs("</li>\n", f);
        } else if (table_line) {
            const char *cell[MD_MAX_COLS];
            size_t len[MD_MAX_COLS];
            int k = md_cells(p, n, cell, len, MD_MAX_COLS);
            if (open != TABLE) {  // the header row: aligned as the alignment row after it says
                memset(left, 0, sizeof left);
                const char *al[MD_MAX_COLS];
                size_t alen[MD_MAX_COLS];
                const char *nl2 = *next ? strchr(next, '\n') : NULL;
                int ka = next[0] == '|' ? md_cells(next, nl2 ? (size_t)(nl2 - next) : strlen(next),
                                                   al, alen, MD_MAX_COLS)
                                        : 0;
                if (ka > 0 && strspn(al[0], ":-") == alen[0])
                    for (int c = 0; c < ka; c++)
                        left[c] = alen[c] > 0 && al[c][0] == ':' && al[c][alen[c] - 1] != ':';
                fputs("<div class=\"scroll\"><table class=\"md\">\n<thead><tr>", f);
                for (int c = 0; c < k; c++) {
                    fputs(left[c] ? "<th scope=\"col\" class=\"l\">" : "<th scope=\"col\">", f);
                    md_inline(f, cell[c], len[c]);
                    fputs("</th>", f);
                }
                fputs("</tr></thead>\n<tbody>\n", f);
                open = TABLE;
                row = 0;
            } else if (row++ == 0 && k > 0 && strspn(cell[0], ":-") == len[0]) {
                // the alignment row, read with the header
            } else {
                fputs("<tr>", f);
                for (int c = 0; c < k; c++) {
                    fputs(left[c] ? "<td class=\"l\">" : "<td>", f);
                    md_inline(f, cell[c], len[c]);
                    fputs("</td>", f);
                }
                fputs("</tr>\n", f);
            }
        } else if (!blank) {
            fputs(open == PARA ? "\n" : "<p>", f);
            open = PARA;
            md_inline(f, p, n);
        }
        p = next;
    }
    if (open == PARA) fputs("</p>\n", f);
    if (open == LIST) fputs("</ul>\n", f);
    if (open == TABLE) fputs("</tbody></table></div>\n", f);
}
