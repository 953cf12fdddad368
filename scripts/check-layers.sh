#!/bin/sh
# Enforces the layering of docs/ARCHITECTURE.md from the #include lines:
# basic <- sandbox <- core <- cli. A layer includes only itself and those
# below it; only src/cli prints (no printf/puts/fprintf/exit elsewhere).
set -eu
cd "$(dirname "$0")/../src"
status=0
allowed() {
	case $1 in
	basic) echo "basic" ;;
	sandbox) echo "basic sandbox" ;;
	core) echo "basic sandbox core" ;;
	cli) echo "basic sandbox core cli" ;;
	esac
}
for layer in basic sandbox core cli; do
	ok=$(allowed "$layer")
	for f in "$layer"/*.[ch]; do
		for inc in $(sed -n 's|^#include "\([a-z]*\)/.*"|\1|p' "$f"); do
			case " $ok " in
			*" $inc "*) ;;
			*) echo "$f: includes $inc/, above its layer $layer"; status=1 ;;
			esac
		done
	done
done
if grep -nE '\b(printf|puts|fprintf|fputs|perror|exit)\(' basic/*.c sandbox/*.c core/*.c |
	grep -vE 'snprintf|vsnprintf|asprintf|_exit'; then
	echo "only src/cli may print or exit"
	status=1
fi
exit $status
