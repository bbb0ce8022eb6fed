"""A small HTTP/1.1 client over a Unix socket or loopback TCP, sync and asyncio.

The standard library has no asyncio HTTP client and http.client cannot speak over a
Unix socket without subclassing, so both clients share this minimal implementation:
keep-alive connections in a small pool, Content-Length and chunked bodies, and one
transparent retry when a *reused* idle connection turns out to have been closed by
the server before it answered (the request was then never processed).
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
from dataclasses import dataclass
from typing import Any, Dict, Generator, List, Optional, Tuple
from urllib.parse import quote, urlsplit

from .errors import ClientTimeout, LimitExceeded, ProtocolError, ServerUnavailable, TracecellError, error_for

USER_AGENT = "tracecell-python/0.1"
MAX_IDLE = 4
_MAX_HEADER_LINE = 65536


def default_state_dir() -> str:
    """The server's default state directory: ``$XDG_STATE_HOME/tracecell``, or ``/var/tmp/tracecell-<uid>``."""
    x = os.environ.get("XDG_STATE_HOME", "")
    if x and os.path.isabs(x):
        return os.path.join(x, "tracecell")
    return "/var/tmp/tracecell-%d" % os.getuid()


def default_url() -> str:
    """``$TRACECELL_URL``, else the socket ``tracecell serve`` listens on by default."""
    env = os.environ.get("TRACECELL_URL", "").strip()
    if env:
        return env
    return "unix:" + os.path.join(default_state_dir(), "tracecell.sock")


@dataclass(frozen=True)
class Endpoint:
    """Where the server listens: a Unix socket path, or a TCP host and port."""

    unix_path: str = ""
    host: str = ""
    port: int = 0

    @property
    def display(self) -> str:
        """The address in the form ``tracecell serve --listen`` takes."""
        if self.unix_path:
            return "unix:" + self.unix_path
        return "%s:%d" % (("[%s]" % self.host) if ":" in self.host else self.host, self.port)

    @property
    def host_header(self) -> str:
        return "localhost" if self.unix_path else self.display


def parse_url(url: str) -> Endpoint:
    """Parse ``unix:/path``, ``unix:///path``, ``http://host:port`` or ``host:port``."""
    u = url.strip()
    if u.startswith("unix:"):
        path = u[len("unix:"):]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise ValueError("tracecell URL %r has no socket path: use unix:/path/to/tracecell.sock" % url)
        return Endpoint(unix_path=os.path.expanduser(path))
    if u.startswith("https://"):
        raise ValueError("tracecell URL %r: https is not supported; the server speaks plain HTTP on a Unix socket or loopback (use http:// or unix:)" % url)
    if "://" not in u:
        u = "http://" + u
    parts = urlsplit(u)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError("tracecell URL %r is not unix:/path or http://host:port" % url)
    if parts.path not in ("", "/"):
        raise ValueError("tracecell URL %r has a path; give only http://host:port" % url)
    return Endpoint(host=parts.hostname, port=parts.port or 80)


def quote_segment(s: str) -> str:
    """One path segment (a session id)."""
    return quote(s, safe="")


def quote_path(p: str) -> str:
    """A sandbox path, keeping its slashes (a leading one escaped, so that an absolute path survives the server's path cleaning)."""
    if p.startswith("/"):
        return "%2F" + quote(p.lstrip("/"), safe="/")
    return quote(p, safe="/")


@dataclass
class Response:
    status: int
    headers: Dict[str, str]
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8"))
        except ValueError as e:
            raise ProtocolError("the server answered HTTP %d with a body that is not JSON (%s); is the address a tracecell server?" % (self.status, e), status=self.status)

    def retry_after(self) -> Optional[float]:
        v = self.headers.get("retry-after", "")
        try:
            return float(v) if v else None
        except ValueError:
            return None

    def raise_for_error(self) -> None:
        """Raise the :class:`TracecellError` subclass an error answer maps to."""
        if self.status < 400:
            return
        code, message = "", ""
        try:
            doc = json.loads(self.body.decode("utf-8"))
            err = doc.get("error") if isinstance(doc, dict) else None
            if isinstance(err, dict):
                code = str(err.get("code") or "")
                message = str(err.get("message") or "")
        except ValueError:
            message = self.body.decode("utf-8", "replace").strip()[:500]
        raise error_for(self.status, code, message, self.retry_after())


def build_request(ep: Endpoint, method: str, target: str, body: Optional[bytes], token: Optional[str],
                  content_type: str = "application/json") -> bytes:
    lines = ["%s %s HTTP/1.1" % (method, target), "Host: " + ep.host_header, "User-Agent: " + USER_AGENT,
             "Accept: application/json"]
    if token:
        lines.append("Authorization: Bearer " + token)
    if body is not None:
        lines.append("Content-Type: " + content_type)
        lines.append("Content-Length: %d" % len(body))
    elif method in ("POST", "PUT", "PATCH"):
        lines.append("Content-Length: 0")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + (body or b"")


def parse_status(line: bytes) -> Tuple[str, int]:
    parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ProtocolError("the server's answer does not start with an HTTP status line (%r); is the address a tracecell server?" % line[:80])
    return parts[0], int(parts[1])


def parse_header(line: bytes, headers: Dict[str, str]) -> None:
    k, sep, v = line.decode("latin-1").partition(":")
    if not sep:
        raise ProtocolError("malformed HTTP header line from the server: %r" % line[:80])
    headers[k.strip().lower()] = v.strip()


def body_mode(method: str, status: int, headers: Dict[str, str]) -> Tuple[str, int]:
    """("none" | "length" | "chunked" | "eof", length)."""
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return "none", 0
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return "chunked", 0
    cl = headers.get("content-length")
    if cl is not None:
        try:
            return "length", int(cl)
        except ValueError:
            raise ProtocolError("bad Content-Length %r from the server" % cl)
    return "eof", 0


def keep_alive(version: str, headers: Dict[str, str], mode: str) -> bool:
    conn = headers.get("connection", "").lower()
    if mode == "eof" or "close" in conn:
        return False
    return version == "HTTP/1.1" or "keep-alive" in conn


def unavailable(ep: Endpoint, err: BaseException, default: bool) -> ServerUnavailable:
    """The error for a server that cannot be reached, saying how to start it."""
    why = getattr(err, "strerror", None) or str(err) or type(err).__name__
    if default:
        how = "start it with `tracecell serve` (it listens there by default), or set TRACECELL_URL to the address it listens on"
    else:
        how = "start it with `tracecell serve --listen %s`, or fix the URL (TRACECELL_URL)" % ep.display
    return ServerUnavailable("cannot connect to the tracecell server at %s (%s): %s" % (ep.display, why, how))


_CONNECT_ERRORS = (FileNotFoundError, ConnectionRefusedError, PermissionError, ConnectionResetError,
                   ConnectionAbortedError, NotADirectoryError, socket.gaierror, OSError)
_STALE_ERRORS = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class _Stale(Exception):
    """A reused connection was closed by the server before any answer."""


#: What the response parser asks its connection for: a line, exactly n bytes, or all until EOF.
_Read = Tuple[str, int]
_LINE: _Read = ("line", 0)
_EOF: _Read = ("eof", 0)

#: The response parser: it yields reads, is sent their bytes, returns (response, keep-alive).
_Parser = Generator[_Read, bytes, Tuple[Response, bool]]


def _status_line(line: bytes, reused: bool) -> bytes:
    """The first line of an answer, or the error for a connection that closed
    without one (stale when it was a kept-alive connection: the caller retries
    on a fresh one)."""
    if not line:
        if reused:
            raise _Stale()
        raise ProtocolError("the server closed the connection without answering")
    return line


def _too_large(n: int, max_body: int) -> LimitExceeded:
    return LimitExceeded("the server's answer is %d bytes or more, above the %d bytes this call accepts" % (n, max_body))


def parse_response(method: str, status_line: bytes, max_body: Optional[int] = None) -> _Parser:
    """Parse the rest of an HTTP/1.1 answer after its status line, without doing I/O.

    ``max_body`` caps the body of a successful answer (a sandbox file the code may have
    grown after it was listed): a longer one raises :class:`LimitExceeded` before it is read.

    One parser serves the blocking and the asyncio connections: each drives it with
    its own reads (``_SyncConn.drive``, ``_AsyncConn.drive``).
    """
    version, status = parse_status(status_line)
    headers: Dict[str, str] = {}
    while True:
        h = yield _LINE
        if not h:
            raise ProtocolError("the server closed the connection in the middle of the headers")
        if h in (b"\r\n", b"\n"):
            break
        parse_header(h, headers)
    mode, n = body_mode(method, status, headers)
    if status >= 300:
        max_body = None  # error bodies are small JSON
    if mode == "length":
        if max_body is not None and n > max_body:
            raise _too_large(n, max_body)
        body = yield ("exact", n)
    elif mode == "chunked":
        chunks: List[bytes] = []
        while True:
            size_line = yield _LINE
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise ProtocolError("bad chunk size %r from the server" % size_line[:40])
            if size == 0:
                while (yield _LINE) not in (b"\r\n", b"\n", b""):
                    pass
                break
            got = sum(len(c) for c in chunks) + size
            if max_body is not None and got > max_body:
                raise _too_large(got, max_body)
            chunks.append((yield ("exact", size)))
            yield ("exact", 2)
        body = b"".join(chunks)
    elif mode == "eof":
        body = yield _EOF
        if max_body is not None and len(body) > max_body:
            raise _too_large(len(body), max_body)
    else:
        body = b""
    return Response(status, headers, body), keep_alive(version, headers, mode)


# ---------------------------------------------------------------- sync


class _SyncConn:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.file = sock.makefile("rb")

    def close(self) -> None:
        try:
            self.file.close()
        finally:
            self.sock.close()

    def _line(self) -> bytes:
        line = self.file.readline(_MAX_HEADER_LINE + 1)
        if len(line) > _MAX_HEADER_LINE:
            raise ProtocolError("an HTTP header line from the server is too long")
        return line

    def _exact(self, n: int) -> bytes:
        data = self.file.read(n)
        if len(data) != n:
            raise ProtocolError("the server closed the connection in the middle of an answer")
        return data

    def roundtrip(self, method: str, req: bytes, reused: bool, max_body: Optional[int] = None) -> Tuple[Response, bool]:
        try:
            self.sock.sendall(req)
            line = self._line()
        except _STALE_ERRORS:
            if reused:
                raise _Stale()
            raise
        return self.drive(parse_response(method, _status_line(line, reused), max_body))

    def drive(self, parser: _Parser) -> Tuple[Response, bool]:
        """Run a response parser on this connection's blocking reads."""
        try:
            want = next(parser)
            while True:
                kind, n = want
                data = self._line() if kind == "line" else self._exact(n) if kind == "exact" else self.file.read()
                want = parser.send(data)
        except StopIteration as done:
            result: Tuple[Response, bool] = done.value
            return result


class _Transport:
    """What both transports keep: where the server is, how to authenticate, how long to wait."""

    def __init__(self, ep: Endpoint, token: Optional[str], timeout: Optional[float], connect_timeout: float,
                 is_default: bool) -> None:
        self.ep = ep
        self.token = token
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.is_default = is_default
        self._closed = False


class SyncTransport(_Transport):
    """Thread-safe: each request takes an idle connection or opens one."""

    def __init__(self, ep: Endpoint, token: Optional[str], timeout: Optional[float], connect_timeout: float,
                 is_default: bool) -> None:
        super().__init__(ep, token, timeout, connect_timeout, is_default)
        self._idle: List[_SyncConn] = []
        self._lock = threading.Lock()

    def _connect(self) -> _SyncConn:
        try:
            if self.ep.unix_path:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.settimeout(self.connect_timeout)
                    s.connect(self.ep.unix_path)
                except BaseException:
                    s.close()
                    raise
            else:
                s = socket.create_connection((self.ep.host, self.ep.port), timeout=self.connect_timeout)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except socket.timeout as e:
            raise unavailable(self.ep, e, self.is_default) from None
        except _CONNECT_ERRORS as e:
            raise unavailable(self.ep, e, self.is_default) from None
        s.settimeout(self.timeout)
        return _SyncConn(s)

    def request(self, method: str, target: str, body: Optional[bytes] = None,
                content_type: str = "application/json", timeout: Optional[float] = None,
                max_body: Optional[int] = None) -> Response:
        if self._closed:
            raise TracecellError("this tracecell client is closed; create a new one")
        req = build_request(self.ep, method, target, body, self.token, content_type)
        for _ in range(MAX_IDLE + 2):
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            reused = conn is not None
            if conn is None:
                conn = self._connect()
            conn.sock.settimeout(timeout if timeout is not None else self.timeout)
            try:
                resp, reuse = conn.roundtrip(method, req, reused, max_body)
            except _Stale:
                conn.close()
                continue
            except socket.timeout:
                conn.close()
                raise ClientTimeout("no answer from the tracecell server at %s within %ss; raise the client's timeout (the server's --exec-timeout bounds executions)" % (self.ep.display, timeout if timeout is not None else self.timeout)) from None
            except OSError as e:
                conn.close()
                raise ServerUnavailable("the connection to the tracecell server at %s failed (%s); is it still running?" % (self.ep.display, e)) from None
            except BaseException:
                conn.close()
                raise
            if reuse and not self._closed:
                with self._lock:
                    if len(self._idle) < MAX_IDLE:
                        self._idle.append(conn)
                        conn = None
            if conn is not None:
                conn.close()
            return resp
        raise ServerUnavailable("the tracecell server at %s keeps closing connections without answering" % self.ep.display)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()


# ---------------------------------------------------------------- asyncio


class _AsyncConn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.loop = asyncio.get_running_loop()

    def close(self) -> None:
        self.writer.close()

    async def _line(self) -> bytes:
        try:
            line = await self.reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as e:
            return e.partial
        except asyncio.LimitOverrunError:
            raise ProtocolError("an HTTP header line from the server is too long")
        return line

    async def _exact(self, n: int) -> bytes:
        try:
            return await self.reader.readexactly(n)
        except asyncio.IncompleteReadError:
            raise ProtocolError("the server closed the connection in the middle of an answer")

    async def roundtrip(self, method: str, req: bytes, reused: bool, max_body: Optional[int] = None) -> Tuple[Response, bool]:
        try:
            self.writer.write(req)
            await self.writer.drain()
            line = await self._line()
        except _STALE_ERRORS:
            if reused:
                raise _Stale()
            raise
        return await self.drive(parse_response(method, _status_line(line, reused), max_body))

    async def drive(self, parser: _Parser) -> Tuple[Response, bool]:
        """Run a response parser on this connection's stream reads."""
        try:
            want = next(parser)
            while True:
                kind, n = want
                if kind == "line":
                    data = await self._line()
                elif kind == "exact":
                    data = await self._exact(n)
                else:
                    data = await self.reader.read()
                want = parser.send(data)
        except StopIteration as done:
            result: Tuple[Response, bool] = done.value
            return result


class AsyncTransport(_Transport):
    """asyncio streams; a cancelled request closes its connection (the server then interrupts the execution)."""

    def __init__(self, ep: Endpoint, token: Optional[str], timeout: Optional[float], connect_timeout: float,
                 is_default: bool) -> None:
        super().__init__(ep, token, timeout, connect_timeout, is_default)
        self._idle: List[_AsyncConn] = []

    async def _connect(self) -> _AsyncConn:
        try:
            if self.ep.unix_path:
                fut = asyncio.open_unix_connection(self.ep.unix_path, limit=_MAX_HEADER_LINE * 2)
            else:
                fut = asyncio.open_connection(self.ep.host, self.ep.port, limit=_MAX_HEADER_LINE * 2)
            reader, writer = await asyncio.wait_for(fut, self.connect_timeout)
        except asyncio.TimeoutError as e:
            raise unavailable(self.ep, e, self.is_default) from None
        except _CONNECT_ERRORS as e:
            raise unavailable(self.ep, e, self.is_default) from None
        return _AsyncConn(reader, writer)

    async def request(self, method: str, target: str, body: Optional[bytes] = None,
                      content_type: str = "application/json", timeout: Optional[float] = None,
                      max_body: Optional[int] = None) -> Response:
        if self._closed:
            raise TracecellError("this tracecell client is closed; create a new one")
        req = build_request(self.ep, method, target, body, self.token, content_type)
        limit = timeout if timeout is not None else self.timeout
        for _ in range(MAX_IDLE + 2):
            conn = self._idle.pop() if self._idle else None
            if conn is not None and conn.loop is not asyncio.get_running_loop():
                conn = None  # made by an event loop that has ended (e.g. a second asyncio.run)
            reused = conn is not None
            if conn is None:
                conn = await self._connect()
            try:
                resp, reuse = await asyncio.wait_for(conn.roundtrip(method, req, reused, max_body), limit)
            except _Stale:
                conn.close()
                continue
            except asyncio.TimeoutError:
                conn.close()
                raise ClientTimeout("no answer from the tracecell server at %s within %ss; raise the client's timeout (the server's --exec-timeout bounds executions)" % (self.ep.display, limit)) from None
            except (ProtocolError, TracecellError):
                conn.close()
                raise
            except OSError as e:
                conn.close()
                raise ServerUnavailable("the connection to the tracecell server at %s failed (%s); is it still running?" % (self.ep.display, e)) from None
            except BaseException:
                conn.close()  # cancelled: the server sees the disconnect and interrupts the execution
                raise
            if reuse and not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
            else:
                conn.close()
            return resp
        raise ServerUnavailable("the tracecell server at %s keeps closing connections without answering" % self.ep.display)

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for c in idle:
            c.close()
            try:
                await c.writer.wait_closed()
            except OSError:
                pass
