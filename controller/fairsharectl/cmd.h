/* fairsharectl's subcommands. Each returns the process exit status:
 * 0 success, 1 failure while running, 2 bad usage (with a usage message). */
#ifndef FAIR_CTL_CMD_H
#define FAIR_CTL_CMD_H

struct fair_cmd {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand's name */
};

int fair_cmd_report(int argc, char **argv);
int fair_cmd_simulate(int argc, char **argv);
int fair_cmd_dashboard(int argc, char **argv);
int fair_cmd_ledger(int argc, char **argv);

#endif
