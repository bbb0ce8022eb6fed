/* floor: the least a ptrace + seccomp supervisor can cost per checked call
 * on this kernel and machine, measured beside tracecell in the same run.
 *
 * Usage: floor COMMAND [ARGS...]
 *
 * It runs COMMAND under a seccomp filter that sends kill(2), openat(2)
 * with a write flag, and the unlink, mkdir and rmdir calls to the tracer
 * (SECCOMP_RET_TRACE), as tracecell's does,
 * and a tracer loop that does only what any such supervisor must do per
 * stop, with tracecell's own choices:
 *   - wait for the stop: poll wait4(WNOHANG|__WALL) for 100 µs, then block;
 *   - read the registers (PTRACE_GETREGSET, NT_PRSTATUS);
 *   - for a path call: read the path from the tracee (process_vm_readv up to
 *     the end of its page, as tracecell's first read does), then check it
 *     as tracecell's warm walk does: a relative name gets one lstat
 *     (against the tracer's cwd, which the bench makes the tracee's too);
 *     an absolute path one stat of its directory and one lstat of itself;
 *   - resume (PTRACE_CONT).
 * No policy, no reports, no allocation: the difference to tracecell is what
 * tracecell's own decisions and bookkeeping cost. Every call is allowed.
 *
 * Forks, vforks and threads are followed (each inherits the filter), so
 * any of the bench's workloads runs under it.
 *
 * FLOOR_SPIN_US=N polls for N µs instead of 100 (0: block at once, as
 * strace does). Exits with COMMAND's status. x86_64 and aarch64.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "floor_common.h"

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#define REG_NR(r) ((r).orig_rax)
#define REG_ARG0(r) ((r).rdi)
#define REG_ARG1(r) ((r).rsi)
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#define REG_NR(r) ((r).regs[8])
#define REG_ARG0(r) ((r).regs[0])
#define REG_ARG1(r) ((r).regs[1])
#else
#error "floor: x86_64 or aarch64 only"
#endif

#ifndef SECCOMP_FILTER_FLAG_SPEC_ALLOW
#define SECCOMP_FILTER_FLAG_SPEC_ALLOW (1UL << 2)
#endif

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void child(char **argv) {
	/* The calls of floor_common.h trap (SECCOMP_RET_TRACE). */
	FLOOR_FILTER(f, SECCOMP_RET_TRACE);
	struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	raise(SIGSTOP); /* wait for PTRACE_SEIZE */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, &prog) != 0) {
		perror("floor: seccomp");
		_exit(125);
	}
	execvp(argv[0], argv);
	fprintf(stderr, "floor: exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* wait_stop: tracecell's wait: poll for 100 µs, then block. */
static double spin_us = 100;

static pid_t wait_stop(int *st) {
	double end = now_us() + spin_us;
	for (int i = 0;; i++) {
		pid_t p = waitpid(-1, st, WNOHANG | __WALL);
		if (p != 0)
			return p;
		if ((i & 7) == 7 && now_us() > end)
			return waitpid(-1, st, __WALL);
	}
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: floor COMMAND [ARGS...]\n");
		return 125;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("floor: fork");
		return 125;
	}
	if (pid == 0)
		child(argv + 1);
	const char *spin = getenv("FLOOR_SPIN_US");
	if (spin)
		spin_us = atof(spin);
	int st;
	if (waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st)) {
		fprintf(stderr, "floor: child did not stop\n");
		return 125;
	}
	if (ptrace(PTRACE_SEIZE, pid, 0,
	           /* seccomp stops; kill the tree if the floor dies; follow every
	            * fork, vfork and thread, which inherit the filter and would
	            * get ENOSYS from its RET_TRACE with no tracer attached. */
	           PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD |
	               PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE) != 0) {
		perror("floor: PTRACE_SEIZE");
		kill(pid, SIGKILL);
		return 125;
	}
	kill(pid, SIGCONT);
	char path[4097], cwd[4096], full[8200];
	if (!getcwd(cwd, sizeof cwd)) {
		perror("floor: getcwd");
		return 125;
	}
	int status = 125;
	for (;;) {
		pid_t p = wait_stop(&st);
		if (p < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: all gone */
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (p == pid)
				status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		int sig = WSTOPSIG(st), event = st >> 16;
		if (sig == SIGTRAP && event == PTRACE_EVENT_SECCOMP) {
			struct user_regs_struct r;
			struct iovec io = {&r, sizeof r};
			if (ptrace(PTRACE_GETREGSET, p, (void *)NT_PRSTATUS, &io) != 0) {
				perror("floor: PTRACE_GETREGSET");
				return 125;
			}
			long nr = REG_NR(r);
			if (nr != SYS_kill) {
				unsigned long a = REG_ARG1(r), page = 4096;
#ifdef SYS_unlink
				if (nr == SYS_unlink || nr == SYS_mkdir || nr == SYS_rmdir)
					a = REG_ARG0(r);
#endif
				struct iovec local = {path, page - a % page};
				struct iovec remote = {(void *)a, page - a % page};
				ssize_t n = process_vm_readv(p, &local, 1, &remote, 1, 0);
				if (n > 0) {
					path[n] = 0;
					floor_stat_path(path, cwd, full, sizeof full);
				}
			}
			ptrace(PTRACE_CONT, p, 0, 0);
			continue;
		}
		if (sig == SIGTRAP || event == PTRACE_EVENT_STOP) {
			ptrace(PTRACE_CONT, p, 0, 0); /* exec or other event; group-stop */
			continue;
		}
		ptrace(PTRACE_CONT, p, 0, sig); /* deliver the signal */
	}
	return status;
}
