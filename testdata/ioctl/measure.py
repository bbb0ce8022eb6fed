# What a Python data program issues in ioctls (syscalls.IoctlAllowed):
#   strace -f -qq -X raw -e trace=ioctl -e signal=none -o OUT python3 measure.py DIR
# and, under tracecell, the integration test TestIoctlMeasuredPrograms, which
# wants no ioctl in its report. DIR must be writable.
import os, sys, subprocess, pty, termios, fcntl, struct, socket, array, tty, select, sqlite3
import numpy as np, pandas as pd
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
d = sys.argv[1]
a = np.arange(10); df = pd.DataFrame({"a": a, "b": a * 2}); df.to_csv(os.path.join(d, "x.csv"))
pd.read_csv(os.path.join(d, "x.csv"))
fig, ax = plt.subplots(); ax.plot(a, a * a); fig.savefig(os.path.join(d, "p.png")); fig.savefig(os.path.join(d, "p.svg")); fig.savefig(os.path.join(d, "p.pdf"))
for f in ("db.sqlite",):
    try: os.unlink(os.path.join(d, f))
    except FileNotFoundError: pass
c = sqlite3.connect(os.path.join(d, "db.sqlite")); c.execute("create table t(x)"); c.execute("insert into t values (1)"); c.commit(); c.close()
print(subprocess.run(["echo", "hi"], capture_output=True).stdout)
try: print(os.get_terminal_size())
except OSError as e: print(e)
try: print(__import__("shutil").get_terminal_size())
except OSError as e: print(e)
pid, fd = pty.fork()
if pid == 0:
    os.execvp("bash", ["bash", "-c", "stty -a >/dev/null; tput cols; echo in-pty"])
out = b""
while True:
    try: b = os.read(fd, 1024)
    except OSError: break
    if not b: break
    out += b
os.waitpid(pid, 0); print(out)
m, s = os.openpty()
attrs = termios.tcgetattr(s); tty.setraw(s); termios.tcsetattr(s, termios.TCSANOW, attrs)
fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
print(struct.unpack("HHHH", fcntl.ioctl(s, termios.TIOCGWINSZ, b"\0" * 8)))
termios.tcflush(s, termios.TCIFLUSH); termios.tcdrain(s)
print(os.ttyname(s), os.isatty(s))
os.set_blocking(m, False); os.set_inheritable(m, True)
sk = socket.socket(); print(fcntl.ioctl(sk, termios.FIONREAD, b"\0\0\0\0"))
print(socket.if_nameindex()); print(socket.if_nametoindex("lo"))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
buf = array.array("B", b"\0" * 40 * 32)
print(len(fcntl.ioctl(u, 0x8912, struct.pack("iL", len(buf), buf.buffer_info()[0]))))  # SIOCGIFCONF
print(fcntl.ioctl(u, 0x8933, struct.pack("16si", b"lo", 0))[:20])  # SIOCGIFINDEX
print(fcntl.ioctl(u, 0x8913, struct.pack("16sh", b"lo", 0))[:20])  # SIOCGIFFLAGS
a, b = socket.socketpair(); b.send(b"x"); print(fcntl.ioctl(a, termios.FIONREAD, b"\0\0\0\0"))
r, w = os.pipe(); os.write(w, b"ab"); print(fcntl.ioctl(r, termios.FIONREAD, b"\0\0\0\0"))
fcntl.ioctl(r, termios.FIOCLEX); fcntl.ioctl(r, termios.FIONCLEX); fcntl.ioctl(r, termios.FIONBIO, b"\1\0\0\0")
with open(os.path.join(d, "x.csv"), "rb") as f: f.read()
import io; print(io.open(os.path.join(d, "x.csv")).isatty())
import multiprocessing as mp
if __name__ == "__main__":
    with mp.Pool(2) as pool: print(pool.map(abs, [-1, 2]))
