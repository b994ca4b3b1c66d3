/* Shared by the libFuzzer targets in tests/fuzz/: the entry point every
 * fuzz_*.c defines, and a helper that turns fuzzer bytes into a C string.
 * Each target states its input cap on a line "fuzz-max-len: N", which
 * scripts/fuzz.sh passes to libFuzzer as -max_len. */
#ifndef FAIR_TESTS_FUZZ_H
#define FAIR_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Called by libFuzzer (FAIR_FUZZ=ON) or by corpus_runner.c (otherwise)
 * once per input. Returns 0; a broken invariant calls fuzz_fail(). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* New NUL-terminated copy of at most max bytes of data, cut at the first
 * NUL (the parsers take C strings). The caller frees it. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size, size_t max)
{
    size_t n = size < max ? size : max;
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* A property the target checks does not hold: report it and crash, so that
 * libFuzzer saves the input. */
#define fuzz_fail(...)                                                                             \
    do {                                                                                           \
        fprintf(stderr, "fuzz invariant failed at %s:%d: ", __FILE__, __LINE__);                   \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        abort();                                                                                   \
    } while (0)

#endif
