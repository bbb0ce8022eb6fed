// errname.h: the symbolic name of an errno value, for the C test programs
// under testdata/ (escape, race, netmem, fsops, ioctl), whose output lines
// "result: errno=EACCES" the integration tests compare. Names the tests
// look for; any other value prints as its number. (glibc's
// strerrorname_np would do, but it is 2.32+: RHEL 8 has 2.28.)
#ifndef TRACECELL_ERRNAME_H
#define TRACECELL_ERRNAME_H

#include <errno.h>
#include <stdio.h>

static const char *errname(int e) {
	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EIO: return "EIO";
	case ENXIO: return "ENXIO";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case EXDEV: return "EXDEV";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case EINVAL: return "EINVAL";
	case ENOTTY: return "ENOTTY";
	case EROFS: return "EROFS";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ENOSYS: return "ENOSYS";
	case ENODATA: return "ENODATA";
	case EMSGSIZE: return "EMSGSIZE";
	case EOPNOTSUPP: return "EOPNOTSUPP"; // = ENOTSUP on Linux
	case ENETUNREACH: return "ENETUNREACH";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ECONNREFUSED: return "ECONNREFUSED";
	}
	static char buf[32];
	snprintf(buf, sizeof buf, "%d", e);
	return buf;
}

#endif
