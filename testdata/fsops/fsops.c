// fsops: file-system side channels for integration/fsops_test.go.
//
//   fsops CASE ARGS...
//
// Tree cases (run under tracecell) print one "result: ok ..." or
// "result: errno=NAME" line. Host cases (run by the test, outside the tree)
// set up and inspect the outside world: a named semaphore with a waiter, a
// POSIX message queue with a message in it.
//
// Raw syscall(2) is used for futex and the mq_* calls, so that nothing in
// libc stands between the case and the kernel.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif

#include "../include/errname.h"

static int result(long r) {
	if (r < 0)
		printf("result: errno=%s\n", errname(errno));
	else
		printf("result: ok %ld\n", r);
	fflush(stdout);
	return 0;
}

static int die(const char *what) {
	printf("setup: %s: %s\n", what, strerror(errno));
	fflush(stdout);
	return 2;
}

static long futex(void *uaddr, int op, int val, long val2, void *uaddr2, int val3) {
	return syscall(SYS_futex, uaddr, op, val, val2, uaddr2, val3);
}

// mapword maps the first page of path with prot and flags and returns the
// address of its first word (a glibc semaphore's value on little-endian).
static int *mapword(const char *path, int oflags, int prot, int flags) {
	int fd = open(path, oflags);
	if (fd < 0)
		return NULL;
	void *p = mmap(NULL, 4096, prot, flags, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static int private_word; // the requeue target: the tree's own memory

// semwait NAME SECONDS: the host program. Creates the named semaphore (value
// 0, readable by everyone), says "ready", and waits for a post. Exits 0 when
// it is woken, 1 when it times out.
static int semwait(const char *name, int secs) {
	sem_t *s = sem_open(name, O_CREAT, 0644, 0);
	if (s == SEM_FAILED)
		return die("sem_open");
	printf("ready\n");
	fflush(stdout);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	int r;
	while ((r = sem_timedwait(s, &ts)) < 0 && errno == EINTR)
		;
	printf("host: %s\n", r == 0 ? "woken" : errname(errno));
	fflush(stdout);
	return r == 0 ? 0 : 1;
}

// futex-race: one thread flips the page at a fixed address between the
// tree's own anonymous memory and a read-only mapping of the host's
// semaphore file while another requeues from that address: a check that
// reads the memory map while the flipper runs would pass an address that
// is the host's by the time the kernel takes the key.
static int race_fd;
static void *race_addr;
static volatile int race_stop;

static void *flipper(void *arg) {
	(void)arg;
	while (!race_stop) {
		mmap(race_addr, 4096, PROT_READ, MAP_SHARED | MAP_FIXED, race_fd, 0);
		mmap(race_addr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	return NULL;
}

static int futex_race(const char *path, int ms) {
	race_fd = open(path, O_RDONLY);
	if (race_fd < 0)
		return die("open");
	race_addr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (race_addr == MAP_FAILED)
		return die("mmap");
	pthread_t th;
	if (pthread_create(&th, NULL, flipper, NULL))
		return die("pthread_create");
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long ok = 0, denied = 0, moved = 0;
	do {
		long r = futex(race_addr, FUTEX_REQUEUE, 0, INT_MAX, &private_word, 0);
		if (r > 0)
			moved += r;
		if (r >= 0)
			ok++;
		else if (errno == EPERM)
			denied++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	race_stop = 1;
	pthread_join(th, NULL);
	printf("result: moved=%ld ok=%ld denied=%ld\n", moved, ok, denied);
	fflush(stdout);
	return 0;
}

// futex-restart: a shared FUTEX_WAIT with a timeout on the tree's own
// anonymous word is interrupted by SIGALRM; the handler maps the host's
// semaphore over the word and calls restart_syscall, which resumes the wait
// at the saved address: now the host's futex, where the tree's waiter can
// take a wake-up meant for the host's.
static int *restart_word;
static int restart_fd;

static void on_alarm(int sig) {
	(void)sig;
	if (mmap(restart_word, 4096, PROT_READ, MAP_SHARED | MAP_FIXED, restart_fd, 0) == MAP_FAILED) {
		printf("setup: mmap: %s\n", strerror(errno));
		fflush(stdout);
		_exit(2);
	}
	printf("restarting\n");
	fflush(stdout);
	long r = syscall(SYS_restart_syscall);
	if (r < 0 && errno == EPERM) // a denied restart must stay denied
		r = syscall(SYS_restart_syscall);
	result(r);
	_exit(0);
}

// futex-restart-benign: a timed shared wait on the tree's own word is
// interrupted by a signal whose handler just returns; the word's address is
// then reused by a read-only mapping of the host's semaphore (as an
// unmapped address may be), and a later sleep is stopped and continued, so
// the kernel restarts it through restart_syscall: that restart is the
// sleep's, not the old wait's, and must pass.
static void on_alarm_return(int sig) { (void)sig; }

static int futex_restart_benign(const char *path) {
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return die("open");
	int *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w == MAP_FAILED)
		return die("mmap");
	struct sigaction sa = {.sa_handler = on_alarm_return};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 0}, {0, 50000}};
	setitimer(ITIMER_REAL, &it, NULL);
	struct timespec ts = {5, 0};
	if (futex(w, FUTEX_WAIT, 0, (long)&ts, NULL, 0) == 0 || errno != EINTR)
		return die("the wait was not interrupted");
	if (mmap(w, 4096, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
		return die("mmap over");
	pid_t parent = getpid(), child = fork();
	if (child == 0) {
		usleep(100000);
		kill(parent, SIGSTOP);
		usleep(50000);
		kill(parent, SIGCONT);
		_exit(0);
	}
	struct timespec sl = {0, 400000000};
	long r = syscall(SYS_nanosleep, &sl, NULL);
	return result(r);
}

static int futex_restart(const char *path) {
	restart_fd = open(path, O_RDONLY);
	if (restart_fd < 0)
		return die("open");
	restart_word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (restart_word == MAP_FAILED)
		return die("mmap");
	signal(SIGALRM, on_alarm);
	struct itimerval it = {{0, 0}, {0, 100000}};
	setitimer(ITIMER_REAL, &it, NULL);
	struct timespec ts = {15, 0};
	long r = futex(restart_word, FUTEX_WAIT, 0, (long)&ts, NULL, 0);
	printf("setup: the wait was not interrupted: %ld %s\n", r, strerror(errno));
	return 2;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: fsops CASE ARGS...\n");
		return 2;
	}
	const char *c = argv[1], *a = argv[2];
	int mode = argc > 3 ? (int)strtol(argv[3], NULL, 8) : 0;

	// Host side.
	if (!strcmp(c, "semwait"))
		return semwait(a, argc > 3 ? atoi(argv[3]) : 10);
	if (!strcmp(c, "sempost")) {
		sem_t *s = sem_open(a, 0);
		if (s == SEM_FAILED)
			return die("sem_open");
		return result(sem_post(s));
	}
	if (!strcmp(c, "mqhost")) { // create queue a, put one message in it
		struct mq_attr { long f, max, size, cur, pad[4]; } at = {0, 4, 64, 0, {0}};
		int q = syscall(SYS_mq_open, a + 1 /* without the slash */, O_CREAT | O_RDWR, 0644, &at);
		if (q < 0)
			return die("mq_open");
		if (syscall(SYS_mq_timedsend, q, "host-message", 12, 0, NULL) < 0)
			return die("mq_timedsend");
		return result(q);
	}
	if (!strcmp(c, "mqcheck")) { // messages left, and whether mq_notify is free
		struct mq_attr { long f, max, size, cur, pad[4]; } at;
		int q = syscall(SYS_mq_open, a + 1, O_RDWR);
		if (q < 0)
			return die("mq_open");
		if (syscall(SYS_mq_getsetattr, q, NULL, &at) < 0)
			return die("mq_getsetattr");
		struct sigevent sev = {.sigev_notify = SIGEV_NONE};
		long n = syscall(SYS_mq_notify, q, &sev);
		printf("host: messages=%ld flags=%ld notify=%s\n", at.cur, at.f, n == 0 ? "free" : errname(errno));
		fflush(stdout);
		return 0;
	}

	// Tree side: futexes on a host program's semaphore (path of its file).
	if (!strcmp(c, "futex-cmp-requeue")) { // move the host's waiter to our word
		int *w = mapword(a, O_RDONLY, PROT_READ, MAP_SHARED);
		if (!w)
			return die("map");
		return result(futex(w, FUTEX_CMP_REQUEUE, 0, INT_MAX, &private_word, *w));
	}
	if (!strcmp(c, "futex-requeue-private-map")) { // the same through MAP_PRIVATE
		int *w = mapword(a, O_RDONLY, PROT_READ, MAP_PRIVATE);
		if (!w)
			return die("map");
		return result(futex(w, FUTEX_REQUEUE, 0, INT_MAX, &private_word, 0));
	}
	if (!strcmp(c, "futex-requeue-to")) { // requeue our own waiters-to-be onto the host's word (uaddr2)
		int *w = mapword(a, O_RDONLY, PROT_READ, MAP_SHARED);
		if (!w)
			return die("map");
		return result(futex(&private_word, FUTEX_REQUEUE, 0, INT_MAX, w, 0));
	}
	if (!strcmp(c, "futex-restart"))
		return futex_restart(a);
	if (!strcmp(c, "futex-restart-benign"))
		return futex_restart_benign(a);
	if (!strcmp(c, "semcreate")) { // the semaphore, value 0, nobody waiting
		sem_t *s = sem_open(a, O_CREAT, 0644, 0);
		return s == SEM_FAILED ? die("sem_open") : result(0);
	}
	if (!strcmp(c, "futex-race"))
		return futex_race(a, argc > 3 ? atoi(argv[3]) : 1000);
	if (!strcmp(c, "futex-wake")) { // take the host's post from it
		int *w = mapword(a, O_RDONLY, PROT_READ, MAP_SHARED);
		if (!w)
			return die("map");
		return result(futex(w, FUTEX_WAKE, 1, 0, NULL, 0));
	}
	if (!strcmp(c, "futex-waitv")) { // futex_waitv (5.16) on the host's word
#ifdef SYS_futex_waitv
		int *w = mapword(a, O_RDONLY, PROT_READ, MAP_SHARED);
		if (!w)
			return die("map");
		struct { uint64_t val, uaddr; uint32_t flags, res; } v[2] = {
			{1, (uintptr_t)&private_word, 2 /* FUTEX2_SIZE_U32 */ | 128, 0},
			{(uint64_t)*w + 1, (uintptr_t)w, 2, 0}, // a value that differs: EAGAIN if it runs
		};
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		return result(syscall(SYS_futex_waitv, v, 2, 0, &ts, CLOCK_MONOTONIC));
#else
		errno = ENOSYS;
		return result(-1);
#endif
	}
	// Futexes the tree may use: its own anonymous memory (private and
	// shared), a shared writable mapping of a sandbox file, a copied page
	// of a private file mapping.
	if (!strcmp(c, "futex-own")) {
		int *anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		int *file = mapword(a, O_RDWR, PROT_READ | PROT_WRITE, MAP_SHARED);
		int *cow = mapword(a, O_RDONLY, PROT_READ | PROT_WRITE, MAP_PRIVATE);
		if (anon == MAP_FAILED || !file || !cow)
			return die("map");
		*cow = 0; // copy it
		long r = futex(anon, FUTEX_WAKE, 1, 0, NULL, 0);
		if (r >= 0)
			r = futex(file, FUTEX_CMP_REQUEUE, 0, 1, &private_word, *file);
		if (r >= 0)
			r = futex(cow, FUTEX_WAKE, 1, 0, NULL, 0);
		if (r >= 0)
			r = futex(&private_word, FUTEX_WAKE, 1, 0, NULL, 0);
		if (r >= 0) {
			struct timespec ts = {0, 1000000};
			r = futex(&private_word, FUTEX_WAIT, 0, (long)&ts, NULL, 0);
			if (r < 0 && errno == ETIMEDOUT)
				r = 0;
		}
		return result(r);
	}

	// POSIX message queues: a is /dev/mqueue/NAME.
	if (!strncmp(c, "mq-", 3)) {
		int q = open(a, O_RDONLY);
		if (q < 0)
			return die("open");
		char buf[8192];
		unsigned prio;
		struct timespec ts = {0, 0};
		if (!strcmp(c, "mq-receive"))
			return result(syscall(SYS_mq_timedreceive, q, buf, sizeof buf, &prio, &ts));
		if (!strcmp(c, "mq-send"))
			return result(syscall(SYS_mq_timedsend, q, "tree", 4, 0, &ts));
		if (!strcmp(c, "mq-notify")) {
			// The registration lasts while q is open: hold it for
			// argv[3] seconds so the host can look.
			struct sigevent sev = {.sigev_notify = SIGEV_NONE};
			result(syscall(SYS_mq_notify, q, &sev));
			sleep(argc > 3 ? atoi(argv[3]) : 0);
			return 0;
		}
		if (!strcmp(c, "mq-setattr")) {
			struct mq_attr { long f, max, size, cur, pad[4]; } at = {O_NONBLOCK, 0, 0, 0, {0}}, old;
			return result(syscall(SYS_mq_getsetattr, q, &at, &old));
		}
	}

	// Set-id bits and file capabilities.
	if (!strcmp(c, "chmod"))
		return result(chmod(a, mode));
	if (!strcmp(c, "fchmod")) {
		int fd = open(a, O_RDONLY);
		if (fd < 0)
			return die("open");
		return result(fchmod(fd, mode));
	}
	if (!strcmp(c, "fchmodat"))
		return result(syscall(SYS_fchmodat, AT_FDCWD, a, mode));
	if (!strcmp(c, "creat")) // a new file with mode
		return result(open(a, O_CREAT | O_WRONLY | O_EXCL, mode));
	if (!strcmp(c, "tmpfile")) { // an unnamed file with mode, linked in as a/x
		int fd = open(a, O_TMPFILE | O_WRONLY, mode);
		if (fd < 0)
			return result(fd);
		char p[64], dst[4096];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		snprintf(dst, sizeof dst, "%s/x", a);
		return result(linkat(AT_FDCWD, p, AT_FDCWD, dst, AT_SYMLINK_FOLLOW));
	}
	if (!strcmp(c, "mknod"))
		return result(mknod(a, S_IFREG | mode, 0));
	if (!strcmp(c, "mkdir"))
		return result(mkdir(a, mode));
	if (!strcmp(c, "setcap")) { // cap_setuid+ep, VFS_CAP_REVISION_2
		uint32_t v[5] = {0x02000001, 1u << 7 /* CAP_SETUID */, 1u << 7, 0, 0};
		return result(setxattr(a, "security.capability", v, sizeof v, 0));
	}

	// Plain calls for errno fidelity.
	if (!strcmp(c, "unlink"))
		return result(unlink(a));
	if (!strcmp(c, "rmdir"))
		return result(rmdir(a));
	if (!strcmp(c, "creat-excl"))
		return result(open(a, O_CREAT | O_EXCL | O_WRONLY, 0644));
	if (!strcmp(c, "read")) {
		int fd = open(a, O_RDONLY);
		char buf[64];
		return result(fd < 0 ? fd : read(fd, buf, sizeof buf));
	}
	if (!strcmp(c, "open-write"))
		return result(open(a, O_WRONLY));
	if (!strcmp(c, "open-create")) // O_CREAT without O_EXCL, as fopen(a, "w")
		return result(open(a, O_CREAT | O_WRONLY | O_TRUNC, 0644));
	if (!strcmp(c, "open-trunc")) // O_TRUNC asks for write access even with O_RDONLY
		return result(open(a, O_RDONLY | O_TRUNC));
	if (!strcmp(c, "open-path-write")) { // O_PATH drops the rest: a reference, no write
		int fd = open(a, O_PATH | O_WRONLY | O_CREAT | O_TRUNC, 04755);
		return result(fd < 0 ? fd : 0);
	}
	if (!strcmp(c, "rename"))
		return result(rename(a, argv[3]));
	if (!strcmp(c, "getxattr")) {
		char v[256];
		return result(getxattr(a, "user.secret", v, sizeof v));
	}
	if (!strcmp(c, "listxattr")) {
		char v[256];
		return result(listxattr(a, v, sizeof v));
	}
	if (!strcmp(c, "inotify")) {
		int fd = syscall(SYS_inotify_init1, 0);
		if (fd < 0)
			return die("inotify_init1");
		return result(syscall(SYS_inotify_add_watch, fd, a, 0x2 /* IN_MODIFY */));
	}
	fprintf(stderr, "fsops: unknown case %s\n", c);
	return 2;
}
