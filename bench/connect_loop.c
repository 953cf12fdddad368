/* SPDX-License-Identifier: MIT */
/* The cost of connect(): N connects to a listener of its own, a Unix socket
 * in DIR or TCP on 127.0.0.1, each followed by the server's accept() and
 * both close()s. Prints the mean microseconds per connect.
 *   connect_loop unix DIR N | connect_loop tcp N */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int listener;

static void *acceptor(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept(listener, NULL, NULL);
		if (c < 0 && errno != EINTR)
			return NULL;
		if (c >= 0)
			close(c);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr *addr;
	socklen_t len;
	int family;
	long n;

	if (argc == 4 && strcmp(argv[1], "unix") == 0) {
		family = AF_UNIX;
		snprintf(un.sun_path, sizeof(un.sun_path), "%s/bench-%d.sock", argv[2], (int)getpid());
		addr = (struct sockaddr *)&un;
		len = sizeof(un);
		n = atol(argv[3]);
	} else if (argc == 3 && strcmp(argv[1], "tcp") == 0) {
		family = AF_INET;
		addr = (struct sockaddr *)&in;
		len = sizeof(in);
		n = atol(argv[2]);
	} else {
		fprintf(stderr, "usage: connect_loop unix DIR N | connect_loop tcp N\n");
		return 2;
	}
	listener = socket(family, SOCK_STREAM, 0);
	if (listener < 0 || bind(listener, addr, len) < 0 || listen(listener, 128) < 0 ||
	    getsockname(listener, addr, &len) < 0) {
		perror("listener");
		return 1;
	}
	pthread_t t;
	pthread_create(&t, NULL, acceptor, NULL);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		int s = socket(family, SOCK_STREAM, 0);
		if (s < 0 || connect(s, addr, len) < 0) {
			perror("connect");
			return 1;
		}
		/* a reset, not TIME_WAIT: 10,000 connects would exhaust the ports */
		struct linger l = { .l_onoff = 1, .l_linger = 0 };
		(void)setsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(s);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3 /
		    (double)n;
	printf("%.2f\n", us);
	if (family == AF_UNIX)
		unlink(un.sun_path);
	return 0;
}
