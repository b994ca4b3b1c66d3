/* Fuzzes the YAML reader (base/yaml.h) with small limits, so that the
 * size, depth and node caps are hit often: it must return a tree or an
 * error with a message, never crash or leak; a tree must serialise.
 * fuzz-max-len: 16384 */
#include "base/yaml.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fair_yaml_limits lim = {
        .max_bytes = 16384, .max_depth = 16, .max_nodes = 4000, .max_docs = 16};
    struct fair_error err = {0};
    json_t *docs = NULL;
    int rc = fair_yaml_parse("fuzz.yaml", (const char *)data, size, &lim, &docs, &err);
    if (rc == 0) {
        if (!json_is_array(docs) || json_array_size(docs) > lim.max_docs)
            fuzz_fail("success without a document array of at most %zu", lim.max_docs);
        char *text = json_dumps(docs, JSON_ENCODE_ANY | JSON_COMPACT);
        if (!text)
            fuzz_fail("parsed tree does not serialise");
        free(text);
        json_decref(docs);
    } else {
        if (docs)
            fuzz_fail("failure %d left a tree behind", rc);
        if (err.code != rc || err.msg[0] == '\0')
            fuzz_fail("failure %d without a message", rc);
    }
    return 0;
}
