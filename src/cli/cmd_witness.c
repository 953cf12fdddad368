/* SPDX-License-Identifier: MIT */
/* airlock witness init|key|add-log|serve (docs/witness.md): HTTP in and out
 * of src/ledger/witness.c, which holds the protocol. libmicrohttpd parses
 * HTTP; it is loaded with dlopen() when `serve` starts, so that no other
 * airlock command relocates it and the TLS library it links. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <microhttpd.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/dynlib.h"
#include "basic/fileio.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "ledger/witness.h"

#define LIBMHD		     "libmicrohttpd.so.12"
#define WITNESS_CONNECTIONS  64
#define WITNESS_IDLE_SECONDS 10

static const char witness_usage[] =
	"usage: airlock witness init --state-dir DIR [--name NAME]\n"
	"       airlock witness key --state-dir DIR\n"
	"       airlock witness add-log ORIGIN VKEY --state-dir DIR\n"
	"       airlock witness serve --state-dir DIR [--listen ADDR:PORT]\n";

static struct {
	__typeof__(MHD_start_daemon) *start_daemon;
	__typeof__(MHD_stop_daemon) *stop_daemon;
	__typeof__(MHD_create_response_from_buffer) *create_response;
	__typeof__(MHD_add_response_header) *add_header;
	__typeof__(MHD_queue_response) *queue_response;
	__typeof__(MHD_destroy_response) *destroy_response;
} mhd;

static struct dynlib mhd_lib = DYNLIB_INIT("libmicrohttpd", NULL);

static int witness_mhd_load(struct error *err)
{
	static const char *const sonames[] = { LIBMHD, NULL };
	static const struct dynlib_symbol symbols[] = {
		{ "MHD_start_daemon", (void **)&mhd.start_daemon },
		{ "MHD_stop_daemon", (void **)&mhd.stop_daemon },
		{ "MHD_create_response_from_buffer", (void **)&mhd.create_response },
		{ "MHD_add_response_header", (void **)&mhd.add_header },
		{ "MHD_queue_response", (void **)&mhd.queue_response },
		{ "MHD_destroy_response", (void **)&mhd.destroy_response },
		{ NULL, NULL },
	};

	return dynlib_load(&mhd_lib, sonames, symbols, err);
}

/* A request's body as it arrives, capped. */
struct witness_upload {
	char *data;
	size_t n;
	bool over;
};

static enum MHD_Result witness_respond(struct MHD_Connection *conn, int status, const char *type,
				       const char *body, size_t n)
{
	struct MHD_Response *resp = mhd.create_response(n, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	mhd.add_header(resp, "Content-Type", type);
	enum MHD_Result r = mhd.queue_response(conn, (unsigned)status, resp);
	mhd.destroy_response(resp);
	return r;
}

static enum MHD_Result witness_handle(void *cls, struct MHD_Connection *conn, const char *url,
				      const char *method, const char *version, const char *upload_data,
				      size_t *upload_data_size, void **con_cls)
{
	struct witness *w = cls;
	struct witness_upload *up = *con_cls;
	static const char text[] = "text/plain; charset=utf-8";

	(void)version;
	if (strcmp(url, "/add-checkpoint") != 0)
		return witness_respond(conn, 404, text, "not found\n", 10);
	if (strcmp(method, "POST") != 0)
		return witness_respond(conn, 405, text, "POST only\n", 10);
	if (!up) {
		up = calloc(1, sizeof(*up));
		if (!up)
			return MHD_NO;
		*con_cls = up;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		size_t k = *upload_data_size;
		*upload_data_size = 0;
		if (up->over || up->n + k > WITNESS_BODY_MAX) {
			/* Read and dropped; the answer is 413. */
			up->over = true;
			free(up->data);
			up->data = NULL;
			return MHD_YES;
		}
		char *more = realloc(up->data, up->n + k + 1);
		if (!more)
			return MHD_NO;
		up->data = more;
		memcpy(up->data + up->n, upload_data, k);
		up->n += k;
		return MHD_YES;
	}
	if (up->over) {
		static const char msg[] = "the body is over the witness's limit\n";
		return witness_respond(conn, 413, text, msg, sizeof(msg) - 1);
	}
	struct witness_reply reply;
	witness_add_checkpoint(w, up->data ? up->data : "", up->n, (uint64_t)time(NULL), &reply);
	enum MHD_Result r =
		witness_respond(conn, reply.status, reply.content_type ? reply.content_type : text,
				reply.body ? reply.body : "", reply.body_n);
	witness_reply_release(&reply);
	return r;
}

static void witness_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			      enum MHD_RequestTerminationCode toe)
{
	struct witness_upload *up = *con_cls;

	(void)cls, (void)conn, (void)toe;
	if (up) {
		free(up->data);
		free(up);
		*con_cls = NULL;
	}
}

/* A listening TCP socket on ADDR:PORT (numeric; [v6]:PORT), its address
 * as bound in ret_name. */
static int witness_listen(const char *spec, char *ret_name, size_t name_n)
{
	char host[128];
	const char *colon = strrchr(spec, ':');
	if (!colon || (size_t)(colon - spec) >= sizeof(host)) {
		cli_error("witness serve: --listen ADDR:PORT");
		return -EINVAL;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM },
			*ai = NULL;
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai) {
		cli_error("witness serve: '%s' is not a numeric ADDR:PORT", spec);
		return -EINVAL;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		int e = errno;
		cli_error("witness serve: listen on %s: %s", spec, strerror(e));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -e;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char addr[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
			port = ntohs(in->sin_port);
		} else {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
			port = ntohs(in6->sin6_port);
		}
	}
	snprintf(ret_name, name_n, ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr, port);
	return fd;
}

static int witness_serve(struct witness *w, const char *listen_spec)
{
	char name[INET6_ADDRSTRLEN + 16];
	sigset_t set;
	int sig;

	struct error err = { 0 };

	if (witness_mhd_load(&err) < 0) {
		cli_error("witness serve: %s", err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	/* Signals are taken by sigwait() below, not by the server's thread. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	int fd = witness_listen(listen_spec, name, sizeof(name));
	if (fd < 0)
		return EXIT_AIRLOCK_ERROR;
	/* One thread: requests are answered one at a time (the lock in
	 * witness.c keeps separate processes in order too). */
	struct MHD_Daemon *d =
		mhd.start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL,
				 witness_handle, w, MHD_OPTION_LISTEN_SOCKET, fd,
				 MHD_OPTION_NOTIFY_COMPLETED, witness_completed, NULL,
				 MHD_OPTION_CONNECTION_LIMIT, (unsigned)WITNESS_CONNECTIONS,
				 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)WITNESS_IDLE_SECONDS,
				 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 << 10),
				 MHD_OPTION_END);
	if (!d) {
		cli_error("witness serve: the HTTP server did not start");
		close(fd);
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_free char *vkey = witness_vkey(w);
	printf("witness %s listening on %s\n", vkey ? vkey : "?", name);
	fflush(stdout);
	sigwait(&set, &sig);
	mhd.stop_daemon(d);
	close(fd);
	return EXIT_OK;
}

int cmd_witness(int argc, char **argv)
{
	static const struct option options[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "name", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *state_dir = NULL, *listen_spec = "127.0.0.1:0", *name = NULL;
	int opt;

	while ((opt = cli_option(argc, argv, "h", options)) != -1) {
		switch (opt) {
		case 's':
			state_dir = optarg;
			break;
		case 'l':
			listen_spec = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'h':
			fputs(witness_usage, stdout);
			return EXIT_OK;
		default:
			return EXIT_AIRLOCK_ERROR;
		}
	}
	if (optind >= argc) {
		fputs(witness_usage, stderr);
		return EXIT_AIRLOCK_ERROR;
	}
	const char *sub = argv[optind++];
	int operands = argc - optind;
	bool init = strcmp(sub, "init") == 0, add = strcmp(sub, "add-log") == 0;
	if (!init && !add && strcmp(sub, "key") != 0 && strcmp(sub, "serve") != 0) {
		cli_error("witness: unknown subcommand '%s'", sub);
		fputs(witness_usage, stderr);
		return EXIT_AIRLOCK_ERROR;
	}
	if (operands != (add ? 2 : 0)) {
		cli_error("witness %s: wrong operands", sub);
		return EXIT_AIRLOCK_ERROR;
	}
	if (!state_dir) {
		cli_error("witness %s: give the witness's own directory with --state-dir DIR", sub);
		return EXIT_AIRLOCK_ERROR;
	}
	if (init && mkdir_parents(state_dir, 0700) < 0) {
		cli_error("witness init: create %s: %s", state_dir, strerror(errno));
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_close int dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		cli_error("witness %s: %s: %s", sub, state_dir, strerror(errno));
		return EXIT_AIRLOCK_ERROR;
	}
	cleanup_with(witness_freep) struct witness *w = NULL;
	struct error err = { 0 };
	if (witness_open(dir_fd, init, name, &w, &err) < 0) {
		cli_error("witness %s: %s", sub, err.msg);
		return EXIT_AIRLOCK_ERROR;
	}
	if (add) {
		if (witness_add_log(w, argv[optind], argv[optind + 1], &err) < 0) {
			cli_error("witness add-log: %s", err.msg);
			return EXIT_AIRLOCK_ERROR;
		}
		return EXIT_OK;
	}
	if (strcmp(sub, "serve") == 0)
		return witness_serve(w, listen_spec);
	cleanup_free char *vkey = witness_vkey(w);
	if (!vkey) {
		cli_error("witness %s: out of memory", sub);
		return EXIT_AIRLOCK_ERROR;
	}
	puts(vkey);
	return EXIT_OK;
}
