"""Typed views of the server's JSON answers (api/openapi.yaml).

Each class has ``from_dict`` (tolerant of fields a newer server adds) and keeps the
decoded JSON in ``raw``. Timestamps are kept as the server's RFC 3339 strings.
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterator, List, Mapping, Optional


def _str(d: Mapping[str, Any], key: str, default: str = "") -> str:
    v = d.get(key)
    return v if isinstance(v, str) else default


def _int(d: Mapping[str, Any], key: str, default: int = 0) -> int:
    v = d.get(key)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def _float(d: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def _b64(d: Mapping[str, Any], key: str) -> Optional[bytes]:
    v = d.get(key)
    if not isinstance(v, str):
        return None
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return None


def _bool(d: Mapping[str, Any], key: str) -> bool:
    return d.get(key) is True


def _opt_str(d: Mapping[str, Any], key: str) -> Optional[str]:
    v = d.get(key)
    return v if isinstance(v, str) else None


def _list(d: Mapping[str, Any], key: str) -> List[Any]:
    v = d.get(key)
    return v if isinstance(v, list) else []


def _dict(v: Any) -> Dict[str, Any]:
    return v if isinstance(v, dict) else {}


#: The rule ids a denial (``Denial.rule``) can name: the server's catalogue (Go ``policy.Rules``,
#: api/rules.json with each rule's meaning; a test keeps the three in step).
DENY_RULES: FrozenSet[str] = frozenset({
    "outside-writable-roots", "writable-root-itself", "scratch-not-owned", "foreign-pty", "proc-write",
    "proc-read", "path-page", "deny-read", "read-not-allowed", "exec-not-allowed", "unix-abstract",
    "unix-socket-outside-roots", "net-deny", "net-loopback", "net-family", "kernel-rewritten-input",
    "foreign-abi", "never-reachable", "outside-tree", "forbidden-syscall", "unresolved-path", "unknown-kind",
    "no-path", "ioctl-not-allowed", "futex-memory", "set-id-bits", "deleted-file", "file-capabilities",
    "unresolvable-path", "max-procs", "scratch-full", "exec-mismatch", "server-state",
})

#: The rule ids of allowed calls and process events, as a trace names them.
ALLOW_RULES: FrozenSet[str] = frozenset({
    "inside-writable-root", "device", "scratch-create", "scratch-owned", "own-pty", "special-object",
    "net-admin-kept", "read", "initial-exec", "allow-exec", "net-allow", "loopback", "netlink", "unspec",
    "unix-socket-in-roots", "unix-autobind", "in-tree", "lifecycle",
})

#: Every rule id the server reports.
RULES: FrozenSet[str] = DENY_RULES | ALLOW_RULES


@dataclass
class DenialPath:
    """One path of a blocked operation: as the code gave it and as the tracer resolved it."""

    role: str
    given: str
    resolved: str
    exists: bool
    is_dir: bool = False
    given_bytes: Optional[bytes] = None
    """``given`` byte for byte when it is not valid UTF-8 (``given`` then shows U+FFFD)."""
    resolved_bytes: Optional[bytes] = None
    """``resolved`` byte for byte when it is not valid UTF-8."""
    null: bool = False
    """The path argument was a NULL pointer (the call acts on its dirfd itself); ``given`` is then ``""``."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DenialPath:
        return cls(role=_str(d, "role"), given=_str(d, "given"), resolved=_str(d, "resolved"),
                   exists=_bool(d, "exists"), is_dir=_bool(d, "is_dir"),
                   given_bytes=_b64(d, "given_base64"), resolved_bytes=_b64(d, "resolved_base64"),
                   null=_bool(d, "null"))


@dataclass
class Denial:
    """An action the policy blocked (or, in audit mode, would have blocked)."""

    decision: str
    """``deny``, ``audit`` or ``allow``."""
    kind: str
    """What the operation does: write, create, delete, rename, link, chmod, chown, xattr, lease, exec, connect, bind, read, ..."""
    syscall: str
    program: str
    paths: List[DenialPath]
    rule: str
    """The policy rule that decided, e.g. ``outside-writable-roots``, ``exec-not-allowed``, ``net-deny``, ``deny-read`` (:data:`RULES`)."""
    reason: str
    errno: str = ""
    flags: str = ""
    address: str = ""
    port: int = 0
    family: str = ""
    pid: int = 0
    time: str = ""
    tid: int = 0
    tried: List[DenialPath] = field(default_factory=list)
    """For a refused program found by a PATH search (subprocess, execvp): every path
    the search tried, in order, the first being ``paths[0]``; empty for one try."""
    summary: str = ""
    """The server's one line for the event, without the policy's words (Go ``report.Event.Summarize``), e.g.
    ``blocked write: openat("/etc/hosts", O_WRONLY|O_CREAT) by python3[4242]``; "" from servers before it."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Denial:
        return cls(
            decision=_str(d, "decision"), kind=_str(d, "kind"), syscall=_str(d, "syscall"),
            program=_str(d, "program"),
            paths=[DenialPath.from_dict(_dict(p)) for p in _list(d, "paths")],
            rule=_str(d, "rule"), reason=_str(d, "reason"), errno=_str(d, "errno"),
            flags=_str(d, "flags"), address=_str(d, "address"), port=_int(d, "port"),
            family=_str(d, "family"), pid=_int(d, "pid"), time=_str(d, "time"), tid=_int(d, "tid"),
            tried=[DenialPath.from_dict(_dict(p)) for p in _list(d, "tried")], summary=_str(d, "summary"), raw=dict(d),
        )


@dataclass
class Artifact:
    """A file the execution created or modified in the sandbox (figures are saved automatically)."""

    path: str
    """Relative to the sandbox."""
    size: int
    change: str
    """``created`` or ``modified``."""
    kind: str
    """``file``, or ``figure`` for a matplotlib figure the worker saved."""
    mime: str = ""

    @property
    def is_image(self) -> bool:
        return self.mime.startswith("image/")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Artifact:
        return cls(path=_str(d, "path"), size=_int(d, "size"), change=_str(d, "change"),
                   kind=_str(d, "kind"), mime=_str(d, "mime"))


@dataclass
class ExecError:
    """The exception the code raised."""

    name: str
    message: str
    traceback: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExecError:
        return cls(name=_str(d, "name"), message=_str(d, "message"), traceback=_str(d, "traceback"))


@dataclass
class ExecutionResult:
    """What one execution produced (returned also when the code raised, timed out or lost its worker)."""

    stdout: str
    stderr: str
    result: Optional[str]
    """repr of the last expression's value, or None."""
    error: Optional[ExecError]
    denials: List[Denial]
    artifacts: List[Artifact]
    duration_ms: float
    timed_out: bool
    session_lost: bool
    truncated: bool
    lost_reason: str = ""
    notes: List[str] = field(default_factory=list)
    denials_not_listed: int = 0
    """Denials past the list's cap (1000 per execution): counted, not listed."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the code ran to the end without raising, timing out or losing its worker."""
        return self.error is None and not self.timed_out and not self.session_lost

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExecutionResult:
        err = d.get("error")
        return cls(
            stdout=_str(d, "stdout"), stderr=_str(d, "stderr"), result=_opt_str(d, "result"),
            error=ExecError.from_dict(err) if isinstance(err, dict) else None,
            denials=[Denial.from_dict(_dict(x)) for x in _list(d, "denials")],
            artifacts=[Artifact.from_dict(_dict(x)) for x in _list(d, "artifacts")],
            duration_ms=_float(d, "duration_ms"), timed_out=_bool(d, "timed_out"),
            session_lost=_bool(d, "session_lost"), truncated=_bool(d, "truncated"),
            lost_reason=_str(d, "lost_reason"),
            notes=[n for n in _list(d, "notes") if isinstance(n, str)],
            denials_not_listed=_int(d, "denials_not_listed"), raw=dict(d),
        )


@dataclass
class WorkerInfo:
    """The Python worker behind a session."""

    host_pid: int
    worker_pid: int
    python: str
    python_version: str
    sandbox: str
    preloaded: List[str]
    started: str
    startup_ms: float
    preload_errors: Dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WorkerInfo:
        return cls(
            host_pid=_int(d, "host_pid"), worker_pid=_int(d, "worker_pid"), python=_str(d, "python"),
            python_version=_str(d, "python_version"), sandbox=_str(d, "sandbox"),
            preloaded=[p for p in _list(d, "preloaded") if isinstance(p, str)],
            started=_str(d, "started"), startup_ms=_float(d, "startup_ms"),
            preload_errors={str(k): str(v) for k, v in _dict(d.get("preload_errors")).items()},
        )


@dataclass
class SessionInfo:
    """A session: its sandbox directory, counters and current worker."""

    id: str
    sandbox: str
    created: str
    last_used: str
    executions: int
    busy: bool
    restarts: int
    alive: bool
    worker: Optional[WorkerInfo]
    #: The cell (server) holding the session; a session cannot move to another.
    cell: str = ""
    #: When the idle timeout closes the session if it stays unused (None: never).
    expires_at: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SessionInfo:
        w = d.get("worker")
        return cls(
            id=_str(d, "id"), sandbox=_str(d, "sandbox"), created=_str(d, "created"),
            last_used=_str(d, "last_used"), executions=_int(d, "executions"), busy=_bool(d, "busy"),
            restarts=_int(d, "restarts"), alive=_bool(d, "alive"),
            worker=WorkerInfo.from_dict(w) if isinstance(w, dict) else None,
            cell=d["cell"] if isinstance(d.get("cell"), str) else "",
            expires_at=d["expires_at"] if isinstance(d.get("expires_at"), str) else None, raw=dict(d),
        )


@dataclass
class SkippedEntry:
    """An entry of a copied directory that was not copied, and why."""

    path: str
    reason: str


@dataclass
class CopyResult:
    """What a copy into the sandbox did."""

    source: str
    """The resolved host source."""
    destination: str
    """Relative to the sandbox."""
    path: str
    """Absolute path in the sandbox."""
    files: int
    directories: int
    bytes: int
    skipped: List[SkippedEntry]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CopyResult:
        return cls(
            source=_str(d, "source"), destination=_str(d, "destination"), path=_str(d, "path"),
            files=_int(d, "files"), directories=_int(d, "directories"), bytes=_int(d, "bytes"),
            skipped=[SkippedEntry(_str(_dict(s), "path"), _str(_dict(s), "reason")) for s in _list(d, "skipped")],
        )


@dataclass
class FileEntry:
    """One entry of a sandbox listing."""

    path: str
    type: str
    """``file``, ``dir``, ``symlink`` or ``other``."""
    size: int
    mode: str
    mtime: str
    target: str = ""
    """A symlink's target, as stored."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FileEntry:
        return cls(path=_str(d, "path"), type=_str(d, "type"), size=_int(d, "size"),
                   mode=_str(d, "mode"), mtime=_str(d, "mtime"), target=_str(d, "target"))


@dataclass
class FileList:
    """A sandbox's entries, depth first and sorted (iterable)."""

    sandbox: str
    files: List[FileEntry]
    truncated: bool

    def __iter__(self) -> Iterator[FileEntry]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    def paths(self) -> List[str]:
        return [f.path for f in self.files]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FileList:
        return cls(sandbox=_str(d, "sandbox"), truncated=_bool(d, "truncated"),
                   files=[FileEntry.from_dict(_dict(f)) for f in _list(d, "files")])


@dataclass
class Health:
    """``GET /healthz``."""

    status: str
    """``ok``, ``draining`` (serving its open sessions, creating none) or ``shutting_down``."""
    sessions: int
    max_sessions: int
    pool_size: int
    pool_ready: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Health:
        return cls(status=_str(d, "status"), sessions=_int(d, "sessions"), max_sessions=_int(d, "max_sessions"),
                   pool_size=_int(d, "pool_size"), pool_ready=_int(d, "pool_ready"))
