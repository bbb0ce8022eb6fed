/* floor_common.h: what the two C floor tracers (floor.c with ptrace stops,
 * floor_notif.c with seccomp user notification) share, one copy so that both
 * trap the same calls and do the same work per call.
 *
 * The seccomp filter (floor.c returns SECCOMP_RET_TRACE, floor_notif.c
 * SECCOMP_RET_USER_NOTIF) traps kill(2) and the path calls files.py
 * makes (unlink, unlinkat, mkdir, mkdirat, rmdir) always; openat(2) only
 * when its flags ask to write. Needs ARCH (the audit arch of the build).
 *
 * FLOOR_FILTER(f, RET) declares struct sock_filter f[] returning RET for a
 * trapped call and SECCOMP_RET_ALLOW otherwise. */
#ifndef FLOOR_COMMON_H
#define FLOOR_COMMON_H

/* FLOOR_TRAP_AT: the distance from the kill jump to the trapping RET. */
#define FLOOR_TRAP_AT 8

#ifdef SYS_unlink
#define FLOOR_LEGACY_PATH_CALLS                                                       \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unlink, FLOOR_TRAP_AT - 3, 0),        \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mkdir, FLOOR_TRAP_AT - 4, 0),         \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rmdir, FLOOR_TRAP_AT - 5, 0),
#else /* aarch64 has only the *at calls: three no-ops keep the jump distances */
#define FLOOR_LEGACY_PATH_CALLS                                                       \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),        \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),        \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#endif

#define FLOOR_FILTER(f, RET)                                                          \
	struct sock_filter f[] = {                                                    \
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), \
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),                      \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),                  \
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), \
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kill, FLOOR_TRAP_AT, 0),      \
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unlinkat, FLOOR_TRAP_AT - 1, 0), \
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mkdirat, FLOOR_TRAP_AT - 2, 0), \
		FLOOR_LEGACY_PATH_CALLS                                               \
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 3),                \
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])), \
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_WRONLY | O_RDWR | O_CREAT | O_TRUNC, 0, 1), \
		BPF_STMT(BPF_RET | BPF_K, RET),                                       \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),                         \
	}

/* floor_stat_path: the file-system calls tracecell makes for a path it
 * checks (path, NUL-terminated, read from the tracee): stat the directory
 * and lstat the name of an absolute path, lstat cwd/name of a relative one.
 * full is scratch space of fullsz bytes. */
static inline void floor_stat_path(char *path, const char *cwd, char *full, size_t fullsz) {
	struct stat sb;
	char *slash = strrchr(path, '/');
	if (path[0] == '/' && slash) {
		*slash = 0;
		stat(slash == path ? "/" : path, &sb);
		*slash = '/';
		lstat(path, &sb);
	} else {
		snprintf(full, fullsz, "%s/%s", cwd, path);
		lstat(full, &sb);
	}
}

#endif
