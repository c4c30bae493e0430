// libFuzzer entry point for the checkpoint target (make fuzz).
#include "harnesses.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_checkpoint_one(data, size);
}
