/* percall: the cost of one checked call, split into its parts.
 *
 * Usage: percall CASE N [DIR]
 *   signal    kill(getpid(), 0): trapped, decided on registers alone: the
 *             stop round trip (trap, register read, decision, resume).
 *   relative  open("fK", O_WRONLY|O_CREAT|O_TRUNC) + close in the cwd: adds
 *             reading the path and one lstat (the cwd is remembered).
 *   absolute  the same with DIR/a/b/c/fK: adds the walk of the directories
 *             (one stat of the deepest remembered one).
 * Prints the mean wall time per iteration in nanoseconds. The bench runs it
 * bare and under tracecell; the difference is what tracecell adds.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: percall signal|relative|absolute N [DIR]\n");
		return 2;
	}
	const char *c = argv[1];
	long n = atol(argv[2]);
	char base[512], path[600];
	int mode = strcmp(c, "signal") == 0 ? 0 : strcmp(c, "relative") == 0 ? 1 : strcmp(c, "absolute") == 0 ? 2 : -1;
	if (mode < 0 || n <= 0 || (mode == 2 && argc < 4)) {
		fprintf(stderr, "percall: bad arguments\n");
		return 2;
	}
	if (mode == 2) {
		snprintf(base, sizeof base, "%s/a", argv[3]);
		mkdir(base, 0755);
		snprintf(base, sizeof base, "%s/a/b", argv[3]);
		mkdir(base, 0755);
		snprintf(base, sizeof base, "%s/a/b/c", argv[3]);
		mkdir(base, 0755);
	}
	pid_t me = getpid();
	double t0 = now();
	for (long i = 0; i < n; i++) {
		if (mode == 0) {
			kill(me, 0);
			continue;
		}
		if (mode == 1)
			snprintf(path, sizeof path, "f%ld", i & 15);
		else
			snprintf(path, sizeof path, "%s/f%ld", base, i & 15);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		close(fd);
	}
	printf("%.1f\n", (now() - t0) / n);
	return 0;
}
