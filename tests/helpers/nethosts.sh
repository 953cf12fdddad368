#!/bin/sh
# nethosts.sh HOSTS COMMAND...: runs COMMAND with the file HOSTS over
# /etc/hosts, in a private mount namespace of its own (docs/network.md,
# "Test plan"), so that the names of tests/cli/netallow.bats resolve to the
# local servers for airlock's proxy, a child of the supervisor, and for
# nothing else on the host. COMMAND runs as the caller's own uid: as root in
# the host's user namespace (`unshare -m`); otherwise in a user namespace
# that maps the caller to root for the mount (`unshare -Urm`), then, nested
# in it, one that maps the caller back to its own uid and gid, so that
# COMMAND (airlock) runs unprivileged as before, with no capability.
set -eu
hosts=$1
shift
if [ "$(id -u)" -eq 0 ]; then
	# shellcheck disable=SC2016 # the single-quoted script is for the sh it starts
	exec unshare -m --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$hosts" "$@"
fi
# shellcheck disable=SC2016 # the single-quoted script is for the sh it starts
exec unshare -Urm --propagation private sh -c \
	'u=$1 g=$2 && shift 2 && mount --bind "$0" /etc/hosts && exec unshare --map-user="$u" --map-group="$g" "$@"' \
	"$hosts" "$(id -u)" "$(id -g)" "$@"
