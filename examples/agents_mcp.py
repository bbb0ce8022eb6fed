"""An OpenAI Agents SDK agent that runs Python through `tracecell mcp`, with the SDK's own MCP client.

The other route (examples/agents_vllm_qwen.py) uses the tracecell package's tools over
`tracecell serve`; this one needs only `pip install openai-agents` on the agent's side.

    # 1. the model (see examples/agents_vllm_qwen.py), e.g.
    vllm serve Qwen/Qwen3-8B --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3
    # 2. the MCP server; its --exec-timeout is how long one cell may run
    bin/tracecell mcp --listen 127.0.0.1:8765 --exec-timeout 60s --preload numpy,matplotlib.pyplot
    # 3. this script
    TRACECELL_EXEC_TIMEOUT=60 python examples/agents_mcp.py "What is the sum of the first 100 primes?"

Two settings matter (tracecell_mcp_server below):

- client_session_timeout_seconds: the SDK's default is 5 s. A cell that runs longer (a model
  fit, a big CSV) then comes back to the model as "An error occurred while running the tool",
  and the SDK cancels the call, which interrupts the cell: its work is lost. Give it more
  than the server's --exec-timeout.
- tool_filter: `tracecell mcp` also lists cleanup_session, which ends the session with all its
  variables and files (vLLM calls it at the end of a request). An agent has no use for it;
  leave it out. The Python session ends when the MCP connection closes (the `async with`), or
  pass the header X-Tracecell-Session: NAME for a session that outlives connections.

Environment: TRACECELL_MCP_URL (default http://127.0.0.1:8765/mcp), TRACECELL_EXEC_TIMEOUT
(seconds, default 60: the server's --exec-timeout), VLLM_BASE_URL (default
http://127.0.0.1:8000/v1), VLLM_MODEL (default Qwen/Qwen3-8B), VLLM_API_KEY.
"""
from __future__ import annotations

import asyncio
import os
import sys
from typing import Dict, Optional

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.exceptions import UserError
from agents.mcp import MCPServerStreamableHttp, create_static_tool_filter
from openai import APIConnectionError, AsyncOpenAI


def tracecell_mcp_server(url: str, exec_timeout: float, headers: Optional[Dict[str, str]] = None) -> MCPServerStreamableHttp:
    """The Agents SDK's MCP client for `tracecell mcp` at url (…/mcp), whose --exec-timeout is exec_timeout seconds."""
    return MCPServerStreamableHttp(
        params={"url": url, "headers": headers or {}},
        name="tracecell",
        # Longer than the longest cell the server lets run, so the server's own time limit
        # (a clear "interrupted: it ran past the time limit" result) is what the model sees.
        client_session_timeout_seconds=exec_timeout + 30,
        # Only the python tool: cleanup_session would let the model wipe its own session.
        tool_filter=create_static_tool_filter(allowed_tool_names=["python"]),
        cache_tools_list=True,
    )


async def main(question: str) -> None:
    set_tracing_disabled(True)  # the model is local: send no traces to OpenAI
    model = OpenAIChatCompletionsModel(
        model=os.environ.get("VLLM_MODEL", "Qwen/Qwen3-8B"),
        openai_client=AsyncOpenAI(base_url=os.environ.get("VLLM_BASE_URL", "http://127.0.0.1:8000/v1"),
                                  api_key=os.environ.get("VLLM_API_KEY", "not-needed")),
    )
    python = tracecell_mcp_server(MCP_URL, float(os.environ.get("TRACECELL_EXEC_TIMEOUT", "60")))
    try:
        await python.connect()
    except UserError as e:  # the SDK's "Failed to connect to MCP server ...: Could not reach the server."
        sys.exit("agents_mcp: TRACECELL_MCP_URL=%s: %s Start `tracecell mcp` (see the top of this file) or set TRACECELL_MCP_URL" % (MCP_URL, e))
    try:
        agent = Agent(name="analyst", model=model, mcp_servers=[python],
                      instructions="Use the python tool to compute instead of guessing; it keeps state between calls.")
        result = await Runner.run(agent, question, max_turns=20)
        print(result.final_output)
    finally:
        await python.cleanup()  # closes the MCP session: tracecell ends the Python session


MCP_URL = os.environ.get("TRACECELL_MCP_URL", "http://127.0.0.1:8765/mcp")

if __name__ == "__main__":
    try:
        asyncio.run(main(" ".join(sys.argv[1:]) or "What is the sum of the first 100 primes?"))
    except APIConnectionError as e:
        sys.exit("agents_mcp: the model server VLLM_BASE_URL is unreachable (%s): start `vllm serve` or set VLLM_BASE_URL" % e)
