// report/html.c: self-contained step-through pages of small matrices (see report/html.h).
#define _POSIX_C_SOURCE 200809L
#include "report/html.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/outfile.h"

struct HtmlMatrix {
    char *key, *name;
    int where, rows, cols;
    double *v;            // (rows, cols)
    unsigned char *mark;  // (rows, cols) HTML_CELL_* flags
    char *row_axis, *col_axis;
    char **col_labels;  // cols names, or NULL for indices
    char fmt[16];
    int n_extra;
    struct {
        char *key, *label;
        double *v;
        unsigned char *mark;
    } extra[HTML_MAX_EXTRA];
};

struct HtmlStep {
    char *title, *caption;
    int seq;  // index of its sequence
    HtmlMatrix **m;
    int n_m;
};

typedef struct {
    char *id, *title, *intro;
} HtmlSeq;

struct HtmlPage {
    char *title, *command;
    char **notes;
    int n_notes;
    char *main_label, *alt_label, *switch_label;
    HtmlSeq *seq;
    int n_seq;
    HtmlStep **steps;
    int n_steps;
};

static char *dup_or_null(const char *s) { return s ? xstrdup(s, "page text") : NULL; }

// Grow an array of pointers by one slot.
static void *push_ptr(void *arr, int n, size_t elem) {
    void *a = realloc(arr, (size_t)(n + 1) * elem);
    if (!a) die(EXIT_RUNTIME, "out of memory building an HTML page");
    return a;
}

// ---------------------------------------------------------------------------------------------
// building a page

HtmlPage *html_page_new(const char *title, const char *command) {
    HtmlPage *p = xcalloc(1, sizeof *p, "HTML page");
    p->title = dup_or_null(title ? title : "");
    p->command = dup_or_null(command ? command : "");
    return p;
}

void html_page_note(HtmlPage *p, const char *text) {
    p->notes = push_ptr(p->notes, p->n_notes, sizeof(char *));
    p->notes[p->n_notes++] = dup_or_null(text);
}

void html_page_switch(HtmlPage *p, const char *main_label, const char *alt_label,
                      const char *switch_label) {
    free(p->main_label);
    free(p->alt_label);
    free(p->switch_label);
    p->main_label = dup_or_null(main_label);
    p->alt_label = dup_or_null(alt_label);
    p->switch_label = dup_or_null(switch_label);
}

void html_page_sequence(HtmlPage *p, const char *id, const char *title, const char *intro) {
    p->seq = push_ptr(p->seq, p->n_seq, sizeof(HtmlSeq));
    HtmlSeq *q = &p->seq[p->n_seq++];
    q->id = dup_or_null(id);
    q->title = dup_or_null(title);
    q->intro = dup_or_null(intro);
}

HtmlStep *html_page_step(HtmlPage *p, const char *title, const char *caption) {
    if (p->n_seq == 0) html_page_sequence(p, "steps", "Steps", NULL);
    HtmlStep *s = xcalloc(1, sizeof *s, "HTML step");
    s->title = dup_or_null(title);
    s->caption = dup_or_null(caption);
    s->seq = p->n_seq - 1;
    p->steps = push_ptr(p->steps, p->n_steps, sizeof(HtmlStep *));
    p->steps[p->n_steps++] = s;
    return s;
}

int html_page_n_steps(const HtmlPage *p) { return p->n_steps; }

HtmlMatrix *html_matrix_new(const char *key, const char *name, int rows, int cols) {
    HtmlMatrix *m = xcalloc(1, sizeof *m, "HTML matrix");
    m->key = dup_or_null(key ? key : "");
    m->name = dup_or_null(name ? name : "");
    m->rows = rows;
    m->cols = cols;
    m->v = xcalloc((size_t)rows * cols, sizeof(double), "HTML matrix");
    m->mark = xcalloc((size_t)rows * cols, 1, "HTML matrix");
    snprintf(m->fmt, sizeof m->fmt, "%%.6f");
    return m;
}

HtmlMatrix *html_step_matrix(HtmlStep *s, int where, const char *key, const char *name, int rows,
                             int cols) {
    HtmlMatrix *m = html_matrix_new(key, name, rows, cols);
    m->where = where;
    s->m = push_ptr(s->m, s->n_m, sizeof(HtmlMatrix *));
    s->m[s->n_m++] = m;
    return m;
}

void html_mat_set(HtmlMatrix *m, int r, int c, double v) { m->v[(size_t)r * m->cols + c] = v; }

void html_mat_fill(HtmlMatrix *m, const double *v) {
    memcpy(m->v, v, (size_t)m->rows * m->cols * sizeof(double));
}

void html_mat_fill_real(HtmlMatrix *m, const real *v) {
    for (size_t i = 0; i < (size_t)m->rows * m->cols; i++) m->v[i] = (double)v[i];
}

void html_mat_mark(HtmlMatrix *m, int r, int c, unsigned flags) {
    m->mark[(size_t)r * m->cols + c] |= (unsigned char)flags;
}

void html_mat_mark_all(HtmlMatrix *m, unsigned flags) {
    for (size_t i = 0; i < (size_t)m->rows * m->cols; i++) m->mark[i] |= (unsigned char)flags;
}

void html_mat_axes(HtmlMatrix *m, const char *row_axis, const char *col_axis) {
    free(m->row_axis);
    free(m->col_axis);
    m->row_axis = dup_or_null(row_axis);
    m->col_axis = dup_or_null(col_axis);
}

void html_mat_col_labels(HtmlMatrix *m, const char *const *labels) {
    if (!m->col_labels)
        m->col_labels = xcalloc((size_t)m->cols, sizeof(char *), "HTML matrix labels");
    for (int c = 0; c < m->cols; c++) {
        free(m->col_labels[c]);
        m->col_labels[c] = dup_or_null(labels[c]);
    }
}

void html_mat_format(HtmlMatrix *m, const char *fmt) { snprintf(m->fmt, sizeof m->fmt, "%s", fmt); }

void html_mat_extra(HtmlMatrix *m, const char *key, const char *label, const double *v) {
    if (m->n_extra >= HTML_MAX_EXTRA)
        die(EXIT_RUNTIME, "html_mat_extra: more than %d extra columns", HTML_MAX_EXTRA);
    int e = m->n_extra++;
    m->extra[e].key = dup_or_null(key);
    m->extra[e].label = dup_or_null(label);
    m->extra[e].v = xmalloc((size_t)m->rows * sizeof(double), "HTML matrix column");
    memcpy(m->extra[e].v, v, (size_t)m->rows * sizeof(double));
    m->extra[e].mark = xcalloc((size_t)m->rows, 1, "HTML matrix column");
}

void html_mat_extra_mark(HtmlMatrix *m, int e, int r, unsigned flags) {
    if (e < 0 || e >= m->n_extra || r < 0 || r >= m->rows)
        die(EXIT_RUNTIME, "html_mat_extra_mark: no cell (%d, %d)", e, r);
    m->extra[e].mark[r] |= (unsigned char)flags;
}

void html_matrix_free(HtmlMatrix *m) {
    if (!m) return;
    free(m->key);
    free(m->name);
    free(m->v);
    free(m->mark);
    free(m->row_axis);
    free(m->col_axis);
    if (m->col_labels)
        for (int c = 0; c < m->cols; c++) free(m->col_labels[c]);
    free(m->col_labels);
    for (int e = 0; e < m->n_extra; e++) {
        free(m->extra[e].key);
        free(m->extra[e].label);
        free(m->extra[e].v);
        free(m->extra[e].mark);
    }
    free(m);
}

void html_page_free(HtmlPage *p) {
    if (!p) return;
    for (int i = 0; i < p->n_steps; i++) {
        HtmlStep *s = p->steps[i];
        for (int j = 0; j < s->n_m; j++) html_matrix_free(s->m[j]);
        free(s->m);
        free(s->title);
        free(s->caption);
        free(s);
    }
    free(p->steps);
    for (int i = 0; i < p->n_seq; i++) {
        free(p->seq[i].id);
        free(p->seq[i].title);
        free(p->seq[i].intro);
    }
    free(p->seq);
    for (int i = 0; i < p->n_notes; i++) free(p->notes[i]);
    free(p->notes);
    free(p->title);
    free(p->command);
    free(p->main_label);
    free(p->alt_label);
    free(p->switch_label);
    free(p);
}

// ---------------------------------------------------------------------------------------------
// the style sheet and the script

// Colours: text #1a1a1a on white (contrast 17:1), grey text #555 (7.5:1), highlighted cells
// dark text on #ffe08a (14:1), masked cells #595959 on #efefef (6.3:1), wrong cells #8a0000 on
// #fde4e1 (9:1); the buttons' blue #0b5cad on white is 6.8:1. Each mark also has a cue that is not
// colour: bold, a box, italics, a dashed box.
static const char *const PAGE_CSS[] = {
    ":root{color-scheme:light}\n",
    "*{box-sizing:border-box}\n",
    "html{-webkit-text-size-adjust:100%;text-size-adjust:100%}\n",
    "body{margin:0 auto;max-width:1240px;padding:0 16px 48px;font:16px/1.5 "
    "system-ui,-apple-system,\"Segoe UI\","
    "Roboto,\"DejaVu Sans\",sans-serif;color:#1a1a1a;background:#fff}\n",
    "h1{font-size:1.45rem;line-height:1.25;margin:16px 0 4px}\n",
    "h2{font-size:1.2rem;margin:20px 0 4px}\n",
    "h3{font-size:1.1rem;margin:14px 0 4px}\n",
    "h4{font-size:.95rem;margin:0 0 6px}\n",
    "p{margin:6px 0;max-width:75ch}\n",
    "code{font-family:ui-monospace,\"DejaVu Sans "
    "Mono\",Menlo,Consolas,monospace;font-size:.9em;background:#f2f2f2;"
    "padding:0 .25em;border-radius:3px;overflow-wrap:anywhere}\n",
    ".by{color:#555;font-size:.9rem;margin:0 0 4px}\n",
    ".nb{white-space:nowrap}\n",
    ".controls{position:sticky;top:0;z-index:2;display:flex;flex-wrap:wrap;gap:8px;align-items:"
    "center;"
    "background:#fff;padding:8px 0;border-bottom:1px solid #ccc}\n",
    ".controls[hidden]{display:none}\n",
    ".status{flex:1 1 9em;min-width:0;font-weight:600;font-size:.92rem}\n",
    "button{font:inherit;font-size:.95rem;min-height:44px;padding:6px 14px;border:2px solid "
    "#0b5cad;border-radius:8px;"
    "background:#fff;color:#0b5cad;cursor:pointer}\n",
    "button:hover{background:#eef4fb}\n",
    "button:disabled{color:#6e6e6e;border-color:#b5b5b5;background:#f6f6f6;cursor:default}\n",
    "button:focus-visible,a:focus-visible{outline:3px solid #b35900;outline-offset:2px}\n",
    "button[aria-pressed=true]{background:#0b5cad;color:#fff}\n",
    ".toc ol{display:flex;flex-wrap:wrap;gap:2px 18px;margin:6px 0 0;padding:0;list-style:none}\n",
    ".toc a{color:#0b5cad;font-weight:600}\n",
    ".toc a[aria-current=true]{color:#1a1a1a;text-decoration:none;border-bottom:3px solid "
    "#0b5cad}\n",
    ".range{color:#555;font-size:.85rem}\n",
    ".legend{display:flex;flex-wrap:wrap;gap:2px 14px;font-size:.85rem;color:#333;margin:6px 0 "
    "0}\n",
    ".legend>span{white-space:nowrap}\n",
    ".sw{display:inline-block;min-width:2.8em;padding:0 "
    "4px;margin-right:4px;font-family:ui-monospace,\"DejaVu Sans Mono\","
    "monospace;font-size:.8rem;text-align:center;border:1px solid #e2e2e2}\n",
    ".sw.c{background:#ffe08a;font-weight:700}\n",
    ".sw.k{box-shadow:inset 0 0 0 2px #1a1a1a}\n",
    ".sw.m{background:#efefef;color:#595959;font-style:italic}\n",
    ".sw.w{background:#fde4e1;color:#8a0000;font-weight:700;outline:2px dashed "
    "#b00000;outline-offset:-2px}\n",
    "footer{margin-top:28px;border-top:1px solid #ccc;color:#333;font-size:.92rem}\n",
    ".step{border-top:1px solid #ddd;margin-top:12px}\n",
    ".js .step{border-top:0;margin-top:0}\n",
    ".caption{font-size:1.02rem}\n",
    ".mats{display:flex;flex-wrap:wrap;gap:14px 18px;align-items:flex-start;margin-top:10px}\n",
    ".mats>*{min-width:0;max-width:100%}\n",
    ".panels{display:flex;flex-wrap:wrap;gap:14px 18px;align-items:flex-start}\n",
    ".group{display:flex;flex-wrap:wrap;gap:14px 18px;align-items:flex-start}\n",
    ".panel{border:1px solid #c8c8c8;border-radius:8px;padding:8px 10px 10px}\n",
    ".panel.alt{border-style:dashed;background:#fafafa}\n",
    ".panels>*,.group>*{min-width:0;max-width:100%}\n",
    "figure.mat{margin:0}\n",
    "figure.mat figcaption{font-family:ui-monospace,\"DejaVu Sans "
    "Mono\",Menlo,Consolas,monospace;font-size:.9rem;"
    "font-weight:600;margin-bottom:2px}\n",
    ".scroll{overflow-x:auto;max-width:100%}\n",
    ".more{display:none;font-size:.8rem;color:#555;margin:2px 0 0}\n",
    ".wide .more{display:block}\n",
    "table{border-collapse:collapse;font-family:ui-monospace,\"DejaVu Sans "
    "Mono\",Menlo,Consolas,monospace;"
    "font-size:13px;font-variant-numeric:tabular-nums}\n",
    "td,th{padding:3px 4px;text-align:right;white-space:nowrap;border:1px solid #e2e2e2}\n",
    "th{color:#555;font-weight:400;font-size:12px;background:#f7f7f7}\n",
    "th.corner{text-align:left}\n",
    "td.c{background:#ffe08a;font-weight:700}\n",
    "td.m{background:#efefef;color:#595959;font-style:italic;font-weight:400}\n",
    "td.c.m{background:#ffe08a;color:#4d4d4d}\n",
    "td.k{box-shadow:inset 0 0 0 2px #1a1a1a}\n",
    "td.w,td.c.w{background:#fde4e1;color:#8a0000;font-weight:700;font-style:normal;padding-left:"
    "6px;padding-right:6px;"
    "outline:2px dashed #b00000;"
    "outline-offset:-3px}\n",
    "td.x,th.x{border-left:3px double #999}\n",
    "td.x{color:#1a1a1a;background:#f3f7fc}\n",
    // a phone: the step itself must start within the first screen. The status line is read out
    // (aria-live) but not shown: the step's own heading says the same.
    "@media (max-width:600px){body{padding:0 10px "
    "40px}h1{font-size:1.1rem;margin-top:10px}h2{font-size:1.02rem;"
    "margin-top:10px}h3{font-size:1rem;margin-top:8px}.by{font-size:.8rem}.caption,p{font-size:."
    "95rem}"
    ".controls{gap:6px;padding:6px 0}button{font-size:.88rem;padding:4px 9px}"
    ".status{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 "
    "0);white-space:nowrap}"
    ".toc ol{gap:0 12px;font-size:.9rem}.range{display:none}.legend{font-size:.8rem}"
    ".js .seq.later .intro{display:none}"
    "table{font-size:12px}td,th{padding:2px 4px}th{font-size:11px}.panel{padding:6px}}\n",
    "@media "
    "print{.controls{display:none}.step[hidden],.seq[hidden],.panel[hidden]{display:block}}\n",
    NULL,
};

// Progressive enhancement: without the script every step is visible in order and the controls
// stay hidden. The script shows one step, wires the buttons, the arrow keys and #step=N[&alt=1].
// Play shows each step for its reading time and starts over after the last: at HTML_READ_WPM
// words a minute over the words of its prose (headings, paragraphs, captions, list items) and one
// word per table row, and never less than data-every (HTML_PLAY_EVERY_MS); each step's time is
// written on it as data-dur (ms) with data-words. The first step, too, stays on screen its time
// before the loop moves on. Previous, Next, the arrow keys, the sequence links, any other key,
// click, touch or wheel, and the pointer over the page's content pause it. A page opened without
// #step=N starts playing unless the reader asked for reduced motion (prefers-reduced-motion:
// reduce); while it plays the status line is not read out at every step (aria-live off).
static const char *const PAGE_JS[] = {
    "(function(){\n",
    "'use strict';\n",
    "var steps=[].slice.call(document.querySelectorAll('section.step'));\n",
    "var seqs=[].slice.call(document.querySelectorAll('section.seq'));\n",
    "var alts=[].slice.call(document.querySelectorAll('.panel.alt'));\n",
    "var links=[].slice.call(document.querySelectorAll('.toc a'));\n",
    "var n=steps.length;if(!n)return;\n",
    "var prev=document.getElementById('prev'),next=document.getElementById('next');\n",
    "var sw=document.getElementById('alt'),status=document.getElementById('status');\n",
    "var "
    "play=document.getElementById('play'),timer=null,every=parseInt(play.getAttribute('data-every')"
    ",10);\n",
    "var cur=1,alt=false;\n",
    "steps.forEach(function(s){var "
    "w=0;[].forEach.call(s.querySelectorAll('h2,h3,p,li,figcaption,caption'),"
    "function(e){w+=(e.textContent.match(/\\S+/"
    "g)||[]).length;});w+=s.querySelectorAll('tr').length;"
    "s.setAttribute('data-words',w);s.setAttribute('data-dur',Math.max(every,Math.ceil(w*"
    "60000/" HTML_READ_WPM_STR ")));});\n",
    "function dur(){return parseInt(steps[cur-1].getAttribute('data-dur'),10);}\n",
    "function tick(){timer=setTimeout(function(){show(cur<n?cur+1:1,alt);tick();},dur());}\n",
    "document.documentElement.className='js';\n",
    "document.getElementById('controls').hidden=false;\n",
    "if(sw&&alts.length)sw.hidden=false;\n",
    "function parse(){var h=location.hash,m=/step[=-](\\d+)/.exec(h);"
    "return{step:m?parseInt(m[1],10):1,alt:/(^#|&)alt=1(&|$)/.test(h)};}\n",
    "function show(k,a){\n",
    " if(!(k>=1))k=1;if(k>n)k=n;cur=k;alt=!!a&&alts.length>0;\n",
    " var s=steps[cur-1];\n",
    " steps.forEach(function(x){x.hidden=x!==s;});\n",
    " seqs.forEach(function(q){q.hidden=!q.contains(s);"
    "q.classList.toggle('later',q.querySelector('section.step')!==s);});\n",
    " alts.forEach(function(x){x.hidden=!alt;});\n",
    " links.forEach(function(l){var q=document.getElementById(l.getAttribute('data-seq'));"
    "l.setAttribute('aria-current',q&&q.contains(s)?'true':'false');});\n",
    " var f=document.activeElement;\n",
    " prev.disabled=cur===1;next.disabled=cur===n;\n",
    " if(f===next&&next.disabled)prev.focus();else if(f===prev&&prev.disabled)next.focus();\n",
    " if(sw)sw.setAttribute('aria-pressed',alt?'true':'false');\n",
    " status.textContent='Step '+cur+' of '+n+': '+s.getAttribute('data-title');\n",
    " wide();\n",
    " var h='#step='+cur+(alt?'&alt=1':'');\n",
    " if(location.hash!==h){try{history.replaceState(null,'',h);}catch(e){}}\n",
    "}\n",
    "function wide(){[].forEach.call(document.querySelectorAll('figure.mat'),function(m){"
    "var "
    "d=m.querySelector('.scroll');m.classList.toggle('wide',!!d&&d.scrollWidth>d.clientWidth+1);});"
    "}\n",
    "window.addEventListener('resize',wide);\n",
    "function playing(on){\n",
    " if(on===(timer!==null))return;\n",
    " if(on)tick();else{clearTimeout(timer);timer=null;}\n",
    " play.setAttribute('aria-pressed',on?'true':'false');\n",
    " play.textContent=on?'\\u275a\\u275a Pause':'\\u25b6 Play';\n",
    " status.setAttribute('aria-live',on?'off':'polite');\n",
    "}\n",
    "play.addEventListener('click',function(){playing(timer===null);});\n",
    "prev.addEventListener('click',function(){playing(false);show(cur-1,alt);});\n",
    "next.addEventListener('click',function(){playing(false);show(cur+1,alt);});\n",
    "if(sw)sw.addEventListener('click',function(){show(cur,!alt);});\n",
    "links.forEach(function(l){l.addEventListener('click',function(e){e.preventDefault();playing("
    "false);"
    "show(parseInt(l.getAttribute('data-first'),10),alt);window.scrollTo(0,0);});});\n",
    "function onplay(e){return e.target&&e.target.closest&&e.target.closest('#play');}\n",
    "['pointerdown','wheel','touchstart'].forEach(function(t){document.addEventListener(t,function("
    "e){"
    "if(!onplay(e))playing(false);},{passive:true});});\n",
    "var "
    "body=document.querySelector('main');if(body)body.addEventListener('mouseover',function(){"
    "playing(false);});\n",
    "document.addEventListener('keydown',function(e){\n",
    " if(!onplay(e)&&['Shift','Control','Alt','Meta'].indexOf(e.key)<0)playing(false);\n",
    " if(e.altKey||e.ctrlKey||e.metaKey||e.shiftKey)return;\n",
    " var t=e.target&&e.target.tagName;if(t==='INPUT'||t==='TEXTAREA'||t==='SELECT')return;\n",
    " if(e.key==='ArrowRight'){playing(false);show(cur+1,alt);e.preventDefault();}\n",
    " else if(e.key==='ArrowLeft'){playing(false);show(cur-1,alt);e.preventDefault();}\n",
    "});\n",
    "window.addEventListener('hashchange',function(){var "
    "p=parse();playing(false);show(p.step,p.alt);window.scrollTo(0,0);});\n",
    "var "
    "deep=/step[=-]\\d/"
    ".test(location.hash),p0=parse();show(p0.step,p0.alt);window.scrollTo(0,0);\n",
    "var calm=window.matchMedia&&window.matchMedia('(prefers-reduced-motion: reduce)').matches;\n",
    "if(!deep&&!calm&&n>1)playing(true);\n",
    "})();\n",
    NULL,
};

// ---------------------------------------------------------------------------------------------
// writing

// Prose escaped, with each "-inf" kept on one line (a browser may break a line after a hyphen).
static void escape_prose(FILE *f, const char *text) {
    char *part = dup_or_null(text);
    for (char *c = part, *hit; *c; c = hit + 4) {
        hit = strstr(c, "-inf");
        if (!hit) {
            html_escape(f, c);
            break;
        }
        *hit = 0;
        html_escape(f, c);
        fputs("<span class=\"nb\">-inf</span>", f);
    }
    free(part);
}

void html_text(FILE *f, const char *text) {
    const char *c = text ? text : "";
    while (*c) {
        const char *q = strchr(c, '`');
        const char *q2 = q ? strchr(q + 1, '`') : NULL;
        if (!q || !q2) {  // no (complete) code span left
            escape_prose(f, c);
            return;
        }
        char *part = dup_or_null(c);
        part[q - c] = 0;
        escape_prose(f, part);
        fputs("<code>", f);
        size_t n = (size_t)(q2 - q - 1);
        memcpy(part, q + 1, n);
        part[n] = 0;
        html_escape(f, part);
        fputs("</code>", f);
        free(part);
        c = q2 + 1;
    }
}

// The policy forbids every fetch (default-src 'none'); only this file's own inline style and
// script run, and no form or base URL can point elsewhere.
#define PAGE_CSP                                                                                   \
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "                  \
    "base-uri 'none'; form-action 'none'"

void html_write_head(FILE *f, const char *title, const char *command) {
    html_write_head_css(f, title, command, NULL);
}

void html_write_head_css(FILE *f, const char *title, const char *command, const char *extra_css) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\" class=\"no-js\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"" PAGE_CSP "\">\n<title>",
          f);
    html_escape(f, title);
    fputs("</title>\n<style>\n", f);
    for (int i = 0; PAGE_CSS[i]; i++) fputs(PAGE_CSS[i], f);
    if (extra_css) fputs(extra_css, f);
    fputs("</style>\n</head>\n<body>\n<header>\n<h1>", f);
    html_escape(f, title);
    fputs("</h1>\n<p class=\"by\">Written by <code class=\"cmd\">", f);
    html_escape(f, command);
    fputs("</code></p>\n</header>\n", f);
}

void html_write_tail(FILE *f, int script) {
    if (script) {
        fputs("<script>\n", f);
        for (int i = 0; PAGE_JS[i]; i++) fputs(PAGE_JS[i], f);
        fputs("</script>\n", f);
    }
    fputs("</body>\n</html>\n", f);
}

static void write_number(FILE *f, const char *fmt, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    html_escape(f, buf);
}

// The class of a cell: its kind ("v" a value, "x" an extra column) and a letter per mark.
static const char *cell_class(char *buf, size_t n, const char *kind, unsigned mark) {
    snprintf(buf, n, "%s%s%s%s%s", kind, mark & HTML_CELL_CHANGED ? " c" : "",
             mark & HTML_CELL_MASKED ? " m" : "", mark & HTML_CELL_MAX ? " k" : "",
             mark & HTML_CELL_WRONG ? " w" : "");
    return buf;
}

void html_write_matrix(FILE *f, const HtmlMatrix *m) {
    fputs("<figure class=\"mat\">\n<figcaption>", f);
    html_escape(f, m->name);
    fputs("</figcaption>\n<div class=\"scroll\"><table data-key=\"", f);
    html_escape(f, m->key);
    fprintf(f,
            "\" data-rows=\"%d\" data-cols=\"%d\">\n<thead><tr><th scope=\"col\" class=\"corner\">",
            m->rows, m->cols);
    if (m->row_axis || m->col_axis) {
        html_escape(f, m->row_axis ? m->row_axis : "");
        if (m->row_axis && m->col_axis) fputs(" \\ ", f);
        html_escape(f, m->col_axis ? m->col_axis : "");
    }
    fputs("</th>", f);
    for (int c = 0; c < m->cols; c++) {
        fputs("<th scope=\"col\">", f);
        if (m->col_labels && m->col_labels[c])
            html_escape(f, m->col_labels[c]);
        else
            fprintf(f, "%d", c);
        fputs("</th>", f);
    }
    for (int e = 0; e < m->n_extra; e++) {
        fputs("<th scope=\"col\" class=\"x\" data-key=\"", f);
        html_escape(f, m->extra[e].key);
        fputs("\">", f);
        html_escape(f, m->extra[e].label);
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (int r = 0; r < m->rows; r++) {
        fprintf(f, "<tr><th scope=\"row\">%d</th>", r);
        for (int c = 0; c < m->cols; c++) {
            size_t i = (size_t)r * m->cols + c;
            char cls[24];
            fprintf(f, "<td class=\"%s\">", cell_class(cls, sizeof cls, "v", m->mark[i]));
            write_number(f, m->fmt, m->v[i]);
            fputs("</td>", f);
        }
        for (int e = 0; e < m->n_extra; e++) {
            char cls[24];
            fprintf(f, "<td class=\"%s\">", cell_class(cls, sizeof cls, "x", m->extra[e].mark[r]));
            write_number(f, m->fmt, m->extra[e].v[r]);
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></div>\n<p class=\"more\" aria-hidden=\"true\">&rarr; scroll sideways "
          "for all "
          "columns</p>\n</figure>\n",
          f);
}

// The matrices of one place (SHARED, MAIN or ALT) of a step; returns how many there were.
static int count_where(const HtmlStep *s, int where) {
    int n = 0;
    for (int j = 0; j < s->n_m; j++) n += s->m[j]->where == where;
    return n;
}

static void write_group(FILE *f, const HtmlStep *s, int where) {
    fputs("<div class=\"group\">\n", f);
    for (int j = 0; j < s->n_m; j++)
        if (s->m[j]->where == where) html_write_matrix(f, s->m[j]);
    fputs("</div>\n", f);
}

static void write_step(FILE *f, const HtmlPage *p, int i) {
    const HtmlStep *s = p->steps[i];
    fprintf(f, "<section class=\"step\" id=\"step-%d\" data-step=\"%d\" data-title=\"", i + 1,
            i + 1);
    html_escape(f, s->title);
    fprintf(f,
            "\" aria-labelledby=\"h-step-%d\">\n<h3 id=\"h-step-%d\"><span class=\"num\">Step %d "
            "of %d:</span> "
            "<span class=\"title\">",
            i + 1, i + 1, i + 1, p->n_steps);
    html_escape(f, s->title);
    fputs("</span></h3>\n<p class=\"caption\">", f);
    html_text(f, s->caption);
    fputs("</p>\n<div class=\"mats\">\n", f);
    if (count_where(s, HTML_SHARED)) write_group(f, s, HTML_SHARED);
    int nm = count_where(s, HTML_MAIN), na = count_where(s, HTML_ALT);
    if (nm || na) {
        fputs("<div class=\"panels\">\n", f);
        if (nm) {
            fputs("<div class=\"panel main\">\n<h4>", f);
            html_text(f, p->main_label ? p->main_label : "");
            fputs("</h4>\n", f);
            write_group(f, s, HTML_MAIN);
            fputs("</div>\n", f);
        }
        if (na) {
            fputs("<div class=\"panel alt\">\n<h4>", f);
            html_text(f, p->alt_label ? p->alt_label : "");
            fputs("</h4>\n", f);
            write_group(f, s, HTML_ALT);
            fputs("</div>\n", f);
        }
        fputs("</div>\n", f);
    }
    fputs("</div>\n</section>\n", f);
}

// The union of the marks of every cell on the page: the legend names only those in use.
static unsigned page_marks(const HtmlPage *p) {
    unsigned all = 0;
    for (int i = 0; i < p->n_steps; i++)
        for (int j = 0; j < p->steps[i]->n_m; j++) {
            const HtmlMatrix *m = p->steps[i]->m[j];
            for (size_t k = 0; k < (size_t)m->rows * m->cols; k++) all |= m->mark[k];
            for (int e = 0; e < m->n_extra; e++)
                for (int r = 0; r < m->rows; r++) all |= m->extra[e].mark[r];
        }
    return all;
}

int html_page_fwrite(const HtmlPage *p, FILE *f) {
    html_write_head(f, p->title, p->command);
    int has_alt = 0;
    for (int i = 0; i < p->n_steps; i++) has_alt |= count_where(p->steps[i], HTML_ALT) > 0;
    // the controls: hidden until the script runs (they do nothing without it)
    fprintf(f,
            "<nav class=\"controls\" id=\"controls\" aria-label=\"Steps\" hidden>\n"
            "<button type=\"button\" id=\"play\" aria-pressed=\"false\" data-every=\"%d\">&#9654; "
            "Play</button>\n"
            "<button type=\"button\" id=\"prev\">&larr; Previous</button>\n"
            "<button type=\"button\" id=\"next\">Next &rarr;</button>\n",
            HTML_PLAY_EVERY_MS);
    fprintf(f, "<span class=\"status\" id=\"status\" aria-live=\"polite\">Step 1 of %d</span>\n",
            p->n_steps);
    if (has_alt) {
        fputs("<button type=\"button\" id=\"alt\" aria-pressed=\"false\" hidden>", f);
        html_escape(f, p->switch_label ? p->switch_label : "Show the alternative");
        fputs("</button>\n", f);
    }
    fputs("</nav>\n", f);
    // the sequences, each a link to its first step
    fputs("<nav class=\"toc\" aria-label=\"Sequences\"><ol>\n", f);
    for (int q = 0; q < p->n_seq; q++) {
        int first = -1, count = 0;
        for (int i = 0; i < p->n_steps; i++)
            if (p->steps[i]->seq == q) {
                if (first < 0) first = i;
                count++;
            }
        if (first < 0) continue;
        fprintf(f, "<li><a href=\"#step-%d\" data-first=\"%d\" data-seq=\"seq-", first + 1,
                first + 1);
        html_escape(f, p->seq[q].id);
        fputs("\">", f);
        html_escape(f, p->seq[q].title);
        fprintf(f, "</a> <span class=\"range\">(%d", first + 1);
        if (count > 1) fprintf(f, "&ndash;%d", first + count);
        fputs(")</span></li>\n", f);
    }
    fputs("</ol></nav>\n", f);
    unsigned marks = page_marks(p);
    if (marks) {
        fputs("<p class=\"legend\">", f);
        if (marks & HTML_CELL_CHANGED)
            fputs("<span><span class=\"sw c\">1.0</span>changed in this step</span> ", f);
        if (marks & HTML_CELL_MAX)
            fputs("<span><span class=\"sw k\">0.5</span>largest in its row</span> ", f);
        if (marks & HTML_CELL_MASKED)
            fputs("<span><span class=\"sw m\">-inf</span>masked</span> ", f);
        if (marks & HTML_CELL_WRONG)
            fputs("<span><span class=\"sw w\">0.25</span>wrong: what the mistake breaks</span>", f);
        fputs("</p>\n", f);
    }
    fputs("<main>\n", f);
    for (int q = 0; q < p->n_seq; q++) {
        fputs("<section class=\"seq\" id=\"seq-", f);
        html_escape(f, p->seq[q].id);
        fputs("\">\n<h2>", f);
        html_escape(f, p->seq[q].title);
        fputs("</h2>\n", f);
        if (p->seq[q].intro) {
            fputs("<p class=\"intro\">", f);
            html_text(f, p->seq[q].intro);
            fputs("</p>\n", f);
        }
        for (int i = 0; i < p->n_steps; i++)
            if (p->steps[i]->seq == q) write_step(f, p, i);
        fputs("</section>\n", f);
    }
    fputs("</main>\n<footer>\n", f);
    for (int i = 0; i < p->n_notes; i++) {
        fputs("<p>", f);
        html_text(f, p->notes[i]);
        fputs("</p>\n", f);
    }
    fputs("<p>Every number on this page is the program's own, printed with the same digits as in "
          "the terminal. "
          "The page needs no network and no other file. With JavaScript on, Play shows the steps "
          "one after "
          "another, a step every few seconds, and starts over after the last (it starts by itself "
          "unless your "
          "system asks for reduced motion); Previous / Next or the arrow keys &larr; &rarr; pause "
          "it and move "
          "between steps, and <code>#step=N</code> at the end of the address opens step N, paused. "
          "Without "
          "JavaScript every step is shown in order.</p>\n</footer>\n",
          f);
    html_write_tail(f, 1);
    return !ferror(f);
}

int html_page_write(const HtmlPage *p, const char *path, char *err, size_t errlen) {
    FILE *f = out_begin(path, OUT_DASH, err, errlen);
    if (!f) return 0;
    if (!html_page_fwrite(p, f)) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        out_cancel(f);
        return 0;
    }
    return out_end(f, err, errlen);
}
