"""tracecell.Client and tracecell.AsyncClient against a real `tracecell serve`."""
from __future__ import annotations

import asyncio
import os
import time
import re
import shutil
import tempfile
import threading
import unittest
from typing import List, Optional
from unittest import mock

import tracecell
from tracecell import errors
from tracecell._http import parse_url

from ._server import Server

SRV: Optional[Server] = None
HOST_DIR = ""
SECRET_DIR = ""

# Code that waits (up to 60 s) for the file "go" to appear in its sandbox: it keeps a
# session busy until the test copies that file in (copying is allowed while busy).
WAIT_FOR_GO = (
    "import os, time\n"
    "for _ in range(6000):\n"
    "    if os.path.exists('go'): break\n"
    "    time.sleep(0.01)\n"
    "else:\n"
    "    raise RuntimeError('go never came')\n"
    "'released'"
)


def setUpModule() -> None:
    global SRV, HOST_DIR, SECRET_DIR
    HOST_DIR = tempfile.mkdtemp(prefix="tracecell-host-")
    SECRET_DIR = os.path.join(HOST_DIR, "secret")
    os.mkdir(SECRET_DIR)
    with open(os.path.join(SECRET_DIR, "key"), "w") as f:
        f.write("do not read\n")
    with open(os.path.join(HOST_DIR, "data.csv"), "w") as f:
        f.write("a,b\n1,2\n")
    with open(os.path.join(HOST_DIR, "go"), "w") as f:
        f.write("go\n")
    SRV = Server.start("--deny-read", SECRET_DIR)


def tearDownModule() -> None:
    shutil.rmtree(HOST_DIR, ignore_errors=True)
    assert SRV is not None
    problem = SRV.stop()
    if problem:
        raise AssertionError(problem)


def srv() -> Server:
    assert SRV is not None
    return SRV


class URLTest(unittest.TestCase):
    def test_forms(self) -> None:
        cases = [
            ("unix:/run/t.sock", "/run/t.sock", "", 0),
            ("unix:///run/t.sock", "/run/t.sock", "", 0),
            ("http://127.0.0.1:8080", "", "127.0.0.1", 8080),
            ("127.0.0.1:9", "", "127.0.0.1", 9),
            ("http://[::1]:7000/", "", "::1", 7000),
        ]
        for url, path, host, port in cases:
            with self.subTest(url=url):
                ep = parse_url(url)
                self.assertEqual((ep.unix_path, ep.host, ep.port), (path, host, port))

    def test_rejected(self) -> None:
        for url in ("https://127.0.0.1:1", "unix:", "ftp://x", "http://127.0.0.1:1/api"):
            with self.subTest(url=url):
                with self.assertRaises(ValueError):
                    parse_url(url)

    def test_default_is_the_servers_default_socket(self) -> None:
        with mock.patch.dict(os.environ, {"XDG_STATE_HOME": "/xdg"}, clear=False):
            os.environ.pop("TRACECELL_URL", None)
            self.assertEqual(tracecell.Client().url, "unix:/xdg/tracecell/tracecell.sock")
        env = {k: v for k, v in os.environ.items() if k not in ("XDG_STATE_HOME", "TRACECELL_URL")}
        with mock.patch.dict(os.environ, env, clear=True):
            self.assertEqual(tracecell.Client().url, "unix:/var/tmp/tracecell-%d/tracecell.sock" % os.getuid())
        with mock.patch.dict(os.environ, {"TRACECELL_URL": "http://127.0.0.1:4567"}):
            self.assertEqual(tracecell.Client().url, "127.0.0.1:4567")


class ErrorCodesTest(unittest.TestCase):
    def test_every_code_of_the_api_is_mapped(self) -> None:
        spec = os.path.join(os.path.dirname(__file__), "..", "..", "api", "openapi.yaml")
        with open(spec) as f:
            text = f.read()
        section = text[text.index("\n  responses:\n"):text.index("\n  schemas:\n")]
        section += "\n".join(line for line in text.splitlines() if "(no_space)" in line)
        codes = set()
        for line in section.splitlines():
            if "description:" not in line:
                continue
            for group in re.findall(r"\(([^()]*)\)", line):
                for tok in re.split(r"[,;]", group):
                    tok = tok.strip()
                    if re.fullmatch(r"[a-z]+(_[a-z]+)*", tok):
                        codes.add(tok)
        self.assertGreater(len(codes), 25, codes)
        self.assertEqual(sorted(codes - set(errors.ERROR_CODES)), [])
        self.assertEqual(sorted(set(errors.ERROR_CODES) - codes), [])

    def test_codes_are_the_api_enum(self) -> None:
        # components.schemas.Error's code enum, which a Go test keeps equal to server.ErrorCodes.
        spec = os.path.join(os.path.dirname(__file__), "..", "..", "api", "openapi.yaml")
        with open(spec) as f:
            text = f.read()
        error = text[text.index("\n    Error:\n"):]
        lines = error[error.index("              enum:\n"):].splitlines()[1:]
        enum: List[str] = []
        for line in lines:
            m = re.fullmatch(r" {16}- ([a-z_]+)", line)
            if m is None:
                break
            enum.append(m.group(1))
        self.assertGreater(len(enum), 40)
        self.assertEqual(len(enum), len(set(enum)))
        self.assertEqual(sorted(enum), sorted(errors.ERROR_CODES))

    def test_mapping(self) -> None:
        cases = [
            (404, "session_not_found", errors.SessionNotFound),
            (409, "session_busy", errors.SessionBusy),
            (409, "session_exists", errors.SessionExists),
            (401, "unauthorized", errors.AuthError),
            (429, "too_many_sessions", errors.LimitExceeded),
            (503, "shutting_down", errors.ServerUnavailable),
            (403, "read_denied", errors.AccessDenied),
            (418, "new_code", errors.TracecellError),
            (409, "new_conflict", errors.Conflict),
        ]
        for status, code, cls in cases:
            with self.subTest(code=code):
                e = errors.error_for(status, code, "m", 2.0)
                self.assertIs(type(e), cls)
                self.assertEqual((e.status, e.code, e.retry_after, str(e)), (status, code, 2.0, "m"))


class SyncClientTest(unittest.TestCase):
    c: tracecell.Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.c = tracecell.Client(srv().url)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.c.close()

    def new_session(self) -> tracecell.SessionInfo:
        s = self.c.create_session()
        self.addCleanup(self._delete, s.id)
        srv().note_processes()
        return s

    def _delete(self, sid: str) -> None:
        try:
            self.c.delete_session(sid)
        except tracecell.SessionNotFound:
            pass

    def test_archive_keepalive_and_misses(self) -> None:
        # Files outlive a session: its sandbox as a tar, unpacked into another session.
        a = self.new_session()
        self.assertIsNone(self.c.execute(a.id, "import os; os.makedirs('d', exist_ok=True); open('d/f.txt', 'w').write('kept')").error)
        tar = self.c.archive(a.id)
        b = self.new_session()
        rep = self.c.unpack_archive(b.id, tar)
        self.assertEqual(rep["files"], 1, rep)
        self.assertGreaterEqual(rep["directories"], 1, rep)  # d, and what the sandbox holds from the start
        self.assertEqual(self.c.execute(b.id, "open('d/f.txt').read()").result, "'kept'")
        # keepalive moves expires_at on; a session's own idle timeout shows in it.
        s = self.c.create_session("ka-1", idle_timeout=5)
        self.addCleanup(self._delete, s.id)
        self.assertIsNotNone(s.expires_at)
        time.sleep(0.05)
        self.assertGreater(self.c.keepalive("ka-1").expires_at, s.expires_at)
        # A deleted session is answered as such, naming the cell.
        self.c.delete_session("ka-1")
        with self.assertRaises(tracecell.SessionNotFound) as cm:
            self.c.get_session("ka-1")
        self.assertEqual(cm.exception.code, "session_deleted")
        self.assertIn('cell "%s"' % s.cell, str(cm.exception))

    def test_health_and_metrics(self) -> None:
        h = self.c.health()
        self.assertEqual(h.status, "ok")
        self.assertEqual(h.pool_size, 1)
        self.c.execute_oneshot("1")
        m = self.c.metrics()
        found = re.search(r'^tracecell_executions_total\{kind="oneshot"\} (\d+)', m, re.M)
        assert found is not None, m[:500]
        self.assertGreaterEqual(int(found.group(1)), 1)

    def test_session_lifecycle(self) -> None:
        s = self.c.create_session("life-1")
        self.addCleanup(self._delete, "life-1")
        self.assertEqual(s.id, "life-1")
        self.assertTrue(os.path.isdir(s.sandbox))
        self.assertIsNotNone(s.worker)
        self.assertIn("life-1", [x.id for x in self.c.list_sessions()])
        r = self.c.execute("life-1", "x = 41\nprint('hello')")
        self.assertEqual((r.stdout, r.result, r.error), ("hello\n", None, None))
        self.assertTrue(r.ok)
        r = self.c.execute("life-1", "x + 1")
        self.assertEqual(r.result, "42")
        self.assertEqual(self.c.get_session("life-1").executions, 2)
        r = self.c.execute("life-1", "1/0")
        assert r.error is not None
        self.assertEqual(r.error.name, "ZeroDivisionError")
        self.assertIn("division by zero", r.error.traceback)
        info = self.c.reset_session("life-1")
        self.assertEqual(info.restarts, 1)
        r = self.c.execute("life-1", "x")
        assert r.error is not None
        self.assertEqual(r.error.name, "NameError")
        self.c.delete_session("life-1")
        with self.assertRaises(tracecell.SessionNotFound):
            self.c.get_session("life-1")
        self.assertFalse(os.path.exists(s.sandbox))

    def test_generated_id_and_exists(self) -> None:
        s = self.new_session()
        # Generated ids carry the cell: "<cell>.s-<16 hex>" (a proxy routes by the prefix).
        self.assertRegex(s.id, r"^[A-Za-z0-9_-]{1,63}\.s-[0-9a-f]{16}$")
        self.assertEqual(s.id.split(".")[0], s.cell)
        with self.assertRaises(tracecell.SessionExists) as cm:
            self.c.create_session(s.id)
        self.assertEqual(cm.exception.status, 409)

    def test_invalid_id(self) -> None:
        with self.assertRaises(tracecell.InvalidRequest) as cm:
            self.c.create_session("bad id!")
        self.assertEqual(cm.exception.code, "invalid_id")

    def test_blocked_write_is_reported_and_host_unchanged(self) -> None:
        s = self.new_session()
        target = os.path.join(HOST_DIR, "data.csv")
        r = self.c.execute(s.id, "open(%r, 'a').write('x')" % target)
        assert r.error is not None
        self.assertEqual(r.error.name, "PermissionError")
        kinds = [(d.kind, d.rule, d.paths[0].resolved) for d in r.denials]
        self.assertIn(("write", "outside-writable-roots", target), kinds)
        with open(target) as f:
            self.assertEqual(f.read(), "a,b\n1,2\n")

    def test_copy_list_download(self) -> None:
        s = self.new_session()
        cr = self.c.copy_to_sandbox(s.id, os.path.join(HOST_DIR, "data.csv"), "in/data.csv")
        self.assertEqual((cr.destination, cr.files, cr.bytes), ("in/data.csv", 1, 8))
        self.assertEqual(cr.path, os.path.join(s.sandbox, "in", "data.csv"))
        fl = self.c.list_files(s.id)
        self.assertEqual(fl.sandbox, s.sandbox)
        entries = {f.path: f for f in fl}
        self.assertEqual(entries["in"].type, "dir")
        self.assertEqual((entries["in/data.csv"].type, entries["in/data.csv"].size), ("file", 8))
        self.assertEqual(self.c.download_file(s.id, "in/data.csv"), b"a,b\n1,2\n")
        self.assertEqual(self.c.download_file(s.id, cr.path), b"a,b\n1,2\n")  # absolute inside the sandbox
        r = self.c.execute(s.id, "open('in/data.csv').read().splitlines()[1]")
        self.assertEqual(r.result, "'1,2'")
        # default destination: the base name at the top
        self.assertEqual(self.c.copy_to_sandbox(s.id, os.path.join(HOST_DIR, "data.csv")).destination, "data.csv")

    def test_copy_and_download_errors(self) -> None:
        s = self.new_session()
        with self.assertRaises(tracecell.AccessDenied) as cm:
            self.c.copy_to_sandbox(s.id, os.path.join(SECRET_DIR, "key"))
        self.assertEqual(cm.exception.code, "read_denied")
        with self.assertRaises(tracecell.NotFound) as cm2:
            self.c.copy_to_sandbox(s.id, os.path.join(HOST_DIR, "missing"))
        self.assertEqual(cm2.exception.code, "source_not_found")
        with self.assertRaises(tracecell.InvalidRequest) as cm3:
            self.c.copy_to_sandbox(s.id, os.path.join(HOST_DIR, "data.csv"), "../escape.csv")
        self.assertEqual(cm3.exception.code, "path_outside_sandbox")
        with self.assertRaises(tracecell.NotFound) as cm4:
            self.c.download_file(s.id, "nothing.txt")
        self.assertEqual(cm4.exception.code, "file_not_found")
        self.assertNotIsInstance(cm4.exception, tracecell.SessionNotFound)

    def test_figure_artifact_downloads_as_png(self) -> None:
        s = self.new_session()
        r = self.c.execute(s.id, "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('plot.png')")
        self.assertIsNone(r.error)
        paths = {a.path: a for a in r.artifacts}
        self.assertIn("plot.png", paths)
        self.assertEqual(paths["plot.png"].mime, "image/png")
        data = self.c.download_file(s.id, "plot.png")
        self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(len(data), paths["plot.png"].size)

    def test_matplotlib_cache_is_not_among_the_sandbox_files(self) -> None:
        # matplotlib writes its font cache on first import; it is tracecell's
        # (MPLCONFIGDIR), not the code's: the code's own listing of its working
        # directory, the files API and the artifacts must show only what it made.
        s = self.new_session()
        r = self.c.execute(s.id, "import os\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('p.png')\n"
                                 "sorted(n for n in os.listdir('.') if n != '.tmp')")
        self.assertIsNone(r.error, r.error)
        self.assertEqual(r.result, "['p.png']")  # outputs/ is made after the code ran
        self.assertEqual(sorted(a.path for a in r.artifacts), ["outputs/figure-1-1.png", "p.png"])
        listed = [f.path for f in self.c.list_files(s.id).files if not f.path.startswith(".tmp")]
        self.assertEqual(sorted(listed), ["outputs", "outputs/figure-1-1.png", "p.png"])
        self.assertNotIn("matplotlib", r.stderr)  # no "created a temporary cache directory" warning
        # Ground truth on disk: matplotlib still has a cache (the sandbox's .tmp), no .config.
        self.assertFalse(os.path.exists(os.path.join(s.sandbox, ".config")), os.listdir(s.sandbox))
        cache = os.path.join(s.sandbox, ".tmp", "matplotlib")
        self.assertTrue(any(n.startswith("fontlist-") for n in os.listdir(cache)), os.listdir(cache))

    def test_download_capped(self) -> None:
        # The code can grow a file after its execution listed it (a sparse terabyte
        # named plot.png): a capped download refuses it without reading it, and the
        # client stays usable.
        s = self.new_session()
        r = self.c.execute(s.id, "open('plot.png', 'wb').write(b'x' * 100)\n"
                                 "open('big.png', 'wb').truncate(64 << 20)")
        self.assertIsNone(r.error)
        with self.assertRaises(tracecell.LimitExceeded):
            self.c.download_file(s.id, "big.png", max_bytes=1 << 20)
        self.assertEqual(self.c.download_file(s.id, "plot.png", max_bytes=100), b"x" * 100)
        with self.assertRaises(tracecell.NotFound):  # error answers are not capped away
            self.c.download_file(s.id, "nothing.png", max_bytes=1)

        async def run() -> None:
            async with tracecell.AsyncClient(srv().url) as ac:
                with self.assertRaises(tracecell.LimitExceeded):
                    await ac.download_file(s.id, "big.png", max_bytes=1 << 20)
                self.assertEqual(await ac.download_file(s.id, "plot.png", max_bytes=100), b"x" * 100)
        asyncio.run(run())

    def test_oneshot_keeps_nothing(self) -> None:
        r = self.c.execute_oneshot("y = 5\ny * 2")
        self.assertEqual(r.result, "10")
        r = self.c.execute_oneshot("y")
        assert r.error is not None
        self.assertEqual(r.error.name, "NameError")

    def test_timeout_is_passed(self) -> None:
        s = self.new_session()
        r = self.c.execute(s.id, "import time\nwhile True: time.sleep(0.01)", timeout=0.5)
        self.assertTrue(r.timed_out)
        self.assertFalse(r.ok)

    def test_unknown_session(self) -> None:
        calls = [
            lambda: self.c.execute("no-such", "1"),
            lambda: self.c.get_session("no-such"),
            lambda: self.c.delete_session("no-such"),
            lambda: self.c.reset_session("no-such"),
            lambda: self.c.list_files("no-such"),
            lambda: self.c.download_file("no-such", "x"),
            lambda: self.c.copy_to_sandbox("no-such", os.path.join(HOST_DIR, "data.csv")),
        ]
        for i, call in enumerate(calls):
            with self.subTest(i=i):
                with self.assertRaises(tracecell.SessionNotFound) as cm:
                    call()
                self.assertEqual((cm.exception.status, cm.exception.code), (404, "session_not_found"))
                self.assertIn("no-such", str(cm.exception))

    def test_busy_session_refuses_without_queueing(self) -> None:
        s = self.new_session()
        results: List[tracecell.ExecutionResult] = []
        t = threading.Thread(target=lambda: results.append(self.c.execute(s.id, WAIT_FOR_GO)))
        t.start()
        try:
            while not self.c.get_session(s.id).busy:
                pass
            with self.assertRaises(tracecell.SessionBusy) as cm:
                self.c.execute(s.id, "1")
            self.assertEqual(cm.exception.code, "session_busy")
            with self.assertRaises(tracecell.SessionBusy):
                self.c.reset_session(s.id)
            self.assertEqual([f.path for f in self.c.list_files(s.id) if f.path == "go"], [])
        finally:
            self.c.copy_to_sandbox(s.id, os.path.join(HOST_DIR, "go"))
            t.join()
        self.assertEqual(results[0].result, "'released'")

    def test_server_not_running(self) -> None:
        sock = os.path.join(srv().tmp, "nobody.sock")
        with self.assertRaises(tracecell.ServerUnavailable) as cm:
            tracecell.Client("unix:" + sock).health()
        msg = str(cm.exception)
        self.assertIn(sock, msg)
        self.assertIn("tracecell serve --listen unix:" + sock, msg)
        self.assertEqual(msg.count("\n"), 0)
        env = {k: v for k, v in os.environ.items() if k != "TRACECELL_URL"}
        env["XDG_STATE_HOME"] = srv().tmp
        with mock.patch.dict(os.environ, env, clear=True):
            with self.assertRaises(tracecell.ServerUnavailable) as cm:
                tracecell.Client().create_session()
        self.assertIn(os.path.join(srv().tmp, "tracecell", "tracecell.sock"), str(cm.exception))
        self.assertIn("start it with `tracecell serve`", str(cm.exception))

    def test_url_from_environment(self) -> None:
        with mock.patch.dict(os.environ, {"TRACECELL_URL": srv().url}):
            with tracecell.Client() as c:
                self.assertEqual(c.health().status, "ok")

    def test_connections_are_reused(self) -> None:
        with tracecell.Client(srv().url) as c:
            for _ in range(5):
                c.health()
            self.assertEqual(len(c._t._idle), 1)

    def test_threads_share_a_client(self) -> None:
        sessions = [self.new_session() for _ in range(2)]
        out: List[Optional[str]] = [None, None]

        def run(i: int) -> None:
            self.c.execute(sessions[i].id, "v = %d" % i)
            out[i] = self.c.execute(sessions[i].id, "v * 10").result

        ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(out, ["0", "10"])


class TokenTest(unittest.TestCase):
    def test_bearer_token(self) -> None:
        tok_file = os.path.join(srv().tmp, "token")
        with open(tok_file, "w") as f:
            f.write("s3cret-token\n")
        s2 = Server.start("--token-file", tok_file)
        try:
            with tracecell.Client(s2.url) as anon:
                self.assertEqual(anon.health().status, "ok")  # /healthz needs no token
                with self.assertRaises(tracecell.AuthError) as cm:
                    anon.list_sessions()
                self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))
            with tracecell.Client(s2.url, token="wrong") as bad:
                with self.assertRaises(tracecell.AuthError):
                    bad.execute_oneshot("1")
            with mock.patch.dict(os.environ, {"TRACECELL_TOKEN": "s3cret-token"}):
                with tracecell.Client(s2.url) as good:
                    self.assertEqual(good.execute_oneshot("6 * 7").result, "42")
        finally:
            problem = s2.stop()
        self.assertIsNone(problem)


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.c = tracecell.AsyncClient(srv().url)
        self.created: List[str] = []

    async def asyncTearDown(self) -> None:
        for sid in self.created:
            try:
                await self.c.delete_session(sid)
            except tracecell.SessionNotFound:
                pass
        await self.c.aclose()

    async def new_session(self, sid: Optional[str] = None) -> tracecell.SessionInfo:
        s = await self.c.create_session(sid)
        self.created.append(s.id)
        srv().note_processes()
        return s

    async def test_every_endpoint(self) -> None:
        self.assertEqual((await self.c.health()).status, "ok")
        self.assertIn("tracecell_sessions_active", await self.c.metrics())
        s = await self.new_session("async-1")
        self.assertEqual(s.id, "async-1")
        self.assertIn("async-1", [x.id for x in await self.c.list_sessions()])
        self.assertIsNone((await self.c.execute("async-1", "x = 41")).error)
        self.assertEqual((await self.c.execute("async-1", "print(x + 1)")).stdout, "42\n")
        self.assertEqual((await self.c.get_session("async-1")).executions, 2)
        cr = await self.c.copy_to_sandbox("async-1", os.path.join(HOST_DIR, "data.csv"), "d.csv")
        self.assertEqual(cr.destination, "d.csv")
        self.assertIn("d.csv", (await self.c.list_files("async-1")).paths())
        self.assertEqual(await self.c.download_file("async-1", "d.csv"), b"a,b\n1,2\n")
        await self.c.reset_session("async-1", clear_sandbox=True)
        self.assertNotIn("d.csv", (await self.c.list_files("async-1")).paths())
        r = await self.c.execute("async-1", "x")
        assert r.error is not None
        self.assertEqual(r.error.name, "NameError")
        self.assertEqual((await self.c.execute_oneshot("2 ** 10")).result, "1024")
        await self.c.delete_session("async-1")
        with self.assertRaises(tracecell.SessionNotFound):
            await self.c.execute("async-1", "1")

    async def test_busy_while_the_loop_stays_free(self) -> None:
        # The waiting execution is in flight on this loop while the other requests run:
        # a client that blocked the loop would never get to copy "go" (and the code would fail).
        s = await self.new_session()
        task = asyncio.ensure_future(self.c.execute(s.id, WAIT_FOR_GO))
        while not (await self.c.get_session(s.id)).busy:
            await asyncio.sleep(0)
        with self.assertRaises(tracecell.SessionBusy):
            await self.c.execute(s.id, "1")
        self.assertFalse(task.done())
        await self.c.copy_to_sandbox(s.id, os.path.join(HOST_DIR, "go"))
        r = await task
        self.assertEqual((r.result, r.error), ("'released'", None))

    async def test_parallel_sessions(self) -> None:
        a, b = await self.new_session(), await self.new_session()
        ra, rb = await asyncio.gather(self.c.execute(a.id, "import os; os.getpid()"), self.c.execute(b.id, "import os; os.getpid()"))
        self.assertIsNotNone(ra.result)
        self.assertNotEqual(ra.result, rb.result)

    async def test_cancel_interrupts_the_execution(self) -> None:
        s = await self.new_session()
        task = asyncio.ensure_future(self.c.execute(s.id, "import time\nwhile True: time.sleep(0.01)"))
        while not (await self.c.get_session(s.id)).busy:
            await asyncio.sleep(0)
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        # The server sees the disconnect and interrupts the code; the session becomes free again.
        while (await self.c.get_session(s.id)).busy:
            await asyncio.sleep(0.01)
        self.assertEqual((await self.c.execute(s.id, "'still here'")).result, "'still here'")

    async def test_errors(self) -> None:
        with self.assertRaises(tracecell.SessionNotFound):
            await self.c.list_files("no-such")
        with self.assertRaises(tracecell.AccessDenied):
            s = await self.new_session()
            await self.c.copy_to_sandbox(s.id, os.path.join(SECRET_DIR, "key"))
        sock = os.path.join(srv().tmp, "nobody.sock")
        async with tracecell.AsyncClient("unix:" + sock) as down:
            with self.assertRaises(tracecell.ServerUnavailable) as cm:
                await down.execute_oneshot("1")
        self.assertIn("tracecell serve --listen unix:" + sock, str(cm.exception))

    async def test_connections_are_reused(self) -> None:
        for _ in range(5):
            await self.c.health()
        self.assertEqual(len(self.c._t._idle), 1)


if __name__ == "__main__":
    unittest.main()
