#!/usr/bin/env bats
# The manual page and the shell completion stay true to the commands:
# every command of main.c's table (what 'airlock --help' lists) and every
# option its --help shows is in man/airlock.1, and the bash and zsh
# completions offer them.
load helpers

SRC="$BATS_TEST_DIRNAME/../.."
MAN="$SRC/man/airlock.1"
BASH_COMPLETION="$SRC/shell-completion/bash/airlock"
ZSH_COMPLETION="$SRC/shell-completion/zsh/_airlock"

commands() {
	"$AIRLOCK" --help | awk '/^commands:/ { f = 1; next } f && /^  [a-z]/ { print $1 }'
}

# The words bash would offer for the command line "$@" (the last word is
# the one being completed).
complete_bash() {
	# shellcheck disable=SC1090
	. "$BASH_COMPLETION"
	COMP_WORDS=("$AIRLOCK" "$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_airlock
	printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}

@test "the command table is what --help lists" {
	table=$(sed -n 's/^\t{ "\([a-z-]*\)", cmd_.*/\1/p' "$SRC/src/cli/main.c" | tr '\n' ' ')
	[ -n "$table" ]
	[ "$(commands | tr '\n' ' ')" = "$table" ]
}

@test "the manual page documents every command" {
	missing=""
	for cmd in $(commands); do
		grep -qE "^\.BR? \"?airlock $cmd( |\"|$)" "$MAN" || missing="$missing $cmd"
	done
	[ -z "$missing" ] || { echo "man/airlock.1 lacks a section for:$missing"; false; }
}

@test "the manual page documents every option each command's --help shows" {
	missing=""
	for cmd in $(commands); do
		run "$AIRLOCK" "$cmd" --help
		[ "$status" -eq 0 ] || { echo "airlock $cmd --help: exit $status"; false; }
		while read -r opt; do
			grep -qF -- "${opt//-/\\-}" "$MAN" || missing="$missing $cmd:$opt"
		done < <(grep -oE -- '--[a-z][a-z-]*' <<<"$output" | sort -u)
	done
	[ -z "$missing" ] || { echo "man/airlock.1 lacks:$missing"; false; }
}

@test "the manual page's EXIT STATUS names every status exit_codes.h defines" {
	section=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$MAN")
	codes=$(sed -n 's/^[[:space:]]*EXIT_[A-Z0-9_]* = \([0-9]*\),.*/\1/p' "$SRC/src/cli/exit_codes.h" | sort -nu)
	[ -n "$codes" ]
	missing=""
	for code in $codes; do
		grep -qw -- "$code" <<<"$section" || missing="$missing $code"
	done
	[ -z "$missing" ] || { echo "EXIT STATUS in man/airlock.1 lacks:$missing"; false; }
}

@test "the manual page formats without warnings" {
	command -v man >/dev/null || skip "no man"
	run --separate-stderr env LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$MAN"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ] || { echo "$stderr"; false; }
	[[ "$output" == *"/etc/airlock/policy.json"* ]]
}

@test "bash completes commands, subcommands, options and their values" {
	[ "$(complete_bash "")" = "$(commands | sort | tr '\n' ' ')" ]
	[ "$(complete_bash pe)" = "permit " ]
	[ "$(complete_bash permit "")" = "approve deny dryrun exec list propose show " ]
	[ "$(complete_bash permit exec 3 --v)" = "--verify " ]
	[ "$(complete_bash hook "")" = "claude codex copilot gemini " ]
	[ "$(complete_bash hook --state-dir /tmp gemini "")" = "post-tool-use pre-tool-use stop " ]
	[ "$(complete_bash run --sand)" = "--sandbox " ]
	[ "$(complete_bash run --sandbox "")" = "default none " ]
	[ "$(complete_bash dryrun --expect-d)" = "--expect-delete " ]
	[ "$(complete_bash dryrun --ne)" = "--net " ]
	[ "$(complete_bash ledger verify --key /et)" = "/etc " ]
	[ "$(complete_bash ledger ver)" = "verify verify-proof " ]
	[[ " $(complete_bash run --timeout 1s -- tru)" == *" true "* ]]
	# every command's --help gives it options to complete
	for cmd in $(commands); do
		[ -n "$(complete_bash "$cmd" --)" ] || { echo "no options for $cmd"; false; }
	done
}

@test "zsh completes commands, subcommands and option values" {
	command -v zsh >/dev/null || skip "no zsh"
	# The completion system's functions stubbed: each prints what it was given.
	run zsh -f -c '
		compadd() { print -r -- "${(P)2}"; }
		_describe() { print -rl -- ${(P)${@[-1]}%%:*}; }
		_files() { print -r -- "files $*"; }
		_command_names() { print -r -- commands; }
		fpath=("${1:h}" $fpath); autoload -Uz _airlock
		t() { words=("$2" "${@:3}"); CURRENT=$#words; PREFIX=${words[CURRENT]}; _airlock; }
		t x "$2" "" | tr "\n" " "; print
		t x "$2" permit ""
		t x "$2" hook claude ""
		t x "$2" run --net ""
		t x "$2" run --cwd ""
		t x "$2" run -- ""' zsh "$ZSH_COMPLETION" "$AIRLOCK"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(commands | tr '\n' ' ')" ]
	[ "${lines[1]}" = "propose list show dryrun approve deny exec" ]
	[ "${lines[2]}" = "pre-tool-use post-tool-use stop" ]
	[ "${lines[3]}" = "none host" ]
	[ "${lines[4]}" = "files -/" ]
	[ "${lines[5]}" = "commands" ]
}

@test "the bash and zsh completions read usage lines with the same program" {
	extract() { sed -n "/^_airlock_usage_awk=/,/^'\$/p" "$1"; }
	[ -n "$(extract "$BASH_COMPLETION")" ]
	[ "$(extract "$BASH_COMPLETION")" = "$(extract "$ZSH_COMPLETION")" ]
}
