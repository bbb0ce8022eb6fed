// selfkill.h: the self-killing timer of the CLONE_VM children that
// exitwrite.c and futexrace.c start (their P2). Raw system calls only, as
// in the rest of such a child, which shares the parent's memory and TLS.
#ifndef SELFKILL_H
#define SELFKILL_H

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// selfkill_arm makes the calling process send itself SIGKILL in delay_ns
// nanoseconds (below one second): 0, or -1 when the timer cannot be made.
static int selfkill_arm(long delay_ns) {
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGKILL;
    int t; // __kernel_timer_t: the raw call writes an int
    if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &t))
        return -1;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_nsec = delay_ns;
    syscall(SYS_timer_settime, t, 0, &its, NULL);
    return 0;
}

#endif
