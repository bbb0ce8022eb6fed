"""An agent-like script for tracecell's audit reports (testdata/reports).

It does what an LLM agent's code typically does, each step printing a line
that does not depend on pids, ports or timing, so that two runs can be
compared: writes a result in its sandbox, writes notes to a directory
outside it, runs a program, forks a worker, opens a UDP "connection" to a
documentation address (RFC 5737: nothing is sent by a UDP connect) and talks
to itself over loopback TCP. With --signal-init it also probes pid 1 with
signal 0, which no policy allows.

usage: agent.py SANDBOX OUTSIDE [--signal-init]
"""
import os
import socket
import subprocess
import sys

sandbox, outside = sys.argv[1], sys.argv[2]

with open(os.path.join(sandbox, "result.txt"), "w") as f:
    f.write("42\n")
print("result written")

try:
    os.makedirs(outside, exist_ok=True)
    with open(os.path.join(outside, "notes.txt"), "w") as f:
        f.write("notes\n")
    print("notes written outside")
except OSError as e:
    print("notes outside failed:", e.strerror)

try:
    out = subprocess.run(["ls", sandbox], capture_output=True, text=True, check=True).stdout.split()
    print("ls:", " ".join(sorted(out)))
except (OSError, subprocess.CalledProcessError) as e:
    print("ls failed:", type(e).__name__)

pid = os.fork()
if pid == 0:
    try:
        with open(os.path.join(sandbox, "child.txt"), "w") as f:
            f.write("child\n")
    finally:
        os._exit(7)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status))

try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.connect(("192.0.2.1", 53))
    u.close()
    print("udp connect ok")
except OSError as e:
    print("udp connect failed:", e.strerror)

try:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname(), timeout=5)
    conn, _ = srv.accept()
    c.sendall(b"ping")
    print("loopback:", conn.recv(4).decode())
    for s in (c, conn, srv):
        s.close()
except OSError as e:
    print("loopback failed:", e.strerror)

if "--signal-init" in sys.argv[3:]:
    try:
        os.kill(1, 0)
        print("pid 1 probed")
    except OSError as e:
        print("pid 1 probe failed:", e.strerror)
