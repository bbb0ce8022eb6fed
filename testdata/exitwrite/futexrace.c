// futexrace: futex_requeue's and futex_waitv's struct futex_waitv array
// rewritten by an exit while the tracer has the tree frozen for the check
// (integration/futexrace_test.go; red team 5, F2), and a shared futex after
// the main thread left (N1).
//
// A process P2 made with clone(CLONE_VM|CLONE_CHILD_CLEARTID) shares this
// program's memory; its clear_child_tid points at the low half of
// waiters[0].uaddr. P2 arms a POSIX timer that sends it SIGKILL 0.1 to
// 3.1 ms later (a ptrace-stopped task dies at once: the freeze cannot hold
// it), and its exit (mm_release, kernel/fork.c) writes 4 zero bytes there.
// HOST's file is mapped read-only MAP_SHARED at 0x300000000, an anonymous
// MAP_SHARED page at 0x300001000; waiters[0].uaddr is 0x300001000 (the
// tracer allows it: anonymous memory), and the zeros make it 0x300000000,
// the host file's word. Were they written after the tracer's check and
// before the kernel's read, the call would act on the host's futex.
//
//   futexrace requeue HOST SECONDS TRIES
//       futex_requeue(waiters, 0, 0, 1): waiters[1] is another anonymous
//       shared page. On the host's word it would move the host's waiter
//       (host-wait) there: the host's own wake then finds no one.
//   futexrace waitv HOST SECONDS TRIES
//       futex_waitv on waiters[0] alone, val 0, with a 2 s timeout. The
//       tree's own word holds 1 (EAGAIN at once); the host's word holds 0:
//       on it the call would sleep on the host's futex, where host-wake
//       wakes it (a wake stolen from the host's waiters).
//   Both print "won tries=N calls=M" when a call acted on the host's word
//   as far as the program can tell, or "done tries=N calls=M denied=D"
//   (D: calls failed with EACCES or EPERM).
//   futexrace host-wait HOST
//       (outside the tree) maps HOST (created 0644) shared and writable, a
//       child waits on its first word (FUTEX_WAIT, 60 s); prints "ready"
//       once the child sleeps there, then, when stdin closes, wakes one
//       waiter and prints "woke N" (1: its own waiter was still there).
//   futexrace host-wake HOST
//       (outside the tree) maps HOST (created 0644, word 0) shared; prints
//       "ready", then wakes every waiter on the word every 2 ms until stdin
//       closes, and prints "woke N": the waiters it found (none of its own).
//   futexrace zleader
//       the main thread leaves (pthread_exit); another thread then makes a
//       shared FUTEX_WAKE on an anonymous MAP_SHARED page of the process and
//       prints "zleader wake=R errno=E" (R=0, E=0: it was allowed).
//
//   futexrace restart-fork|restart-thread HOST
//       (red team 6, F1) a timed shared FUTEX_WAIT on an anonymous word
//       (allowed) is interrupted by SIGALRM; the handler forks (or starts a
//       thread), which inherits the saved restart (restart_block is copied
//       with the task_struct), maps HOST read-only over the word's page and
//       calls restart_syscall: were it let through, the kernel would wait on
//       the host file's futex (host-wake then finds a waiter). Prints
//       "restart r=R errno=E" (R=-1, E=EPERM: refused).
//   futexrace wo-open PATH
//       (red team 6, F2/F3) open(PATH, O_WRONLY|O_CREAT) with PATH in a
//       PROT_WRITE-only page (the kernel reads it; process_vm_readv does
//       not): prints "wo-open fd=R errno=E".
//
// With FUTEXRACE_RESERVE set, requeue and waitv first map PROT_NONE memory
// over 7.5-8.5 GiB, where tracecell keeps its path page, so that no copy
// can be made.
//
// Build: gcc -O2 -Wall -pthread -o futexrace futexrace.c
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "selfkill.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449 // the same number on x86_64 and aarch64
#endif
#ifndef SYS_futex_requeue
#define SYS_futex_requeue 456
#endif
#define FUTEX2_SIZE_U32 0x02

// fw is struct futex_waitv.
struct fw {
    uint64_t val, uaddr;
    uint32_t flags, res;
};

#define HOSTADDR 0x300000000UL
#define OWNADDR 0x300001000UL

static char stk[65536] __attribute__((aligned(16)));
static long delay_ns;

// child is P2: it kills itself with its own timer.
static int child(void *a) {
    if (selfkill_arm(delay_ns))
        _exit(3);
    for (;;)
        pause();
}

static void *mapfix(unsigned long addr, int prot, int flags, int fd) {
    void *p = mmap((void *)addr, 4096, prot, flags | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static int race(int waitv, const char *host, int secs, long maxtries) {
    if (getenv("FUTEXRACE_RESERVE")) {
        // Take tracecell's path page range (8 GiB) before it is used, as
        // AddressSanitizer's shadow gap does: the page is off for the run.
        void *r = mmap((void *)0x1e0000000UL, 1UL << 30, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
        if (r == MAP_FAILED) {
            perror("mmap reserve");
            return 2;
        }
    }
    int fd = open(host, O_RDONLY);
    if (fd < 0) {
        perror(host);
        return 1;
    }
    mapfix(HOSTADDR, PROT_READ, MAP_SHARED, fd);
    int *own = mapfix(OWNADDR, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1);
    int *tgt = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct fw *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (tgt == MAP_FAILED || w == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    *own = 1; // waitv: val 0 on the own word fails with EAGAIN at once
    srand(getpid());
    time_t end = time(NULL) + secs;
    long tries = 0, calls = 0, denied = 0;
    while (time(NULL) < end && tries < maxtries) {
        w[0] = (struct fw){0, OWNADDR, FUTEX2_SIZE_U32, 0};
        w[1] = (struct fw){0, (uint64_t)(uintptr_t)tgt, FUTEX2_SIZE_U32, 0};
        delay_ns = 100000 + (rand() % 3000) * 1000L;
        pid_t p = clone(child, stk + sizeof stk, CLONE_VM | CLONE_CHILD_CLEARTID | SIGCHLD, NULL, NULL, NULL, &w[0].uaddr);
        if (p < 0) {
            perror("clone");
            return 1;
        }
        tries++;
        for (;;) {
            long r;
            if (waitv) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_sec += 2;
                r = syscall(SYS_futex_waitv, w, 1, 0, &ts, CLOCK_MONOTONIC);
            } else {
                r = syscall(SYS_futex_requeue, w, 0, 0, 1);
            }
            calls++;
            if (r < 0 && errno == ENOSYS) {
                printf("enosys\n");
                return 0;
            }
            if (r < 0 && (errno == EACCES || errno == EPERM))
                denied++;
            // requeue: a waiter moved (only the host's can be there);
            // waitv: slept on a word holding 0 until woken or timed out.
            if ((!waitv && r > 0) || (waitv && (r == 0 || (r < 0 && errno == ETIMEDOUT)))) {
                printf("won tries=%ld calls=%ld\n", tries, calls);
                fflush(stdout);
                waitpid(p, NULL, 0);
                return 0;
            }
            if (waitpid(p, NULL, WNOHANG) == p)
                break;
        }
    }
    printf("done tries=%ld calls=%ld denied=%ld\n", tries, calls, denied);
    return 0;
}

// hostWord maps HOST's first word shared and writable (HOST made 0644 for
// a tree running as another user).
static int *hostWord(const char *host) {
    int fd = open(host, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ftruncate(fd, 4096) || fchmod(fd, 0644)) {
        perror(host);
        exit(1);
    }
    int *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (w == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    *w = 0;
    return w;
}

// stdinOpen reports whether stdin is still open after waiting ms for it.
static int stdinOpen(int ms) {
    struct pollfd p = {.fd = 0, .events = POLLIN};
    char b[64];
    if (poll(&p, 1, ms) <= 0)
        return 1;
    return read(0, b, sizeof b) > 0;
}

static int hostWait(const char *host) {
    int *w = hostWord(host);
    pid_t p = fork();
    if (p == 0) {
        struct timespec ts = {60, 0};
        syscall(SYS_futex, w, FUTEX_WAIT, 0, &ts, NULL, 0);
        _exit(0);
    }
    // Ready once the child sleeps in futex (/proc/<pid>/syscall begins
    // with the number of the call it is blocked in).
    char path[64], buf[64];
    snprintf(path, sizeof path, "/proc/%d/syscall", p);
    for (int i = 0; i < 5000; i++) {
        int fd = open(path, O_RDONLY);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        if (fd >= 0)
            close(fd);
        if (n > 0) {
            buf[n] = 0;
            if (atol(buf) == SYS_futex)
                break;
        }
        usleep(1000);
    }
    printf("ready\n");
    fflush(stdout);
    while (stdinOpen(-1))
        ;
    long n = syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
    printf("woke %ld\n", n);
    fflush(stdout);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    return 0;
}

static int hostWake(const char *host) {
    int *w = hostWord(host);
    printf("ready\n");
    fflush(stdout);
    long n = 0;
    while (stdinOpen(2))
        n += syscall(SYS_futex, w, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
    n += syscall(SYS_futex, w, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
    printf("woke %ld\n", n);
    return 0;
}

static int *zword;

static void *zthread(void *a) {
    usleep(200000); // the main thread has left by now
    long r = syscall(SYS_futex, zword, FUTEX_WAKE, 1, NULL, NULL, 0);
    printf("zleader wake=%ld errno=%d\n", r, r < 0 ? errno : 0);
    fflush(stdout);
    return NULL;
}

static int zleader(void) {
    zword = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (zword == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, zthread, NULL)) {
        perror("pthread_create");
        return 1;
    }
    pthread_exit(NULL);
}

static int *rword;
static const char *rhost;
static int rthread;

static void *restartIn(void *a) {
    int fd = open(rhost, O_RDONLY);
    if (fd < 0 || mmap(rword, 4096, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != rword) {
        perror("map the host file");
        _exit(1);
    }
    long r = syscall(SYS_restart_syscall);
    printf("restart r=%ld errno=%d\n", r, r < 0 ? errno : 0);
    fflush(stdout);
    return NULL;
}

static void restartHandler(int sig) {
    if (rthread) {
        pthread_t t;
        pthread_create(&t, NULL, restartIn, NULL);
        pthread_join(t, NULL);
        return;
    }
    pid_t p = fork();
    if (p == 0) {
        restartIn(NULL);
        _exit(0);
    }
    waitpid(p, NULL, 0);
}

static int restart(const char *host, int thread) {
    rhost = host;
    rthread = thread;
    rword = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct sigaction sa = {0};
    sa.sa_handler = restartHandler; // no SA_RESTART: the wait is interrupted, its restart saved
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    struct timespec to = {3, 0};
    syscall(SYS_futex, rword, FUTEX_WAIT, 0, &to, NULL, 0); // shared: no FUTEX_PRIVATE_FLAG
    return 0;
}

static int woOpen(const char *path) {
    char *p = mmap(NULL, 4096, PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || strlen(path) >= 4096) {
        perror("mmap");
        return 1;
    }
    memcpy(p, path, strlen(path) + 1);
    int r = open(p, O_WRONLY | O_CREAT, 0644);
    printf("wo-open fd=%d errno=%d\n", r < 0 ? -1 : 0, r < 0 ? errno : 0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "restart-fork"))
        return restart(argv[2], 0);
    if (argc == 3 && !strcmp(argv[1], "restart-thread"))
        return restart(argv[2], 1);
    if (argc == 3 && !strcmp(argv[1], "wo-open"))
        return woOpen(argv[2]);
    if (argc == 5 && !strcmp(argv[1], "requeue"))
        return race(0, argv[2], atoi(argv[3]), atol(argv[4]));
    if (argc == 5 && !strcmp(argv[1], "waitv"))
        return race(1, argv[2], atoi(argv[3]), atol(argv[4]));
    if (argc == 3 && !strcmp(argv[1], "host-wait"))
        return hostWait(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "host-wake"))
        return hostWake(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "zleader"))
        return zleader();
    fprintf(stderr, "usage: futexrace requeue|waitv HOST SECONDS TRIES | host-wait|host-wake HOST | zleader | restart-fork|restart-thread HOST | wo-open PATH\n");
    return 2;
}
