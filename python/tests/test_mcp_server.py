"""`tracecell mcp` against the real `mcp` client from PyPI (the one vLLM uses).

Starts $TRACECELL_BIN mcp on a free loopback port with a temporary state
directory, talks to it over SSE (what `vllm serve --tool-server` connects to,
with the x-session-id header vLLM sends) and over Streamable HTTP, and stops
it with SIGTERM. Ground truth comes from the file system and /proc, not from
what the server says.
"""
import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
from typing import Any, Dict, List, Optional

import httpx2
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from tests._server import alive, descendants

CALL_TIMEOUT = 60.0  # seconds for one whole scenario; a hang fails instead of blocking the suite

PNG_CODE = r"""
import os, struct, zlib
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
raw = b''.join(b'\x00' + b'\x00\x80\xff' * 3 for _ in range(3))
png = (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 3, 3, 8, 2, 0, 0, 0))
       + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
os.makedirs('outputs', exist_ok=True)
open('outputs/blue.png', 'wb').write(png)
"""


class MCPServerTest(unittest.TestCase):
    proc: "subprocess.Popen[bytes]"
    base: str
    state: str
    url: str
    log_path: str

    @classmethod
    def setUpClass(cls) -> None:
        binary = os.environ.get("TRACECELL_BIN", "")
        if not os.access(binary, os.X_OK):
            raise AssertionError("TRACECELL_BIN=%r is not an executable: run the tests through `make python-test`" % binary)
        cls.base = tempfile.mkdtemp(prefix="tc-mcp-")
        cls.state = os.path.join(cls.base, "state")
        policy = os.path.join(cls.base, "policy.yaml")
        with open(policy, "w") as f:
            f.write("net: deny\nmemory: 2G\n")
        cls.log_path = os.path.join(cls.base, "server.log")
        log = open(cls.log_path, "wb")
        # Port 0: the kernel picks a free port; the server logs the address.
        cls.proc = subprocess.Popen(
            [binary, "mcp", "--policy", policy, "--listen", "127.0.0.1:0", "--state-dir", cls.state,
             "--pool-size", "1", "--exec-timeout", "30s", "--log-format", "json"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        addr = None
        deadline = time.monotonic() + 30
        while addr is None:
            if cls.proc.poll() is not None:
                raise AssertionError("tracecell mcp exited %s: %s" % (cls.proc.returncode, cls._log()))
            if time.monotonic() > deadline:
                cls.proc.kill()
                raise AssertionError("tracecell mcp did not log its address within 30s: %s" % cls._log())
            for line in cls._log().splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("message") == "tracecell mcp: listening":
                    addr = rec["listen"]
            time.sleep(0.02)
        cls.url = "http://" + addr

    @classmethod
    def _log(cls) -> str:
        with open(cls.log_path, errors="replace") as f:
            return f.read()

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.proc.poll() is None:
            cls.proc.kill()
            cls.proc.wait()
        shutil.rmtree(cls.base, ignore_errors=True)

    def run_async(self, coro: Any) -> Any:
        return asyncio.run(asyncio.wait_for(coro, CALL_TIMEOUT))

    def host_file(self, name: str) -> str:
        """A file on the host, outside every sandbox."""
        d = os.path.join(self.base, "host")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, name)
        with open(p, "w") as f:
            f.write("a,b\n1,2\n")
        return p

    async def scenario(self, session: ClientSession, transport: str) -> None:
        """What every transport must do: tools, state, a blocked write, an image, cleanup."""
        init = await session.initialize()
        self.assertEqual(init.server_info.name, "python")
        self.assertIn("stateful", init.instructions or "")
        self.assertIn(os.path.join(os.path.realpath(self.state), "sbx-*"), init.instructions or "")
        self.assertIn("at most 30 seconds", init.instructions or "")
        self.assertIn("internet is not reachable", init.instructions or "")

        tools = {t.name: t for t in (await session.list_tools()).tools}
        self.assertEqual(set(tools), {"python", "cleanup_session"})
        self.assertEqual(list(tools["python"].input_schema["properties"]), ["code"])
        self.assertEqual(tools["python"].input_schema.get("required"), ["code"])
        # vLLM >= 0.30 leaves a tool out of GPT-OSS's prompt when tool.meta has
        # include_in_prompt false (vllm/entrypoints/mcp/tool_server.py); the
        # mcp 2.x client keeps _meta but drops the unknown annotation key.
        for name, tool in tools.items():
            self.assertEqual((tool.meta or {}).get("include_in_prompt"), False, "%s: meta %r" % (name, tool.meta))

        async def py(code: str) -> Any:
            res = await session.call_tool("python", {"code": code})
            self.assertFalse(res.is_error, res.content[0].text)
            self.assertEqual(res.content[0].type, "text")
            return res

        first = (await py("x = 41")).content[0].text
        m = re.match(r"\[new session: working directory (\S+);", first)
        self.assertIsNotNone(m, first)
        assert m is not None
        sandbox = m.group(1)
        self.assertTrue(os.path.isdir(sandbox), sandbox)
        self.assertTrue(sandbox.startswith(os.path.realpath(self.state) + "/sbx-"), sandbox)

        second = (await py("x + 1")).content[0].text
        self.assertIn("[result]\n42\n", second)

        fenced = (await py("```python\nprint(x * 2)\n```")).content[0].text
        self.assertIn("[stdout]\n82\n", fenced)

        host = self.host_file("data-%s.csv" % transport)
        before = os.stat(host)
        blocked = (await py("open(%r, 'w').write('changed')" % host)).content[0].text
        self.assertIn("[blocked operations]", blocked)
        self.assertIn("write to %s blocked: outside the sandbox" % host, blocked)
        self.assertIn("files you can change live in %s" % sandbox, blocked)
        self.assertIn("PermissionError", blocked)
        with open(host) as f:
            self.assertEqual(f.read(), "a,b\n1,2\n")
        self.assertEqual(os.stat(host).st_mtime_ns, before.st_mtime_ns)

        img = await py(PNG_CODE)
        self.assertIn("outputs/blue.png (created, image/png", img.content[0].text)
        self.assertEqual(len(img.content), 2, img.content[0].text)
        self.assertEqual(img.content[1].type, "image")
        self.assertEqual(img.content[1].mime_type, "image/png")
        with open(os.path.join(sandbox, "outputs", "blue.png"), "rb") as f:
            self.assertEqual(base64.b64decode(img.content[1].data), f.read())

        done = await session.call_tool("cleanup_session", {})
        self.assertIn("ended", done.content[0].text)
        self.assertFalse(os.path.exists(sandbox), "the sandbox is left after cleanup_session")
        again = (await py("x")).content[0].text
        self.assertIn("[new session", again)
        self.assertIn("NameError", again)
        await session.call_tool("cleanup_session", {})

    def test_1_sse_with_vllm_headers(self) -> None:
        async def go() -> None:
            # vLLM's MCPToolServer.new_session: sse_client(url=".../sse", headers={"x-session-id": request_id}).
            async with sse_client(url=self.url + "/sse", headers={"x-session-id": "resp_test_sse"}) as streams:
                async with ClientSession(*streams) as session:
                    await self.scenario(session, "sse")

        self.run_async(go())

    def test_2_streamable_http(self) -> None:
        async def go() -> None:
            async with httpx2.AsyncClient() as hc:
                async with streamable_http_client(self.url + "/mcp", http_client=hc) as streams:
                    async with ClientSession(streams[0], streams[1]) as session:
                        await self.scenario(session, "streamable")

        self.run_async(go())

    def test_3_session_header_outlives_connections(self) -> None:
        async def call(headers: Dict[str, str], code: Optional[str], cleanup: Optional[Dict[str, str]] = None) -> str:
            async with sse_client(url=self.url + "/sse", headers=headers) as streams:
                async with ClientSession(*streams) as session:
                    await session.initialize()
                    if cleanup is not None:
                        res = await session.call_tool("cleanup_session", cleanup)
                    else:
                        res = await session.call_tool("python", {"code": code})
                    return str(res.content[0].text)

        async def go() -> None:
            pinned = {"x-session-id": "resp_a", "X-Tracecell-Session": "project-1"}
            await call(pinned, "total = 10")
            # vLLM's end-of-request cleanup keeps a session named by X-Tracecell-Session...
            self.assertIn("kept", await call(pinned, None, {}))
            # ...so the next request (another request id) still has its state.
            nxt = {"x-session-id": "resp_b", "X-Tracecell-Session": "project-1"}
            self.assertIn("[result]\n15\n", await call(nxt, "total + 5"))
            # Another request id without the header is another session.
            self.assertIn("NameError", await call({"x-session-id": "resp_c"}, "total"))
            self.assertIn("ended", await call(nxt, None, {"session_id": "project-1"}))
            self.assertIn("ended", await call({"x-session-id": "resp_c"}, None, {}))

        self.run_async(go())

    def test_4_sigterm_leaves_no_process(self) -> None:
        async def warm() -> None:
            async with sse_client(url=self.url + "/sse", headers={"x-session-id": "resp_last"}) as streams:
                async with ClientSession(*streams) as session:
                    await session.initialize()
                    res = await session.call_tool("python", {"code": "import os; os.getpid()"})
                    self.assertIn("[result]", res.content[0].text)

        self.run_async(warm())  # a live session and a pool worker at SIGTERM
        below = sorted(descendants(self.proc.pid))
        self.assertGreaterEqual(len(below), 2, "expected worker processes below the server")
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.fail("tracecell mcp did not exit within 30s of SIGTERM: %s" % self._log())
        self.assertEqual(code, 0, self._log())
        deadline = time.monotonic() + 10  # Pdeathsig and EXITKILL are asynchronous
        left = [p for p in below if alive(p)]
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [p for p in below if alive(p)]
        self.assertEqual(left, [], "processes left after SIGTERM")
        self.assertEqual([d for d in os.listdir(self.state) if d.startswith("sbx-")], [], "sandboxes left after SIGTERM")
        self.assertIn('"session_from":"X-Session-Id"', self._log())


if __name__ == "__main__":
    unittest.main()
