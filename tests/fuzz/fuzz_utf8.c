// libFuzzer entry point for the utf8 target (make fuzz).
#include "harnesses.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_utf8_one(data, size); }
