/* Fuzzes the streamed List parser (lib/kube/liststream.h). The first byte
 * sets the chunk size (1 to 256), the rest is the List. The stream must
 * not crash, every failure carries a message, an item's kept text is
 * never over the cap, and a failed stream is never a List that jansson
 * reads (NUL bytes, which jansson lets through between tokens, and
 * duplicate keys aside: jansson is run with
 * JSON_REJECT_DUPLICATES, since the stream refuses two "items" members).
 * When jansson reads the input, the stream hands out as many items, and
 * each item it hands out whole parses (with the Pod filter) to what the
 * filtered parser makes of that item alone; the stream may read an item
 * the filtered parser refuses only for depth in skipped parts, which the
 * stream does not limit (it holds nothing there).
 * fuzz-max-len: 16384 */
#include "kube/decode.h"
#include "kube/jsonfilter.h"
#include "kube/liststream.h"

#include "fuzz.h"

#define MAX_ITEM 2048

struct ctx {
    json_t *items; /* jansson's items, or NULL */
    size_t n;
};

static int on_item(const struct fair_klist_item *it, void *arg)
{
    struct ctx *c = arg;
    c->n++;
    if (!it->oversized && (!it->json || it->len > MAX_ITEM))
        fuzz_fail("kept text missing or over the cap");
    json_t *mine = NULL;
    int mrc = 1;
    if (!it->oversized)
        mrc = fair_json_parse_filtered(it->json, it->len, fair_ktype_pod.filter, &mine, NULL);
    json_t *item = json_array_get(c->items, it->index);
    if (c->items && !item)
        fuzz_fail("item %zu that jansson does not have", it->index);
    if (item) {
        char *text = json_dumps(item, JSON_COMPACT | JSON_ENCODE_ANY);
        json_t *ref = NULL;
        int rrc =
            text ? fair_json_parse_filtered(text, strlen(text), fair_ktype_pod.filter, &ref, NULL)
                 : FAIR_ENOMEM;
        free(text);
        if (!it->oversized) {
            if (rrc == 0 && mrc == 0 && !json_equal(ref, mine))
                fuzz_fail("item %zu: stream and filtered parse differ", it->index);
            if (rrc == 0 && mrc != 0)
                fuzz_fail("item %zu: kept text does not parse", it->index);
            if (rrc != 0 && mrc == 0 && rrc != FAIR_ERANGE)
                fuzz_fail("item %zu: stream read what the parser refuses (%d)", it->index, rrc);
        }
        json_decref(ref);
    }
    json_decref(mine);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = (size_t)data[0] + 1;
    const char *s = (const char *)data + 1;
    size_t len = size - 1;
    /* A List with two "items" members is refused by the stream; jansson
     * would keep the last one, so such documents are not compared. */
    json_t *whole = json_loadb(s, len, JSON_REJECT_DUPLICATES, NULL);
    struct ctx c = {.items = json_is_array(json_object_get(whole, "items"))
                                 ? json_object_get(whole, "items")
                                 : NULL};
    struct fair_kliststream *ls = NULL;
    if (fair_kliststream_new(fair_ktype_pod.filter, fair_kskeleton_filter, MAX_ITEM, on_item, &c,
                             &ls))
        abort();
    struct fair_error err = {0};
    int rc = 0;
    for (size_t off = 0; off < len && !rc; off += step)
        rc = fair_kliststream_feed(ls, s + off, len - off < step ? len - off : step, &err);
    const char *meta = NULL;
    size_t mlen = 0;
    if (!rc)
        rc = fair_kliststream_finish(ls, &meta, &mlen, &err);
    if (rc) {
        if (rc != FAIR_EPARSE && rc != FAIR_ERANGE && rc != FAIR_ENOMEM)
            fuzz_fail("unexpected code %d", rc);
        if (!err.msg[0])
            fuzz_fail("failure %d without a message", rc);
    } else {
        /* The list's own fields are kept verbatim and validated only by
         * this parse (the client's too): bad UTF-8 in them, say, fails it. */
        json_t *m = NULL;
        if (fair_json_parse_filtered(meta, mlen, NULL, &m, NULL) && whole)
            fuzz_fail("list metadata does not parse");
        if (json_object_get(m, "items"))
            fuzz_fail("list metadata holds items");
        json_decref(m);
        if (c.items && c.n != json_array_size(c.items))
            fuzz_fail("%zu items, jansson has %zu", c.n, json_array_size(c.items));
    }
    /* jansson reads a NUL byte between tokens as nothing; JSON has none. */
    if (whole && json_is_object(whole) && rc == FAIR_EPARSE && !memchr(s, '\0', len))
        fuzz_fail("refused a List jansson reads: %s", err.msg);
    fair_kliststream_free(ls);
    json_decref(whole);
    return 0;
}
