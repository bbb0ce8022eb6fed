# Red team 2, F8 and F1: change another process's unlinked file through its
# /proc/<pid>/fd/N magic link, whose text is "<old name> (deleted)".
#
#   deleted_spoof.py HOSTPID HOSTFD OWNDIR   (testdata/py/hold_unlinked.py is the host)
#
# HOSTPID holds HOSTFD open on a file it has unlinked (in /dev/shm, or in a
# directory outside the writable roots). Every change
# is tried twice: as is (F1: tracecell answered ENOENT without a report), and
# after creating an entry named exactly like the link text in /dev/shm (F8:
# the policy decided by that name, which the tree owned, and allowed it).
# Then through a read-only fd of our own, by /proc/self/fd/N and by fd
# (fchmod, futimens, fsetxattr). Last, the tree's own unlinked files (in OWNDIR, a writable root,
# and in a /dev/shm directory it made) must stay changeable.
# Prints one line per attempt: "<what> OK" or "<what> <errno name>".
import errno, os, sys

hp, hfd, own = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
p = "/proc/%d/fd/%d" % (hp, hfd)


def attempt(what, fn):
    try:
        fn()
        print(what, "OK", flush=True)
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, str(e.errno)), flush=True)


def write_open():
    fd = os.open(p, os.O_RDWR)
    try:
        os.pwrite(fd, b"TREE-WROTE", 0)
    finally:
        os.close(fd)


def changes(tag):
    attempt(tag + " open-rdwr", write_open)
    attempt(tag + " chmod", lambda: os.chmod(p, 0o666))
    attempt(tag + " truncate", lambda: os.truncate(p, 0))
    attempt(tag + " utime", lambda: os.utime(p, (1, 1)))


text = os.readlink(p)
print("text", text, flush=True)
changes("plain")
spoof = text  # "/dev/shm/<name> (deleted)": a new name in the scratch dir
try:
    os.close(os.open(spoof, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    changes("spoof")
except OSError as e:  # outside the scratch dir: no name to plant
    spoof = None
    print("spoof-create", errno.errorcode.get(e.errno, str(e.errno)), flush=True)
ro = os.open(p, os.O_RDONLY)
hostp, p = p, "/proc/self/fd/%d" % ro  # the tree's own read-only fd
changes("self")
p = hostp
attempt("fd fchmod", lambda: os.fchmod(ro, 0o666))
attempt("fd futimens", lambda: os.utime(ro, (1, 1)))
attempt("fd fsetxattr", lambda: os.setxattr(ro, "user.tc", b"x"))
os.close(ro)
if spoof:
    os.unlink(spoof)

# The tree's own unlinked files stay its own.
for d in (own, None):
    if d is None:
        d = "/dev/shm/tc-own-%d" % os.getpid()
        os.mkdir(d)
    f = os.path.join(d, "mine")
    fd = os.open(f, os.O_RDWR | os.O_CREAT, 0o600)
    os.unlink(f)
    where = "root" if d == own else "shmdir"
    attempt("own-%s chmod" % where, lambda: os.chmod("/proc/self/fd/%d" % fd, 0o640))
    attempt("own-%s fchmod" % where, lambda: os.fchmod(fd, 0o600))
    os.close(fd)
    if d != own:
        os.rmdir(d)
