"""Make the directory DIR (a new name in a scratch directory such as
/dev/shm), then N empty files with 250-byte names in a directory 13 levels
of 250-byte names below it, so that each file's resolved name is about
3.5 KB, then remove what was made.
Usage: shm_flood.py DIR N. Prints
  result: made=<files created> full=<creates refused with ENOSPC> other=<other errors>
"""
import errno
import os
import shutil
import sys

top, n = sys.argv[1], int(sys.argv[2])
os.mkdir(top)
d = top
for i in range(13):
    d = os.path.join(d, "%02d" % i + "d" * 248)
    os.mkdir(d)
made = full = other = 0
for i in range(n):
    try:
        os.close(os.open(os.path.join(d, "%08d" % i + "f" * 242), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        made += 1
    except OSError as e:
        if e.errno == errno.ENOSPC:
            full += 1
        else:
            other += 1
shutil.rmtree(top)
print("result: made=%d full=%d other=%d" % (made, full, other), flush=True)
