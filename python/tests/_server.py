"""A real `tracecell serve` for the Python package's tests (started per test module).

    srv = Server.start()        # $TRACECELL_BIN serve --listen unix:<tmp>/s.sock --state-dir <tmp>/state --pool-size 1
    ...
    srv.stop()                  # SIGTERM; asserts the server and every process it started are gone
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import List, Optional, Set

import tracecell


def _children(pid: int) -> List[int]:
    out: List[int] = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(d))
    return out


def descendants(pid: int) -> Set[int]:
    seen: Set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        for c in _children(p):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


def alive(pid: int) -> bool:
    """True when pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Server:
    def __init__(self, tmp: str, proc: "subprocess.Popen[bytes]", sock: str, log: str) -> None:
        self.tmp = tmp
        self.proc = proc
        self.sock = sock
        self.url = "unix:" + sock
        self.state_dir = os.path.join(tmp, "state")
        self.log = log
        self.seen_pids: Set[int] = set()

    @classmethod
    def start(cls, *extra: str) -> "Server":
        binary = os.environ.get("TRACECELL_BIN", "")
        if not os.access(binary, os.X_OK):
            raise RuntimeError("TRACECELL_BIN=%r is not an executable: run the tests through `make python-test`" % binary)
        tmp = tempfile.mkdtemp(prefix="tracecell-pytest-")
        sock = os.path.join(tmp, "s.sock")
        log = os.path.join(tmp, "server.log")
        state = os.path.join(tmp, "state")
        os.mkdir(state, 0o700)
        with open(log, "wb") as lf:
            proc = subprocess.Popen([binary, "serve", "--listen", "unix:" + sock, "--state-dir", state, "--pool-size", "1", *extra],
                                    stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        srv = cls(tmp, proc, sock, log)
        deadline = time.monotonic() + 60  # a startup deadline, not an assertion on speed
        c = tracecell.Client(srv.url)
        try:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError("tracecell serve exited with %s:\n%s" % (proc.returncode, srv.read_log()))
                try:
                    if c.health().status == "ok":
                        break
                except tracecell.ServerUnavailable:
                    pass
                if time.monotonic() > deadline:
                    srv.proc.kill()
                    raise RuntimeError("tracecell serve did not answer on %s:\n%s" % (sock, srv.read_log()))
                time.sleep(0.05)
        finally:
            c.close()
        return srv

    def read_log(self) -> str:
        try:
            with open(self.log, "rb") as f:
                return f.read().decode("utf-8", "replace")[-4000:]
        except OSError:
            return ""

    def note_processes(self) -> None:
        """Remember the server's current process tree (workers), checked by stop()."""
        self.seen_pids |= descendants(self.proc.pid)

    def stop(self) -> Optional[str]:
        """SIGTERM the server; return a description of any process left behind (None: none)."""
        self.note_processes()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "tracecell serve did not exit within 60 s of SIGTERM"
        left = [p for p in sorted(self.seen_pids) if alive(p)]
        problems = []
        if left:
            problems.append("processes left after SIGTERM: %s" % left)
        if os.path.exists(self.sock):
            problems.append("socket %s left behind" % self.sock)
        if not problems:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return None
        return "; ".join(problems) + "\n" + self.read_log()


class MCPServer:
    """A real `tracecell mcp` on a free loopback port (the kernel picks it; the
    server logs the address), with a temporary state directory.

        srv = MCPServer.start("--exec-timeout", "30s")
        srv.url                  # http://127.0.0.1:PORT (SSE at /sse, Streamable HTTP at /mcp)
        srv.stop()               # SIGTERM; None, or what was left behind
    """

    def __init__(self, tmp: str, proc: "subprocess.Popen[bytes]", log: str) -> None:
        self.tmp = tmp
        self.proc = proc
        self.log = log
        self.state_dir = os.path.join(tmp, "state")
        self.url = ""
        self.seen_pids: Set[int] = set()

    @classmethod
    def start(cls, *extra: str, policy: str = "net: deny\n") -> "MCPServer":
        import json  # only here: the rest of the module needs no JSON

        binary = os.environ.get("TRACECELL_BIN", "")
        if not os.access(binary, os.X_OK):
            raise RuntimeError("TRACECELL_BIN=%r is not an executable: run the tests through `make python-test`" % binary)
        tmp = tempfile.mkdtemp(prefix="tracecell-pymcp-")
        log = os.path.join(tmp, "server.log")
        pol = os.path.join(tmp, "policy.yaml")
        with open(pol, "w") as f:
            f.write(policy)
        with open(log, "wb") as lf:
            proc = subprocess.Popen([binary, "mcp", "--policy", pol, "--listen", "127.0.0.1:0", "--state-dir", os.path.join(tmp, "state"),
                                     "--pool-size", "1", "--log-format", "json", *extra],
                                    stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        srv = cls(tmp, proc, log)
        deadline = time.monotonic() + 60  # a startup deadline, not an assertion on speed
        while not srv.url:
            if proc.poll() is not None:
                raise RuntimeError("tracecell mcp exited with %s:\n%s" % (proc.returncode, srv.read_log()))
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise RuntimeError("tracecell mcp did not log its address within 60 s:\n%s" % srv.read_log())
            for line in srv.read_log().splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("message") == "tracecell mcp: listening":
                    srv.url = "http://" + rec["listen"]
            time.sleep(0.02)
        return srv

    @property
    def hostport(self) -> str:
        return self.url[len("http://"):]

    def read_log(self) -> str:
        try:
            with open(self.log, "rb") as f:
                return f.read().decode("utf-8", "replace")[-8000:]
        except OSError:
            return ""

    def stop(self) -> Optional[str]:
        """SIGTERM the server; return a description of any process left behind (None: none)."""
        self.seen_pids |= descendants(self.proc.pid)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "tracecell mcp did not exit within 60 s of SIGTERM"
        deadline = time.monotonic() + 10  # Pdeathsig and EXITKILL are asynchronous
        left = [p for p in sorted(self.seen_pids) if alive(p)]
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [p for p in left if alive(p)]
        if left:
            return "processes left after SIGTERM: %s\n%s" % (left, self.read_log())
        shutil.rmtree(self.tmp, ignore_errors=True)
        return None
