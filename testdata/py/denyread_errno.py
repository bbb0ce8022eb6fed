# Red team 2, F9: creates and changes under a --deny-read tree whose path
# has a missing or non-directory component. Each must be the EACCES denial
# (reported), never the kernel's ENOENT or ENOTDIR, which would tell the
# tree what exists there.
#
#   denyread_errno.py DENIED   (DENIED/sub/exists is a file)
#
# Prints one line per attempt: "<what> <errno name>" (or "<what> OK").
import errno, os, sys

b = sys.argv[1]
cases = [
    ("mkdir under absent dir", lambda: os.mkdir(b + "/sub/absent/x")),
    ("mkdir under file", lambda: os.mkdir(b + "/sub/exists/x")),
    ("unlink under file", lambda: os.unlink(b + "/sub/exists/x")),
    ("unlink under absent dir", lambda: os.unlink(b + "/absent/x")),
    ("create under file", lambda: os.open(b + "/sub/exists/x", os.O_WRONLY | os.O_CREAT, 0o644)),
    ("open-w under file", lambda: os.open(b + "/sub/exists/x", os.O_WRONLY)),
    ("chmod under absent dir", lambda: os.chmod(b + "/absent/x", 0o644)),
    ("mkdir via dotdot", lambda: os.mkdir(b + "/sub/absent/../new")),
]
for what, fn in cases:
    try:
        fn()
        print(what, "OK", flush=True)
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, str(e.errno)), flush=True)
