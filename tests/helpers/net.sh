# shellcheck shell=bash
# The offline test world of tests/cli/netallow.bats and bench/netproxy.sh
# (docs/network.md, "Test plan"): a throwaway CA and a server certificate for
# the test names, HTTP, HTTPS and git servers on 127.0.0.2, a server of a
# name that no policy allows on 127.0.0.3, a raw TCP and a UDP listener, and
# a hosts file mapping the names (nethosts.sh puts it over /etc/hosts for
# airlock only). Sourced; every path is below NET_DIR.
#
# net_world_start DIR: makes it and starts the servers; sets NET_DIR,
#   NET_CA (the CA certificate), NET_HOSTS, NET_LOG (what the servers saw),
#   NET_HTTP, NET_HTTPS, NET_GIT (ports on 127.0.0.2, the names registry.test
#   and git.test), NET_DENIED (an HTTPS port on 127.0.0.3, denied.test),
#   NET_TCP (a raw TCP port on 127.0.0.2), NET_UDP (a UDP port on 127.0.0.3),
#   NET_TCP6 (a raw TCP port on the host's [::1]), NET_PID (the server
#   process).
# net_world_stop: stops the servers.

NET_HELPERS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

net_world_start() { # dir
	NET_DIR=$1
	mkdir -p "$NET_DIR/www" "$NET_DIR/git"
	# The CA and one server certificate naming every test name.
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=airlock test CA" \
		-keyout "$NET_DIR/ca.key" -out "$NET_DIR/ca.pem" 2>/dev/null || return 1
	openssl req -newkey rsa:2048 -nodes -subj "/CN=registry.test" \
		-keyout "$NET_DIR/server.key" -out "$NET_DIR/server.csr" 2>/dev/null || return 1
	printf 'subjectAltName=DNS:registry.test,DNS:git.test,DNS:denied.test,DNS:other.test,DNS:bad.zone.test,DNS:ok.zone.test,IP:127.0.0.2,IP:127.0.0.3\n' >"$NET_DIR/san.ext"
	openssl x509 -req -in "$NET_DIR/server.csr" -CA "$NET_DIR/ca.pem" -CAkey "$NET_DIR/ca.key" \
		-CAcreateserial -days 2 -extfile "$NET_DIR/san.ext" -out "$NET_DIR/server.pem" 2>/dev/null || return 1
	cat "$NET_DIR/ca.pem" >>"$NET_DIR/server.pem"
	NET_CA=$NET_DIR/ca.pem
	# Files to fetch, and a bare repository for `git ls-remote`.
	printf 'hello from registry.test\n' >"$NET_DIR/www/hello.txt"
	# an npm registry's metadata document of one package (`npm view demo`)
	printf '{"name":"demo","dist-tags":{"latest":"1.2.3"},"versions":{"1.2.3":{"name":"demo","version":"1.2.3","dist":{"tarball":"https://registry.test/demo-1.2.3.tgz","shasum":"0000000000000000000000000000000000000000"}}}}\n' >"$NET_DIR/www/demo"
	# a PEP 503 index of one package with one wheel (`pip download demo`)
	mkdir -p "$NET_DIR/www/simple/demo"
	/usr/bin/python3 - "$NET_DIR/www/simple/demo/demo-1.2.3-py3-none-any.whl" <<'PY' || return 1
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("demo/__init__.py", "")
    z.writestr("demo-1.2.3.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.2.3\n")
    z.writestr("demo-1.2.3.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: netallow\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("demo-1.2.3.dist-info/RECORD", "")
PY
	printf '<html><body><a href="demo-1.2.3-py3-none-any.whl">demo-1.2.3-py3-none-any.whl</a></body></html>\n' >"$NET_DIR/www/simple/demo/index.html"
	git init -q --bare "$NET_DIR/git/repo.git" || return 1
	git -C "$NET_DIR/git/repo.git" config http.receivepack false
	(
		t=$(mktemp -d "$NET_DIR/seed.XXXXXX") && cd "$t" && git init -q -b main . &&
			git -c user.name=t -c user.email=t@t commit -q --allow-empty -m seed &&
			git push -q "$NET_DIR/git/repo.git" main
	) || return 1
	# The names: two allowed in the tests, one never, and names that resolve
	# to what the proxy must never connect to.
	{
		printf '127.0.0.1 localhost\n::1 localhost ip6-localhost\n'
		printf '127.0.0.2 registry.test git.test other.test ok.zone.test bad.zone.test\n'
		printf '127.0.0.3 denied.test\n'
		printf '169.254.169.254 metadata.test\n10.0.0.1 lan.test\n192.168.77.1 lan2.test\n'
		printf 'fd00::1 ula.test\n'
	} >"$NET_DIR/hosts"
	NET_HOSTS=$NET_DIR/hosts
	NET_LOG=$NET_DIR/served.log
	: >"$NET_LOG"
	chmod -R a+rX "$NET_DIR"
	chmod a+rw "$NET_LOG"
	rm -f "$NET_DIR/ready"
	/usr/bin/python3 "$NET_HELPERS/netserve.py" "$NET_LOG" \
		"http:127.0.0.2:0:$NET_DIR/www" \
		"https:127.0.0.2:0:$NET_DIR/www:$NET_DIR/server.pem:$NET_DIR/server.key" \
		"git:127.0.0.2:0:$NET_DIR/git:$NET_DIR/server.pem:$NET_DIR/server.key" \
		"https:127.0.0.3:0:$NET_DIR/www:$NET_DIR/server.pem:$NET_DIR/server.key" \
		"tcp:127.0.0.2:0" "udp:127.0.0.3:0" "tcp:[::1]:0" >"$NET_DIR/ready" 2>"$NET_DIR/serve.err" 3>&- &
	NET_PID=$!
	local i=0
	while [ "$(grep -c '^ready' "$NET_DIR/ready" 2>/dev/null)" != 7 ]; do
		i=$((i + 1))
		if [ "$i" -gt 100 ] || ! kill -0 "$NET_PID" 2>/dev/null; then
			cat "$NET_DIR/serve.err" >&2
			return 1
		fi
		sleep 0.1
	done
	{ read -r _ _ _ NET_HTTP && read -r _ _ _ NET_HTTPS && read -r _ _ _ NET_GIT &&
		read -r _ _ _ NET_DENIED && read -r _ _ _ NET_TCP && read -r _ _ _ NET_UDP && read -r _ _ _ NET_TCP6; } <"$NET_DIR/ready"
	export NET_DIR NET_CA NET_HOSTS NET_LOG NET_HTTP NET_HTTPS NET_GIT NET_DENIED NET_TCP NET_UDP NET_TCP6 NET_PID
}

net_world_stop() {
	[ -z "${NET_PID:-}" ] || kill "$NET_PID" 2>/dev/null || true
}

# Fails, printing the line, when the test server's log ($NET_LOG) holds
# a request matching the pattern: a refused connection never reached it.
never_served() { # grep -E pattern
	if grep -E -- "$1" "$NET_LOG"; then
		echo "the server saw it"
		return 1
	fi
}

# The pid of the proxy process below PID (an `airlock __netproxy`), or nothing.
proxy_below() { # pid
	local p c q
	for p in /proc/[0-9]*; do
		c=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		[[ "$c" == *__netproxy* ]] || continue
		q=${p#/proc/}
		for _ in 1 2 3 4 5 6 7 8; do
			q=$(awk '{print $4}' "/proc/$q/stat" 2>/dev/null) || break
			[ "$q" = "$1" ] && { echo "${p#/proc/}"; return 0; }
			[ "$q" -gt 1 ] || break
		done
	done
}
