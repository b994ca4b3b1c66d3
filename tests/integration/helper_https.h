/* Integration-test helper: one HTTP(S) request with libcurl, as a client
 * of an in-process server of lib/httpd (the webhook, the authorised
 * endpoints) sends it: the server's certificate is verified against one
 * CA file only, the answer's status and body are kept. Used by
 * test_webhook and test_httpd_auth. The caller runs curl_global_init(). */
#ifndef FAIR_TEST_HELPER_HTTPS_H
#define FAIR_TEST_HELPER_HTTPS_H

#include <curl/curl.h>
#include <stddef.h>

/* A body over this is cut off: the request ends with CURLE_WRITE_ERROR. */
#define FAIR_HTTPS_MAX_BODY (4u << 20)

struct fair_https_req {
    const char *method;         /* NULL: GET */
    const char *url;            /* http:// or https:// */
    const char *const *headers; /* header lines, NULL-terminated; NULL: none */
    const char *body;           /* NULL: none */
    size_t body_len;
    const char *ca_file; /* the only CAs trusted; NULL: none at all */
    long timeout_ms;     /* the whole request; 0: 10 s */
};

struct fair_https_resp {
    CURLcode cc; /* curl's result: CURLE_OK once an answer was read */
    long code;   /* the HTTP status; 0: none */
    char *body;  /* the answer's body, '\0'-terminated (never NULL) */
    size_t len;
};

/* Sends req and waits for the answer; fails the running test when memory
 * runs out. Free the answer with fair_https_resp_free(). */
struct fair_https_resp fair_https_call(const struct fair_https_req *req);

void fair_https_resp_free(struct fair_https_resp *r);

#endif
