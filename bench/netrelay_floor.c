/* The floor for the allowlist proxy's throughput (bench/netproxy.sh): a
 * plain TCP relay with nothing of a proxy but the second loopback
 * connection. It listens on LISTEN_ADDR (port 0: any; the port is printed
 * as "ready PORT" on stdout), and for each connection connects to
 * UPSTREAM_ADDR:PORT and moves the bytes of each direction in a thread of
 * its own: blocking splice(2) from the socket into a 1 MiB pipe, then out
 * to the other socket, as airlock's proxy does (src/core/net/netproxy.c),
 * without poll, head parsing, allowlist, byte counts or confinement.
 *   netrelay_floor LISTEN_ADDR UPSTREAM_ADDR UPSTREAM_PORT
 * A client fetches http://LISTEN_ADDR:PORT/... directly (no proxy form). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct dir {
	int from, to;
};

static struct sockaddr_in upstream;

static void *pump(void *arg)
{
	struct dir *d = arg;
	int p[2];

	if (pipe2(p, O_CLOEXEC) == 0) {
		(void)fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
		for (;;) {
			ssize_t n = splice(d->from, NULL, p[1], NULL, 1 << 20, SPLICE_F_MOVE);
			if (n <= 0)
				break;
			while (n > 0) {
				ssize_t m = splice(p[0], NULL, d->to, NULL, (size_t)n, SPLICE_F_MOVE);
				if (m <= 0)
					goto out;
				n -= m;
			}
		}
out:
		close(p[0]);
		close(p[1]);
	}
	shutdown(d->to, SHUT_WR);
	return NULL;
}

static void *conn(void *arg)
{
	int client = (int)(long)arg;
	int up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (up >= 0 && connect(up, (struct sockaddr *)&upstream, sizeof(upstream)) == 0) {
		struct dir in = { client, up }, out = { up, client };
		pthread_t t;
		if (pthread_create(&t, NULL, pump, &in) == 0) {
			pump(&out);
			pthread_join(t, NULL);
		}
	}
	if (up >= 0)
		close(up);
	close(client);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int one = 1;

	if (argc != 4)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	upstream = (struct sockaddr_in){ .sin_family = AF_INET,
					 .sin_port = htons((uint16_t)atoi(argv[3])) };
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || inet_pton(AF_INET, argv[1], &a.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[2], &upstream.sin_addr) != 1 ||
	    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 128) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0)
		return 1;
	printf("ready %u\n", ntohs(a.sin_port));
	fflush(stdout);
	for (;;) {
		int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		pthread_t t;
		if (c < 0)
			continue;
		if (pthread_create(&t, NULL, conn, (void *)(long)c) == 0)
			pthread_detach(t);
		else
			close(c);
	}
}
