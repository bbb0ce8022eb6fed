#!/usr/bin/python3
"""work.py: ordinary work inside the sandbox, one subcommand per kind.

    python3 work.py CASE

Runs in the current directory (the sandbox) and prints only things that do
not depend on where it runs, so the integration suite can compare the output
of a bare run with a run under tracecell byte for byte.
"""

import hashlib
import io
import os
import sqlite3
import sys
import tempfile
import zipfile


def files():
    with open("a.txt", "w") as f:
        f.write("alpha\n" * 100)
    with open("a.txt", "a") as f:
        f.write("omega\n")
    with open("a.txt") as f:
        data = f.read()
    print("lines", data.count("\n"), "sha", hashlib.sha256(data.encode()).hexdigest()[:16])
    os.rename("a.txt", "b.txt")
    os.replace("b.txt", "c.txt")
    os.link("c.txt", "d.txt")
    os.symlink("c.txt", "e.txt")
    with open("e.txt", "a") as f:  # through a symlink that stays inside
        f.write("via link\n")
    os.chmod("c.txt", 0o600)
    os.utime("c.txt", (1000000, 1000000))
    os.truncate("d.txt", 6)
    print("size", os.path.getsize("c.txt"), "mode", oct(os.stat("c.txt").st_mode & 0o777))
    for n in ("c.txt", "d.txt", "e.txt"):
        os.remove(n)
    print("left", sorted(os.listdir(".")))


def mkdirs():
    os.makedirs("tree/a/b/c", exist_ok=True)
    for i in range(5):
        with open(f"tree/a/b/c/f{i}", "w") as f:
            f.write(str(i))
    os.rename("tree/a/b", "tree/x")
    names = []
    for root, dirs, fs in os.walk("tree"):
        dirs.sort()
        names += [os.path.relpath(os.path.join(root, n), "tree") for n in sorted(fs)]
    print("walk", names)
    for root, dirs, fs in os.walk("tree", topdown=False):
        for n in fs:
            os.remove(os.path.join(root, n))
        for n in dirs:
            os.rmdir(os.path.join(root, n))
    os.rmdir("tree")
    print("gone", not os.path.exists("tree"))


def tmpfiles():
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "x")
        with open(p, "wb") as f:
            f.write(b"\0" * 4096)
        print("tmpdir size", os.path.getsize(p))
    with tempfile.NamedTemporaryFile("w+") as f:
        f.write("named")
        f.seek(0)
        print("named", f.read())
    with tempfile.TemporaryFile() as f:  # O_TMPFILE where supported
        f.write(b"anon")
        f.seek(0)
        print("anon", f.read().decode())
    fd, p = tempfile.mkstemp(dir=".")
    os.close(fd)
    os.remove(p)
    print("mkstemp ok")


def sqlite():
    con = sqlite3.connect("db.sqlite")
    con.execute("create table t (k integer primary key, v text)")
    con.executemany("insert into t (v) values (?)", [(str(i * i),) for i in range(1000)])
    con.commit()
    print("sum", con.execute("select sum(cast(v as integer)) from t").fetchone()[0])
    con.execute("pragma journal_mode=wal")
    con.execute("update t set v = 'x' where k < 10")
    con.commit()
    con.close()
    print("count", sqlite3.connect("db.sqlite").execute("select count(*) from t where v = 'x'").fetchone()[0])


def zips():
    with zipfile.ZipFile("z.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(10):
            z.writestr(zipfile.ZipInfo(f"dir/f{i}.txt", date_time=(2020, 1, 1, 0, 0, 0)), f"file {i}\n" * i)
    with zipfile.ZipFile("z.zip") as z:
        z.extractall("out")
        print("names", z.namelist()[:3], len(z.namelist()))
    print("extracted", sorted(os.listdir("out/dir"))[:3])


def devnull():
    with open(os.devnull, "w") as f:
        f.write("discarded\n" * 1000)
    with open("/dev/null", "rb") as f:
        print("read", len(f.read()))
    print("devnull ok")


def stdout():
    for i in range(2000):
        sys.stdout.write(f"line {i}\n")
    sys.stdout.flush()
    os.write(1, b"raw write\n")
    print("stderr too", file=sys.stderr)


def ptys():
    """Pseudo-terminals of its own, made every usual way, their slaves opened
    by name (/dev/pts/N): terminal-driving code (pexpect, a REPL under test)
    does this. The pty numbers differ from run to run: never printed."""
    import ctypes
    import fcntl
    import pty
    import struct
    import termios
    import threading

    libc = ctypes.CDLL("libc.so.6", use_errno=True)  # no find_library: it runs ldconfig
    libc.ptsname.restype = ctypes.c_char_p

    def roundtrip(master, name, tag):
        fd = os.open(name, os.O_RDWR | os.O_NOCTTY)  # by name: checked as a write
        os.write(fd, tag + b"\n")
        # The master may get the line in pieces (the tty pushes it through
        # a workqueue): read up to its end.
        out = b""
        while not out.endswith(b"\n"):
            out += os.read(master, 100)
        os.write(master, b"back " + tag + b"\n")
        back = os.read(fd, 100)
        os.close(fd)
        return out, back

    m, s = os.openpty()  # glibc openpty: posix_openpt, grantpt, unlockpt, TIOCGPTPEER
    print("os.openpty", roundtrip(m, os.ttyname(s), b"one"))
    m1, s1 = pty.openpty()
    print("pty.openpty", roundtrip(m1, os.ttyname(s1), b"two"))
    # By hand: /dev/ptmx, grantpt, unlockpt, ptsname.
    m2 = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
    libc.grantpt(m2)
    libc.unlockpt(m2)
    print("ptsname", roundtrip(m2, libc.ptsname(m2).decode(), b"three"))
    # posix_openpt(3), and the index by TIOCGPTN itself.
    m3 = libc.posix_openpt(os.O_RDWR | os.O_NOCTTY)
    fcntl.ioctl(m3, 0x40045431, struct.pack("i", 0))  # TIOCSPTLCK: unlockpt
    n = struct.unpack("I", fcntl.ioctl(m3, 0x80045430, b"\0\0\0\0"))[0]  # TIOCGPTN
    print("posix_openpt", roundtrip(m3, "/dev/pts/%d" % n, b"four"))
    # Its own terminal's settings, through the slave opened by name.
    fd = os.open(os.ttyname(s), os.O_RDWR | os.O_NOCTTY)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
    attrs = termios.tcgetattr(fd)
    attrs[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSANOW, attrs)
    print("size", os.get_terminal_size(fd), "echo", bool(termios.tcgetattr(s)[3] & termios.ECHO))
    os.close(fd)
    # With another thread alive (the tree is frozen for these calls).
    stop = threading.Event()
    th = threading.Thread(target=stop.wait)
    th.start()
    m4, s4 = os.openpty()
    print("threaded", roundtrip(m4, os.ttyname(s4), b"five"))
    stop.set()
    th.join()
    # pty.fork: a child on the slave as its controlling terminal.
    pid, mf = pty.fork()
    if pid == 0:
        fd = os.open(os.ttyname(1), os.O_WRONLY | os.O_NOCTTY)
        os.write(fd, b"child by name\n")
        os._exit(0)
    out = b""
    while True:
        try:
            chunk = os.read(mf, 100)
        except OSError:  # EIO: the child is gone
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    print("pty.fork", out)
    for fd in (m, s, m1, s1, m2, m3, m4, s4, mf):
        os.close(fd)


CASES = {"files": files, "mkdirs": mkdirs, "tempfile": tmpfiles, "sqlite": sqlite,
         "zipfile": zips, "devnull": devnull, "stdout": stdout, "pty": ptys}

if __name__ == "__main__":
    CASES[sys.argv[1]]()
