/* fairsharectl ledger: operations on the ledger file (online backup,
 * integrity check, pruning). See docs/operations.md, "Ledger backup". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "ledger/ledger.h"

#include "cmd.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: fairsharectl ledger backup --db FILE --out FILE\n"
               "       fairsharectl ledger check --db FILE\n"
               "       fairsharectl ledger prune --db FILE [--retention DAYSd] [--now RFC3339]\n"
               "\n"
               "backup copies a consistent snapshot while the controller keeps writing.\n"
               "check runs PRAGMA integrity_check and prints counts (exit 1 if damaged).\n"
               "prune deletes raw rows older than the retention (default 400d); reports\n"
               "for periods that start and end at UTC midnight stay exact.\n");
}

int fair_cmd_ledger(int argc, char **argv)
{
    const char *db = NULL, *out = NULL, *retention = NULL, *now_s = NULL, *verb = NULL;
    struct fair_error err = {0};
    struct fair_ledger *l = NULL;
    int rc = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        const char **slot = strcmp(a, "--db") == 0          ? &db
                            : strcmp(a, "--out") == 0       ? &out
                            : strcmp(a, "--retention") == 0 ? &retention
                            : strcmp(a, "--now") == 0       ? &now_s
                                                            : NULL;
        if (slot && i + 1 < argc && !*slot) {
            *slot = argv[++i];
        } else if (!slot && !verb && a[0] != '-') {
            verb = a;
        } else {
            fprintf(stderr, "fairsharectl ledger: bad argument \"%s\"\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    int is_backup = verb && strcmp(verb, "backup") == 0;
    int is_check = verb && strcmp(verb, "check") == 0;
    int is_prune = verb && strcmp(verb, "prune") == 0;
    if (!(is_backup || is_check || is_prune) || !db || (is_backup && !out) || (!is_backup && out) ||
        (!is_prune && (retention || now_s))) {
        fprintf(stderr, "fairsharectl ledger: %s\n\n",
                !verb ? "missing action (backup, check or prune)" : "bad or missing options");
        usage(stderr);
        return 2;
    }
    struct fair_ledger_options o;
    fair_ledger_options_init(&o);
    o.path = db;
    o.readonly = !is_prune;
    if (retention) {
        char *end = NULL;
        long days = strtol(retention, &end, 10);
        if (end == retention || strcmp(end, "d") != 0 || days < 1 || days > 36500) {
            fprintf(stderr, "fairsharectl ledger: bad --retention \"%s\": use e.g. 400d\n\n",
                    retention);
            usage(stderr);
            return 2;
        }
        o.retention_ms = days * FAIR_LEDGER_DAY_MS;
    }
    int64_t now = fair_now_ms(fair_clock_system());
    if (now_s && fair_time_parse_rfc3339(now_s, &now)) {
        fprintf(stderr, "fairsharectl ledger: bad --now \"%s\"\n\n", now_s);
        usage(stderr);
        return 2;
    }
    if (fair_ledger_open(&o, &l, &err))
        goto fail;
    if (is_backup) {
        if (fair_ledger_backup(l, out, &err))
            goto fail;
        printf("backed up %s to %s\n", db, out);
        rc = 0;
    } else if (is_check) {
        struct fair_ledger_check c;
        char hb[40] = "-", first[40] = "-", last[40] = "-";
        if (fair_ledger_check(l, &c, &err))
            goto fail;
        if (c.heartbeat_ms)
            fair_time_format_rfc3339(c.heartbeat_ms, hb, sizeof(hb));
        if (c.first_start_ms)
            fair_time_format_rfc3339(c.first_start_ms, first, sizeof(first));
        if (c.last_end_ms)
            fair_time_format_rfc3339(c.last_end_ms, last, sizeof(last));
        printf("integrity: %s\nschema_version: %d\nintervals: %" PRId64 " (%" PRId64 " open)\n"
               "samples: %" PRId64 "\nrollup_days: %" PRId64 "\nfirst_start: %s\n"
               "last_end: %s\nheartbeat: %s\n",
               c.ok ? "ok" : c.detail, c.schema_version, c.intervals, c.open_intervals, c.samples,
               c.rollup_days, first, last, hb);
        rc = c.ok ? 0 : 1;
    } else {
        int64_t deleted = 0;
        if (fair_ledger_prune(l, now, &deleted, &err))
            goto fail;
        printf("pruned %" PRId64 " rows\n", deleted);
        rc = 0;
    }
    goto out;
fail:
    fprintf(stderr, "fairsharectl ledger: %s\n", err.msg);
    rc = 1;
out:
    fair_ledger_free(l);
    return rc;
}
