// libFuzzer entry point for the safetensors target (make fuzz).
#include "harnesses.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_safetensors_one(data, size);
}
