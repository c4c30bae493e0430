// run/generate.c: autoregressive sampling with temperature and top-k.
#include "run/generate.h"
#include "run/decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// The vocabulary in a compact form for a message: whole classes named ("lowercase letters",
// "digits"), the other characters in quotes, a newline and a tab by name; a long rest is cut.
static void describe_vocab(const Vocab *v, char *out, size_t len) {
    static const struct {
        uint32_t lo, hi;
        const char *name;
    } classes[] = {
        {'a', 'z', "lowercase letters"}, {'A', 'Z', "uppercase letters"}, {'0', '9', "digits"}};
    int whole[3] = {0, 0, 0};
    size_t n = 0;
    n += (size_t)snprintf(out + n, len - n, "the vocabulary (%d characters) is", v->vocab_size);
    int parts = 0;
    for (int c = 0; c < 3; c++) {
        int all = 1;
        for (uint32_t cp = classes[c].lo; cp <= classes[c].hi && all; cp++)
            all = vocab_lookup(v, cp) >= 0;
        whole[c] = all;
        if (all && n < len)
            n += (size_t)snprintf(out + n, len - n, "%s %s", parts++ ? "," : "", classes[c].name);
    }
    char rest[256] = "";
    size_t nr = 0;
    int newline = 0, tab = 0, cut = 0;
    for (int i = 0; i < v->vocab_size; i++) {
        uint32_t cp = v->chars[i];
        int in_class = 0;
        for (int c = 0; c < 3; c++)
            in_class |= whole[c] && cp >= classes[c].lo && cp <= classes[c].hi;
        if (in_class) continue;
        if (cp == '\n') {
            newline = 1;
            continue;
        }
        if (cp == '\t') {
            tab = 1;
            continue;
        }
        if (cp < 0x20 || nr + 5 >= 64) {
            cut++;
            continue;
        }
        char buf[5] = {0};
        utf8_encode(cp, buf);
        nr += (size_t)snprintf(rest + nr, sizeof rest - nr, "%s", buf);
    }
    if (nr && n < len)
        n += (size_t)snprintf(out + n, len - n, "%s '%s'", parts++ ? " and" : "", rest);
    if (cut && n < len) n += (size_t)snprintf(out + n, len - n, " and %d more", cut);
    if (newline && n < len)
        n += (size_t)snprintf(out + n, len - n, "%s newline", parts++ ? " and" : "");
    if (tab && n < len) n += (size_t)snprintf(out + n, len - n, "%s tab", parts++ ? " and" : "");
}

int encode_prompt(const Vocab *v, const char *prompt, int *tokens, char *err, size_t errlen) {
    size_t len = strlen(prompt), n = 0, bad = 0;
    uint32_t *cps = NULL;
    if (!utf8_decode((const unsigned char *)prompt, len, &cps, &n, &bad)) {
        snprintf(err, errlen, "the prompt is not valid UTF-8 at byte %zu", bad);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int id = vocab_lookup(v, cps[i]);
        if (id < 0) {
            char buf[5] = {0};
            utf8_encode(cps[i], buf);
            char known[512];
            describe_vocab(v, known, sizeof known);
            snprintf(err, errlen,
                     "the prompt's character '%s' (U+%04X) is not in the model's vocabulary: %s",
                     cps[i] < 0x20 ? "?" : buf, (unsigned)cps[i], known);
            free(cps);
            return -1;
        }
        tokens[i] = id;
    }
    free(cps);
    return (int)n;
}

// Draw from softmax(logits / temperature) restricted to the top_k largest logits; temperature 0
// is the limit, greedy decoding: the most likely token (the first of equals), no random draw.
static int sample_logits(const real *logits, int V, double temperature, int top_k, Rng *rng,
                         double *work) {
    double maxv = -INFINITY;
    int argmax = 0;
    for (int i = 0; i < V; i++)
        if (logits[i] > maxv) {
            maxv = logits[i];
            argmax = i;
        }
    if (temperature == 0) return argmax;
    double threshold = -INFINITY;
    if (top_k > 0 && top_k < V) {
        // the k-th largest logit: copy and partially select (V is small for characters)
        for (int i = 0; i < V; i++) work[i] = logits[i];
        for (int k = 0; k < top_k; k++) {
            int best = k;
            for (int i = k + 1; i < V; i++)
                if (work[i] > work[best]) best = i;
            double t = work[k];
            work[k] = work[best];
            work[best] = t;
        }
        threshold = work[top_k - 1];
    }
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        work[i] = logits[i] >= threshold ? exp((logits[i] - maxv) / temperature) : 0.0;
        sum += work[i];
    }
    double r = rng_uniform(rng) * sum, acc = 0.0;
    for (int i = 0; i < V; i++) {
        acc += work[i];
        if (r < acc) return i;
    }
    for (int i = V - 1; i >= 0; i--)
        if (work[i] > 0) return i;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// the threads of one token's forward

// The work (about 2 FLOPs per parameter and position) below which a token's forward runs on one
// thread: a small model's window, or one position of a larger one. Such a forward is many
// parallel regions of little work each; their forks and joins cost more than they save, and on
// a busy machine each of them can wait for a core. A larger forward (a large model's window) runs
// on the configured count or on one thread, whichever its pace measured faster (base/common.h).
#define TOKEN_PAR_WORK 1e9

static int token_is_small(const GPT *m, int rows) {
    return 2.0 * (double)m->n_params * rows < TOKEN_PAR_WORK;
}

// Before a token's forward over `rows` positions: set its thread count; returns the clock.
static double token_begin(const GPT *m, ThreadPace *pace, int rows) {
    if (token_is_small(m, rows))
        thread_set_max(1);
    else
        pace_begin(pace);
    return now_seconds();
}

// After it: the pace learns its time; the configured count is set again.
static void token_end(const GPT *m, ThreadPace *pace, int rows, double t0) {
    if (token_is_small(m, rows))
        thread_set_max(pace->max);
    else
        pace_end(pace, now_seconds() - t0);
}

// Emit one token as UTF-8.
static void put_token(const Vocab *v, int token, FILE *out) {
    if (!out) return;
    char buf[5] = {0};
    int len = utf8_encode(v->chars[token], buf);
    fwrite(buf, 1, (size_t)len, out);
}

// The token sequence both generators extend: the prompt, with room for n_tokens more. An empty
// prompt starts from token 0. Sets *n to the tokens it holds.
static int *start_context(const int *prompt, int n_prompt, int n_tokens, int *n) {
    int *ctx = xmalloc(sizeof(int) * ((size_t)n_prompt + (size_t)n_tokens + 1), "sampling context");
    *n = 0;
    for (int i = 0; i < n_prompt; i++) ctx[(*n)++] = prompt[i];
    if (*n == 0) ctx[(*n)++] = 0;
    return ctx;
}

void generate(GPT *m, const Vocab *v, const int *prompt, int n_prompt, int n_tokens,
              double temperature, int top_k, Rng *rng, FILE *out) {
    generate_until(m, v, prompt, n_prompt, n_tokens, temperature, top_k, CONTEXT_CROP, rng, out,
                   NULL);
}

// generate_full_window's loop, stopping early once *stop is non-zero; returns the tokens written.
static int full_window_until(GPT *m, const Vocab *v, const int *prompt, int n_prompt, int n_tokens,
                             double temperature, int top_k, Rng *rng, FILE *out,
                             const volatile sig_atomic_t *stop);

int generate_until(GPT *m, const Vocab *v, const int *prompt, int n_prompt, int n_tokens,
                   double temperature, int top_k, ContextPolicy policy, Rng *rng, FILE *out,
                   const volatile sig_atomic_t *stop) {
    // a model that sees the future (an attention mistake) has no valid cache: every position's
    // keys would change with the tokens after it. Recompute the window, as gen_loss does.
    if (!gpt_attention_is_causal(m))
        return full_window_until(m, v, prompt, n_prompt, n_tokens, temperature, top_k, rng, out,
                                 stop);
    int Tmax = m->dims.block_size, V = m->dims.vocab_size, n;
    int *ctx = start_context(prompt, n_prompt, n_tokens, &n);
    double *work = xmalloc(sizeof(double) * (size_t)V, "sampling buffer");
    real *logits = xmalloc(sizeof(real) * (size_t)V, "logits");
    KVCache cache;
    kv_cache_init(&cache, m);
    // prefill: the last block_size tokens of the prompt
    int start = n > Tmax ? n - Tmax : 0, written = 0;
    ThreadPace pace;  // the threads of the forwards large enough for a choice
    pace_init(&pace, thread_max());
    double t0 = token_begin(m, &pace, n - start);
    gpt_prefill(m, &cache, ctx + start, n - start, logits);
    token_end(m, &pace, n - start, t0);
    while (written < n_tokens && !(stop && *stop)) {
        int next = sample_logits(logits, V, temperature, top_k, rng, work);
        ctx[n++] = next;
        put_token(v, next, out);
        if (++written == n_tokens) break;
        int stepping = cache.len<Tmax, keep = Tmax / 2> 0 ? Tmax / 2 : 1;
        int rows = stepping ? 1 : policy == CONTEXT_CROP ? Tmax : keep;
        t0 = token_begin(m, &pace, rows);
        if (stepping) {
            gpt_decode_step(m, &cache, next, logits);
        } else if (policy == CONTEXT_CROP) {
            // the window is full. Position embeddings are absolute, so sliding it by one changes
            // every cached key: recompute the last block_size tokens (the crop), as one forward
            // pass of the window; the cache stays full, so the next token does the same
            gpt_window_logits(m, ctx + n - Tmax, Tmax, logits);
        } else {
            // restart from the last half window (one prefill per block_size/2 tokens keeps the
            // cost per token constant)
            gpt_prefill(m, &cache, ctx + n - keep, keep, logits);
        }
        token_end(m, &pace, rows, t0);
    }
    if (out) fflush(out);
    kv_cache_free(&cache);
    free(logits);
    free(work);
    free(ctx);
    return written;
}

void generate_full_window(GPT *m, const Vocab *v, const int *prompt, int n_prompt, int n_tokens,
                          double temperature, int top_k, Rng *rng, FILE *out) {
    full_window_until(m, v, prompt, n_prompt, n_tokens, temperature, top_k, rng, out, NULL);
}

static int full_window_until(GPT *m, const Vocab *v, const int *prompt, int n_prompt, int n_tokens,
                             double temperature, int top_k, Rng *rng, FILE *out,
                             const volatile sig_atomic_t *stop) {
    int Tmax = m->dims.block_size, V = m->dims.vocab_size, n;
    int *ctx = start_context(prompt, n_prompt, n_tokens, &n);
    double *work = xmalloc(sizeof(double) * (size_t)V, "sampling buffer");
    ThreadPace pace;
    pace_init(&pace, thread_max());
    int written = 0;
    for (; written < n_tokens && !(stop && *stop); written++) {
        int T = n < Tmax ? n : Tmax;
        double t0 = token_begin(m, &pace, T);
        gpt_forward(m, ctx + (n - T), NULL, 1, T);  // the whole window, every token
        token_end(m, &pace, T, t0);
        int next =
            sample_logits(m->acts.logits + (size_t)(T - 1) * V, V, temperature, top_k, rng, work);
        ctx[n++] = next;
        put_token(v, next, out);
    }
    if (out) fflush(out);
    free(work);
    free(ctx);
    return written;
}
