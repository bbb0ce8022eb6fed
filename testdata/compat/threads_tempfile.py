#!/usr/bin/python3
"""Threads writing files concurrently, a thread pool, temp files, shutil, tar."""
import concurrent.futures
import gzip
import hashlib
import os
import shutil
import tarfile
import tempfile
import threading

lock = threading.Lock()
total = []


def job(i):
    name = f"t/{i:03d}.dat"
    data = hashlib.sha256(str(i).encode()).hexdigest() * 50
    with open(name, "w") as f:
        f.write(data)
    with lock:
        total.append(len(data))
    return i * i


os.makedirs("t", exist_ok=True)
with concurrent.futures.ThreadPoolExecutor(8) as ex:
    print("squares", sum(ex.map(job, range(64))))
print("bytes", sum(total))
with tempfile.TemporaryDirectory() as d:
    shutil.copytree("t", os.path.join(d, "copy"))
    print("copied", len(os.listdir(os.path.join(d, "copy"))))


def fixed(info):
    # Fixed owner and time so the archive is byte-identical from run to run.
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info


with gzip.GzipFile("t-archive.tar.gz", "wb", mtime=0) as gz:
    with tarfile.open(fileobj=gz, mode="w") as tar:
        for name in sorted(os.listdir("t")):
            tar.add(os.path.join("t", name), filter=fixed)
shutil.rmtree("t")
print("archive exists", os.path.exists("t-archive.tar.gz"))
