/* fairsharectl: the command-line tool (also installed as kubectl-fairshare).
 * Each subcommand lives in its own cmd_<name>.c and is listed here. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

static const struct fair_cmd commands[] = {
    {"report", "GPU-hours per team, project, queue or namespace from the ledger",
     fair_cmd_report},
    {"dashboard", "serve the finance dashboard and report endpoints from a ledger file",
     fair_cmd_dashboard},
    {"ledger", "back up, check or prune the ledger file", fair_cmd_ledger},
    {"simulate", "replay a trace through the engine on a virtual clock", fair_cmd_simulate},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: fairsharectl <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nRun 'fairsharectl <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "fairsharectl: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return 2;
}
