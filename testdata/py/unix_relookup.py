"""A checked AF_UNIX connect/sendto that the kernel resolves twice.

    unix_relookup.py stream|dgram|stream-drain|dgram-drain SBX HOST

A listening (stream) or receiving (dgram) socket SBX/s.sock whose queue is
full makes a second thread's connect("s.sock") / sendto("s.sock") sleep
interruptibly in the kernel (unix_wait_for_peer) after the name was looked
up; when it wakes it looks the name up again (net/unix/af_unix.c: "goto
restart"). Meanwhile the main thread moves the shared cwd to HOST (chdir is
not a checked call) and closes the sandbox socket, which wakes the sleeper:
its call now reaches HOST/s.sock. The test listens there; whatever arrives
is the ground truth. Prints "result: <peer or error>".

The -drain modes are the honest program: the main thread empties the queue
(accept, recv) instead, and the blocked call must then go through.
"""
import os
import socket
import sys
import threading
import time

mode, sbx, host = sys.argv[1], sys.argv[2], sys.argv[3]
drain = mode.endswith("-drain")
mode = mode.removesuffix("-drain")
os.chdir(sbx)
out = {}

if mode == "stream":
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind("s.sock")
    srv.listen(0)
    filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    filler.connect("s.sock")  # the queue holds one: full

    def attempt():
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            c.connect("s.sock")
            out["peer"] = c.getpeername()
            c.sendall(b"ESCAPED\n")
        except OSError as e:
            out["err"] = repr(e)
else:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    srv.bind("s.sock")
    filler = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    filler.setblocking(False)
    n = 0
    try:
        while n < 100000:
            filler.sendto(b"x", "s.sock")
            n += 1
    except BlockingIOError:
        pass  # the receive queue is full
    out["queued"] = n

    def attempt():
        c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            c.sendto(b"ESCAPED\n", "s.sock")
            out["sent"] = True
        except OSError as e:
            out["err"] = repr(e)

th = threading.Thread(target=attempt)
th.start()
time.sleep(0.3)  # the attempt sleeps in the kernel, full queue
if drain:
    if mode == "stream":
        a1, _ = srv.accept()
        a2, _ = srv.accept()
        out["got"] = a2.recv(64).decode()
    else:
        while srv.recv(64) == b"x":
            pass
        out["got"] = "ESCAPED\n"
else:
    os.chdir(host)
    srv.close()  # wakes it: it resolves "s.sock" again
th.join(10)
print("result:", out, flush=True)
