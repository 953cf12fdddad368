#!/usr/bin/env bats
# airlock report: the state directory as one self-contained HTML page
# (docs/report.md). Its content from a scripted session, every string the
# command or the model chose escaped, its options and bad input, and the page
# opened in headless Chromium (tests/cli/report-chromium.py).
load helpers

PASS='correct horse battery'
CHROMIUM_CHECK="$BATS_TEST_DIRNAME/report-chromium.py"

report() {
	run --separate-stderr "$AIRLOCK" report "$@"
}

# grep's options and pattern, then the file: fails when it matches.
absent() {
	if grep "$@"; then
		echo "found in the page: ${*:1:$#-1}" >&2
		return 1
	fi
}

# The strings an attacker plants, and what each must become in the page.
XSS_SCRIPT='<script>alert(1)</script>'
XSS_SCRIPT_HTML='&lt;script&gt;alert(1)&lt;/script&gt;'
XSS_ATTR='"><img src=x onerror=alert(1)>'
XSS_ATTR_HTML='&quot;&gt;&lt;img src=x onerror=alert(1)&gt;'
XSS_LINK='javascript:alert(1)'

# The approver, enrolled on a terminal of its own (script(1)), as permit.bats does.
enrol() {
	command -v script >/dev/null || skip "script(1) is not installed"
	[ ! -e /etc/airlock/approver.json ] || skip "a system approver is enrolled on this host"
	printf '%s\n%s\n' "$PASS" "$PASS" | script -qec "'$AIRLOCK' approver init" /dev/null >/dev/null
}

# A session: a failure closed by the same command, one closed by --fixes,
# one left open whose argv and output carry the attacks, in a workspace
# whose name is one; a risk-3 permit exec'd (a diff), a risk-4 permit
# approved and rolled back by its verify. Sets FAIL_RERUN, FAIL_FIXES,
# FAIL_OPEN.
session() {
	git init -q . && git config user.email t@t && git config user.name t
	printf 'gen:\n\techo new > gen.txt\ntracked:\n\techo changed >> notes.txt\n' >Makefile
	printf 'old notes\n' >notes.txt
	echo gen.txt >.gitignore
	git add -A . && git commit -qm init
	"$AIRLOCK" run -- sh -c 'test -f marker' >/dev/null || true
	FAIL_RERUN=$("$AIRLOCK" receipts --json | tail -1 | jq .id)
	touch marker
	"$AIRLOCK" run -- sh -c 'test -f marker' >/dev/null
	"$AIRLOCK" run -- sh -c 'test -f m2' >/dev/null || true
	FAIL_FIXES=$("$AIRLOCK" receipts --json | tail -1 | jq .id)
	"$AIRLOCK" run --fixes "$FAIL_FIXES" -- touch m2 >/dev/null 2>&1
	mkdir -p "ws$XSS_ATTR"
	"$AIRLOCK" run --cwd "ws$XSS_ATTR" -- sh -c \
		'printf "%s \033]0;pwned\007 \033[2J %s\n" "$1" "$2"; exit 3' sh "$XSS_SCRIPT" "$XSS_LINK" "$XSS_ATTR" \
		>/dev/null 2>&1 || true
	FAIL_OPEN=$("$AIRLOCK" receipts --json | tail -1 | jq .id)
	jq -n --arg lbl "gen $XSS_ATTR" --arg reason "regenerate $XSS_SCRIPT "$'\033'"[31m $XSS_LINK" \
		'{id: $lbl, argv: ["make", "-s", "gen"], reason: $reason, expected_paths: ["gen.txt"]}' |
		"$AIRLOCK" permit propose --exec - >/dev/null
	enrol
	"$AIRLOCK" permit propose - >/dev/null <<<'{"argv":["make","-s","tracked"],"reason":"note it","expected_paths":["notes.txt"]}'
	"$AIRLOCK" permit dryrun 2 >/dev/null || true
	script -qec "'$AIRLOCK' permit approve 2" /dev/null <<<"$PASS" >/dev/null
	"$AIRLOCK" permit exec 2 --verify -- false >/dev/null 2>&1 || true
	[ "$(jq -r .state "$AIRLOCK_STATE_DIR/permits/2.json")" = ROLLED_BACK ]
}

@test "bad input: one line on stderr, exit 125, nothing created" {
	report
	[ "$status" -eq 125 ]
	one_error_line "give the page's file with -o FILE.html"
	report -o r.html --since yesterday
	[ "$status" -eq 125 ]
	one_error_line "--since 'yesterday' must be a date"
	report -o r.html --since 2026-02-31
	[ "$status" -eq 125 ]
	report -o r.html --workspace "$TEST_DIR/nonexistent"
	[ "$status" -eq 125 ]
	one_error_line "--workspace"
	report -o r.html --last 0
	[ "$status" -eq 125 ]
	report -o r.html --bogus
	[ "$status" -eq 125 ]
	one_error_line "bad option '--bogus'"
	report -o r.html extra
	[ "$status" -eq 125 ]
	one_error_line "unexpected argument 'extra'"
	[ ! -e r.html ]
	[ ! -e "$AIRLOCK_STATE_DIR" ]
	"$AIRLOCK" run -- true >/dev/null
	report -o "$AIRLOCK_STATE_DIR/receipts/1.json"
	[ "$status" -eq 125 ]
	one_error_line "is inside the state directory"
	jq -e '.id == 1' "$AIRLOCK_STATE_DIR/receipts/1.json"
}

@test "with no state directory: an empty page, and the state directory is not created" {
	report -o r.html
	[ "$status" -eq 0 ]
	grep -q 'There is no state directory yet' r.html
	[ ! -e "$AIRLOCK_STATE_DIR" ]
}

@test "the page: runs, failures and how each closed, permits with diffs and approvals, the ledger" {
	session
	report -o "$TEST_DIR/r.html"
	[ "$status" -eq 0 ]
	local page="$TEST_DIR/r.html"
	# Self-contained: one inline style and one inline script, allowed by hash.
	grep -q "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'sha256-" "$page"
	absent -Eiq '<(link|img|iframe|object|embed)|[[:space:]](src|href)="[^#]|@import|url\(' "$page"
	[ "$(grep -o '<script' "$page" | wc -l)" -eq 1 ]
	# The timeline: every run, status as text and colour, the filters.
	local n
	n=$(jq -s length "$AIRLOCK_STATE_DIR/index.jsonl")
	[ "$(grep -o '<tr id="run-' "$page" | wc -l)" -eq "$n" ]
	grep -q "<tr id=\"run-$FAIL_OPEN\" data-failed=\"1\"" "$page"
	grep -q 'class="st st-fail">&#x2717; failed</span>' "$page"
	grep -q '<select id="f-status">' "$page"
	grep -q '<th scope="col">Receipt</th>' "$page"
	# Failures: open, closed by the same command, closed by --fixes and its re-run.
	grep -q "<tr id=\"failure-$FAIL_OPEN\" class=\"open\">" "$page"
	grep -q "<tr id=\"failure-$FAIL_RERUN\" class=\"closed\">.*the same command succeeded: <a href=\"#run-$((FAIL_RERUN + 1))\">" "$page"
	local rerun fix
	rerun=$(jq .by_receipt "$AIRLOCK_STATE_DIR/gate/closed/$FAIL_FIXES.json")
	fix=$(jq .gate.fix "$(receipt_file "$rerun")")
	grep -q "<tr id=\"failure-$FAIL_FIXES\" class=\"closed\">.*<a href=\"#run-$fix\">receipt $fix</a>, then the re-run of the failed command: <a href=\"#run-$rerun\">" "$page"
	# Permits: the exec'd one's diff, the approved one's key and its rollback.
	grep -q '<article class="permit" id="permit-1"' "$page"
	grep -q '<span class="add">+new</span>' "$page"
	grep -q '<span class="hunk">@@ -1,1 +1,2 @@</span> old notes' "$page"
	grep -q '<span class="add">+changed</span>' "$page"
	local key
	key=$(jq -r .approval.public_key "$AIRLOCK_STATE_DIR/permits/2.json")
	grep -q "Approved by key</dt><dd><code>$key</code>" "$page"
	grep -q 'ROLLED_BACK' "$page"
	grep -q 'verify failed' "$page"
	# The ledger, verified now.
	grep -q 'Verified at report time: <span class="st st-ok">&#x2713; OK' "$page"
	grep -q "<dd id=\"ledger-size\">$(wc -l <"$AIRLOCK_STATE_DIR/ledger/log")</dd>" "$page"
}

@test "what the command and the model chose is escaped: scripts, attributes, links, terminal escapes" {
	session
	report -o "$TEST_DIR/r.html"
	[ "$status" -eq 0 ]
	local page="$TEST_DIR/r.html"
	# Nothing planted appears raw.
	absent -qF "$XSS_SCRIPT" "$page"
	absent -qF "$XSS_ATTR" "$page"
	absent -qF '<img' "$page"
	absent -qiF 'href="javascript:' "$page"
	absent -q $'\033' "$page"
	absent -q $'\007' "$page"
	# It shows, escaped: argv, output, workspace names (text and attributes), reasons, labels.
	grep -qF "$XSS_SCRIPT_HTML" "$page"
	grep -qF "data-ws=\"$WORK/ws$XSS_ATTR_HTML\"" "$page"
	grep -qF "<option value=\"$WORK/ws$XSS_ATTR_HTML\">" "$page"
	grep -qF "regenerate $XSS_SCRIPT_HTML &#x241B;[31m $XSS_LINK" "$page"
	grep -qF "Permit 1: gen $XSS_ATTR_HTML" "$page"
	# Terminal escapes in the output as visible symbols.
	grep -qF '&#x241B;]0;pwned&#x2407; &#x241B;[2J' "$page"
	# Every link is a #fragment built from a number.
	grep -o 'href="[^"]*"' "$page" >"$TEST_DIR/hrefs"
	absent -vE '^href="#[a-z-]+[0-9]*"$' "$TEST_DIR/hrefs"
}

@test "--since and --workspace narrow the runs; --last caps the timeline with a note" {
	"$AIRLOCK" run -- true >/dev/null
	mkdir other
	"$AIRLOCK" run --cwd other -- true >/dev/null
	"$AIRLOCK" run -- false >/dev/null || true
	report -o r.html --since 1h
	[ "$(grep -o '<tr id="run-' r.html | wc -l)" -eq 3 ]
	report -o r.html --since 2999-01-01
	[ "$status" -eq 0 ]
	grep -q '<td id="n-runs">0</td>' r.html
	report -o r.html --workspace other
	[ "$(grep -o '<tr id="run-' r.html | wc -l)" -eq 1 ]
	grep -q '<tr id="run-2"' r.html
	report -o r.html --last 2
	[ "$(grep -o '<tr id="run-' r.html | wc -l)" -eq 2 ]
	grep -q 'The newest 2 of 3 runs are listed' r.html
	absent -q '<tr id="run-1"' r.html
}

@test "a change set's binary and large files are summarised, not diffed" {
	git init -q . && git config user.email t@t && git config user.name t
	printf 'gen:\n\tprintf "a\\0b" > bin.dat; head -c 400000 /dev/zero | tr "\\0" x > big.txt\n' >Makefile
	git add -A . && git commit -qm init
	"$AIRLOCK" permit propose --exec - >/dev/null <<<'{"argv":["make","-s","gen"],"reason":"r","expected_paths":["bin.dat","big.txt"]}'
	report -o r.html
	[ "$status" -eq 0 ]
	grep -q 'binary new content (3 bytes)' r.html
	grep -q 'new content: 400000 bytes, above the 256 KiB a diff shows' r.html
}

# A dry run's state is a cache its apply and rollback entries carry
# (docs/ledger.md): one a power loss lost is read from the log, through the
# dry run's own reader, as apply reads it; an applied permit's change set
# still diffs against its backup, and the page is the page it was.
@test "an applied dry run whose state cache was lost: the page reads its state from the log" {
	session
	d=$(jq -r .dryrun "$AIRLOCK_STATE_DIR/permits/1.json")
	report -o "$TEST_DIR/before.html"
	[ "$status" -eq 0 ]
	grep -q "receipt $d</a>, verdict DRY_RUN_OK, applied</dd>" "$TEST_DIR/before.html"
	rm "$AIRLOCK_STATE_DIR/dryruns/$d/state"
	report -o "$TEST_DIR/r.html"
	[ "$status" -eq 0 ]
	grep -q "receipt $d</a>, verdict DRY_RUN_OK, applied</dd>" "$TEST_DIR/r.html"
	grep -q '<span class="add">+new</span>' "$TEST_DIR/r.html"
	diff <(sed 's/generated [0-9T:.Z-]*\././' "$TEST_DIR/before.html") \
		<(sed 's/generated [0-9T:.Z-]*\././' "$TEST_DIR/r.html")
}

# The note the page shows for file $1 of the change set.
file_note() {
	grep -o "<code>$1</code> &#x2014; [^<]*</summary><p class=\"note\">[^<]*" r.html |
		sed 's/.*class="note">//'
}

# Where each side of a file's change is kept is the dry run's to say
# (core/snapshot/dryrun_view.h): before the apply the tree holds the old and
# the upper layer the new; after it the tree the new and the backups the
# journal names the old. A side whose place is gone says which it is.
@test "a change set whose kept contents are gone: each file says which side it lost" {
	git init -q . && git config user.email t@t && git config user.name t
	printf 'gen:\n\techo more >> a.txt; rm b.txt; echo c > c.txt\n' >Makefile
	git add -A . && git commit -qm init
	echo one >a.txt && echo bee >b.txt
	"$AIRLOCK" permit propose - >/dev/null <<<'{"argv":["make","-s","gen"],"reason":"r","expected_paths":["a.txt","b.txt","c.txt"]}'
	"$AIRLOCK" permit dryrun 1 >/dev/null
	dir=$AIRLOCK_STATE_DIR/dryruns/$(jq -r .dryrun "$AIRLOCK_STATE_DIR/permits/1.json")
	mv "$dir/upper" "$TEST_DIR/upper"
	report -o r.html
	[ "$status" -eq 0 ]
	[ "$(file_note a.txt)" = "the dry run&#39;s new content is no longer kept" ]
	[ "$(file_note c.txt)" = "the dry run&#39;s new content is no longer kept" ]
	[ "$(file_note b.txt)" = "--- a/b.txt +++ b/b.txt" ]
	mv "$TEST_DIR/upper" "$dir/upper"
	"$AIRLOCK" permit exec 1 >/dev/null
	report -o r.html
	[ "$(file_note a.txt)" = "--- a/a.txt +++ b/a.txt" ]
	[ "$(file_note b.txt)" = "--- a/b.txt +++ b/b.txt" ]
	mv "$dir/journal" "$TEST_DIR/journal"
	report -o r.html
	[ "$(file_note a.txt)" = "the dry run&#39;s old content is no longer kept" ]
	[ "$(file_note b.txt)" = "the dry run&#39;s old content is no longer kept" ]
	[ "$(file_note c.txt)" = "--- a/c.txt +++ b/c.txt" ]
	mv "$TEST_DIR/journal" "$dir/journal"
	mv "$dir/backup" "$TEST_DIR/backup"
	report -o r.html
	[ "$(file_note a.txt)" = "old content is no longer kept: No such file or directory" ]
	[ "$(file_note b.txt)" = "old content is no longer kept: No such file or directory" ]
}

@test "a ledger that does not verify says so" {
	"$AIRLOCK" run -- true >/dev/null
	"$AIRLOCK" ledger checkpoint >/dev/null
	jq -c '.exit_code = 7' "$(receipt_file 1)" >"$TEST_DIR/x" && cat "$TEST_DIR/x" >"$(receipt_file 1)"
	report -o r.html
	[ "$status" -eq 0 ]
	grep -q 'Verified at report time: <span class="st st-fail">&#x2717; RECORDS_DIFFER' r.html
	grep -q 'DIFFERS' r.html
}

@test "headless Chromium: the page loads nothing, logs no error, filters by keyboard, fits a narrow window" {
	session
	report -o "$TEST_DIR/r.html"
	[ "$status" -eq 0 ]
	local out
	out=${REPORT_ARTIFACTS:-$(dirname "$AIRLOCK")/report-artifacts}
	mkdir -p "$out" 2>/dev/null && [ -w "$out" ] || out=${BATS_RUN_TMPDIR:-/tmp}/report-artifacts
	mkdir -p "$out"
	cp "$TEST_DIR/r.html" "$out/report-$(id -un).html"
	run python3 "$CHROMIUM_CHECK" "$TEST_DIR/r.html" "$out/report-$(id -un)" \
		"$XSS_SCRIPT" "$XSS_ATTR" "regenerate $XSS_SCRIPT" "gen $XSS_ATTR"
	printf '%s\n' "$output"
	# As root (CI) Chromium must run; as another user only a Chromium that
	# cannot start at all is a skip.
	if [ "$status" -eq 77 ] && [ "$(id -u)" -ne 0 ]; then
		skip "chromium cannot start as $(id -un)"
	fi
	[ "$status" -eq 0 ]
	[ -s "$out/report-$(id -un)-wide.png" ]
	[ -s "$out/report-$(id -un)-narrow.png" ]
}
