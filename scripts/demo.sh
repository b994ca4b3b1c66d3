#!/bin/sh
# make demo: runs the demo binary from the given build folder.
set -eu
build="${1:-build}"
exec "$build/controller/fairshare-demo"
