#!/bin/sh
# Runs shellcheck over every shell script of the repository: scripts/, .ci/run,
# bench/, tests/hosts/ and the bats suites' helpers, each in the shell its
# shebang (or shellcheck directive) names; and the bats suites as bash; and
# scripts/check-andlists.py over the suites.
set -eu
cd "$(dirname "$0")/.."
command -v shellcheck >/dev/null || { echo "check-shell: shellcheck is missing (scripts/deps.sh)"; exit 1; }

status=0
shellcheck scripts/*.sh .ci/run bench/*.sh tests/hosts/*.sh tests/hosts/*.bash tests/cli/*.bash tests/helpers/*.sh || status=1
shellcheck -s bash shell-completion/bash/airlock || status=1
# The suites, as the bash bats runs them in. Left out there:
# SC2030, SC2031: bats runs each @test as a function in a subshell of its
#   own, so a variable set in one is never meant to reach another;
# SC2154: output, stderr, status and lines are set by bats' run;
# SC2016: the single-quoted scripts are for the shell in the quarantine;
# SC2012: `ls -t` picks the newest receipt, and receipts are named by number;
# SC2005: echo "$(rq ...)" logs a value even when reading it fails.
shellcheck -s bash -e SC2030,SC2031,SC2154,SC2016,SC2012,SC2005 tests/cli/*.bats tests/hosts/*.bats || status=1
# An assertion list `[ A ] && [ B ]` in a test checks only B under bats'
# `set -e`: one assertion a line.
python3 scripts/check-andlists.py || status=1
[ "$status" -eq 0 ] || echo "check-shell: findings above"
exit "$status"
