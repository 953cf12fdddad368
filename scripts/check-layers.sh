#!/bin/sh
# Enforces the layering of docs/ARCHITECTURE.md from the #include lines.
#
# Between layers: basic <- sandbox, ledger <- core <- cli, and mcp beside
# cli. A layer includes only itself and those below it; sandbox and ledger
# sit side by side and neither includes the other, nor do cli and mcp, but
# for the one entry point: cli may include mcp/mcp.h (src/cli/cmd_mcp.c).
#
# Inside core, by domain (src/core/DOMAIN/): a domain includes only itself
# and the domains before it in CORE_ORDER. Known upward includes that are
# being cut (issue 21) are listed, one "file -> header" per line, in
# CORE_EXCEPTIONS; they are also left out of the loop check. An exception
# that no longer occurs is an error too, so the list only shrinks.
#
# Between files: no include loop anywhere (a file's header including, through
# any chain, a header that includes it back).
#
# Only src/cli prints or exits.
set -eu
cd "$(dirname "$0")/../src"
status=0

CORE_ORDER="store policy net session agents host record snapshot gate run permit hook report fleet"
CORE_EXCEPTIONS="
"

allowed() {
	case $1 in
	basic) echo "basic" ;;
	sandbox) echo "basic sandbox" ;;
	ledger) echo "basic ledger" ;;
	core) echo "basic sandbox ledger core" ;;
	cli) echo "basic sandbox ledger core cli" ;;
	mcp) echo "basic sandbox ledger core mcp" ;;
	esac
}

# includes FILE: the project headers FILE includes, as paths below src/
includes() {
	sed -n 's|^#include "\([a-z]*/[a-z_/]*\.h\)"|\1|p' "$1"
}

sources() {
	find "$1" -name '*.[ch]' | sort
}

for layer in basic sandbox ledger core cli mcp; do
	ok=$(allowed "$layer")
	for f in $(sources "$layer"); do
		for inc in $(includes "$f"); do
			[ "$layer/$inc" = "cli/mcp/mcp.h" ] && continue
			top=${inc%%/*}
			case " $ok " in
			*" $top "*) ;;
			*) echo "$f: includes $inc, above its layer $layer"; status=1 ;;
			esac
		done
	done
done

# Every file of core lives in a domain named in CORE_ORDER.
for f in $(sources core); do
	d=$(echo "$f" | cut -d/ -f2)
	case " $CORE_ORDER " in
	*" $d "*) ;;
	*) echo "$f: not in a core domain ($CORE_ORDER)"; status=1 ;;
	esac
done

rank() {
	n=0
	for d in $CORE_ORDER; do
		n=$((n + 1))
		[ "$d" = "$1" ] && { echo $n; return; }
	done
	echo 0
}

is_exception() {
	printf '%s\n' "$CORE_EXCEPTIONS" | grep -qxF "$1 -> $2"
}

for f in $(sources core); do
	from=$(echo "$f" | cut -d/ -f2)
	for inc in $(includes "$f"); do
		case $inc in core/*/*) ;; *) continue ;; esac
		to=$(echo "$inc" | cut -d/ -f2)
		[ "$(rank "$to")" -le "$(rank "$from")" ] && continue
		is_exception "$f" "$inc" && continue
		echo "$f: includes $inc, a domain after its own ($from; order: $CORE_ORDER)"
		status=1
	done
done
for line in $(printf '%s\n' "$CORE_EXCEPTIONS" | sed 's/ -> /:/'); do
	includes "${line%%:*}" | grep -qxF "${line#*:}" ||
		{ echo "check-layers.sh: exception no longer needed, remove it: $line"; status=1; }
done

# Include loops between files: a module is a .c and its .h; an edge goes
# from a module to each module whose header it includes. tsort reports a
# cycle on stderr.
edges=$(for f in $(sources .); do
	m=${f#./}
	m=${m%.[ch]}
	for inc in $(includes "$f"); do
		is_exception "${f#./}" "$inc" || echo "$m ${inc%.h}"
	done
done | awk '$1 != $2')
if ! cycles=$(printf '%s\n' "$edges" | tsort 2>&1 >/dev/null) || [ -n "$cycles" ]; then
	echo "include loop between modules:"
	printf '%s\n' "$cycles"
	status=1
fi

if grep -rnE '\b(printf|puts|fprintf|fputs|perror|exit)\(' --include='*.c' basic sandbox ledger core |
	grep -vE 'snprintf|vsnprintf|asprintf|_exit'; then
	echo "only src/cli may print or exit"
	status=1
fi
exit $status
