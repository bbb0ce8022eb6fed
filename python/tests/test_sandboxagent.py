"""tracecell.agents.TracecellSandboxClient with the real openai-agents SandboxAgent.

End to end: SandboxAgent + Runner + OpenAIChatCompletionsModel talking to a scripted fake
Chat Completions server (tests.test_agents.FakeChatCompletions) on 127.0.0.1, whose tool
calls run through the sandbox client. The same script runs on the SDK's
UnixLocalSandboxClient to document the difference: there the host write, the PTY write
and the loopback connection succeed. What the model saw is read from the tool messages
the fake server received; the ground truth from disk and from a listener outside the tree.

Direct-session tests: exec, PTY (one-shot and interactive), the SDK's file operations,
apply_patch, serialize/resume; and the median exec latency of both clients (printed).

Needs the tracecell binary ($TRACECELL_BIN) and python3 with pandas on PATH (Debian
python3-pandas; scripts/deps.sh installs it).
"""
from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock
from typing import Any, Dict, List, Optional, Tuple

from agents import OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.run import RunConfig
from agents.sandbox import LocalSnapshotSpec, Manifest, SandboxAgent, SandboxRunConfig
from agents.sandbox.capabilities import Shell
from agents.sandbox.sandboxes.unix_local import UnixLocalSandboxClient
from agents.sandbox.session import SandboxSession, SandboxSessionState
from agents.sandbox.workspace_paths import SandboxPathGrant
from openai import AsyncOpenAI

from tracecell.agents import (
    SHELL_AGENT_EXEC,
    TracecellSandboxClient,
    TracecellSandboxClientOptions,
    TracecellSandboxSessionState,
    tracecell_reports,
)

from .test_agents import FakeChatCompletions

BIN = os.environ.get("TRACECELL_BIN") or shutil.which("tracecell") or ""
SYS_PATH = "/usr/local/bin:/usr/bin:/bin"


def setUpModule() -> None:
    set_tracing_disabled(True)
    if not BIN:
        raise unittest.SkipTest("no tracecell binary: set TRACECELL_BIN (make build)")
    # The commands find python3 (with pandas) and the shell tools in the system's PATH,
    # not in the test's venv.
    os.environ["PATH"] = SYS_PATH


class Listener:
    """A TCP listener on 127.0.0.1 outside the tree: counts the connections it accepted."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            c.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def tmpdir(test: unittest.TestCase, prefix: str) -> str:
    d = os.path.realpath(tempfile.mkdtemp(prefix=prefix))
    test.addCleanup(shutil.rmtree, d, True)
    return d


# testdata/py/sales_by_city.py: a pandas script, copied into the workspace.
PANDAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "py", "sales_by_city.py")


class EndToEndTest(unittest.IsolatedAsyncioTestCase):
    """The model's shell through SandboxAgent: tracecell confines it, UnixLocal does not."""

    async def run_script(self, client: Any, options: Any) -> Tuple[str, str, Listener, List[Tuple[str, Dict[str, Any], str]], Optional[SandboxSession]]:
        ws = tmpdir(self, "sbx-ws-")
        outside = tmpdir(self, "sbx-host-")
        shutil.copy(PANDAS, os.path.join(ws, "analysis.py"))
        lst = Listener()
        self.addCleanup(lst.close)
        connect = "python3 -c \"import socket; socket.create_connection(('127.0.0.1', %d), timeout=5); print('connected')\"" % lst.port
        turns = [
            [("exec_command", {"cmd": "echo hello > inside.txt && cat inside.txt"})],
            [("exec_command", {"cmd": "echo pwned > %s/escape.txt" % outside})],
            [("exec_command", {"cmd": "python3 analysis.py && cat by_city.csv"})],
            [("exec_command", {"cmd": connect})],
            [("exec_command", {"cmd": "echo pwned > %s/pty.txt; echo pty-done" % outside, "tty": True, "yield_time_ms": 20000})],
            [("exec_command", {"cmd": connect, "tty": True, "yield_time_ms": 20000})],
            "done",
        ]
        with FakeChatCompletions(turns) as fake:
            oc = AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
            # Chat Completions carries function tools only: the Shell capability (exec_command,
            # write_stdin), not Filesystem's freeform apply_patch.
            agent = SandboxAgent(name="shell", instructions="Use the shell.", capabilities=[Shell()],
                                 model=OpenAIChatCompletionsModel(model=fake.model, openai_client=oc))
            session = await client.create(manifest=Manifest(root=ws), options=options)
            async with session:
                rc = RunConfig(sandbox=SandboxRunConfig(session=session))
                result = await Runner.run(agent, "analyse", run_config=rc, max_turns=12)
            self.assertEqual(result.final_output, "done")
            got = fake.results()
        self.assertEqual(len(got), 6, got)
        return ws, outside, lst, got, session

    async def test_tracecell_confines_the_shell(self) -> None:
        ws, outside, lst, got, session = await self.run_script(TracecellSandboxClient(tracecell=BIN, report_dir=tmpdir(self, "sbx-reports-")),
                                                               TracecellSandboxClientOptions(net="deny"))
        (_, _, hello), (_, _, escape), (_, _, pandas), (_, _, conn), (_, _, pty), (_, _, ptyconn) = got
        # The workspace write, on disk.
        self.assertIn("hello", hello)
        with open(os.path.join(ws, "inside.txt")) as f:
            self.assertEqual(f.read(), "hello\n")
        # The host write: refused, absent, and the model was told the path.
        self.assertFalse(os.path.lexists(os.path.join(outside, "escape.txt")), escape)
        self.assertIn("tracecell: create %s/escape.txt blocked: outside the sandbox" % outside, escape)
        self.assertIn("Permission denied", escape)
        # pandas runs, its output lands in the workspace.
        self.assertIn("total 6", pandas)
        self.assertIn("a,4", pandas)
        self.assertTrue(os.path.isfile(os.path.join(ws, "by_city.csv")))
        # Loopback refused under net deny; the listener outside saw nothing.
        self.assertIn("tracecell: connect to 127.0.0.1:%d blocked" % lst.port, conn)
        self.assertNotIn("connected\n", conn)
        # The same through a PTY.
        self.assertIn("pty-done", pty)
        self.assertFalse(os.path.lexists(os.path.join(outside, "pty.txt")), pty)
        self.assertIn("tracecell: create %s/pty.txt blocked" % outside, pty)
        self.assertIn("tracecell: connect to 127.0.0.1:%d blocked" % lst.port, ptyconn)
        await asyncio.sleep(0.2)
        self.assertEqual(lst.accepted, 0)
        # The operator's report: every blocked action with syscall, paths, program, pid, rule.
        assert session is not None
        denials = [d for r in tracecell_reports(session) for d in r.denials]
        creates = [d for d in denials if d.kind == "create"]
        self.assertEqual(sorted(p.paths[0].resolved for p in creates), [outside + "/escape.txt", outside + "/pty.txt"])
        # The program is what the kernel says runs: /bin/sh's target (dash on Debian).
        shell = os.path.basename(os.path.realpath("/bin/sh"))
        for d in creates:
            self.assertEqual((d.syscall, d.rule, d.program, d.errno), ("openat", "outside-writable-roots", shell, "EACCES"))
            self.assertGreater(d.pid, 0)
        connects = [d for d in denials if d.kind == "connect"]
        self.assertEqual(len(connects), 2)
        self.assertTrue(all(d.port == lst.port and d.rule.startswith("net") for d in connects), connects)
        jsonl = os.path.join(session._inner.report_dir, "reports.jsonl")  # type: ignore[attr-defined]
        with open(jsonl) as f:
            self.assertEqual(len(f.readlines()), len(tracecell_reports(session)))

    async def test_unix_local_does_not(self) -> None:
        # The SDK's own local client on Linux: the same script escapes. Asserted, so this
        # test fails if the SDK starts confining (and the README's comparison must change).
        ws, outside, lst, got, _ = await self.run_script(UnixLocalSandboxClient(), None)
        (_, _, hello), (_, _, escape), (_, _, pandas), (_, _, conn), (_, _, pty), (_, _, ptyconn) = got
        self.assertIn("hello", hello)
        self.assertIn("total 6", pandas)
        with open(os.path.join(outside, "escape.txt")) as f:
            self.assertEqual(f.read(), "pwned\n")
        with open(os.path.join(outside, "pty.txt")) as f:
            self.assertEqual(f.read(), "pwned\n")
        self.assertIn("connected", conn)
        self.assertIn("connected", ptyconn)
        await asyncio.sleep(0.2)
        self.assertEqual(lst.accepted, 2)


class SessionTest(unittest.IsolatedAsyncioTestCase):
    """The session API directly."""

    async def asyncSetUp(self) -> None:
        self.ws = tmpdir(self, "sbx-ws-")
        self.outside = tmpdir(self, "sbx-host-")
        self.client = TracecellSandboxClient(tracecell=BIN, report_dir=tmpdir(self, "sbx-reports-"))

    async def open(self, options: Optional[TracecellSandboxClientOptions] = None, **manifest: Any) -> SandboxSession:
        s = await self.client.create(manifest=Manifest(root=self.ws, **manifest), options=options)
        await s.start()
        self.addAsyncCleanup(s.aclose)
        return s

    async def test_exec(self) -> None:
        s = await self.open()
        r = await s.exec("echo out; echo err >&2; echo x > made.txt; exit 3")
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (3, b"out\n", b"err\n"))
        self.assertTrue(os.path.isfile(os.path.join(self.ws, "made.txt")))
        target = os.path.join(self.outside, "t.txt")
        r = await s.exec("touch %s" % target, shell=True)
        self.assertNotEqual(r.exit_code, 0)
        self.assertFalse(os.path.lexists(target))
        self.assertIn(("tracecell: create %s blocked" % target).encode(), r.stderr)
        # A process outside the tree cannot be signalled: it lives on, the output says why.

        sleeper = subprocess.Popen(["sleep", "30"])
        self.addCleanup(sleeper.wait)
        self.addCleanup(sleeper.kill)
        r = await s.exec("kill -TERM %d; echo rc=$?" % sleeper.pid)
        await asyncio.sleep(0.2)
        self.assertIsNone(sleeper.poll())
        self.assertIn(b"tracecell: acting on another process (kill) blocked", r.stderr)
        # shell=False: argv as given, the program found in PATH.
        r = await s.exec("python3", "-c", "import os; print(os.getcwd())", shell=False)
        self.assertEqual(r.stdout.decode().strip(), self.ws)

    async def test_exec_timeout(self) -> None:
        # The exec timeout is tracecell's: the whole tree is killed (a background child too)
        # and the report is still written and kept; the SDK's ExecTimeoutError is raised.
        from agents.sandbox.errors import ExecTimeoutError
        s = await self.open()
        t0 = time.monotonic()
        with self.assertRaises(ExecTimeoutError):
            await s.exec("(sleep 3; echo late > late.txt) & echo x > %s/t.txt; sleep 30" % self.outside, timeout=1)
        self.assertLess(time.monotonic() - t0, 5)
        rep = tracecell_reports(s)[-1]
        self.assertTrue(rep.raw["exit"]["timed_out"])
        self.assertEqual([d.paths[0].resolved for d in rep.denials], [self.outside + "/t.txt"])
        await asyncio.sleep(3.5)
        self.assertFalse(os.path.lexists(os.path.join(self.ws, "late.txt")))

    async def test_exec_policy(self) -> None:
        # A program outside the allowed patterns (a copy the shell made in its workspace) is
        # refused and named; with allow_exec=() even ls is refused.
        s = await self.open()
        r = await s.exec("cp /bin/echo ./myecho && ./myecho hi; echo rc=$?")
        self.assertIn(b"rc=126", r.stdout)
        # Inside the workspace the path is shown relative to it, as the shell used it.
        self.assertIn(b"tracecell: running myecho blocked: this program is not allowed here", r.stderr)
        self.assertNotIn(b"hi\n", r.stdout)
        # The program the SDK starts is under the policy too: the model picks exec_command's
        # `shell`, which becomes the command.
        r = await s.exec("./myecho", "hi", shell=False)
        self.assertEqual(r.exit_code, 126)
        self.assertEqual(r.stdout, b"")
        self.assertIn(b"tracecell: running myecho blocked", r.stderr)
        # Only the shell allowed: it runs, ls does not.
        sh = os.path.realpath(shutil.which("sh") or "/bin/sh")
        s2 = await self.client.create(manifest=Manifest(root=tmpdir(self, "sbx-ws2-")),
                                      options=TracecellSandboxClientOptions(allow_exec=(sh,)))
        async with s2:
            r = await s2.exec("ls /; echo rc=$?")
            self.assertIn(b"rc=126", r.stdout)
            self.assertIn(b"blocked", r.stderr)
            self.assertIn(b"/ls", r.stderr)
        s3 = await self.client.create(manifest=Manifest(root=tmpdir(self, "sbx-ws3-")),
                                      options=TracecellSandboxClientOptions(allow_exec=()))
        async with s3:
            r = await s3.exec("echo hi")
            self.assertEqual((r.exit_code, r.stdout), (126, b""))
            self.assertIn(b"tracecell: running", r.stderr)

    async def test_deny_read_and_grants(self) -> None:
        secret = os.path.join(self.outside, "secret.txt")
        with open(secret, "w") as f:
            f.write("s3cret\n")
        grant = tmpdir(self, "sbx-grant-")
        s = await self.open(TracecellSandboxClientOptions(deny_read=(secret,)),
                            extra_path_grants=(SandboxPathGrant(path=grant),))
        r = await s.exec("cat %s; echo g > %s/g.txt; echo rc=$?" % (secret, grant))
        self.assertNotIn(b"s3cret", r.stdout)
        self.assertIn(("tracecell: read %s blocked" % secret).encode(), r.stderr)
        self.assertIn(b"rc=0", r.stdout)
        with open(os.path.join(grant, "g.txt")) as f:
            self.assertEqual(f.read(), "g\n")
        # Reads restricted to `read` and the read-only grants: the login shell still starts.
        other = tmpdir(self, "sbx-other-")
        with open(os.path.join(other, "o.txt"), "w") as f:
            f.write("other\n")
        ro = tmpdir(self, "sbx-ro-")
        with open(os.path.join(ro, "r.txt"), "w") as f:
            f.write("ro\n")
        s2 = await self.client.create(manifest=Manifest(root=tmpdir(self, "sbx-ws3-"), extra_path_grants=(SandboxPathGrant(path=ro, read_only=True),)),
                                      options=TracecellSandboxClientOptions(read=()))
        async with s2:
            r = await s2.exec("cat %s/r.txt %s/o.txt; echo x > %s/w.txt" % (ro, other, ro))
            self.assertEqual(r.stdout, b"ro\n")
            lines = [l for l in r.stderr.decode().splitlines() if l.startswith("tracecell: ")]
            self.assertEqual(len(lines), 2, r.stderr)
            self.assertTrue(lines[0].startswith("tracecell: read %s/o.txt blocked" % other), lines)
            self.assertTrue(lines[1].startswith("tracecell: create %s/w.txt blocked" % ro), lines)
        self.assertFalse(os.path.lexists(os.path.join(ro, "w.txt")))

    async def test_pty(self) -> None:
        s = await self.open()
        target = os.path.join(self.outside, "p.txt")
        # An interactive shell in a PTY: the model types commands with write_stdin.
        u = await s.pty_exec_start("sh", shell=False, tty=True, yield_time_s=1)
        self.assertIsNotNone(u.process_id)
        assert u.process_id is not None
        u = await s.pty_write_stdin(session_id=u.process_id, chars="tty | grep -c /dev/pts; echo in > pty_in.txt\n", yield_time_s=2)
        self.assertIn(b"1", u.output)
        u = await s.pty_write_stdin(session_id=u.process_id or 0, chars="echo out > %s\nexit 0\n" % target, yield_time_s=5)
        # The lines for blocked actions come when the PTY's process ends.
        for _ in range(20):
            if u.exit_code is not None:
                break
            u = await s.pty_write_stdin(session_id=u.process_id or 0, chars="", yield_time_s=1)
        self.assertEqual(u.exit_code, 0)
        self.assertIn(("tracecell: create %s blocked" % target).encode(), u.output)
        self.assertFalse(os.path.lexists(target))
        self.assertTrue(os.path.isfile(os.path.join(self.ws, "pty_in.txt")))
        # Ctrl-C: the tree runs in its own session (no job control in the PTY), so the
        # terminal's SIGINT reaches tracecell, which ends the whole command (130) and
        # still writes its report.
        u = await s.pty_exec_start("touch %s/c.txt; sleep 30" % self.outside, tty=True, yield_time_s=1)
        self.assertIsNotNone(u.process_id)
        t0 = time.monotonic()
        u = await s.pty_write_stdin(session_id=u.process_id or 0, chars="\u0003", yield_time_s=5)
        self.assertEqual(u.exit_code, 130, u.output)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertIn(("tracecell: create %s/c.txt blocked" % self.outside).encode(), u.output)

    async def test_pty_killed_by_the_sdk_keeps_its_report(self) -> None:
        # The SDK ends PTY commands still running at stop (and when it prunes old ones) with
        # SIGKILL to their process group; tracecell is sent SIGTERM first, so the command's
        # report, with what it was denied, is written and kept (a red team found them 0
        # bytes, the denials lost).
        s = await self.client.create(manifest=Manifest(root=self.ws))
        await s.start()
        u = await s.pty_exec_start("touch %s/k.txt; sleep 300" % self.outside, tty=True, yield_time_s=1)
        self.assertIsNotNone(u.process_id)
        t0 = time.monotonic()
        await s.stop()
        self.assertLess(time.monotonic() - t0, 10)
        reps = tracecell_reports(s)
        self.assertTrue(reps, "no report kept for the PTY command")
        self.assertEqual([d.paths[0].resolved for d in reps[-1].denials], [self.outside + "/k.txt"])
        await s.aclose()

    async def test_workspace_swapped_for_a_link(self) -> None:
        # A workspace inside a writable grant: a command can put a symlink in its place.
        # The next command is refused by tracecell, and a resume by the client, instead of
        # making the link's target writable (red-team round 4).
        grant = tmpdir(self, "sbx-grant-")
        victim = tmpdir(self, "sbx-victim-")
        ws = os.path.join(grant, "ws")
        os.mkdir(ws)
        s = await self.client.create(manifest=Manifest(root=ws, extra_path_grants=(SandboxPathGrant(path=grant),)))
        await s.start()
        r = await s.exec("cd / && rm -rf %s && ln -s %s %s" % (ws, victim, ws))
        self.assertEqual(r.exit_code, 0, r.stderr)
        try:
            r = await s.exec("echo x > planted", shell=True)
        except Exception:
            pass  # the SDK may fail to start a command in a workspace that is now a link
        else:
            self.assertEqual(r.exit_code, 125, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(victim, "planted")))
        payload = json.loads(json.dumps(self.client.serialize_session_state(s.state)))
        client2 = TracecellSandboxClient(tracecell=BIN, report_dir=tmpdir(self, "sbx-reports2-"))
        with self.assertRaisesRegex(ValueError, "now resolves to|which the commands can change"):
            await client2.resume(client2.deserialize_session_state(payload))
        os.unlink(ws)
        os.mkdir(ws)
        await s.aclose()

    async def test_file_operations(self) -> None:
        s = await self.open()
        await s.write(Path("notes/a.txt"), io.BytesIO(b"alpha\n"))
        await s.mkdir("data/raw", parents=True)
        self.assertEqual((await s.read(Path("notes/a.txt"))).read(), b"alpha\n")
        names = sorted(Path(e.path).name for e in await s.ls("."))
        self.assertIn("notes", names)
        self.assertIn("data", names)
        await s.mv("notes/a.txt", "data/raw/a.txt")
        self.assertTrue(os.path.isfile(os.path.join(self.ws, "data/raw/a.txt")))
        out = await s.apply_patch({"type": "create_file", "path": "p.txt", "diff": "+one\n+two\n"})
        self.assertIsInstance(out, str)
        with open(os.path.join(self.ws, "p.txt")) as f:
            self.assertEqual(f.read(), "one\ntwo")
        await s.rm("data", recursive=True)
        self.assertFalse(os.path.exists(os.path.join(self.ws, "data")))
        # The SDK's own path checks keep its file operations in the workspace.
        with self.assertRaises(Exception):
            await s.write(Path(os.path.join(self.outside, "x.txt")), io.BytesIO(b"x"))
        self.assertFalse(os.path.lexists(os.path.join(self.outside, "x.txt")))
        # A command sees what the file operations wrote.
        r = await s.exec("cat p.txt")
        self.assertEqual(r.stdout, b"one\ntwo")

    async def test_resume(self) -> None:
        opts = TracecellSandboxClientOptions(net="deny", deny_read=("/etc/shadow",), allow_exec=("/usr/bin/*", "/bin/*"))
        s = await self.client.create(manifest=Manifest(root=self.ws), options=opts)
        await s.start()
        await s.exec("echo kept > kept.txt")
        payload = self.client.serialize_session_state(s.state)
        await s.aclose()
        payload = json.loads(json.dumps(payload))
        self.assertEqual(payload["type"], "tracecell")
        # A new client in a "new process" resumes from the JSON.
        client2 = TracecellSandboxClient(tracecell=BIN, report_dir=tmpdir(self, "sbx-reports-"))
        state = client2.deserialize_session_state(payload)
        self.assertIsInstance(state, TracecellSandboxSessionState)
        self.assertEqual(SandboxSessionState.parse(json.loads(json.dumps(payload))).type, "tracecell")
        s2 = await client2.resume(state)
        async with s2:
            r = await s2.exec("cat kept.txt; echo x > %s/r.txt" % self.outside)
            self.assertEqual(r.stdout, b"kept\n")
            self.assertIn(b"tracecell: create", r.stderr)
        self.assertFalse(os.path.lexists(os.path.join(self.outside, "r.txt")))
        self.assertEqual(s2.state.options, opts)  # type: ignore[attr-defined]

    async def test_snapshot_restore(self) -> None:
        # The workspace goes to a snapshot at stop and comes back on resume after it was
        # deleted; the restored session is confined like the first.
        snaps = tmpdir(self, "sbx-snap-")
        s = await self.client.create(manifest=Manifest(root=self.ws), snapshot=LocalSnapshotSpec(base_path=Path(snaps)),
                                     options=TracecellSandboxClientOptions())
        await s.start()
        r = await s.exec("mkdir -p sub && echo snap > sub/s.txt && ln -s sub/s.txt link")
        self.assertEqual(r.exit_code, 0, r.stderr)
        payload = json.loads(json.dumps(self.client.serialize_session_state(s.state)))
        await s.aclose()
        self.assertTrue(os.listdir(snaps))
        shutil.rmtree(self.ws)
        s2 = await TracecellSandboxClient(tracecell=BIN, report_dir=tmpdir(self, "sbx-reports-")).resume(self.client.deserialize_session_state(payload))
        async with s2:
            r = await s2.exec("cat link; echo x > %s/after.txt" % self.outside)
            self.assertEqual(r.stdout, b"snap\n")
            self.assertIn(b"tracecell: create", r.stderr)
        self.assertFalse(os.path.lexists(os.path.join(self.outside, "after.txt")))

    async def test_options_errors(self) -> None:
        with self.assertRaisesRegex(TypeError, r"allow_exec=\['/usr/bin/\*'\]"):
            TracecellSandboxClientOptions(allow_exec="/usr/bin/*")
        with self.assertRaisesRegex(FileNotFoundError, "is not an executable file"):
            TracecellSandboxClient(tracecell=self.ws)
        s = await self.open(TracecellSandboxClientOptions(allow_exec=("relative/*",)))
        r = await s.exec("true")
        self.assertEqual(r.exit_code, 125)
        self.assertIn(b"--allow-exec relative/*: a pattern must be an absolute path", r.stderr)
        # Left at None, allow_exec is the policy file's, or SHELL_AGENT_EXEC.
        self.assertIsNone(TracecellSandboxClientOptions().allow_exec)
        s = await self.open()
        r = await s.exec("true")
        rep = tracecell_reports(s)[-1]
        self.assertIn("/usr/local/bin/*", rep.raw["policy"]["allow_exec_patterns"])
        # A policy file tracecell refuses is an error when the client is made, naming it.
        bad = os.path.join(self.outside, "bad.yaml")
        with open(bad, "w") as f:
            f.write("timeout: forever\n")
        with self.assertRaisesRegex(ValueError, "policy file %s: .*forever" % bad):
            TracecellSandboxClient(tracecell=BIN, policy_file=bad)

    async def test_policy_file_kept(self) -> None:
        # The policy file's settings hold under the options and the client's own additions:
        # its deny_read (the client denies its report directory too), its allow_exec and
        # its net. A red team read a deny_read secret through the backend: the report
        # directory's --deny-read flag had replaced the file's list.
        home = tmpdir(self, "sbx-home-")
        os.makedirs(os.path.join(home, ".ssh"))
        secret = os.path.join(home, ".ssh", "id_rsa")
        with open(secret, "w") as f:
            f.write("SECRET\n")
        sh = os.path.realpath(shutil.which("sh") or "/bin/sh")
        cat = os.path.realpath(shutil.which("cat") or "/bin/cat")
        pol = os.path.join(self.outside, "policy.yaml")
        with open(pol, "w") as f:
            # ~ is the application's home, not the workspace the SDK makes HOME.
            f.write("deny_read: [~/.ssh]\nallow_exec: [%s, %s]\nnet: loopback\n" % (sh, cat))
        old_home = os.environ.get("HOME")
        os.environ["HOME"] = home
        try:
            client = TracecellSandboxClient(tracecell=BIN, policy_file=pol, report_dir=tmpdir(self, "sbx-reports-"))
        finally:
            if old_home is None:
                del os.environ["HOME"]
            else:
                os.environ["HOME"] = old_home
        s = await client.create(manifest=Manifest(root=self.ws), options=TracecellSandboxClientOptions(deny_read=("/etc/shadow",)))
        await s.start()
        self.addAsyncCleanup(s.aclose)
        r = await s.exec("cat %s; echo rc=$?; id; echo rc=$?" % secret)
        self.assertNotIn(b"SECRET", r.stdout)
        self.assertIn(("tracecell: read %s blocked" % secret).encode(), r.stderr)
        self.assertIn(b"rc=126", r.stdout)  # id is not in the file's allow_exec
        rep = tracecell_reports(s)[-1].raw["policy"]
        self.assertIn(os.path.join(home, ".ssh"), rep["deny_read"])
        self.assertIn("/etc/shadow", rep["deny_read"])
        self.assertEqual(rep["net"], "loopback")
        # An option given replaces the file's setting.
        s2 = await client.create(manifest=Manifest(root=tmpdir(self, "sbx-ws2-")), options=TracecellSandboxClientOptions(net="deny"))
        async with s2:
            await s2.exec("true")
            self.assertEqual(tracecell_reports(s2)[-1].raw["policy"]["net"], "deny")

    async def test_sessions_cannot_reach_each_others_policy(self) -> None:
        # Every session's report directory (its policy.json, its reports) lies under the
        # client's, which every command is denied: a red team rewrote another session's
        # policy.json and loosened it, when each session was denied only its own.
        a = await self.open()
        await a.exec("true")
        rd_a = a._inner.report_dir  # type: ignore[attr-defined]
        pol_a = os.path.join(rd_a, [n for n in os.listdir(rd_a) if n.endswith(".policy.json")][0])
        with open(pol_a) as f:
            before = f.read()
        b = await self.client.create(manifest=Manifest(root=tmpdir(self, "sbx-wsb-")))
        async with b:
            r = await b.exec("cat %s; echo '{}' > %s; ls %s; echo end" % (pol_a, pol_a, os.path.dirname(a._inner.report_dir)))  # type: ignore[attr-defined]
            self.assertNotIn(b'"deny_read"', r.stdout)
            self.assertIn(("tracecell: read %s blocked" % pol_a).encode(), r.stderr)
        with open(pol_a) as f:
            self.assertEqual(f.read(), before)
        # A workspace or path grant holding the report directory is refused: the SDK's own
        # file operations, which tracecell does not see, would reach it.
        rd = self.client._report_dir  # type: ignore[attr-defined]
        with self.assertRaisesRegex(ValueError, "the report directory %s and the workspace or grant" % rd):
            await self.client.create(manifest=Manifest(root=tmpdir(self, "sbx-wsc-"),
                                                       extra_path_grants=(SandboxPathGrant(path=os.path.dirname(rd)),)))

    async def test_default_workspaces_kept_apart(self) -> None:
        # Sessions whose manifest gives no root get a workspace the client makes, under
        # tracecell-workspaces-<uid>, which every command is denied reading but for its
        # own: a red team's command read and copied another session's files from
        # /tmp/tracecell-ws-* (reads are open).
        made = []
        for _ in range(2):
            sess = await self.client.create()
            await sess.start()
            made.append(sess)
            self.addAsyncCleanup(self.client.delete, sess)
            self.addAsyncCleanup(sess.aclose)
        a, b = made
        ws_a, ws_b = (str(x.state.manifest.root) for x in made)
        parent = os.path.dirname(ws_a)
        r = await b.exec("echo SECRET-OF-B > secret.txt; cat secret.txt")
        self.assertEqual(r.stdout, b"SECRET-OF-B\n")
        r = await a.exec("cat %s/secret.txt; ls %s; cp %s/secret.txt stolen.txt; echo end"
                         % (ws_b, parent, ws_b), shell=True)
        self.assertNotIn(b"SECRET-OF-B", r.stdout)
        self.assertNotIn(os.path.basename(ws_b).encode(), r.stdout)
        self.assertIn(("tracecell: read %s/secret.txt blocked" % ws_b).encode(), r.stderr)
        self.assertFalse(os.path.exists(os.path.join(ws_a, "stolen.txt")))
        denied = [d for rep in tracecell_reports(a) for d in rep.denials]
        self.assertTrue(any(p.resolved == os.path.join(ws_b, "secret.txt") for d in denied for p in d.paths), denied)
        self.assertEqual(parent, os.path.dirname(ws_b))
        self.assertEqual(os.path.basename(parent), "tracecell-workspaces-%d" % os.getuid())
        self.assertEqual(os.stat(parent).st_mode & 0o777, 0o700)

    def swap_pair(self, name: str, content: str) -> Tuple[str, str]:
        """The directory d of the workspace holding name (with content), which the swap
        tests replace by a symlink, and the empty directory outside it points at."""
        d = os.path.join(self.ws, "d")
        os.mkdir(d)
        with open(os.path.join(d, name), "w") as f:
            f.write(content)
        target = os.path.join(self.outside, "target")
        os.mkdir(target)
        return d, target

    async def test_snapshot_does_not_follow_a_swapped_directory(self) -> None:
        # A command of the session swapped a directory for a symlink between the
        # snapshot's listing and its open of the entries (RENAME_EXCHANGE, timed with
        # inotify), and UnixLocal's tarfile.add, which runs unconfined in the
        # application, archived another session's files under the directory's name
        # (red team, session 25). The swap is made here at the very moment the
        # archiver has looked at the directory; the archive must not hold what lies
        # behind the link.
        s = await self.open()
        d, target = self.swap_pair("secret.txt", "decoy\n")
        with open(os.path.join(target, "secret.txt"), "w") as f:
            f.write("OUTSIDE-SECRET\n")
        real_stat, real_lstat = os.stat, os.lstat
        swapped: List[bool] = []

        def swap(path: Any, kwargs: Dict[str, Any]) -> None:
            if swapped or not (path == d or (path == "d" and "dir_fd" in kwargs)):
                return
            swapped.append(True)
            os.rename(d, d + "-moved")
            os.symlink(target, d)

        def hooked_stat(path: Any, *a: Any, **k: Any) -> Any:
            r = real_stat(path, *a, **k)
            swap(path, k)
            return r

        def hooked_lstat(path: Any, *a: Any, **k: Any) -> Any:
            r = real_lstat(path, *a, **k)
            swap(path, k)
            return r

        with mock.patch("os.stat", hooked_stat), mock.patch("os.lstat", hooked_lstat):
            archive = await s.persist_workspace()
        self.assertTrue(swapped, "the archiver never looked at the directory")
        contents = []
        with tarfile.open(fileobj=archive, mode="r:*") as tar:
            names = tar.getnames()
            for m in tar.getmembers():
                if m.isfile():
                    f2 = tar.extractfile(m)
                    assert f2 is not None
                    contents.append(f2.read())
        self.assertFalse(any(b"OUTSIDE-SECRET" in c for c in contents), names)

    async def test_restore_does_not_follow_a_swapped_directory(self) -> None:
        # A command of the session swapped a directory the restore had checked for a
        # symlink (timed by inotify on the restore's unlink of the file it replaces), and
        # UnixLocal's restore, which opens each member by its full path in the
        # application, created the member in another session's workspace or any
        # directory of the application's user (red team, session 25). The swap is made
        # here right after that unlink; nothing may appear behind the link.
        s = await self.open()
        d, target = self.swap_pair("pwned.txt", "old\n")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name in (".", "./d"):
                ti = tarfile.TarInfo(name)
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(ti)
            payload = b"PLANTED\n"
            ti = tarfile.TarInfo("./d/pwned.txt")
            ti.size, ti.mode = len(payload), 0o644
            tar.addfile(ti, io.BytesIO(payload))
        buf.seek(0)
        real_unlink = os.unlink
        swapped: List[bool] = []

        def hooked_unlink(path: Any, *a: Any, **k: Any) -> None:
            real_unlink(path, *a, **k)
            if not swapped and str(path).endswith("pwned.txt"):
                swapped.append(True)
                os.rename(d, d + "-moved")
                os.symlink(target, d)

        with mock.patch("os.unlink", hooked_unlink):
            try:
                await s.hydrate_workspace(buf)
            except Exception as e:  # failing the restore is fine; following the link is not
                print("restore failed:", e)
        self.assertTrue(swapped, "the restore never replaced the file")
        self.assertEqual(os.listdir(target), [])

    async def test_snapshot_store_denied(self) -> None:
        # Runner keeps every session's snapshot in the SDK's default store in the
        # application's home when given none; a red team's command read another session's
        # whole workspace from its archive there. The store is denied to every command.
        state = tmpdir(self, "sbx-state-")
        with mock.patch.dict(os.environ, {"XDG_STATE_HOME": state}):
            from agents.sandbox.snapshot_defaults import resolve_default_local_snapshot_spec
            store = str(resolve_default_local_snapshot_spec().base_path)
            with open(os.path.join(store, "other-session.tar"), "w") as f:
                f.write("SECRET-IN-A-SNAPSHOT\n")
            s = await self.open()
            r = await s.exec("cat %s/other-session.tar; ls %s; echo end" % (store, store), shell=True)
        self.assertNotIn(b"SECRET-IN-A-SNAPSHOT", r.stdout)
        self.assertNotIn(b"other-session", r.stdout)
        self.assertIn(("tracecell: read %s/other-session.tar blocked" % store).encode(), r.stderr)

    async def test_snapshot_size_bounded(self) -> None:
        # A hard link is archived as a whole copy and a sparse file at its full size: a
        # command with next to no disk made the application write 2 GiB (red team). The
        # snapshot's file data is bounded by max_snapshot_size.
        from agents.sandbox.errors import WorkspaceArchiveReadError
        with self.assertRaisesRegex(ValueError, "max_snapshot_size"):
            TracecellSandboxClientOptions(max_snapshot_size=0)
        s = await self.open(TracecellSandboxClientOptions(max_snapshot_size=3 << 20))
        r = await s.exec("head -c 1048576 /dev/zero > one && ln one two && ln one three && echo ok", shell=True)
        self.assertEqual(r.stdout, b"ok\n", r.stderr)
        (await s.persist_workspace()).close()  # 3 MiB of file data: at the bound
        r = await s.exec("ln one four && truncate -s 64M sparse && echo ok", shell=True)
        self.assertEqual(r.stdout, b"ok\n", r.stderr)
        with self.assertRaisesRegex(WorkspaceArchiveReadError, ""):
            await s.persist_workspace()

    async def test_restore_of_a_bad_name_is_the_sdks_error(self) -> None:
        # A PAX path with a NUL byte raised a bare ValueError from the restore (red team).
        from agents.sandbox.errors import WorkspaceArchiveWriteError
        s = await self.open()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            ti = tarfile.TarInfo("./a")
            ti.pax_headers = {"path": "./a\x00b"}
            tar.addfile(ti, io.BytesIO(b""))
        buf.seek(0)
        with self.assertRaises(WorkspaceArchiveWriteError):
            await s.hydrate_workspace(buf)

    async def test_pty_input_never_blocks_the_application(self) -> None:
        # A PTY command that never reads its terminal and a model that sends it 300 KB:
        # UnixLocal's blocking write filled the terminal's buffer and hung the whole event
        # loop for good (red team, session 25). The write gives up with an error, and the
        # loop keeps running meanwhile.
        import tracecell.agents_sandbox as tas
        s = await self.open()
        u = await s.pty_exec_start("sleep 20", tty=True, yield_time_s=0.5)
        ticks = [0]

        async def ticker() -> None:
            while True:
                await asyncio.sleep(0.05)
                ticks[0] += 1

        t = asyncio.ensure_future(ticker())
        try:
            with mock.patch.object(tas, "_STDIN_WRITE_TIMEOUT", 1.0, create=True):
                with self.assertRaisesRegex(RuntimeError, "did not read its input"):
                    await asyncio.wait_for(s.pty_write_stdin(session_id=u.process_id or 0, chars=("x" * 99 + "\n") * 3000,
                                                             yield_time_s=0.5), 20)
        finally:
            t.cancel()
        self.assertGreater(ticks[0], 10, "the event loop stood still during the write")

    async def test_delete_removes_locked_directories(self) -> None:
        # A command that chmod 000'd directories of its workspace kept UnixLocal's removal
        # from deleting it, silently (red team). The client unlocks them and removes all.
        from tracecell.agents_sandbox import _unlock_tree
        sess = await self.client.create()
        await sess.start()
        root = str(sess.state.manifest.root)
        r = await sess.exec("mkdir -p a/b/c && echo x > a/b/c/f && chmod 000 a/b a && echo ok", shell=True)
        self.assertEqual(r.stdout, b"ok\n", r.stderr)
        await sess.aclose()
        _unlock_tree(root)  # what delete does first; visible as modes even to root
        self.assertEqual(os.stat(os.path.join(root, "a")).st_mode & 0o777, 0o700)
        self.assertEqual(os.stat(os.path.join(root, "a", "b")).st_mode & 0o777, 0o700)
        os.chmod(os.path.join(root, "a", "b"), 0)
        os.chmod(os.path.join(root, "a"), 0)
        await self.client.delete(sess)
        self.assertFalse(os.path.exists(root))

    async def test_snapshot_of_a_deep_tree_fails_cleanly(self) -> None:
        # A command made a chain of directories deeper than Python's recursion limit,
        # and the snapshot raised a bare RecursionError, holding a descriptor per level.
        s = await self.open()
        os.makedirs(os.path.join(self.ws, *(["d"] * 300)))
        from agents.sandbox.errors import WorkspaceArchiveReadError
        with self.assertRaisesRegex(WorkspaceArchiveReadError, ""):
            await s.persist_workspace()

    async def test_grants_resolved_once_and_kept_apart(self) -> None:
        rd = self.client._report_dir  # type: ignore[attr-defined]
        a = await self.open()
        # A workspace or grant inside the report directory (another session's) is refused:
        # tracecell would carve it out of the denied directory (red-team round 3).
        with self.assertRaisesRegex(ValueError, "report directory .* overlap"):
            await self.client.create(manifest=Manifest(root=tmpdir(self, "sbx-wsb-"),
                                                       extra_path_grants=(SandboxPathGrant(path=a._inner.report_dir),)))  # type: ignore[attr-defined]
        with self.assertRaisesRegex(ValueError, "report directory .* overlap"):
            await self.client.create(manifest=Manifest(root=os.path.join(rd, "ws")))
        # A grant through a symlink in the workspace: a command could retarget it.
        target = tmpdir(self, "sbx-target-")
        os.symlink(target, os.path.join(self.ws, "out"))
        with self.assertRaisesRegex(ValueError, "lies in %s, which the commands can change" % self.ws):
            await self.client.create(manifest=Manifest(root=self.ws, extra_path_grants=(SandboxPathGrant(path=os.path.join(self.ws, "out")),)))
        # A grant resolved when the session is made: a symlink swapped afterwards on the
        # path of the grant (here the application's own) does not move it.
        outer = tmpdir(self, "sbx-outer-")
        real1, real2 = tmpdir(self, "sbx-real1-"), tmpdir(self, "sbx-real2-")
        link = os.path.join(outer, "g")
        os.symlink(real1, link)
        s = await self.client.create(manifest=Manifest(root=tmpdir(self, "sbx-wsd-"), extra_path_grants=(SandboxPathGrant(path=link),)))
        async with s:
            os.unlink(link)
            os.symlink(real2, link)
            r = await s.exec("echo x > %s/f; echo y > %s/f" % (real1, real2))
            self.assertTrue(os.path.exists(os.path.join(real1, "f")))
            self.assertFalse(os.path.exists(os.path.join(real2, "f")), r.stderr)
        # Relative paths in the options are the application's, not the workspace's.
        secret = os.path.join(self.outside, "secret.txt")
        with open(secret, "w") as f:
            f.write("s3cret\n")
        cwd = os.getcwd()
        os.chdir(self.outside)
        try:
            s2 = await self.client.create(manifest=Manifest(root=tmpdir(self, "sbx-wse-")),
                                          options=TracecellSandboxClientOptions(deny_read=("secret.txt",)))
        finally:
            os.chdir(cwd)
        async with s2:
            r = await s2.exec("cat %s" % secret)
            self.assertNotIn(b"s3cret", r.stdout)
        # A session resumed on a client with another report directory keeps the first one
        # denied too.
        payload = json.loads(json.dumps(self.client.serialize_session_state(a.state)))
        client2 = TracecellSandboxClient(tracecell=BIN, report_dir=tmpdir(self, "sbx-reports2-"))
        s3 = await client2.resume(client2.deserialize_session_state(payload))
        async with s3:
            r = await s3.exec("ls %s; echo end" % rd)
            self.assertIn(("tracecell: read %s blocked" % rd).encode(), r.stderr)

    async def test_policy_file_empty_allow_exec_and_home(self) -> None:
        # "allow_exec: []" in the policy file runs nothing besides the shell the SDK starts
        # (it came back as the default, every program in /usr/bin); "~" in the options'
        # allow_exec is the application's home, not the workspace.
        pol = os.path.join(self.outside, "none.yaml")
        sh = os.path.realpath(shutil.which("sh") or "/bin/sh")
        with open(pol, "w") as f:
            f.write("allow_exec: []\n")
        client = TracecellSandboxClient(tracecell=BIN, policy_file=pol, report_dir=tmpdir(self, "sbx-reports-"))
        s = await client.create(manifest=Manifest(root=self.ws))
        async with s:
            r = await s.exec("id")
            self.assertEqual(r.exit_code, 126, r.stdout)
        home = os.path.expanduser("~")
        s2 = await self.client.create(manifest=Manifest(root=tmpdir(self, "sbx-ws2-")),
                                      options=TracecellSandboxClientOptions(allow_exec=(sh, "~/no-such-tool")))
        async with s2:
            r = await s2.exec("true")
            self.assertIn(("--allow-exec %s/no-such-tool" % home).encode(), r.stderr)

    async def test_allow_exec_name_not_from_workspace(self) -> None:
        # A manifest PATH with a workspace directory first: an allow_exec name is the
        # system's program, not what the model leaves in the workspace under that name.
        venv = os.path.join(self.ws, ".venv", "bin")
        s = await self.open(TracecellSandboxClientOptions(allow_exec=("sh", "dash", "bash", "python3", "cp", "chmod", "mkdir")),
                            environment={"value": {"PATH": venv + ":/usr/bin:/bin"}})
        r = await s.exec("mkdir -p %s && cp /usr/bin/id %s/python3 && chmod +x %s/python3" % (venv, venv, venv))
        self.assertEqual(r.exit_code, 0, r.stderr)
        r = await s.exec("python3 < /dev/null; echo rc=$?")
        # The shell's exec of the workspace's file is refused; it goes on to the system's.
        self.assertIn(b"tracecell: running .venv/bin/python3 blocked", r.stderr)
        self.assertNotIn(b"uid=", r.stdout)


class LatencyTest(unittest.IsolatedAsyncioTestCase):
    """Median wall time of one session.exec("true"), tracecell vs UnixLocal (printed)."""

    async def test_exec_latency(self) -> None:
        n = int(os.environ.get("TRACECELL_LATENCY_RUNS", "15"))
        medians: Dict[str, float] = {}
        for name, client, options in (("unix_local", UnixLocalSandboxClient(), None),
                                      ("tracecell", TracecellSandboxClient(tracecell=BIN, report_dir=tmpdir(self, "sbx-reports-")), TracecellSandboxClientOptions())):
            s = await client.create(manifest=Manifest(root=tmpdir(self, "sbx-lat-")), options=options)
            async with s:
                await s.exec("true")
                times = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    r = await s.exec("true")
                    times.append(time.perf_counter() - t0)
                    self.assertEqual(r.exit_code, 0)
            medians[name] = statistics.median(times)
        sys.stderr.write("\nexec latency, median of %d: unix_local %.1f ms, tracecell %.1f ms\n"
                         % (n, medians["unix_local"] * 1e3, medians["tracecell"] * 1e3))
        # A bound that catches a hang or a per-exec rebuild, not a benchmark.
        self.assertLess(medians["tracecell"], 2.0)


if __name__ == "__main__":
    unittest.main()


class ReportMemoryTest(unittest.TestCase):
    def test_kept_reports_are_bounded(self) -> None:
        # The application hosts every session: each command's report was kept whole for the
        # session's life, +44 MB a command whose denials named long paths (red team, round 49).
        from tracecell import agents_sandbox as sa
        s = sa.TracecellSandboxSession.__new__(sa.TracecellSandboxSession)
        s._reports, s._report_sizes = [], []
        size = 20 << 20
        for i in range(10):
            s._keep_report(sa.CommandReport(command=["c%d" % i], path="r%d.json" % i, exit_code=0, denials=[]), size)
        kept = [r.command[0] for r in s.reports]
        self.assertEqual(kept, ["c7", "c8", "c9"])  # the latest, within 64 MiB
        self.assertLessEqual(sum(s._report_sizes), sa._MAX_KEPT_REPORT_BYTES)
        # One report larger than the budget is still kept (the latest is never dropped).
        s._keep_report(sa.CommandReport(command=["big"], path="big.json", exit_code=0, denials=[]), 100 << 20)
        self.assertEqual([r.command[0] for r in s.reports], ["big"])
