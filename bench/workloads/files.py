"""Workload: create, write, read back and delete many small files in WORKDIR.

Every create (open with O_CREAT) and every unlink is a checked call under
tracecell, so this workload prices the per-call cost.  The read-back opens
are read-only and pass the filter untrapped.
Usage: files.py WORKDIR [SCALE]   (3000 files at SCALE 1)
"""
import hashlib
import os
import shutil
import sys


def main():
    workdir = sys.argv[1]
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    n = max(1, int(3000 * scale))
    d = os.path.join(workdir, "files")
    if os.path.exists(d):  # left by an interrupted run
        shutil.rmtree(d)
    os.mkdir(d)
    names = [os.path.join(d, f"f{i:05d}.dat") for i in range(n)]
    for i, p in enumerate(names):
        with open(p, "wb") as f:
            f.write(f"{i:08d}".encode() * 128)  # 1 KiB
    h = hashlib.sha256()
    total = 0
    for p in names:
        with open(p, "rb") as f:
            b = f.read()
        total += len(b)
        h.update(b)
    for p in names:
        os.unlink(p)
    os.rmdir(d)
    print("files", n, "bytes", total, h.hexdigest()[:16])


main()
