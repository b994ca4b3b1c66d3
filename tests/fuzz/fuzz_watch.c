/* Fuzzes the watch stream (lib/kube/watch.h): the framer is fed the input
 * in chunks whose sizes come from the first byte, and each complete line is
 * decoded as an event, unfiltered and through the Pod filter. Properties:
 * the lines handed out are the same whatever the chunking (their total
 * length and count match a one-chunk feed), no line holds a '\n' or exceeds
 * max_event, a parsed event's type name is known, and ERROR events carry
 * non-NULL reason and message.
 * fuzz-max-len: 8192 */
#include "kube/decode.h"
#include "kube/watch.h"

#include "fuzz.h"

#define MAX_EVENT 2048

struct tally {
    size_t lines, bytes;
    int parse; /* also decode each line */
};

static int on_line(const char *line, size_t len, void *ctx)
{
    struct tally *t = ctx;
    if (len == 0 || len > MAX_EVENT || memchr(line, '\n', len))
        fuzz_fail("framer handed out a bad line of %zu bytes", len);
    t->lines++;
    t->bytes += len;
    if (!t->parse)
        return 0;
    for (int filtered = 0; filtered < 2; filtered++) {
        struct fair_kwatch_event ev;
        json_t *root = NULL;
        struct fair_error err = {0};
        int rc = filtered ? fair_kwatch_event_parse_filtered(line, len, fair_ktype_pod.filter, &ev,
                                                             &root, &err)
                          : fair_kwatch_event_parse(line, len, &ev, &root, &err);
        if (rc == 0) {
            if (!fair_kwatch_type_name(ev.type))
                fuzz_fail("event type %d has no name", (int)ev.type);
            if (ev.type == FAIR_KWATCH_ERROR && (!ev.reason || !ev.message))
                fuzz_fail("ERROR event without reason or message");
            json_decref(root);
        } else if (root) {
            fuzz_fail("failed parse (%d) left a document", rc);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t chunk = (size_t)data[0] % 37 + 1;
    const char *body = (const char *)data + 1;
    size_t n = size - 1;

    /* Reference: everything in one feed. */
    struct fair_kframer f;
    struct tally whole = {0, 0, 0};
    fair_kframer_init(&f, MAX_EVENT);
    int rc_whole = fair_kframer_feed(&f, body, n, on_line, &whole, NULL);
    size_t pend_whole = fair_kframer_pending(&f);
    fair_kframer_release(&f);

    struct tally split = {0, 0, 1};
    struct fair_error err = {0};
    int rc = 0;
    fair_kframer_init(&f, MAX_EVENT);
    for (size_t off = 0; off < n && rc == 0; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        rc = fair_kframer_feed(&f, body + off, k, on_line, &split, &err);
    }
    if (rc == 0 && rc_whole == 0) {
        if (split.lines != whole.lines || split.bytes != whole.bytes ||
            fair_kframer_pending(&f) != pend_whole)
            fuzz_fail("chunks of %zu: %zu lines/%zu bytes, one feed: %zu/%zu", chunk, split.lines,
                      split.bytes, whole.lines, whole.bytes);
    } else if ((rc == 0) != (rc_whole == 0)) {
        fuzz_fail("chunks of %zu gave %d, one feed %d", chunk, rc, rc_whole);
    } else if (rc != FAIR_ERANGE || !err.msg[0]) {
        fuzz_fail("unexpected failure %d", rc);
    }
    fair_kframer_release(&f);
    return 0;
}
