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


CASES = {"files": files, "mkdirs": mkdirs, "tempfile": tmpfiles, "sqlite": sqlite,
         "zipfile": zips, "devnull": devnull, "stdout": stdout}

if __name__ == "__main__":
    CASES[sys.argv[1]]()
