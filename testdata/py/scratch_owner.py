# Red team 30, F4a and F4b: whose are the scratch entries the tree made,
# once a host process has been at them?
#
#   scratch_owner.py MODE BASE SIGNAL [ROOT]
#
# BASE is a fresh /dev/shm name; SIGNAL a path in the sandbox. The tree
# makes its entries, writes SIGNAL + ".ready" and waits (at most 20 s) for
# the test, the host process, to write SIGNAL + ".go" after changing them.
# Prints one line per attempt: "<what> OK" or "<what> <errno name>".
#
# MODE reuse (F4a): the tree makes BASE-d (a directory) and BASE-f (a
# file); the host removes both and makes its own under the same names
# (BASE-d/hostfile in its directory).
# MODE hostfile (F4b): the tree makes BASE-d (mode 0777) with BASE-d/own in
# it; the host puts hostfile, hostfile2 and hostfile3 into BASE-d.
# MODE deleted-dir (red team 31): the host has made BASE-d/hostfile before
# the run and holds it open; the tree opens it read-only; the host unlinks
# it and removes BASE-d; the tree makes a BASE-d of its own and tries to
# write the host's file through its own fd's /proc/self/fd link (whose
# text still reads BASE-d/hostfile (deleted)).
# MODE deleted-moved (red team 32, with ROOT on /dev/shm's file system):
# the tree makes BASE-d (mode 0777); the host puts hostfile in it; the
# tree opens it read-only; the host unlinks it (keeping it open); the tree
# moves BASE-d into ROOT (nothing foreign is left in it) and tries to
# write and re-permission the host's file through its read-only fd, whose
# link text now reads ROOT/.../hostfile (deleted).
# MODE lifecycle (with ROOT, a writable root on /dev/shm): no host; the tree's own life cycle (create, write,
# rename, delete, recreate, directories, links, a directory of the sandbox
# moved into scratch) must all pass.
import errno, os, sys, time

mode, base, signal = sys.argv[1], sys.argv[2], sys.argv[3]
d, f = base + "-d", base + "-f"


def attempt(what, fn):
    try:
        fn()
        print(what, "OK", flush=True)
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, str(e.errno)), flush=True)


def write(p, data, flags=os.O_WRONLY):
    fd = os.open(p, flags)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def exchange(a, b):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def wait_host():
    open(signal + ".ready", "w").close()
    for _ in range(200):
        if os.path.exists(signal + ".go"):
            return
        time.sleep(0.1)
    print("no go from the host", flush=True)
    sys.exit(3)


if mode == "reuse":
    os.mkdir(d)
    write(f, b"tree", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    wait_host()
    attempt("write host file in re-made dir", lambda: write(d + "/hostfile", b"TREE"))
    attempt("create in re-made dir", lambda: write(d + "/new", b"TREE", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    attempt("write re-made file", lambda: write(f, b"TREE"))
    attempt("chmod re-made file", lambda: os.chmod(f, 0o600))
    attempt("unlink re-made file", lambda: os.unlink(f))
    attempt("rename re-made dir", lambda: os.rename(d, base + "-moved"))
elif mode == "hostfile":
    os.mkdir(d)
    os.chmod(d, 0o777)
    write(d + "/own", b"tree", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    wait_host()
    attempt("write-open", lambda: write(d + "/hostfile", b"TREE"))
    attempt("unlink", lambda: os.unlink(d + "/hostfile2"))
    attempt("chmod", lambda: os.chmod(d + "/hostfile", 0o600))
    attempt("link host file", lambda: os.link(d + "/hostfile", d + "/lnk"))
    attempt("rename host file", lambda: os.rename(d + "/hostfile", d + "/taken"))
    attempt("create mine", lambda: write(d + "/mine", b"tree", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    attempt("rename-over", lambda: os.rename(d + "/mine", d + "/hostfile3"))
    attempt("rename-dir-away", lambda: os.rename(d, base + "-moved"))
    attempt("write own", lambda: write(d + "/own", b"TREE"))
    attempt("unlink own", lambda: os.unlink(d + "/own"))
elif mode == "deleted-dir":
    fd = os.open(d + "/hostfile", os.O_RDONLY)
    wait_host()
    os.mkdir(d)
    link = "/proc/self/fd/%d" % fd
    attempt("reopen deleted host file", lambda: write(link, b"TREE"))
    attempt("chmod deleted host file", lambda: os.chmod(link, 0o600))
    attempt("fchmod deleted host file", lambda: os.fchmod(fd, 0o600))
elif mode == "deleted-moved":
    os.mkdir(d)
    os.chmod(d, 0o777)
    open(signal + ".half", "w").close()
    for _ in range(200):
        if os.path.exists(d + "/hostfile"):
            break
        time.sleep(0.05)
    fd = os.open(d + "/hostfile", os.O_RDONLY)
    wait_host()
    moved = os.path.join(sys.argv[4], "moved-d")
    attempt("move dir into root", lambda: os.rename(d, moved))
    link = "/proc/self/fd/%d" % fd
    attempt("reopen deleted host file", lambda: write(link, b"TREE"))
    attempt("fchmod deleted host file", lambda: os.fchmod(fd, 0o666))
elif mode == "lifecycle":
    attempt("mkdir", lambda: os.mkdir(d))
    attempt("mkdir sub", lambda: os.mkdir(d + "/sub"))
    attempt("create in sub", lambda: write(d + "/sub/a", b"1", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    attempt("rename in dir", lambda: os.rename(d + "/sub/a", d + "/sub/b"))
    attempt("rename dir", lambda: os.rename(d, d + "2"))
    attempt("write moved", lambda: write(d + "2/sub/b", b"2"))
    attempt("rename dir back", lambda: os.rename(d + "2", d))
    attempt("create", lambda: write(f, b"1", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    attempt("link", lambda: os.link(f, f + "-ln"))
    attempt("unlink first name", lambda: os.unlink(f))
    attempt("write linked", lambda: write(f + "-ln", b"2"))
    attempt("recreate", lambda: write(f, b"3", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    attempt("rename over own", lambda: os.rename(f + "-ln", f))
    attempt("write", lambda: write(f, b"4", os.O_WRONLY | os.O_TRUNC))
    attempt("move into own dir", lambda: os.rename(f, d + "/sub/c"))
    attempt("exchange", lambda: exchange(d + "/sub/c", d + "/sub/b"))
    attempt("write exchanged", lambda: (write(d + "/sub/c", b"6"), write(d + "/sub/b", b"7")))
    attempt("unlink", lambda: os.unlink(d + "/sub/c"))
    attempt("unlink sub file", lambda: os.unlink(d + "/sub/b"))
    attempt("rmdir sub", lambda: os.rmdir(d + "/sub"))
    attempt("rmdir", lambda: os.rmdir(d))
    attempt("recreate dir", lambda: os.mkdir(d))
    attempt("create in recreated dir", lambda: write(d + "/x", b"5", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    attempt("cleanup", lambda: (os.unlink(d + "/x"), os.rmdir(d)))
    # A directory of a writable root (ROOT, on the scratch directory's file
    # system) moved into scratch: its entries too.
    sbx = sys.argv[4]
    os.makedirs(sbx + "/tomove/sub")
    write(sbx + "/tomove/sub/f", b"1", os.O_WRONLY | os.O_CREAT)
    attempt("move dir in from sandbox", lambda: os.rename(sbx + "/tomove", base + "-in"))
    attempt("write moved-in file", lambda: write(base + "-in/sub/f", b"2"))
    attempt("remove moved-in", lambda: (os.unlink(base + "-in/sub/f"), os.rmdir(base + "-in/sub"), os.rmdir(base + "-in")))
else:
    sys.exit("unknown mode " + mode)
