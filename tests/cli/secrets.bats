#!/usr/bin/env bats
# What the command sees of the host (docs/sandbox.md, "What the command sees
# of the host") and which workspaces are refused, tested by attacking them.
# Runs as root and as uid 65534. HOME lives below /var/tmp: below /tmp it
# would be hidden by the private /tmp anyway, and prove nothing.
load helpers

setup() {
	setup_dirs
	export HOME
	HOME=$(mktemp -d /var/tmp/airlock-home.XXXXXX)
	unset XDG_STATE_HOME
}

teardown() {
	local i
	if [ -n "${CHURNER:-}" ]; then # it stops between its steps
		touch "$TEST_DIR/stop"
		wait "$CHURNER" || true
	fi
	for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTED[i]}" 2>/dev/null || true; done
	for i in "${STARTED[@]}"; do kill "$i" 2>/dev/null || true; done
	chmod -R u+rwX "$TEST_DIR" "$HOME" 2>/dev/null || true
	rm -rf "$TEST_DIR" "$HOME"
	[ -z "${OTHER_HOME:-}" ] || rm -rf "$OTHER_HOME"
	local p
	for p in "${CREATED[@]}"; do rm -rf "$p"; done
	[ -z "${TEST_USER:-}" ] || userdel "$TEST_USER" 2>/dev/null || true
}

# What a test mounted (unmounted by teardown, lazily, before the removal)
# and the processes it started in the background (killed by teardown).
MOUNTED=()
STARTED=()

# What plant_abs made outside the test's directories (the topmost new
# path of each), removed by teardown.
CREATED=()

# Writes "SECRET:<path>" at an absolute path that must not exist yet,
# making its missing parents; records what it made in CREATED.
plant_abs() {
	local p=$1 top=$1
	[ ! -e "$p" ] || { echo "$p exists: not overwriting it"; return 1; }
	while [ ! -e "$(dirname "$top")" ]; do top=$(dirname "$top"); done
	CREATED+=("$top")
	mkdir -p "$(dirname "$p")"
	echo "SECRET:$p" > "$p"
}

# Writes "SECRET:<path>" into each path below HOME (making parents).
plant() {
	local p
	for p in "$@"; do
		mkdir -p "$(dirname "$HOME/$p")"
		echo "SECRET:$p" > "$HOME/$p"
	done
}

# The paths the issue found readable: each must read as nothing inside and
# still be readable outside.
NEW_SECRETS=(.claude/.credentials.json .codex/auth.json .gemini/oauth_creds.json
	.config/git/credentials .cargo/credentials .vault-token .pgpass
	.config/containers/auth.json .terraform.d/credentials.tfrc.json .m2/settings.xml
	.gradle/gradle.properties .s3cfg .boto .my.cnf .zsh_history
	.local/share/fish/fish_history)

@test "a symlinked ~/.ssh: neither the link nor its target can be read" {
	plant real-ssh/id_ed25519
	ln -s real-ssh "$HOME/.ssh"
	cat "$HOME/.ssh/id_ed25519" >/dev/null # readable outside
	al run -- sh -c "cat '$HOME/.ssh/id_ed25519'; cat '$HOME/real-ssh/id_ed25519'; ls -A '$HOME/.ssh'"
	[[ "$(rq .stdout)" != *SECRET* ]]
	rq '.sandbox.enforced.hidden | index("'"$HOME"'/real-ssh") != null' | grep -qx true
}

@test "a symlinked ~/.aws pointing outside the home: its target is hidden" {
	outside=$(mktemp -d /var/tmp/airlock-keys.XXXXXX)
	echo "SECRET:aws" > "$outside/credentials"
	ln -s "$outside" "$HOME/.aws"
	al run -- sh -c "cat '$HOME/.aws/credentials' '$outside/credentials'"
	rm -rf "$outside"
	[[ "$(rq .stdout)" != *SECRET* ]]
	[ "$status" -ne 0 ]
}

@test "a link to a secret file (~/.netrc -> elsewhere): the target reads empty" {
	plant store/netrc
	ln -s store/netrc "$HOME/.netrc"
	al run -- cat "$HOME/.netrc" "$HOME/store/netrc"
	[[ "$(rq .stdout)" != *SECRET* ]]
}

@test "every newly covered credential and history file is hidden inside, readable outside" {
	plant "${NEW_SECRETS[@]}"
	for p in "${NEW_SECRETS[@]}"; do grep -q "SECRET:$p" "$HOME/$p"; done
	script=""
	for p in "${NEW_SECRETS[@]}"; do script+="cat '$HOME/$p' 2>/dev/null; "; done
	al run -- sh -c "$script true"
	[ "$status" -eq 0 ]
	[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
}

# The credential stores, browser profiles and histories issue 19 found
# missing from the list (policy/default.json), one file planted in each.
LISTED_SECRETS=(.config/github-copilot/apps.json .cache/huggingface/token
	.cache/huggingface/stored_tokens .huggingface/token .gem/credentials
	.composer/auth.json .config/composer/auth.json .config/rclone/rclone.conf
	.config/sops/age/keys.txt .config/age/keys.txt .age/key.txt
	.pulumi/credentials.json .kaggle/kaggle.json .config/hub .config/glab-cli/config.yml
	.databrickscfg .fly/config.yml .config/doctl/config.yaml .config/hcloud/cli.toml
	.config/op/config .oci/config .config/configstore/firebase-tools.json
	.config/.wrangler/config/default.toml .wrangler/config/default.toml
	.config/netlify/config.json .local/share/com.vercel.cli/auth.json
	.config/stripe/config.toml .supabase/access-token .config/ngrok/ngrok.yml
	.ngrok2/ngrok.yml .mozilla/firefox/p/logins.json .config/google-chrome/Default/Cookies
	.config/chromium/Default/Login\ Data .config/BraveSoftware/Brave-Browser/Default/Cookies
	.config/microsoft-edge/Default/Cookies .config/vivaldi/Default/Cookies
	.config/opera/Cookies .thunderbird/p/logins.json .librewolf/p/logins.json
	snap/firefox/common/.mozilla/firefox/p/logins.json
	snap/chromium/common/chromium/Default/Cookies .sqlite_history .irb_history
	.local/share/irb/irb_history .rediscli_history .psql_history .mysql_history
	.python_history .sh_history .ash_history .histfile .dbshell .mongosh/history
	.ipython/profile_default/history.sqlite)

@test "every credential store, browser profile and history the list gained is hidden inside, readable outside" {
	plant "${LISTED_SECRETS[@]}"
	script=""
	for p in "${LISTED_SECRETS[@]}"; do
		grep -q "SECRET:$p" "$HOME/$p"
		script+="cat '$HOME/$p' 2>/dev/null; "
	done
	al run -- sh -c "$script true"
	[ "$status" -eq 0 ]
	[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
}

# Each agent host's credential files (src/core/agenthost.c), as relative to
# the home; Codex's also in $CODEX_HOME.
HOST_CREDENTIALS=(.claude.json .claude/.credentials.json .codex/auth.json
	.gemini/oauth_creds.json .gemini/google_accounts.json .gemini/mcp-oauth-tokens.json)

@test "each agent host's credential files are hidden by rule, even by a policy whose sandbox.hide is empty" {
	plant "${HOST_CREDENTIALS[@]}" codex-home/auth.json
	printf '{"schema":"airlock.policy/1","sandbox":{"hide":[]}}' > "$TEST_DIR/policy.json"
	# Dropping the whole list widens the built-in policy: only the approver's
	# approval makes it apply, and the rule holds even then.
	approve_policy "$TEST_DIR/policy.json"
	script=""
	for p in "${HOST_CREDENTIALS[@]}" codex-home/auth.json; do script+="cat '$HOME/$p' 2>/dev/null; "; done
	CODEX_HOME="$HOME/codex-home" al run --policy "$TEST_DIR/policy.json" -- sh -c "$script true"
	[ "$status" -eq 0 ]
	[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
	rq '.sandbox.enforced.hidden | index("'"$HOME"'/.claude.json") != null' | grep -qx true
}

@test "a hidden file inside a hidden directory: the run starts, and neither reads" {
	plant .vault/token .vault/sub/key
	# The built-in list and three more, in an order that hides the directory
	# between its two files.
	jq -c '{schema: "airlock.policy/1", sandbox: {hide: (.sandbox.hide + ["~/.vault/sub/key", "~/.vault", "~/.vault/token"])}}' \
		"$BATS_TEST_DIRNAME/../../policy/default.json" > "$TEST_DIR/policy.json"
	al run --policy "$TEST_DIR/policy.json" -- sh -c "cat '$HOME/.vault/token' '$HOME/.vault/sub/key' 2>/dev/null; true"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
}

# A hidden path that another process of the host removes after the run's
# plan found it and before the quarantine mounts over it (the shim removes
# it just after the plan's stat), as when the other CI lane's copy of the
# tests below took away what it had planted: nothing is left to hide, and
# the run starts. It failed with "quarantine layer 'mounts' could not be
# set up: No such file or directory".
@test "a hidden directory or file removed on the host after the plan found it: the run starts, and nothing of it shows" {
	lib=${AIRLOCK_FAULTFS:-$(dirname "$AIRLOCK")/tests/libfaultfs.so}
	[ -e "$lib" ] || skip "the fault-injection shim is not built"
	[ -z "${AIRLOCK_SANITIZED:-}" ] || skip "LD_PRELOAD under a sanitizer"
	mkdir "$HOME/.aws"
	plant .netrc
	for p in .aws .netrc; do
		LD_PRELOAD=$lib FAULTFS_REMOVE_AFTER_STAT="$HOME/$p" \
			al run -- sh -c "ls -A '$HOME/.aws' 2>/dev/null; cat '$HOME/.netrc' 2>/dev/null; true"
		[ "$status" -eq 0 ] || { echo "$p: $stderr"; return 1; }
		[ ! -e "$HOME/$p" ] # removed in the window, by the shim
		[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
	done
}

# The command runs as the caller: root in the quarantine reads what root
# reads on the host, so the system's private keys are hidden too.
SYSTEM_SECRETS=(/etc/ssl/private /etc/pki/tls/private /etc/letsencrypt /etc/wireguard
	/etc/NetworkManager/system-connections /etc/ipsec.d/private /etc/openvpn
	/etc/kubernetes /etc/rancher /etc/credstore /etc/credstore.encrypted /etc/sssd)
SYSTEM_SECRET_FILES=(/etc/ipsec.secrets /etc/ppp/chap-secrets /etc/ppp/pap-secrets
	/etc/krb5.keytab /etc/mysql/debian.cnf)

@test "the system's private keys and secrets are hidden, also from root" {
	if [ "$(id -u)" -eq 0 ]; then
		local files=() p
		for p in "${SYSTEM_SECRETS[@]}"; do files+=("$p/airlock-test.$$"); done
		for p in "${SYSTEM_SECRET_FILES[@]}"; do [ -e "$p" ] || files+=("$p"); done
		for p in "${files[@]}"; do plant_abs "$p"; done
		script=""
		for p in "${files[@]}"; do script+="cat '$p' 2>/dev/null; "; done
		al run -- sh -c "$script true"
		[ "$status" -eq 0 ]
		[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
	else
		al run -- true
		[ "$status" -eq 0 ]
	fi
	[ ! -e /etc/ssl/private ] ||
		rq '.sandbox.enforced.hidden | index("/etc/ssl/private") != null' | grep -qx true
}

@test "root with \$HOME unset or elsewhere: /root, its passwd home, keeps its credentials hidden, and is masked in hidden-home mode" {
	[ "$(id -u)" -eq 0 ] || skip "only root's passwd home is /root"
	[ "$(getent passwd 0 | cut -d: -f6)" = /root ] || skip "root's home is not /root"
	plant_abs "/root/.aws/airlock-test.$$"
	plant_abs "/root/.kaggle/airlock-test.$$"
	plant_abs "/root/airlock-test-notes.$$"
	local script="cat /root/.aws/airlock-test.$$ /root/.kaggle/airlock-test.$$ 2>/dev/null; true"
	al run -- sh -c "$script" # $HOME elsewhere
	[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
	run --separate-stderr env -u HOME "$AIRLOCK" run -- sh -c "$script"
	[ "$status" -eq 0 ]
	[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
	rq '.sandbox.enforced.hidden | index("/root/.aws") != null' | grep -qx true
	# sandbox.home hidden: /root is an empty view but for home_allow
	printf '{"schema":"airlock.policy/1","sandbox":{"home":"hidden"}}' > "$TEST_DIR/policy.json"
	script="cat /root/airlock-test-notes.$$ 2>/dev/null; true"
	al run --policy "$TEST_DIR/policy.json" -- sh -c "$script"
	[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
	run --separate-stderr env -u HOME "$AIRLOCK" run --policy "$TEST_DIR/policy.json" -- sh -c "$script"
	[ "$status" -eq 0 ]
	[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
	# and outside, all of it still reads
	grep -q SECRET "/root/.aws/airlock-test.$$" "/root/airlock-test-notes.$$"
}

@test "a user with \$HOME unset or elsewhere: the passwd home keeps its credentials hidden, and is masked in hidden-home mode" {
	if [ "$(id -u)" -ne 0 ]; then
		# nobody's passwd home (/nonexistent) holds nothing; a run
		# without $HOME still starts
		run --separate-stderr env -u HOME "$AIRLOCK" run -- true
		[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
		skip "making a user whose passwd home the test controls needs root"
	fi
	command -v useradd >/dev/null || skip "no useradd"
	local base
	base=$(mktemp -d /var/tmp/airlock-user.XXXXXX)
	CREATED+=("$base")
	chmod 755 "$base"
	TEST_USER="airlock-t$$"
	useradd -M -d "$base/home" -s /bin/sh "$TEST_USER"
	local uid gid
	uid=$(id -u "$TEST_USER")
	gid=$(id -g "$TEST_USER")
	mkdir -p "$base/home/.ssh" "$base/home/.config/rclone" "$base/work" "$base/elsewhere"
	echo SECRET:ssh > "$base/home/.ssh/id_ed25519"
	echo SECRET:rclone > "$base/home/.config/rclone/rclone.conf"
	echo SECRET:notes > "$base/home/notes"
	printf '{"schema":"airlock.policy/1","sandbox":{"home":"hidden"}}' > "$base/policy.json"
	chown -R "$uid:$gid" "$base"
	export AIRLOCK_STATE_DIR="$base/state"
	cd "$base/work"
	local as=(setpriv --reuid="$uid" --regid="$gid" --clear-groups)
	local script="cat '$base/home/.ssh/id_ed25519' '$base/home/.config/rclone/rclone.conf' 2>/dev/null; true"
	local home
	for home in unset "$base/elsewhere"; do
		local env=(env -u HOME)
		[ "$home" = unset ] || env=(env HOME="$home")
		run --separate-stderr "${as[@]}" "${env[@]}" "$AIRLOCK" run -- sh -c "$script"
		[ "$status" -eq 0 ] || { echo "$home: $stderr"; return 1; }
		[[ "$(rq .stdout)" != *SECRET* ]] || { echo "$home:"; rq .stdout; return 1; }
		run --separate-stderr "${as[@]}" "${env[@]}" "$AIRLOCK" run --policy "$base/policy.json" -- \
			sh -c "cat '$base/home/notes' 2>/dev/null; true"
		[ "$status" -eq 0 ] || { echo "$home: $stderr"; return 1; }
		[[ "$(rq .stdout)" != *SECRET* ]] || { echo "$home, hidden home:"; rq .stdout; return 1; }
	done
	# outside, the user reads its own files
	"${as[@]}" cat "$base/home/.ssh/id_ed25519" | grep -q SECRET
}

@test "/etc/shadow- and /etc/gshadow- read as nothing" {
	al run -- sh -c 'for f in /etc/shadow- /etc/gshadow- /etc/shadow; do [ -e $f ] || continue; wc -c < $f; done'
	[ "$status" -eq 0 ]
	[ -z "$(rq .stdout | tr -d '0\n ')" ]
}

@test "other users' homes: /home is an empty view, and /root too for non-root" {
	if [ "$(id -u)" -eq 0 ]; then
		OTHER_HOME=$(mktemp -d /home/airlock-test-other.XXXXXX)
		chmod 755 "$OTHER_HOME"
		echo "SECRET:other" > "$OTHER_HOME/notes"
		chmod 644 "$OTHER_HOME/notes"
		al run -- sh -c "cat '$OTHER_HOME/notes'; ls -A /home"
		[[ "$(rq .stdout)" != *SECRET* ]]
		[ -z "$(rq .stdout)" ]
	else
		al run -- sh -c 'ls -A /home; ls -A /root; echo end'
		[ "$status" -eq 0 ]
		[ "$(rq .stdout)" = end ]
	fi
	rq '.sandbox.enforced.hidden | index("/home") != null' | grep -qx true
}

@test "the default state directory is hidden when --state-dir points elsewhere" {
	mkdir -p "$HOME/.local/state/airlock/receipts" "$HOME/xdg/airlock"
	echo "SECRET:default-state" > "$HOME/.local/state/airlock/receipts/1.json"
	echo "SECRET:xdg-state" > "$HOME/xdg/airlock/approver.json"
	al run -- sh -c "cat '$HOME/.local/state/airlock/receipts/1.json' '$HOME/xdg/airlock/approver.json'"
	[[ "$(rq .stdout)" != *SECRET:default* ]]
	# XDG_STATE_HOME names another default
	XDG_STATE_HOME="$HOME/xdg" al run --state-dir "$AIRLOCK_STATE_DIR" -- cat "$HOME/xdg/airlock/approver.json"
	[[ "$(rq .stdout)" != *SECRET* ]]
}

@test "sandbox.home hidden: the home is an empty view but for sandbox.home_allow" {
	plant plain.txt .cache/tool/data .config/app/token
	printf '{"schema":"airlock.policy/1","sandbox":{"home":"hidden","home_allow":["~/.cache"]}}' > "$TEST_DIR/policy.json"
	al run --policy "$TEST_DIR/policy.json" -- sh -c "cat '$HOME/.cache/tool/data'; cat '$HOME/plain.txt' '$HOME/.config/app/token'; ls -A '$HOME'"
	[[ "$(rq .stdout)" == *SECRET:.cache/tool/data* ]]
	[[ "$(rq .stdout)" != *SECRET:plain* ]]
	[[ "$(rq .stdout)" != *SECRET:.config* ]]
	[ "$(rq .stdout | sed "/^$/d" | tail -1)" = .cache ] || { rq .stdout; return 1; }
	rq '.sandbox.enforced.exposed | index("'"$HOME"'/.cache") != null' | grep -qx true
	# the allowed path is read-only
	al run --policy "$TEST_DIR/policy.json" -- sh -c "echo x > '$HOME/.cache/tool/data'"
	[ "$status" -ne 0 ]
	grep -q SECRET "$HOME/.cache/tool/data"
}

@test "sandbox.home must be visible or hidden" {
	printf '{"schema":"airlock.policy/1","sandbox":{"home":"gone"}}' > "$TEST_DIR/policy.json"
	al run --policy "$TEST_DIR/policy.json" -- true
	[ "$status" -eq 125 ]
	[[ "$(rq .error)" == *sandbox.home* ]]
}

# A refused workspace: exit 125, a receipt with status invalid, nothing ran.
refused() { # what the message must contain
	[ "$status" -eq 125 ] || { echo "status $status: $stderr"; return 1; }
	[ "$(rq .status)" = invalid ]
	[[ "$(rq .error)" == *"$1"* ]] || { rq .error; return 1; }
	[ "$(rq .sandbox.enforced)" = null ]
}

@test 'a job with {"cwd":"/etc"} is refused: /etc stays unwritable' {
	# a new file, not /etc/passwd: on a build that lets it through, the
	# attack must not damage the host running the suite
	marker="/etc/airlock-attack.$$"
	printf '{"argv":["sh","-c","echo x > %s"],"cwd":"/etc"}' "$marker" > job.json
	al job job.json
	if [ -e "$marker" ]; then rm -f "$marker"; echo "/etc was writable"; return 1; fi
	refused "system directory /etc"
}

@test "--workspace \$HOME, /home, /usr, /tmp and a symlink to /etc are refused" {
	al run --workspace "$HOME" -- true
	refused "holds airlock's state directory $HOME/.local/state/airlock"
	al run --workspace /home -- true
	refused "the home directory"
	al run --workspace /usr -- true
	refused "system directory /usr"
	al run --workspace /usr/local -- true
	refused "below the system directory /usr"
	al run --workspace /tmp -- true
	refused "workspace /tmp "
	ln -s /etc "$TEST_DIR/etc-link"
	al run --workspace "$TEST_DIR/etc-link" -- true
	refused "system directory /etc"
	al run --workspace "$TEST_DIR/etc-link/ssh/.." -- true
	refused "system directory /etc"
	# a cwd of $HOME becomes the workspace: refused the same way
	al run --cwd "$HOME" -- true
	refused "holds airlock's state directory"

}

@test "a directory below /tmp and one below the home stay allowed" {
	mkdir -p "$HOME/project"
	al run -- true
	[ "$status" -eq 0 ]
	al run --workspace "$HOME/project" --cwd "$HOME/project" -- sh -c 'echo ok > f'
	[ "$status" -eq 0 ]
	[ "$(cat "$HOME/project/f")" = ok ]
}

@test "a workspace holding, or inside, a state directory is refused even with the override" {
	al run --workspace "$TEST_DIR" --allow-workspace=home,system -- true
	refused "holds airlock's state directory"
	mkdir -p "$AIRLOCK_STATE_DIR/receipts"
	al run --workspace "$AIRLOCK_STATE_DIR/receipts" -- true
	refused "lies in airlock's state directory"
	# the default state dir in a home given as the workspace, not yet made
	al run --workspace "$HOME" --allow-workspace=home -- true
	refused "$HOME/.local/state/airlock"
}

@test "the override is recorded: --allow-workspace runs in /home and /usr/local, and the receipt says so" {
	al run --workspace /home --cwd / --allow-workspace=home -- true
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[ "$(rq '.sandbox.allow_workspace | join(",")')" = home ]
	[ "$(rq .sandbox.enforced.workspace)" = "$(realpath /home)" ]
	al run --workspace /usr/local --cwd / --allow-workspace=system -- true
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[ "$(rq '.sandbox.allow_workspace | join(",")')" = system ]
	# one category does not allow the other
	al run --workspace /usr --allow-workspace=home -- true
	refused "--allow-workspace=system"
}

@test "the caller's own home is never a workspace: its default state directory would be inside" {
	al run --workspace "$HOME" --cwd "$HOME" --allow-workspace=home -- sh -c 'echo ok > written'
	refused "$HOME/.local/state/airlock"
	[ ! -e "$HOME/written" ]
}

@test "an override in a job file is recorded in the receipt" {
	mkdir -p "$TEST_DIR/sub"
	printf '{"argv":["true"],"allow_workspace":["home","system"]}' > job.json
	al job job.json
	[ "$status" -eq 0 ]
	[ "$(rq '.sandbox.allow_workspace | join(",")')" = home,system ]
	printf '{"argv":["true"],"allow_workspace":["everything"]}' > job.json
	al job job.json
	[ "$status" -eq 125 ]
	[[ "$(rq .error)" == *allow_workspace* ]]
	al run --allow-workspace=all -- true
	[ "$status" -eq 125 ]
}

@test "airlock doctor lists what a run would hide" {
	plant .ssh/id_ed25519 .codex/auth.json
	run "$AIRLOCK" doctor
	[[ "$output" == *"hidden from a run in $WORK"* ]]
	[[ "$output" == *"hidden   $HOME/.ssh"* ]]
	[[ "$output" == *"hidden   $HOME/.codex/auth.json"* ]]
	[[ "$output" == *"masked   /home"* ]]
	[[ "$output" == *"hidden   $AIRLOCK_STATE_DIR"* ]] || [ ! -d "$AIRLOCK_STATE_DIR" ]
}

@test "airlock doctor lists the network and the writable directories the workspace's policy grants, each checked as run checks it" {
	# The built-in policy: loopback, and only the workspace.
	run "$AIRLOCK" doctor
	[ "$status" -eq 0 ]
	[[ "$output" == *"what a run in $WORK may reach (policy default):"* ]]
	[[ "$output" == *"  network  loopback"* ]]
	[[ "$output" == *"  writable $WORK (the workspace)"* ]]
	[ "$(grep -c '^  writable ' <<<"$output")" -eq 1 ]
	# The project's policy, as a routed run gets it, and --policy over it.
	mkdir -p .airlock "$TEST_DIR/ok" "$HOME/cache" "$WORK/sub" "$AIRLOCK_STATE_DIR"
	local refused=(/etc "$AIRLOCK_STATE_DIR" "$TEST_DIR/missing" "$WORK/sub")
	jq -n --arg ok "$TEST_DIR/ok" '{schema: "airlock.policy/1",
		sandbox: {net: "host", writable: ([$ok, "~/cache"] + $ARGS.positional)}}' \
		--args "${refused[@]}" >.airlock/policy.json
	run "$AIRLOCK" doctor
	[ "$status" -eq 0 ]
	[[ "$output" == *"what a run in $WORK may reach (policy $WORK/.airlock/policy.json):"* ]]
	[[ "$output" == *"  network  host"* ]]
	[[ "$output" == *"  writable $TEST_DIR/ok"$'\n'* ]]
	[[ "$output" == *"  writable ~/cache ($HOME/cache)"$'\n'* ]]
	[ "$(grep -c '^  refused  ' <<<"$output")" -eq "${#refused[@]}" ]
	[[ "$output" == *"a run with this policy refuses to start (exit 125)"* ]]
	# Each refusal is the one run gives for that entry, word for word.
	local doctor=$output w line
	for w in "${refused[@]}"; do
		jq -n --arg w "$w" '{schema: "airlock.policy/1", sandbox: {writable: [$w]}}' >"$TEST_DIR/one.json"
		approve_policy "$TEST_DIR/one.json"
		al run --policy "$TEST_DIR/one.json" -- true
		[ "$status" -eq 125 ]
		line=$(grep -F -- "  refused  ${stderr#*invalid: }" <<<"$doctor") ||
			{ echo "run said '$stderr', doctor did not"; return 1; }
		[ "$(grep -c . <<<"$line")" -eq 1 ]
	done
	printf '{"schema":"airlock.policy/1"}' >"$TEST_DIR/plain.json"
	run "$AIRLOCK" doctor --policy "$TEST_DIR/plain.json"
	[[ "$output" == *"(policy $TEST_DIR/plain.json):"* ]]
	[[ "$output" == *"  network  loopback"* ]]
	[[ "$output" != *"  refused  "* ]]
}

@test "a hidden file cannot be hard-linked or opened through /proc into the workspace" {
	plant .netrc .ssh/id_ed25519
	al run -- sh -c "ln '$HOME/.netrc' netrc; ln '$HOME/.ssh/id_ed25519' key; cat /proc/self/root'$HOME/.netrc' /proc/1/root'$HOME/.netrc' 2>/dev/null; cat netrc key 2>/dev/null; true"
	[ "$status" -eq 0 ]
	[[ "$(rq .stdout)" != *SECRET* ]]
	[ ! -e "$WORK/key" ]
	! grep -qs SECRET "$WORK/netrc" || false
}

# The plan reads a directory's names once many of them are asked
# (src/sandbox/pathcache.c): a name its listing lacks is taken as missing,
# and what is missing is not hidden. These homes make a listing and a
# lookup disagree, or make the listing fall back to lookups; the files
# planted in each are asked after the home's listing is read (the first
# names of the hide list go by lookups).
LATE_SECRETS=(.vault-token .pgpass .s3cfg .boto .my.cnf .zsh_history .config/gcloud/credentials.db)

# Reads every LATE_SECRETS path below $HOME in a run: none may show.
run_reads_late_secrets() {
	local script="" p
	for p in "${LATE_SECRETS[@]}"; do script+="cat '$HOME/$p' 2>/dev/null; "; done
	al run -- sh -c "$script true"
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
}

# Mounts an overlay on $HOME with lower $1, upper $TEST_DIR/upper; skips
# where it cannot be done.
mount_overlay_home() {
	[ "$(id -u)" -eq 0 ] || skip "mounting an overlay on the home needs root"
	mkdir -p "$TEST_DIR/upper" "$TEST_DIR/ovlwork"
	mount -t overlay overlay -o "lowerdir=$1,upperdir=$TEST_DIR/upper,workdir=$TEST_DIR/ovlwork" "$HOME" ||
		skip "overlayfs cannot be mounted here"
	MOUNTED+=("$HOME")
}

# Overlayfs keeps a merged directory's listing while a file has it open,
# and a file added to the upper layer beneath it (not through the overlay)
# is found by a lookup but missing from the kept listing. The listing was
# taken as the truth on overlayfs, and the plan hid none of these names:
# the command read every one. Overlayfs's listing is its layers' (any file
# system, FUSE and NFS among them) and its own cache: it is asked name by
# name.
@test "a home on overlayfs whose listing lacks names a lookup finds: each is still hidden" {
	mkdir -p "$TEST_DIR/lower"
	mount_overlay_home "$TEST_DIR/lower"
	touch "$HOME/visible"
	python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
os.listdir(fd)  # the overlay keeps this listing while fd is open
open(sys.argv[2], "w").close()
time.sleep(120)' "$HOME" "$TEST_DIR/held" &
	STARTED+=($!)
	for _ in $(seq 100); do [ -e "$TEST_DIR/held" ] && break; sleep 0.05; done
	local p
	for p in "${LATE_SECRETS[@]}"; do
		mkdir -p "$(dirname "$TEST_DIR/upper/$p")"
		echo "SECRET:$p" > "$TEST_DIR/upper/$p"
	done
	[ -z "$(find "$HOME" -mindepth 1 -maxdepth 1 -name .pgpass)" ] ||
		skip "this overlayfs lists the upper layer's new names"
	grep -q SECRET "$HOME/.pgpass" # found by a lookup
	run_reads_late_secrets
}

# The same through a lower layer whose listing lies: a FUSE file system
# that lists only "visible" but finds the secrets by lookup.
@test "a home on overlayfs over a FUSE layer that lists fewer names than it finds: each is still hidden" {
	[ -e /dev/fuse ] || skip "no /dev/fuse"
	local py
	for py in python3 /usr/bin/python3 ""; do
		[ -n "$py" ] || skip "fusepy is not installed"
		"$py" -c 'import fusepy' 2>/dev/null || "$py" -c 'import fuse; fuse.FUSE' 2>/dev/null && break
	done
	mkdir -p "$TEST_DIR/fuse"
	cat > "$TEST_DIR/liefs.py" <<'EOF'
import errno, stat, sys, time
try:
    from fusepy import FUSE, Operations, FuseOSError
except ImportError:
    from fuse import FUSE, Operations, FuseOSError
NOW = time.time()
FILES = {"/" + p: ("SECRET:" + p + "\n").encode() for p in sys.argv[2:]}
DIRS = {"/", "/visible"} | {p.rsplit("/", i)[0] for p in FILES for i in range(1, p.count("/")) if p.rsplit("/", i)[0]}
class Lie(Operations):
    def getattr(self, path, fh=None):
        base = dict(st_uid=0, st_gid=0, st_atime=NOW, st_mtime=NOW, st_ctime=NOW)
        if path in DIRS:
            return dict(base, st_mode=stat.S_IFDIR | 0o755, st_nlink=2)
        if path in FILES:
            return dict(base, st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=len(FILES[path]))
        raise FuseOSError(errno.ENOENT)
    def readdir(self, path, fh):
        return [".", ".."] + (["visible"] if path == "/" else [])
    def read(self, path, size, offset, fh):
        return FILES[path][offset:offset + size]
FUSE(Lie(), sys.argv[1], foreground=True, allow_other=True, ro=True)
EOF
	[ "$(id -u)" -eq 0 ] || skip "mounting an overlay on the home needs root"
	"$py" "$TEST_DIR/liefs.py" "$TEST_DIR/fuse" "${LATE_SECRETS[@]}" 2>"$TEST_DIR/fuse.log" &
	STARTED+=($!)
	MOUNTED+=("$TEST_DIR/fuse")
	for _ in $(seq 100); do [ -e "$TEST_DIR/fuse/visible" ] && break; sleep 0.05; done
	[ -e "$TEST_DIR/fuse/visible" ] || skip "the FUSE file system did not start: $(cat "$TEST_DIR/fuse.log")"
	mount_overlay_home "$TEST_DIR/fuse"
	[ -z "$(find "$HOME" -mindepth 1 -maxdepth 1 -name .pgpass)" ] # not listed
	grep -q SECRET "$HOME/.pgpass"
	run_reads_late_secrets
}

# Homes whose listing is read, or is too large to be (over 4096 names):
# names that sort next to the secrets' and differ by a byte or by case,
# newlines, 255-byte names, a ~/.config that is a link to a directory
# elsewhere, and a home that cannot be read but only searched (x without
# r: name by name).
@test "homes with odd names, too many names, a linked ~/.config or no read permission: the secrets stay hidden" {
	local p long
	long=$(printf 'n%.0s' $(seq 255))
	for count in 50 4200; do
		rm -rf "$HOME" && mkdir "$HOME"
		mkdir "$TEST_DIR/config.$count"
		ln -s "$TEST_DIR/config.$count" "$HOME/.config"
		plant "${LATE_SECRETS[@]}"
		for p in .pgpass .vault-token .s3cfg; do
			touch "$HOME/${p}x" "$HOME/${p%?}" "$HOME/${p^^}" "$HOME/$p"$'\n' "$HOME/$p "
		done
		touch "$HOME/$long" "$HOME/"$'\n'".pgpass" "$HOME/.pgpass"$'\xff'
		mkdir "$HOME/.pgpass.d"
		for p in gcloudx gcloue .gcloud GCLOUD gh.d a b c d e; do mkdir "$TEST_DIR/config.$count/$p"; done
		(cd "$HOME" && seq -f 'f%.0f' "$count" | xargs touch)
		run_reads_late_secrets
		chmod 0311 "$HOME"
		run_reads_late_secrets
		chmod 0700 "$HOME"
	done
}

# While the runs plan, another process churns the home: names made and
# removed, renamed over each other, a directory turned into a link to a
# hidden one and back, the home crossing the listing's 4096 names. Files
# that stay where they are throughout must be hidden in every run.
@test "a home churned by a concurrent process while runs plan: the secrets that stay are hidden in every run" {
	plant "${LATE_SECRETS[@]}" .aws/credentials
	mkdir "$HOME/many"
	(cd "$HOME/many" && seq -f 'f%.0f' 4100 | xargs touch)
	(
		cd "$HOME" || exit 1
		while [ ! -e "$TEST_DIR/stop" ]; do
			mkdir -p dir.a && mv -T dir.a dir.b
			ln -sfn .aws dir.a && rm -f dir.a
			mkdir -p .pgpass.new && rmdir .pgpass.new
			mv many/f* . && mv f* many/
			rm -rf dir.b
		done
	) &
	CHURNER=$!
	for _ in $(seq 10); do
		run_reads_late_secrets
		al run -- sh -c "cat '$HOME/.aws/credentials' '$HOME/dir.a/credentials' 2>/dev/null; true"
		[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
	done
}

# A home on a file system without d_type (ext2 without "filetype"): every
# name is listed as DT_UNKNOWN, and each is asked by lookup as before.
@test "a home on ext2 without d_type: the secrets and a linked one's target stay hidden" {
	[ "$(id -u)" -eq 0 ] || skip "mounting an image needs root"
	command -v mkfs.ext2 >/dev/null || skip "no mkfs.ext2"
	truncate -s 8M "$TEST_DIR/home.img"
	mkfs.ext2 -q -F -O ^filetype,^dir_index "$TEST_DIR/home.img" || skip "mkfs.ext2 failed"
	mount -o loop "$TEST_DIR/home.img" "$HOME" || skip "no loop mount here"
	MOUNTED+=("$HOME")
	plant "${LATE_SECRETS[@]}" store/npmrc
	ln -s store/npmrc "$HOME/.npmrc"
	run_reads_late_secrets
	al run -- cat "$HOME/.npmrc" "$HOME/store/npmrc"
	[[ "$(rq .stdout)" != *SECRET* ]] || { rq .stdout; return 1; }
	# The link was followed in the plan, not taken for a directory.
	rq '.sandbox.enforced.hidden | index("'"$HOME"'/store/npmrc") != null' | grep -qx true
}
