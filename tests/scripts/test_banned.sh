#!/bin/sh
# The conventions ban unbounded string and number calls (CONVENTIONS.md:
# strcpy, strcat, sprintf, strtok, atoi, gets; and their kin vsprintf,
# atol, atoll). Fails, naming file and line, when one is called in the C
# sources. Usage: test_banned.sh SRC_DIR
set -eu
src="$1"
found="$(cd "$src" && grep -rnE --include='*.c' --include='*.h' \
    '(^|[^A-Za-z0-9_])(strcpy|strcat|sprintf|vsprintf|strtok|atoi|atol|atoll|gets)\(' \
    lib controller tests bench 2>/dev/null || true)"
if [ -n "$found" ]; then
    echo "banned calls (use snprintf, strtol/strtoll with checks, strtok_r or a parser):" >&2
    echo "$found" >&2
    exit 1
fi
echo "no banned calls"
