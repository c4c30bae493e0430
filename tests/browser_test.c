// tests/browser_test.c: the lab's step-through pages in a real browser (make test-browser).
//
// For each page (./lab examples --html, ./lab exercise --html, the exercise with --causal,
// ./lab mistakes --html and ./lab online-softmax --html) it asks ./lab for the page, its numbers
// (--json) and its terminal output, then opens the page in headless Chromium once per step N and
// per size:
//   FILE#step=N        at 1280x800: the DOM after the script ran (--dump-dom), a screenshot, and
//                      the browser's network log
//   FILE#step=N&alt=1  at 390x844 (a phone), with the unscaled panels switched on: DOM, screenshot
// and checks that exactly step N is shown, with its title, its caption and every number of every
// table equal to the JSON's printed with "%.6f" (the terminal's digits), the alternative panels
// hidden or shown as the switch says, the status line and the buttons' state, and that no request
// left the file. Then: the page without its script (every step shown in order), the buttons and
// arrow keys (a copy of the page with a script that presses them and writes down what it saw),
// Play (it advances, starts over after the last step, pauses on Next; a page opened without
// #step=N plays by itself unless reduced motion is asked for),
// and two control pages proving the network check sees a request when there is one. Last, the
// report.html of a short real comparison (./train --compare model.attn_mask=causal,none) at both
// sizes: its charts, maps and reading rendered, no request left the file. And the page of
// ./sample --explain: one position per step, its rows equal to the --json numbers. And the
// attention playground (docs/playground.html): its worker trains the model through the page's
// own buttons, the loss falls, the unscaled variant ends the more peaked, at 390 px nothing
// scrolls sideways, no request left the file; and the default preset trained 50 steps in the page
// has every step's loss equal to 1e-5 relative to the native 4-wide one-thread build's.
//
// One line per check, then "N passed, N failed"; exit status 1 on any failure. Screenshots stay
// in build/browser/ (or --out DIR) to be looked at. Without Chromium it says so and exits 0.
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "page_check.h"
#include "report/html.h"  // HTML_PLAY_EVERY_MS, HTML_READ_WPM: the pace Play must keep

static int g_passed = 0, g_failed = 0;
static char g_out[512] = "build/browser";
static char g_abs[1024];  // g_out as an absolute path, for file:// addresses
static const char *g_chromium = NULL;
static int g_verbose = 0;
static const char *g_flags = "";  // more Chromium switches for the next chromium() call
static int g_wait_s = 90;         // how long the next chromium() call may take, in seconds

static void result(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    if (ok)
        g_passed++;
    else
        g_failed++;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t got = n > 0 ? fread(s, 1, (size_t)n, f) : 0;
    s[got] = 0;
    fclose(f);
    return s;
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

// Writes HTML to PATH with SCRIPT inserted at TAIL (a point inside HTML: its "</body>").
static void write_with_script(const char *path, const char *html, const char *tail,
                              const char *script) {
    char *copy = malloc(strlen(html) + strlen(script) + 1);
    memcpy(copy, html, (size_t)(tail - html));
    strcpy(copy + (tail - html), script);
    strcat(copy, tail);
    write_text(path, copy);
    free(copy);
}

static int sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (g_verbose) fprintf(stderr, "+ %s\n", cmd);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

// ---------------------------------------------------------------------------------------------
// the browser

// Open url headless at w x h. dom (may be NULL) receives --dump-dom's output, png a screenshot,
// netlog the network log. A fresh empty profile each time; g_wait_s (90 s) at most.
static int chromium(const char *url, int w, int h, const char *dom, const char *png,
                    const char *netlog) {
    char prof[1100];
    snprintf(prof, sizeof prof, "%s/profile", g_abs);
    sh("rm -rf '%s'", prof);
    if (mkdir(prof, 0700) != 0) return 0;
    char extra[4200] = "";
    size_t n = 0;
    if (png) n += (size_t)snprintf(extra + n, sizeof extra - n, " --screenshot='%s'", png);
    if (netlog) n += (size_t)snprintf(extra + n, sizeof extra - n, " --log-net-log='%s'", netlog);
    if (dom) snprintf(extra + n, sizeof extra - n, " --dump-dom");
    // the flags that keep Chromium from reaching out on its own (updates, sync, ...) and let it
    // run as root in a container
    int rc =
        sh("timeout %d '%s' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
           "--disable-background-networking --disable-component-update --disable-sync "
           "--disable-default-apps --disable-extensions --mute-audio --user-data-dir='%s' "
           "--window-size=%d,%d%s %s '%s' >'%s' 2>'%s/chromium.log'",
           g_wait_s, g_chromium, prof, w, h, extra, g_flags, url, dom ? dom : "/dev/null", g_abs);
    sh("rm -rf '%s'", prof);
    return rc == 0;
}

// The page's own requests in a network log: events with a URL whose initiator is the page (a
// file:// document has the opaque origin "null") or whose isolation key is the file's, as
// opposed to Chromium's own background requests ("not an origin"). Returns their count, the
// first URL in first; -1 when the log cannot be read.
static int page_requests(const char *netlog, char *first, size_t n) {
    char *text = slurp(netlog);
    if (!text) return -1;
    // a log cut off at exit lacks its closing "]}"
    size_t len = strlen(text);
    while (len && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == ','))
        text[--len] = 0;
    cJSON *j = cJSON_Parse(text);
    if (!j) {
        char *fixed = malloc(len + 4);
        memcpy(fixed, text, len);
        memcpy(fixed + len, "]}", 3);
        j = cJSON_Parse(fixed);
        free(fixed);
    }
    free(text);
    if (!j) return -1;
    int count = 0;
    first[0] = 0;
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(j, "events");
    for (const cJSON *e = events ? events->child : NULL; e; e = e->next) {
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(e, "params");
        const cJSON *url = cJSON_GetObjectItemCaseSensitive(params, "url");
        if (!cJSON_IsString(url)) continue;
        const cJSON *ini = cJSON_GetObjectItemCaseSensitive(params, "initiator");
        const cJSON *nik = cJSON_GetObjectItemCaseSensitive(params, "network_isolation_key");
        int from_page = (cJSON_IsString(ini) && strcmp(ini->valuestring, "not an origin") != 0) ||
                        (cJSON_IsString(nik) && strstr(nik->valuestring, "file://") != NULL);
        if (!from_page) continue;
        if (count++ == 0) snprintf(first, n, "%s", url->valuestring);
    }
    cJSON_Delete(j);
    return count;
}

// Width and height of a PNG from its IHDR chunk; 0 when the file is not a PNG.
static int png_size(const char *path, int *w, int *h) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char b[24];
    size_t got = fread(b, 1, sizeof b, f);
    fclose(f);
    if (got < 24 || memcmp(b, "\x89PNG\r\n\x1a\n", 8) != 0 || memcmp(b + 12, "IHDR", 4) != 0)
        return 0;
    *w = (b[16] << 24) | (b[17] << 16) | (b[18] << 8) | b[19];
    *h = (b[20] << 24) | (b[21] << 16) | (b[22] << 8) | b[23];
    return 1;
}

// ---------------------------------------------------------------------------------------------
// one page

enum { PAGE_EXAMPLES, PAGE_EXERCISE, PAGE_MISTAKES, PAGE_ONLINE };

typedef struct {
    const char *name;  // file stem
    const char *args;  // ./lab arguments before --html / --json
    int kind, causal;  // which expectation table
} PageSpec;

// The step shown in a parsed DOM: exactly one step must be visible.
static const PcStep *shown_step(const PcPage *pg, int *visible) {
    const PcStep *s = NULL;
    *visible = 0;
    for (int i = 0; i < pg->n_steps; i++)
        if (!pg->steps[i].hidden) {
            (*visible)++;
            s = &pg->steps[i];
        }
    return s;
}

// The checks of one rendered step. Returns 1 when all hold (one problem is described in why).
// said: what the step's caption must hold of the terminal's output (NULL: nothing); mistakes: the
// mistakes page, whose marks are checked too.
static int check_rendered(const char *html, int N, int n_steps, int alt, const PcExpect *want,
                          const cJSON *json, const PcPage *file, const char *said, int mistakes,
                          char *why, size_t n) {
    PcPage pg;
    if (!pc_parse(&pg, html, why, n)) return 0;
    int ok = 0, visible;
    const PcStep *s = shown_step(&pg, &visible);
    char expect_status[256];
    snprintf(expect_status, sizeof expect_status, "Step %d of %d: %s", N, n_steps, want->title);
    if (pg.n_steps != n_steps)
        snprintf(why, n, "%d steps in the DOM, expected %d", pg.n_steps, n_steps);
    else if (visible != 1 || !s)
        snprintf(why, n, "%d steps shown, expected exactly step %d", visible, N);
    else if (s->number != N)
        snprintf(why, n, "step %d shown, expected step %d", s->number, N);
    else if (pc_check_step(s, want, json, why, n) != 0) { /* why says it */
    } else if (strcmp(s->caption, file->steps[N - 1].caption) != 0)
        snprintf(why, n, "the caption differs from the file's: \"%.400s\"", s->caption);
    else if (said && !strstr(s->caption, said))
        snprintf(why, n, "the caption lacks the terminal's \"%s\"", said);
    else if (mistakes && pc_check_mistake_marks(s, json, why, n) != 0) { /* why says it */
    } else if (pg.controls_hidden != 0)
        snprintf(why, n, "the Previous/Next bar is hidden (did the script run?)");
    else if (strcmp(pg.status, expect_status) != 0)
        snprintf(why, n, "status \"%s\", expected \"%s\"", pg.status, expect_status);
    else if (pg.prev_disabled != (N == 1) || pg.next_disabled != (N == n_steps))
        snprintf(why, n, "Previous %s and Next %s at step %d of %d",
                 pg.prev_disabled ? "disabled" : "enabled",
                 pg.next_disabled ? "disabled" : "enabled", N, n_steps);
    else if (!pg.has_switch || pg.switch_hidden || pg.switch_pressed != alt)
        snprintf(why, n, "the switch is %s, %s; expected shown, %s",
                 pg.has_switch ? "there" : "missing", pg.switch_pressed ? "pressed" : "not pressed",
                 alt ? "pressed" : "not pressed");
    else {
        ok = 1;
        for (int t = 0; t < s->n_tables && ok; t++)
            if (s->tables[t].where == 2 && s->tables[t].hidden == alt) {
                snprintf(why, n, "%s is %s with the switch %s", s->tables[t].key,
                         alt ? "hidden" : "shown", alt ? "on" : "off");
                ok = 0;
            } else if (s->tables[t].where != 2 && s->tables[t].hidden) {
                snprintf(why, n, "%s is hidden", s->tables[t].key);
                ok = 0;
            }
    }
    pc_free(&pg);
    return ok;
}

// A copy of the page with a script after the page's own that clicks the buttons and presses the
// arrow keys, writing what each did into <pre id="navlog">: "what|status|hash|shown steps".
static const char *const NAV_SCRIPT =
    "<script>(function(){var log=[];function st(w){var "
    "v=[].map.call(document.querySelectorAll('section.step'),"
    "function(s){return s.hidden?'':s.getAttribute('data-step');}).join('');"
    "var a=[].filter.call(document.querySelectorAll('section.step:not([hidden]) "
    ".panel.alt'),function(p){return !p.hidden;}).length;"
    "log.push(w+'|'+document.getElementById('status').textContent+'|'+location.hash+'|'+v+'|'+a+'|'"
    "+(document.activeElement&&document.activeElement.id));}"
    "function key(k){document.dispatchEvent(new KeyboardEvent('keydown',{key:k,bubbles:true}));}"
    "st('start');document.getElementById('next').focus();document.getElementById('next').click();"
    "st('next');"
    "key('ArrowRight');st('right');key('ArrowLeft');st('left');document.getElementById('prev')."
    "click();st('prev');"
    "document.getElementById('alt').click();st('alt');key('ArrowRight');st('right-alt');"
    "document.getElementById('alt').click();st('alt-off');"
    "var "
    "p=document.createElement('pre');p.id='navlog';p.textContent=log.join('\\n');document.body."
    "appendChild(p);"
    "})();</script>\n";

static void check_navigation(const PageSpec *ps, const char *html, int n_steps,
                             const PcExpect *want) {
    char path[1200], url[1300], dom[1200], why[512] = "";
    const char *tail = strstr(html, "</body>");
    if (!tail) {
        result(0, "%s: buttons and arrow keys: no </body> in the page", ps->name);
        return;
    }
    snprintf(path, sizeof path, "%s/%s_nav.html", g_abs, ps->name);
    write_with_script(path, html, tail, NAV_SCRIPT);
    snprintf(url, sizeof url, "file://%s#step=2", path);
    snprintf(dom, sizeof dom, "%s/%s_nav.dom", g_abs, ps->name);
    int ok = chromium(url, 1280, 800, dom, NULL, NULL);
    char *out = ok ? slurp(dom) : NULL;
    const char *log = out ? strstr(out, "<pre id=\"navlog\">") : NULL;
    // each line: what|status|hash|shown|alt panels shown|focused
    struct {
        const char *what;
        int step, alt;
    } expect[] = {{"start", 2, 0}, {"next", 3, 0}, {"right", 4, 0},     {"left", 3, 0},
                  {"prev", 2, 0},  {"alt", 2, 1},  {"right-alt", 3, 1}, {"alt-off", 3, 0}};
    ok = log != NULL;
    if (!ok) snprintf(why, sizeof why, "no navigation log in the DOM (did the scripts run?)");
    const char *p = log ? log + strlen("<pre id=\"navlog\">") : NULL;
    for (size_t i = 0; ok && i < sizeof expect / sizeof expect[0]; i++) {
        char line[512];
        const char *e = strchr(p, '\n'), *end = strstr(p, "</pre>");
        if (!e || (end && end < e)) e = end;
        if (!e) {
            ok = 0;
            snprintf(why, sizeof why, "the log ends early");
            break;
        }
        snprintf(line, sizeof line, "%.*s", (int)(e - p), p);
        p = *e == '\n' ? e + 1 : e;
        char want_line[512];
        int steps_with_alt = 0;  // alt panels in the shown step
        const char *tables = want[expect[i].step - 1].tables;
        for (const char *q = tables; (q = strstr(q, "A:")) != NULL; q += 2) steps_with_alt = 1;
        snprintf(want_line, sizeof want_line, "%s|Step %d of %d: %s|#step=%d%s|%d|%d|",
                 expect[i].what, expect[i].step, n_steps, want[expect[i].step - 1].title,
                 expect[i].step, expect[i].alt ? "&amp;alt=1" : "", expect[i].step,
                 expect[i].alt && steps_with_alt ? 1 : 0);
        if (strncmp(line, want_line, strlen(want_line)) != 0) {
            ok = 0;
            snprintf(why, sizeof why, "after '%s': \"%.200s\", expected \"%.200s...\"",
                     expect[i].what, line, want_line);
        }
    }
    result(ok, "%s: Previous/Next buttons, arrow keys and the switch move as expected%s%s",
           ps->name, ok ? "" : ": ", why);
    free(out);
}

// A copy of the page with a script that first writes down each step's time and words as the page
// computed them (data-dur, data-words: "durs|D/W,..."), then presses Play on the second-to-last
// step and writes down, halfway through each step's own time, what is shown
// ("what|status|pressed"); Next pauses it; Play again, then the pointer over the content pauses it
// too. Chromium runs the timers in virtual time (--virtual-time-budget), so nothing waits for real.
static const char *const PLAY_SCRIPT =
    "<script>(function(){var "
    "log=[],play=document.getElementById('play'),status=document.getElementById('status'),"
    "ss=[].slice.call(document.querySelectorAll('section.step')),n=ss.length,"
    "D=ss.map(function(s){return parseInt(s.getAttribute('data-dur'),10);});"
    "function d(k){return D[k-1];}"
    "function st(w){log.push(w+'|'+status.textContent+'|'+play.getAttribute('aria-pressed'));}"
    "log.push('durs|'+ss.map(function(s){return "
    "s.getAttribute('data-dur')+'/'+s.getAttribute('data-words');}).join(','));"
    "st('start');play.click();st('play');"
    "var "
    "t1=d(n-1)+d(n)/2,t2=d(n-1)+d(n)+d(1)/2,t3=d(n-1)+d(n)+d(1)+d(2)/2,tn=t3+d(2)/"
    "4,m=Math.max.apply(null,D);"
    "setTimeout(function(){st('tick1');},t1);setTimeout(function(){st('tick2');},t2);"
    "setTimeout(function(){st('tick3');},t3);"
    "setTimeout(function(){document.getElementById('next').click();st('next');},tn);"
    "setTimeout(function(){st('paused');play.click();st('replay');"
    "document.querySelector('main').dispatchEvent(new "
    "MouseEvent('mouseover',{bubbles:true}));st('hover');},tn+2*m);"
    "setTimeout(function(){st('still');var p=document.createElement('pre');p.id='playlog';"
    "p.textContent=log.join('\\n');document.body.appendChild(p);},tn+4*m);"
    "})();</script>\n";

// The same for a page opened without #step=N: what it shows just before the first step's time is
// up and halfway through the second step's.
static const char *const AUTOPLAY_SCRIPT =
    "<script>(function(){var "
    "play=document.getElementById('play'),status=document.getElementById('status'),"
    "ss=document.querySelectorAll('section.step'),log=[],"
    "d1=parseInt(ss[0].getAttribute('data-dur'),10),d2=parseInt(ss[1].getAttribute('data-dur'),10);"
    "function st(){log.push('auto|'+status.textContent+'|'+play.getAttribute('aria-pressed'));}"
    "setTimeout(st,d1*0.9);setTimeout(function(){st();var "
    "p=document.createElement('pre');p.id='playlog';"
    "p.textContent=log.join('\\n');document.body.appendChild(p);},d1+d2/2);})();</script>\n";

// The page at path with `script` added after its own, opened at url_tail, run for an hour of
// virtual time with `flags`; returns the text of its <pre id="playlog"> (malloc'd) or NULL.
static char *played_log(const PageSpec *ps, const char *html, const char *script, const char *tag,
                        const char *url_tail, const char *flags) {
    char path[1200], url[1300], dom[1200];
    const char *tail = strstr(html, "</body>");
    if (!tail) return NULL;
    snprintf(path, sizeof path, "%s/%s_%s.html", g_abs, ps->name, tag);
    write_with_script(path, html, tail, script);
    snprintf(url, sizeof url, "file://%s%s", path, url_tail);
    snprintf(dom, sizeof dom, "%s/%s_%s.dom", g_abs, ps->name, tag);
    char all_flags[256];
    snprintf(all_flags, sizeof all_flags, "--virtual-time-budget=3600000 %s", flags);
    g_flags = all_flags;
    int ok = chromium(url, 1280, 800, dom, NULL, NULL);
    g_flags = "";
    char *out = ok ? slurp(dom) : NULL;
    const char *log = out ? strstr(out, "<pre id=\"playlog\">") : NULL;
    char *text = NULL;
    if (log) {
        log += strlen("<pre id=\"playlog\">");
        const char *end = strstr(log, "</pre>");
        size_t n = end ? (size_t)(end - log) : strlen(log);
        text = malloc(n + 1);
        memcpy(text, log, n);
        text[n] = 0;
    }
    free(out);
    if (text) unlink(dom);
    return text;
}

// Play: every step's time is its reading time at HTML_READ_WPM words a minute, and at least
// HTML_PLAY_EVERY_MS; from the second-to-last step it advances to the last, starts over at
// step 1, goes on to step 2, each after its own time, and Next pauses it (nothing moves after);
// played again, the pointer over the content pauses it. A page opened without #step=N keeps its
// first step for that step's time, then plays on, unless the reader prefers reduced motion.
static void check_play(const PageSpec *ps, const char *html, int n_steps, const PcExpect *want) {
    char why[600] = "", tail[32];
    snprintf(tail, sizeof tail, "#step=%d", n_steps - 1);
    char *log = played_log(ps, html, PLAY_SCRIPT, "play", tail, "");
    const char *p = log;
    int ok = p != NULL, longer = 0;
    if (!ok) snprintf(why, sizeof why, "no log in the DOM (did the scripts run?)");
    // the durations: "durs|D/W,D/W,..." one per step
    if (ok && strncmp(p, "durs|", 5) != 0)
        ok = 0, snprintf(why, sizeof why, "no durations: %.200s", p);
    if (ok) p += 5;
    for (int k = 1; ok && k <= n_steps; k++) {
        long d = -1, w = -1;
        int used = 0;
        if (sscanf(p, "%ld/%ld%n", &d, &w, &used) != 2 || w < 1) {
            ok = 0;
            snprintf(why, sizeof why, "step %d: no duration and words in \"%.60s\"", k, p);
            break;
        }
        long reading = (w * 60000 + HTML_READ_WPM - 1) / HTML_READ_WPM;
        long expect_d = reading > HTML_PLAY_EVERY_MS ? reading : HTML_PLAY_EVERY_MS;
        if (d != expect_d) {
            ok = 0;
            snprintf(
                why, sizeof why,
                "step %d: %ld ms for %ld words, expected %ld (%d words a minute, at least %d ms)",
                k, d, w, expect_d, HTML_READ_WPM, HTML_PLAY_EVERY_MS);
        }
        longer += d > HTML_PLAY_EVERY_MS;
        p += used;
        if (*p == ',') p++;
    }
    if (ok && longer == 0)
        ok = 0,
        snprintf(why, sizeof why, "no step is paced longer than the least time: nothing tested");
    if (ok && *p == '\n') p++;
    struct {
        const char *what;
        int step;
        const char *pressed;
    } expect[] = {{"start", n_steps - 1, "false"},
                  {"play", n_steps - 1, "true"},
                  {"tick1", n_steps, "true"},
                  {"tick2", 1, "true"},
                  {"tick3", 2, "true"},
                  {"next", 3, "false"},
                  {"paused", 3, "false"},
                  {"replay", 3, "true"},
                  {"hover", 3, "false"},
                  {"still", 3, "false"}};
    for (size_t i = 0; ok && i < sizeof expect / sizeof expect[0]; i++) {
        char want_line[512], line[512];
        snprintf(want_line, sizeof want_line, "%s|Step %d of %d: %s|%s", expect[i].what,
                 expect[i].step, n_steps, want[expect[i].step - 1].title, expect[i].pressed);
        size_t len = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        if (strcmp(line, want_line) != 0) {
            ok = 0;
            snprintf(why, sizeof why, "after '%s': \"%.200s\", expected \"%.200s\"", expect[i].what,
                     line, want_line);
        }
        p += len;
        if (*p == '\n') p++;
    }
    result(ok,
           "%s: Play shows each step for its reading time (%d of %d steps longer than %d ms), "
           "starts over after "
           "the last; Next and the pointer over the content pause it%s%s",
           ps->name, longer, n_steps, HTML_PLAY_EVERY_MS, ok ? "" : ": ", why);
    free(log);
    static const struct {
        const char *flags, *tag;
        int step2;
        const char *pressed;
    } autos[2] = {{"", "autoplay", 2, "true"},
                  {"--force-prefers-reduced-motion", "calm", 1, "false"}};
    for (int k = 0; k < 2; k++) {
        char want_line[1100];
        snprintf(want_line, sizeof want_line, "auto|Step 1 of %d: %s|%s\nauto|Step %d of %d: %s|%s",
                 n_steps, want[0].title, autos[k].pressed, autos[k].step2, n_steps,
                 want[autos[k].step2 - 1].title, autos[k].pressed);
        log = played_log(ps, html, AUTOPLAY_SCRIPT, autos[k].tag, "", autos[k].flags);
        ok = log && strcmp(log, want_line) == 0;
        result(ok, "%s: opened without #step=N %s: \"%s\"%s%.300s", ps->name,
               k ? "and reduced motion asked for, it does not play"
                 : "it keeps step 1 for its reading time, then plays on",
               want_line, ok ? "" : ", got: ",
               ok    ? ""
               : log ? log
                     : "no log");
        free(log);
    }
}

static void check_page(const PageSpec *ps) {
    char page[1100], json_path[1100], text_path[1100], why[1024];
    snprintf(page, sizeof page, "%s/%s.html", g_abs, ps->name);
    snprintf(json_path, sizeof json_path, "%s/%s.json", g_abs, ps->name);
    snprintf(text_path, sizeof text_path, "%s/%s.txt", g_abs, ps->name);
    int rc1 = sh("./lab %s --html '%s' >'%s' 2>/dev/null", ps->args, page, text_path);
    int rc2 = sh("./lab %s --json >'%s'", ps->args, json_path);
    char *html = slurp(page), *json_text = slurp(json_path), *terminal = slurp(text_path);
    cJSON *json = json_text ? cJSON_Parse(json_text) : NULL;
    PcPage file;
    int parsed = html && pc_parse(&file, html, why, sizeof why);
    result(rc1 == 0 && rc2 == 0 && json && parsed, "%s: ./lab %s --html / --json%s%s", ps->name,
           ps->args, parsed ? "" : ": ", parsed ? "" : why);
    if (!(rc1 == 0 && rc2 == 0 && json && parsed)) {
        free(html);
        free(json_text);
        free(terminal);
        cJSON_Delete(json);
        return;
    }
    const PcExpect *want;
    int n_steps = ps->kind == PAGE_EXAMPLES   ? pc_examples_expect(&want)
                  : ps->kind == PAGE_MISTAKES ? pc_mistakes_expect(&want)
                  : ps->kind == PAGE_ONLINE   ? pc_online_expect(&want)
                                              : pc_exercise_expect(&want, ps->causal);
    result(file.n_steps == n_steps, "%s: %d steps in the file (expected %d)", ps->name,
           file.n_steps, n_steps);
    result(pc_check_offline(&file, html, why, sizeof why) == 0,
           "%s: self-contained (CSP default-src 'none', no "
           "http(s):// or external reference)%s%s",
           ps->name, why[0] ? ": " : "", why);
    if (file.n_steps != n_steps) n_steps = file.n_steps < n_steps ? file.n_steps : n_steps;
    // what a step's caption must say as the terminal said it: the exercise's verdict (its Row
    // maxima step); each mistake's reading, "NAME: " and two lines joined (the mistakes' steps 2-4)
    char(*said)[512] = calloc((size_t)n_steps, sizeof *said);
    int ends =
        0;  // the online softmax's Normalise steps so far: the k-th says the terminal's k-th result
    for (int N = 1; N <= n_steps; N++) {
        char start[96];
        int lines = 1;
        if (ps->kind == PAGE_ONLINE && strcmp(want[N - 1].title, "Normalise") == 0) {
            const char *v = terminal;
            for (int k = 0; k <= ends && v; k++)
                v = strstr(k ? v + 1 : v, "P = exp(s - m) / l differs");
            ends++;
            if (!v)
                snprintf(said[N - 1], sizeof said[N - 1], "(the terminal has no result %d)", ends);
            else
                snprintf(said[N - 1], sizeof said[N - 1], "%.*s", (int)strcspn(v, "\n"), v);
            continue;
        }
        if (ps->kind == PAGE_EXERCISE && strcmp(want[N - 1].title, "Row maxima") == 0) {
            snprintf(start, sizeof start, "verdict: ");
        } else if (ps->kind == PAGE_MISTAKES && N > 1) {
            snprintf(start, sizeof start,
                     "\n%s: ", want[N - 1].title);  // the terminal's name is lower-case
            start[1] = (char)(start[1] - 'A' + 'a');
            lines = 2;
        } else {
            continue;
        }
        const char *v = terminal ? strstr(terminal, start) : NULL;
        if (!v) {
            snprintf(said[N - 1], sizeof said[N - 1], "(the terminal has no line starting \"%s\")",
                     start);
            continue;
        }
        if (ps->kind == PAGE_MISTAKES) v += strlen(start);
        size_t k = 0;
        for (int l = 0; l < lines && *v; l++) {
            const char *e = strchr(v, '\n');
            int len = e ? (int)(e - v) : (int)strlen(v);
            k += (size_t)snprintf(said[N - 1] + k, sizeof said[N - 1] - k, "%s%.*s", l ? " " : "",
                                  len, v);
            v = e ? e + 1 : v + len;
            while (*v == ' ') v++;
        }
    }

    for (int N = 1; N <= n_steps; N++) {
        static const struct { int w, h, alt; } views[2] = {{1280, 800, 0}, {390, 844, 1}};
        for (int k = 0; k < 2; k++) {
            int w = views[k].w, h = views[k].h, alt = views[k].alt;
            char url[1300], dom[1200], png[1200], net[1200];
            snprintf(url, sizeof url, "file://%s#step=%d%s", page, N, alt ? "&alt=1" : "");
            snprintf(dom, sizeof dom, "%s/%s_step%02d_%dx%d%s.dom", g_abs, ps->name, N, w, h,
                     alt ? "_alt" : "");
            snprintf(png, sizeof png, "%s/%s_step%02d_%dx%d%s.png", g_abs, ps->name, N, w, h,
                     alt ? "_alt" : "");
            snprintf(net, sizeof net, "%s/%s_step%02d.netlog.json", g_abs, ps->name, N);
            unlink(png);
            int ran = chromium(url, w, h, dom, png, k == 0 ? net : NULL);
            char *out = ran ? slurp(dom) : NULL;
            int ok = out && check_rendered(out, N, n_steps, alt, &want[N - 1], json, &file,
                                           said[N - 1][0] ? said[N - 1] : NULL,
                                           ps->kind == PAGE_MISTAKES, why, sizeof why);
            if (!ran) snprintf(why, sizeof why, "chromium failed (see %s/chromium.log)", g_out);
            int pw = 0, ph = 0;
            if (ok && !(png_size(png, &pw, &ph) && pw == w && ph == h)) {
                ok = 0;
                snprintf(why, sizeof why, "no %dx%d screenshot (got %dx%d)", w, h, pw, ph);
            }
            if (ok && k == 0) {
                char first[512];
                int req = page_requests(net, first, sizeof first);
                if (req != 0) {
                    ok = 0;
                    if (req < 0)
                        snprintf(why, sizeof why, "cannot read the network log %.400s", net);
                    else
                        snprintf(why, sizeof why, "%d request(s) left the file, first %s", req,
                                 first);
                }
            }
            result(ok,
                   "%s: #step=%d%s (%s) at %dx%d: step shown with its caption and numbers%s%s%s",
                   ps->name, N, alt ? "&alt=1" : "", want[N - 1].title, w, h,
                   k == 0 ? ", no request left the file" : "", ok ? "" : ": ", ok ? "" : why);
            free(out);
            if (ok) unlink(dom);
            unlink(net);
        }
    }

    // without JavaScript: the page with its script taken out shows every step, in order
    {
        char nojs[1200], url[1300], dom[1200], png[1200];
        snprintf(nojs, sizeof nojs, "%s/%s_nojs.html", g_abs, ps->name);
        char *copy = strdup(html);
        char *s = strstr(copy, "<script>"), *e = s ? strstr(s, "</script>") : NULL;
        if (s && e) memmove(s, e + strlen("</script>"), strlen(e + strlen("</script>")) + 1);
        write_text(nojs, copy);
        free(copy);
        snprintf(url, sizeof url, "file://%s#step=3", nojs);
        snprintf(dom, sizeof dom, "%s/%s_nojs.dom", g_abs, ps->name);
        snprintf(png, sizeof png, "%s/%s_nojs_1280x2400.png", g_abs, ps->name);
        int ok = chromium(url, 1280, 2400, dom, png, NULL);
        char *out = ok ? slurp(dom) : NULL;
        PcPage pg;
        why[0] = 0;
        ok = out && pc_parse(&pg, out, why, sizeof why);
        if (ok) {
            if (pg.n_steps != n_steps) {
                ok = 0;
                snprintf(why, sizeof why, "%d steps", pg.n_steps);
            }
            for (int i = 0; ok && i < pg.n_steps; i++) {
                if (pg.steps[i].hidden || pg.steps[i].number != i + 1) {
                    ok = 0;
                    snprintf(why, sizeof why, "step %d hidden or out of order", i + 1);
                } else if (pc_check_step(&pg.steps[i], &want[i], json, why, sizeof why) != 0) {
                    ok = 0;
                }
                for (int t = 0; ok && t < pg.steps[i].n_tables; t++)
                    if (pg.steps[i].tables[t].hidden) {
                        ok = 0;
                        snprintf(why, sizeof why, "step %d: %s hidden", i + 1,
                                 pg.steps[i].tables[t].key);
                    }
            }
            if (ok && pg.controls_hidden != 1) {
                ok = 0;
                snprintf(why, sizeof why,
                         "the Previous/Next bar shows without the script that runs it");
            }
            pc_free(&pg);
        }
        result(ok, "%s: without JavaScript every step is shown in order with its numbers%s%s",
               ps->name, ok ? "" : ": ", why);
        free(out);
    }
    check_navigation(ps, html, n_steps, want);
    if (ps->kind == PAGE_EXAMPLES || ps->kind == PAGE_MISTAKES) check_play(ps, html, n_steps, want);
    free(said);
    pc_free(&file);
    free(html);
    free(json_text);
    free(terminal);
    cJSON_Delete(json);
}

// ---------------------------------------------------------------------------------------------
// report.html of a real comparison

static int count_str(const char *s, const char *sub) {
    int n = 0;
    for (const char *p = s ? strstr(s, sub) : NULL; p; p = strstr(p + strlen(sub), sub)) n++;
    return n;
}

// A script added to a copy of the page: after layout, how many charts and maps have a size, the
// width of the window and whether the page is wider, sent to the page that frames it.
static const char *const MEASURE_SCRIPT =
    "<script>window.addEventListener('load',function(){function drawn(q){return [].filter.call("
    "document.querySelectorAll(q),function(e){var r=e.getBoundingClientRect();return "
    "r.width>20&&r.height>20;}).length;}"
    "var d=document.documentElement;parent.postMessage('charts='+drawn('svg.chart')+' "
    "maps='+drawn('svg.hm')"
    "+' width='+d.clientWidth+' overflow='+(d.scrollWidth>d.clientWidth+1?1:0),'*');});</script>\n";

// The page that frames it at exactly w x h (headless Chromium lays a window out at least 500
// wide; a frame is as wide as it is told) and writes what it sent into <pre id="measure">.
static void write_frame(const char *path, const char *inner, int w, int h) {
    char text[2600];
    snprintf(text, sizeof text,
             "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>frame</title></head>"
             "<body style=\"margin:0\"><iframe src=\"%s\" "
             "style=\"border:0;width:%dpx;height:%dpx\"></iframe>"
             "<script>window.addEventListener('message',function(e){var "
             "p=document.createElement('pre');p.id='measure';"
             "p.textContent=e.data;document.body.appendChild(p);});</script></body></html>\n",
             inner, w, h);
    write_text(path, text);
}

// A tiny two-variant comparison (causal against no mask, 20 steps, probes every 5), its
// report.html opened at both sizes: the DOM holds report.md's headings and reading, one chart per
// panel of compare.svg and the maps of both variants at steps 0, 10 and 20 (2 layers x 2 heads);
// every chart and map is drawn with a size, the page is no wider than the window, and no request
// left the file.
static void check_report(void) {
    char cfg[1200], dir[1200], page[1300], md_path[1300], svg_path[1300];
    snprintf(cfg, sizeof cfg, "%s/report_cfg.json", g_abs);
    snprintf(dir, sizeof dir, "%s/report", g_abs);
    char json[1800];
    snprintf(json, sizeof json,
             "{\"name\": \"browser\",\n \"model\": {\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 16, "
             "\"block_size\": 16},\n"
             " \"data\": {\"path\": \"data/default.txt\", \"val_fraction\": 0.05},\n"
             " \"train\": {\"batch_size\": 4, \"max_steps\": 20, \"warmup_steps\": 2, "
             "\"ckpt_interval\": 0, \"seed\": 7},\n"
             " \"log\": {\"log_interval\": 10, \"eval_interval\": 10, \"eval_steps\": 2, "
             "\"attn_interval\": 5,"
             " \"gen_windows\": 4},\n \"sample\": {\"tokens\": 40}}\n");
    write_text(cfg, json);
    int rc = sh("./train '%s' --compare model.attn_mask=causal,none --train.out_dir='%s' "
                "--train.overwrite=true "
                ">'%s/report_train.txt' 2>&1",
                cfg, dir, g_abs);
    snprintf(page, sizeof page, "%s/report.html", dir);
    snprintf(md_path, sizeof md_path, "%s/report.md", dir);
    snprintf(svg_path, sizeof svg_path, "%s/compare.svg", dir);
    char *html = slurp(page), *md = slurp(md_path), *svg = slurp(svg_path);
    result(rc == 0 && html && md && svg,
           "report: ./train --compare model.attn_mask=causal,none (20 steps) wrote "
           "report.html, report.md and compare.svg%s",
           rc == 0 ? "" : " (see report_train.txt)");
    if (!(rc == 0 && html && md && svg)) {
        free(html);
        free(md);
        free(svg);
        return;
    }
    int panels = count_str(svg, "<clipPath id=\"clip"), bullets = 0;
    for (const char *p = md; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        bullets += strncmp(p, "- ", 2) == 0;
    // a copy that measures the layout
    const char *tail = strstr(html, "</body>");
    char copy_path[1300];
    snprintf(copy_path, sizeof copy_path, "%s/report_measure.html", dir);
    if (tail) {
        write_with_script(copy_path, html, tail, MEASURE_SCRIPT);
    }
    static const struct { int w, h; } views[2] = {{1280, 800}, {390, 844}};
    for (int k = 0; k < 2; k++) {
        int w = views[k].w, h = views[k].h;
        char url[1400], dom[1300], png[1300], net[1300], why[512] = "";
        snprintf(url, sizeof url, "file://%s", page);
        snprintf(dom, sizeof dom, "%s/report_%dx%d.dom", g_abs, w, h);
        snprintf(png, sizeof png, "%s/report_%dx%d.png", g_abs, w, h);
        snprintf(net, sizeof net, "%s/report.netlog.json", g_abs);
        unlink(png);
        int ok = chromium(url, w, h, dom, png, net);
        char *out = ok ? slurp(dom) : NULL;
        int charts = count_str(out, "<svg class=\"chart\""),
            maps = count_str(out, "<svg class=\"hm\""), pw = 0, ph = 0;
        char first[512];
        int req = out ? page_requests(net, first, sizeof first) : -1;
        if (!out)
            snprintf(why, sizeof why, "chromium failed (see %.300s/chromium.log)", g_out);
        else if (req != 0)
            snprintf(why, sizeof why,
                     req < 0 ? "cannot read the network log"
                             : "%d request(s) left the "
                               "file, first %.400s",
                     req, first);
        else if (charts != panels || panels < 4)
            snprintf(why, sizeof why, "%d charts, compare.svg has %d panels", charts, panels);
        else if (maps != 2 * 3 * 2 * 2)
            snprintf(why, sizeof why, "%d attention maps, expected 24", maps);
        else if (!strstr(
                     out,
                     "data-variant=\"none\" data-step=\"10\" data-layer=\"1\" data-head=\"1\"") ||
                 !strstr(
                     out,
                     "data-variant=\"causal\" data-step=\"20\" data-layer=\"0\" data-head=\"0\"") ||
                 !strstr(
                     out,
                     "data-variant=\"causal\" data-step=\"0\" data-layer=\"0\" data-head=\"1\""))
            snprintf(why, sizeof why, "a map of steps 0, 10 or 20 is missing");
        else if (!strstr(out, "<h2>What the numbers show</h2>") ||
                 count_str(out, "<li>") != bullets)
            snprintf(why, sizeof why, "%d list items, report.md has %d bullets",
                     count_str(out, "<li>"), bullets);
        else if (!(png_size(png, &pw, &ph) && pw == w && ph == h))
            snprintf(why, sizeof why, "no %dx%d screenshot (got %dx%d)", w, h, pw, ph);
        ok = out && !why[0];
        result(ok,
               "report: report.html at %dx%d: %d charts, %d attention maps, report.md's reading, "
               "no request left "
               "the file%s%s",
               w, h, charts, maps, ok ? "" : ": ", why);
        free(out);
        if (ok) unlink(dom);
        unlink(net);
        // the layout: every chart and map drawn with a size, nothing wider than the window
        char frame[1300];
        snprintf(frame, sizeof frame, "%s/report_frame.html", dir);
        write_frame(frame, "report_measure.html", w, h);
        snprintf(url, sizeof url, "file://%s", frame);
        snprintf(dom, sizeof dom, "%s/report_measure_%dx%d.dom", g_abs, w, h);
        ok = tail && chromium(url, w < 500 ? 500 : w, h, dom, NULL, NULL);
        out = ok ? slurp(dom) : NULL;
        // the frame's width less its scroll bar
        const char *got = out ? strstr(out, "<pre id=\"measure\">") : NULL;
        int c = -1, m = -1, width = -1, over = -1;
        ok = got &&
             sscanf(got, "<pre id=\"measure\">charts=%d maps=%d width=%d overflow=%d", &c, &m,
                    &width, &over) == 4 &&
             c == panels && m == 24 && width <= w && width >= w - 20 && over == 0;
        result(ok,
               "report: in a frame of %dx%d every chart and map is drawn with a size and the page "
               "is no wider "
               "than it (%d px inside the scroll bar)%s%.80s",
               w, h, width, ok ? "" : ": ",
               ok    ? ""
               : got ? got
                     : "no measurement (did the script run?)");
        free(out);
        if (ok) unlink(dom);
    }
    free(html);
    free(md);
    free(svg);
}

// Two pages made here that request http://127.0.0.1:9/ (a closed port on this machine): without
// a CSP the network log must show the request (else the check above could never fail); with the
// pages' CSP it must not.
static void check_network_detector(void) {
    static const char *const csp =
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">";
    for (int with_csp = 0; with_csp <= 1; with_csp++) {
        char path[1200], url[1300], net[1200], html[1024], first[512];
        snprintf(
            html, sizeof html,
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\">%s<title>control</title></head>"
            "<body><p>control</p><img alt=\"\" "
            "src=\"http://127.0.0.1:9/control.png\"></body></html>\n",
            with_csp ? csp : "");
        snprintf(path, sizeof path, "%s/control%d.html", g_abs, with_csp);
        snprintf(net, sizeof net, "%s/control%d.netlog.json", g_abs, with_csp);
        write_text(path, html);
        snprintf(url, sizeof url, "file://%s", path);
        char dom[1200];
        snprintf(dom, sizeof dom, "%s/control%d.dom", g_abs, with_csp);
        int ran = chromium(url, 800, 600, dom, NULL, net);
        unlink(dom);
        int req = ran ? page_requests(net, first, sizeof first) : -1;
        if (with_csp)
            result(req == 0,
                   "control page with the CSP: its request is blocked (%d seen in the network log)",
                   req);
        else
            result(req > 0,
                   "control page without a CSP: the network log shows its request (%d seen%s%s)",
                   req, req > 0 ? ": " : "", req > 0 ? first : "");
        unlink(net);
    }
}

// ---------------------------------------------------------------------------------------------
// the page of ./sample --explain

// The text of the cells of row `key` within the step section that starts at sec (up to the next
// section), as numbers; returns how many were read.
static int row_cells(const char *sec, const char *key, double *v, int max) {
    char want[128];
    snprintf(want, sizeof want, "data-key=\"%s\"", key);
    const char *end = strstr(sec + 1, "<section"), *r = strstr(sec, want);
    if (!r || (end && r > end)) return 0;
    const char *row_end = strstr(r, "</tr>");
    int n = 0;
    for (const char *c = strstr(r, "<td"); c && c < row_end && n < max; c = strstr(c + 1, "<td")) {
        const char *gt = strchr(c, '>');
        if (!gt) break;
        v[n++] = strtod(gt + 1, NULL);
    }
    return n;
}

// A script added to a copy of the explain page: after layout, the window's width, whether the
// page is wider, and how many of the legend's entries reach outside the window.
static const char *const EXPLAIN_MEASURE_SCRIPT =
    "<script>window.addEventListener('load',function(){var "
    "d=document.documentElement,W=d.clientWidth,out=0;"
    "[].forEach.call(document.querySelectorAll('.legend>span'),function(s){var "
    "r=s.getBoundingClientRect();"
    "if(r.right>W+1||r.left<-1||r.width<1)out++;});parent.postMessage('width='+W+' overflow='+"
    "(d.scrollWidth>W+1?1:0)+' legend_out='+out,'*');});</script>\n";

// The explain page's evidence and layout: every step carries the caveat, no step's title says
// "predicts" (the target is the next character, the model's guess is named apart), the legend
// words the mark "leave-one-out disagrees", the agreement table and its takeaway are there; at
// 390x844 and 1280x800 (the last step shown) nothing is wider than the window and every legend
// entry lies inside it.
static void check_explain_layout(const char *page, int n) {
    char *html = slurp(page);
    const char *tail = html ? strstr(html, "</body>") : NULL;
    char why[512] = "";
    if (!tail)
        snprintf(why, sizeof why, "cannot read %.300s", page);
    else if (count_str(html, "<p class=\"caveat\">") != n)
        snprintf(why, sizeof why, "%d steps carry the caveat, of %d",
                 count_str(html, "<p class=\"caveat\">"), n);
    else if (strstr(html, "predicts &#39;"))
        snprintf(why, sizeof why, "a title says \"predicts '\"");
    else if (count_str(html, "; next character &#39;") != 2 * n ||
             count_str(html, "the model&#39;s top guess") < n)
        snprintf(why, sizeof why, "%d titles name the next character, of %d",
                 count_str(html, "; next character &#39;") / 2, n);
    else if (!strstr(html, "leave-one-out disagrees"))
        snprintf(why, sizeof why, "the legend has no \"leave-one-out disagrees\"");
    else if (!strstr(html, "id=\"agreement\"") || !strstr(html, "<tr data-measure=\"uniform\"") ||
             !strstr(html, "class=\"takeaway\""))
        snprintf(why, sizeof why, "no agreement table with the uniform baseline and a takeaway");
    result(!why[0],
           "explain: every step has the caveat and a title naming the next character and the "
           "model's top "
           "guess; the legend says \"leave-one-out disagrees\"; the agreement table and its "
           "takeaway%s%s",
           why[0] ? ": " : "", why);
    if (!tail) {
        free(html);
        return;
    }
    char copy_path[1300], frame[1300];
    snprintf(copy_path, sizeof copy_path, "%s/explain_measure.html", g_abs);
    write_with_script(copy_path, html, tail, EXPLAIN_MEASURE_SCRIPT);
    free(html);
    static const struct { int w, h; } views[2] = {{1280, 800}, {390, 844}};
    for (int k = 0; k < 2; k++) {
        int w = views[k].w, h = views[k].h;
        char inner[64], url[1400], dom[1300];
        snprintf(inner, sizeof inner, "explain_measure.html#step=%d", n);
        snprintf(frame, sizeof frame, "%s/explain_frame.html", g_abs);
        write_frame(frame, inner, w, h);
        snprintf(url, sizeof url, "file://%s", frame);
        snprintf(dom, sizeof dom, "%s/explain_measure_%dx%d.dom", g_abs, w, h);
        int ok = chromium(url, w < 500 ? 500 : w, h, dom, NULL, NULL);
        char *out = ok ? slurp(dom) : NULL;
        const char *got = out ? strstr(out, "<pre id=\"measure\">") : NULL;
        int width = -1, over = -1, legend_out = -1;
        ok = got &&
             sscanf(got, "<pre id=\"measure\">width=%d overflow=%d legend_out=%d", &width, &over,
                    &legend_out) == 3 &&
             width <= w && width >= w - 20 && over == 0 && legend_out == 0;
        result(ok,
               "explain: in a frame of %dx%d at the last step the page is no wider than it and the "
               "legend lies "
               "whole inside it (%d px inside the scroll bar, %d entries outside)%s%.80s",
               w, h, width, legend_out, ok ? "" : ": ",
               ok    ? ""
               : got ? got
                     : "no measurement (did the script run?)");
        free(out);
        if (ok) unlink(dom);
    }
}

// ./sample CKPT --explain --prompt P --html: opened at #step=N (1280x800, and the last step at
// 390x844), exactly step N is shown, its attention and effect rows hold the --json numbers with
// the page's 4 decimals, one cell of each row is boxed, no request left the file.
static void check_explain(void) {
    char cfg[1200], dir[1200], page[1300], jpath[1300];
    snprintf(cfg, sizeof cfg, "%s/explain_cfg.json", g_abs);
    snprintf(dir, sizeof dir, "%s/explain_run", g_abs);
    write_text(cfg, "{\"name\": \"browser\",\n \"model\": {\"n_layer\": 2, \"n_head\": 2, "
                    "\"n_embd\": 16, \"block_size\": 16},\n"
                    " \"data\": {\"path\": \"data/default.txt\", \"val_fraction\": 0.05},\n"
                    " \"train\": {\"batch_size\": 4, \"max_steps\": 20, \"warmup_steps\": 2, "
                    "\"ckpt_interval\": 0, \"seed\": 7},\n"
                    " \"log\": {\"log_interval\": 10, \"eval_interval\": 10, \"eval_steps\": 2},\n "
                    "\"sample\": {\"tokens\": 0}}\n");
    snprintf(page, sizeof page, "%s/explain.html", g_abs);
    snprintf(jpath, sizeof jpath, "%s/explain.json", g_abs);
    const char *prompt = "kv: a=1 b=2 ; a";
    int rc = sh(
        "./train '%s' --train.out_dir='%s' --train.overwrite=true > '%s/explain_train.txt' 2>&1 && "
        "./sample '%s/checkpoint.bin' --explain --prompt '%s' --html '%s' --json > '%s' "
        "2>/dev/null",
        cfg, dir, g_abs, dir, prompt, page, jpath);
    char *jtext = slurp(jpath);
    cJSON *json = rc == 0 && jtext ? cJSON_Parse(jtext) : NULL;
    free(jtext);
    result(json != NULL,
           "explain: ./sample --explain --prompt '%s' --html --json wrote the page and its numbers",
           prompt);
    if (!json) return;
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(json, "positions");
    int n = cJSON_GetArraySize(pos),
        L = cJSON_GetObjectItemCaseSensitive(json, "n_layer")->valueint;
    int steps[3] = {1, n / 2, n};
    for (int k = 0; k < 4; k++) {
        int N = steps[k < 3 ? k : 2], w = k < 3 ? 1280 : 390, h = k < 3 ? 800 : 844;
        char url[1400], dom[1300], png[1300], net[1300], why[600] = "", first[512];
        snprintf(url, sizeof url, "file://%s#step=%d", page, N);
        snprintf(dom, sizeof dom, "%s/explain_%d_%dx%d.dom", g_abs, N, w, h);
        snprintf(png, sizeof png, "%s/explain_%d_%dx%d.png", g_abs, N, w, h);
        snprintf(net, sizeof net, "%s/explain.netlog.json", g_abs);
        int ok = chromium(url, w, h, dom, png, net), pw = 0, ph = 0;
        char *out = ok ? slurp(dom) : NULL;
        int req = out ? page_requests(net, first, sizeof first) : -1;
        if (!out)
            snprintf(why, sizeof why, "chromium failed (see %.300s/chromium.log)", g_out);
        else if (req != 0)
            snprintf(why, sizeof why,
                     req < 0 ? "cannot read the network log"
                             : "%d request(s) left the "
                               "file, first %.400s",
                     req, first);
        int shown = 0;
        for (int s = 1; out && !why[0] && s <= n; s++) {
            char id[64];
            snprintf(id, sizeof id, "id=\"step-%d\"", s);
            const char *sec = strstr(out, id);
            const char *tag_end = sec ? strchr(sec, '>') : NULL;
            if (!sec || !tag_end) {
                snprintf(why, sizeof why, "step %d is missing", s);
                break;
            }
            char tag[512];
            snprintf(tag, sizeof tag, "%.*s", (int)(tag_end - sec < 500 ? tag_end - sec : 500),
                     sec);
            int hidden = strstr(tag, "hidden") != NULL;
            if (hidden == (s == N)) {
                snprintf(why, sizeof why, "step %d is %s", s, hidden ? "hidden" : "shown");
                break;
            }
            shown += !hidden;
            if (s != N) continue;
            // the numbers of step N: positions[N-1]
            const cJSON *p = cJSON_GetArrayItem(pos, N - 1);
            const cJSON *att = cJSON_GetObjectItemCaseSensitive(p, "attention"),
                        *eff = cJSON_GetObjectItemCaseSensitive(p, "effects");
            struct {
                const char *key;
                const cJSON *row;
            } rows[8];
            int nr = 0;
            char keys[8][48];
            for (int l = 0; l < L && nr < 8; l++, nr++) {
                snprintf(keys[nr], sizeof keys[nr], "attention.mean[%d]", l);
                rows[nr].key = keys[nr];
                rows[nr].row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(att, "mean"), l);
            }
            rows[nr].key = "attention.rollout",
            rows[nr++].row = cJSON_GetObjectItemCaseSensitive(att, "rollout");
            rows[nr].key = "effects.loo",
            rows[nr++].row = cJSON_GetObjectItemCaseSensitive(eff, "loo");
            rows[nr].key = "effects.grad_x_input",
            rows[nr++].row = cJSON_GetObjectItemCaseSensitive(eff, "grad_x_input");
            for (int r = 0; r < nr && !why[0]; r++) {
                double v[64];
                int got = row_cells(sec, rows[r].key, v, 64),
                    want = cJSON_GetArraySize(rows[r].row);
                if (got != want || want != N) {
                    snprintf(why, sizeof why, "step %d row %s: %d cells, expected %d", N,
                             rows[r].key, got, want);
                    break;
                }
                for (int j = 0; j < want; j++) {
                    char a[32], b[32];
                    snprintf(a, sizeof a, "%.4f", v[j]);
                    snprintf(b, sizeof b, "%.4f", cJSON_GetArrayItem(rows[r].row, j)->valuedouble);
                    if (strcmp(a, b) && !(strcmp(a, "0.0000") == 0 && strcmp(b, "-0.0000") == 0) &&
                        !(strcmp(b, "0.0000") == 0 && strcmp(a, "-0.0000") == 0)) {
                        snprintf(why, sizeof why,
                                 "step %d row %s cell %d: the page shows %s, the JSON %s", N,
                                 rows[r].key, j, a, b);
                        break;
                    }
                }
            }
        }
        if (out && !why[0] && shown != 1) snprintf(why, sizeof why, "%d steps shown", shown);
        if (out && !why[0] && !(png_size(png, &pw, &ph) && pw == w && ph == h))
            snprintf(why, sizeof why, "no %dx%d screenshot (got %dx%d)", w, h, pw, ph);
        ok = out && !why[0];
        result(ok,
               "explain: the page at #step=%d, %dx%d: only that position shown, its attention and "
               "effect rows equal "
               "to --json's, no request left the file%s%s",
               N, w, h, ok ? "" : ": ", why);
        free(out);
        if (ok) unlink(dom);
        unlink(net);
    }
    check_explain_layout(page, n);
    cJSON_Delete(json);
}

// ---------------------------------------------------------------------------------------------
// the attention playground (docs/playground.html): the model trained in the page

// Steps the playground must make (past 50, where the first validation loss is computed); the
// tiny preset makes them in about two seconds.
#define PG_STEPS     60
#define PG_STR(x)    #x
#define PG_XSTR(x)   PG_STR(x)
#define PG_STEPS_STR PG_XSTR(PG_STEPS)

// A copy of the page with a script after its own that uses the page's controls: once the worker
// has built the default preset, Step (its loss of step 1 is written down); then it picks the tiny
// preset and presses Reset; once that is built, Step (the loss of step 1 is the first loss), then
// Train (with a sample every 50 steps) until the status says PG_STEPS steps, then Pause. Then the
// views: what the two heatmaps record (characters, the largest |row sum - 1|, the largest weight
// above the diagonal), the validation curve's points, the sample's step and how many of its
// characters the text does not have; a probe prompt with two characters outside the vocabulary
// (the message must name both, the maps stay as they were); the key s (one more step); lr changed
// (the note next to the buttons). It sends the page that frames it what the DOM shows then: the
// step, both variants' losses, the stats table's per-head means (entropy and max weight, scaled
// and unscaled), the views' figures, the window's width and the document's scroll width, the
// error line and how many errors the page or its worker raised. On an error, or after 60 s of
// waiting, it sends what it has.
static const char *const PG_SCRIPT =
    "<script>(function(){var $=function(i){return "
    "document.getElementById(i);},phase=0,n=0,before='',"
    "first='-',first1='-',dflt='-',errs=0,snap='',saved=-1,bytes=null,clicks=0,loaded=-1,views='',"
    "mapped='',at=0,wait=0;"
    "window.addEventListener('error',function(){errs++;});worker.addEventListener('error',function("
    "){errs++;});"
    "worker.addEventListener('message',function(e){if(e.data.type=='saved'){saved=e.data.step;"
    "bytes=e.data.bytes.slice();}});"
    "function step(){var m=/^step (\\d+)/.exec($('status').textContent);return m?+m[1]:-1;}"
    "function built(){return "
    "/parameters/.test($('status').textContent)&&$('status').textContent!=before;}"
    "function col(c){var "
    "r=[].slice.call($('stats').rows,1),s=0;r.forEach(function(x){s+=parseFloat(x.cells[c]."
    "textContent);});"
    "return r.length?s/r.length:NaN;}"
    "function map(v){var d=$('map'+v).dataset;return ' mapt'+v+'='+d.t+' maperr'+v+'='+d.rowErr+' "
    "above'+v+'='+d.above;}"
    "function bad(t){var voc=new Set(text());return Array.from(t).filter(function(c){return "
    "!voc.has(c);}).length;}"
    "function look(){mapped=map(0)+map(1);views=mapped+' valpts='+$('curve').dataset.valPoints+' "
    "samplelen='+"
    "Array.from($('sample0').textContent).length+' "
    "samplebad='+bad($('sample0').textContent+$('sample1').textContent)+"
    "' samplestep='+$('sample0').dataset.step;}"
    "function measure(){var d=document.documentElement;return 'steps='+step()+' default='+dflt+' "
    "first='+first+"
    "' first1='+first1+' last='+$('loss').textContent+' last1='+$('loss1').textContent+' "
    "heads='+Math.max($('stats').rows.length-1,0)+"
    "' ent0='+col(1)+' maxw0='+col(2)+' ent1='+col(5)+' maxw1='+col(6)+' width='+d.clientWidth+' "
    "scroll='+d.scrollWidth+"
    "' compare='+($('compare').checked?1:0);}"
    "function done(){clearInterval(iv);parent.postMessage((snap||measure())+views+' "
    "saved='+saved+' bytes='+(bytes?bytes.length:0)+"
    "' clicks='+clicks+' blob='+(/^blob:/.test($('savelink').href)?1:0)+' loaded='+loaded+' "
    "after='+step()+"
    "' errors='+errs+' msg='+$('msg').textContent,'*');}"
    "var iv=setInterval(function(){n++;"
    "if(phase==0&&built()){phase=5;before=$('status').textContent;$('step').click();}"
    "else "
    "if(phase==5&&step()==1){phase=1;dflt=$('loss').textContent;$('preset').value='tiny';$('preset'"
    ").dispatchEvent(new Event('change'));$('reset').click();}"
    "else if(phase==1&&built()){phase=2;$('step').click();}"
    "else "
    "if(phase==2&&step()==1){phase=3;first=$('loss').textContent;first1=$('loss1').textContent;"
    "$('every').value='50';$('every').dispatchEvent(new Event('change'));$('train').click();}"
    "else if(phase==3&&step()>=" PG_STEPS_STR "){phase=4;$('pause').click();}"
    "else if(phase==4&&!/\\(paused\\)/.test($('status').textContent)){}"
    // paused: the views (the probe map, a prompt outside the vocabulary, the key s, a setting
    // changed), then Download (the link's click counted, not followed) and the saved bytes loaded
    // back through the file input, then one Step
    "else if(phase==4&&++wait>=5){phase=6;snap=measure();look();$('probe').value='do\\u2603 "
    "the\\u20ac dog';$('probe').dispatchEvent(new Event('input'));}"
    "else if(phase==6&&$('probemsg').textContent){phase=7;var m=$('probemsg').textContent;"
    "views+=' oov='+(m.indexOf('\\u2603')>=0&&m.indexOf('U+20AC')>=0?1:0)+' "
    "kept='+(map(0)+map(1)==mapped?1:0);"
    "at=step();wait=0;document.body.dispatchEvent(new "
    "KeyboardEvent('keydown',{key:'s',bubbles:true}));}"
    "else if(phase==7&&(step()==at+1||++wait>=30)){views+=' keystep='+(step()-at)+' "
    "keptafter='+(map(0)+map(1)==mapped?1:0);"
    "$('lr').value='0.002';$('lr').dispatchEvent(new Event('change'));"
    "wait=0;phase=8;}"
    "else if(phase==8&&(/applied from step/.test($('changed').textContent)||++wait>=30)){phase=9;"
    "views+=' note='+(/^lr 0\\.002, z_loss 0: applied from step "
    "\\d+$/.test($('changed').textContent)?1:0)+' pausedat='+at;"
    "$('savelink').click=function(){clicks++;};$('save').click();}"
    "else if(phase==9&&bytes&&clicks){phase=10;var t=new DataTransfer();t.items.add(new "
    "File([bytes],'checkpoint.bin'));"
    "$('ckpt').files=t.files;$('ckpt').dispatchEvent(new Event('change'));}"
    "else "
    "if(phase==10&&/checkpoint\\.bin:/"
    ".test($('status').textContent)){phase=11;loaded=step();$('step').click();}"
    "else "
    "if((phase==11&&step()==loaded+1)||n>=600||errs||$('msg').textContent)done();},100);})();</"
    "script>\n";

// The page that frames the copy at exactly w x h (headless Chromium lays a window out at least
// 500 wide) and writes what it sent into <pre id="measure">, then logs "playground-done" to the
// console. Chromium takes --dump-dom and --screenshot at the load event; a second, hidden frame
// reads the FIFO `hold` and so holds the load event back until it is written to.
static void write_pg_frame(const char *path, const char *inner, const char *hold, int w, int h) {
    char text[2600];
    snprintf(text, sizeof text,
             "<!DOCTYPE html><html style=\"overflow:hidden\"><head><meta charset=\"utf-8\">"
             "<title>frame</title></head><body style=\"margin:0\"><iframe src=\"%s\" "
             "style=\"border:0;width:%dpx;"
             "height:%dpx\"></iframe><iframe src=\"%s\" style=\"display:none\"></iframe>"
             "<script>window.addEventListener('message',function(e){var "
             "p=document.createElement('pre');p.id='measure';"
             "p.textContent=e.data;document.body.appendChild(p);console.log('playground-done');});<"
             "/script></body></html>\n",
             inner, w, h, hold);
    write_text(path, text);
}

// chromium() on a frame from write_pg_frame: a child process watches Chromium's stderr (the
// console, --enable-logging=stderr) for "playground-done" and then writes to the FIFO, so the DOM
// and the screenshot are taken once the page has reported; 15 s before chromium()'s limit it writes
// anyway.
static int chromium_held(const char *url, const char *fifo, int w, int h, const char *dom,
                         const char *png, const char *netlog) {
    char log[1100];
    snprintf(log, sizeof log, "%s/chromium.log", g_abs);
    unlink(log);
    unlink(fifo);
    if (mkfifo(fifo, 0600) != 0) return 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        const struct timespec tenth = {0, 100000000};
        for (int i = 0; i < (g_wait_s - 15) * 10; i++) {
            char *t = slurp(log);
            int seen = t && strstr(t, "\"playground-done\"") != NULL;
            free(t);
            if (seen) break;
            nanosleep(&tenth, NULL);
        }
        // O_NONBLOCK: the open fails (ENXIO) until Chromium has the FIFO open for reading
        for (int i = 0; i < 100; i++) {
            int fd = open(fifo, O_WRONLY | O_NONBLOCK);
            if (fd >= 0) {
                if (write(fd, "\n", 1) < 0) { /* the reader is gone: nothing to release */
                }
                close(fd);
                break;
            }
            nanosleep(&tenth, NULL);
        }
        _exit(0);
    }
    g_flags = "--enable-logging=stderr";
    int ok = chromium(url, w, h, dom, png, netlog);
    g_flags = "";
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    unlink(fifo);
    return ok;
}

// The number after "key=" in the report s; NaN when there is none.
static double pg_field(const char *s, const char *key) {
    char want[64];
    snprintf(want, sizeof want, " %s=", key);
    const char *p = strstr(s, want);
    if (!p && strncmp(s, want + 1, strlen(want + 1)) == 0) p = s - 1;
    if (!p) return NAN;
    char *end;
    double v = strtod(p + strlen(want), &end);
    return end == p + strlen(want) ? NAN : v;
}

// The views in the report of PG_SCRIPT: both heatmaps of the 32-character probe prompt drawn,
// each row summing to 1 within 1e-5, nothing above the diagonal (the causal mask); the validation
// curve has points; the sample (120 characters) is of step 50 or later and has only the text's
// characters; the prompt with characters outside the vocabulary named both and kept the maps (also
// through the step after it); the key s made a step; lr changed after the build is noted.
static void check_pg_views(const char *rep, int w, int h, double steps) {
    double t0 = pg_field(rep, "mapt0"), t1 = pg_field(rep, "mapt1"), e0 = pg_field(rep, "maperr0"),
           e1 = pg_field(rep, "maperr1");
    double a0 = pg_field(rep, "above0"), a1 = pg_field(rep, "above1"),
           val = pg_field(rep, "valpts");
    double slen = pg_field(rep, "samplelen"), sbad = pg_field(rep, "samplebad"),
           sstep = pg_field(rep, "samplestep");
    double oov = pg_field(rep, "oov"), kept = pg_field(rep, "kept"),
           kept2 = pg_field(rep, "keptafter");
    result(t0 == 32 && t1 == 32 && e0 <= 1e-5 && e1 <= 1e-5 && a0 == 0 && a1 == 0,
           "playground at %dx%d: the probe prompt's "
           "heatmaps (scaled, unscaled) of %.0f and %.0f characters (32), rows summing to 1 within "
           "%.3g and %.3g (1e-5), "
           "largest weight above the diagonal %g and %g (causal: 0)",
           w, h, t0, t1, e0, e1, a0, a1);
    result(val >= 1,
           "playground at %dx%d: the validation curve has %.0f point(s) after %.0f steps (one "
           "every 50)",
           w, h, val, steps);
    result(slen == 120 && sbad == 0 && sstep >= 50,
           "playground at %dx%d: a sample every 50 steps: the one of step %.0f has "
           "%.0f characters (120), %.0f of them outside the text's vocabulary (0)",
           w, h, sstep, slen, sbad);
    result(
        oov == 1 && kept == 1 && kept2 == 1,
        "playground at %dx%d: a probe prompt with U+2603 and U+20AC: the message "
        "names both (%.0f), the maps stay the previous ones (%.0f, and after the next step %.0f)",
        w, h, oov, kept, kept2);
    result(pg_field(rep, "keystep") == 1, "playground at %dx%d: the key s made %.0f step(s) (1)", w,
           h, pg_field(rep, "keystep"));
    result(pg_field(rep, "note") == 1,
           "playground at %dx%d: lr changed while built applies at the next step: \"lr 0.002, "
           "z_loss 0: applied from step N\" next to the buttons",
           w, h);
}

// docs/playground.html, the committed page, at 1280x800 and in a 390x844 frame: the worker
// starts and instantiates the module, the page builds the default preset and makes one step of
// it, then builds the tiny one (chosen and Reset with the page's own controls: the default
// preset trains too slowly for PG_STEPS steps in the test's time); Step makes step 1, Train goes on
// to PG_STEPS steps; no error is shown or raised. Both variants' losses fall by more than 5% from
// step 1 to the last step shown; the unscaled variant's attention is the more peaked (a higher
// mean max weight and a lower mean entropy over the heads); the document is no wider than its
// window; the screenshot has the window's size; no request left the file. Then Download offers a
// checkpoint as a blob: link, and the checkpoint loaded back (the file input) resumes at its step.
static void check_playground(void) {
    const char *page = "docs/playground.html";
    char *html = slurp(page);
    const char *tail = html ? strstr(html, "</body>") : NULL;
    result(tail && strstr(html, "Content-Security-Policy\" content=\"default-src 'none'"),
           "playground: %s is there with a CSP of default-src 'none'", page);
    if (!tail) {
        free(html);
        return;
    }
    char copy_path[1200], fifo[1200];
    snprintf(copy_path, sizeof copy_path, "%s/playground_run.html", g_abs);
    snprintf(fifo, sizeof fifo, "%s/playground_hold", g_abs);
    write_with_script(copy_path, html, tail, PG_SCRIPT);
    free(html);
    static const struct { int w, h; } views[2] = {{1280, 800}, {390, 844}};
    for (int k = 0; k < 2; k++) {
        int w = views[k].w, h = views[k].h;
        char frame[1300], url[1400], dom[1300], png[1300], net[1300], first[512], why[600] = "";
        snprintf(frame, sizeof frame, "%s/playground_frame.html", g_abs);
        write_pg_frame(frame, "playground_run.html", "playground_hold", w, h);
        snprintf(url, sizeof url, "file://%s", frame);
        snprintf(dom, sizeof dom, "%s/playground_%dx%d.dom", g_abs, w, h);
        snprintf(png, sizeof png, "%s/playground_%dx%d.png", g_abs, w, h);
        snprintf(net, sizeof net, "%s/playground.netlog.json", g_abs);
        unlink(png);
        int ran = chromium_held(url, fifo, w, h, dom, png, net), pw = 0, ph = 0;
        char *out = ran ? slurp(dom) : NULL;
        const char *got = out ? strstr(out, "<pre id=\"measure\">") : NULL;
        char rep[2048] = "";
        if (got) {
            got += strlen("<pre id=\"measure\">");
            snprintf(rep, sizeof rep, "%.*s", (int)strcspn(got, "<"), got);
        }
        double steps = pg_field(rep, "steps"), f0 = pg_field(rep, "first"),
               f1 = pg_field(rep, "first1");
        double l0 = pg_field(rep, "last"), l1 = pg_field(rep, "last1"),
               heads = pg_field(rep, "heads");
        double e0 = pg_field(rep, "ent0"), e1 = pg_field(rep, "ent1"), m0 = pg_field(rep, "maxw0"),
               m1 = pg_field(rep, "maxw1");
        double dflt = pg_field(rep, "default"), width = pg_field(rep, "width"),
               scroll = pg_field(rep, "scroll"), errs = pg_field(rep, "errors");
        const char *msg = strstr(rep, " msg=");
        int req = ran ? page_requests(net, first, sizeof first) : -1;
        if (!ran)
            snprintf(why, sizeof why, "chromium failed (see %.300s/chromium.log)", g_out);
        else if (!rep[0])
            snprintf(why, sizeof why, "no report in the DOM (did the scripts run?)");
        else if (!msg || msg[5] || errs != 0)
            snprintf(why, sizeof why, "an error: %.400s", rep);
        else if (!(dflt > 0 && isfinite(dflt)))
            snprintf(why, sizeof why, "no finite loss of the default preset's step 1: %.400s", rep);
        else if (!(steps >= PG_STEPS) || pg_field(rep, "compare") != 1 || !(heads > 0))
            snprintf(why, sizeof why, "not %d steps in compare mode with a stats table: %.400s",
                     PG_STEPS, rep);
        else if (req != 0)
            snprintf(why, sizeof why,
                     req < 0 ? "cannot read the network log"
                             : "%d request(s) left the "
                               "file, first %.400s",
                     req, first);
        else if (!(png_size(png, &pw, &ph) && pw == w && ph == h))
            snprintf(why, sizeof why, "no %dx%d screenshot (got %dx%d)", w, h, pw, ph);
        result(!why[0],
               "playground at %dx%d: the worker built the default preset and made a step (loss "
               "%.4f), then the "
               "tiny one: Step and Train made %.0f steps (at least %d) in compare mode, no error, "
               "no request left the file%s%s",
               w, h, dflt, steps, PG_STEPS, why[0] ? ": " : "", why);
        if (!why[0]) {
            result(l0 < 0.95 * f0 && l1 < 0.95 * f1,
                   "playground at %dx%d: the loss fell by more than 5%% from step 1 to "
                   "step %.0f: scaled %.4f -> %.4f, unscaled %.4f -> %.4f",
                   w, h, steps, f0, l0, f1, l1);
            result(m1 > m0 && e1 < e0,
                   "playground at %dx%d: after %.0f steps the unscaled variant's attention is the "
                   "more "
                   "peaked: mean max weight %.4f > %.4f (scaled), mean entropy %.4f < %.4f, over "
                   "%.0f heads",
                   w, h, steps, m1, m0, e1, e0, heads);
            result(scroll <= width && width <= w,
                   "playground at %dx%d: no horizontal scroll (scroll width %.0f, window "
                   "%.0f px inside the scroll bar)",
                   w, h, scroll, width);
            check_pg_views(rep, w, h, steps);
            double saved = pg_field(rep, "saved"), bytes = pg_field(rep, "bytes"),
                   loaded = pg_field(rep, "loaded");
            double after = pg_field(rep, "after");
            double paused_at = pg_field(rep, "pausedat");
            result(paused_at >= PG_STEPS && saved == paused_at + 1,
                   "playground at %dx%d: Pause stopped both variants at "
                   "step %.0f, shown as paused; nothing trained after it: the key s made step "
                   "%.0f, the checkpoint "
                   "downloaded after it is of step %.0f",
                   w, h, paused_at, paused_at + 1, saved);
            result(saved >= PG_STEPS && bytes > 1000 && pg_field(rep, "clicks") == 1 &&
                       pg_field(rep, "blob") == 1 && loaded == saved && after == saved + 1,
                   "playground at %dx%d: Download offered the checkpoint of step %.0f (%.0f bytes) "
                   "as a blob: link and "
                   "followed it once; loaded back through the file input it resumed at step %.0f, "
                   "and Step made step "
                   "%.0f",
                   w, h, saved, bytes, loaded, after);
        }
        free(out);
        if (!why[0]) unlink(dom);
        unlink(net);
    }
}

// docs/playground.html with `script` after its own, as NAME.html framed at w x h by
// NAME_frame.html, run until it reports (chromium_held; netlog and png NULL for none). Returns the
// report the script sent (the frame's <pre id="measure">, malloc'd), or NULL with the reason in
// why.
static char *pg_run_at(const char *name, const char *script, int w, int h, const char *png,
                       const char *netlog, char *why, size_t whylen) {
    char *html = slurp("docs/playground.html");
    const char *tail = html ? strstr(html, "</body>") : NULL;
    if (!tail) {
        free(html);
        snprintf(why, whylen, "cannot read docs/playground.html");
        return NULL;
    }
    char copy_path[1400], copy_name[200], fifo[1200], frame[1300], url[1400], dom[1300];
    snprintf(copy_name, sizeof copy_name, "%s.html", name);
    snprintf(copy_path, sizeof copy_path, "%s/%s", g_abs, copy_name);
    snprintf(fifo, sizeof fifo, "%s/playground_hold", g_abs);
    write_with_script(copy_path, html, tail, script);
    free(html);
    snprintf(frame, sizeof frame, "%s/%s_frame.html", g_abs, name);
    write_pg_frame(frame, copy_name, "playground_hold", w, h);
    snprintf(url, sizeof url, "file://%s", frame);
    snprintf(dom, sizeof dom, "%s/%s.dom", g_abs, name);
    if (!chromium_held(url, fifo, w, h, dom, png, netlog)) {
        snprintf(why, whylen, "chromium failed (see %.300s/chromium.log)", g_out);
        return NULL;
    }
    char *out = slurp(dom);
    char *rep = out ? strstr(out, "<pre id=\"measure\">") : NULL;
    if (!rep) {
        free(out);
        snprintf(why, whylen, "no report in the DOM (did the scripts run?)");
        return NULL;
    }
    rep += strlen("<pre id=\"measure\">");
    rep[strcspn(rep, "<")] = 0;
    memmove(out, rep, strlen(rep) + 1);
    return out;
}
static char *pg_run(const char *name, const char *script, const char *netlog, char *why,
                    size_t whylen) {
    return pg_run_at(name, script, 1280, 800, NULL, netlog, why, whylen);
}

// Bad input: a clear message in the page, the previous state kept. A copy of the page
// with a script after its own: once the worker has built the default preset, the tiny one
// (Reset), Step (step 1); then, each after the message line was cleared: pasted text of 20
// characters (shorter than the block) and Reset, then Step; a file that is not UTF-8; a UTF-8
// file with a NUL byte; a file of 4 MiB + 1 bytes; the default corpus again with a config of 8
// layers 512 wide, block 256 (too big for the page's memory) and Reset, then Step; a config with an
// unknown key and Reset. For each it writes a flag: the message line's text matched what it must
// say (and, after a refused Reset, the note that the previous model is kept), and the step after it
// is the previous model's next step. It sends the page that frames it the flags, the errors
// raised and the step shown; after 60 s of waiting, what it has.
static const char *const PG_BAD_SCRIPT =
    "<script>(function(){var $=function(i){return "
    "document.getElementById(i);},phase=0,n=0,errs=0,r='',before='',wait=0,saved=null,at=0;"
    "window.addEventListener('error',function(){errs++;});worker.addEventListener('error',function("
    "){errs++;});"
    "worker.addEventListener('message',function(e){if(e.data.type=='saved')saved=e.data.bytes."
    "slice();});"
    "function step(){var m=/^step (\\d+)/.exec($('status').textContent);return m?+m[1]:-1;}"
    "function built(){return "
    "/parameters/.test($('status').textContent)&&$('status').textContent!=before;}"
    "function msg(){return $('msg').textContent;}"
    "function flag(k,re){r+=' '+k+'='+(re.test(msg())?1:0);}"
    "function file(name,bytes){$('msg').textContent='';var t=new DataTransfer();t.items.add(new "
    "File([bytes],name));"
    "$('file').files=t.files;$('file').dispatchEvent(new Event('change'));}"
    "function "
    "src(v){document.querySelectorAll('input[name=src]').forEach(function(x){x.checked=x.value==v;}"
    ");}"
    "function cfg(o){$('config').value=JSON.stringify(o);$('config').dispatchEvent(new "
    "Event('input'));}"
    "function done(){clearInterval(iv);parent.postMessage('flags'+r+' after='+step()+' "
    "errors='+errs+' n='+n,'*');}"
    "var iv=setInterval(function(){n++;"
    "if(phase==0&&built()){phase=1;before=$('status').textContent;$('preset').value='tiny';"
    "$('preset').dispatchEvent(new Event('change'));$('reset').click();}"
    "else if(phase==1&&built()){phase=2;$('step').click();}"
    "else if(phase==2&&step()==1){phase=3;src('paste');$('paste').value='to be or not to be "
    ".';$('reset').click();}"
    "else if(phase==3&&msg()){phase=4;flag('short',/has 20 characters.*block_size.*previous model "
    "is kept/);"
    "r+=' shortstatus='+(step()==1?1:0);$('step').click();}"
    "else if(phase==4&&step()==2){phase=5;r+=' shortstep=1';file('bin.dat',new "
    "Uint8Array([0xff,0xfe,0x80,0x81,0xc3,0x28]));}"
    "else if(phase==5&&msg()){phase=6;flag('binary',/^bin\\.dat: not UTF-8 text/);"
    "file('nul.txt',new Uint8Array([0x61,0x62,0,0x63]));}"
    "else if(phase==6&&msg()){phase=7;flag('nul',/^nul\\.txt: contains NUL bytes/);"
    "file('big.txt',new Uint8Array((4<<20)+1).fill(0x61));}"
    "else if(phase==7&&msg()){phase=8;flag('big',/^big\\.txt: 4194305 bytes; the limit is 4194304 "
    "bytes/);"
    "r+=' filekept='+($('paste').value=='to be or not to be "
    ".'&&document.querySelector('input[value=paste]').checked?1:0);"
    "$('msg').textContent='';src('default');"
    "cfg({model:{n_layer:8,n_head:8,n_embd:512,block_size:256},train:{batch_size:16}});$('reset')."
    "click();}"
    "else if(phase==8&&msg()){phase=9;flag('huge',/needs (\\d+ MiB|more than 4 GiB) per variant; "
    "the page allows 512 MiB.*previous model is kept/);"
    "$('step').click();}"
    "else if(phase==9&&step()==3){phase=10;r+=' "
    "hugestep=1';cfg({model:{n_layr:2}});$('reset').click();}"
    "else if(phase==10&&msg()){phase=11;flag('key',/n_layr/);$('step').click();}";
// its second half (one literal would pass the 4095 characters C99 guarantees)
static const char *const PG_BAD_SCRIPT2 =
    "else if(phase==11&&step()==4){phase=12;r+=' keystep=1';$('msg').textContent='';src('paste');"
    "$('paste').value='\\u20ac'.repeat(1398102);$('reset').click();}"
    "else if(phase==12&&msg()){phase=13;flag('utf8',/^the text is 4194306 bytes of UTF-8 "
    "\\(1398102 characters\\); the limit is 4194304 bytes/);"
    "$('msg').textContent='';before='';cfg({model:{n_layer:2,n_head:2,n_embd:32,block_size:32},"
    "train:{batch_size:8}});"
    "file('bom.txt',new Uint8Array([0xef,0xbb,0xbf].concat(Array.from(new TextEncoder().encode('ab "
    "'.repeat(200))))));}"
    "else "
    "if(phase==13&&!built()&&(document.querySelector('input[value=file]')||{}).checked&&!before){"
    "before=$('status').textContent;$('reset').click();}"
    "else if(phase==13&&before&&built()){phase=19;r+=' bom='+(/vocabulary "
    "4,/.test($('status').textContent)?1:0);$('step').click();}"
    "else if(phase==19&&step()==1){phase=14;$('savelink').click=function(){};$('save').click();}"
    "else if(phase==14&&saved){phase=15;var t=new DataTransfer();t.items.add(new "
    "File([saved],'page_text.txt'));"
    "$('ckpt').files=t.files;$('ckpt').dispatchEvent(new Event('change'));}"
    "else if(phase==15&&(/page_text\\.txt:/.test($('status').textContent)||msg())){phase=16;"
    "r+=' ckname='+(/^step 1 \\(page_text\\.txt:.*vocabulary "
    "4/.test($('status').textContent)&&!msg()?1:0)+' ckcleared='+($('ckpt').value==''?1:0);"
    "$('train').click();$('pause').click();$('train').click();$('pause').click();wait=0;}"
    "else if(phase==16&&/\\(paused\\)/.test($('status').textContent)){phase=17;at=step();wait=0;}"
    "else if(phase==17&&++wait>=15){phase=18;r+=' rapid='+(step()==at&&at>=1?1:0)+' "
    "rapidat='+at;done();}"
    "else if(n>=900||errs)done();},100);})();</script>\n";

// The bad inputs of PG_BAD_SCRIPT in docs/playground.html at 1280x800: each refused with its
// message, nothing raised, and the model trained before each refused Reset still the one that
// steps (its step count goes on).
static void check_playground_bad(void) {
    char why[400] = "", net[1300];
    snprintf(net, sizeof net, "%s/playground_bad.netlog.json", g_abs);
    char script[9000];
    snprintf(script, sizeof script, "%s%s", PG_BAD_SCRIPT, PG_BAD_SCRIPT2);
    char *out = pg_run("playground_bad", script, net, why, sizeof why);
    const char *rep = out ? out : "";
    double errs = pg_field(rep, "errors");
    result(out && errs == 0,
           "playground bad input: the page ran the script with no error raised (%.0f): %s", errs,
           out ? rep : why);
    result(pg_field(rep, "short") == 1 && pg_field(rep, "shortstatus") == 1 &&
               pg_field(rep, "shortstep") == 1,
           "playground bad input: pasted text of 20 characters (block 32) refused with the native "
           "message and "
           "\"the previous model is kept\"; Step then made step 2 of the previous model");
    result(pg_field(rep, "binary") == 1 && pg_field(rep, "nul") == 1,
           "playground bad input: a file that is not UTF-8 and a file with a NUL byte refused, "
           "each named");
    result(pg_field(rep, "big") == 1 && pg_field(rep, "filekept") == 1,
           "playground bad input: a file of 4 MiB + 1 bytes refused with the limit (4194304 "
           "bytes); the text "
           "chosen before (the pasted one) still chosen");
    result(pg_field(rep, "huge") == 1 && pg_field(rep, "hugestep") == 1,
           "playground bad input: a config of 8 layers 512 wide, block 256, batch 16 refused (the "
           "MiB it needs, the page's 512 MiB), "
           "the previous model kept: Step made step 3");
    result(pg_field(rep, "key") == 1 && pg_field(rep, "keystep") == 1,
           "playground bad input: a config with an unknown key refused naming it, the previous "
           "model kept: Step "
           "made step 4");
    result(
        pg_field(rep, "utf8") == 1,
        "playground bad input: pasted text of 1398102 characters U+20AC (4194306 bytes of "
        "UTF-8, 1398102 UTF-16 units) refused with the limit in bytes and the count of characters");
    result(pg_field(rep, "bom") == 1,
           "playground: a file that starts with a byte-order mark keeps it, as ./train reads the "
           "file: 'ab ' repeated after it is a vocabulary of 4");
    result(pg_field(rep, "ckname") == 1 && pg_field(rep, "ckcleared") == 1,
           "playground: a checkpoint loaded from a file "
           "named page_text.txt resumes (step 1, vocabulary 4) and leaves the page's text as it "
           "was; the file input is "
           "cleared, so choosing the same file again loads it again");
    result(pg_field(rep, "rapid") == 1,
           "playground: Train, Pause, Train, Pause pressed at once: paused at step %.0f and "
           "no step made in the 1.5 s after (no training loop left running)",
           pg_field(rep, "rapidat"));
    free(out);
    unlink(net);
}

// The page's numbers against the native build of the same sources: the default preset trained
// PG_SAME_STEPS steps in the page and by build/webnative/web_native (tools/web_native.c, 4-wide
// vectors, one thread, the same configuration and seed).
#define PG_SAME_STEPS     50
#define PG_SAME_STEPS_STR PG_XSTR(PG_SAME_STEPS)

// A copy of the page with a script after its own: once the worker has built the default preset
// (compare mode on, as the page opens), Train; once the status shows PG_SAME_STEPS steps, Pause;
// then it sends the page that frames it the step shown, whether the preset was the default one in
// compare mode, the errors raised and shown, and every step's loss of the scaled variant as the
// page's DOM holds it (the curve's data-loss). On an error, or after 200 s, it sends what it has.
static const char *const PG_SAME_SCRIPT =
    "<script>(function(){var $=function(i){return "
    "document.getElementById(i);},phase=0,n=0,errs=0,dflt=0;"
    "window.addEventListener('error',function(){errs++;});worker.addEventListener('error',function("
    "){errs++;});"
    "function step(){var m=/^step (\\d+)/.exec($('status').textContent);return m?+m[1]:-1;}"
    "function done(){clearInterval(iv);parent.postMessage('steps='+step()+' default='+dflt+' "
    "errors='+errs+"
    "' losses='+($('curve').dataset.loss||'')+' msg='+$('msg').textContent,'*');}"
    "var iv=setInterval(function(){n++;"
    "if(phase==0&&/parameters/.test($('status').textContent)){phase=1;"
    "dflt=$('preset').value=='lesson'&&$('compare').checked&&$('workers').value=='2'?1:0;$('train')"
    ".click();}"
    "else if(phase==1&&step()>=" PG_SAME_STEPS_STR "){phase=2;$('pause').click();}"
    "else if(phase==2||n>=2000||errs||$('msg').textContent)done();},100);})();</script>\n";

// Reads up to max numbers from s (separated by spaces) into v; returns how many.
static int read_numbers(const char *s, double *v, int max) {
    int k = 0;
    while (k < max) {
        char *end;
        double x = strtod(s, &end);
        if (end == s) break;
        v[k++] = x;
        s = end;
    }
    return k;
}

// docs/playground.html at 1280x800 with PG_SAME_SCRIPT, against ./build/webnative/web_native
// PG_SAME_STEPS: every step's loss equal to 1e-5 relative. (Not bit-identical: the native build
// fuses a*b+c into one rounding, FMA, and WebAssembly's SIMD has no fused multiply-add.)
static void check_playground_native(void) {
    const char *native = "build/webnative/web_native";
    char nat_path[1200], cmd[2600];
    snprintf(nat_path, sizeof nat_path, "%s/web_native.txt", g_abs);
    snprintf(cmd, sizeof cmd, "./%s tests/web_default.json %d > '%s'", native, PG_SAME_STEPS,
             nat_path);
    double want[PG_SAME_STEPS], got[4 * PG_SAME_STEPS];
    int nw = 0;
    char *nat = access(native, X_OK) == 0 && sh("%s", cmd) == 0 ? slurp(nat_path) : NULL;
    for (const char *p = nat; p && *p && nw < PG_SAME_STEPS;) {
        int i;
        double l;
        if (sscanf(p, "%d %lf", &i, &l) != 2 || i != nw + 1) break;
        want[nw++] = l;
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    free(nat);
    if (nw != PG_SAME_STEPS) {
        result(0, "playground against native: %s gave %d of %d losses (build it: make %s)", native,
               nw, PG_SAME_STEPS, native);
        return;
    }
    char why_run[400] = "";
    g_wait_s =
        240;  // the default preset, two variants: 50 steps take tens of seconds on a busy machine
    char *out = pg_run("playground_native", PG_SAME_SCRIPT, NULL, why_run, sizeof why_run);
    g_wait_s = 90;
    const char *rep = out;
    const char *ls = rep ? strstr(rep, " losses=") : NULL, *msg = rep ? strstr(rep, " msg=") : NULL;
    int ng = ls ? read_numbers(ls + strlen(" losses="), got, 4 * PG_SAME_STEPS) : 0, same = 0,
        worst = 0;
    double maxrel = 0;
    for (int i = 0; i < nw && i < ng; i++) {
        double d = fabs(got[i] - want[i]) / fabs(want[i]);
        if (!(d <= maxrel)) maxrel = d, worst = i;  // a NaN is the worst
        char a[64], b[64];
        snprintf(a, sizeof a, "%.9g", got[i]);
        snprintf(b, sizeof b, "%.9g", want[i]);
        same += strcmp(a, b) == 0;
    }
    char why[600] = "";
    if (!rep)
        snprintf(why, sizeof why, "%s", why_run);
    else if (!msg || msg[5] || pg_field(rep, "errors") != 0)
        snprintf(why, sizeof why, "an error: %.400s", rep);
    else if (pg_field(rep, "default") != 1)
        snprintf(why, sizeof why, "the page did not open on the default preset in compare mode");
    else if (ng < nw)
        snprintf(why, sizeof why, "the page's DOM holds %d losses (data-loss), %d expected: %.300s",
                 ng, nw, rep);
    result(!why[0] && maxrel <= 1e-5,
           "playground against native: the default preset's %d steps in the page (Train, "
           "compare mode) and in %s (4-wide, one thread): losses equal to %.3g relative (at most "
           "1e-5; the largest "
           "at step %d: page %.9g, native %.9g), %d of %d equal to 9 digits%s%s",
           nw, native, maxrel, worst + 1, worst < ng ? got[worst] : NAN, want[worst], same, nw,
           why[0] ? ": " : "", why);
    free(out);
}

// ---------------------------------------------------------------------------------------------
// the playground as a newcomer finds it: open, press Train with the defaults

// A script added after the page's own, after `var PLAN = {...};`: once built, it records whether
// the page opened on the lesson preset comparing scaled against unscaled (and in how many
// workers); with PLAN.before it reports at once. Else for each seed of PLAN.seeds (1337 is the
// page's own; another is written into the config text, then Reset) it presses Train (or the key
// t with PLAN.keys), Pause (or t) once the status shows PLAN.steps steps, and once paused reads
// from the DOM the losses of step PLAN.at (the curve's data-loss) and the statistics curves'
// points of that step (entropy, max weight, grad gain, max logit, per variant). With PLAN.growth,
// the logit-growth preset (chosen in the menu, Reset) the same way; with PLAN.lesson, the lesson's
// example in the five steps' views, query 1 then 2, each view's numbers as the page shows them.
static const char *const PG_LESSON_SCRIPT =
    "(function(){var $=function(i){return "
    "document.getElementById(i);},n=0,errs=0,r='',phase='open',k=0,wait=0,before='',one='';"
    "window.addEventListener('error',function(){errs++;});pool.forEach(function(p){p.w."
    "addEventListener('error',function(){errs++;});});"
    "function step(){var m=/^step (\\d+)/.exec($('status').textContent);return m?+m[1]:-1;}"
    "function built(){return "
    "/parameters/.test($('status').textContent)&&$('status').textContent!=before;}"
    "function paused(){return /\\(paused\\)/.test($('status').textContent);}"
    "function at(id,key,s){var d=$(id).dataset,st=(d.steps||'').split(' "
    "'),i=st.indexOf(String(s));return i<0?NaN:+d[key].split(' ')[i];}"
    "function loss(v,s){var a=($('curve').dataset[v?'loss1':'loss']||'').split(' ');return "
    "a.length>=s?+a[s-1]:NaN;}"
    "function key(c){document.body.dispatchEvent(new "
    "KeyboardEvent('keydown',{key:c,bubbles:true}));}"
    "function measure(tag,s){r+=' l0_'+tag+'='+loss(0,s)+' l1_'+tag+'='+loss(1,s);"
    "['c_ent','c_maxw','c_gain','c_logit'].forEach(function(id){r+=' "
    "'+id.slice(2)+'0_'+tag+'='+at(id,'v0',s)+' '+id.slice(2)+'1_'+tag+'='+at(id,'v1',s);});}"
    "function done(){clearInterval(iv);var d=document.documentElement;parent.postMessage(r+' "
    "width='+d.clientWidth+' scroll='+d.scrollWidth+' errors='+errs+' "
    "msg='+$('msg').textContent,'*');}"
    "function snap(s){var "
    "c=$('curve').dataset,t='';['c_ent','c_maxw','c_gain','c_logit'].forEach(function(id){var "
    "d=$(id).dataset,st=d.steps.split(' '),"
    "a=d.v0.split(' '),b=d.v1.split(' ');st.forEach(function(x,i){if(+x<=s)t+=' "
    "'+x+':'+a[i]+':'+b[i];});});"
    "return c.loss.split(' ').slice(0,s).join(' ')+'|'+c.loss1.split(' ').slice(0,s).join(' "
    "')+'|'+t;}"
    "function seed(s){var "
    "o=JSON.parse($('config').value);o.train=o.train||{};o.train.seed=s;$('config').value=JSON."
    "stringify(o);$('config').dispatchEvent(new Event('input'));}"
    "var iv=setInterval(function(){n++;"
    "if(phase=='open'&&built()){r+='preset='+($('preset').value=='lesson'&&$('compare').checked&&$("
    "'pair').value=='model.attn_scale=none'?1:0)+' workers='+$('workers').value;"
    " if(PLAN.before){done();return;}phase='seed';}"
    "else if(phase=='seed'){var "
    "s=PLAN.seeds[k];if(s!=1337){before=$('status').textContent;seed(s);$('reset').click();phase='"
    "build';}else phase='train';}"
    "else if(phase=='build'&&built())phase='train';"
    "else if(phase=='train'){if(PLAN.keys)key('t');else $('train').click();phase='run';}"
    "else if(phase=='run'&&step()>=PLAN.steps){if(PLAN.keys)key('t');else "
    "$('pause').click();phase='pause';}"
    "else if(phase=='pause'&&paused()){measure(PLAN.seeds[k],PLAN.at);k++;r+=' paused_at='+step();"
    " if(k<PLAN.seeds.length)phase='seed';else "
    "if(PLAN.one&&!one){one=snap(PLAN.steps);before=$('status').textContent;$('workers').value='1';"
    "$('workers').dispatchEvent(new Event('change'));$('reset').click();k--;phase='build';}"
    " else{if(one){r+=' "
    "oneworker='+(snap(PLAN.steps)==one?1:0);$('workers').value='2';$('workers').dispatchEvent(new "
    "Event('change'));}"
    " if(PLAN.growth){before=$('status').textContent;$('preset').value='growth';$('preset')."
    "dispatchEvent(new Event('change'));$('reset').click();phase='gbuild';}"
    " else if(PLAN.lesson)phase='lesson';else{done();return;}}}"
    "else if(phase=='gbuild'&&built()){r+=' "
    "gpair='+($('pair').value=='model.qk_norm=layernorm'?1:0)+' "
    "gintro='+(/QK-norm/.test($('intro').textContent)?1:0);$('train').click();phase='grun';}"
    "else if(phase=='grun'&&step()>=PLAN.steps){$('pause').click();phase='gpause';}"
    "else "
    "if(phase=='gpause'&&paused()){measure('growth',PLAN.at);phase=PLAN.lesson?'lesson':'end';if(!"
    "PLAN.lesson){done();return;}}"
    "else if(phase=='lesson'){$('pquery').value='1';$('lessonex').click();phase='l1';wait=0;}"
    "else if((phase=='l1'||phase=='l2')&&/^weights "
    "/.test(($('fivenum3_0')||{}).textContent||'')&&$('fiveinfo').textContent.indexOf(\"lesson's "
    "example\")>=0&&$('fivesteps').dataset.query==(phase=='l1'?'1':'2')){"
    " var q=phase=='l1'?1:2;for(var s=0;s<5;s++)r+=' "
    "~five'+s+'_q'+q+'~'+$('fivenum'+s+'_0').textContent+'~'+$('fivenum'+s+'_1').textContent+'~';"
    " if(q==1){$('pquery').value='2';$('pquery').dispatchEvent(new "
    "Event('change'));phase='l2';}else{done();return;}}"
    "if(n>=PLAN.limit*10||errs||$('msg').textContent)done();},100);})();";

// The numbers of ./lab examples' T = 3 example for query q, as the page words them ("%.6f", -inf
// for a masked score): the five views' texts of variant v (0 scaled, 1 unscaled) begin with them.
static void lab_five_texts(const cJSON *t3, int q, int v, char out[5][256]) {
    const char *sfx = v ? "unscaled" : "scaled";
    char key[64];
    const cJSON *raw = cJSON_GetArrayItem(cJSON_GetObjectItem(t3, "scores"), q);
    snprintf(key, sizeof key, "masked_%s", sfx);
    const cJSON *mk = cJSON_GetArrayItem(cJSON_GetObjectItem(t3, key), q);
    snprintf(key, sizeof key, "weights_%s", sfx);
    const cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItem(t3, key), q);
    snprintf(key, sizeof key, "out_%s", sfx);
    const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItem(t3, key), q);
    snprintf(key, sizeof key, "dS_gain_%s", sfx);
    double gain = cJSON_GetArrayItem(cJSON_GetObjectItem(t3, key), q)
                      ? cJSON_GetArrayItem(cJSON_GetObjectItem(t3, key), q)->valuedouble
                      : NAN;
    size_t n[5];
    n[0] = (size_t)snprintf(out[0], 256, "%s: scores", v ? "unscaled" : "scaled (1/\u221a2)");
    n[1] = (size_t)snprintf(out[1], 256, "scaled");
    n[2] = (size_t)snprintf(out[2], 256, "masked");
    n[3] = (size_t)snprintf(out[3], 256, "weights");
    n[4] = (size_t)snprintf(out[4], 256, "output");
    for (int u = 0; u <= q;
         u++) {  // the keys the query sees (causal): their scores, unscaled and scaled
        double x = cJSON_GetArrayItem(raw, u) ? cJSON_GetArrayItem(raw, u)->valuedouble : NAN;
        n[0] += (size_t)snprintf(out[0] + n[0], 256 - n[0], " %.6f", x);
        n[1] += (size_t)snprintf(out[1] + n[1], 256 - n[1], " %.6f", v ? x : x / sqrt(2.0));
    }
    for (int u = 0; u < 3; u++) {
        const cJSON *m = cJSON_GetArrayItem(mk, u);
        if (!m || cJSON_IsNull(m))
            n[2] += (size_t)snprintf(out[2] + n[2], 256 - n[2], " -inf");
        else
            n[2] += (size_t)snprintf(out[2] + n[2], 256 - n[2], " %.6f", m->valuedouble);
        n[3] += (size_t)snprintf(out[3] + n[3], 256 - n[3], " %.6f",
                                 cJSON_GetArrayItem(w, u) ? cJSON_GetArrayItem(w, u)->valuedouble
                                                          : NAN);
    }
    for (int i = 0; i < 2; i++)
        n[4] += (size_t)snprintf(out[4] + n[4], 256 - n[4], " %.6f",
                                 cJSON_GetArrayItem(o, i) ? cJSON_GetArrayItem(o, i)->valuedouble
                                                          : NAN);
    snprintf(out[3] + n[3], 256 - n[3], "|%.6f", gain);  // the row gain, the text's last number
}

// The text between "~fiveS_qQ~" and the next '~' for variant v (0: the first field, 1: the second).
static int five_text(const char *rep, int s, int q, int v, char *out, size_t n) {
    char key[32];
    snprintf(key, sizeof key, "~five%d_q%d~", s, q);
    const char *p = strstr(rep, key);
    if (!p) return 0;
    p += strlen(key);
    if (v) {
        p = strchr(p, '~');
        if (!p) return 0;
        p++;
    }
    snprintf(out, n, "%.*s", (int)strcspn(p, "~"), p);
    return 1;
}

// The page as a newcomer opens it: the lesson preset (2 layers, 2 heads, d_k = 64, fan_in init)
// compared with its unscaled twin in two workers; Train until PG_LESSON_STEPS steps and, at step
// PG_LESSON_AT (a step, not a time), the unscaled variant's loss is above the scaled one's and its
// mean entropy lower, for the seeds 1337 (the page's), 1 and 2; the logit-growth preset's largest
// attention logit without QK-norm above the one with it; the lesson's example in the five views
// with ./lab examples' numbers; screenshots before and after training at 1280x800 and 390x844,
// no horizontal scroll at 390 px, and Train and Pause by the key t.
#define PG_LESSON_STEPS 40
#define PG_LESSON_AT    30
static void check_playground_lesson(void) {
    char why[600], plan[6000], png[1300];
    struct {
        const char *name, *plan;
        int w, h;
    } runs[] = {
        {"before_1280x800", "before:1", 1280, 800},
        {"before_390x844", "before:1", 390, 844},
        {"after_1280x800",
         "seeds:[1337],steps:" PG_XSTR(PG_LESSON_STEPS) ",at:" PG_XSTR(PG_LESSON_AT), 1280, 800},
        {"after_390x844",
         "seeds:[1337],steps:" PG_XSTR(PG_LESSON_STEPS) ",at:" PG_XSTR(PG_LESSON_AT) ",keys:1", 390,
         844},
        {"seeds_growth_lesson",
         "seeds:[1,2],steps:" PG_XSTR(PG_LESSON_STEPS) ",at:" PG_XSTR(
             PG_LESSON_AT) ",one:1,growth:1,lesson:1",
         1280, 2400},
    };
    char *lab = NULL;
    FILE *pl = popen("./lab examples --json", "r");
    if (pl) {
        size_t cap = 1 << 16, len = 0;
        lab = malloc(cap);
        size_t k;
        while (lab && (k = fread(lab + len, 1, cap - 1 - len, pl)) > 0) len += k;
        if (lab) lab[len] = 0;
        pclose(pl);
    }
    cJSON *labj = lab ? cJSON_Parse(lab) : NULL;
    free(lab);
    const cJSON *t3 = labj ? cJSON_GetObjectItem(labj, "t3") : NULL;
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        int w = runs[i].w, h = runs[i].h;
        char script[sizeof plan], name[80];
        snprintf(script, sizeof script,
                 "<script>var PLAN={%s,limit:150};</script><script>%s</script>\n", runs[i].plan,
                 PG_LESSON_SCRIPT);
        snprintf(name, sizeof name, "playground_%s", runs[i].name);
        snprintf(png, sizeof png, "%s/playground_%s.png", g_abs, runs[i].name);
        g_wait_s = 200;
        why[0] = 0;
        char *rep = pg_run_at(name, script, w, h, png, NULL, why, sizeof why);
        g_wait_s = 90;
        const char *r = rep ? rep : "";
        const char *msg = strstr(r, " msg=");
        int pw = 0, ph = 0,
            ok = rep && msg && !msg[5] && pg_field(r, "errors") == 0 && png_size(png, &pw, &ph) &&
                 pw == w && ph == h;
        result(ok && pg_field(r, "preset") == 1 && pg_field(r, "workers") == 2,
               "playground as opened (%s, %dx%d): the lesson preset, scaled against unscaled, in "
               "two workers; no error; "
               "a %dx%d screenshot (%dx%d)%s%.300s",
               runs[i].name, w, h, w, h, pw, ph, ok ? "" : ": ", ok ? "" : (rep ? r : why));
        if (!ok) {
            free(rep);
            continue;
        }
        if (h == 844) {
            double width = pg_field(r, "width"), scroll = pg_field(r, "scroll");
            result(scroll <= width && width <= w,
                   "playground at 390x844 (%s): no horizontal scroll (scroll width %.0f, "
                   "window %.0f px)",
                   runs[i].name, scroll, width);
        }
        if (strstr(runs[i].plan, "keys:1"))
            result(pg_field(r, "paused_at") >= PG_LESSON_STEPS,
                   "playground at 390x844: the key t started training and "
                   "the key t paused it at step %.0f (at least %d)",
                   pg_field(r, "paused_at"), PG_LESSON_STEPS);
        static const int seeds[] = {1337, 1, 2};
        for (int k = 0; k < 3; k++) {
            char key[64];
            double f[10];
            const char *names[10] = {"l0",    "l1",    "ent0",  "ent1",   "maxw0",
                                     "maxw1", "gain0", "gain1", "logit0", "logit1"};
            snprintf(key, sizeof key, "l0_%d", seeds[k]);
            if (isnan(pg_field(r, key))) continue;
            for (int j = 0; j < 10; j++) {
                snprintf(key, sizeof key, "%s_%d", names[j], seeds[k]);
                f[j] = pg_field(r, key);
            }
            result(f[1] > f[0] && f[3] < f[2],
                   "playground, the defaults, seed %d (%s): at step %d the unscaled loss %.4f is "
                   "above the scaled %.4f and its mean entropy %.4f below %.4f (max weight %.4f "
                   "against %.4f, grad gain "
                   "%.4f against %.4f, max logit %.1f against %.1f)",
                   seeds[k], runs[i].name, PG_LESSON_AT, f[1], f[0], f[3], f[2], f[5], f[4], f[7],
                   f[6], f[9], f[8]);
        }
        if (strstr(runs[i].plan, "one:1"))
            result(pg_field(r, "oneworker") == 1,
                   "playground: seed 2 trained again in one worker (both variants in one "
                   "module) shows the two workers' losses of steps 1..%d of both variants and "
                   "their statistics' points, "
                   "digit for digit",
                   PG_LESSON_STEPS);
        if (strstr(runs[i].plan, "growth:1")) {
            double a = pg_field(r, "logit0_growth"), b = pg_field(r, "logit1_growth");
            result(
                pg_field(r, "gpair") == 1 && pg_field(r, "gintro") == 1 && a > b,
                "playground, the logit-growth preset (lr 0.031, QK-norm off against "
                "on; the text above the buttons speaks of QK-norm, not of the scale): at step %d "
                "the largest attention logit without QK-norm %.1f is above the one with it %.2f "
                "(loss %.4f against %.4f)",
                PG_LESSON_AT, a, b, pg_field(r, "l0_growth"), pg_field(r, "l1_growth"));
        }
        if (strstr(runs[i].plan, "lesson:1")) {
            int same = 0, total = 0;
            char bad[400] = "";
            for (int q = 1; q <= 2 && t3; q++)
                for (int v = 0; v < 2; v++) {
                    char want[5][256], got[300];
                    lab_five_texts(t3, q, v, want);
                    for (int s5 = 0; s5 < 5; s5++) {
                        total++;
                        char *bar = strchr(want[s5], '|'), gain[64] = "";
                        if (bar) {
                            snprintf(gain, sizeof gain, "%s", bar + 1);
                            *bar = 0;
                        }
                        int ok5 = five_text(r, s5, q, v, got, sizeof got) &&
                                  strncmp(got, want[s5], strlen(want[s5])) == 0 &&
                                  (!gain[0] || strstr(got, gain) != NULL);
                        same += ok5;
                        if (!ok5 && !bad[0])
                            snprintf(bad, sizeof bad,
                                     "query %d, %s, step %d: the page shows '%.120s', ./lab "
                                     "'%.100s' (row gain %s)",
                                     q, v ? "unscaled" : "scaled", s5 + 1, got, want[s5], gain);
                    }
                }
            result(t3 && same == total && total == 20,
                   "playground, the lesson's example in the five steps' views: %d of %d "
                   "views (queries 1 and 2, scaled and unscaled: scores, scaled, masked, weights "
                   "and row gain, output) "
                   "show ./lab examples' numbers%s%s",
                   same, total, bad[0] ? ": " : "", bad);
        }
        free(rep);
    }
    cJSON_Delete(labj);
}

// ---------------------------------------------------------------------------------------------
// the induction head preset (docs/induction.md): its curves show the module's numbers

// A script after the page's own: once built (the lesson preset), the induction preset is chosen
// in the menu and Reset; once built, Train; Pause once the status shows PG_IND_STEPS steps; once
// paused it sends the preset's pair and data, whether the induction box is shown, and the
// induction curves' points as the DOM holds them (c_ind's and c_ctx's data-steps, -v0, -v1; the
// last point's per-head scores), every step's loss, the status and the speed shown.
// (built with -DPG_IND_STEPS=1500 it watches the head form: the limits grow with the steps)
#ifndef PG_IND_STEPS
#define PG_IND_STEPS 50
#endif
#define PG_IND_TICKS (1500 + 4 * PG_IND_STEPS)  // the script's limit, in 0.1 s ticks
static const char *const PG_IND_SCRIPT =
    "<script>(function(){var $=function(i){return "
    "document.getElementById(i);},n=0,errs=0,phase=0,before='';"
    "window.addEventListener('error',function(){errs++;});pool.forEach(function(p){p.w."
    "addEventListener('error',function(){errs++;});});"
    "function step(){var m=/^step (\\d+)/.exec($('status').textContent);return m?+m[1]:-1;}"
    "function built(){return "
    "/parameters/.test($('status').textContent)&&$('status').textContent!=before;}"
    "function j(s){return (s||'').split(' ').join(',');}"
    "function done(){clearInterval(iv);var "
    "a=$('c_ind').dataset,b=$('c_ctx').dataset;$('indbox').scrollIntoView();"
    "parent.postMessage('pair='+($('pair').value=='model.attn_scale=none'?1:0)+' "
    "data='+(document.querySelector('input[name=src]:checked').value=='induction'?1:0)"
    "+' shown='+($('indbox').hidden?0:1)+' steps=['+j(a.steps)+'] ind0=['+j(a.v0)+'] "
    "ind1=['+j(a.v1)+'] ctx0=['+j(b.v0)+'] ctx1=['+j(b.v1)+']'"
    "+' heads0=['+j(a.heads0)+'] paused_at='+step()+' errors='+errs+' "
    "status='+$('status').textContent.replace(/ /g,'_')+' rate='+$('rate').textContent.replace(/ "
    "/g,'_')"
    "+' losses='+($('curve').dataset.loss||'')+' msg='+$('msg').textContent,'*');}"
    "var iv=setInterval(function(){n++;"
    "if(phase==0&&built()){before=$('status').textContent;$('preset').value='induction';$('preset')"
    ".dispatchEvent(new Event('change'));$('reset').click();phase=1;}"
    "else if(phase==1&&built()){$('train').click();phase=2;}"
    "else if(phase==2&&step()>=" PG_XSTR(
        PG_IND_STEPS) "){$('pause').click();phase=3;}"
                      "else "
                      "if(phase==3&&/\\(paused\\)/"
                      ".test($('status').textContent))setTimeout(done,300),phase=4;"
                      "if(n>=" PG_XSTR(PG_IND_TICKS) "||errs||$('msg').textContent)done();},100);})"
                                                     "();</script>\n";

// The numbers in "key=[a,b,...]" of rep into v (at most max); returns how many.
static int pg_list(const char *rep, const char *key, double *v, int max) {
    char want[64];
    snprintf(want, sizeof want, " %s=[", key);
    const char *p = strstr(rep, want);
    if (!p) return 0;
    p += strlen(want);
    int k = 0;
    while (k < max && *p != ']') {
        char *end;
        double x = strtod(p, &end);
        if (end == p) break;
        v[k++] = x;
        p = *end == ',' ? end + 1 : end;
    }
    return k;
}

// docs/playground.html with PG_IND_SCRIPT at 1280x800 (a screenshot of the induction curves),
// against build/webnative/web_native tests/web_induction.json PG_IND_STEPS --induction 25 (the
// preset's config, the same data made by the same C function, 4-wide, one thread): at steps 25
// and 50 the page's induction and in-context scores of both variants equal the native ones to
// 1e-4 (the losses agree to 1e-5 relative, not bit for bit: native fuses multiply-adds, the module
// cannot), and so do those steps' training losses.
static void check_playground_induction(void) {
    const char *native = "build/webnative/web_native";
    char nat_path[1200], png[1300], why[600] = "";
    snprintf(nat_path, sizeof nat_path, "%s/web_native_induction.txt", g_abs);
    snprintf(png, sizeof png, "%s/playground_induction.png", g_abs);
    char *nat =
        access(native, X_OK) == 0 && sh("./%s tests/web_induction.json %d --induction 25 > '%s'",
                                        native, PG_IND_STEPS, nat_path) == 0
            ? slurp(nat_path)
            : NULL;
    // per line: step, loss, loss1, then per variant | induction in_context first second prev_token
    double want[2][13];
    int nw = 0;
    for (const char *p = nat; p && *p && nw < 2;) {
        double *w = want[nw];
        if (sscanf(p, "%lf %lf %lf | %lf %lf %lf %lf %lf | %lf %lf %lf %lf %lf", &w[0], &w[1],
                   &w[2], &w[3], &w[4], &w[5], &w[6], &w[7], &w[8], &w[9], &w[10], &w[11],
                   &w[12]) != 13)
            break;
        nw++;
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    free(nat);
    if (nw != 2) {
        result(0,
               "playground, the induction preset: %s gave %d of 2 probe rows (build it: make %s)",
               native, nw, native);
        return;
    }
    g_wait_s = 200 + PG_IND_STEPS / 2;
    char *rep =
        pg_run_at("playground_induction", PG_IND_SCRIPT, 1280, 800, png, NULL, why, sizeof why);
    g_wait_s = 90;
    const char *r = rep ? rep : "";
    const char *msg = strstr(r, " msg="), *ls = strstr(r, " losses=");
    enum { MAXP = PG_IND_STEPS / 25 + 8 };
    double steps[MAXP], ind[2][MAXP], ctx[2][MAXP], heads[16], loss[4 * PG_IND_STEPS];
    int ns = pg_list(r, "steps", steps, MAXP), n0 = pg_list(r, "ind0", ind[0], MAXP),
        n1 = pg_list(r, "ind1", ind[1], MAXP);
    int c0 = pg_list(r, "ctx0", ctx[0], MAXP), c1 = pg_list(r, "ctx1", ctx[1], MAXP),
        nh = pg_list(r, "heads0", heads, 16);
    int nl = ls ? read_numbers(ls + strlen(" losses="), loss, 4 * PG_IND_STEPS) : 0;
    int pw = 0, ph = 0;
    if (!rep)
        snprintf(why, sizeof why, "%.500s", why[0] ? why : "no report");
    else if (!msg || msg[5] || pg_field(r, "errors") != 0)
        snprintf(why, sizeof why, "an error: %.400s", r);
    else if (pg_field(r, "pair") != 1 || pg_field(r, "data") != 1 || pg_field(r, "shown") != 1)
        snprintf(why, sizeof why,
                 "the preset did not set the unscaled pair, the induction data and show the "
                 "curves: %.300s",
                 r);
    else if (ns < 2 || steps[0] != 25 || steps[1] != 50 || n0 != ns || n1 != ns || c0 != ns ||
             c1 != ns || nh != 8)
        snprintf(why, sizeof why,
                 "the curves hold %d points (steps 25 and 50 expected, and 8 per-head scores, got "
                 "%d): %.300s",
                 ns, nh, r);
    else if (nl < PG_IND_STEPS)
        snprintf(why, sizeof why, "the DOM holds %d losses, %d expected", nl, PG_IND_STEPS);
    else if (!png_size(png, &pw, &ph) || pw != 1280 || ph != 800)
        snprintf(why, sizeof why, "no 1280x800 screenshot (got %dx%d)", pw, ph);
    const char *rate = strstr(r, " rate=") ? strstr(r, " rate=") + 6 : "-";
    double worst = 0;
    if (!why[0])
        for (int k = 0; k < 2; k++) {
            const double *w = want[k];
            double d[6] = {fabs(ind[0][k] - w[3]),
                           fabs(ctx[0][k] - w[4]),
                           fabs(ind[1][k] - w[8]),
                           fabs(ctx[1][k] - w[9]),
                           fabs(loss[(int)w[0] - 1] - w[1]) / w[1] * 10,
                           0};
            for (int i = 0; i < 5; i++)
                if (!(d[i] <= worst)) worst = d[i];  // a NaN is the worst
        }
    int past = -1;  // the first point where the scaled head passed 0.4 (a long run's)
    for (int k = 0; k < ns && k < n0 && past < 0; k++)
        if (ind[0][k] >= 0.4) past = k;
    if (past >= 0 && !why[0])
        printf("     the scaled model's induction score passed 0.4 at step %.0f (%.4f; in-context "
               "%.4f); the unscaled "
               "model's was %.4f there\n",
               steps[past], ind[0][past], ctx[0][past], ind[1][past]);
    result(!why[0] && worst <= 1e-4,
           "playground, the induction head preset (chosen in the menu: 2 layers, fan_in, "
           "repeated random text made by the module, scaled against unscaled, two workers): at "
           "steps 25 and 50 the "
           "curves' induction scores (page %.6f %.6f, native %.6f %.6f; unscaled %.6f %.6f, native "
           "%.6f %.6f) and "
           "in-context scores (page %.6f %.6f, native %.6f %.6f) equal %s's to 1e-4 (largest "
           "difference %.2g), the "
           "losses to 1e-5 relative; speed shown: %.*s%s%s",
           ind[0][0], ind[0][1], want[0][3], want[1][3], ind[1][0], ind[1][1], want[0][8],
           want[1][8], ctx[0][0], ctx[0][1], want[0][4], want[1][4], native, worst,
           (int)strcspn(rate, " "), rate, why[0] ? ": " : "", why);
    free(rep);
}

int main(int argc, char **argv) {
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            snprintf(g_out, sizeof g_out, "%s", argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--chromium") == 0 && i + 1 < argc)
            g_chromium = argv[++i];
        else if (strcmp(argv[i], "-v") == 0)
            g_verbose = 1;
        else {
            fprintf(stderr,
                    "usage: tests/browser_test [--out DIR] [--only PAGE] [--chromium PATH] [-v]\n");
            return 2;
        }
    }
    static const char *const names[] = {"chromium", "chromium-browser", "google-chrome", NULL};
    static char found[512];
    if (!g_chromium) g_chromium = getenv("CHROMIUM");
    for (int i = 0; !g_chromium && names[i]; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "command -v %s 2>/dev/null", names[i]);
        FILE *p = popen(cmd, "r");
        if (p && fgets(found, sizeof found, p)) {
            found[strcspn(found, "\n")] = 0;
            if (found[0]) g_chromium = found;
        }
        if (p) pclose(p);
    }
    if (!g_chromium) {
        printf("browser_test: SKIPPED: no Chromium found (install it: apt-get install chromium)\n");
        printf("0 passed, 0 failed, 1 skipped\n");
        return 0;
    }
    if (access("./lab", X_OK) != 0 || access("./train", X_OK) != 0) {
        fprintf(
            stderr,
            "browser_test: ./lab or ./train not found: run from the repository root after make\n");
        return 2;
    }
    sh("mkdir -p '%s' && rm -f '%s'/*.png '%s'/*.dom '%s'/*.html", g_out, g_out, g_out, g_out);
    if (!realpath(g_out, g_abs)) {
        fprintf(stderr, "browser_test: cannot use %s: %s\n", g_out, strerror(errno));
        return 2;
    }
    printf("browser test with %s; screenshots in %s/\n", g_chromium, g_out);
    fflush(stdout);
    static const PageSpec pages[] = {
        {"examples", "examples", PAGE_EXAMPLES, 0},
        {"exercise", "exercise", PAGE_EXERCISE, 0},
        {"exercise_causal", "exercise --causal --seed 3", PAGE_EXERCISE, 1},
        {"mistakes", "mistakes", PAGE_MISTAKES, 0},
        {"online", "online-softmax", PAGE_ONLINE, 0},
    };
    check_network_detector();
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        if (!only || strcmp(only, pages[i].name) == 0) check_page(&pages[i]);
    if (!only || strcmp(only, "report") == 0) check_report();
    if (!only || strcmp(only, "explain") == 0) check_explain();
    if (!only || strcmp(only, "playground") == 0) check_playground();
    if (!only || strcmp(only, "playground") == 0) check_playground_native();
    if (!only || strcmp(only, "playground") == 0) check_playground_bad();
    if (!only || strcmp(only, "playground") == 0 || strcmp(only, "playground-lesson") == 0)
        check_playground_lesson();
    if (!only || strcmp(only, "playground") == 0 || strcmp(only, "playground-induction") == 0)
        check_playground_induction();
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
