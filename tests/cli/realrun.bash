# shellcheck shell=bash disable=SC2154,SC2034 # output, stderr, status: set by bats' run; the variables set here are the caller's
# The dry run against the real thing (sourced by apply.bats and
# readtrace.bats): a script run for real on a copy of $WORK and as a dry
# run applied to $WORK give the same tree, hard-link groups and user.*
# attributes; the rollback gives back the tree before.

snap() { # the tree: names, types, modes, sizes, link targets, contents
	(cd "$WORK" && find . -printf '%p %y %m %s %l\n' | sort &&
		find . -type f -print0 | sort -z | xargs -0r sha256sum)
}

snap_links() { # snap, and the hard-link groups inside the tree
	(cd "$WORK" && find . ! -type d -printf '%i %p\n' | sort -k2 |
		awk '{ g[$1] = g[$1] " " $2; n[$1]++ } END { for (i in g) if (n[i] > 1) print g[i] }' | sort) && snap
}

snap_xattrs() { # the user.* extended attributes, when the tools are there
	command -v getfattr >/dev/null || return 0
	(cd "$WORK" && getfattr -R -h -d -m '^user\.' . 2>/dev/null)
}

real_sh() { # the real run by default: the script in a shell of the caller's
	sh -c "$1"
}

# $1: the script; $2: the view of the tree compared (default snap; the
# hard-link groups and user.* attributes are compared whatever it is); $3:
# how the real run runs the script in its copy (default real_sh). The tree
# is set up in $WORK already.
real_vs_apply() {
	local real="$TEST_DIR/real" view=${2:-snap} real_run=${3:-real_sh}
	rm -rf "$real"
	cp -a "$WORK" "$real"
	(cd "$real" && "$real_run" "$1")
	before=$($view)
	xattrs_before=$(snap_xattrs)
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' --expect-delete '**' -- sh -c "$1"
	[ "$status" -eq 0 ] || { echo "dryrun: $status $output $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	receipt_json=$output # the dry run's receipt, for the caller
	[ "$($view)" = "$before" ] || { echo "the dry run changed the workspace"; return 1; }
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "apply: $status $stderr"; return 1; }
	[ "$view" = snap ] || diff <($view) <(WORK=$real $view) # snap_links holds snap
	diff <(snap_links) <(WORK=$real snap_links)
	diff <(snap_xattrs) <(WORK=$real snap_xattrs)
	al rollback "$ID"
	[ "$status" -eq 0 ] || { echo "rollback: $status $stderr"; return 1; }
	[ "$($view)" = "$before" ]
	[ "$(snap_xattrs)" = "$xattrs_before" ]
}
