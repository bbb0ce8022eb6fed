# Red team 2, F2: futex_waitv whose array lies in MAP_SHARED|MAP_ANONYMOUS
# memory shared with a forked child. The caller has one thread and no task
# shares its mm; the child flips waiters[0].uaddr between a word of its own
# and a read-only MAP_SHARED mapping of a host file, hoping to switch it
# between tracecell's read of the array and the kernel's.
#
#   futex_waitv_race.py HOSTFILE TRIES
#
# Prints "ENOSYS" when the kernel has no futex_waitv (before 5.16), else the
# outcomes. The ground truth is the host's: a FUTEX_WAKE on its word that
# wakes anyone means a waiter of the tree was queued on the host's futex.
import ctypes, errno, mmap, os, sys, time

path, tries = sys.argv[1], int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_FUTEX_WAITV = 449  # x86_64 and the generic table (arm64) alike
hfd = os.open(path, os.O_RDONLY)
host = mmap.mmap(hfd, 4096, mmap.MAP_SHARED, mmap.PROT_READ)
haddr = None
for line in open("/proc/self/maps"):
    if line.rstrip().endswith(path):
        haddr = int(line.split("-")[0], 16)
anon = mmap.mmap(-1, 4096, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
A = ctypes.addressof(ctypes.c_char.from_buffer(anon))
shared = mmap.mmap(-1, 4096, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
S = ctypes.addressof(ctypes.c_char.from_buffer(shared))


class Waitv(ctypes.Structure):
    _fields_ = [("val", ctypes.c_uint64), ("uaddr", ctypes.c_uint64), ("flags", ctypes.c_uint32), ("res", ctypes.c_uint32)]


class Timespec(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]


w = Waitv.from_address(S)
w.val, w.uaddr, w.flags = 0, A, 2  # FUTEX2_SIZE_U32, shared (no FUTEX2_PRIVATE)


def waitv(ms):
    now = time.clock_gettime(time.CLOCK_MONOTONIC) + ms / 1000
    ts = Timespec(int(now), int((now % 1) * 1e9))
    r = libc.syscall(ctypes.c_long(NR_FUTEX_WAITV), ctypes.c_void_p(S), ctypes.c_uint(1), ctypes.c_uint(0),
                     ctypes.byref(ts), ctypes.c_int(1))  # CLOCK_MONOTONIC
    return r, (ctypes.get_errno() if r < 0 else 0)


r, e = waitv(1)
if e == errno.ENOSYS:
    print("ENOSYS")
    sys.exit(0)
stop = ctypes.c_uint32.from_address(S + 64)
pid = os.fork()
if pid == 0:
    u = ctypes.c_uint64.from_address(S + 8)
    while stop.value == 0:
        u.value = A
        u.value = haddr
    os._exit(0)
res = {}
for i in range(tries):
    r, e = waitv(5)
    k = "woken" if r >= 0 else errno.errorcode.get(e, str(e))
    res[k] = res.get(k, 0) + 1
stop.value = 1
os.waitpid(pid, 0)
print("outcomes", res)
