/* fairsharectl: the command-line tool (also installed as kubectl-fairshare).
 * Each subcommand lives in its own cmd_<name>.c and is listed here. */
#include <stdio.h>
#include <string.h>

#include "base/version.h"

#include "cmd.h"

/* fairsharectl version [-o text|json|yaml] */
static int cmd_version(int argc, char **argv)
{
    const char *o = "text";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: fairsharectl version [-o text|json|yaml]\n\n"
                   "Prints fairsharectl's version, git commit and build date.\n");
            return 0;
        }
        if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) && i + 1 < argc)
            o = argv[++i];
        else if (strncmp(argv[i], "-o=", 3) == 0)
            o = argv[i] + 3;
        else if (strncmp(argv[i], "--output=", 9) == 0)
            o = argv[i] + 9;
        else {
            fprintf(stderr, "fairsharectl version: unknown argument \"%s\"\n", argv[i]);
            return 2;
        }
    }
    /* The strings hold only [0-9A-Za-z.:+-] (version.h): no escaping needed. */
    if (strcmp(o, "json") == 0)
        printf("{\"version\":\"%s\",\"gitCommit\":\"%s\",\"buildDate\":\"%s\"}\n", fair_version,
               fair_git_commit, fair_build_date);
    else if (strcmp(o, "yaml") == 0)
        printf("version: \"%s\"\ngitCommit: \"%s\"\nbuildDate: \"%s\"\n", fair_version,
               fair_git_commit, fair_build_date);
    else if (strcmp(o, "text") == 0)
        fair_version_print(stdout, "fairsharectl");
    else {
        fprintf(stderr, "fairsharectl version: bad -o \"%s\": use text, json or yaml\n", o);
        return 2;
    }
    return 0;
}

static const struct fair_cmd commands[] = {
    {"queues", "every project and its queues: guaranteed, fair share, allocated, pending",
     fair_cmd_queues},
    {"why", "why a pod waits: its condition, its queue's figures, its place", fair_cmd_why},
    {"top", "GPU use now by node and by queue, whole GPUs and fractions", fair_cmd_top},
    {"report", "GPU-hours per team, project, queue or namespace from the ledger", fair_cmd_report},
    {"dashboard", "serve the finance dashboard and report endpoints from a ledger file",
     fair_cmd_dashboard},
    {"ledger", "back up, check or prune the ledger file", fair_cmd_ledger},
    {"simulate", "replay a trace through the engine on a virtual clock", fair_cmd_simulate},
    {"version", "print the version, git commit and build date", cmd_version},
    {"completion", "print a bash or zsh completion script", fair_cmd_completion},
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
    if (strcmp(argv[1], "--version") == 0) {
        fair_version_print(stdout, "fairsharectl");
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "fairsharectl: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return 2;
}
