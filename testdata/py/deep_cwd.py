"""Go LEVELS directories of 250-byte names deep (beyond PATH_MAX), then try
chmod 04755 of a file there N times: each try is refused (set-id bits), and
each names the file by a path of LEVELS * 251 bytes.
Usage: deep_cwd.py LEVELS N. Prints
  result: depth=<bytes> refused=<count>
"""
import os
import sys

levels, n = int(sys.argv[1]), int(sys.argv[2])
name = "d" * 250
for _ in range(levels):
    os.mkdir(name)
    os.chdir(name)
open("f", "w").close()
refused = 0
for _ in range(n):
    try:
        os.chmod("f", 0o4755)
    except PermissionError:
        refused += 1
print("result: depth=%d refused=%d" % (levels * 251, refused), flush=True)
