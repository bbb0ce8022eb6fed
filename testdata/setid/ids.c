/* ids: prints "ruid euid rgid egid" and, with an argument, creates that file
 * (which the test then stats for its owner). Installed set-uid and set-gid
 * to another user by integration/exec_patterns_test.go, it shows whether an
 * exec under tracecell gained that user's identity: with PR_SET_NO_NEW_PRIVS
 * (set by the stub before the first exec) the kernel ignores the set-id bits
 * and file capabilities at execve (Documentation/userspace-api/no_new_privs.rst,
 * since Linux 3.5). */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
	printf("%d %d %d %d\n", (int)getuid(), (int)geteuid(), (int)getgid(), (int)getegid());
	if (argc > 1) {
		int fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			perror(argv[1]);
			return 1;
		}
		close(fd);
	}
	return 0;
}
