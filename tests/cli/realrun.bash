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

real_vs_apply() { # $1: the script; the tree is set up in $WORK already
	local real="$TEST_DIR/real"
	rm -rf "$real"
	cp -a "$WORK" "$real"
	(cd "$real" && sh -c "$1")
	before=$(snap)
	xattrs_before=$(snap_xattrs)
	run --separate-stderr "$AIRLOCK" dryrun --json --expect '**' --expect-delete '**' -- sh -c "$1"
	[ "$status" -eq 0 ] || { echo "dryrun: $status $output $stderr"; return 1; }
	ID=$(jq -r .id <<<"$output")
	receipt_json=$output # the dry run's receipt, for the caller
	al apply "$ID"
	[ "$status" -eq 0 ] || { echo "apply: $status $stderr"; return 1; }
	diff <(snap_links) <(WORK=$real snap_links)
	diff <(snap_xattrs) <(WORK=$real snap_xattrs)
	al rollback "$ID"
	[ "$status" -eq 0 ] || { echo "rollback: $status $stderr"; return 1; }
	[ "$(snap)" = "$before" ]
	[ "$(snap_xattrs)" = "$xattrs_before" ]
}
