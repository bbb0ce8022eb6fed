"""An OpenAI Agents SDK agent with a sandboxed, stateful Python tool, on a local model served by vLLM.

Run it (three terminals, or background the first two):

    # 1. the model, with tool calling on (Qwen3; for GPT-OSS see below)
    vllm serve Qwen/Qwen3-8B --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3
    #    GPT-OSS instead:  vllm serve openai/gpt-oss-20b --enable-auto-tool-choice --tool-call-parser openai
    #                      and export VLLM_MODEL=openai/gpt-oss-20b

    # 2. the sandbox server (from the tracecell repository: make build)
    bin/tracecell serve --preload matplotlib.pyplot,numpy

    # 3. this script
    pip install "./python[agents]"          # or: pip install "tracecell[agents] @ git+https://github.com/tracecell/tracecell#subdirectory=python"
    python examples/agents_vllm_qwen.py "Make a CSV of the first 20 squares, plot it, and tell me the sum."

Environment: VLLM_BASE_URL (default http://127.0.0.1:8000/v1), VLLM_MODEL (default
Qwen/Qwen3-8B), VLLM_API_KEY (if vLLM runs with --api-key), TRACECELL_URL (default: the
socket `tracecell serve` listens on by default) and TRACECELL_TOKEN.

The model's code runs in one tracecell session per TracecellContext: variables persist
between tool calls, files may be written only inside the session's sandbox, and each
blocked operation comes back to the model as a sentence saying what to do instead.
"""
from __future__ import annotations

import asyncio
import os
import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import APIConnectionError, APIStatusError, AsyncOpenAI

from tracecell.agents import TracecellContext, tracecell_tools

INSTRUCTIONS = """You are a careful data analyst. Use the python tool to compute, inspect files and
make plots instead of guessing; it keeps state between calls like a notebook. Save files with
relative paths. To change a file outside your working directory, copy it in first with
copy_to_sandbox. When a plot is saved, mention its file path in your answer."""


async def main(question: str) -> None:
    # No traces are sent to OpenAI: the model is local.
    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(
        model=os.environ.get("VLLM_MODEL", "Qwen/Qwen3-8B"),
        openai_client=AsyncOpenAI(base_url=BASE_URL, api_key=os.environ.get("VLLM_API_KEY", "not-needed")),
    )
    agent = Agent(name="analyst", instructions=INSTRUCTIONS, model=model, tools=tracecell_tools())

    # One sandboxed session for this conversation; deleted (with its files) on exit.
    # Pass TracecellContext(session_id="user-42", delete_session=False) to keep one across runs.
    async with TracecellContext() as ctx:
        result = await Runner.run(agent, question, context=ctx, max_turns=20)
        print(result.final_output)
        if ctx.sandbox:
            files = await ctx.get_client().list_files((await ctx.session()).id)
            made = [f.path for f in files if f.type == "file" and not f.path.startswith(".")]
            if made:
                print("\nFiles in the sandbox %s (removed on exit):\n  %s" % (ctx.sandbox, "\n  ".join(made)))


BASE_URL = os.environ.get("VLLM_BASE_URL", "http://127.0.0.1:8000/v1")


def root_cause(e: BaseException) -> str:
    """The innermost exception's message ("[Errno 111] Connection refused")."""
    while e.__cause__ is not None or e.__context__ is not None:
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    if isinstance(e, OSError) and e.errno:
        return os.strerror(e.errno)
    return str(e) or type(e).__name__


if __name__ == "__main__":
    question = " ".join(sys.argv[1:]) or "What is the sum of the first 100 primes? Plot their gaps and save the plot."
    try:
        asyncio.run(main(question))
    except APIConnectionError as e:
        # One line instead of the SDK's 40-line traceback: the usual cause is
        # that vLLM is not running (yet) or listens elsewhere.
        sys.exit("agents_vllm_qwen: the model server VLLM_BASE_URL=%s is unreachable (%s): start `vllm serve` "
                 "(see the top of this file) or set VLLM_BASE_URL to where it listens" % (BASE_URL, root_cause(e)))
    except APIStatusError as e:
        sys.exit("agents_vllm_qwen: the model server VLLM_BASE_URL=%s answered HTTP %d: %s (check VLLM_MODEL and VLLM_API_KEY)"
                 % (BASE_URL, e.status_code, e.message))
