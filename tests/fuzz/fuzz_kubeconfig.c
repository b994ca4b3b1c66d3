/* Fuzzes the kubeconfig reader (fair_kconfig_load_kubeconfig, lib/kube/
 * config.h). It reads a path, so each input is written to a file in a
 * private temporary folder that also holds ca.pem and token, so that
 * relative certificate-authority/tokenFile paths resolve. The first byte
 * picks the context argument (NULL: current-context, or "dev").
 * Properties: success gives an https:// server without a trailing '/' and
 * a non-NULL source; failure gives a message and leaves the struct empty
 * enough to release. Inputs naming /dev, /proc or /sys are skipped: the
 * file is the admin's, and reading a device (/dev/stdin) would just block.
 * fuzz-max-len: 8192 */
#define _GNU_SOURCE /* memmem */
#include <unistd.h>

#include "base/log.h"
#include "kube/config.h"

#include "fuzz.h"

static char dir[64];
static char path[96];

static void put(const char *name, const char *text, size_t n)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f)
        fuzz_fail("cannot write %s", p);
    fwrite(text, 1, n, f);
    fclose(f);
}

static void cleanup(void)
{
    char p[128];
    static const char *const names[] = {"config", "ca.pem", "token"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fair-fuzz-kc-XXXXXX");
        if (!mkdtemp(dir))
            fuzz_fail("mkdtemp failed");
        snprintf(path, sizeof path, "%s/config", dir);
        put("ca.pem", "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n", 58);
        put("token", "tok-123\n", 8);
        atexit(cleanup);
        /* insecure-skip-tls-verify: true logs a warning on every load. */
        fair_log_set_level(FAIR_LOG_ERROR);
    }
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    static const char *const bad[] = {"/dev", "/proc", "/sys"};
    for (size_t i = 0; i < 3; i++)
        if (memmem(text, n, bad[i], strlen(bad[i])))
            return 0;
    put("config", text, n);
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    fair_kconfig_init(&cfg);
    int rc = fair_kconfig_load_kubeconfig(path, (data[0] & 1) ? "dev" : NULL, &cfg, &err);
    if (rc == 0) {
        size_t sl = cfg.server ? strlen(cfg.server) : 0;
        if (sl < 9 || strncmp(cfg.server, "https://", 8) != 0 || cfg.server[sl - 1] == '/')
            fuzz_fail("accepted server \"%s\"", cfg.server ? cfg.server : "(null)");
        if (!cfg.source)
            fuzz_fail("no source");
    } else if (!err.msg[0]) {
        fuzz_fail("failure %d without a message", rc);
    }
    fair_kconfig_release(&cfg);
    return 0;
}
