"""Change or show the loopback interface of the current network namespace.

  netadmin.py change PID
                       try to bring lo up (SIOCSIFFLAGS), to add
                       10.9.9.9/32 to it (netlink RTM_NEWADDR) and to read
                       the environment of process PID; print one result
                       line per action, then this process's capability
                       sets as the kernel shows them
  netadmin.py show     print lo's state and its IPv4 addresses

Both actions need CAP_NET_ADMIN; integration/caps_test.go runs this in a
fresh network namespace, so that nothing of the host changes.
"""
import errno
import fcntl
import os
import socket
import struct
import sys

SIOCGIFFLAGS, SIOCSIFFLAGS = 0x8913, 0x8914
IFF_UP = 1


def result(name, fn):
    try:
        fn()
        print(name, "ok")
    except OSError as e:
        print(name, "errno=" + errno.errorcode.get(e.errno, str(e.errno)))


def lo_up():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    flags = struct.unpack("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sh", b"lo", 0)))[1]
    fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))


def rta(kind, data):
    n = 4 + len(data)
    return struct.pack("HH", n, kind) + data + b"\0" * (-n % 4)


def add_addr():
    RTM_NEWADDR, NLMSG_ERROR = 20, 2
    flags = 0x1 | 0x4 | 0x400 | 0x200  # REQUEST, ACK, CREATE, EXCL
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    addr = socket.inet_aton("10.9.9.9")
    body = struct.pack("BBBBI", socket.AF_INET, 32, 0, 0, socket.if_nametoindex("lo"))
    body += rta(2, addr) + rta(1, addr)  # IFA_LOCAL, IFA_ADDRESS
    s.sendto(struct.pack("IHHII", 16 + len(body), RTM_NEWADDR, flags, 1, 0) + body, (0, 0))
    resp = s.recv(4096)
    if struct.unpack("H", resp[4:6])[0] == NLMSG_ERROR:
        err = struct.unpack("i", resp[16:20])[0]
        if err:
            raise OSError(-err, os.strerror(-err))


def show():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    flags = struct.unpack("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sh", b"lo", 0)))[1]
    print("lo", "up" if flags & IFF_UP else "down")
    print("addr", " ".join(sorted(lo_addrs())) or "none")


def lo_addrs():
    """lo's IPv4 addresses, from a netlink RTM_GETADDR dump."""
    RTM_GETADDR, NLMSG_DONE, IFA_ADDRESS = 22, 3, 1
    idx = socket.if_nametoindex("lo")
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    body = struct.pack("BBBBI", socket.AF_INET, 0, 0, 0, 0)
    s.sendto(struct.pack("IHHII", 16 + len(body), RTM_GETADDR, 0x1 | 0x300, 1, 0) + body, (0, 0))
    out = []
    while True:
        buf = s.recv(65536)
        off = 0
        while off < len(buf):
            n, kind = struct.unpack("IH", buf[off:off + 6])
            if kind == NLMSG_DONE:
                return out
            if struct.unpack("I", buf[off + 20:off + 24])[0] == idx:
                a = off + 24
                while a < off + n:
                    alen, akind = struct.unpack("HH", buf[a:a + 4])
                    if akind == IFA_ADDRESS:
                        out.append(socket.inet_ntoa(buf[a + 4:a + 8]))
                    a += (alen + 3) & ~3
            off += (n + 3) & ~3


def main():
    if sys.argv[1] == "change":
        result("lo_up", lo_up)
        result("add_addr", add_addr)
        result("environ", lambda: open("/proc/%s/environ" % sys.argv[2], "rb").read())
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Cap"):
                    print(line.replace(":", "").split()[0], line.split()[1])
    else:
        show()


main()
