"""Queue a SIGSYS to this process whose siginfo says SYS_SECCOMP for a call
of another ABI (i386 execve on x86_64, AArch32 on arm64): the kernel's own
report of a seccomp trap, which this process never triggered. Then send a
plain SIGSYS with kill, which must still arrive. Then make a child whose
exit signal is SIGSYS (clone's low byte): its exit sends a SIGSYS with
si_code CLD_EXITED, which is 1 like SYS_SECCOMP, and its status where a
seccomp SIGSYS has the call's number. Prints
  result: queue=<errno name or ok> kill=<delivered|lost> child=<delivered|lost> alive
"""
import ctypes
import errno
import os
import platform
import signal
import struct

got = []
signal.signal(signal.SIGSYS, lambda s, f: got.append(s))
libc = ctypes.CDLL(None, use_errno=True)
machine = platform.machine()
nr = {"x86_64": 129, "aarch64": 138}[machine]          # rt_sigqueueinfo
arch = {"x86_64": 0x40000003, "aarch64": 0x40000028}[machine]  # AUDIT_ARCH_I386 / _ARM
# siginfo_t: si_signo, si_errno, si_code, pad; then SIGSYS's call_addr,
# syscall, arch; 128 bytes in all.
info = struct.pack("iiiiQiI", signal.SIGSYS, 0, 1, 0, 0x1000, 11, arch).ljust(128, b"\0")
buf = ctypes.create_string_buffer(info, 128)
r = libc.syscall(nr, os.getpid(), int(signal.SIGSYS), buf)
queue = "ok" if r == 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
got.clear()
os.kill(os.getpid(), signal.SIGSYS)
kill = "delivered" if got else "lost"
got.clear()
clone_nr, exit_group_nr = {"x86_64": (56, 231), "aarch64": (220, 94)}[machine]
pid = libc.syscall(clone_nr, int(signal.SIGSYS), 0, 0, 0, 0)  # fork-like, exit signal SIGSYS
if pid == 0:
    libc.syscall(exit_group_nr, 59)
os.waitpid(pid, 0x40000000)  # __WALL: the child does not report with SIGCHLD
child = "delivered" if got else "lost"
print("result: queue=%s kill=%s child=%s alive" % (queue, kill, child), flush=True)
