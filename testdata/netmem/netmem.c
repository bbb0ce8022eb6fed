// netmem: socket sends whose checked memory the kernel rewrites, sends
// without an address, UDP autobind, deep relative paths and foreign-ABI
// calls, for integration/netmem_test.go.
//
//   netmem CASE ARGS...
//
// Each case prints one line "result: ok" or "result: errno=NAME" (cases
// that send print "result: sent=N" for sendmmsg's count), plus "info:"
// lines, and exits 0, so the test can tell "the kernel said no" from "the
// program broke". The recv case is the outside receiver, not traced.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "../include/errname.h"

static int result(long r) {
	if (r < 0)
		printf("result: errno=%s\n", errname(errno));
	else
		printf("result: ok\n");
	return 0;
}

static void need(int argc, int n, const char *usage) {
	if (argc < n) {
		fprintf(stderr, "usage: netmem %s\n", usage);
		exit(2);
	}
}

// The mmsghdr layout the overlap depends on (64-bit: struct msghdr is 56
// bytes, msg_len at offset 56, entries 64 bytes apart).
_Static_assert(sizeof(struct msghdr) == 56, "64-bit struct msghdr");
_Static_assert(offsetof(struct mmsghdr, msg_len) == 56, "msg_len at 56");
_Static_assert(sizeof(struct mmsghdr) == 64, "64-byte mmsghdr");

static char buf[1 << 16];

// alias: the mmsghdr array lies in a memfd mapped twice, and entry 1's
// address is read through the second mapping.
static int alias;

// sendmmsg of two datagrams: entry 0 to first (firstlen bytes), payload
// len0; entry 1 to the address at byte off of entry 0 (which runs into
// entry 0's msg_len, preset to 4 bytes of init), payload 1 byte.
static int mmsg(int fd, void *first, socklen_t firstlen, size_t len0, int off, const void *fam, size_t famlen,
                const void *init, socklen_t namelen1) {
	static struct mmsghdr sm[2] __attribute__((aligned(64)));
	struct mmsghdr *m = sm;
	char *view = (char *)sm; // where entry 1's address is read
	struct iovec iov0 = {buf, len0}, iov1 = {buf, 1};
	if (alias) {
		int mfd = memfd_create("netmem", 0);
		if (mfd < 0 || ftruncate(mfd, 4096) < 0)
			return result(-1);
		m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
		view = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
		if (m == MAP_FAILED || view == MAP_FAILED)
			return result(-1);
	}
	memset(m, 0, 2 * sizeof *m);
	m[0].msg_hdr.msg_name = first;
	m[0].msg_hdr.msg_namelen = firstlen;
	m[0].msg_hdr.msg_iov = &iov0;
	m[0].msg_hdr.msg_iovlen = 1;
	char *p = view + off;
	memcpy(p, fam, famlen);                 // family (and port) in the padding before msg_len
	memcpy((char *)&m[0].msg_len, init, 4); // the address bytes the tracer sees
	m[1].msg_hdr.msg_name = p;
	m[1].msg_hdr.msg_namelen = namelen1;
	m[1].msg_hdr.msg_iov = &iov1;
	m[1].msg_hdr.msg_iovlen = 1;
	int n = sendmmsg(fd, m, 2, 0);
	if (n < 0)
		return result(-1);
	printf("info: msg_len[0]=%u\n", m[0].msg_len);
	printf("result: sent=%d\n", n);
	return 0;
}

static int unixaddr(struct sockaddr_un *a, const char *path) {
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	strncpy(a->sun_path, path, sizeof a->sun_path - 1);
	return offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1;
}

// mmsg-sleep: a sendmmsg that sleeps. The kernel reads entry i+1 only
// after it sent entry i, and a send to a full AF_UNIX queue sleeps; were
// the tree let go then, another thread could point a later entry at
// another socket before the kernel reads it.
#define SLEEP_N 40
static struct mmsghdr sleep_m[SLEEP_N];
static struct sockaddr_un sleep_far;
static socklen_t sleep_farlen;
static int sleep_r;

static void *sleep_rewrite(void *arg) {
	(void)arg;
	usleep(200000); // the sender sleeps on the full queue by now
	sleep_m[SLEEP_N - 1].msg_hdr.msg_name = &sleep_far;
	sleep_m[SLEEP_N - 1].msg_hdr.msg_namelen = sleep_farlen;
	char b[64];
	for (int i = 0; i < 4 * SLEEP_N; i++) // drain: the sender wakes
		if (recv(sleep_r, b, sizeof b, MSG_DONTWAIT) < 0)
			usleep(1000);
	return NULL;
}

static int mmsg_sleep(const char *far) {
	struct sockaddr_un ra;
	socklen_t ralen = unixaddr(&ra, "r.sock");
	unlink("r.sock");
	sleep_r = socket(AF_UNIX, SOCK_DGRAM, 0);
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (bind(sleep_r, (struct sockaddr *)&ra, ralen) < 0 || connect(fd, (struct sockaddr *)&ra, ralen) < 0)
		return result(-1);
	sleep_farlen = unixaddr(&sleep_far, far);
	static struct iovec iov[SLEEP_N];
	static char msg[SLEEP_N][16];
	for (int i = 0; i < SLEEP_N; i++) {
		snprintf(msg[i], sizeof msg[i], "m%d", i);
		iov[i].iov_base = msg[i];
		iov[i].iov_len = strlen(msg[i]);
		sleep_m[i].msg_hdr.msg_iov = &iov[i];
		sleep_m[i].msg_hdr.msg_iovlen = 1;
	}
	pthread_t th;
	pthread_create(&th, NULL, sleep_rewrite, NULL);
	int total = 0;
	while (total < SLEEP_N) { // a partial count is normal: send the rest
		int n = sendmmsg(fd, sleep_m + total, SLEEP_N - total, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			pthread_join(th, NULL);
			printf("info: sent %d before the error\n", total);
			return result(-1);
		}
		total += n;
	}
	pthread_join(th, NULL);
	printf("result: sent=%d\n", total);
	return 0;
}

int main(int argc, char **argv) {
	need(argc, 2, "CASE ARGS...");
	const char *c = argv[1];
	setvbuf(stdout, NULL, _IONBF, 0);
	memset(buf, 'z', sizeof buf);

	if (!strncmp(c, "alias-", 6)) {
		// alias-mmsg-unix, alias-mmsg-inet: the same through a second
		// mapping of the same shared pages.
		alias = 1;
		c += 6;
	}
	if (!strcmp(c, "mmsg-unix")) {
		// Run in a directory holding the socket "y" (allowed) and "x", a
		// symlink to a socket that must not be reached. Entry 1's
		// sun_path is entry 0's msg_len: "y\0\0\0" when checked, "x\0\0\0"
		// (120 bytes sent) when the kernel reads it.
		int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
		struct sockaddr_un y;
		socklen_t ylen = unixaddr(&y, "y");
		unsigned short fam = AF_UNIX;
		unsigned int init = 'y';
		return mmsg(fd, &y, ylen, 'x', 54, &fam, 2, &init, 6);
	}
	if (!strcmp(c, "mmsg-inet")) {
		// Entry 0 to 127.0.0.1:PORT sends LEN bytes; entry 1's sin_addr
		// is entry 0's msg_len: 127.0.0.1 when checked, LEN as an address
		// (266: 10.1.0.0) when the kernel reads it. The socket is bound to
		// 127.0.0.1 first, as --net loopback asks.
		need(argc, 4, "mmsg-inet PORT LEN");
		int port = atoi(argv[2]);
		size_t len = strtoul(argv[3], NULL, 0);
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		if (bind(fd, (struct sockaddr *)&lo, sizeof lo) < 0)
			return result(-1);
		struct sockaddr_in to = lo;
		to.sin_port = htons(port);
		struct {
			unsigned short fam, port;
		} __attribute__((packed)) fp = {AF_INET, htons(port)};
		struct in_addr init = {htonl(INADDR_LOOPBACK)};
		return mmsg(fd, &to, sizeof to, len, 52, &fp, 4, &init, sizeof(struct sockaddr_in));
	}
	if (!strcmp(c, "mmsg-sleep")) {
		need(argc, 3, "mmsg-sleep FAR_SOCKET");
		return mmsg_sleep(argv[2]);
	}
	if (!strcmp(c, "mmsg-plain")) {
		// Two entries, no overlap, to the socket PATH: must pass.
		need(argc, 3, "mmsg-plain PATH");
		int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
		struct sockaddr_un a;
		socklen_t alen = unixaddr(&a, argv[2]);
		struct mmsghdr m[2];
		struct iovec iov = {buf, 3};
		memset(m, 0, sizeof m);
		for (int i = 0; i < 2; i++) {
			m[i].msg_hdr.msg_name = &a;
			m[i].msg_hdr.msg_namelen = alen;
			m[i].msg_hdr.msg_iov = &iov;
			m[i].msg_hdr.msg_iovlen = 1;
		}
		int n = sendmmsg(fd, m, 2, 0);
		if (n < 0)
			return result(-1);
		printf("result: sent=%d\n", n);
		return 0;
	}
	if (!strcmp(c, "sendmsg-namelen0")) {
		// A connected socket, msg_name not NULL, msg_namelen 0: the kernel
		// takes no address (copy_msghdr_from_user).
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
			return result(-1);
		char junk[16] = "junk";
		struct iovec iov = {buf, 5};
		struct msghdr mh = {.msg_name = junk, .msg_namelen = 0, .msg_iov = &iov, .msg_iovlen = 1};
		if (sendmsg(sv[0], &mh, 0) != 5)
			return result(-1);
		char got[8];
		return result(recv(sv[1], got, sizeof got, MSG_DONTWAIT) == 5 ? 0 : -1);
	}
	if (!strcmp(c, "udp")) {
		// udp HOW PORT: send one datagram to 127.0.0.1:PORT from a socket
		// that is: unbound, bound to 127.0.0.1 (bound), connected.
		need(argc, 4, "udp unbound|bound|connected PORT");
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3])), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		long r;
		if (!strcmp(argv[2], "bound") && bind(fd, (struct sockaddr *)&lo, sizeof lo) < 0)
			return result(-1);
		if (!strcmp(argv[2], "connected")) {
			if (connect(fd, (struct sockaddr *)&to, sizeof to) < 0)
				return result(-1);
			r = send(fd, "hi", 2, 0);
		} else {
			r = sendto(fd, "hi", 2, 0, (struct sockaddr *)&to, sizeof to);
		}
		struct sockaddr_in me;
		socklen_t ml = sizeof me;
		getsockname(fd, (struct sockaddr *)&me, &ml);
		printf("info: local %s:%d\n", inet_ntoa(me.sin_addr), ntohs(me.sin_port));
		return result(r);
	}
	if (!strcmp(c, "udp6")) {
		// udp6 HOW PORT: the same over IPv6 to [::1]:PORT.
		need(argc, 4, "udp6 unbound|bound|connected PORT");
		int fd = socket(AF_INET6, SOCK_DGRAM, 0);
		struct sockaddr_in6 to = {.sin6_family = AF_INET6, .sin6_port = htons(atoi(argv[3])), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
		struct sockaddr_in6 lo = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
		long r;
		if (!strcmp(argv[2], "bound") && bind(fd, (struct sockaddr *)&lo, sizeof lo) < 0)
			return result(-1);
		if (!strcmp(argv[2], "connected")) {
			if (connect(fd, (struct sockaddr *)&to, sizeof to) < 0)
				return result(-1);
			r = send(fd, "hi", 2, 0);
		} else {
			r = sendto(fd, "hi", 2, 0, (struct sockaddr *)&to, sizeof to);
		}
		struct sockaddr_in6 me;
		socklen_t ml = sizeof me;
		char a[64];
		getsockname(fd, (struct sockaddr *)&me, &ml);
		printf("info: local [%s]:%d\n", inet_ntop(AF_INET6, &me.sin6_addr, a, sizeof a), ntohs(me.sin6_port));
		return result(r);
	}
	if (!strcmp(c, "recv")) {
		// recv ADDR PORT MS: the outside receiver. Prints "ready" once
		// bound, then "got=N" after MS milliseconds.
		need(argc, 5, "recv ADDR PORT MS");
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
		inet_pton(AF_INET, argv[2], &a.sin_addr);
		if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
			perror("bind");
			return 1;
		}
		printf("ready\n");
		int got = 0, ms = atoi(argv[4]);
		struct pollfd p = {fd, POLLIN, 0};
		while (poll(&p, 1, ms) > 0) {
			recv(fd, buf, sizeof buf, 0);
			got++;
		}
		printf("got=%d\n", got);
		return 0;
	}
	if (!strcmp(c, "deep")) {
		// deep DEPTH NAME KIND: chdir DEPTH times into "d<200 x d>" (made by
		// the test), then create NAME there relatively: KIND "file"
		// (open O_CREAT) or "dir" (mkdir).
		need(argc, 5, "deep DEPTH NAME file|dir");
		char comp[202];
		memset(comp, 'd', 200);
		comp[200] = 0;
		int depth = atoi(argv[2]);
		for (int i = 0; i < depth; i++)
			if (chdir(comp) < 0) {
				printf("info: chdir %d\n", i);
				return result(-1);
			}
		if (!strcmp(argv[4], "dir"))
			return result(mkdir(argv[3], 0755));
		int fd = open(argv[3], O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd >= 0)
			write(fd, "deep\n", 5);
		return result(fd);
	}
	if (!strcmp(c, "int80-getpid") || !strcmp(c, "int80-pending")) {
#if defined(__x86_64__)
		if (!strcmp(c, "int80-pending")) {
			// A SIGSYS already pending for the thread (blocked, sent
			// by tgkill) makes the kernel drop the seccomp SIGSYS of
			// an i386 call (a classic signal is queued once); the
			// pending one is delivered in its place, with the default
			// action.
			sigset_t set;
			sigemptyset(&set);
			sigaddset(&set, SIGSYS);
			sigprocmask(SIG_BLOCK, &set, NULL);
			syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGSYS);
		}
		long r;
		__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); // i386 getpid
		printf("info: pid %ld\n", r);
		return result(0);
#else
		errno = ENOSYS;
		return result(-1);
#endif
	}
	if (!strcmp(c, "x32-getpid")) {
#if defined(__x86_64__)
		return result(syscall(0x40000000L | SYS_getpid));
#else
		errno = ENOSYS;
		return result(-1);
#endif
	}
	if (!strcmp(c, "exec-timer")) {
		// A 20 us ITIMER_REAL, which survives the exec: its SIGALRM is
		// pending at the new program's first return to user mode, when
		// the kernel still marks an i386 program's task as in a compat
		// call (TS_COMPAT, set by the exec) though it made none.
		if (argc < 3) {
			fprintf(stderr, "netmem: exec-timer PROGRAM\n");
			return 2;
		}
		struct itimerval it = {.it_value = {.tv_sec = 0, .tv_usec = 20}};
		setitimer(ITIMER_REAL, &it, NULL);
		execv(argv[2], argv + 2);
		return result(-1);
	}
	if (!strcmp(c, "sigsys-self")) {
		// Dies of a SIGSYS signal, not of a seccomp kill.
		kill(getpid(), SIGSYS);
		return result(0);
	}
	fprintf(stderr, "netmem: unknown case %s\n", c);
	return 2;
}
