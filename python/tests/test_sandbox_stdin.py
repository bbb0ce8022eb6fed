"""TracecellSandboxClient in an application that runs on a terminal: the model's commands
do not get that terminal.

The application (a driver process using the client) runs on a pseudo-terminal, as its
stdin, stdout, stderr and controlling terminal, like a program started from the operator's
shell. The "operator" has typed a line into it. Each way a command starts (``exec``,
``exec_command`` without and with a PTY) runs a probe that reports its fd 0, reads from it,
opens /dev/tty and the application's terminal by name to read and write, writes to fd 0 and
sets terminal settings on it. None of it may reach the application's terminal: the
commands' stdin is /dev/null (a PTY command's is its own pty), the typed line is still
there for the application afterwards, nothing the commands wrote shows on the terminal,
and its settings hold.

Needs the tracecell binary ($TRACECELL_BIN).
"""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import termios
import time
import unittest
from typing import Any, Dict, Tuple

BIN = os.environ.get("TRACECELL_BIN") or shutil.which("tracecell") or ""
SYS_PATH = "/usr/local/bin:/usr/bin:/bin"
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TYPED = "AAAAAABBBBBBCCCCCCDDDDDD"

# The application: starts a session on its terminal (fd 0, made its controlling terminal)
# and runs the probe each way; prints one line, RESULT <json>, the outputs in hex (so
# that nothing of them can pass for what a command wrote to the terminal).
DRIVER = r'''
import asyncio, fcntl, json, os, select, sys, termios
from agents.sandbox import Manifest
from tracecell.agents import TracecellSandboxClient

fcntl.ioctl(0, termios.TIOCSCTTY, 0)
app_tty = os.ttyname(0)

def probe(read_stdin):
    p = "echo fd0=$(readlink /proc/self/fd/0); "
    if read_stdin:
        p += "echo stdin=$(timeout 2 head -c 6 | od -An -tx1 | tr -d ' '); "
    p += "echo byname=$(timeout 2 head -c 6 < %s | od -An -tx1 | tr -d ' '); " % app_tty
    p += "echo devtty=$( (exec 3</dev/tty) 2>/dev/null && echo open); "
    p += "printf PWNED >&0; printf PWNED > %s; stty echo <&0; echo end" % app_tty
    return p

async def main():
    client = TracecellSandboxClient(tracecell=os.environ["TRACECELL_BIN"], report_dir=sys.argv[2])
    s = await client.create(manifest=Manifest(root=sys.argv[1]))
    await s.start()
    out = {"tty": app_tty}
    try:
        r = await s.exec(probe(True), timeout=15)
        out["exec"] = [r.exit_code, (r.stdout + r.stderr).hex()]
        u = await s.pty_exec_start(probe(True), tty=False, yield_time_s=15)
        out["exec_command"] = [u.exit_code, u.output.hex()]
        u = await s.pty_exec_start(probe(False), tty=True, yield_time_s=15)
        out["exec_command_tty"] = [u.exit_code, u.output.hex()]
    finally:
        await s.aclose()
    # What the operator typed is still there for the application.
    attrs = termios.tcgetattr(0)
    out["echo"] = bool(attrs[3] & termios.ECHO)
    ready, _, _ = select.select([0], [], [], 1)
    out["left"] = os.read(0, 100).decode() if ready else ""
    sys.stdout.write("RESULT " + json.dumps(out) + "\n")
    sys.stdout.flush()

asyncio.run(main())
'''


class TerminalTest(unittest.TestCase):
    def setUp(self) -> None:
        if not BIN:
            raise unittest.SkipTest("no tracecell binary: set TRACECELL_BIN (make build)")

    def run_app(self) -> Dict[str, Any]:
        ws = tempfile.mkdtemp(prefix="sbx-tty-ws-")
        reports = tempfile.mkdtemp(prefix="sbx-tty-reports-")
        self.addCleanup(shutil.rmtree, ws, True)
        self.addCleanup(shutil.rmtree, reports, True)
        master, slave = os.openpty()
        self.addCleanup(os.close, master)
        # No echo, so that the typed line does not show on the master (the probe's `stty echo`
        # would turn it on); the operator types it before the application starts, and it waits
        # in the terminal's input queue.
        attrs = termios.tcgetattr(slave)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        os.write(master, (TYPED + "\n").encode())
        env = dict(os.environ, PATH=SYS_PATH, TRACECELL_BIN=BIN, TERM="xterm",
                   PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
        app = subprocess.Popen([sys.executable, "-c", DRIVER, ws, reports], stdin=slave, stdout=slave,
                               stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        out = b""
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 1)
                if not ready:
                    if app.poll() is not None:
                        break
                    continue
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the application and its children closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            if app.poll() is None:
                app.kill()
            app.wait(10)
        self.terminal = out.decode("utf-8", "replace")
        for line in self.terminal.splitlines():
            if "RESULT {" in line:  # (what a command wrote to the terminal may precede it)
                result: Dict[str, Any] = json.loads(line[line.index("RESULT {") + len("RESULT "):])
                return result
        self.fail("the application printed no result; its terminal showed:\n%s" % self.terminal)

    def test_commands_do_not_get_the_applications_terminal(self) -> None:
        res = self.run_app()
        app_tty = res["tty"]
        self.assertTrue(app_tty.startswith("/dev/pts/"), res)
        for way in ("exec", "exec_command", "exec_command_tty"):
            exit_code, hexout = res[way]
            text = bytes.fromhex(hexout).decode("utf-8", "replace")
            fields = dict(l.strip().split("=", 1) for l in text.splitlines() if "=" in l and not l.startswith("tracecell:"))
            with self.subTest(way=way):
                self.assertIsNotNone(exit_code, text)
                self.assertIn("end", text)
                if way == "exec_command_tty":
                    # Its own pty, not the application's terminal.
                    self.assertTrue(fields["fd0"].startswith("/dev/pts/"), text)
                    self.assertNotEqual(fields["fd0"], app_tty, text)
                else:
                    self.assertEqual(fields["fd0"], "/dev/null", text)
                    self.assertEqual(fields["stdin"], "", text)
                # No controlling terminal (the application's is its own).
                self.assertEqual(fields["devtty"], "", text)
                # The application's terminal opened by name is another terminal of the user's.
                self.assertEqual(fields["byname"], "", text)
                self.assertIn("tracecell: read %s blocked" % app_tty, text)
                self.assertIn("tracecell: write to %s blocked" % app_tty, text)
        # Nothing read the operator's line, nothing was written to the terminal, its settings hold.
        self.assertEqual(res["left"].strip(), TYPED)
        self.assertNotIn("PWNED", self.terminal)
        self.assertFalse(res["echo"])


# A library whose constructor writes a line to MARKER (outside the workspace) from every
# process that loads it: run unconfined, it gets there; under tracecell, the write is blocked.
PRELOAD_C = r'''
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
    int fd = open(MARKER, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        char b[64];
        int n = snprintf(b, sizeof b, "loaded by pid %d\n", (int)getpid());
        write(fd, b, n);
        close(fd);
    }
}
'''

PRELOAD_DRIVER = r'''
import asyncio, os, sys
from agents.sandbox import Manifest
from tracecell.agents import TracecellSandboxClient

async def main():
    ws, reports, lib = sys.argv[1], sys.argv[2], sys.argv[3]
    client = TracecellSandboxClient(tracecell=os.environ["TRACECELL_BIN"], report_dir=reports)
    m = Manifest(root=ws, environment={"value": {"LD_PRELOAD": os.path.join(ws, "evil.so")}})
    s = await client.create(manifest=m)
    await s.start()
    try:
        r = await s.exec("cp %s evil.so && echo copied" % lib, timeout=15)
        print("COPY", r.exit_code, (r.stdout + r.stderr).decode("utf-8", "replace") if isinstance(r.stdout, bytes) else r.stdout)
        r = await s.exec("true", timeout=15)
        print("TRUE", r.exit_code)
    finally:
        await s.aclose()

asyncio.run(main())
'''


def _scratch_dirs(test: unittest.TestCase, name: str) -> Tuple[str, str, str]:
    """A workspace, a report directory and a directory outside both, removed after the test."""
    dirs = tuple(tempfile.mkdtemp(prefix="sbx-%s-%s-" % (name, kind)) for kind in ("ws", "reports", "out"))
    for d in dirs:
        test.addCleanup(shutil.rmtree, d, True)
    return dirs[0], dirs[1], dirs[2]


def _run_driver(driver: str, *args: str) -> "subprocess.CompletedProcess[str]":
    """Runs a driver script with the SDK, this package and the tracecell binary, in a fresh Python."""
    env = dict(os.environ, PATH=SYS_PATH, TRACECELL_BIN=BIN,
               PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", driver] + list(args), env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


class PreloadTest(unittest.TestCase):
    """The session's environment reaches nothing that runs outside the sandbox: with
    LD_PRELOAD naming a library the model's command put in the workspace, no process
    outside the tree loads it (tracecell is a static binary, and nothing else is started
    in front of it)."""

    def test_dynamic_tracecell_refused(self) -> None:
        # A dynamically linked tracecell would itself load LD_PRELOAD's library, outside
        # the sandbox: the client refuses one (here /bin/sh stands in for such a build).
        sys.path.insert(0, PYTHON_DIR)
        try:
            from tracecell.agents_sandbox import _find_tracecell
        except ImportError as e:  # the SDK is not installed
            raise unittest.SkipTest(str(e))
        with self.assertRaisesRegex(ValueError, "dynamically linked"):
            _find_tracecell("/bin/sh")
        if BIN:
            self.assertEqual(_find_tracecell(BIN), os.path.abspath(BIN))

    def test_workspace_library_not_loaded_outside(self) -> None:
        if not BIN:
            raise unittest.SkipTest("no tracecell binary: set TRACECELL_BIN (make build)")
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise unittest.SkipTest("no C compiler")
        ws, reports, out = _scratch_dirs(self, "preload")
        marker = os.path.join(out, "loaded")
        src = os.path.join(out, "evil.c")
        with open(src, "w") as f:
            f.write(PRELOAD_C)
        lib = os.path.join(out, "evil.so")
        subprocess.run([cc, "-shared", "-fPIC", "-DMARKER=\"%s\"" % marker, "-o", lib, src], check=True)
        p = _run_driver(PRELOAD_DRIVER, ws, reports, lib)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("copied", p.stdout, p.stdout + p.stderr)
        self.assertIn("TRUE 0", p.stdout, p.stdout + p.stderr)
        self.assertTrue(os.path.exists(os.path.join(ws, "evil.so")), p.stdout)
        loaded = open(marker).read() if os.path.exists(marker) else ""
        self.assertEqual(loaded, "", "the workspace's library ran outside the sandbox:\n" + loaded)


OWNENV_DRIVER = r'''
import asyncio, os, sys
from agents.sandbox import Manifest
from tracecell.agents import TracecellSandboxClient

async def main():
    ws, reports, profile = sys.argv[1], sys.argv[2], sys.argv[3]
    client = TracecellSandboxClient(tracecell=os.environ["TRACECELL_BIN"], report_dir=reports)
    m = Manifest(root=ws, environment={"value": {"TRACECELL_CPUPROFILE": profile, "TRACECELL_OTHER": "x",
                                                 "APP_SETTING": "kept"}})
    s = await client.create(manifest=m)
    await s.start()
    try:
        r = await s.exec("env | grep -E '^(TRACECELL_|APP_SETTING=)' | sort; echo done", timeout=15)
        out = r.stdout.decode("utf-8", "replace") if isinstance(r.stdout, bytes) else r.stdout
        print("EXIT", r.exit_code)
        print(out)
    finally:
        await s.aclose()

asyncio.run(main())
'''


class OwnEnvironmentTest(unittest.TestCase):
    """tracecell runs outside the sandbox with the session's environment: a manifest that
    sets tracecell's own variables (TRACECELL_CPUPROFILE names a file tracecell writes)
    changes nothing outside the workspace, and the tree does not get them either."""

    def test_manifest_cannot_set_tracecell_variables(self) -> None:
        if not BIN:
            raise unittest.SkipTest("no tracecell binary: set TRACECELL_BIN (make build)")
        ws, reports, out = _scratch_dirs(self, "ownenv")
        profile = os.path.join(out, "cpu.prof")
        p = _run_driver(OWNENV_DRIVER, ws, reports, profile)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("EXIT 0", p.stdout, p.stdout + p.stderr)
        self.assertIn("APP_SETTING=kept\ndone", p.stdout, p.stdout + p.stderr)
        self.assertNotIn("TRACECELL_", p.stdout.replace("TRACECELL_BIN", ""), p.stdout)
        self.assertFalse(os.path.exists(profile), "tracecell wrote %s, outside the workspace, as the "
                         "manifest's environment told it" % profile)


if __name__ == "__main__":
    unittest.main()
