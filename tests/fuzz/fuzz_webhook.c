/* Fuzzes fair_webhook_review (lib/httpd/webhook.h), which reads the
 * AdmissionReview the API server posts to the GPU env webhook: whoever can
 * reach webhook.address chooses the bytes. The input is the body as
 * lib/httpd hands it (not NUL-terminated).
 * Properties: it returns 0 (the output buffer is large enough); the answer
 * is always one JSON object of kind AdmissionReview with a response; the
 * HTTP status is 200 or 400, 400 exactly when the outcome is MALFORMED and
 * then allowed is false; a patch appears only for PATCHED or UNCHANGED,
 * and then patchType is JSONPatch and it decodes to a JSON array of "add"
 * operations.
 * fuzz-max-len: 65536 */
#include <jansson.h>
#include <openssl/evp.h>

#include "base/buf.h"
#include "httpd/webhook.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size ? size : 1);
    if (!body)
        abort();
    memcpy(body, data, size);
    struct fair_webhook_options o = {.scheduler_name = "fairshare",
                                     .cuda_visible_devices = size % 2 == 1};
    struct fair_buf out;
    struct fair_webhook_result res;
    fair_buf_init(&out, 0);
    if (fair_webhook_review(&o, body, size, &out, &res) != 0)
        fuzz_fail("fair_webhook_review failed");
    json_t *ans = json_loadb(fair_buf_str(&out), out.len, 0, NULL);
    const json_t *resp = json_object_get(ans, "response");
    if (!ans || !json_is_object(resp) ||
        strcmp(json_string_value(json_object_get(ans, "kind")) ?: "", "AdmissionReview") != 0)
        fuzz_fail("the answer is not an AdmissionReview: %s", fair_buf_str(&out));
    if ((res.status == 400) != (res.outcome == FAIR_WEBHOOK_MALFORMED) ||
        (res.status != 200 && res.status != 400))
        fuzz_fail("status %d for outcome %d", res.status, (int)res.outcome);
    if (res.status == 400 && !json_is_false(json_object_get(resp, "allowed")))
        fuzz_fail("a malformed review was allowed");
    if (res.status == 200 && !json_is_true(json_object_get(resp, "allowed")))
        fuzz_fail("a review was denied");
    const char *patch = json_string_value(json_object_get(resp, "patch"));
    bool may_patch = res.outcome == FAIR_WEBHOOK_PATCHED || res.outcome == FAIR_WEBHOOK_UNCHANGED;
    if (patch && !may_patch)
        fuzz_fail("a patch for outcome %d", (int)res.outcome);
    if (may_patch) {
        if (!patch)
            fuzz_fail("no patch for outcome %d", (int)res.outcome);
        size_t n = strlen(patch);
        unsigned char *raw = calloc(1, n + 1);
        if (!raw)
            abort();
        int m = EVP_DecodeBlock(raw, (const unsigned char *)patch, (int)n);
        while (m > 0 && raw[m - 1] == '\0')
            m--;
        json_t *ops = m > 0 ? json_loadb((const char *)raw, (size_t)m, 0, NULL) : NULL;
        size_t i;
        json_t *op;
        if (!json_is_array(ops) || json_array_size(ops) == 0)
            fuzz_fail("the patch is not a list of operations");
        json_array_foreach(ops, i, op)
        {
            if (strcmp(json_string_value(json_object_get(op, "op")) ?: "", "add") != 0)
                fuzz_fail("an operation other than add");
        }
        json_decref(ops);
        free(raw);
    }
    json_decref(ans);
    fair_buf_release(&out);
    free(body);
    return 0;
}
