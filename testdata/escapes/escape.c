// escape: one way out of a write sandbox per subcommand, for the tracecell
// integration suite.
//
//   escape CASE ARGS...
//
// Each case attempts one escape against the targets named in ARGS (paths,
// pids, addresses), prints exactly one line "result: ok" or
// "result: errno=NAME" (plus extra "info: ..." lines), and exits 0 either
// way, so the test can tell "the kernel said no" from "the program broke".
// Run bare, every case really escapes (the suite checks that too); under
// tracecell the test checks the outside world is untouched.
//
// Cases that must be killed rather than denied (int80, x32) print
// "result: ok" only if they survive.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/shm.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

// <linux/io_uring.h> is missing from 4.18 kernel headers (RHEL 8).
#if defined(__has_include)
#if __has_include(<linux/io_uring.h>)
#include <linux/io_uring.h>
#define HAVE_IO_URING 1
#endif
#endif

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif

static const char payload[] = "ESCAPED\n";

#include "../include/errname.h"

// result prints the outcome of the escaping call: r < 0 means it failed
// with errno.
static int result(long r) {
	if (r < 0)
		printf("result: errno=%s\n", errname(errno));
	else
		printf("result: ok\n");
	fflush(stdout);
	return 0;
}

static void need(int argc, int n, const char *usage) {
	if (argc < n) {
		fprintf(stderr, "usage: escape %s\n", usage);
		exit(2);
	}
}

// write_payload writes the payload to fd and closes it; fd < 0 (the open
// failed) passes the failure through.
static long write_payload(int fd) {
	if (fd < 0)
		return -1;
	long r = write(fd, payload, sizeof payload - 1);
	close(fd);
	return r;
}

static int open_ro(const char *path) {
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "escape: open %s read-only: %s\n", path, strerror(errno));
		exit(3);
	}
	return fd;
}

static int open_dir(const char *path) {
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		fprintf(stderr, "escape: open directory %s: %s\n", path, strerror(errno));
		exit(3);
	}
	return fd;
}

// uring_open creates and writes PATH through an io_uring IORING_OP_OPENAT
// (Linux 5.6): the open happens in the kernel, with no openat system call a
// tracer could stop. Without <linux/io_uring.h> (4.18 headers) it is ENOSYS.
#ifdef HAVE_IO_URING
static long uring_open(const char *path) {
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	// io_uring_setup = 425 and io_uring_enter = 426 on x86_64 and aarch64.
	long fd = syscall(425, 4, &p);
	if (fd < 0)
		return -1;
	size_t sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (cqsz > sqsz)
		sqsz = cqsz; // IORING_FEAT_SINGLE_MMAP (5.4): one mapping for both rings
	char *sq = mmap(NULL, sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, (int)fd, IORING_OFF_SQ_RING);
	char *cq = sq;
	if (sq != MAP_FAILED && !(p.features & IORING_FEAT_SINGLE_MMAP))
		cq = mmap(NULL, cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, (int)fd, IORING_OFF_CQ_RING);
	struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
	                                 MAP_SHARED | MAP_POPULATE, (int)fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		return -1;
	unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
	unsigned mask = *(unsigned *)(sq + p.sq_off.ring_mask);
	unsigned *array = (unsigned *)(sq + p.sq_off.array);
	unsigned t = *tail;
	struct io_uring_sqe *sqe = &sqes[t & mask];
	memset(sqe, 0, sizeof *sqe);
	sqe->opcode = IORING_OP_OPENAT;
	sqe->fd = AT_FDCWD;
	sqe->addr = (unsigned long)path;
	sqe->len = 0644;
	sqe->open_flags = O_WRONLY | O_CREAT | O_TRUNC;
	array[t & mask] = t & mask;
	__atomic_store_n(tail, t + 1, __ATOMIC_RELEASE);
	if (syscall(426, (int)fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		return -1;
	unsigned head = __atomic_load_n((unsigned *)(cq + p.cq_off.head), __ATOMIC_ACQUIRE);
	unsigned cmask = *(unsigned *)(cq + p.cq_off.ring_mask);
	struct io_uring_cqe *cqe = (struct io_uring_cqe *)(cq + p.cq_off.cqes) + (head & cmask);
	int res = cqe->res;
	close((int)fd);
	if (res < 0) {
		errno = -res;
		return -1;
	}
	return write_payload(res);
}
#else
static long uring_open(const char *path) {
	(void)path;
	errno = ENOSYS;
	return -1;
}
#endif

// victim: the outside process for memory escapes. It prints its pid and the
// address of a buffer holding "INTACT", then waits for a line on stdin and
// prints the buffer again, so the test sees whether someone wrote into it.
static char victim_buf[64] = "INTACT";

static int do_victim(void) {
	printf("pid=%d addr=%lu\n", (int)getpid(), (unsigned long)(uintptr_t)victim_buf);
	fflush(stdout);
	char line[16];
	if (fgets(line, sizeof line, stdin) == NULL)
		return 0;
	printf("buf=%s\n", victim_buf);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv) {
	need(argc, 2, "CASE ARGS...");
	const char *c = argv[1];

	if (!strcmp(c, "victim"))
		return do_victim();

	if (!strcmp(c, "exchange")) { // renameat2(RENAME_EXCHANGE) sandbox<->outside
		need(argc, 4, "exchange SANDBOX_FILE OUTSIDE_FILE");
		return result(syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], RENAME_EXCHANGE));
	}
	if (!strcmp(c, "otrunc")) { // O_RDONLY|O_TRUNC truncates
		need(argc, 3, "otrunc FILE");
		int fd = open(argv[2], O_RDONLY | O_TRUNC);
		if (fd >= 0)
			close(fd);
		return result(fd);
	}
	if (!strcmp(c, "fchmod")) { // metadata through a read-only fd
		need(argc, 3, "fchmod FILE");
		return result(fchmod(open_ro(argv[2]), 0777));
	}
	if (!strcmp(c, "fchown")) {
		need(argc, 3, "fchown FILE");
		return result(fchown(open_ro(argv[2]), 65534, 65534));
	}
	if (!strcmp(c, "fsetxattr")) {
		need(argc, 3, "fsetxattr FILE");
		return result(fsetxattr(open_ro(argv[2]), "user.escape", "1", 1, 0));
	}
	if (!strcmp(c, "futimens")) { // utimensat(fd, NULL, times, 0) acts on the fd
		need(argc, 3, "futimens FILE");
		struct timespec ts[2] = {{1000000, 0}, {1000000, 0}};
		return result(syscall(SYS_utimensat, open_ro(argv[2]), NULL, ts, 0));
	}
	if (!strcmp(c, "setflags")) { // FS_IOC_SETFLAGS works on a read-only fd
		need(argc, 3, "setflags FILE");
		int fd = open_ro(argv[2]);
		int flags = 0;
		if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
			return result(-1);
		// FS_NOATIME_FL is harmless: unlike immutable/append-only it does
		// not stop the test from cleaning up when the escape succeeds.
		flags |= FS_NOATIME_FL;
		return result(ioctl(fd, FS_IOC_SETFLAGS, &flags));
	}
	if (!strcmp(c, "fsioctl")) { // file-changing ioctls that work on a read-only fd
		need(argc, 4, "fsioctl setversion|fssetxattr|fifreeze PATH");
		const char *op = argv[2];
		if (!strcmp(op, "setversion")) {
			// EXT4_IOC_SETVERSION _IOW('f', 4, long): the inode
			// generation, owner only. Set to what it is (0 when it
			// cannot be read): the ctime still moves.
			int fd = open_ro(argv[3]);
			int gen = 0;
			if (ioctl(fd, FS_IOC_GETVERSION, &gen) < 0)
				gen = 0;
			return result(ioctl(fd, 0x40086604, &gen));
		}
		if (!strcmp(op, "fssetxattr")) {
			// FS_IOC_FSSETXATTR; NOATIME, like setflags, is harmless.
			int fd = open_ro(argv[3]);
			struct fsxattr fa;
			if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) < 0)
				memset(&fa, 0, sizeof fa);
			fa.fsx_xflags |= FS_XFLAG_NOATIME;
			return result(ioctl(fd, FS_IOC_FSSETXATTR, &fa));
		}
		if (!strcmp(op, "fifreeze")) {
			// FIFREEZE through a read-only fd of a directory freezes
			// its whole file system. Only ever aimed at tmpfs, which
			// cannot be frozen (EOPNOTSUPP) should the call get through:
			// refuse anything else, so that no run of this case can
			// freeze a disk.
			int fd = open_dir(argv[3]);
			struct statfs sf;
			if (fstatfs(fd, &sf) < 0 || sf.f_type != 0x01021994) { // TMPFS_MAGIC
				fprintf(stderr, "escape: fifreeze: %s is not on tmpfs, refusing\n", argv[3]);
				exit(3);
			}
			int arg = 0;
			long r = ioctl(fd, FIFREEZE, &arg);
			int e = errno;
			if (r == 0)
				ioctl(fd, FITHAW, &arg);
			errno = e;
			return result(r);
		}
		fprintf(stderr, "escape: fsioctl: unknown ioctl %s\n", op);
		return 2;
	}
	if (!strcmp(c, "tmpfile")) { // O_TMPFILE in an outside dir, then give it a name
		need(argc, 4, "tmpfile DIR NAME");
		int fd = open(argv[2], O_TMPFILE | O_WRONLY, 0644);
		if (fd < 0)
			return result(-1);
		if (write(fd, payload, sizeof payload - 1) < 0)
			return result(-1);
		char proc[64], dst[4096];
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		snprintf(dst, sizeof dst, "%s/%s", argv[2], argv[3]);
		return result(linkat(AT_FDCWD, proc, AT_FDCWD, dst, AT_SYMLINK_FOLLOW));
	}
	if (!strcmp(c, "syscall")) { // raw syscall(2), no libc wrapper
		need(argc, 3, "syscall FILE");
		long fd = syscall(SYS_openat, AT_FDCWD, argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		return result(fd < 0 ? fd : write_payload((int)fd));
	}
	if (!strcmp(c, "openat")) { // openat(dirfd of an outside dir, name)
		need(argc, 4, "openat DIR NAME");
		int fd = openat(open_dir(argv[2]), argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		return result(fd < 0 ? fd : write_payload(fd));
	}
	if (!strcmp(c, "procfd")) { // /proc/self/fd/N/NAME with N an outside dir
		need(argc, 4, "procfd DIR NAME");
		char p[4096];
		snprintf(p, sizeof p, "/proc/self/fd/%d/%s", open_dir(argv[2]), argv[3]);
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		return result(fd < 0 ? fd : write_payload(fd));
	}
	if (!strcmp(c, "reopen")) { // reopen a read-only fd for writing via /proc/self/fd/N
		need(argc, 3, "reopen FILE");
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", open_ro(argv[2]));
		int fd = open(p, O_WRONLY | O_TRUNC);
		return result(fd < 0 ? fd : write_payload(fd));
	}
	if (!strcmp(c, "vfork")) { // the vfork child writes while the parent is suspended
		need(argc, 3, "vfork FILE");
		volatile int err = 0;
		pid_t pid = vfork();
		if (pid == 0) {
			int fd = open(argv[2], O_WRONLY | O_TRUNC);
			if (fd < 0)
				err = errno;
			else if (write(fd, payload, sizeof payload - 1) < 0)
				err = errno;
			_exit(0);
		}
		if (pid < 0)
			return result(-1);
		waitpid(pid, NULL, 0);
		errno = err;
		return result(err ? -1 : 0);
	}
	if (!strcmp(c, "int80")) { // i386 open(2) through int 0x80 from a 64-bit process
		need(argc, 3, "int80 FILE");
#if defined(__x86_64__)
		// The 32-bit ABI truncates pointers: put the path below 4 GiB.
		char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		if (low == MAP_FAILED)
			return result(-1);
		strncpy(low, argv[2], 4000);
		strcpy(low + 4000, payload);
		long fd;
		// i386: open = 5, write = 4, close = 6; O_WRONLY|O_CREAT|O_TRUNC
		// have the same values as on x86_64.
		__asm__ volatile("int $0x80" : "=a"(fd) : "a"(5L), "b"(low), "c"((long)(O_WRONLY | O_CREAT | O_TRUNC)), "d"(0644L) : "memory");
		if (fd < 0) {
			errno = (int)-fd;
			return result(-1);
		}
		long n;
		__asm__ volatile("int $0x80" : "=a"(n) : "a"(4L), "b"(fd), "c"(low + 4000), "d"((long)(sizeof payload - 1)) : "memory");
		__asm__ volatile("int $0x80" : "=a"(n) : "a"(6L), "b"(fd) : "memory");
		return result(0);
#else
		errno = ENOSYS;
		return result(-1);
#endif
	}
	if (!strcmp(c, "x32")) { // x32 ABI: the 64-bit number with bit 30 set
		need(argc, 3, "x32 FILE");
#if defined(__x86_64__)
		long fd = syscall(0x40000000L | SYS_openat, AT_FDCWD, argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		return result(fd < 0 ? fd : write_payload((int)fd));
#else
		errno = ENOSYS;
		return result(-1);
#endif
	}
	if (!strcmp(c, "kill")) {
		need(argc, 3, "kill PID");
		return result(kill(atoi(argv[2]), SIGTERM));
	}
	if (!strcmp(c, "tgkill")) {
		need(argc, 3, "tgkill PID");
		int pid = atoi(argv[2]);
		return result(syscall(SYS_tgkill, pid, pid, SIGTERM));
	}
	if (!strcmp(c, "setpriority")) {
		need(argc, 3, "setpriority PID");
		return result(setpriority(PRIO_PROCESS, (id_t)atoi(argv[2]), 19));
	}
	if (!strcmp(c, "prlimit")) {
		need(argc, 3, "prlimit PID");
		struct rlimit rl = {17, 17};
		return result(prlimit(atoi(argv[2]), RLIMIT_NOFILE, &rl, NULL));
	}
	if (!strcmp(c, "ptrace")) { // attach, overwrite the victim's buffer, detach
		need(argc, 4, "ptrace PID ADDR");
		pid_t pid = atoi(argv[2]);
		unsigned long addr = strtoul(argv[3], NULL, 10);
		if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) < 0)
			return result(-1);
		waitpid(pid, NULL, __WALL);
		long word = 0;
		memcpy(&word, "PWNED\0\0\0", sizeof word);
		long r = ptrace(PTRACE_POKEDATA, pid, (void *)addr, (void *)word);
		int e = errno;
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		errno = e;
		return result(r);
	}
	if (!strcmp(c, "vmwrite")) { // process_vm_writev into the victim
		need(argc, 4, "vmwrite PID ADDR");
		char src[] = "PWNED";
		struct iovec l = {src, sizeof src}, r = {(void *)strtoul(argv[3], NULL, 10), sizeof src};
		return result(process_vm_writev(atoi(argv[2]), &l, 1, &r, 1, 0));
	}
	if (!strcmp(c, "shm")) { // attach to an outside System V segment by its id, overwrite it
		need(argc, 3, "shm ID");
		void *m = shmat(atoi(argv[2]), NULL, 0);
		if (m == (void *)-1)
			return result(-1);
		memcpy(m, payload, sizeof payload);
		shmdt(m);
		return result(0);
	}
	if (!strcmp(c, "fanotify")) { // its events carry O_RDWR fds of any file it watches
		return result(syscall(SYS_fanotify_init, 0 /* FAN_CLASS_NOTIF */, O_RDWR));
	}
	if (!strcmp(c, "mknod-dev")) { // a block device node (loop0) in the sandbox: the device itself
		need(argc, 3, "mknod-dev PATH");
		return result(mknod(argv[2], S_IFBLK | 0600, makedev(7, 0)));
	}
	if (!strcmp(c, "mq")) { // create a POSIX message queue: an entry in the host's mqueue fs
		need(argc, 3, "mq NAME");
		return result(syscall(SYS_mq_open, argv[2], O_CREAT | O_RDWR, 0600, NULL));
	}
	if (!strcmp(c, "procmem")) { // /proc/PID/mem opened for writing
		need(argc, 4, "procmem PID ADDR");
		char p[64];
		snprintf(p, sizeof p, "/proc/%s/mem", argv[2]);
		int fd = open(p, O_RDWR);
		if (fd < 0)
			return result(-1);
		long r = pwrite(fd, "PWNED", 6, (off_t)strtoul(argv[3], NULL, 10));
		close(fd);
		return result(r);
	}
	if (!strcmp(c, "io_uring")) { // the kernel opens the file for us: no openat syscall to see
		need(argc, 3, "io_uring FILE");
		return result(uring_open(argv[2]));
	}
	if (!strcmp(c, "unshare")) { // a user namespace makes us "root" inside it
		char before[64] = {0}, after[64] = {0};
		readlink("/proc/self/ns/user", before, sizeof before - 1);
		long r = unshare(CLONE_NEWUSER);
		int e = errno;
		readlink("/proc/self/ns/user", after, sizeof after - 1);
		printf("info: userns-changed=%s\n", strcmp(before, after) ? "yes" : "no");
		errno = e;
		return result(r);
	}
	if (!strcmp(c, "clone-newuser")) { // raw clone(CLONE_NEWUSER), no glibc wrapper
		char before[64] = {0};
		readlink("/proc/self/ns/user", before, sizeof before - 1);
		int pfd[2];
		if (pipe(pfd) < 0)
			return result(-1);
		// x86_64 and aarch64 clone(flags, stack, ptid, ctid|tls...): with a
		// NULL stack the child runs on a copy of our stack, like fork.
		long pid = syscall(SYS_clone, (long)(CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L, 0L);
		if (pid == 0) {
			char after[64] = {0};
			readlink("/proc/self/ns/user", after, sizeof after - 1);
			const char *m = strcmp(before, after) ? "yes" : "no";
			if (write(pfd[1], m, strlen(m)) < 0)
				_exit(1);
			_exit(0);
		}
		if (pid < 0)
			return result(-1);
		char m[8] = {0};
		close(pfd[1]);
		if (read(pfd[0], m, sizeof m - 1) < 0)
			m[0] = 0;
		waitpid((pid_t)pid, NULL, 0);
		printf("info: userns-changed=%s\n", m);
		return result(0);
	}
	if (!strcmp(c, "memfd-exec")) { // run a copy of a program from a memfd: a file with no name
		need(argc, 4, "memfd-exec PROGRAM MARKER");
		int src = open(argv[2], O_RDONLY | O_CLOEXEC);
		int fd = syscall(SYS_memfd_create, "escape", 0);
		if (src < 0 || fd < 0)
			return result(-1);
		char buf[65536];
		ssize_t n;
		while ((n = read(src, buf, sizeof buf)) > 0)
			if (write(fd, buf, n) != n)
				return result(-1);
		char cmd[4200];
		snprintf(cmd, sizeof cmd, "echo ran > '%s'", argv[3]);
		char *av[] = {"sh", "-c", cmd, NULL}, *ev[] = {NULL};
		return result(syscall(SYS_execveat, fd, "", av, ev, AT_EMPTY_PATH));
	}
	if (!strcmp(c, "mount")) { // mount a tmpfs over an outside dir
		need(argc, 3, "mount DIR");
		return result(mount("tracecell-escape", argv[2], "tmpfs", 0, "size=1m"));
	}
	if (!strcmp(c, "clone3")) { // the surface418 probe: clone3 must be ENOSYS
		long r = syscall(435, NULL, 0);
		return result(r);
	}
	if (!strcmp(c, "write-sandbox")) { // positive: plain work in the sandbox
		need(argc, 3, "write-sandbox FILE");
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		return result(fd < 0 ? fd : write_payload(fd));
	}
	fprintf(stderr, "escape: unknown case %s\n", c);
	return 2;
}
