#!/bin/sh
# Runs the live host suite: installs the pinned hosts (once; build-hosts/)
# and runs tests/hosts/live.bats against build-gcc/airlock, or $AIRLOCK.
# usage: tests/hosts/run.sh [BATS OPTIONS...]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
"$top/tests/hosts/install.sh" "$top/build-hosts"
export AIRLOCK="${AIRLOCK:-$top/build-gcc/airlock}" AIRLOCK_HOSTS="$top/build-hosts"
exec bats "$@" "$top/tests/hosts/live.bats"
