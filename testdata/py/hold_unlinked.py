# Host side of deleted_spoof.py, run outside the traced tree:
#
#   hold_unlinked.py PATH
#
# creates PATH (mode 0644, "HOST-DATA"), unlinks it and keeps it open; prints
# "<pid> <fd>", waits for a line on stdin, then prints the file's state as
# JSON (content, mode, mtime, xattr names): the ground truth of the test.
import json, os, sys

fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
os.fchmod(fd, 0o644)
os.write(fd, b"HOST-DATA")
os.unlink(sys.argv[1])
print(os.getpid(), fd, flush=True)
sys.stdin.readline()
st = os.fstat(fd)
try:
    xattrs = os.listxattr(fd)
except OSError:
    xattrs = []
print(json.dumps({"content": os.pread(fd, 64, 0).decode(), "mode": "%o" % (st.st_mode & 0o7777),
                  "mtime": int(st.st_mtime), "xattrs": xattrs}), flush=True)
