/* Fuzzes the JSON decoders of lib/kube/decode.h (Pod, Node, Project,
 * Queue, the two PodGroups, Status). The first byte picks the kind; the
 * rest is the object.
 * Properties: a failed decode returns FAIR_EINVAL/FAIR_ERANGE with a
 * message and no object; a decoded object has a name; and decoding the
 * tree built through the kind's field filter (kube/jsonfilter.h, the watch
 * path) gives the same result code and name as decoding the whole tree
 * (the filter keeps every field the decoder reads).
 * fuzz-max-len: 8192 */
#include "kube/decode.h"

#include "fuzz.h"

static const struct fair_ktype *const kinds[] = {
    &fair_ktype_pod,         &fair_ktype_node,        &fair_ktype_project,  &fair_ktype_queue,
    &fair_ktype_sp_podgroup, &fair_ktype_vc_podgroup, &fair_ktype_namespace};

static int decode(const struct fair_ktype *k, const json_t *j, char *name, size_t n)
{
    void *obj = NULL;
    struct fair_error err = {0};
    int rc = k->decode(j, &obj, &err);
    if (rc == 0) {
        const char *nm = fair_kobj_meta(obj)->name;
        if (!obj || !nm || !nm[0])
            fuzz_fail("%s decoded without a name", k->kind);
        snprintf(name, n, "%s", nm);
        k->free(obj);
    } else {
        if (obj)
            fuzz_fail("%s decode failed (%d) but returned an object", k->kind, rc);
        if (rc != FAIR_EINVAL && rc != FAIR_ERANGE)
            fuzz_fail("%s decode returned %d", k->kind, rc);
        if (!err.msg[0])
            fuzz_fail("%s decode failed (%d) without a message", k->kind, rc);
        name[0] = '\0';
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned pick = data[0] % 7; /* 0-3, 5-6: kinds; 4: Status */
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    json_t *whole = json_loadb(s, n, JSON_DECODE_ANY, NULL);
    if (pick == 4) {
        struct fair_kstatus st;
        if (whole && fair_kstatus_decode(whole, &st) == 0) {
            if (strnlen(st.reason, sizeof st.reason) >= sizeof st.reason ||
                strnlen(st.message, sizeof st.message) >= sizeof st.message)
                fuzz_fail("status strings not terminated");
        }
        json_decref(whole);
        return 0;
    }
    const struct fair_ktype *k = kinds[pick < 4 ? pick : pick - 1];
    json_t *part = NULL;
    int prc = fair_json_parse_filtered(s, n, k->filter, &part, NULL);
    char n1[256], n2[256];
    int rc1 = whole ? decode(k, whole, n1, sizeof n1) : 1;
    int rc2 = prc == 0 ? decode(k, part, n2, sizeof n2) : 1;
    if (whole && prc == 0 && (rc1 != rc2 || strcmp(n1, n2) != 0))
        fuzz_fail("%s: whole tree gives %d \"%s\", filtered tree %d \"%s\"", k->kind, rc1, n1, rc2,
                  n2);
    json_decref(whole);
    json_decref(part);
    return 0;
}
