/* Fuzzes the filtering JSON parser (lib/kube/jsonfilter.h). Without a
 * filter its result must equal jansson's json_loadb() whenever both
 * succeed, and it must never accept what jansson rejects (everything is
 * validated when nothing is skipped), except integers beyond int64, which
 * jansson rejects and the filter parser reads as reals. With the Pod filter it must not
 * crash, must report errors with a message, and a filtered tree must hold
 * only keys the filter names at the top level.
 * fuzz-max-len: 8192 */
#include "kube/decode.h"
#include "kube/jsonfilter.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    json_error_t jerr;
    json_t *ref = json_loadb(s, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    /* Known difference: jansson rejects integers beyond int64; the filter
     * parser keeps them as reals (decoders then reject the type). */
    int big_int = !ref && strstr(jerr.text, "too big") != NULL;
    json_t *got = NULL;
    struct fair_error err = {0};
    int rc = fair_json_parse_filtered(s, size, NULL, &got, &err);
    if (rc == 0) {
        if (!got)
            fuzz_fail("success without a tree");
        if (ref && !json_equal(ref, got))
            fuzz_fail("unfiltered result differs from json_loadb");
        if (!ref && !big_int)
            fuzz_fail("accepted a document jansson rejects");
    } else {
        if (got)
            fuzz_fail("failure %d left a tree", rc);
        if (rc != FAIR_EPARSE && rc != FAIR_ERANGE && rc != FAIR_ENOMEM)
            fuzz_fail("unexpected code %d", rc);
        if (!err.msg[0])
            fuzz_fail("failure %d without a message", rc);
    }
    json_decref(got);
    got = NULL;
    memset(&err, 0, sizeof err);
    rc = fair_json_parse_filtered(s, size, fair_ktype_pod.filter, &got, &err);
    if (rc == 0 && json_is_object(got)) {
        const char *key;
        json_t *v;
        json_object_foreach(got, key, v)
        {
            int known = 0;
            for (const struct fair_jfield *f = fair_ktype_pod.filter; f->key; f++)
                known |= strcmp(f->key, key) == 0;
            if (!known)
                fuzz_fail("filtered tree kept key \"%s\"", key);
        }
    } else if (rc != 0 && got) {
        fuzz_fail("filtered failure %d left a tree", rc);
    }
    json_decref(got);
    json_decref(ref);
    return 0;
}
