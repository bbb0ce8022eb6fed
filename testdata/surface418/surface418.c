// surface418: run a program with the system call surface of Linux 4.18
// (RHEL 8). Every system call newer than 4.18 fails with ENOSYS, the way an
// old kernel answers a number it does not know, so the integration suite can
// prove tracecell (and everything it runs) never needs clone3, openat2,
// faccessat2, pidfd_*, io_uring_*, close_range, ...
//
//   surface418 PROGRAM [ARGS...]
//
// It sets PR_SET_NO_NEW_PRIVS (needed to load a filter without
// CAP_SYS_ADMIN), loads a classic BPF seccomp filter and execvp()s PROGRAM.
// The filter is inherited across fork/clone/execve and cannot be removed, so
// the whole process tree sees the 4.18 surface.
//
// Numbers (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h):
//   x86_64:  rseq = 334 is the last call of 4.18 (added in 4.18); 335..423 are
//            unused on x86_64 (reserved to line up with the generic table);
//            424 pidfd_send_signal (5.1) and everything above is newer.
//   aarch64: rseq = 293 is the last call of 4.18; 294..423 were added later
//            (294 kexec_file_load arrived for arm64 in 5.0).
// Newer ioctls tracecell uses with a fallback fail as 4.18 fails them:
// PROCMAP_QUERY (6.11) gets ENOTTY, so the maps text is read instead; so
// does the newer ptrace request PTRACE_GET_SYSCALL_INFO (5.3): EIO.
// x32 calls (nr | 0x40000000) are left to the kernel: they are a different
// ABI, and tracecell kills them itself.
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define LAST_418 334u
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define LAST_418 293u
#else
#error "surface418 supports x86_64 and aarch64 only"
#endif

#define X32_BIT 0x40000000u
// PROCMAP_QUERY: _IOWR(0x66, 17, struct procmap_query), 104 bytes (6.11).
#define PROCMAP_QUERY_NR 0xc0686611u
// PTRACE_GET_SYSCALL_INFO (5.3).
#define PTRACE_GET_SYSCALL_INFO_REQ 0x420eu

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: surface418 PROGRAM [ARGS...]\n");
		return 2;
	}
	struct sock_filter prog[] = {
		// A foreign arch (i386 via int 0x80 on x86_64) has its own numbering;
		// its table is not what we restrict. This is a test wrapper, not a
		// security boundary: let the kernel (and tracecell's own filter) decide.
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
		// x32 numbers have bit 30 set and would all compare "newer"; leave
		// them to the kernel (see above).
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, X32_BIT, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
#endif
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, LAST_418, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		// ioctls newer than 4.18 on old files: PROCMAP_QUERY (6.11) on
		// /proc/<pid>/maps, which 4.18 answers ENOTTY (no unlocked_ioctl).
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROCMAP_QUERY_NR, 0, 5),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOTTY & SECCOMP_RET_DATA)),
		// ptrace requests newer than 4.18: PTRACE_GET_SYSCALL_INFO (5.3),
		// which 4.18 answers EIO as any request it does not know.
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ptrace, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PTRACE_GET_SYSCALL_INFO_REQ, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EIO & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = {
		.len = (unsigned short)(sizeof(prog) / sizeof(prog[0])),
		.filter = prog,
	};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		fprintf(stderr, "surface418: prctl(PR_SET_NO_NEW_PRIVS): %s\n", strerror(errno));
		return 125;
	}
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0) {
		fprintf(stderr, "surface418: prctl(PR_SET_SECCOMP): %s\n", strerror(errno));
		return 125;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "surface418: exec %s: %s\n", argv[1], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
