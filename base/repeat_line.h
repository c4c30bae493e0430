// base/repeat_line.h: the repeated random text of the induction experiment (docs/induction.md), one
// definition for tools/gencorpus.c (--repeat) and the page's induction data (run/induction.c):
// a line of n = REPEAT_MIN + pick(REPEAT_SPAN) letters, each 'a' + pick(26), written twice with
// nothing between (qzkmwtrbaxqzkmwtrbax). The copy's distance varies, so only a head that finds
// the earlier occurrence of the current letter (an induction head) predicts the second half.
// Header only and libc-free, so the generator still builds with one command (data/README.md;
// it includes this file by its relative path): pick(ctx, k) is the caller's uniform draw in
// [0, k), made in this order: the length, then the letters.
#ifndef REPEAT_LINE_H
#define REPEAT_LINE_H

#define REPEAT_MIN  6
#define REPEAT_SPAN 11
#define REPEAT_LINE_MAX                                                                            \
    (2 * (REPEAT_MIN + REPEAT_SPAN - 1))  // the longest line, newline not counted

// Writes the line (no newline, no terminator) to out (room for REPEAT_LINE_MAX); returns 2n.
static inline int repeat_line_write(char *out, int (*pick)(void *ctx, int k), void *ctx) {
    // (the % keeps a draw in range for the compiler's bounds check; it never changes a valid draw)
    int n = REPEAT_MIN + (int)((unsigned)pick(ctx, REPEAT_SPAN) % REPEAT_SPAN);
    for (int i = 0; i < n; i++) out[i] = (char)('a' + (int)((unsigned)pick(ctx, 26) % 26));
    for (int i = 0; i < n; i++) out[n + i] = out[i];
    return 2 * n;
}

#endif
