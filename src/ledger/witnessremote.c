/* SPDX-License-Identifier: MIT */
/* The witness client (docs/witness.md): a ledger remote that POSTs
 * add-checkpoint with libcurl. libcurl is loaded with dlopen() on the first
 * push, as ed25519.c loads libcrypto: linked, it and the TLS libraries it
 * pulls would be relocated at the start of every airlock process, for a
 * push that `airlock run` never makes. */
#define CURL_DISABLE_TYPECHECK 1 /* the calls go through pointers */
#include <curl/curl.h>
#include <errno.h>

#include "basic/dynlib.h"
#include "basic/macro.h"
#include "ledger/internal.h"
#include "ledger/witness.h"

#define LIBCURL		   "libcurl.so.4"
#define WITNESS_REPLY_MAX  (16 << 10)
#define WITNESS_TIMEOUT_MS 10000L
#define WITNESS_CONNECT_MS 3000L

static struct {
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
	__typeof__(curl_global_init) *global_init;
} cu;

/* Once, before any thread could race it (curl_easy_init would). */
static int cu_init(struct error *err)
{
	if (cu.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return error_set(err, ENOSYS, "curl_global_init failed");
	return 0;
}

static struct dynlib cu_lib = DYNLIB_INIT("libcurl", cu_init);

static int cu_load(struct error *err)
{
	static const char *const sonames[] = { LIBCURL, NULL };
	static const struct dynlib_symbol symbols[] = {
		{ "curl_easy_init", (void **)&cu.easy_init },
		{ "curl_easy_setopt", (void **)&cu.easy_setopt },
		{ "curl_easy_perform", (void **)&cu.easy_perform },
		{ "curl_easy_getinfo", (void **)&cu.easy_getinfo },
		{ "curl_easy_cleanup", (void **)&cu.easy_cleanup },
		{ "curl_easy_strerror", (void **)&cu.easy_strerror },
		{ "curl_slist_append", (void **)&cu.slist_append },
		{ "curl_slist_free_all", (void **)&cu.slist_free_all },
		{ "curl_global_init", (void **)&cu.global_init },
		{ NULL, NULL },
	};

	return dynlib_load(&cu_lib, sonames, symbols, err);
}

struct witness_remote {
	struct ledger_remote_ops ops;
	char name[65];
	char *url; /* .../add-checkpoint */
	struct ledger_vkey vkey;
};

struct witness_buf {
	char *data;
	size_t n;
	bool over;
};

static size_t witness_write(char *ptr, size_t size, size_t nmemb, void *ctx)
{
	struct witness_buf *b = ctx;
	size_t k = size * nmemb;

	if (b->n + k > WITNESS_REPLY_MAX) {
		b->over = true;
		return 0; /* stops the transfer */
	}
	char *more = realloc(b->data, b->n + k + 1);
	if (!more)
		return 0;
	b->data = more;
	memcpy(b->data + b->n, ptr, k);
	b->n += k;
	b->data[b->n] = '\0';
	return k;
}

/* The one POST: the status and body (NUL terminated) of the reply. */
static int witness_post(const struct witness_remote *wr, const char *body, size_t n,
			long *ret_status, struct witness_buf *ret, struct error *err)
{
	int r = cu_load(err);

	if (r < 0)
		return r;
	CURL *c = cu.easy_init();
	struct curl_slist *headers = cu.slist_append(NULL, "Content-Type: text/plain; charset=utf-8");
	if (!c || !headers) {
		if (c)
			cu.easy_cleanup(c);
		return error_set(err, ENOMEM, "out of memory");
	}
	struct curl_slist *more = cu.slist_append(headers, "Expect:"); /* no 100-continue wait */
	if (more)
		headers = more;
	cu.easy_setopt(c, CURLOPT_URL, wr->url);
	cu.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cu.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu.easy_setopt(c, CURLOPT_POST, 1L);
	cu.easy_setopt(c, CURLOPT_POSTFIELDS, body);
	cu.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
	cu.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	cu.easy_setopt(c, CURLOPT_WRITEFUNCTION, witness_write);
	cu.easy_setopt(c, CURLOPT_WRITEDATA, ret);
	cu.easy_setopt(c, CURLOPT_TIMEOUT_MS, WITNESS_TIMEOUT_MS);
	cu.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, WITNESS_CONNECT_MS);
	cu.easy_setopt(c, CURLOPT_NOPROXY, "*"); /* the user's configuration, not the environment's */
	CURLcode code = cu.easy_perform(c);
	long status = 0;
	if (code == CURLE_OK)
		cu.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (code != CURLE_OK)
		r = error_set(err, ret->over ? EMSGSIZE : ECONNREFUSED, "POST %s: %s", wr->url,
			      ret->over ? "the reply is too long" : cu.easy_strerror(code));
	cu.slist_free_all(headers);
	cu.easy_cleanup(c);
	*ret_status = status;
	return r;
}

/* The reply's first line, without controls, for a message. */
static const char *witness_reason(struct witness_buf *b)
{
	if (!b->data)
		return "";
	b->data[strcspn(b->data, "\n")] = '\0';
	for (char *p = b->data; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (strlen(b->data) > 200)
		b->data[200] = '\0';
	return b->data;
}

static int witness_remote_reply(const struct witness_remote *wr, const struct ledger_push *p,
				long status, struct witness_buf *bp,
				struct ledger_push_reply *reply, struct error *err);

static int witness_remote_push(void *ctx, const struct ledger_push *p,
			       struct ledger_push_reply *reply, struct error *err)
{
	const struct witness_remote *wr = ctx;
	size_t n;
	cleanup_free char *body =
		witness_request_format(p->old_size, (const merkle_hash *)p->proof, p->n_proof,
				       p->checkpoint, p->checkpoint_n, &n);
	if (!body)
		return error_set(err, ENOMEM, "out of memory");
	struct witness_buf b = { 0 };
	long status = 0;
	int r = witness_post(wr, body, n, &status, &b, err);
	r = r < 0 ? r : witness_remote_reply(wr, p, status, &b, reply, err);
	free(b.data);
	return r;
}

/* The reply of a push: a cosignature, a conflict, a refusal. */
static int witness_remote_reply(const struct witness_remote *wr, const struct ledger_push *p,
				long status, struct witness_buf *bp,
				struct ledger_push_reply *reply, struct error *err)
{
	if (status == 409) {
		uint64_t size;
		char line[32];
		snprintf(line, sizeof(line), "%s", bp->data ? bp->data : "");
		line[strcspn(line, "\n")] = '\0';
		if (parse_u64(line, &size) < 0)
			return error_set(err, EPROTO, "witness %s: 409 without a size", wr->name);
		reply->remote_size = size;
		return error_set(err, EEXIST, "witness %s holds %llu entries", wr->name,
				 (unsigned long long)size);
	}
	if (status != 200)
		return error_set(err, status == 422 || status == 403 ? EBADMSG : EPROTO,
				 "witness %s refused (%ld): %s", wr->name, status, witness_reason(bp));
	/* One of the lines is its cosignature of this checkpoint; the others
	 * (other keys) are ignored. */
	const char *split = p->checkpoint_n ? strstr(p->checkpoint, "\n\n") : NULL;
	if (!split || !bp->data)
		return error_set(err, EPROTO, "witness %s: an empty reply", wr->name);
	char *save = NULL;
	for (char *l = strtok_r(bp->data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		int q = witness_cosignature_verify(&wr->vkey, p->checkpoint,
						   (size_t)(split - p->checkpoint) + 1, l, NULL);
		if (q == -EBADMSG)
			return error_set(err, EBADMSG,
					 "witness %s: its cosignature does not verify", wr->name);
		if (q == 0 && strlen(l) < sizeof(reply->cosignature)) {
			snprintf(reply->cosignature, sizeof(reply->cosignature), "%s", l);
			return 0;
		}
	}
	return error_set(err, EPROTO, "witness %s: no cosignature by its key %s", wr->name,
			 wr->vkey.name);
}

static void witness_remote_free(void *ctx)
{
	struct witness_remote *wr = ctx;

	free(wr->url);
	free(wr);
}

int witness_remote_add(struct ledger *ledger, const char *name, const char *url, const char *vkey,
		       struct error *err)
{
	struct witness_remote *wr = calloc(1, sizeof(*wr));
	if (!wr)
		return error_set(err, ENOMEM, "out of memory");
	size_t k = strlen(url);
	while (k > 0 && url[k - 1] == '/')
		k--;
	int r = 0;
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		r = error_set(err, EINVAL, "witness %s: the URL is http:// or https://", name);
	if (r == 0 && witness_vkey_parse(vkey, &wr->vkey, err) < 0)
		r = error_prefix(err, "witness %s", name);
	if (r == 0 && asprintf(&wr->url, "%.*s/add-checkpoint", (int)k, url) < 0) {
		wr->url = NULL;
		r = error_set(err, ENOMEM, "out of memory");
	}
	snprintf(wr->name, sizeof(wr->name), "%s", name);
	wr->ops = (struct ledger_remote_ops){
		.name = wr->name,
		.push = witness_remote_push,
		.free = witness_remote_free,
	};
	if (r == 0)
		r = ledger_add_remote(ledger, &wr->ops, wr, err);
	if (r < 0)
		witness_remote_free(wr);
	return r;
}
