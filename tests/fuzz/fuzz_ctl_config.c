/* Fuzzes the controller's config file reader (fair_ctl_config_load_text,
 * lib/ctl/config.h), then fair_ctl_config_check on what it accepted.
 * Properties: failure carries a message naming what failed; a loaded
 * config keeps its required strings (schedulerName, lease name) set.
 * fuzz-max-len: 8192 */
#include "ctl/config.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fair_ctl_config c;
    struct fair_error err = {0};
    if (fair_ctl_config_init(&c) != 0)
        fuzz_fail("init failed");
    int rc = fair_ctl_config_load_text(&c, "fuzz.yaml", (const char *)data, size, &err);
    if (rc == 0) {
        if (!c.scheduler_name || !c.lease_name || !c.lease_namespace)
            fuzz_fail("loaded config lost a string");
        memset(&err, 0, sizeof err);
        rc = fair_ctl_config_check(&c, &err);
    }
    if (rc != 0 && !err.msg[0])
        fuzz_fail("failure %d without a message", rc);
    fair_ctl_config_release(&c);
    return 0;
}
