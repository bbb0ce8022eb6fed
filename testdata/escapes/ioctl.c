// ioctl: ioctl commands made on read-only fds, for the tracecell
// integration suite (integration/ioctl_test.go, issue 16).
//
//   ioctl STEP ARGS... [STEP ARGS...]...
//
// Steps, each through fds opened O_RDONLY (the open never stops under
// tracecell: reads are open):
//
//   subvol-create DIR NAME       BTRFS_IOC_SUBVOL_CREATE: a new subvolume DIR/NAME
//   snap-create-v2 SRC DIR NAME  BTRFS_IOC_SNAP_CREATE_V2: a snapshot of subvolume SRC as DIR/NAME
//   subvol-setflags SUBVOL       BTRFS_IOC_SUBVOL_SETFLAGS: make SUBVOL read-only
//   subvol-getflags SUBVOL       BTRFS_IOC_SUBVOL_GETFLAGS: print its flags
//   raw PATH CMD                 ioctl(fd, CMD (hex), buf) with a zeroed 4 KiB buffer
//   dedupe SRC DST LEN           FIDEDUPERANGE on SRC's fd: share its first LEN bytes'
//                                extents with DST (a destination fd in the argument)
//
// Each step prints one line "STEP: ok" or "STEP: errno=NAME" (getflags:
// "subvol-getflags: flags=N"); the program exits 0 either way, so the test
// can tell "the kernel or tracecell said no" from "the program broke".
// Run bare as root on a btrfs, the btrfs steps really create, snapshot and
// re-flag where they are told to.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../include/errname.h"

static void report(const char *step, long r) {
	if (r < 0)
		printf("%s: errno=%s\n", step, errname(errno));
	else
		printf("%s: ok\n", step);
	fflush(stdout);
}

static int ro(const char *p) {
	int fd = open(p, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", p, strerror(errno));
		exit(2);
	}
	return fd;
}

int main(int argc, char **argv) {
	int i = 1;
	while (i < argc) {
		const char *step = argv[i];
		int left = argc - i - 1;
		if (!strcmp(step, "subvol-create") && left >= 2) {
			struct btrfs_ioctl_vol_args a;
			memset(&a, 0, sizeof a);
			int fd = ro(argv[i + 1]);
			strncpy(a.name, argv[i + 2], sizeof a.name - 1);
			report(step, ioctl(fd, BTRFS_IOC_SUBVOL_CREATE, &a));
			close(fd);
			i += 3;
		} else if (!strcmp(step, "snap-create-v2") && left >= 3) {
			struct btrfs_ioctl_vol_args_v2 a;
			memset(&a, 0, sizeof a);
			int src = ro(argv[i + 1]), dir = ro(argv[i + 2]);
			a.fd = src;
			strncpy(a.name, argv[i + 3], sizeof a.name - 1);
			report(step, ioctl(dir, BTRFS_IOC_SNAP_CREATE_V2, &a));
			close(src);
			close(dir);
			i += 4;
		} else if (!strcmp(step, "subvol-setflags") && left >= 1) {
			uint64_t fl = BTRFS_SUBVOL_RDONLY;
			int fd = ro(argv[i + 1]);
			report(step, ioctl(fd, BTRFS_IOC_SUBVOL_SETFLAGS, &fl));
			close(fd);
			i += 2;
		} else if (!strcmp(step, "subvol-getflags") && left >= 1) {
			uint64_t fl = 0;
			int fd = ro(argv[i + 1]);
			if (ioctl(fd, BTRFS_IOC_SUBVOL_GETFLAGS, &fl) < 0)
				report(step, -1);
			else
				printf("%s: flags=%llu\n", step, (unsigned long long)fl);
			close(fd);
			i += 2;
		} else if (!strcmp(step, "dedupe") && left >= 3) {
			struct {
				struct file_dedupe_range r;
				struct file_dedupe_range_info info[1];
			} a;
			memset(&a, 0, sizeof a);
			int src = ro(argv[i + 1]), dst = ro(argv[i + 2]);
			a.r.src_length = strtoull(argv[i + 3], NULL, 0);
			a.r.dest_count = 1;
			a.info[0].dest_fd = dst;
			long r = ioctl(src, FIDEDUPERANGE, &a);
			if (r == 0 && a.info[0].status < 0) {
				errno = -a.info[0].status;
				r = -1;
			}
			report(step, r);
			close(src);
			close(dst);
			i += 4;
		} else if (!strcmp(step, "raw") && left >= 2) {
			static char buf[4096];
			memset(buf, 0, sizeof buf);
			int fd = ro(argv[i + 1]);
			unsigned long cmd = strtoul(argv[i + 2], NULL, 16);
			report(step, ioctl(fd, cmd, buf));
			close(fd);
			i += 3;
		} else {
			fprintf(stderr, "ioctl: bad step %s (or too few arguments)\n", step);
			return 2;
		}
	}
	return 0;
}
