/* fairsharectl completion bash|zsh: a shell completion script for
 * fairsharectl and kubectl-fairshare, printed to stdout (as `kubectl
 * completion` does). Commands, their flags, and the values of the flags
 * that take a fixed set; file names where a flag takes a file. zsh uses the
 * same function through bashcompinit. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

static const char bash_script[] =
    "# fairsharectl completion for bash (and zsh through bashcompinit).\n"
    "#   source <(fairsharectl completion bash)\n"
    "_fairsharectl() {\n"
    "  local cur prev cmd i\n"
    "  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
    "  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
    "  COMPREPLY=()\n"
    "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
    "    COMPREPLY=($(compgen -W \"queues why top report dashboard ledger simulate version "
    "completion --version --help\" -- \"$cur\"))\n"
    "    return 0\n"
    "  fi\n"
    "  cmd=\"${COMP_WORDS[1]}\"\n"
    "  case \"$prev\" in\n"
    "    -o|--output)\n"
    "      if [ \"$cmd\" = queues ] || [ \"$cmd\" = top ]; then COMPREPLY=($(compgen -W \"table "
    "wide json yaml\" -- "
    "\"$cur\"))\n"
    "      elif [ \"$cmd\" = report ]; then COMPREPLY=($(compgen -W \"table csv json\" -- "
    "\"$cur\"))\n"
    "      elif [ \"$cmd\" = version ]; then COMPREPLY=($(compgen -W \"text json yaml\" -- "
    "\"$cur\"))\n"
    "      else COMPREPLY=($(compgen -W \"table json yaml\" -- \"$cur\")); fi\n"
    "      return 0 ;;\n"
    "    --format) COMPREPLY=($(compgen -W \"table csv json\" -- \"$cur\")); return 0 ;;\n"
    "    --by) COMPREPLY=($(compgen -W \"team project queue namespace user team,model "
    "project,model queue,model namespace,model\" -- \"$cur\")); return 0 "
    ";;\n"
    "    --unit) COMPREPLY=($(compgen -W \"hours days\" -- \"$cur\")); return 0 ;;\n"
    "    --from|--to) COMPREPLY=($(compgen -W \"today yesterday -7d -30d this-month "
    "last-month\" -- \"$cur\")); return 0 ;;\n"
    "    --tz) COMPREPLY=($(compgen -W \"UTC +01:00 -05:00 Europe/Berlin America/New_York\" "
    "-- \"$cur\")); return 0 ;;\n"
    "    --kubeconfig|--db|--price-table|--ca-file|--token-file|--out|--nodes|--pods|--jobs|"
    "--projects|--compare)\n"
    "      COMPREPLY=($(compgen -f -- \"$cur\")); return 0 ;;\n"
    "    -n|--namespace|--context|--server|--token|--listen|--price-per-gpu-hour) return 0 ;;\n"
    "  esac\n"
    "  case \"$cmd\" in\n"
    "    queues) COMPREPLY=($(compgen -W \"-n --namespace -A --all-namespaces -o --output "
    "--kubeconfig --context --help\" -- \"$cur\")) ;;\n"
    "    top) COMPREPLY=($(compgen -W \"-n --namespace -A --all-namespaces -o --output "
    "--kubeconfig --context --help\" -- \"$cur\")) ;;\n"
    "    why) COMPREPLY=($(compgen -W \"-n --namespace -o --output --kubeconfig --context "
    "--help\" -- \"$cur\")) ;;\n"
    "    report) COMPREPLY=($(compgen -W \"--from --to --tz --by -o --output --format --unit "
    "--percent "
    "--db --server --via-apiserver --controller-namespace --controller-port "
    "--price-per-gpu-hour --price-table --token --token-file --kubeconfig "
    "--context --ca-file --insecure-skip-tls-verify --help\" -- \"$cur\")) ;;\n"
    "    dashboard) COMPREPLY=($(compgen -W \"--db --server --via-apiserver "
    "--controller-namespace --controller-port --listen --token --token-file "
    "--kubeconfig --context --ca-file --insecure-skip-tls-verify --help\" -- \"$cur\")) ;;\n"
    "    ledger)\n"
    "      if [ \"$COMP_CWORD\" -eq 2 ]; then COMPREPLY=($(compgen -W \"backup check prune\" "
    "-- \"$cur\"))\n"
    "      else COMPREPLY=($(compgen -W \"--db --out --retention --now --help\" -- \"$cur\")); "
    "fi ;;\n"
    "    simulate) COMPREPLY=($(compgen -W \"--nodes --pods --jobs --projects --compare "
    "--placement --out --speedup --horizon-hours --fragmentation --help\" -- \"$cur\")) ;;\n"
    "    version) COMPREPLY=($(compgen -W \"-o --output --help\" -- \"$cur\")) ;;\n"
    "    completion) [ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W \"bash zsh\" -- "
    "\"$cur\")) ;;\n"
    "  esac\n"
    "  return 0\n"
    "}\n"
    "complete -o default -F _fairsharectl fairsharectl kubectl-fairshare\n";

static void usage(FILE *f)
{
    fprintf(f, "usage: fairsharectl completion bash|zsh\n\n"
               "Prints a completion script for fairsharectl and kubectl-fairshare:\n"
               "  source <(fairsharectl completion bash)    # in ~/.bashrc\n"
               "  source <(fairsharectl completion zsh)     # in ~/.zshrc\n");
}

int fair_cmd_completion(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc != 2 || (strcmp(argv[1], "bash") != 0 && strcmp(argv[1], "zsh") != 0)) {
        fprintf(stderr, "fairsharectl completion: give the shell: bash or zsh\n\n");
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "zsh") == 0)
        fputs("# fairsharectl completion for zsh: the bash function through bashcompinit.\n"
              "autoload -U +X compinit && compinit\n"
              "autoload -U +X bashcompinit && bashcompinit\n",
              stdout);
    fputs(bash_script, stdout);
    return 0;
}
