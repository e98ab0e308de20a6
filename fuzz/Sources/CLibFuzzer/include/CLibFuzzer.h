#ifndef CLIBFUZZER_H
#define CLIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver, given the input function to run: what libFuzzer's own `main` calls.
/// Declared here because libFuzzer ships no header for it; `-sanitize=fuzzer` links it.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*testOneInput)(const uint8_t *data, size_t size));

#endif
