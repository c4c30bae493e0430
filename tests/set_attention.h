// tests/set_attention.h: a built model's attention changed in place, for the tests that compare
// specs or implementations on the same weights. The programs choose attention once, at gpt_build
// (model.h); a model with batch workers (run/workers.c) is not changed here.
#ifndef TESTS_SET_ATTENTION_H
#define TESTS_SET_ATTENTION_H

#include <assert.h>

#include "model.h"

static inline void set_attention(GPT *m, AttnSetup setup) {
    assert(m->n_workers == 0);
    m->attn = setup.spec;
    m->attn_impl = setup.impl;
}

#endif
