/* SPDX-License-Identifier: MIT */
#include "core/host/hostview.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/dirread.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "core/agents/agenthost.h"
#include "sandbox/pathcache.h"

/* Refused as a workspace themselves (a project may live below them). */
static const char *const hostview_system_exact[] = {
	"/", "/var", "/var/tmp", "/tmp", "/mnt", "/media", "/run", "/snap",
};
/* Refused as a workspace, and everything below them: what the host runs, or
 * the state of what it runs (a package's maintainer scripts in
 * /var/lib/dpkg/info, a web server's /var/www or /srv, software in /opt).
 * /var/tmp is carved out below: scratch space, like /tmp. */
static const char *const hostview_system_tree[] = {
	"/etc",	   "/usr",  "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
	"/libx32", "/proc", "/sys",  "/dev", "/var",  "/opt", "/srv",
};

int hostview_parse_allow(const char *text, unsigned *flags)
{
	cleanup_free char *copy = strdup(text);
	char *save = NULL;
	unsigned f = 0;

	if (!copy)
		return -ENOMEM;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "home") == 0)
			f |= HOSTVIEW_ALLOW_HOME;
		else if (strcmp(tok, "system") == 0)
			f |= HOSTVIEW_ALLOW_SYSTEM;
		else
			return -EINVAL;
	}
	if (!f)
		return -EINVAL;
	*flags |= f;
	return 0;
}

void hostview_allow_names(unsigned flags, const char *ret[static 3])
{
	size_t n = 0;

	if (flags & HOSTVIEW_ALLOW_HOME)
		ret[n++] = "home";
	if (flags & HOSTVIEW_ALLOW_SYSTEM)
		ret[n++] = "system";
	ret[n] = NULL;
}

char *hostview_resolve(const char *path)
{
	if (!path || path[0] != '/')
		return NULL;
	char *resolved = pathcache_realpath(path);
	if (resolved || errno != ENOENT)
		return resolved ? resolved : strdup(path);
	/* The longest prefix that exists, resolved, plus the rest. */
	cleanup_free char *head = strdup(path);
	if (!head)
		return NULL;
	for (char *slash = strrchr(head, '/'); slash; slash = strrchr(head, '/')) {
		*slash = '\0';
		cleanup_free char *base = pathcache_realpath(head[0] ? head : "/");
		if (!base)
			continue;
		const char *rest = path + (slash - head) + 1;
		char *out = NULL;
		return asprintf(&out, "%s%s%s", base, strcmp(base, "/") == 0 ? "" : "/", rest) < 0
			       ? NULL
			       : out;
	}
	return strdup(path);
}

/* hostview_resolve() through the caller's cache, when it has one. */
static char *hostview_res(const struct hostview_caller *caller, const char *path)
{
	return hostview_resolve_in(caller ? caller->cache : NULL, path);
}

/* Appends the resolved path, once. */
static int hostview_push_resolved(const struct hostview_caller *caller, char ***list, const char *path)
{
	char *resolved = hostview_res(caller, path);

	if (!resolved)
		return -ENOMEM;
	if (strv_contains(*list, resolved)) {
		free(resolved);
		return 0;
	}
	return strv_consume(list, resolved);
}

/* /etc/nsswitch.conf and /etc/passwd are read whole up to this size;
 * a larger one is NSS's to read. */
#define HOSTVIEW_NSS_FILE_MAX (1u << 20)

bool hostview_nss_files_first(const char *nsswitch)
{
	bool seen = false;

	for (const char *line = nsswitch; line && *line;) {
		const char *end = line + strcspn(line, "\n");
		const char *hash = memchr(line, '#', (size_t)(end - line));
		const char *stop = hash ? hash : end;
		const char *p = line;
		line = *end ? end + 1 : end;
		while (p < stop && isspace((unsigned char)*p))
			p++;
		const char *name = p;
		while (p < stop && !isspace((unsigned char)*p) && *p != ':')
			p++;
		/* the database's name, as glibc reads it (nss_database.c's
		 * process_line()); in any case, so that one line glibc might
		 * read as passwd's is never left out, and then only as
		 * written: "PASSWD" is glibc's or not, whichever way it reads
		 * names, and its database then its own default */
		if (p == name || p == stop || (size_t)(p - name) != 6 ||
		    strncasecmp(name, "passwd", 6) != 0)
			continue;
		if (strncmp(name, "passwd", 6) != 0)
			return false;
		while (p < stop && (isspace((unsigned char)*p) || *p == ':'))
			p++;
		/* "files", then the end of the line or another service: not
		 * an action ("[SUCCESS=continue]"), which could go on past it */
		if (stop - p < 5 || strncmp(p, "files", 5) != 0)
			return false;
		p += 5;
		if (p < stop && !isspace((unsigned char)*p))
			return false;
		while (p < stop && isspace((unsigned char)*p))
			p++;
		if (p < stop && *p == '[')
			return false;
		seen = true;
	}
	return seen;
}

/* uid's home in /etc/passwd when that is NSS's answer: nsswitch.conf asks
 * the files service first for passwd (hostview_nss_files_first()), and
 * /etc/passwd has uid, whose first entry (not a "+" or "-" one, as the
 * files service skips them) is then what getpwuid_r() returns, from the
 * file or from nscd's copy of it. Without NSS's sockets to nscd and its
 * reload checks: ~20 us a hook call. 1 with *ret (NULL: that entry has no
 * absolute home), 0: NSS must be asked, -ENOMEM. */
static int hostview_passwd_home_files(uid_t uid, char **ret)
{
	cleanup_free char *conf = NULL, *passwd = NULL;
	size_t n_conf = 0, n_passwd = 0;
	struct error ignored = { 0 };

	*ret = NULL;
	if (file_read_capped(AT_FDCWD, "/etc/nsswitch.conf", HOSTVIEW_NSS_FILE_MAX, &conf, &n_conf,
			     &ignored) < 0 ||
	    strlen(conf) != n_conf || !hostview_nss_files_first(conf))
		return 0;
	if (file_read_capped(AT_FDCWD, "/etc/passwd", HOSTVIEW_NSS_FILE_MAX, &passwd, &n_passwd,
			     &ignored) < 0 ||
	    n_passwd == 0)
		return 0;
	cleanup_fclose FILE *f = fmemopen(passwd, n_passwd, "r");
	if (!f)
		return 0;
	char buf[4096];
	struct passwd pw, *found = NULL;
	while (fgetpwent_r(f, &pw, buf, sizeof(buf), &found) == 0 && found) {
		if (pw.pw_uid != uid || pw.pw_name[0] == '+' || pw.pw_name[0] == '-')
			continue;
		if (!pw.pw_dir || pw.pw_dir[0] != '/')
			return 1;
		*ret = strdup(pw.pw_dir);
		return *ret ? 1 : -ENOMEM;
	}
	/* not there, or an entry longer than buf: the other services */
	return 0;
}

/* The home the password database gives uid, or NULL. Through NSS, not
 * /etc/passwd alone: a home known only to LDAP or sssd is the caller's as
 * much as one in /etc/passwd, and must be hidden as carefully; /etc/passwd
 * read directly only where it is NSS's answer (hostview_passwd_home_files()). */
static char *hostview_passwd_home_lookup(uid_t uid)
{
	char *files = NULL;

	if (hostview_passwd_home_files(uid, &files) != 0)
		return files;
	long max = sysconf(_SC_GETPW_R_SIZE_MAX);
	size_t size = max > 0 ? (size_t)max : 16384;

	for (;;) {
		cleanup_free char *buf = malloc(size);
		struct passwd pw, *found = NULL;
		if (!buf)
			return NULL;
		int r = getpwuid_r(uid, &pw, buf, size, &found);
		if (r == ERANGE && size < (1u << 20)) {
			size *= 2;
			continue;
		}
		if (r != 0 || !found || !pw.pw_dir || pw.pw_dir[0] != '/')
			return NULL;
		return strdup(pw.pw_dir);
	}
}

/* hostview_passwd_home_lookup(), asked once per uid and process: a file
 * tool's check asked the same thing five times (each an open and read of
 * /etc/passwd through NSS). A home the lookup did not give is asked again. */
static char *hostview_passwd_home(uid_t uid)
{
	static uid_t cached_uid;
	static char *cached;

	if (!cached || cached_uid != uid) {
		char *home = hostview_passwd_home_lookup(uid);
		if (!home)
			return NULL;
		free(cached);
		cached = home;
		cached_uid = uid;
	}
	return strdup(cached);
}

/* The caller's homes as written, NULL-terminated: $HOME when absolute,
 * then the passwd home unless it resolves where $HOME does. "~/" in the
 * policy means each of them: a run must hide the same whether $HOME is
 * set, unset or elsewhere. */
static int hostview_caller_homes(const struct hostview_caller *caller, char ***ret)
{
	cleanup_strv char **homes = NULL;
	cleanup_free char *pw_home = hostview_passwd_home(caller->uid);

	if (caller->home && caller->home[0] == '/' && strv_push(&homes, caller->home) < 0)
		return -ENOMEM;
	if (homes && pw_home) {
		cleanup_free char *a = hostview_res(caller, homes[0]);
		cleanup_free char *b = hostview_res(caller, pw_home);
		if (!a || !b)
			return -ENOMEM;
		if (strcmp(a, b) == 0) {
			free(pw_home);
			pw_home = NULL;
		}
	}
	if (pw_home && strv_consume(&homes, TAKE_PTR(pw_home)) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(homes);
	return 0;
}

/* The caller's homes: those kept (hostview_caller_keep_homes()), else found
 * into *owned. */
static int hostview_caller_homes_of(const struct hostview_caller *caller, char ***owned,
				    char *const **ret)
{
	if (caller->homes) {
		*ret = caller->homes;
		return 0;
	}
	int r = hostview_caller_homes(caller, owned);
	*ret = *owned;
	return r;
}

int hostview_caller_keep_homes(struct hostview_caller *caller)
{
	cleanup_strv char **homes = NULL;
	int r = hostview_caller_homes(caller, &homes);

	if (r < 0)
		return r;
	/* an empty list, not NULL: none is an answer too */
	if (!homes && !(homes = calloc(1, sizeof(char *))))
		return -ENOMEM;
	strv_free(caller->homes);
	caller->homes = TAKE_PTR(homes);
	return 0;
}

static int hostview_state_candidate(const struct hostview_caller *caller, char ***list,
				    const char *base, const char *suffix)
{
	char *path = NULL;

	if (!base || base[0] != '/')
		return 0;
	if (asprintf(&path, "%s%s", base, suffix) < 0)
		return -ENOMEM;
	int r = hostview_push_resolved(caller, list, path);
	free(path);
	return r;
}

int hostview_state_dirs(const char *in_use, char *const *environ_,
			const struct hostview_caller *caller, char ***ret, struct error *err)
{
	cleanup_strv char **list = NULL;
	cleanup_free char *pw_home = hostview_passwd_home(caller->uid);
	int r = 0;

	if (in_use)
		r = hostview_state_candidate(caller, &list, in_use, "");
	if (r == 0)
		r = hostview_state_candidate(caller, &list,
					     strv_env_get(environ_, "AIRLOCK_STATE_DIR"), "");
	if (r == 0)
		r = hostview_state_candidate(caller, &list,
					     strv_env_get(environ_, "XDG_STATE_HOME"), "/airlock");
	if (r == 0)
		r = hostview_state_candidate(caller, &list, caller->home, "/.local/state/airlock");
	if (r == 0)
		r = hostview_state_candidate(caller, &list, pw_home, "/.local/state/airlock");
	/* the system approver (core/gate/approver.h): its salt would allow an
	 * offline guess at the passphrase */
	if (r == 0 && access("/etc/airlock", F_OK) == 0)
		r = hostview_state_candidate(caller, &list, "/etc/airlock", "");
	if (r < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(list);
	return 0;
}

/* /etc/passwd is read into memory up to this size; a larger one is read
 * from the file as it goes. */
#define HOSTVIEW_PASSWD_MAX (16u << 20)

/* Every home the workspace must not be or contain: the caller's ($HOME and
 * the passwd one), /root, /home, and each home in /etc/passwd. */
static int hostview_homes(const struct hostview_caller *caller, char ***ret)
{
	cleanup_strv char **homes = NULL;
	cleanup_free char *passwd = NULL;
	size_t passwd_len = 0;
	struct error ignored = { 0 };
	/* read whole, then parsed from memory: fgetpwent() on the file asks
	 * lseek() twice an entry (two system calls a home, 50 here); the
	 * file itself where that fails */
	cleanup_fclose FILE *f = NULL;
	if (file_read_capped(AT_FDCWD, "/etc/passwd", HOSTVIEW_PASSWD_MAX, &passwd, &passwd_len,
			     &ignored) == 0 &&
	    passwd_len == 0)
		f = NULL; /* no entries */
	else if (!passwd || !(f = fmemopen(passwd, passwd_len, "r")))
		f = fopen("/etc/passwd", "re");
	cleanup_free char *pw_home = hostview_passwd_home(caller->uid);
	struct passwd *pw;
	int r = 0;

	if (caller->home && caller->home[0] == '/')
		r = hostview_push_resolved(caller, &homes, caller->home);
	if (r == 0 && pw_home)
		r = hostview_push_resolved(caller, &homes, pw_home);
	if (r == 0)
		r = hostview_push_resolved(caller, &homes, "/root");
	/* /home itself, even where no home lies below it yet */
	if (r == 0)
		r = hostview_push_resolved(caller, &homes, "/home");
	while (r == 0 && f && (pw = fgetpwent(f)))
		if (pw->pw_dir && pw->pw_dir[0] == '/')
			r = hostview_push_resolved(caller, &homes, pw->pw_dir);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(homes);
	return 0;
}

/* The system directories resolved, each when first asked (NULL: not yet,
 * or out of memory), for the checks of one build: hostview_can_mask() asks
 * of every mask, and each ask resolved all 24 again. */
#define HOSTVIEW_N_SYSTEM (ARRAY_SIZE(hostview_system_exact) + 1 + ARRAY_SIZE(hostview_system_tree))
struct hostview_system {
	char *resolved[HOSTVIEW_N_SYSTEM];
	bool asked[HOSTVIEW_N_SYSTEM];
	struct hostview_cache *cache; /* the caller's, or NULL */
};

static void hostview_system_release(struct hostview_system *sys)
{
	for (size_t i = 0; i < HOSTVIEW_N_SYSTEM; i++)
		free(sys->resolved[i]);
	*sys = (struct hostview_system){ .cache = sys->cache };
}

/* Slot i of sys: the exact list, then /var/tmp, then the trees. */
static const char *hostview_system_get(struct hostview_system *sys, size_t i)
{
	size_t ne = ARRAY_SIZE(hostview_system_exact);
	const char *path = i < ne    ? hostview_system_exact[i]
			   : i == ne ? "/var/tmp"
				     : hostview_system_tree[i - ne - 1];

	if (!sys->asked[i]) {
		sys->resolved[i] = hostview_resolve_in(sys->cache, path);
		sys->asked[i] = true;
	}
	return sys->resolved[i];
}

/* The system directory the workspace is, or lies in, with its slot in sys
 * in *ret_slot; NULL when none. */
static const char *hostview_system_dir_in(struct hostview_system *sys, const char *workspace,
					  size_t *ret_slot)
{
	size_t ne = ARRAY_SIZE(hostview_system_exact);

	for (size_t i = 0; i < ne; i++) {
		const char *dir = hostview_system_get(sys, i);
		if (dir && strcmp(workspace, dir) == 0) {
			*ret_slot = i;
			return hostview_system_exact[i];
		}
	}
	const char *var_tmp = hostview_system_get(sys, ne);
	if (var_tmp && path_is_under(workspace, var_tmp))
		return NULL; /* below it: scratch space, as below /tmp */
	for (size_t i = 0; i < ARRAY_SIZE(hostview_system_tree); i++) {
		const char *dir = hostview_system_get(sys, ne + 1 + i);
		if (dir && path_is_under(workspace, dir)) {
			*ret_slot = ne + 1 + i;
			return hostview_system_tree[i];
		}
	}
	return NULL;
}

/* The system directory the workspace is, or lies in, its resolved path in
 * *buf; NULL when none. */
static const char *hostview_system_dir(const struct hostview_caller *caller, const char *workspace,
				       char **buf)
{
	struct hostview_system sys = { .cache = caller ? caller->cache : NULL };
	size_t slot = 0;
	const char *system = hostview_system_dir_in(&sys, workspace, &slot);

	free(*buf);
	*buf = system ? TAKE_PTR(sys.resolved[slot]) : NULL;
	hostview_system_release(&sys);
	return system;
}

int hostview_check_workspace(const char *workspace, unsigned allowed, char *const *state_dirs,
			     const struct hostview_caller *caller, struct error *err)
{
	for (size_t i = 0; state_dirs && state_dirs[i]; i++) {
		if (path_is_under(state_dirs[i], workspace))
			return error_set(err, EPERM,
					 "the workspace %.300s holds airlock's state directory %.300s: the command could replace it and forge receipts or the gate; pass another --workspace, or another --state-dir (no option allows this)",
					 workspace, state_dirs[i]);
		if (path_is_under(workspace, state_dirs[i]))
			return error_set(err, EPERM,
					 "the workspace %.300s lies in airlock's state directory %.300s: pass another --workspace (no option allows this)",
					 workspace, state_dirs[i]);
	}
	cleanup_free char *buf = NULL;
	const char *system = hostview_system_dir(caller, workspace, &buf);
	if (system && !(allowed & HOSTVIEW_ALLOW_SYSTEM))
		return error_set(err, EPERM,
				 "the workspace %.300s is %s system directory %.100s: the command could rewrite the host; pass --workspace DIR (a project directory), or --allow-workspace=system%s if that is really meant",
				 workspace, strcmp(workspace, buf) == 0 ? "the" : "below the",
				 system, strcmp(workspace, "/") == 0 ? ",home" : "");
	cleanup_strv char **homes = NULL;
	if (hostview_homes(caller, &homes) < 0)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; homes && homes[i]; i++) {
		if (!path_is_under(homes[i], workspace) || (allowed & HOSTVIEW_ALLOW_HOME))
			continue;
		bool same = strcmp(homes[i], workspace) == 0;
		return error_set(err, EPERM,
				 "the workspace %.300s %s the home directory %.300s: the command could plant shell startup files, keys or git hooks there; pass --workspace DIR (a project directory), or --allow-workspace=home%s if that is really meant",
				 workspace, same ? "is" : "holds", homes[i], system ? ",system" : "");
	}
	return 0;
}

struct hostview_caller hostview_caller_from_env(char *const *environ_)
{
	struct hostview_caller caller = { .home = strv_env_get(environ_, "HOME"), .uid = geteuid() };

	for (size_t h = 0; h < agenthost_count(); h++)
		if (agenthost_at(h)->home_env)
			caller.host_home[h] = strv_env_get(environ_, agenthost_at(h)->home_env);
	return caller;
}

/* Whether the caller has an absolute home for host h (its home_env). */
static bool hostview_host_home(const struct hostview_caller *caller, size_t h)
{
	return h < AGENTHOST_MAX && caller->host_home[h] && caller->host_home[h][0] == '/';
}

/* A list as it is built: its length and room kept, where an
 * strv_consume() per path measured the list each time (quadratic in the
 * ~140 paths of the hide list). */
struct hostview_list {
	char **v;
	size_t n, cap;
};

/* Appends path to the list; takes it. hostview_dedupe() drops the
 * repeats once the list is whole. */
static int hostview_hide(struct hostview_list *l, char *path)
{
	if (!path)
		return -ENOMEM;
	if (l->n + 2 > l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		char **v = realloc(l->v, cap * sizeof(char *));
		if (!v) {
			free(path);
			return -ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = path;
	l->v[l->n] = NULL;
	return 0;
}

/* Appends base/rel for each rel of rels (NULL-terminated) to l; with
 * below, only those that lie below it (path_is_under(), not below itself). */
static int hostview_push_joined(struct hostview_list *l, const char *base, const char *const *rels,
				const char *below)
{
	/* None of base/... lies below a directory that neither holds base
	 * nor lies in it (neither ending in '/', below not "/"). */
	size_t nb = strlen(base), nd = below ? strlen(below) : 0;
	if (below && nb && base[nb - 1] != '/' && nd > 1 && below[nd - 1] != '/' &&
	    !path_is_under(base, below) && !path_is_under(below, base))
		return 0;
	for (size_t k = 0; rels && rels[k]; k++) {
		char *p = path_join(base, rels[k]);
		if (p && below && (!path_is_under(p, below) || strcmp(p, below) == 0)) {
			free(p);
			continue;
		}
		if (hostview_hide(l, p) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* hostview_config_files() appended to l, with below as in
 * hostview_push_joined(): one list grown by doubling, each path made once
 * (hostview_config_in_workspace() copied the workspace's out of a list of
 * all, and each append measured the list). -ENOMEM or 0. */
static int hostview_config_list(const char *workspace, const struct hostview_caller *caller,
				const char *below, struct hostview_list *l)
{
	static const char *const airlock_dir[] = { ".airlock", NULL };
	int r = 0;

	if (workspace && workspace[0] == '/') {
		r = hostview_push_joined(l, workspace, airlock_dir, below);
		for (size_t h = 0; r == 0 && h < agenthost_count(); h++)
			r = hostview_push_joined(l, workspace, agenthost_at(h)->project_dirs, below);
		for (size_t h = 0; r == 0 && h < agenthost_count(); h++)
			r = hostview_push_joined(l, workspace, agenthost_at(h)->project_config, below);
	}
	cleanup_strv char **owned = NULL;
	char *const *homes = NULL;
	if (r == 0)
		r = hostview_caller_homes_of(caller, &owned, &homes);
	for (size_t k = 0; r == 0 && homes && homes[k]; k++) {
		r = hostview_push_joined(l, homes[k], airlock_dir, below);
		for (size_t h = 0; r == 0 && h < agenthost_count(); h++)
			r = hostview_push_joined(l, homes[k], agenthost_at(h)->user_config, below);
	}
	for (size_t h = 0; r == 0 && h < agenthost_count(); h++)
		if (hostview_host_home(caller, h))
			r = hostview_push_joined(l, caller->host_home[h],
						 agenthost_at(h)->home_config, below);
	return r < 0 ? -ENOMEM : 0;
}

int hostview_config_files(const char *workspace, const struct hostview_caller *caller, char ***ret,
			  struct error *err)
{
	struct hostview_list l = { 0 };

	if (hostview_config_list(workspace, caller, NULL, &l) < 0) {
		strv_free(l.v);
		return error_set(err, ENOMEM, "out of memory");
	}
	*ret = l.v;
	return 0;
}

/* The project directory of host that holds rel, or is it; NULL: none. */
static const char *hostview_config_dir(const struct agent_host *host, const char *rel)
{
	for (size_t i = 0; host->project_dirs && host->project_dirs[i]; i++) {
		size_t n = strlen(host->project_dirs[i]);
		if (strncmp(rel, host->project_dirs[i], n) == 0 && (rel[n] == '\0' || rel[n] == '/'))
			return host->project_dirs[i];
	}
	return NULL;
}

int hostview_config_names(char ***ret)
{
	cleanup_strv char **names = NULL;

	if (strv_push(&names, ".airlock") < 0)
		return -ENOMEM;
	for (size_t h = 0; h < agenthost_count(); h++) {
		const struct agent_host *info = agenthost_at(h);
		const char *const *lists[] = { info->project_dirs, info->project_config };
		for (size_t l = 0; l < ARRAY_SIZE(lists); l++)
			for (size_t k = 0; lists[l][k]; k++) {
				/* The host's project directory the entry lies in, whole
				 * (Copilot's .github/hooks: .github is not the host's),
				 * else its first component. */
				const char *dir = hostview_config_dir(info, lists[l][k]);
				cleanup_free char *first =
					dir ? strdup(dir)
					    : strndup(lists[l][k], strcspn(lists[l][k], "/"));
				if (!first)
					return -ENOMEM;
				if (!strv_contains(names, first) && strv_push(&names, first) < 0)
					return -ENOMEM;
			}
	}
	*ret = TAKE_PTR(names);
	return 0;
}

struct hostview_slot {
	const char *s;
	size_t hash;
};

static size_t hostview_hash(const char *s)
{
	size_t h = (size_t)14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * (size_t)1099511628211ULL;
	return h;
}

/* Drops every repeat of an earlier entry from list (n long), in place,
 * keeping the first of each in its order: what a strv_contains() before
 * each append did, through a hash table of the entries kept (n string
 * hashes, a compare for each that collides) instead of n^2 compares. */
static int hostview_dedupe(char **list, size_t n)
{
	if (n < 2)
		return 0;
	size_t cap = 4;
	while (cap < 2 * n)
		cap *= 2;
	cleanup_free struct hostview_slot *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		size_t h = hostview_hash(list[i]), at = h & (cap - 1);
		bool seen = false;
		for (; slots[at].s; at = (at + 1) & (cap - 1))
			if (slots[at].hash == h && strcmp(slots[at].s, list[i]) == 0) {
				seen = true;
				break;
			}
		if (seen) {
			free(list[i]);
			continue;
		}
		slots[at] = (struct hostview_slot){ .s = list[i], .hash = h };
		list[k++] = list[i];
	}
	list[k] = NULL;
	return 0;
}

/* hostview_config_in_workspace() for resolved, the caller with its homes
 * resolved, and nobody, the caller without homes (for the directories
 * below the workspace). */
static int hostview_config_in_workspace_at(const char *workspace, const char *cwd,
					   const struct hostview_caller *resolved,
					   const struct hostview_caller *nobody, char ***ret,
					   struct error *err)
{
	struct hostview_list l = { 0 };
	cleanup_strv char **inside = NULL; /* l.v, freed with it */
	int r = hostview_config_list(workspace, resolved, workspace, &l);
	inside = l.v;
	if (r < 0)
		return error_set(err, ENOMEM, "out of memory");
	/* A host started in a subdirectory reads that directory's settings:
	 * each directory from the workspace down to cwd is a project root. */
	size_t n = strlen(workspace);
	if (cwd && path_is_under(cwd, workspace))
		for (const char *p = cwd + n; (p = strchr(p, '/')); p++) {
			const char *end = strchr(p + 1, '/');
			cleanup_free char *dir = strndup(cwd, end ? (size_t)(end - cwd) : strlen(cwd));
			if (!dir)
				return error_set(err, ENOMEM, "out of memory");
			r = hostview_config_list(dir, nobody, workspace, &l);
			inside = l.v;
			if (r < 0)
				return error_set(err, ENOMEM, "out of memory");
		}
	if (hostview_dedupe(l.v, l.n) < 0)
		return error_set(err, ENOMEM, "out of memory");
	*ret = TAKE_PTR(inside);
	return 0;
}

int hostview_config_in_workspace(const char *workspace, const char *cwd,
				 const struct hostview_caller *caller, char ***ret, struct error *err)
{
	cleanup_free char *home = hostview_res(caller, caller->home);
	char *host_home[AGENTHOST_MAX] = { 0 };
	struct hostview_caller resolved = { .home = home, .uid = caller->uid, .cache = caller->cache };
	const struct hostview_caller nobody = { .uid = caller->uid, .cache = caller->cache };
	bool oom = caller->home && caller->home[0] == '/' && !home;

	for (size_t h = 0; h < agenthost_count(); h++) {
		if (!hostview_host_home(caller, h))
			continue;
		host_home[h] = hostview_res(caller, caller->host_home[h]);
		resolved.host_home[h] = host_home[h];
		oom = oom || !host_home[h];
	}
	int r = oom ? error_set(err, ENOMEM, "out of memory")
		    : hostview_config_in_workspace_at(workspace, cwd, &resolved, &nobody, ret, err);
	for (size_t h = 0; h < AGENTHOST_MAX; h++)
		free(host_home[h]);
	return r;
}

bool hostview_config_in_workspace_covers(const char *workspace)
{
	size_t n = workspace ? strlen(workspace) : 0;

	/* hostview_config_list() puts workspace/rel for constant rels of the
	 * hosts' table (none empty, none with ".."), which path_is_under()
	 * finds below such a workspace (tests/unit/test_hostsafety.c) */
	return n > 0 && workspace[0] == '/' && (n == 1 || workspace[n - 1] != '/');
}

/* Whether dir is, holds or lies in path. */
static bool hostview_overlaps(const char *dir, const char *path)
{
	return path_is_under(dir, path) || path_is_under(path, dir);
}

/* A writable directory must not hand the command what the quarantine
 * keeps from it, and must not hold what a mount cannot pin: a mount over a
 * state directory or .airlock does not keep the command from renaming a
 * parent and putting a forged one in its place (docs/sandbox.md, "Which
 * workspaces are refused"). */
int hostview_check_writable(const char *dir, const char *workspace, char *const *state_dirs,
			    const struct hostview_caller *caller, struct error *err)
{
	for (size_t i = 0; state_dirs && state_dirs[i]; i++)
		if (hostview_overlaps(dir, state_dirs[i]))
			return error_set(err, EPERM,
					 "sandbox.writable: %.300s %s airlock's state directory %.300s: the command could forge receipts or the gate",
					 dir,
					 strcmp(dir, state_dirs[i]) == 0     ? "is"
					 : path_is_under(state_dirs[i], dir) ? "holds"
									     : "lies in",
					 state_dirs[i]);
	cleanup_free char *buf = NULL;
	const char *system = hostview_system_dir(caller, dir, &buf);
	if (system)
		return error_set(err, EPERM,
				 "sandbox.writable: %.300s is %s system directory %.100s: the command could rewrite the host",
				 dir, strcmp(dir, buf) == 0 ? "the" : "below the", system);
	cleanup_strv char **homes = NULL;
	if (hostview_homes(caller, &homes) < 0)
		return error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; homes && homes[i]; i++)
		if (path_is_under(homes[i], dir))
			return error_set(err, EPERM,
					 "sandbox.writable: %.300s %s the home directory %.300s: the command could plant shell startup files, keys or hooks there; name a directory below it",
					 dir, strcmp(homes[i], dir) == 0 ? "is" : "holds", homes[i]);
	if (workspace && hostview_overlaps(dir, workspace))
		return error_set(err, EPERM,
				 "sandbox.writable: %.300s %s the workspace %.300s, which has its own read-only paths",
				 dir,
				 strcmp(dir, workspace) == 0	 ? "is"
				 : path_is_under(workspace, dir) ? "holds"
								 : "lies in",
				 workspace);
	const char *base = strrchr(dir, '/');
	if (strstr(dir, "/.airlock/") || (base && strcmp(base + 1, ".airlock") == 0))
		return error_set(err, EPERM,
				 "sandbox.writable: %.300s is or lies in an .airlock directory, airlock's configuration",
				 dir);
	cleanup_strv char **configs = NULL;
	int r = hostview_config_files(workspace, caller, &configs, err);
	if (r < 0)
		return r;
	for (size_t i = 0; configs && configs[i]; i++) {
		cleanup_free char *config = hostview_res(caller, configs[i]);
		if (!config)
			return error_set(err, ENOMEM, "out of memory");
		if (hostview_overlaps(dir, config))
			return error_set(err, EPERM,
					 "sandbox.writable: %.300s %s %.300s, airlock's configuration (a routed commands' policy, or a host's hook settings)",
					 dir, path_is_under(config, dir) ? "holds" : "lies in",
					 config);
	}
	return 0;
}

int hostview_open_writable(const char *entry, const char *workspace, char *const *state_dirs,
			   const struct hostview_caller *caller, struct stat *ret_st,
			   char **ret_path, struct error *err)
{
	cleanup_free char *path = hostview_expand_home(entry, caller->home);
	if (!path)
		return error_set(err, EINVAL, "sandbox.writable '%.300s': no home to expand it in",
				 entry);
	cleanup_close int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return error_set(err, errno, "sandbox.writable '%.300s': %s", entry, strerror(errno));
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	cleanup_free char *resolved = realpath(proc, NULL);
	if (!resolved)
		return error_set(err, errno,
				 "sandbox.writable '%.300s': cannot tell where it leads: %s", entry,
				 strerror(errno));
	int r = hostview_check_writable(resolved, workspace, state_dirs, caller, err);
	if (r < 0)
		return r;
	*ret_st = st;
	*ret_path = TAKE_PTR(resolved);
	return TAKE_FD(fd);
}

char *hostview_expand_home(const char *path, const char *home)
{
	char *out = NULL;

	if (strncmp(path, "~/", 2) != 0)
		return strdup(path);
	if (!home || home[0] != '/')
		return NULL;
	/* home "/" path + 2, as asprintf("%s/%s") would, without it */
	size_t nh = strlen(home), np = strlen(path + 2);
	if (!(out = malloc(nh + 1 + np + 1)))
		return NULL;
	memcpy(out, home, nh);
	out[nh] = '/';
	memcpy(out + nh + 1, path + 2, np + 1);
	return out;
}

static bool hostview_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Masks the sandbox can build: an existing directory, not "/" or a system
 * directory, not below the private /tmp or the empty /run (already hidden),
 * not below the workspace (the writable workspace would cover it), and not
 * holding or inside another mask. */
static bool hostview_can_mask(const struct hostview *hv, struct hostview_system *sys,
			      const char *path, const char *workspace)
{
	size_t slot;

	if (!hostview_is_dir(path) || strcmp(path, "/") == 0 ||
	    hostview_system_dir_in(sys, path, &slot))
		return false;
	if (path_is_under(path, "/tmp") || path_is_under(path, "/run") ||
	    path_is_under(path, workspace))
		return false;
	for (size_t i = 0; i < hv->n_masks; i++)
		if (path_is_under(path, hv->mask_paths[i]) || path_is_under(hv->mask_paths[i], path))
			return false;
	return true;
}

static int hostview_add_mask(struct hostview *hv, struct hostview_system *sys, const char *path,
			     const char *workspace)
{
	if (hv->n_masks == SANDBOX_MAX_MASKS || !hostview_can_mask(hv, sys, path, workspace))
		return 0;
	hv->mask_paths[hv->n_masks] = strdup(path);
	if (!hv->mask_paths[hv->n_masks])
		return -ENOMEM;
	hv->n_masks++;
	return 0;
}

/* Leaves path (resolved) visible in the mask that holds it, if one does. */
static int hostview_expose(struct hostview *hv, const char *path)
{
	for (size_t i = 0; i < hv->n_masks; i++) {
		if (!path_is_under(path, hv->mask_paths[i]) || strcmp(path, hv->mask_paths[i]) == 0)
			continue;
		if (strv_contains(hv->expose[i], path))
			return 0;
		return strv_push(&hv->expose[i], path);
	}
	return 0;
}

/* Whether the caller owns path: a home that belongs to someone else is not
 * the caller's, whatever $HOME says. */
static bool hostview_owned(const char *path, uid_t uid)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_uid == uid;
}

/* homes: the caller's (hostview_caller_homes()). */
static int hostview_build_masks(struct hostview *hv, const struct policy *policy,
				const struct hostview_caller *caller, char *const *homes,
				const char *workspace)
{
	cleanup_free char *homes_root = hostview_res(caller, "/home");
	cleanup_free char *root_home = hostview_res(caller, "/root");
	cleanup_strv char **resolved = NULL;
	cleanup_with(hostview_system_release) struct hostview_system sys = { .cache = caller->cache };
	int r = 0;

	for (size_t i = 0; homes && homes[i]; i++)
		if (strv_consume(&resolved, hostview_res(caller, homes[i])) < 0)
			return -ENOMEM;
	/* Other users' homes: /home whole (one mount, however many users), and
	 * /root for everyone but root, whatever $HOME says. */
	if (homes_root)
		r = hostview_add_mask(hv, &sys, homes_root, workspace);
	if (r == 0 && root_home && caller->uid != 0)
		r = hostview_add_mask(hv, &sys, root_home, workspace);
	if (r < 0)
		return r;
	if (!policy->home_hidden) {
		/* The caller's own homes stay visible (their secrets hidden by
		 * the list); each is checked to be the caller's. */
		for (size_t i = 0; r == 0 && resolved && resolved[i]; i++)
			if (hostview_owned(resolved[i], caller->uid))
				r = hostview_expose(hv, resolved[i]);
		return r;
	}
	/* The caller's homes hidden but for sandbox.home_allow: root's /root
	 * too, and the passwd home when $HOME is unset or elsewhere. */
	for (size_t i = 0; r == 0 && resolved && resolved[i]; i++)
		r = hostview_add_mask(hv, &sys, resolved[i], workspace);
	for (size_t i = 0; r == 0 && policy->home_allow && policy->home_allow[i]; i++)
		for (size_t k = 0; r == 0 && homes && homes[k]; k++) {
			if (!hostview_owned(resolved[k], caller->uid))
				continue;
			cleanup_free char *raw = hostview_expand_home(policy->home_allow[i], homes[k]);
			cleanup_free char *path = raw ? realpath(raw, NULL) : NULL;
			if (path)
				r = hostview_expose(hv, path);
		}
	return r;
}

/* sandbox.hide with "~/" in each of the caller's homes, and what is hidden
 * whatever the policy says: each agent host's credentials (agenthost.h) in
 * each home and in its absolute home_env ($CODEX_HOME), and every state
 * directory. */
static int hostview_build_hide(struct hostview *hv, const struct policy *policy,
			       const struct hostview_caller *caller, char *const *homes,
			       char *const *state_dirs)
{
	struct hostview_list l = { 0 };
	int r = 0;

	for (size_t i = 0; r == 0 && policy->hide && policy->hide[i]; i++) {
		const char *entry = policy->hide[i];
		if (strncmp(entry, "~/", 2) != 0) {
			r = hostview_hide(&l, strdup(entry));
			continue;
		}
		for (size_t k = 0; r == 0 && homes && homes[k]; k++)
			r = hostview_hide(&l, hostview_expand_home(entry, homes[k]));
	}
	for (size_t k = 0; r == 0 && homes && homes[k]; k++)
		for (size_t h = 0; r == 0 && h < agenthost_count(); h++) {
			const char *const *rels = agenthost_at(h)->credentials;
			for (size_t j = 0; r == 0 && rels[j]; j++)
				r = hostview_hide(&l, path_join(homes[k], rels[j]));
		}
	for (size_t h = 0; r == 0 && h < agenthost_count(); h++) {
		const char *const *rels = agenthost_at(h)->home_credentials;
		for (size_t j = 0; r == 0 && hostview_host_home(caller, h) && rels && rels[j]; j++)
			r = hostview_hide(&l, path_join(caller->host_home[h], rels[j]));
	}
	/* airlock's own state: never visible from inside, wherever it is. */
	for (size_t i = 0; r == 0 && state_dirs && state_dirs[i]; i++)
		r = hostview_hide(&l, strdup(state_dirs[i]));
	hv->hide = l.v; /* released with hv, whole or not */
	return r == 0 ? hostview_dedupe(l.v, l.n) : r;
}

int hostview_build(const struct policy *policy, const struct hostview_caller *caller,
		   const char *workspace, char *const *state_dirs, struct hostview *ret,
		   struct error *err)
{
	struct hostview hv = { 0 };
	cleanup_strv char **owned = NULL;
	char *const *homes = NULL;
	int r = hostview_caller_homes_of(caller, &owned, &homes);

	if (r == 0)
		r = hostview_build_hide(&hv, policy, caller, homes, state_dirs);
	if (r == 0)
		r = hostview_build_masks(&hv, policy, caller, homes, workspace);
	if (r < 0) {
		hostview_release(&hv);
		return error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < hv.n_masks; i++)
		hv.masks[i] =
			(struct sandbox_mask){ .path = hv.mask_paths[i], .expose = hv.expose[i] };
	*ret = hv;
	return 0;
}

void hostview_release(struct hostview *hv)
{
	strv_free(hv->hide);
	for (size_t i = 0; i < hv->n_masks; i++) {
		free(hv->mask_paths[i]);
		strv_free(hv->expose[i]);
	}
	*hv = (struct hostview){ 0 };
}

/* A hostview_cache: what realpath() said of each plain path asked (and of
 * each of its parents, resolved on the way), and what hostview_resolve()
 * said of each path asked. A hash table (FNV-1a, linear probing) of
 * entries allocated one by one, so that an entry stays where it is while
 * the table grows under a recursion. */
struct hostview_fact {
	const char *path; /* in the arena, as the rest */
	size_t hash;
	bool real_known, resolved_known;
	bool busy; /* its realpath() being found: a link back to it is a loop */
	const char *real; /* realpath()'s answer; NULL: it failed with real_errno */
	int real_errno;
	/* symlinks realpath() followed to its answer (or its failure);
	 * HOSTVIEW_LINKS_UNKNOWN: glibc's realpath() answered */
	unsigned links;
	const char *resolved; /* hostview_resolve()'s answer */
};

/* Entries and their strings, freed together: a few dozen of each. */
struct hostview_block {
	struct hostview_block *next;
	size_t used, cap;
	max_align_t data[];
};

#define HOSTVIEW_LINKS_MAX     40 /* glibc's __eloop_threshold(): MAXSYMLINKS */
#define HOSTVIEW_LINKS_UNKNOWN (HOSTVIEW_LINKS_MAX + 1)

/* Names in the root resolved by readlink() before it is read whole: a
 * check that resolves a few of them (a shell call: the homes) reads
 * nothing; one that resolves the system directories (24 names, and the
 * homes) reads it once. */
#define HOSTVIEW_ROOT_AFTER 4

struct hostview_cache {
	struct hostview_fact **slots;
	size_t cap, n; /* cap: a power of two */
	unsigned depth; /* of hostview_real_fact()'s recursion */
	struct hostview_block *arena;
	/* the root directory's entries (hostview_root_list()), read when
	 * first asked: listed 1, or -1 when it is not to be */
	signed char root_listed;
	unsigned root_asks; /* names in it resolved so far */
	size_t n_root;
	struct hostview_entry {
		const char *name; /* in the arena */
		size_t len;
		unsigned char type; /* d_type */
	} root[HOSTVIEW_ROOT_MAX_NAMES];
};

/* Deeper than this, glibc's realpath() answers (a path of that many
 * components, or that many links to links). */
#define HOSTVIEW_DEPTH_MAX 256

struct hostview_cache *hostview_cache_new(void)
{
	struct hostview_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cap = 128;
	c->slots = calloc(c->cap, sizeof(struct hostview_fact *));
	if (!c->slots) {
		free(c);
		return NULL;
	}
	return c;
}

void hostview_cache_free(struct hostview_cache *c)
{
	if (!c)
		return;
	while (c->arena) {
		struct hostview_block *next = c->arena->next;
		free(c->arena);
		c->arena = next;
	}
	free(c->slots);
	free(c);
}

/* n bytes (aligned) in c's arena; NULL without memory. */
static void *hostview_alloc(struct hostview_cache *c, size_t n)
{
	struct hostview_block *b = c->arena;

	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 8192 ? n : 8192;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->next = c->arena;
		b->used = 0;
		b->cap = cap;
		c->arena = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += n;
	return p;
}

/* A copy of s in c's arena; NULL without memory. */
static const char *hostview_keep(struct hostview_cache *c, const char *s)
{
	size_t n = strlen(s) + 1;
	char *copy = hostview_alloc(c, n);

	return copy ? memcpy(copy, s, n) : NULL;
}

/* path's entry, made when new; NULL without memory. */
static struct hostview_fact *hostview_fact(struct hostview_cache *c, const char *path)
{
	size_t h = hostview_hash(path), i;

	for (i = h & (c->cap - 1); c->slots[i]; i = (i + 1) & (c->cap - 1))
		if (c->slots[i]->hash == h && strcmp(c->slots[i]->path, path) == 0)
			return c->slots[i];
	if (2 * (c->n + 1) > c->cap) {
		size_t cap = 2 * c->cap;
		struct hostview_fact **slots = calloc(cap, sizeof(struct hostview_fact *));
		if (!slots)
			return NULL;
		for (size_t k = 0; k < c->cap; k++) {
			if (!c->slots[k])
				continue;
			size_t j = c->slots[k]->hash & (cap - 1);
			while (slots[j])
				j = (j + 1) & (cap - 1);
			slots[j] = c->slots[k];
		}
		free(c->slots);
		c->slots = slots;
		c->cap = cap;
		for (i = h & (c->cap - 1); c->slots[i]; i = (i + 1) & (c->cap - 1))
			;
	}
	struct hostview_fact *f = hostview_alloc(c, sizeof(*f));
	if (!f)
		return NULL;
	*f = (struct hostview_fact){ .path = hostview_keep(c, path), .hash = h };
	if (!f->path)
		return NULL;
	c->slots[i] = f;
	c->n++;
	return f;
}

/* An absolute path without ".", ".." or empty components, without a
 * trailing slash and shorter than PATH_MAX: glibc's realpath() of it is
 * its parent's and then one readlink() of the last name, and never checks
 * that a component is a directory but by looking up the next one. */
static bool hostview_plain(const char *path)
{
	size_t len = strlen(path);

	if (path[0] != '/' || len >= PATH_MAX || (len > 1 && path[len - 1] == '/'))
		return false;
	for (const char *p = path; *p; p++)
		if (p[0] == '/' &&
		    (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0' ||
						     (p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))))
			return false;
	return true;
}

/* a + "/" + b ("/" + b when a is "/"); NULL without memory. */
static char *hostview_join(const char *a, const char *b)
{
	size_t na = strcmp(a, "/") == 0 ? 0 : strlen(a), nb = strlen(b);
	char *out = malloc(na + 1 + nb + 1);

	if (!out)
		return NULL;
	memcpy(out, a, na);
	out[na] = '/';
	memcpy(out + na + 1, b, nb + 1);
	return out;
}

/* readlink() of path: >= 0 when it is a link, its target (malloc'd) in
 * *ret, or NULL there when the target does not fit in PATH_MAX or there is
 * no memory; else -1 with errno. Not inlined: its buffer stays off the
 * stack of the recursion that asks. */
__attribute__((noinline)) static ssize_t hostview_readlink(const char *path, char **ret)
{
	char target[PATH_MAX];
	ssize_t n = readlink(path, target, sizeof(target) - 1);

	*ret = NULL;
	if (n < 0)
		return -1;
	if (n >= (ssize_t)sizeof(target) - 1)
		return n;
	target[n] = '\0';
	*ret = strdup(target);
	return n;
}

static const struct hostview_fact *hostview_real_fact(struct hostview_cache *c, const char *path);

/* Reads the root directory's entries into c (root_listed 1), or marks it
 * as not to be read (-1): only where a listing holds exactly the names a
 * lookup finds (dirread_exact()). The system directories (/etc, /usr,
 * /var, ... 24 of them) and the homes are each a name in it: one read
 * instead of a readlink() each. */
static void hostview_root_list(struct hostview_cache *c)
{
	cleanup_close int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[4096];

	c->root_listed = -1;
	if (fd < 0 || !dirread_exact(fd))
		return;
	size_t n = 0;
	struct dirread dr;
	struct dirread_entry de;
	dirread_init(&dr, fd, buf, sizeof(buf));
	for (;;) {
		int got = dirread_next(&dr, &de);
		if (got == 0)
			break;
		if (got < 0)
			return;
		if (n == HOSTVIEW_ROOT_MAX_NAMES) /* one more: asked name by name */
			return;
		const char *name = hostview_keep(c, de.name);
		if (!name)
			return;
		c->root[n++] = (struct hostview_entry){ .name = name, .len = de.len, .type = de.type };
	}
	c->n_root = n;
	c->root_listed = 1;
}

/* What the root's listing says of "/" + name: -1 nothing (no listing, a
 * name longer than a component, or an entry that may be a link: only a
 * directory entry is surely none, as only a directory can be mounted on
 * one), 0 that it does not exist, 1 a directory. */
static int hostview_root_says(struct hostview_cache *c, const char *name)
{
	if (c->root_listed == 0 && ++c->root_asks <= HOSTVIEW_ROOT_AFTER)
		return -1;
	if (c->root_listed == 0)
		hostview_root_list(c);
	size_t len = strlen(name);
	if (c->root_listed < 0 || len > NAME_MAX)
		return -1;
	for (size_t i = 0; i < c->n_root; i++)
		if (c->root[i].len == len && memcmp(c->root[i].name, name, len) == 0)
			return c->root[i].type == DT_DIR ? 1 : -1;
	return 0;
}

/* The answer of glibc's realpath() for f, with the links unknown. */
static int hostview_real_libc(struct hostview_cache *c, struct hostview_fact *f)
{
	cleanup_free char *real = realpath(f->path, NULL);

	f->real_errno = real ? 0 : errno;
	f->real = real ? hostview_keep(c, real) : NULL;
	if (real && !f->real)
		f->real_errno = ENOMEM; /* as realpath() without memory */
	f->links = HOSTVIEW_LINKS_UNKNOWN;
	return 0;
}

/* realpath() of f->path (plain, not "/") as glibc's walks it: its
 * parent's answer (the same walk up to the last name: a failure there is
 * the same failure with the same errno), then readlink() of the last name
 * below it: not a link (EINVAL) adds the name, another failure is the
 * answer; a link goes on from its target, from the cache when the target
 * is plain and the links followed stay within glibc's 40 (it counts them
 * over the whole walk), else through glibc. */
static int hostview_real_walk(struct hostview_cache *c, struct hostview_fact *f)
{
	const char *slash = strrchr(f->path, '/');
	cleanup_free char *parent = strndup(f->path, slash == f->path ? 1 : (size_t)(slash - f->path));
	const struct hostview_fact *up = parent ? hostview_real_fact(c, parent) : NULL;

	if (!up)
		return hostview_real_libc(c, f);
	if (!up->real) {
		f->real_errno = up->real_errno;
		f->links = up->links;
		return 0;
	}
	cleanup_free char *full = hostview_join(up->real, slash + 1);
	if (!full || strlen(full) >= PATH_MAX)
		return hostview_real_libc(c, f);
	/* A name in the root: its listing answers for a directory (readlink()
	 * would fail with EINVAL) and for a name it does not hold (ENOENT;
	 * were the root not searchable, EACCES, and hostview_resolve() makes
	 * the same path of either: the path as written, or "/" and the rest) */
	int says = strcmp(up->real, "/") == 0 ? hostview_root_says(c, full + 1) : -1;
	if (says == 0) {
		f->real_errno = ENOENT;
		f->links = up->links;
		return 0;
	}
	if (says == 1) {
		f->real = hostview_keep(c, full);
		f->links = up->links;
		return f->real ? 0 : hostview_real_libc(c, f);
	}
	cleanup_free char *target = NULL;
	ssize_t n = hostview_readlink(full, &target);
	if (n < 0) {
		if (errno == EINVAL) {
			f->real = hostview_keep(c, full);
			if (!f->real)
				return hostview_real_libc(c, f);
			f->links = up->links;
		} else {
			f->real_errno = errno;
			f->links = up->links;
		}
		return 0;
	}
	if (!target || n == 0 || up->links + 1 > HOSTVIEW_LINKS_MAX)
		return hostview_real_libc(c, f);
	cleanup_free char *next = target[0] == '/' ? strdup(target) : hostview_join(up->real, target);
	if (!next || !hostview_plain(next))
		return hostview_real_libc(c, f);
	const struct hostview_fact *to = hostview_real_fact(c, next);
	if (!to || to->links > HOSTVIEW_LINKS_MAX - 1 - up->links)
		return hostview_real_libc(c, f);
	f->real = to->real; /* the arena's: lives as long */
	f->real_errno = to->real_errno;
	f->links = up->links + 1 + to->links;
	return 0;
}

/* path's realpath() in its entry (real_known); NULL without memory, in a
 * loop (path is being resolved already) or too deep: the caller asks
 * glibc's realpath() instead. */
static const struct hostview_fact *hostview_real_fact(struct hostview_cache *c, const char *path)
{
	struct hostview_fact *f = hostview_fact(c, path);

	if (!f || f->real_known)
		return f;
	if (f->busy || c->depth >= HOSTVIEW_DEPTH_MAX)
		return NULL;
	if (strcmp(path, "/") == 0) {
		f->real = "/";
	} else {
		f->busy = true;
		c->depth++;
		(void)hostview_real_walk(c, f);
		c->depth--;
		f->busy = false;
	}
	f->real_known = true;
	return f;
}

/* As realpath(path, NULL), through c: a malloc'd path, or NULL with errno
 * set. A path that is not plain goes to the libc (pathcache_realpath(),
 * which is realpath() unless a run's cache is open), as before. */
static char *hostview_realpath_in(struct hostview_cache *c, const char *path)
{
	if (!hostview_plain(path))
		return pathcache_realpath(path);
	const struct hostview_fact *f = hostview_real_fact(c, path);
	if (!f)
		return pathcache_realpath(path);
	if (!f->real) {
		errno = f->real_errno;
		return NULL;
	}
	char *copy = strdup(f->real);
	if (!copy)
		errno = ENOMEM;
	return copy;
}

/* hostview_resolve() with realpath() through c (the same steps). */
static char *hostview_resolve_with(struct hostview_cache *c, const char *path)
{
	char *resolved = hostview_realpath_in(c, path);
	if (resolved || errno != ENOENT)
		return resolved ? resolved : strdup(path);
	/* The longest prefix that exists, resolved, plus the rest. */
	cleanup_free char *head = strdup(path);
	if (!head)
		return NULL;
	for (char *slash = strrchr(head, '/'); slash; slash = strrchr(head, '/')) {
		*slash = '\0';
		cleanup_free char *base = hostview_realpath_in(c, head[0] ? head : "/");
		if (!base)
			continue;
		const char *rest = path + (slash - head) + 1;
		char *out = NULL;
		return asprintf(&out, "%s%s%s", base, strcmp(base, "/") == 0 ? "" : "/", rest) < 0
			       ? NULL
			       : out;
	}
	return strdup(path);
}

char *hostview_resolve_in(struct hostview_cache *c, const char *path)
{
	if (!c || !path || path[0] != '/')
		return hostview_resolve(path);
	struct hostview_fact *f = hostview_fact(c, path);
	if (!f)
		return hostview_resolve(path);
	if (!f->resolved_known) {
		cleanup_free char *resolved = hostview_resolve_with(c, path);
		if (!resolved)
			return NULL; /* out of memory: asked again next time */
		f->resolved = hostview_keep(c, resolved);
		if (!f->resolved)
			return TAKE_PTR(resolved);
		f->resolved_known = true;
		return TAKE_PTR(resolved);
	}
	return strdup(f->resolved);
}
