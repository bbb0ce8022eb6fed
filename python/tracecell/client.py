"""Clients of the ``tracecell serve`` HTTP/JSON API: :class:`Client` (blocking) and :class:`AsyncClient` (asyncio).

Both take the server's address as ``unix:/path/to.sock`` or ``http://127.0.0.1:PORT``
(default: ``$TRACECELL_URL``, else the socket ``tracecell serve`` listens on by
default) and an optional bearer token (default: ``$TRACECELL_TOKEN``). Errors are
:class:`tracecell.errors.TracecellError` subclasses chosen by the server's error code.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple, Type
from types import TracebackType

from ._http import AsyncTransport, Endpoint, Response, SyncTransport, default_url, parse_url, quote_path, quote_segment
from .errors import ProtocolError
from .types import CopyResult, ExecutionResult, FileList, Health, SessionInfo

__all__ = ["Client", "AsyncClient"]


def _resolve(url: Optional[str], token: Optional[str]) -> Tuple[Endpoint, Optional[str], bool]:
    is_default = url is None and not os.environ.get("TRACECELL_URL", "").strip()
    ep = parse_url(url if url is not None else default_url())
    if token is None:
        token = os.environ.get("TRACECELL_TOKEN") or None
    return ep, token, is_default


def _body(doc: Dict[str, Any]) -> bytes:
    return json.dumps(doc).encode("utf-8")


def _create_body(session_id: Optional[str], idle_timeout: Optional[float]) -> bytes:
    doc: Dict[str, Any] = {} if session_id is None else {"id": session_id}
    if idle_timeout is not None:
        doc["idle_timeout"] = idle_timeout
    return _body(doc)


def _exec_body(code: str, timeout: Optional[float]) -> bytes:
    doc: Dict[str, Any] = {"code": code}
    if timeout is not None:
        doc["timeout"] = timeout
    return _body(doc)


def _obj(resp: Response) -> Dict[str, Any]:
    resp.raise_for_error()
    doc = resp.json()
    if not isinstance(doc, dict):
        raise ProtocolError("the server answered with JSON that is not an object", status=resp.status)
    return doc


def _sessions(resp: Response) -> List[SessionInfo]:
    doc = _obj(resp)
    items = doc.get("sessions")
    return [SessionInfo.from_dict(s) for s in (items if isinstance(items, list) else []) if isinstance(s, dict)]


def _health(resp: Response) -> Health:
    if resp.status == 503:  # shutting down: still a health answer
        try:
            doc = resp.json()
            if isinstance(doc, dict) and "status" in doc:
                return Health.from_dict(doc)
        except ProtocolError:
            pass
    return Health.from_dict(_obj(resp))


def _text(resp: Response) -> str:
    resp.raise_for_error()
    return resp.body.decode("utf-8", "replace")


def _bytes(resp: Response) -> bytes:
    resp.raise_for_error()
    return resp.body


def _exec_timeout(client_timeout: Optional[float], timeout: Optional[float]) -> Optional[float]:
    # A client-side limit must outlast the execution's own timeout plus the server's grace period.
    if client_timeout is None:
        return None
    if timeout is None:
        return client_timeout
    return max(client_timeout, timeout + 30.0)


class _Base:
    def __init__(self, url: Optional[str], token: Optional[str]) -> None:
        self.endpoint, self.token, self._is_default = _resolve(url, token)

    @property
    def url(self) -> str:
        """The server's address, as ``unix:/path`` or ``host:port``."""
        return self.endpoint.display

    def __repr__(self) -> str:
        return "%s(%r)" % (type(self).__name__, self.url)


class Client(_Base):
    """Blocking client; thread-safe (each concurrent call uses its own keep-alive connection).

    ``timeout`` is the client's own limit, in seconds, on waiting for any answer
    (None: wait as long as the server takes; executions are bounded by the server's
    ``--exec-timeout`` anyway).
    """

    def __init__(self, url: Optional[str] = None, *, token: Optional[str] = None, timeout: Optional[float] = None,
                 connect_timeout: float = 10.0) -> None:
        super().__init__(url, token)
        self.timeout = timeout
        self._t = SyncTransport(self.endpoint, self.token, timeout, connect_timeout, self._is_default)

    def close(self) -> None:
        """Close the idle connections."""
        self._t.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.close()

    # -- server

    def health(self) -> Health:
        """``GET /healthz`` (no token needed); status ``shutting_down`` while the server stops."""
        return _health(self._t.request("GET", "/healthz"))

    def metrics(self) -> str:
        """``GET /metrics``: Prometheus text."""
        return _text(self._t.request("GET", "/metrics"))

    # -- sessions

    def create_session(self, session_id: Optional[str] = None, *, idle_timeout: Optional[float] = None) -> SessionInfo:
        """Create a session (``session_id`` chosen by you, or generated: ``<cell>.s-<hex>``). Raises SessionExists if the id is taken.

        ``idle_timeout`` (seconds, at most the server's ``--idle-timeout``): this session's own.
        """
        return SessionInfo.from_dict(_obj(self._t.request("POST", "/v1/sessions", _create_body(session_id, idle_timeout))))

    def list_sessions(self) -> List[SessionInfo]:
        """Every session, oldest first."""
        return _sessions(self._t.request("GET", "/v1/sessions"))

    def get_session(self, session_id: str) -> SessionInfo:
        """Describe a session. Raises SessionNotFound."""
        return SessionInfo.from_dict(_obj(self._t.request("GET", "/v1/sessions/" + quote_segment(session_id))))

    def delete_session(self, session_id: str) -> None:
        """Delete a session: kill its worker (and a running execution), remove its sandbox."""
        self._t.request("DELETE", "/v1/sessions/" + quote_segment(session_id)).raise_for_error()

    def execute(self, session_id: str, code: str, *, timeout: Optional[float] = None) -> ExecutionResult:
        """Run ``code`` in the session's namespace. ``timeout`` (seconds) may only lower the server's limit.

        Raises SessionBusy while another execution or a reset of the session runs.
        """
        r = self._t.request("POST", "/v1/sessions/%s/execute" % quote_segment(session_id), _exec_body(code, timeout),
                            timeout=_exec_timeout(self.timeout, timeout))
        return ExecutionResult.from_dict(_obj(r))

    def reset_session(self, session_id: str, *, clear_sandbox: bool = False) -> SessionInfo:
        """Give the session a fresh worker (the namespace is gone); files are kept unless ``clear_sandbox``."""
        r = self._t.request("POST", "/v1/sessions/%s/reset" % quote_segment(session_id), _body({"clear_sandbox": clear_sandbox}))
        return SessionInfo.from_dict(_obj(r))

    def copy_to_sandbox(self, session_id: str, source: str, destination: Optional[str] = None) -> CopyResult:
        """Copy a host file or directory into the sandbox (done by the server, under its policy).

        ``destination`` is relative to the sandbox; default: the source's base name at its top.
        """
        doc: Dict[str, Any] = {"source": source}
        if destination:
            doc["destination"] = destination
        r = self._t.request("POST", "/v1/sessions/%s/copy" % quote_segment(session_id), _body(doc))
        return CopyResult.from_dict(_obj(r))

    def list_files(self, session_id: str) -> FileList:
        """Every entry of the sandbox (hidden ones too), depth first, sorted."""
        return FileList.from_dict(_obj(self._t.request("GET", "/v1/sessions/%s/files" % quote_segment(session_id))))

    def download_file(self, session_id: str, path: str, *, max_bytes: Optional[int] = None) -> bytes:
        """The bytes of a regular file of the sandbox (``path`` relative to it, e.g. an artifact's path).

        ``max_bytes``: a larger file raises :class:`LimitExceeded` without being read (the code
        may grow a file after its execution listed it, e.g. to a sparse terabyte).
        """
        r = self._t.request("GET", "/v1/sessions/%s/files/%s" % (quote_segment(session_id), quote_path(path)),
                            max_body=max_bytes)
        return _bytes(r)

    def keepalive(self, session_id: str) -> SessionInfo:
        """Count the session as used now: its ``expires_at`` moves on."""
        return SessionInfo.from_dict(_obj(self._t.request("POST", "/v1/sessions/%s/keepalive" % quote_segment(session_id))))

    def archive(self, session_id: str, *, max_bytes: Optional[int] = None) -> bytes:
        """The sandbox's regular files and directories as a tar archive (symlinks and special files left out)."""
        return _bytes(self._t.request("GET", "/v1/sessions/%s/archive" % quote_segment(session_id), max_body=max_bytes))

    def unpack_archive(self, session_id: str, tar: bytes) -> Dict[str, Any]:
        """Unpack a tar archive (as :meth:`archive` makes) into the sandbox: ``{"files", "directories", "bytes", "skipped"}``."""
        return _obj(self._t.request("POST", "/v1/sessions/%s/archive" % quote_segment(session_id), tar,
                                    content_type="application/x-tar"))

    # -- one-shot

    def execute_oneshot(self, code: str, *, timeout: Optional[float] = None) -> ExecutionResult:
        """Run ``code`` in a fresh worker and sandbox, both discarded afterwards."""
        r = self._t.request("POST", "/v1/execute", _exec_body(code, timeout), timeout=_exec_timeout(self.timeout, timeout))
        return ExecutionResult.from_dict(_obj(r))


class AsyncClient(_Base):
    """asyncio client: non-blocking streams over the Unix socket or TCP, keep-alive connections.

    Cancelling a call (e.g. ``asyncio.wait_for``) closes its connection; the server then
    interrupts the execution it was running. Use one instance per event loop.
    """

    def __init__(self, url: Optional[str] = None, *, token: Optional[str] = None, timeout: Optional[float] = None,
                 connect_timeout: float = 10.0) -> None:
        super().__init__(url, token)
        self.timeout = timeout
        self._t = AsyncTransport(self.endpoint, self.token, timeout, connect_timeout, self._is_default)

    async def aclose(self) -> None:
        """Close the idle connections."""
        await self._t.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        await self.aclose()

    async def health(self) -> Health:
        """``GET /healthz`` (no token needed)."""
        return _health(await self._t.request("GET", "/healthz"))

    async def metrics(self) -> str:
        """``GET /metrics``: Prometheus text."""
        return _text(await self._t.request("GET", "/metrics"))

    async def create_session(self, session_id: Optional[str] = None, *, idle_timeout: Optional[float] = None) -> SessionInfo:
        """Create a session (``session_id`` chosen by you, or generated). Raises SessionExists if the id is taken."""
        return SessionInfo.from_dict(_obj(await self._t.request("POST", "/v1/sessions", _create_body(session_id, idle_timeout))))

    async def list_sessions(self) -> List[SessionInfo]:
        """Every session, oldest first."""
        return _sessions(await self._t.request("GET", "/v1/sessions"))

    async def get_session(self, session_id: str) -> SessionInfo:
        """Describe a session. Raises SessionNotFound."""
        return SessionInfo.from_dict(_obj(await self._t.request("GET", "/v1/sessions/" + quote_segment(session_id))))

    async def delete_session(self, session_id: str) -> None:
        """Delete a session: kill its worker (and a running execution), remove its sandbox."""
        (await self._t.request("DELETE", "/v1/sessions/" + quote_segment(session_id))).raise_for_error()

    async def execute(self, session_id: str, code: str, *, timeout: Optional[float] = None) -> ExecutionResult:
        """Run ``code`` in the session's namespace. Raises SessionBusy while another execution or a reset runs."""
        r = await self._t.request("POST", "/v1/sessions/%s/execute" % quote_segment(session_id), _exec_body(code, timeout),
                                  timeout=_exec_timeout(self.timeout, timeout))
        return ExecutionResult.from_dict(_obj(r))

    async def reset_session(self, session_id: str, *, clear_sandbox: bool = False) -> SessionInfo:
        """Give the session a fresh worker (the namespace is gone); files are kept unless ``clear_sandbox``."""
        r = await self._t.request("POST", "/v1/sessions/%s/reset" % quote_segment(session_id), _body({"clear_sandbox": clear_sandbox}))
        return SessionInfo.from_dict(_obj(r))

    async def copy_to_sandbox(self, session_id: str, source: str, destination: Optional[str] = None) -> CopyResult:
        """Copy a host file or directory into the sandbox (done by the server, under its policy)."""
        doc: Dict[str, Any] = {"source": source}
        if destination:
            doc["destination"] = destination
        r = await self._t.request("POST", "/v1/sessions/%s/copy" % quote_segment(session_id), _body(doc))
        return CopyResult.from_dict(_obj(r))

    async def list_files(self, session_id: str) -> FileList:
        """Every entry of the sandbox (hidden ones too), depth first, sorted."""
        return FileList.from_dict(_obj(await self._t.request("GET", "/v1/sessions/%s/files" % quote_segment(session_id))))

    async def download_file(self, session_id: str, path: str, *, max_bytes: Optional[int] = None) -> bytes:
        """The bytes of a regular file of the sandbox (``path`` relative to it, e.g. an artifact's path).

        ``max_bytes``: a larger file raises :class:`LimitExceeded` without being read.
        """
        r = await self._t.request("GET", "/v1/sessions/%s/files/%s" % (quote_segment(session_id), quote_path(path)),
                                  max_body=max_bytes)
        return _bytes(r)

    async def keepalive(self, session_id: str) -> SessionInfo:
        """Count the session as used now: its ``expires_at`` moves on."""
        return SessionInfo.from_dict(_obj(await self._t.request("POST", "/v1/sessions/%s/keepalive" % quote_segment(session_id))))

    async def archive(self, session_id: str, *, max_bytes: Optional[int] = None) -> bytes:
        """The sandbox's regular files and directories as a tar archive."""
        return _bytes(await self._t.request("GET", "/v1/sessions/%s/archive" % quote_segment(session_id), max_body=max_bytes))

    async def unpack_archive(self, session_id: str, tar: bytes) -> Dict[str, Any]:
        """Unpack a tar archive into the sandbox."""
        return _obj(await self._t.request("POST", "/v1/sessions/%s/archive" % quote_segment(session_id), tar,
                                          content_type="application/x-tar"))

    async def execute_oneshot(self, code: str, *, timeout: Optional[float] = None) -> ExecutionResult:
        """Run ``code`` in a fresh worker and sandbox, both discarded afterwards."""
        r = await self._t.request("POST", "/v1/execute", _exec_body(code, timeout), timeout=_exec_timeout(self.timeout, timeout))
        return ExecutionResult.from_dict(_obj(r))
