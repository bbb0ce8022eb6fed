#!/usr/bin/python3
"""escape.py: one way out of a write sandbox per subcommand, in Python.

    python3 escape.py CASE ARGS...

Each case attempts one escape against the targets named in ARGS, prints one
line "result: ok" or "result: errno=NAME" (plus "info: ..." lines) and exits
0 either way. Run bare, every case really escapes; under tracecell the
integration suite checks that the outside world is untouched and that the
report names the exact target.
"""

import ctypes
import ctypes.util
import errno
import multiprocessing
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

PAYLOAD = b"ESCAPED\n"


def result(fn):
    """Run fn and print how it ended: ok, or the errno of the OSError."""
    try:
        fn()
    except OSError as e:
        name = errno.errorcode.get(e.errno, str(e.errno))
        print(f"result: errno={name}", flush=True)
        return
    print("result: ok", flush=True)


def write_file(path, mode="w"):
    with open(path, mode) as f:
        f.write("ESCAPED\n")


def errno_of(fn):
    """Run fn in this thread or process and return the errno name or 'ok'."""
    try:
        fn()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    return "ok"


def report_name(name):
    """Turn an errno name (or 'ok') from a child into a result line."""
    if name == "ok":
        print("result: ok", flush=True)
    else:
        print(f"result: errno={name}", flush=True)


def libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def ctypes_call(fn):
    """Raise OSError from a ctypes call that returned -1."""
    def run():
        r = fn()
        if r < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        return r
    return run


O_WRONLY_CREAT_TRUNC = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
SYS_OPENAT = {"x86_64": 257, "aarch64": 56}[os.uname().machine]
AT_FDCWD = -100


def _mp_child(path, q):
    q.put(errno_of(lambda: write_file(path)))


def main():
    case, args = sys.argv[1], sys.argv[2:]

    # --- plain file system calls on an outside path ---
    if case == "open-w":
        result(lambda: write_file(args[0], "w"))
    elif case == "open-a":
        result(lambda: write_file(args[0], "a"))
    elif case == "open-x":
        result(lambda: write_file(args[0], "x"))
    elif case == "remove":
        result(lambda: os.remove(args[0]))
    elif case == "rename":  # rename SRC DST: either side may be outside
        result(lambda: os.rename(args[0], args[1]))
    elif case == "replace":
        result(lambda: os.replace(args[0], args[1]))
    elif case == "link":  # hard link an outside file into the sandbox
        result(lambda: os.link(args[0], args[1]))
    elif case == "symlink-write":  # LINK (in the sandbox) -> TARGET (outside), write through it
        os.symlink(args[1], args[0])
        result(lambda: write_file(args[0], "w"))
    elif case == "dangling-creat":  # O_CREAT through a dangling symlink creates the target
        os.symlink(args[1], args[0])
        result(lambda: write_file(args[0], "w"))
    elif case == "relative":  # a ../ path relative to the current directory
        result(lambda: write_file(args[0], "w"))
    elif case == "chdir-write":  # cwd is read at check time, not cached
        os.chdir(args[0])
        result(lambda: write_file(args[1], "w"))
    elif case == "proc-root":  # /proc/self/root/<absolute path>
        result(lambda: write_file("/proc/self/root" + args[0], "w"))
    elif case == "thread-self-cwd":  # /proc/thread-self/cwd/NAME after chdir outside
        os.chdir(args[0])
        result(lambda: write_file("/proc/thread-self/cwd/" + args[1], "w"))
    elif case == "chmod":
        result(lambda: os.chmod(args[0], 0o777))
    elif case == "chown":
        result(lambda: os.chown(args[0], 65534, 65534))
    elif case == "utime":
        result(lambda: os.utime(args[0], (1000000, 1000000)))
    elif case == "truncate":
        result(lambda: os.truncate(args[0], 0))
    elif case == "setxattr":
        result(lambda: os.setxattr(args[0], "user.escape", b"1"))
    elif case == "mkdir":
        result(lambda: os.mkdir(args[0]))
    elif case == "rmdir":
        result(lambda: os.rmdir(args[0]))
    elif case == "mkfifo":
        result(lambda: os.mkfifo(args[0]))
    elif case == "symlink":  # create a symlink outside
        result(lambda: os.symlink("/etc/passwd", args[0]))

    # --- below Python's file API ---
    elif case == "ctypes-open":
        def run():
            fd = ctypes_call(lambda: libc().open(args[0].encode(), O_WRONLY_CREAT_TRUNC, 0o644))()
            os.write(fd, PAYLOAD)
            os.close(fd)
        result(run)
    elif case == "ctypes-syscall":
        def run():
            c = libc()
            c.syscall.restype = ctypes.c_long
            fd = ctypes_call(lambda: c.syscall(ctypes.c_long(SYS_OPENAT), ctypes.c_long(AT_FDCWD),
                                               ctypes.c_char_p(args[0].encode()),
                                               ctypes.c_long(O_WRONLY_CREAT_TRUNC), ctypes.c_long(0o644)))()
            os.write(fd, PAYLOAD)
            os.close(fd)
        result(run)

    # --- other processes and threads of the tree ---
    elif case == "fork-write":
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, errno_of(lambda: write_file(args[0])).encode())
            os._exit(0)
        os.close(w)
        name = os.read(r, 64).decode()
        os.waitpid(pid, 0)
        report_name(name)
    elif case == "thread-write":
        out = []
        t = threading.Thread(target=lambda: out.append(errno_of(lambda: write_file(args[0]))))
        t.start()
        t.join()
        report_name(out[0])
    elif case == "multiprocessing-write":
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_mp_child, args=(args[0], q))
        p.start()
        name = q.get(timeout=30)
        p.join()
        report_name(name)
    elif case == "subprocess-touch":  # exec of another program
        result(lambda: subprocess.run(["touch", args[0]], check=False))
    elif case == "os-system":
        # system(3) reports a failed exec of the shell only as exit status
        # 127; the report and the untouched target tell the rest.
        status = os.system("touch " + args[0])
        print(f"result: status={os.waitstatus_to_exitcode(status)}", flush=True)
    elif case == "os-execv":
        result(lambda: os.execv("/usr/bin/touch", ["touch", args[0]]))

    # --- other processes outside the tree ---
    elif case == "kill":
        result(lambda: os.kill(int(args[0]), signal.SIGTERM))
    elif case == "rw-hint":
        # fcntl(F_SET_RW_HINT) on a read-only fd: sets the write-life hint
        # the kernel keeps on the host file's inode (red team, session 23).
        def run():
            lc = libc()
            fd = os.open(args[0], os.O_RDONLY)
            try:
                hint = ctypes.c_uint64(5)  # RWH_WRITE_LIFE_EXTREME
                ctypes_call(lambda: lc.fcntl(fd, 1036, ctypes.byref(hint)))()
            finally:
                os.close(fd)
        result(run)
    elif case == "setpriority":
        result(lambda: os.setpriority(os.PRIO_PROCESS, int(args[0]), 19))
    elif case == "sched-core-share-to":
        # prctl(PR_SCHED_CORE, PR_SCHED_CORE_SHARE_TO, pid, PIDTYPE_PID, 0):
        # gives that process this one's core-scheduling cookie (5.14+).
        def run():
            lc = libc()
            lc.prctl(62, 1, 0, 0, 0)  # PR_SCHED_CORE_CREATE for itself (EINVAL without core scheduling)
            ctypes_call(lambda: lc.prctl(62, 2, int(args[0]), 0, 0))()
        result(run)
    elif case == "prlimit":
        result(lambda: resource.prlimit(int(args[0]), resource.RLIMIT_NOFILE, (17, 17)))
    elif case == "oom-score-adj":  # make the kernel kill that process first
        def run():
            with open(f"/proc/{args[0]}/oom_score_adj", "w") as f:
                f.write("1000\n")
        result(run)

    # --- network ---
    elif case == "tcp-connect":
        def run():
            with socket.create_connection((args[0], int(args[1])), timeout=5) as s:
                s.sendall(PAYLOAD)
        result(run)
    elif case == "udp-sendto":
        def run():
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.sendto(PAYLOAD, (args[0], int(args[1])))
        result(run)
    elif case in ("udp-sendto-unspec", "udp-sendmsg-unspec"):
        # sin_family = AF_UNSPEC: UDP takes the address as AF_INET.
        def run():
            libc = ctypes.CDLL(None, use_errno=True)
            sa = struct.pack("=HH4s8x", 0, socket.htons(int(args[1])), socket.inet_aton(args[0]))
            sab = ctypes.create_string_buffer(sa, len(sa))
            buf = ctypes.create_string_buffer(PAYLOAD, len(PAYLOAD))
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                if case == "udp-sendto-unspec":
                    r = libc.sendto(s.fileno(), buf, len(PAYLOAD), 0, sab, len(sa))
                else:
                    class iovec(ctypes.Structure):
                        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

                    class msghdr(ctypes.Structure):
                        _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                                    ("iov", ctypes.POINTER(iovec)), ("iovlen", ctypes.c_size_t),
                                    ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                                    ("flags", ctypes.c_int)]
                    iov = iovec(ctypes.cast(buf, ctypes.c_void_p), len(PAYLOAD))
                    m = msghdr(ctypes.cast(sab, ctypes.c_void_p), len(sa), ctypes.pointer(iov), 1, None, 0, 0)
                    r = libc.sendmsg(s.fileno(), ctypes.byref(m), 0)
                if r < 0:
                    e = ctypes.get_errno()
                    raise OSError(e, os.strerror(e))
        result(run)
    elif case in ("ip-options", "ip-retopts", "ip-retopts-padded"):
        # Loose source routing through args[0]: a datagram for 127.0.0.1
        # leaves for that first hop instead (setsockopt IP_OPTIONS, or
        # the IP_RETOPTS control message of one sendmsg).
        opts = bytes([1, 0x83, 7, 4]) + socket.inet_aton(args[0])

        def run():
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                if case == "ip-options":
                    s.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, opts)
                    if s.getsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, 40) != opts:
                        raise OSError(errno.EINVAL, "options not set")
                elif case == "ip-retopts-padded":
                    # The route behind 70000 bytes of a control message of
                    # a level the kernel skips: more than tracecell once
                    # read (64 KiB), less than optmem_max on 6.x (128 KiB).
                    # Bound to loopback first, as --net loopback asks.
                    pad = (0x7FFF, 1, bytes(70000))
                    s.bind(("127.0.0.1", 0))
                    s.sendmsg([PAYLOAD], [pad, (socket.IPPROTO_IP, 7, opts)], 0, ("127.0.0.1", int(args[1])))
                else:
                    s.sendmsg([PAYLOAD], [(socket.IPPROTO_IP, 7, opts)], 0, ("127.0.0.1", int(args[1])))
        result(run)
    elif case in ("bind-device", "unicast-if", "pktinfo", "sticky-pktinfo6"):
        # A datagram for 127.0.0.1 (or ::1) sent out of interface args[0]
        # (a name; its index is args[1]) to port args[2]: the kernel routes
        # it through that interface onto its network (red team, session
        # 23). A socket bound to a device is connected, which binds it to
        # the device's address (a bind to 127.0.0.1 would fail: EINVAL),
        # and sends without an address; the others are bound to loopback
        # first, as --net loopback asks.
        name, index, port = args[0], int(args[1]), int(args[2])

        def run():
            fam, dst = socket.AF_INET, ("127.0.0.1", port)
            if case == "sticky-pktinfo6":
                fam, dst = socket.AF_INET6, ("::1", port)
            with socket.socket(fam, socket.SOCK_DGRAM) as s:
                if case not in ("bind-device", "unicast-if"):
                    s.bind((dst[0], 0))
                if case == "bind-device":
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, name.encode())
                    got = s.getsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, 16).rstrip(b"\0")
                    if got != name.encode():
                        raise OSError(errno.EINVAL, "device not set: %r" % got)
                elif case == "unicast-if":
                    # IP_UNICAST_IF (50) takes the index in network order.
                    s.setsockopt(socket.IPPROTO_IP, 50, struct.pack("!I", index))
                elif case == "sticky-pktinfo6":
                    # IPV6_PKTINFO (50) set as a sticky option.
                    s.setsockopt(socket.IPPROTO_IPV6, 50, bytes(16) + struct.pack("=i", index))
                if case == "pktinfo":
                    info = struct.pack("=i4s4s", index, bytes(4), bytes(4))
                    s.sendmsg([PAYLOAD], [(socket.IPPROTO_IP, 8, info)], 0, dst)
                elif case in ("bind-device", "unicast-if"):
                    s.connect(dst)
                    s.send(PAYLOAD)
                else:
                    s.sendto(PAYLOAD, dst)
        result(run)
    elif case in ("mcast-join", "mcast-join6"):
        # Join multicast group args[1] on interface index args[0] and hold
        # the membership for args[2] seconds: the kernel sends a membership
        # report (IGMP, MLD) naming the group out of that interface, with
        # no connect or send to check (red team, session 25: the group's
        # free bytes carried a secret out under --net deny).
        index, group, hold = int(args[0]), args[1], float(args[2])

        def run():
            if case == "mcast-join":
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    # struct ip_mreqn: group, local address, ifindex.
                    mreq = socket.inet_aton(group) + bytes(4) + struct.pack("=i", index)
                    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
                    time.sleep(hold)
            else:
                with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
                    mreq = socket.inet_pton(socket.AF_INET6, group) + struct.pack("=I", index)
                    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, mreq)
                    time.sleep(hold)
        result(run)
    elif case == "socket-family":
        # socket(args[0], args[1], args[2]): a family or protocol whose
        # traffic no trapped call covers.
        def run():
            socket.socket(int(args[0]), int(args[1]), int(args[2])).close()
        result(run)
    elif case in ("tcp-bind-listen", "nodump-tcp-bind-listen"):
        # bind to args[0]:args[1] (a failure is only noted, as a careless
        # or hostile program would; "-" binds nothing, and listen then
        # binds every interface), listen, serve one connection; the port
        # goes to args[2]. nodump-: first make the process not dumpable
        # (prctl(PR_SET_DUMPABLE, 0)), which hid its fds from a tracer
        # without CAP_SYS_PTRACE, and the listen with them (red team,
        # session 25).
        def run():
            if case.startswith("nodump-"):
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
                    e = ctypes.get_errno()
                    raise OSError(e, os.strerror(e))
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    if args[0] != "-":
                        s.bind((args[0], int(args[1])))
                except OSError as e:
                    print("info: bind:", errno.errorcode.get(e.errno, e.errno))
                s.listen(1)
                with open(args[2] + ".tmp", "w") as f:
                    f.write(str(s.getsockname()[1]))
                os.rename(args[2] + ".tmp", args[2])
                s.settimeout(5)
                c, _ = s.accept()
                c.sendall(PAYLOAD)
                c.close()
        result(run)
    elif case == "unix-listen":  # a server on a socket in the sandbox, and a client
        def run():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.bind(args[0])
                s.listen(1)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                    c.connect(args[0])
                    a, _ = s.accept()
                    c.sendall(PAYLOAD)
                    if a.recv(64) != PAYLOAD:
                        raise OSError(errno.EIO, "wrong payload")
                    a.close()
        result(run)
    elif case == "unix-connect":  # a host daemon's socket, or "@name" for abstract
        def run():
            addr = args[0]
            if addr.startswith("@"):
                addr = "\0" + addr[1:]
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(addr)
                s.sendall(PAYLOAD)
        result(run)
    elif case == "unix-bind":
        def run():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.bind(args[0])
        result(run)

    # --- terminals ---
    elif case == "uffd-dev":  # a userfaultfd from /dev/userfaultfd (6.1), opened read-only
        def run():
            import fcntl
            import time
            dev = os.open("/dev/userfaultfd", os.O_RDONLY | os.O_CLOEXEC)
            uffd = fcntl.ioctl(dev, 0xaa00, 0)  # USERFAULTFD_IOC_NEW
            time.sleep(1.5)  # held: the test looks for it in /proc (args[0] marks this process)
            os.close(uffd)
            os.close(dev)
        result(run)

    elif case == "lease":  # a read lease on a host file through a read-only fd: its writers wait
        def run():
            import fcntl
            import time
            fd = os.open(args[0], os.O_RDONLY)
            fcntl.fcntl(fd, 1024, fcntl.F_RDLCK)  # F_SETLEASE
            time.sleep(1.5)  # held: a host open for writing waits up to lease-break-time
            os.close(fd)
        result(run)

    elif case == "pty-winsize":  # the same terminal opened read-only, resized (SIGWINCH there)
        def run():
            import fcntl
            import struct
            import termios
            fd = os.open(args[0], os.O_RDONLY | os.O_NOCTTY)
            try:
                fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 66, 77, 0, 0))
            finally:
                os.close(fd)
        result(run)

    elif case == "pty-read":  # its input: what someone types in that session
        def run():
            fd = os.open(args[0], os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
            try:
                got = os.read(fd, 100)
                if got:
                    write_file(args[1]).write(repr(got))
            finally:
                os.close(fd)
        result(run)

    elif case == "pty-write":  # another terminal of the user (an ssh session's /dev/pts/N)
        def run():
            fd = os.open(args[0], os.O_WRONLY | os.O_NOCTTY)
            try:
                os.write(fd, PAYLOAD)
            finally:
                os.close(fd)
        result(run)

    # --- /dev/shm scratch ---
    elif case == "shm-create-delete":  # positive: create and delete our own entry
        def run():
            write_file(args[0])
            os.remove(args[0])
        result(run)
    elif case == "shm-claim":
        # Claim a name in /dev/shm without holding an entry there (args[2]:
        # "unlink" it after creating it, "rename" it away, or "fail" the
        # create with EMFILE), tell the outside (args[1] appears), wait
        # until a host process has created args[0], then overwrite it.
        victim, ready, mode = args
        if mode in ("unlink", "rename"):
            write_file(victim)
            if mode == "unlink":
                os.remove(victim)
            else:
                os.rename(victim, victim + ".moved")
                os.remove(victim + ".moved")
        else:
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            lowest = os.open("/dev/null", os.O_RDONLY)  # the fd the create would get
            os.close(lowest)
            resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, hard))
            try:
                open(victim, "w").close()
                print("info: the create did not fail")
            except OSError as e:
                print("info: create:", errno.errorcode.get(e.errno, e.errno))
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        open(ready, "w").close()
        for _ in range(500):
            if os.path.exists(victim):
                break
            threading.Event().wait(0.01)

        def run():
            with open(victim, "w") as f:
                f.write("TAMPERED\n")
        result(run)
    else:
        print(f"escape.py: unknown case {case}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
