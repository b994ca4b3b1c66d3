/* Fuzzes the YAML reader's out-of-memory paths: the first input byte picks
 * which of lib/'s allocations fails (base/alloc.h's test hook), the rest is
 * the document. The reader must then fail cleanly with FAIR_ENOMEM, or
 * succeed if it needed fewer allocations, and never leak.
 * fuzz-max-len: 4096 */
#include "base/alloc.h"
#include "base/yaml.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct fair_yaml_limits lim = {
        .max_bytes = 4096, .max_depth = 16, .max_nodes = 2000, .max_docs = 8};
    struct fair_error err = {0};
    json_t *docs = NULL;
    fair_alloc_fail_after(data[0] % 64);
    int rc = fair_yaml_parse("oom.yaml", (const char *)data + 1, size - 1, &lim, &docs, &err);
    long used = fair_alloc_count();
    fair_alloc_fail_after(-1);
    if (rc == 0) {
        if (used > data[0] % 64)
            fuzz_fail("parse succeeded although allocation %d of %ld failed", data[0] % 64, used);
        json_decref(docs);
    } else if (docs) {
        fuzz_fail("failure %d left a tree behind", rc);
    }
    return 0;
}
