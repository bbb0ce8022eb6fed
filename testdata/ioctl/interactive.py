# Interactive bash and python in a pty, driven like a terminal user would
# (see measure.py and syscalls.IoctlAllowed).
import os, pty, sys, time, select
def drive(argv, inputs):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"; os.execvp(argv[0], argv)
    out = b""
    for s in inputs:
        time.sleep(0.5); os.write(fd, s)
    end = time.time() + 10
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            try: b = os.read(fd, 4096)
            except OSError: break
            if not b: break
            out += b
    os.waitpid(pid, 0)
    return out
print(drive(["bash", "-i"], [b"ls --color=auto -l /\n", b"echo $COLUMNS; stty size\n", b"python3 -c 'import os; print(os.get_terminal_size())'\n", b"exit\n"])[-300:])
print(drive(["python3", "-i", "-q"], [b"print(1+1)\n", b"import os; os.get_terminal_size()\n", b"exit()\n"])[-200:])
