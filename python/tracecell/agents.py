"""Ready tools for the OpenAI Agents SDK (``pip install "tracecell[agents]"``).

>>> from agents import Agent, Runner
>>> from tracecell.agents import TracecellContext, tracecell_tools
>>> agent = Agent(name="analyst", instructions="...", tools=tracecell_tools())
>>> async with TracecellContext() as ctx:            # one sandboxed session per context
...     result = await Runner.run(agent, "plot sales.csv", context=ctx)

The tools find their session in the run context (a :class:`TracecellContext`, or any
context object with a ``tracecell`` attribute holding one); the model never chooses
or sees a session id, and never sees the operator's policy. The session is created on
the first tool call and deleted when the context is closed.

Results are text (see :mod:`tracecell.format`): Chat Completions drops images from tool
results, so plots are reported as file paths. With ``TracecellContext(images=True)``
the ``python`` tool also returns the images as ``ToolOutputImage`` items, which the
Responses API (and the SDK's LiteLLM/any-llm models) pass to the model; on Chat
Completions they are dropped and the text remains.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Dict, List, Optional, Tuple, Type, Union

try:
    from agents import FunctionTool, RunContextWrapper, ToolOutputImage, ToolOutputText, function_tool
    from agents.exceptions import UserError
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise ImportError("tracecell.agents needs the OpenAI Agents SDK: pip install \"tracecell[agents]\" (%s)" % e) from e

from .client import AsyncClient
from .errors import (
    AccessDenied,
    AuthError,
    Conflict,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    SessionExists,
    ServerUnavailable,
    SessionNotFound,
    TracecellError,
)
from .format import (
    DEFAULT_MAX_CHARS,
    data_url,
    format_copy_result,
    format_file_list,
    format_result,
    image_artifacts,
    strip_code_fences,
)
from .types import CopyResult, ExecutionResult, FileList, SessionInfo

__all__ = [
    "TracecellContext", "tracecell_tools", "python", "python_oneshot", "copy_to_sandbox", "list_sandbox_files",
    "ToolResult",
]

#: What the ``python`` tool returns: text, or text followed by images.
ToolResult = Union[str, List[Union[ToolOutputText, ToolOutputImage]]]

_MAX_IMAGE_BYTES = 4 * 1024 * 1024


@dataclass
class TracecellContext:
    """The agent's tracecell session, passed as ``Runner.run(..., context=TracecellContext())``.

    Attributes:
        client: the server's client (default: ``AsyncClient()``, from ``$TRACECELL_URL``).
        session_id: a session to use (created if missing), or None for a new one with a
            generated id. Created on the first tool call.
        timeout: seconds per execution (may only lower the server's ``--exec-timeout``).
        max_output_chars: cap on the text of one tool result.
        images: also return image outputs as ``ToolOutputImage`` (for model APIs that keep them).
        delete_session: delete the session on close (default: only when this context created it).
    """

    client: Optional[AsyncClient] = None
    session_id: Optional[str] = None
    timeout: Optional[float] = None
    max_output_chars: int = DEFAULT_MAX_CHARS
    images: bool = False
    delete_session: Optional[bool] = None
    _info: Optional[SessionInfo] = field(default=None, init=False, repr=False)
    _created: bool = field(default=False, init=False, repr=False)
    _own_client: bool = field(default=False, init=False, repr=False)
    _lock: Optional[asyncio.Lock] = field(default=None, init=False, repr=False)

    def get_client(self) -> AsyncClient:
        """The client, made from the environment on first use."""
        if self.client is None:
            self.client = AsyncClient()
            self._own_client = True
        return self.client

    def _get_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    @property
    def sandbox(self) -> Optional[str]:
        """The session's sandbox directory on the host, once the session exists."""
        return self._info.sandbox if self._info else None

    async def session(self) -> SessionInfo:
        """The session, created on first use."""
        async with self._get_lock():
            return await self._ensure()

    async def _ensure(self) -> SessionInfo:
        if self._info is not None:
            return self._info
        c = self.get_client()
        if self.session_id is None:
            self._info = await c.create_session()
            self._created = True
        else:
            try:
                self._info = await c.create_session(self.session_id)
                self._created = True
            except SessionExists:
                self._info = await c.get_session(self.session_id)
        self.session_id = self._info.id
        return self._info

    async def execute(self, code: str) -> ExecutionResult:
        """Run code in the session (one execution at a time: parallel tool calls wait their turn).

        A session the server deleted meanwhile (idle timeout) is created again, and the
        result carries a note saying the variables are gone.
        """
        async with self._get_lock():
            info = await self._ensure()
            c = self.get_client()
            try:
                return await c.execute(info.id, code, timeout=self.timeout)
            except SessionNotFound:
                self._info = None
                info = await self._ensure()
                r = await c.execute(info.id, code, timeout=self.timeout)
                r.notes.insert(0, "the previous session had ended (idle too long); this code ran in a new one: earlier variables and files are gone")
                return r

    async def copy_to_sandbox(self, source: str, destination: Optional[str] = None) -> CopyResult:
        """Copy a host file or directory into the session's sandbox (a session that ended is created again)."""
        info = await self.session()
        try:
            return await self.get_client().copy_to_sandbox(info.id, source, destination)
        except SessionNotFound:
            await self._forget(info)
            return await self.get_client().copy_to_sandbox((await self.session()).id, source, destination)

    async def list_files(self) -> FileList:
        """The session's sandbox listing (a session that ended is created again)."""
        info = await self.session()
        try:
            return await self.get_client().list_files(info.id)
        except SessionNotFound:
            await self._forget(info)
            return await self.get_client().list_files((await self.session()).id)

    async def _forget(self, info: SessionInfo) -> None:
        async with self._get_lock():
            if self._info is info:
                self._info = None

    async def aclose(self) -> None:
        """Delete the session (if this context created it, or ``delete_session``) and close an own client."""
        delete = self.delete_session if self.delete_session is not None else self._created
        try:
            if delete and self._info is not None and self.client is not None:
                try:
                    await self.client.delete_session(self._info.id)
                except SessionNotFound:
                    pass
        finally:
            self._info = None
            if self._own_client and self.client is not None:
                await self.client.aclose()
                self.client = None
                self._own_client = False

    async def __aenter__(self) -> TracecellContext:
        return self

    async def __aexit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        await self.aclose()


def _tc(ctx: RunContextWrapper[Any]) -> TracecellContext:
    c = ctx.context
    if isinstance(c, TracecellContext):
        return c
    inner = getattr(c, "tracecell", None)
    if isinstance(inner, TracecellContext):
        return inner
    raise UserError("the tracecell tools need a TracecellContext: pass Runner.run(agent, input, context=TracecellContext()), "
                    "or a context object with a .tracecell attribute holding one")


async def _images(tc: TracecellContext, r: ExecutionResult, text: str) -> ToolResult:
    items: List[Union[ToolOutputText, ToolOutputImage]] = [ToolOutputText(text=text)]
    if tc._info is None:
        return text
    for a in image_artifacts(r):
        if a.size > _MAX_IMAGE_BYTES:
            continue
        try:
            data = await tc.get_client().download_file(tc._info.id, a.path, max_bytes=_MAX_IMAGE_BYTES)
        except (ServerUnavailable, AuthError):
            raise
        except TracecellError:
            # Deleted, replaced by a symlink or grown past the cap since the execution
            # listed it (the code can do all of that), or a path the server refuses: the
            # path in the text stays, and the agent's run goes on.
            continue
        items.append(ToolOutputImage(image_url=data_url(data, a.mime), detail="auto"))
    return items if len(items) > 1 else text


async def _python(ctx: RunContextWrapper[Any], code: str) -> ToolResult:
    """Run Python code in your persistent session, like a cell of a Jupyter notebook.

    Variables, imports and functions stay defined for later calls. The result shows stdout,
    stderr, the value of the last expression, any error with its traceback, and the files the
    code created (matplotlib figures are saved automatically as PNG files; their paths are
    listed). The working directory is your sandbox: write files there, using relative paths.
    Files elsewhere can be read but not changed: to modify one, call copy_to_sandbox first and
    work on the copy. Operations that are not allowed are reported under "Blocked operations"
    with what to do instead.

    Args:
        code: Python source code to run. The value of a final expression is shown.
    """
    tc = _tc(ctx)
    r = await tc.execute(strip_code_fences(code))
    text = format_result(r, max_chars=tc.max_output_chars, sandbox=tc.sandbox)
    if tc.images and r.artifacts:
        return await _images(tc, r, text)
    return text


async def _python_oneshot(ctx: RunContextWrapper[Any], code: str) -> str:
    """Run Python code in a fresh, throwaway interpreter and sandbox.

    Nothing is kept afterwards: no variables, and the files it writes are discarded. Use it for
    independent calculations that must not disturb your session; use the python tool for work
    that builds on earlier steps.

    Args:
        code: Python source code to run. The value of a final expression is shown.
    """
    tc = _tc(ctx)
    r = await tc.get_client().execute_oneshot(strip_code_fences(code), timeout=tc.timeout)
    return format_result(r, max_chars=tc.max_output_chars, files_kept=False)


#: What a model is told for each copy error code: ("source" or "destination", the message).
_COPY_ERRORS: Dict[str, Tuple[str, str]] = {
    "read_denied": ("source", "cannot copy %s: this path is private or unreadable; do not try to read it"),
    "source_unreadable": ("source", "cannot copy %s: this path is private or unreadable; do not try to read it"),
    "source_not_found": ("source", "cannot copy %s: it does not exist; check the path (absolute, or ~/...)"),
    "symlink_refused": ("destination", "cannot copy to %s: a symbolic link in the sandbox is on that path; choose another destination"),
    "path_outside_sandbox": ("destination", "cannot copy to %s: the destination must be a path inside the sandbox, relative to it, without '..'"),
    "destination_is_directory": ("destination", "cannot copy to %s: it is an existing directory; give a file path inside it"),
    "source_changed": ("source", "cannot copy %s: it changed while being copied; try again"),
    "destination_changed": ("destination", "cannot copy to %s: code running in the session replaced the file while it was copied; stop that code, then try again"),
    "copy_too_large": ("source", "cannot copy %s: it is larger than the copy limit; copy a smaller part (a file instead of a directory)"),
    "no_space": ("source", "cannot copy %s: no space left for the sandbox; delete files you no longer need"),
}


def _copy_error(e: TracecellError, source: str, destination: str) -> str:
    dest = destination or "its base name"
    known = _COPY_ERRORS.get(e.code or "")
    if known is not None:
        which, text = known
        return text % (source if which == "source" else dest)
    return "cannot copy %s to %s: check that the source is an absolute path and the destination a relative one" % (source, dest)


async def _copy_to_sandbox(ctx: RunContextWrapper[Any], source: str, destination: str) -> str:
    """Copy a file or directory from this machine into your sandbox, so that you can change it.

    Use it before modifying or writing next to a file outside the sandbox; then use the copy's
    path (relative to the working directory) in your code.

    Args:
        source: Absolute path of the file or directory to copy (~/ is allowed).
        destination: Where to put it, relative to the sandbox (e.g. "data/sales.csv"); an empty string keeps the source's name at the top of the sandbox.
    """
    tc = _tc(ctx)
    try:
        c = await tc.copy_to_sandbox(source, destination or None)
    except (AccessDenied, InvalidRequest, NotFound, Conflict, LimitExceeded) as e:
        if isinstance(e, SessionNotFound) or e.code in ("too_many_sessions", "body_too_large", "no_such_endpoint"):
            raise
        return _copy_error(e, source, destination)
    return format_copy_result(c)


async def _list_sandbox_files(ctx: RunContextWrapper[Any]) -> str:
    """List the files in your sandbox (the working directory of the python tool), with their sizes."""
    return format_file_list(await _tc(ctx).list_files())


# failure_error_function=None: errors the model cannot fix (server down, bad token,
# missing TracecellContext) propagate out of Runner.run instead of being shown to it.
python: FunctionTool = function_tool(_python, name_override="python", failure_error_function=None)
python_oneshot: FunctionTool = function_tool(_python_oneshot, name_override="python_oneshot", failure_error_function=None)
copy_to_sandbox: FunctionTool = function_tool(_copy_to_sandbox, name_override="copy_to_sandbox", failure_error_function=None)
list_sandbox_files: FunctionTool = function_tool(_list_sandbox_files, name_override="list_sandbox_files", failure_error_function=None)


def tracecell_tools(*, oneshot: bool = True, files: bool = True) -> List[FunctionTool]:
    """The tools for an ``Agent(tools=...)``: ``python``, and by default ``python_oneshot``,
    ``copy_to_sandbox`` and ``list_sandbox_files``."""
    tools = [python]
    if oneshot:
        tools.append(python_oneshot)
    if files:
        tools += [copy_to_sandbox, list_sandbox_files]
    return tools

# The SandboxAgent backend (TracecellSandboxClient), in its own module.
from .agents_sandbox import (  # noqa: E402
    SHELL_AGENT_EXEC,
    CommandReport,
    TracecellSandboxClient,
    TracecellSandboxClientOptions,
    TracecellSandboxSession,
    TracecellSandboxSessionState,
    tracecell_reports,
)

__all__ += [
    "SHELL_AGENT_EXEC", "CommandReport", "TracecellSandboxClient", "TracecellSandboxClientOptions",
    "TracecellSandboxSession", "TracecellSandboxSessionState", "tracecell_reports",
]
