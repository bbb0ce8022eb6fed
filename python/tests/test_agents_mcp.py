"""The OpenAI Agents SDK's own MCP client (openai-agents 0.24) against a real `tracecell mcp`.

The route of examples/agents_mcp.py: MCPServerStreamableHttp pointed at `tracecell mcp`, a
Runner and a scripted model (the fake vLLM-style Chat Completions server of test_agents), no
real model. A cell longer than the SDK's default 5 s client timeout must come back whole with
the example's settings; with the defaults it does not (the documented pitfall).
"""
from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
import types
import unittest
from typing import Any, Dict, List, Optional

from agents import Agent, OpenAIChatCompletionsModel, RunContextWrapper, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

from ._server import MCPServer
from .test_agents import FakeChatCompletions, Turn

EXEC_TIMEOUT = 30.0  # the server's --exec-timeout, seconds
SLOW_CELL = "import time\ntime.sleep(7)\nopen('slow.txt', 'w').write('done')\nx = 41\n'slept'"  # > the SDK's 5 s default

SRV: Optional[MCPServer] = None


def setUpModule() -> None:
    global SRV
    set_tracing_disabled(True)
    SRV = MCPServer.start("--exec-timeout", "%ds" % EXEC_TIMEOUT)


def tearDownModule() -> None:
    assert SRV is not None
    problem = SRV.stop()
    if problem:
        raise AssertionError(problem)


def example() -> types.ModuleType:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "agents_mcp.py")
    spec = importlib.util.spec_from_file_location("agents_mcp_example", path)
    assert spec is not None and spec.loader is not None
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def agent(fake: FakeChatCompletions, server: MCPServerStreamableHttp) -> Agent[Any]:
    client = AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
    return Agent(name="analyst", instructions="Use python.", mcp_servers=[server],
                 model=OpenAIChatCompletionsModel(model=fake.model, openai_client=client))


class AgentsMCPTest(unittest.IsolatedAsyncioTestCase):
    async def test_example_settings_run_a_long_cell(self) -> None:
        assert SRV is not None
        server = example().tracecell_mcp_server(SRV.url + "/mcp", EXEC_TIMEOUT)
        turns: List[Turn] = [
            [("python", {"code": SLOW_CELL})],
            [("python", {"code": "x + 1"})],
            "x + 1 is 42.",
        ]
        with FakeChatCompletions(turns) as fake:
            async with server:
                a = agent(fake, server)
                tools = await server.list_tools(RunContextWrapper(context=None), a)
                self.assertEqual([t.name for t in tools], ["python"], "cleanup_session must be filtered out")
                result = await Runner.run(a, "Sleep, then add one.")
                got = fake.results()
                m = re.match(r"\[new session: working directory (\S+);", got[0][2] if got else "")
                self.assertIsNotNone(m, got)
                assert m is not None
                sbx = m.group(1)
                # Ground truth: the cell ran to its end, in the session's sandbox.
                with open(os.path.join(sbx, "slow.txt")) as f:
                    self.assertEqual(f.read(), "done")
            self.assertEqual(result.final_output, "x + 1 is 42.")
            # What the model was offered: python only.
            offered = [t["function"]["name"] for t in fake.requests[0].get("tools", [])]
            self.assertEqual(offered, ["python"])
            self.assertEqual([name for name, _, _ in got], ["python", "python"])
            self.assertIn("[result]\n'slept'", got[0][2])
            self.assertNotIn("error occurred", got[0][2])
            self.assertIn("[result]\n42", got[1][2], "the session lost its state between calls")
        # The Python session ends with the MCP session (the client closes it on exit).
        deadline = time.monotonic() + 20
        while os.path.exists(sbx) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        self.assertFalse(os.path.exists(sbx), "the sandbox outlived the MCP session")

    async def test_sdk_default_timeout_cuts_a_long_cell(self) -> None:
        # The pitfall the example's settings avoid: client_session_timeout_seconds=5.
        assert SRV is not None
        server = MCPServerStreamableHttp(params={"url": SRV.url + "/mcp"})
        turns: List[Turn] = [[("python", {"code": SLOW_CELL})], [("python", {"code": "x"})], "gave up"]
        with FakeChatCompletions(turns) as fake:
            async with server:
                await Runner.run(agent(fake, server), "Sleep.")
            got = fake.results()
        self.assertEqual(len(got), 2)
        self.assertIn("An error occurred while running the tool", got[0][2])
        # The SDK cancels the timed-out call and tracecell interrupts the cell: it never got to x = 41.
        self.assertIn("NameError: name 'x' is not defined", got[1][2])



class ExampleScriptTest(unittest.TestCase):
    def run_example(self, env: Dict[str, str]) -> "subprocess.CompletedProcess[str]":
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "agents_mcp.py")
        return subprocess.run([sys.executable, path, "Sum 0..9."], env=dict(os.environ, **env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=120)

    def test_runs_as_documented(self) -> None:
        assert SRV is not None
        with FakeChatCompletions([[("python", {"code": "sum(range(10))"})], "The sum is 45."]) as fake:
            p = self.run_example({"VLLM_BASE_URL": fake.base_url, "TRACECELL_MCP_URL": SRV.url + "/mcp",
                                  "TRACECELL_EXEC_TIMEOUT": "%d" % EXEC_TIMEOUT})
            got = fake.results()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "The sum is 45.\n")
        self.assertEqual([t["function"]["name"] for t in fake.requests[0]["tools"]], ["python"])
        self.assertIn("[result]\n45\n", got[0][2])

    def test_mcp_server_unreachable_is_one_line(self) -> None:
        with socket.socket() as held:  # bound, not listening: connections are refused
            held.bind(("127.0.0.1", 0))
            url = "http://127.0.0.1:%d/mcp" % held.getsockname()[1]
            p = self.run_example({"TRACECELL_MCP_URL": url, "VLLM_BASE_URL": "http://127.0.0.1:9/v1"})
        self.assertEqual(p.returncode, 1, p.stderr)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("TRACECELL_MCP_URL=%s" % url, lines[0])
        self.assertIn("Start `tracecell mcp`", lines[0])


if __name__ == "__main__":
    unittest.main()
