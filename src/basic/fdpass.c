/* SPDX-License-Identifier: MIT */
#include "basic/fdpass.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

union fdpass_control {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

static void fdpass_message(struct msghdr *msg, struct iovec *iov, char *byte,
			   union fdpass_control *control)
{
	*iov = (struct iovec){ .iov_base = byte, .iov_len = 1 };
	memset(control, 0, sizeof(*control));
	*msg = (struct msghdr){ .msg_iov = iov,
				.msg_iovlen = 1,
				.msg_control = control->buf,
				.msg_controllen = sizeof(control->buf) };
}

bool fdpass_send(int sock, int fd)
{
	char byte = 'F';
	struct iovec iov;
	struct msghdr msg;
	union fdpass_control control;

	fdpass_message(&msg, &iov, &byte, &control);
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	return syscall(SYS_sendmsg, sock, &msg, 0) == 1;
}

int fdpass_receive(int sock)
{
	char byte;
	struct iovec iov;
	struct msghdr msg;
	union fdpass_control control;
	int fd = -1;

	fdpass_message(&msg, &iov, &byte, &control);
	if (recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
		return -1;
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
	if (cmsg && cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
	return fd;
}
