/* SPDX-License-Identifier: MIT */
#include "core/net/netsni.h"
#include "basic/dynlib.h"

#include <errno.h>
#include <openssl/ssl.h>
#include <openssl/tls1.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define NETSNI_LIBRARY "libssl.so.3"
/* encrypted_client_hello (draft-ietf-tls-esni); OpenSSL 3.0 has no name */
#define NETSNI_EXT_ECH 0xfe0d

/* libssl's functions, from dlopen(): airlock links a static libcrypto and
 * no libssl (docs/DEPENDENCIES.md), so nothing here may be a macro that
 * calls into libssl. */
static struct {
	const SSL_METHOD *(*server_method)(void);
	SSL_CTX *(*ctx_new)(const SSL_METHOD *method);
	void (*ctx_free)(SSL_CTX *ctx);
	long (*ctx_callback_ctrl)(SSL_CTX *ctx, int cmd, void (*fp)(void));
	void (*ctx_set_client_hello_cb)(SSL_CTX *ctx, SSL_client_hello_cb_fn cb, void *arg);
	int (*client_hello_get0_ext)(SSL *s, unsigned int type, const unsigned char **out,
				     size_t *outlen);
	SSL *(*ssl_new)(SSL_CTX *ctx);
	void (*ssl_free)(SSL *ssl);
	void (*set_bio)(SSL *ssl, BIO *rbio, BIO *wbio);
	void (*set_accept_state)(SSL *ssl);
	int (*do_handshake)(SSL *ssl);
	int (*get_error)(const SSL *ssl, int ret);
	const char *(*get_servername)(const SSL *ssl, const int type);
	void *(*get_ex_data)(const SSL *ssl, int idx);
	int (*set_ex_data)(SSL *ssl, int idx, void *data);
	const BIO_METHOD *(*bio_s_mem)(void);
	BIO *(*bio_new)(const BIO_METHOD *type);
	int (*bio_write)(BIO *b, const void *data, int dlen);
	long (*bio_ctrl)(BIO *bp, int cmd, long larg, void *parg);
	SSL_CTX *ctx;
} ssl;

struct netsni_seen {
	bool called; /* the servername callback ran: the ClientHello parsed */
	bool ech;
	char name[NETSNI_NAME_MAX + 1];
};

static int netsni_on_hello(SSL *s, int *alert, void *arg)
{
	(void)alert;
	(void)arg;
	struct netsni_seen *seen = ssl.get_ex_data(s, 0);
	const unsigned char *ext;
	size_t len;

	if (seen && ssl.client_hello_get0_ext(s, NETSNI_EXT_ECH, &ext, &len) == 1)
		seen->ech = true;
	return SSL_CLIENT_HELLO_SUCCESS;
}

/* Runs once OpenSSL parsed every extension: the name is recorded and the
 * handshake refused, so nothing is ever answered. */
static int netsni_on_servername(SSL *s, int *alert, void *arg)
{
	(void)arg;
	struct netsni_seen *seen = ssl.get_ex_data(s, 0);
	const char *name = ssl.get_servername(s, TLSEXT_NAMETYPE_host_name);

	if (seen) {
		seen->called = true;
		snprintf(seen->name, sizeof(seen->name), "%s", name ? name : "");
	}
	*alert = SSL_AD_UNRECOGNIZED_NAME;
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* Once every symbol is there: one server context whose callbacks read the
 * ClientHello (dynlib_load() holds its lock, so it is made once). */
static int netsni_lib_init(struct error *err)
{
	SSL_CTX *ctx = ssl.ctx_new(ssl.server_method());

	if (!ctx)
		return error_set(err, ENOMEM, "SSL_CTX_new failed");
	ssl.ctx_set_client_hello_cb(ctx, netsni_on_hello, NULL);
	ssl.ctx_callback_ctrl(ctx, SSL_CTRL_SET_TLSEXT_SERVERNAME_CB,
			      (void (*)(void))netsni_on_servername);
	ssl.ctx = ctx;
	return 0;
}

int netsni_load(struct error *err)
{
	static struct dynlib lib = DYNLIB_INIT("OpenSSL's libssl", netsni_lib_init);
	static const char *const sonames[] = { NETSNI_LIBRARY, NULL };
	static const struct dynlib_symbol syms[] = {
		{ "TLS_server_method", (void **)&ssl.server_method },
		{ "SSL_CTX_new", (void **)&ssl.ctx_new },
		{ "SSL_CTX_free", (void **)&ssl.ctx_free },
		{ "SSL_CTX_callback_ctrl", (void **)&ssl.ctx_callback_ctrl },
		{ "SSL_CTX_set_client_hello_cb", (void **)&ssl.ctx_set_client_hello_cb },
		{ "SSL_client_hello_get0_ext", (void **)&ssl.client_hello_get0_ext },
		{ "SSL_new", (void **)&ssl.ssl_new },
		{ "SSL_free", (void **)&ssl.ssl_free },
		{ "SSL_set_bio", (void **)&ssl.set_bio },
		{ "SSL_set_accept_state", (void **)&ssl.set_accept_state },
		{ "SSL_do_handshake", (void **)&ssl.do_handshake },
		{ "SSL_get_error", (void **)&ssl.get_error },
		{ "SSL_get_servername", (void **)&ssl.get_servername },
		{ "SSL_get_ex_data", (void **)&ssl.get_ex_data },
		{ "SSL_set_ex_data", (void **)&ssl.set_ex_data },
		{ "BIO_s_mem", (void **)&ssl.bio_s_mem },
		{ "BIO_new", (void **)&ssl.bio_new },
		{ "BIO_write", (void **)&ssl.bio_write },
		{ "BIO_ctrl", (void **)&ssl.bio_ctrl },
		{ NULL, NULL },
	};

	return dynlib_load(&lib, sonames, syms, err);
}

int netsni_parse(const void *data, size_t n, char name[NETSNI_NAME_MAX + 1], struct error *err)
{
	struct netsni_seen seen = { 0 };

	if (n > 1 << 20)
		return error_set(err, EINVAL, "a ClientHello over 1 MiB");
	SSL *s = ssl.ssl_new(ssl.ctx);
	BIO *rbio = s ? ssl.bio_new(ssl.bio_s_mem()) : NULL;
	BIO *wbio = rbio ? ssl.bio_new(ssl.bio_s_mem()) : NULL;
	if (!wbio) {
		if (s)
			ssl.ssl_free(s);
		/* a BIO not yet handed to the SSL object is freed with it below */
		return error_set(err, ENOMEM, "out of memory");
	}
	ssl.set_bio(s, rbio, wbio);
	ssl.set_ex_data(s, 0, &seen);
	ssl.set_accept_state(s);
	if (n > 0 && ssl.bio_write(rbio, data, (int)n) != (int)n) {
		ssl.ssl_free(s);
		return error_set(err, ENOMEM, "out of memory");
	}
	/* At the end of the bytes, a memory BIO says "retry", not EOF. */
	ssl.bio_ctrl(rbio, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, NULL);
	int ret = ssl.do_handshake(s);
	int e = ssl.get_error(s, ret);
	ssl.ssl_free(s);
	if (seen.called) {
		if (seen.ech)
			return error_set(err, EPROTO,
					 "the ClientHello hides its server name (encrypted_client_hello)");
		for (size_t i = 0; seen.name[i]; i++)
			if (seen.name[i] >= 'A' && seen.name[i] <= 'Z')
				seen.name[i] = (char)(seen.name[i] - 'A' + 'a');
		memcpy(name, seen.name, sizeof(seen.name));
		return 0;
	}
	if (e == SSL_ERROR_WANT_READ)
		return -EAGAIN;
	return error_set(err, EINVAL, "not a TLS ClientHello");
}
