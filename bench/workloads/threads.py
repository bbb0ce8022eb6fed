"""Workload: 8 threads each create, write, read back and delete files.

The threads run concurrently (the GIL is released around every file system
call), so a tracer sees checked calls from several tids at once.
Usage: threads.py WORKDIR [SCALE]   (8 x 300 files at SCALE 1)
"""
import hashlib
import os
import shutil
import sys
import threading

THREADS = 8


def worker(d, n, results, k):
    os.mkdir(d)
    h = hashlib.sha256()
    names = [os.path.join(d, f"t{k}-{i:04d}.dat") for i in range(n)]
    for i, p in enumerate(names):
        with open(p, "wb") as f:
            f.write(f"{k}:{i:06d}".encode() * 64)
    for p in names:
        with open(p, "rb") as f:
            h.update(f.read())
        os.unlink(p)
    os.rmdir(d)
    results[k] = h.hexdigest()


def main():
    workdir = sys.argv[1]
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    n = max(1, int(300 * scale))
    base = os.path.join(workdir, "threads")
    if os.path.exists(base):  # left by an interrupted run
        shutil.rmtree(base)
    os.mkdir(base)
    results = [None] * THREADS
    ts = [threading.Thread(target=worker,
                           args=(os.path.join(base, f"t{k}"), n, results, k))
          for k in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    os.rmdir(base)
    h = hashlib.sha256("".join(results).encode()).hexdigest()
    print("threads", THREADS, "files", THREADS * n, h[:16])


main()
