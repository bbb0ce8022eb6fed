"""Workload: walk /usr/lib/python3 and lstat every entry.

Only stat-family calls and read-only directory opens: nothing a tracecell
filter traps.  The printed summary leaves out __pycache__ entries so that a
byte-compile by some unrelated process cannot make two runs disagree.
Usage: walk.py WORKDIR [SCALE]
"""
import hashlib
import os
import sys

ROOT = "/usr/lib/python3"


def main():
    dirs = files = 0
    h = hashlib.sha256()
    for top, dnames, fnames in os.walk(ROOT):
        dnames.sort()
        stable = "__pycache__" not in top.split(os.sep)
        for name in sorted(fnames) + dnames:
            st = os.lstat(os.path.join(top, name))
            if stable and name != "__pycache__":
                h.update(f"{top}/{name}:{st.st_mode:o}:{st.st_size}\n".encode())
        if stable:
            dirs += 1
            files += len(fnames)
    print("walk", ROOT, "dirs", dirs, "files", files, h.hexdigest()[:16],
          "argv", len(sys.argv))


main()
