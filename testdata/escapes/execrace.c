// execrace: a thread other than the leader execs while the tracer may be
// busy with a stop of the leader. de_thread (fs/exec.c) kills the leader in
// its stop and gives its tid to the exec'ing thread, which then reports
// PTRACE_EVENT_EXEC under that tid: a tracer that answers the leader's stop
// afterwards, with PTRACE_CONT on that tid, resumes the new program past
// its exec event, which it then never sees (no exec check, and its records
// of the old process's memory, the path page among them, kept).
// tracer/execrun.go.
//
//   execrace EXE DIR GEN [SPINNERS IDLERS]
//
// Generation GEN appends "gen GEN" to DIR/log, makes a chain of 39
// symlinks under DIR (slow for a tracer to resolve), starts SPINNERS
// threads that keep a CPU busy and IDLERS threads that sleep (more tasks
// for a freeze to stop), and a thread that waits 100-500 microseconds and
// execs EXE EXE DIR GEN-1 SPINNERS IDLERS. The leader meanwhile creates and
// renames files under DIR/s0 (through the chain), as fast as it can, until
// the exec kills it. Generation 0 prints "result: execrace done" and exits.
// The test compares the lines of DIR/log (the programs that ran) with the
// execs the tracer reports.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char *exe, *dir;
static int gen;

static int spinners, idlers;

// idle sleeps until the exec ends it: one more task for a freeze to stop.
static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

// spin keeps a CPU busy, so that the tracer is preempted now and then.
static void *spin(void *arg)
{
	(void)arg;
	for (volatile unsigned long i = 0;; i++)
		;
	return NULL;
}

static void *execer(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 100000 + (rand() % 400) * 1000};
	nanosleep(&ts, NULL);
	char next[16], sp[16], id[16];
	snprintf(next, sizeof next, "%d", gen - 1);
	snprintf(sp, sizeof sp, "%d", spinners);
	snprintf(id, sizeof id, "%d", idlers);
	char *argv[] = {exe, exe, dir, next, sp, id, NULL};
	execv(exe, argv);
	perror("execrace: execv");
	_exit(2);
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 6) {
		fprintf(stderr, "usage: execrace EXE DIR GEN [SPINNERS IDLERS]\n");
		return 2;
	}
	exe = argv[1];
	dir = argv[2];
	gen = atoi(argv[3]);
	srand((unsigned)getpid());
	if (argc == 6) {
		spinners = atoi(argv[4]);
		idlers = atoi(argv[5]);
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/log", dir);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0) {
		perror("execrace: open log");
		return 2;
	}
	char line[32];
	int n = snprintf(line, sizeof line, "gen %d\n", gen);
	if (write(fd, line, n) != n)
		return 2;
	close(fd);
	if (gen == 0) {
		printf("result: execrace done\n");
		return 0;
	}
	char target[4096];
	snprintf(target, sizeof target, "%s/t", dir);
	mkdir(target, 0755);
	for (int i = 0; i < 39; i++) {
		char link[4096], to[64];
		snprintf(link, sizeof link, "%s/s%d", dir, i);
		if (i == 38)
			snprintf(to, sizeof to, "t");
		else
			snprintf(to, sizeof to, "s%d", i + 1);
		symlink(to, link); // EEXIST from an earlier generation
	}
	pthread_t th;
	for (int i = 0; i < spinners; i++)
		if (pthread_create(&th, NULL, spin, NULL) != 0)
			return 2;
	for (int i = 0; i < idlers; i++)
		if (pthread_create(&th, NULL, idle, NULL) != 0)
			return 2;
	if (pthread_create(&th, NULL, execer, NULL) != 0)
		return 2;
	char to[4096];
	for (unsigned i = 0;; i++) {
		snprintf(path, sizeof path, "%s/s0/f%u", dir, i % 64);
		fd = open(path, O_WRONLY | O_CREAT, 0644);
		if (fd >= 0)
			close(fd);
		snprintf(to, sizeof to, "%s/s0/g%u", dir, i % 64);
		rename(path, to);
	}
}
