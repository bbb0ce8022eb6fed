// sigthread: threads made with clone(CLONE_THREAD|CLONE_SIGHAND|CLONE_VM)
// and exit signal SIGCHLD, which the kernel reports to a tracer as
// PTRACE_EVENT_FORK (kernel_clone picks the event from the exit signal
// and CLONE_VFORK, not from CLONE_THREAD). A tracer that takes such a
// thread for a process of its own decides its calls on the wrong group
// (a red team, stop 20).
//
//   sigthread cwd SBXDIR HOSTDIR N
//     The leader chdirs to HOSTDIR. N times a thread (no CLONE_FS, so a
//     cwd of its own) chdirs to SBXDIR and creates /proc/self/cwd/escI:
//     the kernel resolves /proc/self to the thread's group leader, whose
//     cwd is HOSTDIR. Prints "result: sigthread created=C denied=D".
//   sigthread spin
//     A thread spins in user space for ever while the leader alone exits
//     (SYS_exit): a tracer that kills the tree by the wrong group leaves
//     it running. Prints "result: sigthread spinning" first.
//   sigthread lease PROG
//     Copies /bin/true to PROG (a path in the sandbox), and a forked child
//     takes a write lease on it (F_SETLEASE), given up in its SIGIO
//     handler. A thread of the parent then execs PROG: the exec's open
//     must break the lease and waits, interruptibly, for the holder. A
//     tracer that keeps the holder frozen through the exec stalls it for
//     fs.lease-break-time. Exits 0 (/bin/true) when the exec is through.
//   sigthread exec EXE
//     A thread sets RLIMIT_AS to 200 kB and execs EXE: the exec fails
//     after its point of no return (the new image does not fit), and the
//     process dies of SIGSEGV without an exec event. Uses exit signal 0
//     (a plain thread). Exits 139 (bare) when the kernel kills it.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *sbx, *exe;
static volatile int state[1 << 16]; // per thread: 1 created, 2 denied, 3 failed

static int maker(void *arg)
{
	int i = (int)(long)arg;
	char p[64];
	if (chdir(sbx) != 0) {
		state[i] = 3;
		syscall(SYS_exit, 0);
	}
	snprintf(p, sizeof p, "/proc/self/cwd/esc%d", i);
	int fd = open(p, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0) {
		close(fd);
		state[i] = 1;
	} else
		state[i] = errno == EACCES || errno == EPERM ? 2 : 3;
	syscall(SYS_exit, 0);
	return 0;
}

static int spinner(void *arg)
{
	(void)arg;
	for (;;)
		for (volatile long i = 0; i < 100000000L; i++)
			;
	return 0;
}

static int execer(void *arg)
{
	if (arg) {
		struct rlimit r = {200000, 200000};
		setrlimit(RLIMIT_AS, &r);
	}
	char *argv[] = {(char *)exe, NULL};
	execv(exe, argv);
	syscall(SYS_exit_group, 2); // the exec failed before its point of no return
	return 0;
}

static int leasefd = -1;

static void giveup(int sig)
{
	(void)sig;
	fcntl(leasefd, F_SETLEASE, F_UNLCK);
}

// lease: see the top. 0 when set up (the exec follows), else 2.
static int lease(const char *prog)
{
	int in = open("/bin/true", O_RDONLY), out = open(prog, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	char buf[65536];
	ssize_t n;
	if (in < 0 || out < 0) {
		perror("sigthread: copy /bin/true");
		return 2;
	}
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, n) != n)
			return 2;
	close(in);
	close(out);
	int ready[2];
	if (pipe(ready) != 0)
		return 2;
	pid_t holder = fork();
	if (holder == 0) {
		signal(SIGIO, giveup);
		leasefd = open(prog, O_RDONLY);
		if (leasefd < 0 || fcntl(leasefd, F_SETLEASE, F_WRLCK) != 0) {
			perror("sigthread: F_SETLEASE");
			_exit(2);
		}
		if (write(ready[1], "x", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	char c;
	if (holder < 0 || read(ready[0], &c, 1) != 1) {
		fprintf(stderr, "sigthread: no lease\n");
		return 2;
	}
	return 0;
}

static int start(int (*fn)(void *), void *arg, int flags)
{
	char *stack = malloc(1 << 16);
	if (!stack)
		return -1;
	return clone(fn, stack + (1 << 16), CLONE_VM | CLONE_SIGHAND | CLONE_THREAD | flags, arg);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "cwd")) {
		sbx = argv[2];
		int n = atoi(argv[4]);
		if (n <= 0 || n > (int)(sizeof state / sizeof state[0]) || chdir(argv[3]) != 0) {
			fprintf(stderr, "sigthread: bad N or HOSTDIR\n");
			return 2;
		}
		int created = 0, denied = 0;
		for (int i = 0; i < n; i++) {
			if (start(maker, (void *)(long)i, SIGCHLD) < 0) {
				perror("sigthread: clone");
				return 2;
			}
			while (!state[i])
				sched_yield();
			if (state[i] == 3) {
				fprintf(stderr, "sigthread: thread %d failed\n", i);
				return 2;
			}
			created += state[i] == 1;
			denied += state[i] == 2;
		}
		printf("result: sigthread created=%d denied=%d\n", created, denied);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "spin")) {
		if (start(spinner, NULL, CLONE_FS | CLONE_FILES | SIGCHLD) < 0) {
			perror("sigthread: clone");
			return 2;
		}
		printf("result: sigthread spinning\n");
		syscall(SYS_exit, 0); // the leader alone
	}
	if (argc == 3 && (!strcmp(argv[1], "exec") || !strcmp(argv[1], "lease"))) {
		exe = argv[2];
		if (!strcmp(argv[1], "lease") && lease(exe) != 0)
			return 2;
		if (start(execer, (void *)(long)!strcmp(argv[1], "exec"), CLONE_FS | CLONE_FILES) < 0) {
			perror("sigthread: clone");
			return 2;
		}
		for (;;)
			pause();
	}
	fprintf(stderr, "usage: sigthread cwd SBXDIR HOSTDIR N | spin | exec EXE | lease PROG\n");
	return 2;
}
