/* Fuzzes fair_ctl_parse_address (lib/ctl/config.h): metricsAddress in the
 * config file and --listen on the command line. The first byte sets the
 * size of the host buffer (the parser needs at least 256; 256 to 511
 * here, in a buffer with a guard byte after it).
 * Properties: the parser accepts exactly what Go's net.SplitHostPort
 * accepts (an IPv6 host only in brackets; no stray bracket or colon),
 * with a port of digits only, at most 65535, a host shorter than the
 * buffer, and ":port" meaning 0.0.0.0; it gives the same host and port;
 * a refusal carries a message; the host buffer is always terminated and
 * never written past.
 * fuzz-max-len: 1024 */
#include "ctl/config.h"

#include "fuzz.h"

/* net.SplitHostPort, then the project's rules for the port and the empty
 * host. Returns 0 with host/port, or -1. */
static int model(const char *a, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(a, ':');
    if (!colon)
        return -1;
    const char *h = a, *he = colon;
    if (a[0] == '[') {
        const char *end = strchr(a, ']');
        if (!end || end + 1 != colon) /* "]" must come just before the last ':' */
            return -1;
        h = a + 1;
        he = end;
    }
    for (const char *p = h; p < he; p++)
        if (*p == '[' || *p == ']' || (a[0] != '[' && *p == ':'))
            return -1;
    for (const char *p = colon + 1; *p; p++)
        if (*p == '[' || *p == ']')
            return -1;
    size_t hl = (size_t)(he - h);
    if (hl >= hostlen)
        return -1;
    const char *p = colon + 1;
    if (!*p)
        return -1;
    long v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
        if (v > 65535)
            return -1;
    }
    if (hl == 0) {
        snprintf(host, hostlen, "0.0.0.0");
    } else {
        memcpy(host, h, hl);
        host[hl] = '\0';
    }
    *port = (int)v;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t hostlen = 256 + data[0];
    char *addr = fuzz_cstr(data + 1, size - 1, 2048);
    char *host = malloc(hostlen + 1);
    char want_host[512];
    if (!host)
        abort();
    memset(host, '#', hostlen + 1);
    int port = -1, want_port = -1;
    struct fair_error err = {0};
    int rc = fair_ctl_parse_address(addr, host, hostlen, &port, &err);
    int mrc = model(addr, want_host, hostlen, &want_port);
    if (host[hostlen] != '#')
        fuzz_fail("\"%s\": wrote past the host buffer", addr);
    if ((rc == 0) != (mrc == 0))
        fuzz_fail("\"%s\": parser %d (%s), Go's SplitHostPort %d", addr, rc, err.msg, mrc);
    if (rc == 0) {
        if (!memchr(host, '\0', hostlen))
            fuzz_fail("\"%s\": host not terminated", addr);
        if (strcmp(host, want_host) != 0 || port != want_port)
            fuzz_fail("\"%s\": host \"%s\" port %d, want \"%s\" %d", addr, host, port, want_host,
                      want_port);
    } else if (!err.msg[0]) {
        fuzz_fail("\"%s\": failure %d without a message", addr, rc);
    }
    free(host);
    free(addr);
    return 0;
}
