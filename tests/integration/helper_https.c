/* Integration-test helper: one HTTP(S) request with libcurl
 * (helper_https.h). */
#include "helper_https.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
    struct fair_https_resp *r = ud;
    size_t add = s * n;
    if (add > FAIR_HTTPS_MAX_BODY - r->len)
        return 0; /* curl stops: CURLE_WRITE_ERROR */
    char *b = realloc(r->body, r->len + add + 1);
    if (!b)
        return 0;
    memcpy(b + r->len, p, add);
    r->len += add;
    b[r->len] = '\0';
    r->body = b;
    return add;
}

struct fair_https_resp fair_https_call(const struct fair_https_req *req)
{
    struct fair_https_resp r = {.cc = CURLE_FAILED_INIT};
    r.body = calloc(1, 1);
    assert_non_null(r.body);
    CURL *h = curl_easy_init();
    assert_non_null(h);
    struct curl_slist *hs = NULL;
    for (size_t i = 0; req->headers && req->headers[i]; i++) {
        struct curl_slist *n = curl_slist_append(hs, req->headers[i]);
        assert_non_null(n);
        hs = n;
    }
    if (hs)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(h, CURLOPT_URL, req->url);
    if (req->method)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
    if (req->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    }
    /* No CA given: trust none (not the system's), so that a server whose
     * certificate is not checked against a CA of the test never passes. */
    curl_easy_setopt(h, CURLOPT_CAINFO, req->ca_file ? req->ca_file : "/nonexistent-ca-file");
    curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms > 0 ? req->timeout_ms : 10000L);
    r.cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.code);
    curl_slist_free_all(hs);
    curl_easy_cleanup(h);
    return r;
}

void fair_https_resp_free(struct fair_https_resp *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}
