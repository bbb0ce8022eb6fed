"""tracecell: a client for the ``tracecell serve`` session server, and tools for LLM agents.

>>> from tracecell import Client
>>> with Client() as c:                      # $TRACECELL_URL, or the server's default socket
...     s = c.create_session()
...     c.execute(s.id, "x = 41")
...     print(c.execute(s.id, "x + 1").result)   # 42

``tracecell.format`` turns results into compact text for models; ``tracecell.agents``
(``pip install "tracecell[agents]"``) has ready tools for the OpenAI Agents SDK.
"""
from __future__ import annotations

from ._http import default_state_dir, default_url
from .client import AsyncClient, Client
from .errors import (
    AccessDenied,
    AuthError,
    ClientTimeout,
    Conflict,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    ProtocolError,
    ServerError,
    ServerUnavailable,
    SessionBusy,
    SessionExists,
    SessionGone,
    SessionNotFound,
    TracecellError,
    WrongCell,
)
from .types import (
    Artifact,
    CopyResult,
    Denial,
    DenialPath,
    ExecError,
    ExecutionResult,
    FileEntry,
    FileList,
    Health,
    SessionInfo,
    SkippedEntry,
    WorkerInfo,
)

__version__ = "0.1.0"

__all__ = [
    "AccessDenied", "Artifact", "AsyncClient", "AuthError", "Client", "ClientTimeout", "Conflict", "CopyResult",
    "Denial", "DenialPath", "ExecError", "ExecutionResult", "FileEntry", "FileList", "Health", "InvalidRequest",
    "LimitExceeded", "NotFound", "ProtocolError", "ServerError", "ServerUnavailable", "SessionBusy",
    "SessionExists", "SessionInfo", "SessionGone", "SessionNotFound", "SkippedEntry", "TracecellError", "WorkerInfo", "WrongCell",
    "default_state_dir", "default_url",
]
