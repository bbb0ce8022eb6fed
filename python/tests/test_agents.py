"""End to end: the real openai-agents Runner with OpenAIChatCompletionsModel, a fake
vLLM-style Chat Completions server scripting the model's tool calls, and tracecell.agents
running them through a real `tracecell serve`.

What the model would have seen is asserted from what the fake server RECEIVED (the tool
messages of later requests); the ground truth (host file unchanged, PNG in the sandbox)
is checked on disk.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

from agents import Agent, OpenAIChatCompletionsModel, Runner, ToolOutputImage, ToolOutputText, set_tracing_disabled
from agents.exceptions import UserError
from openai import AsyncOpenAI

import tracecell
from tracecell import agents as tca

from ._server import Server

SRV: Optional[Server] = None

# One scripted model turn: a list of (tool name, arguments) calls, or a final text answer.
Turn = Any


class FakeChatCompletions:
    """A stdlib OpenAI-compatible server answering POST /v1/chat/completions the way vLLM does
    (non-streaming, tool calls in message.tool_calls with JSON-string arguments)."""

    def __init__(self, turns: List[Turn], model: str = "Qwen/Qwen3-8B") -> None:
        self.turns = list(turns)
        self.model = model
        self.requests: List[Dict[str, Any]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self.send_error(404)
                    return
                with fake.lock:
                    req = json.loads(body)
                    fake.requests.append(req)
                    n = len(fake.requests)
                    turn = fake.turns.pop(0) if fake.turns else "(script exhausted)"
                out = json.dumps(fake.completion(n, turn)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return "http://127.0.0.1:%d/v1" % self.httpd.server_address[1]

    def completion(self, n: int, turn: Turn) -> Dict[str, Any]:
        message: Dict[str, Any] = {"role": "assistant", "content": None, "reasoning_content": None, "tool_calls": []}
        if isinstance(turn, str):
            message["content"] = turn
            finish = "stop"
        else:
            for i, (name, args) in enumerate(turn):
                message["tool_calls"].append({"id": "chatcmpl-tool-%d-%d" % (n, i), "type": "function",
                                              "function": {"name": name, "arguments": json.dumps(args)}})
            finish = "tool_calls"
        return {"id": "chatcmpl-%d" % n, "object": "chat.completion", "created": 1763900000, "model": self.model,
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish, "stop_reason": None}],
                "usage": {"prompt_tokens": 10, "total_tokens": 20, "completion_tokens": 10, "prompt_tokens_details": None},
                "prompt_logprobs": None}

    def __enter__(self) -> FakeChatCompletions:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def tool_messages(self) -> Dict[str, str]:
        """tool_call_id -> the tool message's text, over every request received."""
        out: Dict[str, str] = {}
        for req in self.requests:
            for m in req.get("messages", []):
                if m.get("role") == "tool":
                    c = m.get("content")
                    if isinstance(c, list):
                        c = "".join(part.get("text", "") for part in c if part.get("type") == "text")
                    out[m["tool_call_id"]] = c
        return out

    def results(self) -> List[Tuple[str, Dict[str, Any], str]]:
        """(tool name, arguments, what the model got back), in the order the model called them."""
        tm = self.tool_messages()
        seq: List[Tuple[str, Dict[str, Any], str]] = []
        last = self.requests[-1]["messages"]
        for m in last:
            for tc in m.get("tool_calls") or []:
                seq.append((tc["function"]["name"], json.loads(tc["function"]["arguments"]), tm.get(tc["id"], "<no tool message>")))
        return seq


def setUpModule() -> None:
    global SRV
    set_tracing_disabled(True)
    SRV = Server.start()


def tearDownModule() -> None:
    assert SRV is not None
    problem = SRV.stop()
    if problem:
        raise AssertionError(problem)


def agent_for(fake: FakeChatCompletions) -> Agent[Any]:
    client = AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
    return Agent(name="analyst", instructions="Use the tools to answer.", tools=tca.tracecell_tools(),
                 model=OpenAIChatCompletionsModel(model=fake.model, openai_client=client))


class EndToEndTest(unittest.IsolatedAsyncioTestCase):
    async def test_runner_through_tracecell(self) -> None:
        assert SRV is not None
        host_dir = tempfile.mkdtemp(prefix="tracecell-host-")
        self.addCleanup(shutil.rmtree, host_dir, True)
        host_file = os.path.join(host_dir, "notes.txt")
        with open(host_file, "w") as f:
            f.write("original\n")
        before = os.stat(host_file)
        plot = "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('plot.png')"
        turns: List[Turn] = [
            [("python", {"code": "x = 41"})],
            [("python", {"code": "print(x + 1)"})],
            [("python", {"code": "a = 1"}), ("python", {"code": "b = 2"})],  # parallel calls: one session, no busy error
            [("python", {"code": "open(%r, 'a').write('pwned')" % host_file})],
            [("python", {"code": "```python\n" + plot + "\n```"})],
            [("copy_to_sandbox", {"source": host_file, "destination": "data/notes.txt"})],
            [("python", {"code": "open('data/notes.txt', 'a').write('edited\\n')\nprint(open('data/notes.txt').read(), a + b)"})],
            [("list_sandbox_files", {})],
            [("python_oneshot", {"code": "x"})],
            [("copy_to_sandbox", {"source": os.path.join(host_dir, "missing.csv"), "destination": ""})],
            "x + 1 is 42; the plot is in plot.png.",
        ]
        with FakeChatCompletions(turns) as fake:
            async with tracecell.AsyncClient(SRV.url) as client:
                ctx = tca.TracecellContext(client=client)
                try:
                    result = await Runner.run(agent_for(fake), "Compute and plot.", context=ctx, max_turns=20)
                    SRV.note_processes()
                    sandbox = ctx.sandbox
                    assert sandbox is not None
                    sid = ctx.session_id
                    # Ground truth while the session lives: the PNG is in the sandbox.
                    with open(os.path.join(sandbox, "plot.png"), "rb") as f:
                        self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
                    with open(os.path.join(sandbox, "data", "notes.txt")) as f:
                        self.assertEqual(f.read(), "original\nedited\n")
                finally:
                    await ctx.aclose()
                with self.assertRaises(tracecell.SessionNotFound):
                    await client.get_session(sid or "")
        self.assertEqual(result.final_output, "x + 1 is 42; the plot is in plot.png.")
        self.assertFalse(os.path.exists(sandbox), "the context's session was deleted with its sandbox")
        self.assertEqual(len(fake.requests), len(turns))

        # The model never chooses the session: no tool has a session parameter.
        tools = {t["function"]["name"]: t["function"] for t in fake.requests[0]["tools"]}
        self.assertEqual(sorted(tools), ["copy_to_sandbox", "list_sandbox_files", "python", "python_oneshot"])
        self.assertEqual(list(tools["python"]["parameters"]["properties"]), ["code"])
        self.assertNotIn("session", json.dumps(tools["python"]["parameters"]))

        calls = fake.results()
        got = [c[2] for c in calls]
        self.assertEqual(len(calls), 11)
        self.assertEqual(got[0], "(no output)")
        self.assertEqual(got[1], "stdout: 42")  # state kept across two tool calls
        self.assertEqual(got[2:4], ["(no output)", "(no output)"])
        blocked = got[4]
        self.assertIn("PermissionError", blocked)
        self.assertIn("Blocked operations:\n- write to %s blocked: outside the sandbox; call copy_to_sandbox first, then write to notes.txt" % host_file, blocked)
        self.assertNotIn(SRV.state_dir, blocked)  # the policy (writable roots) is not shown
        plot_text = got[5]
        self.assertIn("Files (paths relative to the working directory):", plot_text)
        self.assertRegex(plot_text, r"(?m)^- plot\.png \(created, [\d.]+ KB\)$")
        self.assertIn("Copied %s (1 file) to data/notes.txt" % host_file, got[6])
        self.assertEqual(got[7].split("\n")[0], "stdout:")
        self.assertIn("original\nedited\n 3", got[7])
        self.assertIn("data/notes.txt  16 B", got[8])
        self.assertIn("\nplot.png  ", got[8])
        self.assertIn("NameError: name 'x' is not defined", got[9])  # one-shot: a fresh interpreter
        self.assertEqual(got[10], "cannot copy %s: it does not exist; check the path (absolute, or ~/...)" % os.path.join(host_dir, "missing.csv"))

        # Ground truth on the host: the blocked write changed nothing.
        with open(host_file) as f:
            self.assertEqual(f.read(), "original\n")
        after = os.stat(host_file)
        self.assertEqual((before.st_size, before.st_mtime_ns), (after.st_size, after.st_mtime_ns))

    async def test_context_is_required(self) -> None:
        with FakeChatCompletions([[("python", {"code": "1"})], "done"]) as fake:
            with self.assertRaises(UserError) as cm:
                await Runner.run(agent_for(fake), "go", max_turns=3)
        self.assertIn("TracecellContext", str(cm.exception))

    async def test_context_attribute_and_given_session_id(self) -> None:
        assert SRV is not None

        class AppContext:
            def __init__(self, tc: tca.TracecellContext) -> None:
                self.user = "u1"
                self.tracecell = tc

        async with tracecell.AsyncClient(SRV.url) as client:
            await client.create_session("app-sess")
            await client.execute("app-sess", "k = 'kept'")
            tc = tca.TracecellContext(client=client, session_id="app-sess")
            with FakeChatCompletions([[("python", {"code": "k"})], "ok"]) as fake:
                await Runner.run(agent_for(fake), "go", context=AppContext(tc), max_turns=3)
            await tc.aclose()
            # An existing session is used, and not deleted: this context did not create it.
            self.assertEqual((await client.get_session("app-sess")).id, "app-sess")
            await client.delete_session("app-sess")
        self.assertEqual(fake.results()[0][2], "result: 'kept'")

    async def test_expired_session_is_recreated_with_a_note(self) -> None:
        assert SRV is not None
        async with tracecell.AsyncClient(SRV.url) as client:
            async with tca.TracecellContext(client=client) as tc:
                await tc.execute("v = 1")
                old = tc.session_id
                assert old is not None
                await client.delete_session(old)  # as the server's idle reaper would
                r = await tc.execute("v")
                self.assertEqual(r.error.name if r.error else None, "NameError")
                self.assertIn("previous session had ended", r.notes[0])
                self.assertEqual(tc.session_id, old)
                await client.delete_session(old)
                self.assertEqual([f.path for f in await tc.list_files()], [".tmp"])
                await client.delete_session(old)
                host = tempfile.mkdtemp(prefix="tracecell-host-")
                self.addCleanup(shutil.rmtree, host, True)
                with open(os.path.join(host, "f.txt"), "w") as f:
                    f.write("f")
                self.assertEqual((await tc.copy_to_sandbox(os.path.join(host, "f.txt"))).destination, "f.txt")
                self.assertEqual((await client.get_session(old)).id, old)

    async def test_images_option_returns_the_png(self) -> None:
        assert SRV is not None
        async with tracecell.AsyncClient(SRV.url) as client:
            async with tca.TracecellContext(client=client, images=True) as tc:
                r = await tc.execute("import matplotlib.pyplot as plt\nplt.plot([3, 1])\nplt.savefig('p.png')")
                out = await tca._images(tc, r, "text")
                assert isinstance(out, list)
                self.assertIsInstance(out[0], ToolOutputText)
                images = [o for o in out if isinstance(o, ToolOutputImage)]
                self.assertEqual(len(images), len([a for a in r.artifacts if a.is_image]))
                self.assertGreaterEqual(len(images), 1)
                url = images[0].image_url or ""
                self.assertTrue(url.startswith("data:image/png;base64,"), url[:40])
                png = base64.b64decode(url.split(",", 1)[1])
                self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
                fig = [a for a in r.artifacts if a.kind == "figure"][0]
                self.assertEqual(png, await client.download_file(tc.session_id or "", fig.path))
                # Chat Completions keeps only the text part; the model still gets the paths.
                with FakeChatCompletions([[("python", {"code": "plt.plot([1]); plt.savefig('q.png')"})], "ok"]) as fake:
                    await Runner.run(agent_for(fake), "go", context=tc, max_turns=3)
                text = fake.results()[0][2]
                self.assertIn("q.png", text)
                self.assertNotIn("base64", json.dumps(fake.requests[-1]))


class ExampleTest(unittest.TestCase):
    def test_examples_agents_vllm_qwen_runs_as_documented(self) -> None:
        assert SRV is not None
        example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "agents_vllm_qwen.py")
        turns: List[Turn] = [
            [("python", {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.savefig('squares.png')\nsum([1, 4, 9])"})],
            "The sum is 14; the plot is squares.png.",
        ]
        with FakeChatCompletions(turns) as fake:
            pkg_dir = os.path.dirname(os.path.dirname(os.path.abspath(tracecell.__file__)))
            env = dict(os.environ, VLLM_BASE_URL=fake.base_url, TRACECELL_URL=SRV.url,
                       PYTHONPATH=os.pathsep.join(x for x in (pkg_dir, os.environ.get("PYTHONPATH", "")) if x))
            p = subprocess.run([sys.executable, example, "Sum and plot 1, 4, 9."], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("The sum is 14; the plot is squares.png.", p.stdout)
        self.assertRegex(p.stdout, r"\n  squares\.png\n")
        self.assertEqual(fake.requests[0]["model"], "Qwen/Qwen3-8B")
        self.assertEqual(fake.requests[0]["messages"][-1], {"role": "user", "content": "Sum and plot 1, 4, 9."})
        self.assertIn("result: 14", fake.results()[0][2])

    def test_examples_agents_vllm_qwen_without_a_model_server(self) -> None:
        """No vLLM: one line naming VLLM_BASE_URL, not the SDK's traceback, and a non-zero exit."""
        assert SRV is not None
        example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "agents_vllm_qwen.py")
        # A bound socket that does not listen: connecting to its port is refused, and
        # no other program can take the port while the test runs.
        with socket.socket() as held:
            held.bind(("127.0.0.1", 0))
            url = "http://127.0.0.1:%d/v1" % held.getsockname()[1]
            pkg_dir = os.path.dirname(os.path.dirname(os.path.abspath(tracecell.__file__)))
            env = dict(os.environ, VLLM_BASE_URL=url, TRACECELL_URL=SRV.url,
                       PYTHONPATH=os.pathsep.join(x for x in (pkg_dir, os.environ.get("PYTHONPATH", "")) if x))
            p = subprocess.run([sys.executable, example, "What is 1+1?"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "")
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("VLLM_BASE_URL=%s is unreachable" % url, lines[0])
        self.assertIn("Connection refused", lines[0])


if __name__ == "__main__":
    unittest.main()
