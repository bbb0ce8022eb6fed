/* floor_notif: floor.c with SECCOMP_RET_USER_NOTIF instead of ptrace: what
 * one checked call costs when the kernel hands it to a supervisor through a
 * seccomp listener fd rather than through a ptrace stop.
 *
 * Usage: floor_notif COMMAND [ARGS...]
 *
 * Same filter as floor.c (kill(2), openat(2) with a write flag, the unlink,
 * mkdir and rmdir calls), but the trapped calls return SECCOMP_RET_USER_NOTIF
 * (kernel 5.0+) and the filter is installed with
 * SECCOMP_FILTER_FLAG_NEW_LISTENER. The child passes the listener fd to the
 * supervisor over a socketpair (SCM_RIGHTS) before it execs. Per
 * notification the supervisor does what floor.c does per stop, the way a
 * user-notification supervisor must:
 *   - wait for it: poll(2) the listener without blocking for 100 µs, then
 *     block (floor.c's wait4 spin, same FLOOR_SPIN_US knob);
 *   - SECCOMP_IOCTL_NOTIF_RECV: the call's number and arguments come with
 *     the notification, so there is no register read;
 *   - for a path call: read the path (process_vm_readv to the end of its
 *     page), then SECCOMP_IOCTL_NOTIF_ID_VALID (5.0+; its number was later
 *     corrected from _IOR to _IOW, and both are tried) — without it the
 *     pid may have been reused and the read come from another process —
 *     then the same lstat
 *     or stat + lstat as floor.c;
 *   - answer SECCOMP_IOCTL_NOTIF_SEND with SECCOMP_USER_NOTIF_FLAG_CONTINUE
 *     (5.5+): the kernel runs the call as if allowed. It decides nothing.
 * FLOOR_NOTIF_SYNC=1 asks for synchronous wake-ups
 * (SECCOMP_IOCTL_NOTIF_SET_FLAGS with SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
 * 6.6+: the kernel wakes the other side on the waker's CPU, as gVisor
 * uses it); the bench runs without it unless asked.
 * Forks and threads inherit the filter and so report to the same listener;
 * there is nothing to follow. The run ends when the listener reports POLLHUP
 * (no task uses the filter any more, 5.8+) and COMMAND has been reaped.
 *
 * Exits with COMMAND's status; 125 on its own failure, 124 (with a line on
 * stderr) when the kernel lacks user notification or the CONTINUE flag, so
 * the bench can skip the column. x86_64 and aarch64.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "floor_common.h"

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "floor_notif: x86_64 or aarch64 only"
#endif

#ifndef SECCOMP_FILTER_FLAG_SPEC_ALLOW
#define SECCOMP_FILTER_FLAG_SPEC_ALLOW (1UL << 2)
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif
/* The ID_VALID ioctl was first defined with the wrong direction bit
 * (_IOR); newer headers have _IOW and the kernel accepts both. */
#define NOTIF_ID_VALID_OLD _IOR('!', 2, __u64)
#define NOTIF_ID_VALID_NEW _IOW('!', 2, __u64)
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS _IOW('!', 4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

/* Exit status when the kernel lacks what this floor needs. */
#define STATUS_UNSUPPORTED 124

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* send_fd passes fd over the unix socket sock (SCM_RIGHTS). */
static int send_fd(int sock, int fd) {
	char byte = 0, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec io = {&byte, 1};
	struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
	memset(ctl, 0, sizeof ctl);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

/* recv_fd receives one fd from sock; -1 if the child sent none (it could
 * not install the filter). */
static int recv_fd(int sock) {
	char byte, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec io = {&byte, 1};
	struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

static void child(int sock, char **argv) {
	/* floor.c's filter (floor_common.h) with RET_USER_NOTIF for RET_TRACE. */
	FLOOR_FILTER(f, SECCOMP_RET_USER_NOTIF);
	struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("floor_notif: PR_SET_NO_NEW_PRIVS");
		_exit(125);
	}
	int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	                 SECCOMP_FILTER_FLAG_SPEC_ALLOW | SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0) {
		fprintf(stderr, "floor_notif: seccomp(NEW_LISTENER): %s (kernel 5.0+)\n", strerror(errno));
		_exit(errno == EINVAL ? STATUS_UNSUPPORTED : 125);
	}
	/* sendmsg and close are not trapped; execvp's opens are read-only. */
	if (send_fd(sock, fd) != 0) {
		perror("floor_notif: sendmsg");
		_exit(125);
	}
	close(fd);
	close(sock);
	execvp(argv[0], argv);
	fprintf(stderr, "floor_notif: exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* wait_notif: floor.c's wait: poll for spin_us, then block. Returns the
 * listener's revents. */
static double spin_us = 100;

static int wait_notif(int fd) {
	struct pollfd p = {.fd = fd, .events = POLLIN};
	double end = now_us() + spin_us;
	for (int i = 0;; i++) {
		int n = poll(&p, 1, 0);
		if (n > 0)
			return p.revents;
		if (n < 0 && errno != EINTR)
			return POLLERR;
		if ((i & 7) == 7 && now_us() > end)
			break;
	}
	for (;;) {
		int n = poll(&p, 1, -1);
		if (n > 0)
			return p.revents;
		if (n < 0 && errno != EINTR)
			return POLLERR;
	}
}

static int id_valid(int fd, __u64 id) {
	if (ioctl(fd, NOTIF_ID_VALID_NEW, &id) == 0)
		return 1;
	if (errno == EINVAL || errno == ENOTTY)
		return ioctl(fd, NOTIF_ID_VALID_OLD, &id) == 0;
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: floor_notif COMMAND [ARGS...]\n");
		return 125;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		perror("floor_notif: socketpair");
		return 125;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("floor_notif: fork");
		return 125;
	}
	if (pid == 0) {
		close(sv[0]);
		child(sv[1], argv + 1);
	}
	close(sv[1]);
	const char *spin = getenv("FLOOR_SPIN_US");
	if (spin)
		spin_us = atof(spin);
	int st, lfd = recv_fd(sv[0]);
	close(sv[0]);
	if (lfd < 0) {
		/* The child failed before it could send the fd and said why. */
		waitpid(pid, &st, 0);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 125;
	}
	const char *sync = getenv("FLOOR_NOTIF_SYNC");
	if (sync && atoi(sync) && ioctl(lfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0) {
		fprintf(stderr, "floor_notif: SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: %s (kernel 6.6+)\n", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return STATUS_UNSUPPORTED;
	}
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) != 0) {
		perror("floor_notif: SECCOMP_GET_NOTIF_SIZES");
		kill(pid, SIGKILL);
		return 125;
	}
	/* The kernel's structs may be larger than this header's. */
	struct seccomp_notif *req = calloc(1, sz.seccomp_notif > sizeof *req ? sz.seccomp_notif : sizeof *req);
	struct seccomp_notif_resp *resp =
	    calloc(1, sz.seccomp_notif_resp > sizeof *resp ? sz.seccomp_notif_resp : sizeof *resp);
	size_t req_size = sz.seccomp_notif > sizeof *req ? sz.seccomp_notif : sizeof *req;
	char path[4097], cwd[4096], full[8200];
	if (!req || !resp || !getcwd(cwd, sizeof cwd)) {
		perror("floor_notif: setup");
		kill(pid, SIGKILL);
		return 125;
	}
	int first = 1;
	for (;;) {
		int rev = wait_notif(lfd);
		if (!(rev & POLLIN)) /* POLLHUP: no task uses the filter */
			break;
		memset(req, 0, req_size);
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, req) != 0) {
			if (errno == EINTR || errno == ENOENT) /* ENOENT: the task died */
				continue;
			perror("floor_notif: SECCOMP_IOCTL_NOTIF_RECV");
			kill(pid, SIGKILL);
			return 125;
		}
		int nr = req->data.nr;
		if (nr != SYS_kill) {
			unsigned long a = req->data.args[1], page = 4096;
#ifdef SYS_unlink
			if (nr == SYS_unlink || nr == SYS_mkdir || nr == SYS_rmdir)
				a = req->data.args[0];
#endif
			struct iovec local = {path, page - a % page};
			struct iovec remote = {(void *)a, page - a % page};
			ssize_t n = process_vm_readv(req->pid, &local, 1, &remote, 1, 0);
			if (n > 0 && id_valid(lfd, req->id)) {
				path[n] = 0;
				floor_stat_path(path, cwd, full, sizeof full);
			}
		}
		resp->id = req->id;
		resp->val = 0;
		resp->error = 0;
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, resp) != 0) {
			if (first && errno == EINVAL) {
				fprintf(stderr, "floor_notif: SECCOMP_USER_NOTIF_FLAG_CONTINUE: %s (kernel 5.5+)\n",
				        strerror(errno));
				kill(pid, SIGKILL);
				waitpid(pid, &st, 0);
				return STATUS_UNSUPPORTED;
			}
			if (errno != ENOENT) { /* ENOENT: the task died meanwhile */
				perror("floor_notif: SECCOMP_IOCTL_NOTIF_SEND");
				kill(pid, SIGKILL);
				return 125;
			}
		}
		first = 0;
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			perror("floor_notif: waitpid");
			return 125;
		}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
