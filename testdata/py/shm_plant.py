# Red team 2, F6: plant entries in a /dev/shm directory the tree did not
# create (a host program's, another session's).
#
#   shm_plant.py HOSTDIR MINE
#
# MINE is a new /dev/shm name the tree makes its own directory at (and
# MINE-src a file).
# Prints one line per attempt: "<what> OK" or "<what> <errno name>". Last,
# the same in a directory of the tree's own, where creating stays allowed.
import errno, os, sys

host, mine = sys.argv[1], sys.argv[2]


def attempt(what, fn):
    try:
        fn()
        print(what, "OK", flush=True)
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, str(e.errno)), flush=True)


src = mine + "-src"
open(src, "w").close()
for tag, d in (("host", host), ("own", mine)):
    if tag == "own":
        os.mkdir(mine)
    attempt(tag + " file", lambda: os.close(os.open(os.path.join(d, "f"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)))
    attempt(tag + " symlink", lambda: os.symlink("/etc/shadow", os.path.join(d, "l")))
    attempt(tag + " fifo", lambda: os.mkfifo(os.path.join(d, "p")))
    attempt(tag + " mkdir", lambda: os.mkdir(os.path.join(d, "d")))
    attempt(tag + " link", lambda: os.link(src, os.path.join(d, "h")))
    attempt(tag + " rename-in", lambda: os.rename(src, os.path.join(d, "r")))
    if tag == "own":
        os.rename(os.path.join(d, "r"), src)
os.unlink(src)
for n in ("f", "l", "p", "h"):
    os.unlink(os.path.join(mine, n))
os.rmdir(os.path.join(mine, "d"))
os.rmdir(mine)
