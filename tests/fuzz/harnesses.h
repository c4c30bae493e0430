// tests/fuzz/harnesses.h: one function per fuzz target, shared by the libFuzzer wrappers
// (make fuzz) and the regression replay in the test suite (make test).
#ifndef HARNESSES_H
#define HARNESSES_H

#include <stddef.h>
#include <stdint.h>

int fuzz_config_one(const uint8_t *data, size_t size);
int fuzz_checkpoint_one(const uint8_t *data, size_t size);
int fuzz_utf8_one(const uint8_t *data, size_t size);
int fuzz_safetensors_one(const uint8_t *data, size_t size);
int fuzz_sweep_state_one(const uint8_t *data, size_t size);

#endif
