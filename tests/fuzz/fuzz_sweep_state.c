// libFuzzer entry point for the sweep.json target (make fuzz).
#include "harnesses.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_sweep_state_one(data, size);
}
