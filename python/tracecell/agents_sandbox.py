"""A tracecell backend for the Agents SDK's ``SandboxAgent`` (``pip install "tracecell[agents]"``).

>>> from agents import Runner
>>> from agents.run import RunConfig
>>> from agents.sandbox import Manifest, SandboxAgent, SandboxRunConfig
>>> from agents.sandbox.capabilities import Shell, Filesystem
>>> from tracecell.agents import TracecellSandboxClient, TracecellSandboxClientOptions
>>> run_config = RunConfig(sandbox=SandboxRunConfig(
...     client=TracecellSandboxClient(),
...     options=TracecellSandboxClientOptions(net="deny", deny_read=("~/.ssh",)),
...     manifest=Manifest(root="/srv/agents/ws1")))

Every process the SDK starts for the model (``exec``, the ``exec_command`` tool with or
without a PTY, ``write_stdin`` sessions, shells and their children) runs under
``tracecell run``: writes only in the manifest's workspace root and the writable
``extra_path_grants``, reads per policy (``deny_read``), network per policy, exec only of
the programs ``allow_exec`` names (by default every program in the system's ``bin``
directories, see :data:`SHELL_AGENT_EXEC`), no signals or ptrace outside the tree. A
command's stdin is ``/dev/null`` (a PTY command's, its own pty): never the application's
stdin or terminal.

The workspace itself, the SDK's own file operations (read, write, ls, rm, mv, mkdir,
apply_patch, snapshots, resume) are those of the SDK's ``UnixLocalSandboxClient``, which
this client extends: they run in the application's process, confined to the workspace
by the SDK's path checks, and start no process. The processes are what tracecell
confines.

Each blocked action adds one line to the command's output (``tracecell: write to
/etc/passwd blocked: outside the sandbox; ...``), and each command's tracecell report is
kept: :attr:`TracecellSandboxSession.reports` in the process, and one JSON line per
command in ``<report_dir>/reports.jsonl`` for the operator.

Tested with the SDK versions the ``agents`` extra pins (0.24.x). The client relies on
the hooks of ``UnixLocalSandboxSession`` named in :data:`_SDK_HOOKS`; importing this
module with an SDK that lacks one fails with an error naming it, and
``python/tests/test_sandboxagent.py`` is the check to run against a new SDK version.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import errno as errno_mod
import fcntl
import io
import json
import os
import shutil
import signal
import stat
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, Callable, Collection, Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Tuple

try:
    from agents.sandbox.errors import ExecTimeoutError, WorkspaceArchiveReadError, WorkspaceArchiveWriteError
    from agents.sandbox.manifest import Manifest
    from agents.sandbox.sandboxes.unix_local import (
        UnixLocalSandboxClient,
        UnixLocalSandboxSession,
        UnixLocalSandboxSessionState,
    )
    from agents.sandbox.session import SandboxSession, SandboxSessionState
    from agents.sandbox.session.dependencies import Dependencies
    from agents.sandbox.session.manager import Instrumentation
    from agents.sandbox.session.sandbox_client import BaseSandboxClient, BaseSandboxClientOptions
    from agents.sandbox.snapshot import SnapshotBase, SnapshotSpec, resolve_snapshot
    from agents.sandbox.session.pty_types import resolve_pty_write_yield_time_ms
    from agents.sandbox.types import ExecResult
    from agents.sandbox.util.blocking_io import run_blocking_workspace_io
    from agents.sandbox.util.tar_utils import (
        UnsafeTarMemberError,
        safe_tar_member_rel_path,
        should_skip_tar_member,
        validate_tarfile,
    )
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise ImportError("tracecell.agents needs the OpenAI Agents SDK 0.24 with sandboxes: "
                      "pip install \"tracecell[agents]\" (%s)" % e) from e

from .format import describe_denials
from .types import Denial

__all__ = [
    "SHELL_AGENT_EXEC", "TracecellSandboxClient", "TracecellSandboxClientOptions", "TracecellSandboxSession",
    "TracecellSandboxSessionState", "CommandReport", "tracecell_reports",
]

#: The default ``allow_exec`` for shell agents: every program directly in the system's
#: ``bin`` directories (``ls``, ``cat``, ``grep``, ``sed``, ``python3``, ``git``...), as
#: resolved programs. Programs the tree writes into its workspace are not among them.
#: Set-id programs there (``sudo``, ``su``, ``passwd``) run without privilege: tracecell
#: sets ``PR_SET_NO_NEW_PRIVS`` before the first exec, so the kernel ignores set-id bits
#: and file capabilities (Linux 3.5+).
SHELL_AGENT_EXEC: Tuple[str, ...] = ("/usr/local/bin/*", "/usr/bin/*", "/bin/*")

# The hooks of UnixLocalSandboxSession this module overrides or calls. An SDK that
# renames one would leave processes unconfined, so their absence stops the import.
_SDK_HOOKS = ("_confined_exec_command", "_exec_internal", "_watch_process_exit", "_resolved_exec_context",
              "_terminate_pty_entry",
              "pty_exec_start", "from_state")
_missing = [h for h in _SDK_HOOKS if not hasattr(UnixLocalSandboxSession, h)]
if _missing:  # pragma: no cover - depends on the installed SDK
    raise ImportError("tracecell.agents: this openai-agents version has no UnixLocalSandboxSession.%s, which "
                      "TracecellSandboxClient needs to confine commands; install openai-agents 0.24.x"
                      % ", ".join(_missing))

# Variables passed from the application's environment to tracecell (which keeps the
# same ones for the tree, see README "Environment"); the manifest's environment is
# added and passed through by name (--keep-env), never on the command line.
_HOST_ENV = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TERM", "COLORTERM", "NO_COLOR",
             "COLUMNS", "LINES")
# What the SDK's login shell (sh -lc) reads at start: readable also when `read` restricts reads.
_LOGIN_SHELL_READS = ("/etc/profile", "/etc/profile.d", "/etc/bash.bashrc", "/etc/environment")
# How long a PTY command's tracecell gets, after SIGTERM, to kill its tree and write the
# report before the SDK's SIGKILL.
_TERM_GRACE = 5.0
# tracecell's own settings (read by tracecell, outside the sandbox): never taken from the
# manifest's environment.
_TRACECELL_OWN_PREFIX = "TRACECELL_"
# Set by tracecell itself inside the workspace.
_TRACECELL_SETS = frozenset(("HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "MPLCONFIGDIR"))

# The report file of the command being started, per asyncio task: set by
# _confined_exec_command, read after the command ends (the tasks that watch a
# PTY process are created after it and copy the context).
_REPORT: contextvars.ContextVar[Optional[Tuple[str, List[str]]]] = contextvars.ContextVar("tracecell_report", default=None)
# The exec timeout of the command being started: tracecell enforces it (--timeout), so the
# tree is killed by tracecell, which then writes the report; the SDK's own timer, which
# SIGKILLs tracecell's process group and leaves no report, is set this much later.
_TIMEOUT: contextvars.ContextVar[Optional[float]] = contextvars.ContextVar("tracecell_timeout", default=None)
_TIMEOUT_GRACE = 5.0
# Whether the command being started gets a PTY of its own (pty_exec_start with tty=True),
# set by pty_exec_start; every other command gets /dev/null as stdin (_confined_exec_command).
_TTY: contextvars.ContextVar[bool] = contextvars.ContextVar("tracecell_tty", default=False)
# The SDK starts the commands without a PTY with no stdin of their own, so they would
# inherit the application's fd 0: when the application runs on a terminal, the operator's
# terminal, which the model's command could read (keystrokes), reconfigure and write to, and
# which tracecell allows as the terminal it runs on. The SDK's create_subprocess_exec calls
# take no stdin from a subclass, so tracecell is told to give the command /dev/null
# (--null-stdin). Not a shell in front of tracecell: a dynamically linked program outside
# the sandbox would load whatever LD_PRELOAD the session's environment names, which may be
# a file in the workspace; tracecell is a static binary.


DEFAULT_MAX_SNAPSHOT_SIZE = 4 << 30
"""The default bound of a workspace snapshot (``max_snapshot_size``): 4 GiB."""


class TracecellSandboxClientOptions(BaseSandboxClientOptions):
    """The operator's policy for one sandbox session (``type`` ``"tracecell"``).

    The options apply on top of the client's ``policy_file``: a setting given here replaces
    the file's, ``deny_read`` adds to the file's, and a setting left at None keeps the file's.
    Paths are made absolute when the options are made, as the application means them: ``~``
    its home, a relative path its working directory (never the workspace's).

    Attributes:
        allow_exec: programs the commands may run besides the shell that starts each one:
            paths, directories or glob patterns (``"/usr/bin/*"``); None (the default): the
            policy file's ``allow_exec``, or without one :data:`SHELL_AGENT_EXEC`. They apply
            to every program, the shell the SDK starts for each command (``sh``) included:
            ``()`` runs nothing.
        net: ``"deny"``, ``"loopback"`` or ``"allow"``; None (the default): the policy file's
            ``net``, or ``"deny"``.
        deny_read: paths never readable (``"~/.ssh"``, ``"/srv/app/.env"``), besides the
            policy file's.
        read: when set, reads are restricted to these roots (plus the workspace, the
            writable grants and what programs need to start); None: the policy file's.
        memory: address space per process (``"2G"``); None: the policy file's, or no limit.
        max_procs: most live processes per command; None: the policy file's, or tracecell's
            default.
        max_snapshot_size: the most bytes a snapshot of the workspace may hold, as the sum of
            its files' sizes (default 4 GiB): a hard link is archived as a whole copy and a
            sparse file at its full size, so a command using little disk could otherwise
            make the application write without bound. A larger workspace fails to persist
            (``WorkspaceArchiveReadError``).
        exposed_ports: as ``UnixLocalSandboxClientOptions``.
    """

    type: Literal["tracecell"] = "tracecell"
    allow_exec: Optional[Tuple[str, ...]] = None
    net: Optional[Literal["deny", "loopback", "allow"]] = None
    deny_read: Tuple[str, ...] = ()
    read: Optional[Tuple[str, ...]] = None
    memory: Optional[str] = None
    max_procs: Optional[int] = None
    max_snapshot_size: int = DEFAULT_MAX_SNAPSHOT_SIZE
    exposed_ports: Tuple[int, ...] = ()

    def __init__(self, *, type: Literal["tracecell"] = "tracecell", allow_exec: Optional[Sequence[str]] = None,
                 net: Optional[Literal["deny", "loopback", "allow"]] = None, deny_read: Sequence[str] = (),
                 read: Optional[Sequence[str]] = None, memory: Optional[str] = None, max_procs: Optional[int] = None,
                 max_snapshot_size: int = DEFAULT_MAX_SNAPSHOT_SIZE, exposed_ports: Sequence[int] = ()) -> None:
        if isinstance(max_snapshot_size, bool) or not isinstance(max_snapshot_size, int) or max_snapshot_size <= 0:
            raise ValueError("TracecellSandboxClientOptions(max_snapshot_size=%r): give a positive number of bytes"
                             % (max_snapshot_size,))
        for name, value in (("allow_exec", allow_exec), ("deny_read", deny_read), ("read", read)):
            if isinstance(value, str):
                raise TypeError("TracecellSandboxClientOptions(%s=...) takes a list of paths, not one string: "
                                "write %s=[%r]" % (name, name, value))
        # Paths are the application's, resolved now (its home for ~, its directory for a
        # relative one): the commands run with the workspace as HOME and directory, and a
        # resumed session may be in another process.
        super().__init__(type=type, allow_exec=None if allow_exec is None else tuple(_app_exec(x) for x in allow_exec),
                         net=net, deny_read=tuple(_app_path(d) for d in deny_read),
                         read=None if read is None else tuple(_app_path(r) for r in read), memory=memory,
                         max_procs=max_procs, max_snapshot_size=max_snapshot_size,
                         exposed_ports=tuple(exposed_ports))


class TracecellSandboxSessionState(UnixLocalSandboxSessionState):
    """The session's state; the policy travels with it, so a resumed session keeps it."""

    type: Literal["tracecell"] = "tracecell"  # type: ignore[assignment]
    options: TracecellSandboxClientOptions = TracecellSandboxClientOptions()
    report_roots: Tuple[str, ...] = ()
    """The report directories of every client that ran the session (a resumed session
    keeps its earlier ones): all denied to its commands."""
    resolved_paths: Optional[Tuple[Tuple[str, ...], Tuple[str, ...]]] = None
    """The workspace and writable grants, and the read-only grants, as resolved when the
    session was made; a resume that resolves them elsewhere is refused."""


# What a session keeps of its commands' reports in the application's memory, and how large
# reports.jsonl may grow before its lines stop listing denials (each report file has them).
_MAX_KEPT_REPORT_BYTES = 64 << 20
_MAX_JSONL_BYTES = 256 << 20


@dataclass
class CommandReport:
    """One command's tracecell report."""

    command: List[str]
    """The command as the SDK started it (inside ``tracecell run``)."""
    path: str
    """The report file tracecell wrote."""
    exit_code: Optional[int]
    denials: List[Denial]
    """Every blocked action, with syscall, paths (given and resolved), program, pid, rule and reason."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)
    """The whole report (README "Reports")."""


class TracecellSandboxSession(UnixLocalSandboxSession):
    """A ``UnixLocalSandboxSession`` whose every process runs under ``tracecell run``."""

    state: TracecellSandboxSessionState
    _tracecell: str
    _file_policy: Dict[str, Any]
    _paths: Tuple[List[str], List[str]]
    _report_dir: str
    _reports: List[CommandReport]

    def _configure(self, tracecell: str, file_policy: Dict[str, Any], report_dir: str, report_root: str) -> None:
        self._tracecell = tracecell
        self._file_policy = file_policy
        self._report_dir = report_dir
        # The client's report directory, every session's under it (and those of earlier
        # clients of a resumed session): denied to every command, so that no session
        # reads or rewrites another's policies or reports.
        if report_root not in self.state.report_roots:
            self.state.report_roots = self.state.report_roots + (report_root,)
        # The workspace and the grants, resolved once, when the session was made (kept in
        # its state): a command cannot retarget them, nor can a resume after it did.
        paths = _session_paths(self.state.manifest, self.state.report_roots, file_policy)
        if self.state.resolved_paths is None:
            self.state.resolved_paths = (tuple(paths[0]), tuple(paths[1]))
        elif (tuple(paths[0]), tuple(paths[1])) != tuple(tuple(x) for x in self.state.resolved_paths):
            raise ValueError("tracecell.agents: the workspace or a path grant of this session now resolves to %s, "
                             "not to %s as when the session was made (a symlink put in its place?): not resumed"
                             % (paths, self.state.resolved_paths))
        self._paths = (list(self.state.resolved_paths[0]), list(self.state.resolved_paths[1]))
        self._reports = []
        self._report_sizes: List[int] = []
        # Like UnixLocal's own allow-list: only these variables of the application's
        # environment reach tracecell; the manifest's environment is added to them.
        self._host_environment_allowlist = frozenset(_HOST_ENV)

    def _keep_report(self, rep: CommandReport, size: int) -> None:
        """Keep ``rep`` (its file ``size`` bytes) in :attr:`reports`, forgetting the oldest past
        :data:`_MAX_KEPT_REPORT_BYTES`: the application hosts every session, and a command
        can make its report many megabytes (red team, round 49: +44 MB a command)."""
        self._reports.append(rep)
        self._report_sizes.append(size)
        while len(self._reports) > 1 and sum(self._report_sizes) > _MAX_KEPT_REPORT_BYTES:
            del self._reports[0], self._report_sizes[0]

    @property
    def reports(self) -> List[CommandReport]:
        """The reports of the commands run so far, oldest first: the latest ones whose files
        add up to at most 64 MiB (each command's file stays in :attr:`report_dir`)."""
        return list(self._reports)

    @property
    def report_dir(self) -> str:
        """The directory with each command's report and ``reports.jsonl``."""
        return self._report_dir

    async def _resolved_exec_context(self) -> Tuple[Dict[str, str], str]:
        env, cwd = await super()._resolved_exec_context()
        env.setdefault("PATH", os.defpath)
        # tracecell runs outside the sandbox with this environment, and the TRACECELL_*
        # names are its own settings (TRACECELL_CPUPROFILE names a file it writes): the
        # manifest's environment must not set them, for tracecell or for the tree.
        for k in [k for k in env if k.startswith(_TRACECELL_OWN_PREFIX)]:
            del env[k]
        return env, cwd

    def _session_policy(self) -> Dict[str, Any]:
        """The policy every command of the session runs under (``tracecell run --policy``)."""
        o = self.state.options
        f = self._file_policy
        writable, readonly = self._paths
        pol = dict(f)
        # The workspace first: tracecell puts HOME and TMPDIR in the first writable root.
        write = writable + [w for w in f.get("write", []) if w not in writable]
        read: Optional[List[str]] = None
        if o.read is not None:
            read = [_app_path(r) for r in o.read]
        elif "read" in f:
            read = list(f["read"])
        pol["write"] = write
        if read is not None:
            pol["read"] = read + readonly + list(_LOGIN_SHELL_READS)
        # Denials only add up; the reports (every session's) are the operator's, and the
        # workspaces the clients make are each session's own (its own is a writable root,
        # carved out of the denied directory).
        pol["deny_read"] = (list(f.get("deny_read", [])) + [_app_path(d) for d in o.deny_read]
                            + list(self.state.report_roots) + [_default_workspace_parent()]
                            + _snapshot_stores(self.state.snapshot))
        # Paths are the application's (its home for ~, its directory for a relative
        # one), never the workspace, which is HOME and the directory for tracecell.
        if o.allow_exec is not None:
            pol["allow_exec"] = [_app_exec(x) for x in o.allow_exec]
        elif "allow_exec" in f:
            pol["allow_exec"] = [_app_exec(x) for x in f["allow_exec"]]
        else:
            pol["allow_exec"] = list(SHELL_AGENT_EXEC)
        pol["net"] = o.net if o.net is not None else f.get("net", "deny")
        if o.memory:
            pol["memory"] = o.memory
        if o.max_procs:
            pol["max_procs"] = o.max_procs
        return pol

    async def persist_workspace(self) -> io.IOBase:
        """The workspace as a tar archive, read through directory descriptors.

        UnixLocal's archive (``tarfile.add``) runs in the application, unconfined, and
        opens every entry by its full path: a command of the session running meanwhile
        swapped a directory for a symlink (``RENAME_EXCHANGE``) between the listing and
        the open, and the snapshot, restored into the workspace, carried another
        session's files or a ``deny_read`` path out (red team, session 25). Here each
        entry is opened relative to its directory's descriptor with ``O_NOFOLLOW``, so a
        swapped entry is skipped, never followed. The members are UnixLocal's: the root
        as ``.``, no devices or FIFOs, symlinks last (absolute targets into the workspace
        made relative, as UnixLocal does), no hard links."""
        root = str(self.state.manifest.root)
        if not await asyncio.to_thread(os.path.isdir, root):
            raise WorkspaceArchiveReadError(path=Path(root), context={"reason": "workspace_root_not_found"})
        skip = self._persist_workspace_skip_relpaths()
        # On disk, not in memory: a command's sparse file of many gigabytes (no blocks
        # used) is archived at its full size and took the application's memory with it.
        buf = tempfile.TemporaryFile()
        try:
            limit = self.state.options.max_snapshot_size
            await run_blocking_workspace_io(lambda: _archive_workspace(root, buf, skip, limit))
        except (tarfile.TarError, OSError, _TooDeep) as e:
            buf.close()
            raise WorkspaceArchiveReadError(path=Path(root), cause=e) from e
        buf.seek(0)
        return buf

    async def hydrate_workspace(self, data: io.IOBase) -> None:
        """Extracts a workspace archive through directory descriptors.

        UnixLocal's restore (``safe_extract_tarfile``) checks each member's parent
        directories and then opens the member by its full path, in the application: a
        command of the session running meanwhile swapped a checked directory for a
        symlink (timed by inotify on the unlink of a large file the restore replaces)
        and the restore created files in another session's workspace or any directory
        of the application's user (red team, session 25). Here every directory on a
        member's path is opened from the root's descriptor with ``O_NOFOLLOW`` and the
        member is made relative to its parent's descriptor, so a symlink put in between
        fails the restore instead of being followed. The archive is checked first as
        UnixLocal does (no absolute or ``..`` names, no links out of the workspace)."""
        root = str(self.state.manifest.root)

        def _extract() -> None:
            os.makedirs(root, exist_ok=True)
            with tarfile.open(fileobj=data, mode="r:*") as tar:
                _extract_workspace(root, tar)

        try:
            await run_blocking_workspace_io(_extract)
        except UnsafeTarMemberError as e:
            raise WorkspaceArchiveWriteError(path=Path(root), context={"reason": e.reason, "member": e.member},
                                             cause=e) from e
        except (tarfile.TarError, OSError, ValueError) as e:
            # ValueError: a member name the OS refuses (an embedded NUL byte of a PAX
            # header), which callers catching the SDK's errors would otherwise miss.
            raise WorkspaceArchiveWriteError(path=Path(root), cause=e) from e

    def _write_policy(self, report: str) -> str:
        """Writes the command's policy next to its report, as a new file; returns its path."""
        path = report[:-len(".json")] + ".policy.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(self._session_policy(), out, indent=1, sort_keys=True)
        return path

    def _tracecell_argv(self, report: str, env: Mapping[str, str]) -> List[str]:
        argv = [self._tracecell, "run", "--quiet", "--report", report]
        timeout = _TIMEOUT.get()
        if timeout is not None:
            # The flag replaces the policy file's timeout: the smaller of the two holds.
            ft = self._file_policy.get("timeout")
            if isinstance(ft, (int, float)) and ft > 0:
                timeout = min(timeout, float(ft))
            argv += ["--timeout", "%.3f" % max(timeout, 0.001)]
        argv += ["--policy", self._write_policy(report)]
        # The manifest's variables by name (a flag replaces the file's list: the file's too).
        keep = list(self._file_policy.get("keep_env", []))
        keep += [k for k in sorted(env) if k not in _HOST_ENV and k not in _TRACECELL_SETS
                 and not k.startswith("LC_") and k not in keep]
        for k in keep:
            argv += ["--keep-env", k]
        return argv

    def _confined_exec_command(self, *, command_parts: List[str], workspace_root: Path,
                               env: Mapping[str, str]) -> List[str]:
        report = os.path.join(self._report_dir, "%s.json" % uuid.uuid4().hex)
        _REPORT.set((report, list(command_parts)))
        # The command tracecell starts is always /bin/sh, which execs the SDK's command: the
        # initial exec is always allowed (README "Programs"), so this puts the program the
        # SDK (or the model, through exec_command's `shell` argument) names under allow_exec
        # like every later exec.
        # A PTY command's stdin is its own pty (the SDK's openpty); any other's is /dev/null,
        # never the application's stdin.
        stdin = [] if _TTY.get() else ["--null-stdin"]
        return self._tracecell_argv(report, env) + stdin + ["--", "/bin/sh", "-c", 'exec "$@"', "sh"] + list(command_parts)

    def _collect(self, exit_code: Optional[int]) -> str:
        """Reads the report of the command just ended, keeps it, and returns the lines for the model."""
        return self._collect_report(exit_code)[0]

    def _collect_report(self, exit_code: Optional[int]) -> Tuple[str, bool]:
        """The lines for the model, and whether tracecell's --timeout ended the command."""
        started = _REPORT.get()
        _REPORT.set(None)
        if started is None:
            return "", False
        report, command = started
        try:
            with open(report, "rb") as f:
                raw = json.load(f)
        except (OSError, ValueError):
            return "", False  # tracecell did not start, or was killed: its own message is in the output
        denials = [Denial.from_dict(d) for d in raw.get("denials") or [] if isinstance(d, dict)]
        rep = CommandReport(command=command, path=report, exit_code=exit_code, denials=denials, raw=raw)
        try:
            size = os.path.getsize(report)
        except OSError:
            size = 0
        self._keep_report(rep, size)
        try:
            jsonl = os.path.join(self._report_dir, "reports.jsonl")
            line: Dict[str, Any] = {"command": rep.command, "report": report, "exit_code": exit_code,
                                    "denials": [d.raw for d in denials]}
            try:
                full = os.path.getsize(jsonl) + size > _MAX_JSONL_BYTES
            except OSError:
                full = False
            if full:
                # Each command's own report file has them; the log stays bounded.
                line["denials"], line["denials_not_listed"] = [], len(denials)
            with open(jsonl, "a") as f:
                f.write(json.dumps(line) + "\n")
        except OSError:
            pass
        lines = [_shell_wording(s) for s in describe_denials(denials, sandbox=str(Path(self.state.manifest.root).resolve()))]
        ex = raw.get("exit")
        timed_out = isinstance(ex, dict) and ex.get("timed_out") is True
        return "".join("tracecell: %s\n" % s for s in lines), timed_out

    async def _exec_internal(self, *command: Any, timeout: Optional[float] = None) -> ExecResult:
        _REPORT.set(None)
        _TIMEOUT.set(timeout)
        try:
            result = await super()._exec_internal(*command, timeout=None if timeout is None else timeout + _TIMEOUT_GRACE)
        finally:
            _TIMEOUT.set(None)
        blocked, timed_out = self._collect_report(result.exit_code)
        if timed_out:
            # As the SDK reports its own timeouts; the report, kept, says what ran until then.
            raise ExecTimeoutError(command=[str(c) for c in command], timeout_s=timeout,
                                   context={"tracecell_report": self._reports[-1].path if self._reports else ""})
        if not blocked:
            return result
        stderr = result.stderr
        if stderr and not stderr.endswith(b"\n"):
            stderr += b"\n"
        return ExecResult(stdout=result.stdout, stderr=stderr + blocked.encode("utf-8"), exit_code=result.exit_code)

    async def pty_exec_start(self, *command: Any, **kwargs: Any) -> Any:
        _REPORT.set(None)
        token = _TTY.set(bool(kwargs.get("tty", False)))
        try:
            return await super().pty_exec_start(*command, **kwargs)
        finally:
            _TTY.reset(token)

    async def pty_write_stdin(self, *, session_id: int, chars: str, yield_time_s: Optional[float] = None,
                              max_output_tokens: Optional[int] = None) -> Any:
        """UnixLocal's, but the input is written without blocking the event loop.

        UnixLocal writes the input with one blocking ``os.write`` on the pty's master, on
        the event loop: a command that never reads its terminal (``sleep``) and a model
        that sends it some 200 KB of input filled the terminal's buffer, and the write,
        and with it every session and timer of the application, blocked for good (red
        team, session 25). Here the master is written non-blocking in pieces as the
        command reads them, for at most _STDIN_WRITE_TIMEOUT seconds; input the command
        has not taken by then is dropped with an error."""
        async with self._pty_lock:
            entry = self._resolve_pty_session_entry(pty_processes=self._pty_processes, session_id=session_id)
        if chars:
            if not entry.tty or entry.primary_fd is None:
                raise RuntimeError("stdin is not available for this process")
            left = await _write_pty(entry.primary_fd, chars.encode("utf-8"))
            if left:
                raise RuntimeError("the command did not read its input: %d of %d bytes not written in %.0f s"
                                   % (left, len(chars.encode("utf-8")), _STDIN_WRITE_TIMEOUT))
            await asyncio.sleep(0.1)
        yield_time_ms = 250 if yield_time_s is None else int(yield_time_s * 1000)
        output, original_token_count, output_closed = await self._collect_pty_output(
            entry=entry,
            yield_time_ms=resolve_pty_write_yield_time_ms(yield_time_ms=yield_time_ms, input_empty=chars == ""),
            max_output_tokens=max_output_tokens,
        )
        entry.last_used = time.monotonic()
        return await self._finalize_pty_update(process_id=session_id, entry=entry, output=output,
                                               original_token_count=original_token_count,
                                               output_closed=output_closed)

    async def _terminate_pty_entry(self, entry: Any) -> None:
        # The SDK ends a PTY command (at stop, or pruning old ones) with SIGKILL to its
        # process group: tracecell would die before writing the command's report. SIGTERM
        # to tracecell first: it kills the tree, writes the report and exits 143; the
        # command's watch task then collects the report. SIGKILL after a grace period.
        process = entry.process
        if process.returncode is None and process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
            wait = entry.wait_task if entry.wait_task is not None else asyncio.ensure_future(process.wait())
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(wait), _TERM_GRACE)
        await super()._terminate_pty_entry(entry)

    async def _watch_process_exit(self, entry: Any) -> None:
        # As UnixLocal's, with the blocked actions appended to the output before it is
        # marked closed: this task was created after _confined_exec_command, in a copy
        # of the context that holds the command's report path.
        await entry.process.wait()
        if entry.pump_tasks:
            await asyncio.gather(*entry.pump_tasks, return_exceptions=True)
        blocked = self._collect(entry.process.returncode)
        if blocked:
            async with entry.output_lock:
                entry.output_chunks.append(blocked.encode("utf-8"))
        entry.output_closed.set()
        entry.output_notify.set()


# describe_denial's advice names the python tool's helpers; in a shell the same step is cp.
_SHELL_ADVICE = (
    ("call copy_to_sandbox first, then", "copy the file into the workspace (cp), then"),
    ("call copy_to_sandbox and work on the copy", "copy it into the workspace (cp) and work on the copy"),
    ("call copy_to_sandbox and use the copy", "copy it into the workspace (cp) and use the copy"),
    ("running programs is not allowed here; do it in Python instead",
     "this program is not allowed here; use a system program (such as those in /usr/bin) or python3 instead"),
    ("only your own Python process and its children", "only the processes your command started"),
)


def _shell_wording(line: str) -> str:
    for old, new in _SHELL_ADVICE:
        line = line.replace(old, new)
    return line


def _find_tracecell(path: Optional[str]) -> str:
    p = path or os.environ.get("TRACECELL_BIN") or shutil.which("tracecell")
    if not p:
        raise FileNotFoundError("tracecell.agents: the tracecell binary was not found: put it on PATH, set "
                                "$TRACECELL_BIN, or pass TracecellSandboxClient(tracecell=\"/path/to/tracecell\")")
    if not (os.path.isfile(p) and os.access(p, os.X_OK)):
        raise FileNotFoundError("tracecell.agents: %s is not an executable file: pass the tracecell binary "
                                "as TracecellSandboxClient(tracecell=...) or $TRACECELL_BIN" % p)
    if _dynamically_linked(p):
        # tracecell runs outside the sandbox with the session's environment: a dynamically
        # linked one would load whatever LD_PRELOAD names, a file in the workspace included.
        raise ValueError("tracecell.agents: %s is dynamically linked (it has an ELF interpreter): the "
                         "SandboxAgent backend needs the static build (make build, or the release binary)" % p)
    return os.path.abspath(p)


_MAX_DEPTH = 256
"""How deep a workspace's directories may go for a snapshot: each level holds a
directory descriptor of the application while the walk is below it."""


class _TooDeep(Exception):
    """A workspace deeper than _MAX_DEPTH directories, or larger than its snapshot bound."""


def _extract_workspace(root: str, tar: tarfile.TarFile) -> None:
    """Extracts tar into root through directory descriptors (see hydrate_workspace):
    directories and regular files first, then symlinks, as UnixLocal does; a file's
    mode as the tarfile data filter would leave it."""
    validate_tarfile(tar, allow_external_symlink_targets=False)
    members = tar.getmembers()
    rootfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    dirflags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

    def parent(member: tarfile.TarInfo, rel: PurePosixPath) -> int:
        fd = os.dup(rootfd)
        for part in rel.parts[:-1]:
            try:
                try:
                    nfd = os.open(part, dirflags, dir_fd=fd)
                except FileNotFoundError:
                    os.mkdir(part, 0o755, dir_fd=fd)
                    nfd = os.open(part, dirflags, dir_fd=fd)
            except OSError as e:
                os.close(fd)
                if e.errno in (errno_mod.ELOOP, errno_mod.ENOTDIR):
                    raise UnsafeTarMemberError(member=member.name, reason="a symlink or file on the path: %s" % rel)
                raise
            os.close(fd)
            fd = nfd
        return fd

    def leaf(pfd: int, name: str) -> Optional[os.stat_result]:
        try:
            return os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def replaceable(member: tarfile.TarInfo, rel: PurePosixPath, pfd: int) -> None:
        st = leaf(pfd, rel.name)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise UnsafeTarMemberError(member=member.name, reason="destination directory already exists: %s" % rel)
        if st is not None:
            os.unlink(rel.name, dir_fd=pfd)

    def placed(links: bool) -> Iterator[Tuple[tarfile.TarInfo, PurePosixPath]]:
        # The members to place, symlinks (links) or the rest, with their paths.
        for member in members:
            if member.issym() != links:
                continue
            rel_path = safe_tar_member_rel_path(member, allow_symlinks=True)
            if rel_path is not None:
                yield member, PurePosixPath(rel_path.as_posix())

    try:
        for member, rel in placed(False):
            pfd = parent(member, rel)
            try:
                if member.isdir():
                    st = leaf(pfd, rel.name)
                    if st is not None and not stat.S_ISDIR(st.st_mode):
                        os.unlink(rel.name, dir_fd=pfd)
                        st = None
                    if st is None:
                        os.mkdir(rel.name, 0o755, dir_fd=pfd)
                    continue
                src = tar.extractfile(member)
                if src is None:
                    raise UnsafeTarMemberError(member=member.name, reason="missing file payload")
                with src:
                    replaceable(member, rel, pfd)
                    fd = os.open(rel.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                                 0o600, dir_fd=pfd)
                    with os.fdopen(fd, "wb") as out:
                        shutil.copyfileobj(src, out)
                        out.flush()
                        os.fchmod(out.fileno(), _restored_mode(member.mode))
            finally:
                os.close(pfd)
        for member, rel in placed(True):
            pfd = parent(member, rel)
            try:
                replaceable(member, rel, pfd)
                os.symlink(member.linkname, rel.name, dir_fd=pfd)
            finally:
                os.close(pfd)
    finally:
        os.close(rootfd)


def _restored_mode(mode: int) -> int:
    """A regular file's mode as the tarfile data filter leaves it (and UnixLocal's
    restore): no set-id, sticky or group/other write bits, execute only when the owner
    had it, and always readable and writable by the owner."""
    restored = mode & 0o755
    if not restored & 0o100:
        restored &= ~0o111
    return restored | 0o600


_SWAPPED = (errno_mod.ELOOP, errno_mod.ENOTDIR, errno_mod.ENOENT)
"""What an openat with O_NOFOLLOW of an entry listed a moment before answers when a
command of the session replaced or removed it in between: the entry is left out."""


def _open_entry(name: str, dfd: int, flags: int) -> Optional[int]:
    """Opens entry name of directory dfd read-only with O_NOFOLLOW and flags; None when a
    command of the session replaced or removed it since the listing (_SWAPPED)."""
    try:
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | flags, dir_fd=dfd)
    except OSError as e:
        if e.errno in _SWAPPED:
            return None
        raise


def _archive_workspace(root: str, out: IO[bytes], skip: Collection[Any], limit: int) -> None:
    """Writes the tree at root into out as a tar archive, every entry opened relative to
    its directory's descriptor with O_NOFOLLOW (see persist_workspace); more than limit
    bytes of file data is refused (_TooDeep)."""
    roots = (Path(root), Path(os.path.realpath(root)))
    symlinks: List[tarfile.TarInfo] = []
    total = [0]

    def info(name: str, st: os.stat_result, kind: bytes) -> tarfile.TarInfo:
        ti = tarfile.TarInfo(name)
        ti.type, ti.mode, ti.mtime = kind, stat.S_IMODE(st.st_mode), int(st.st_mtime)
        ti.uid, ti.gid = st.st_uid, st.st_gid
        return ti

    def walk(tar: tarfile.TarFile, dfd: int, rel: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise _TooDeep("the workspace has directories more than %d deep (%s): not archived" % (_MAX_DEPTH, rel))
        for name in sorted(os.listdir(dfd)):
            arc = rel + "/" + name
            if should_skip_tar_member(arc, skip_rel_paths=skip, root_name=None):
                continue
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(name, dir_fd=dfd)
                except OSError as e:
                    if e.errno in _SWAPPED or e.errno == errno_mod.EINVAL:
                        continue
                    raise
                ti = info(arc, st, tarfile.SYMTYPE)
                ti.linkname = target
                symlinks.append(ti)
            elif stat.S_ISDIR(st.st_mode):
                fd = _open_entry(name, dfd, os.O_DIRECTORY)
                if fd is None:
                    continue
                try:
                    tar.addfile(info(arc, os.fstat(fd), tarfile.DIRTYPE))
                    walk(tar, fd, arc, depth + 1)
                finally:
                    os.close(fd)
            elif stat.S_ISREG(st.st_mode):
                fd = _open_entry(name, dfd, os.O_NONBLOCK)
                if fd is None:
                    continue
                with os.fdopen(fd, "rb") as f:
                    fst = os.fstat(f.fileno())
                    if not stat.S_ISREG(fst.st_mode):
                        continue  # swapped for a FIFO or a device after the listing
                    total[0] += fst.st_size
                    if total[0] > limit:
                        raise _TooDeep("the workspace's files hold more than max_snapshot_size (%d bytes; %s "
                                       "reached it): not archived" % (limit, arc))
                    ti = info(arc, fst, tarfile.REGTYPE)
                    ti.size = fst.st_size
                    tar.addfile(ti, f)
            # FIFOs, sockets and devices are left out, as UnixLocal does.

    rootfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with tarfile.open(fileobj=out, mode="w") as tar:
            tar.addfile(info(".", os.fstat(rootfd), tarfile.DIRTYPE))
            walk(tar, rootfd, ".", 1)
            members = {PurePosixPath(m.name).as_posix(): m for m in [*tar.getmembers(), *symlinks]}
            for ti in symlinks:
                tar.addfile(_rebased_symlink(ti, members, roots))
    finally:
        os.close(rootfd)


def _rebased_symlink(ti: tarfile.TarInfo, members: Mapping[str, tarfile.TarInfo],
                     roots: Tuple[Path, ...]) -> tarfile.TarInfo:
    """A symlink member as UnixLocal archives it: an absolute target inside the workspace
    made relative when it stays among the archived members (its private helpers; the
    target is kept as it is when they are not there)."""
    try:
        from agents.sandbox.sandboxes import unix_local as ul
        rebase: Callable[..., str] = getattr(ul, "_rebase_symlink_target")
        stays: Callable[..., bool] = getattr(ul, "_symlink_target_stays_under")
    except (ImportError, AttributeError):
        return ti
    out = copy.copy(ti)
    if ti.linkname.startswith("/"):
        rebased = rebase(ti.linkname, link_name=ti.name, roots=roots)
        if rebased != ti.linkname and stays(members, link_name=ti.name, target=rebased):
            out.linkname = rebased
    return out


_STDIN_WRITE_TIMEOUT = 10.0
"""How long pty_write_stdin waits for a command to take its input."""


async def _write_pty(fd: int, data: bytes) -> int:
    """Writes data to a pty master without blocking the event loop: non-blocking writes
    as the terminal's input buffer drains, for at most _STDIN_WRITE_TIMEOUT seconds. The
    fd's flags are set back before every wait (the output reader shares the fd). Returns
    how many bytes were not written; a pty whose other end is gone ends it as UnixLocal
    does (its errors ignored)."""
    deadline = time.monotonic() + _STDIN_WRITE_TIMEOUT
    while data:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        try:
            n = os.write(fd, data)
        except BlockingIOError:
            n = 0
        except OSError as e:
            if e.errno in (errno_mod.EIO, errno_mod.EBADF, errno_mod.EPIPE, errno_mod.ECONNRESET):
                return 0
            raise
        finally:
            fcntl.fcntl(fd, fcntl.F_SETFL, flags)
        data = data[n:]
        if data:
            if time.monotonic() >= deadline:
                return len(data)
            await asyncio.sleep(0.01)
    return 0


def _unlock_tree(root: str) -> None:
    """Gives the owner rwx on every directory under root (and root), through O_PATH
    descriptors opened with O_NOFOLLOW from their parent's: a command's chmod 000 must not
    keep its workspace from being removed. Errors are left to the removal that follows."""
    def unlock(pfd: int, name: str, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        try:
            fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pfd)
        except OSError:
            return
        try:
            os.chmod("/proc/self/fd/%d" % fd, 0o700)
            try:
                dfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pfd)
            except OSError:
                return
            try:
                for entry in os.listdir(dfd):
                    if stat.S_ISDIR(os.stat(entry, dir_fd=dfd, follow_symlinks=False).st_mode):
                        unlock(dfd, entry, depth + 1)
            finally:
                os.close(dfd)
        except OSError:
            return
        finally:
            os.close(fd)

    parent = os.open(os.path.dirname(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        unlock(parent, os.path.basename(root), 0)
    finally:
        os.close(parent)


def _snapshot_stores(snapshot: Any) -> List[str]:
    """Where workspace snapshots are kept on this host, denied to every command: the SDK's
    default store (``~/.local/state/openai-agents-python/sandbox/snapshots``, where
    ``Runner`` keeps every session's snapshot when given none) and the session's own local
    snapshot's directory. A red team's command read another session's whole workspace from
    its archive there."""
    out: List[str] = []
    try:
        from agents.sandbox.snapshot_defaults import default_local_snapshot_base_dir
        out.append(os.path.abspath(str(default_local_snapshot_base_dir())))
    except (ImportError, RuntimeError, KeyError):  # no home directory
        pass
    base = getattr(snapshot, "base_path", None)
    if base is not None:
        p = os.path.abspath(str(base))
        if p not in out:
            out.append(p)
    return out


def _private_dir(name: str, hint: str) -> str:
    """<name>-<uid> in the temporary directory: made mode 0700, or refused when it is not
    this user's private directory (another user could have made it first)."""
    path = os.path.join(tempfile.gettempdir(), "%s-%d" % (name, os.getuid()))
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError("tracecell.agents: %s is not a directory private to this user (mode 0700, owned by "
                              "uid %d): remove it%s" % (path, os.getuid(), hint))
    return os.path.realpath(path)


def _default_report_dir() -> str:
    """tracecell-reports-<uid> in the temporary directory (see _private_dir)."""
    return _private_dir("tracecell-reports", ", or pass TracecellSandboxClient(report_dir=...)")


def _default_workspace_parent() -> str:
    """tracecell-workspaces-<uid> in the temporary directory (see _private_dir): where the
    client makes the workspaces of sessions whose manifest gives no root. Every command of
    every session is denied reading it, but for its own workspace (a writable root, which
    tracecell carves out of the denied tree): a red team's command read and copied another
    session's files from /tmp/tracecell-ws-*, since reads are open."""
    return _private_dir("tracecell-workspaces", " (the client makes the sessions' workspaces there)")


def _under(p: str, root: str) -> bool:
    return p == root or p.startswith(root.rstrip("/") + "/")


def _app_path(p: str) -> str:
    """An option's path as the application means it: ~ its home, relative to its directory."""
    return os.path.abspath(os.path.expanduser(p))


def _app_exec(x: str) -> str:
    """An allow_exec entry: a name stays a name (looked up in PATH), a path is the
    application's; a relative pattern is left for tracecell to refuse."""
    if x.startswith("~") or "/" in x and not any(c in x for c in "*?[") or x.startswith("/"):
        return _app_path(x)
    return x


def _session_paths(manifest: Manifest, report_roots: Sequence[str],
                   file_policy: Mapping[str, Any]) -> Tuple[List[str], List[str]]:
    """The workspace and the writable grants, and the read-only grants, resolved once.

    A grant under the workspace or under another writable grant (the same place once
    resolved) is already covered and left out. The workspace or a grant whose path runs
    through a writable place (the workspace, a writable grant, the policy file's write and
    scratch roots) to somewhere else, a symlink the commands could retarget, is refused;
    so is any of them that holds or lies in a report directory: the SDK's own file
    operations, which tracecell does not see, reach the workspace and the grants."""
    def entry(p: str) -> Tuple[str, str]:
        given = os.path.abspath(p)
        return given, os.path.realpath(given)

    root = entry(str(manifest.root))
    wgrants = [(g, entry(g.path)) for g in manifest.extra_path_grants if not g.read_only]
    rgrants = [(g, entry(g.path)) for g in manifest.extra_path_grants if g.read_only]
    # Writable places the commands can change, besides each path's own.
    areas = [root] + [e for _, e in wgrants]
    for key in ("write", "scratch"):
        for p in file_policy.get(key) or []:
            areas.append(entry(p))

    def through(e: Tuple[str, str], what: str, shown: str) -> bool:
        """Whether e lies in another writable place (covered); refused when its path runs
        through one to elsewhere."""
        given, real = e
        covered = False
        for ag, ar in areas:
            if (ag, ar) == e or ar == real:
                continue
            if _under(given, ag) or _under(given, ar):
                if not _under(real, ar):
                    raise ValueError("tracecell.agents: the %s %s lies in %s, which the commands can change, and "
                                     "leads to %s: a command could point it elsewhere; give %s itself"
                                     % (what, shown, ag, real, real))
                covered = True
            elif _under(real, ar):
                covered = True
        return covered

    through(root, "workspace root", str(manifest.root))
    writable, readonly = [root[1]], []
    for g, e in wgrants:
        if not through(e, "path grant", g.path) and e[1] not in writable:
            writable.append(e[1])
    for g, e in rgrants:
        if not through(e, "read-only path grant", g.path) and e[1] not in readonly:
            readonly.append(e[1])
    for r in report_roots:
        for p in writable + readonly:
            if _under(r, p) or _under(p, r):
                raise ValueError("tracecell.agents: the report directory %s and the workspace or grant %s overlap: "
                                 "the reports and policies must be out of reach of the session (the SDK's file "
                                 "operations reach the workspace and the grants); pass "
                                 "TracecellSandboxClient(report_dir=...) elsewhere" % (r, p))
    return writable, readonly


def _resolve_policy(tracecell: str, policy_file: str) -> Dict[str, Any]:
    """The policy file's settings, paths made absolute in this process's environment."""
    import subprocess
    p = subprocess.run([tracecell, "policy", "resolve", policy_file], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        lines = [x for x in p.stderr.splitlines() if x.strip()]
        raise ValueError("tracecell.agents: policy file %s: %s" % (
            policy_file, lines[-1] if lines else "tracecell policy resolve exited %d" % p.returncode))
    pol = json.loads(p.stdout)
    if not isinstance(pol, dict):
        raise ValueError("tracecell.agents: policy file %s: tracecell policy resolve printed no object" % policy_file)
    return pol


def _dynamically_linked(path: str) -> bool:
    """Whether the ELF file at path names a program interpreter (PT_INTERP): a dynamic
    executable, which the loader would run LD_PRELOAD's libraries in. False for anything
    that is not ELF."""
    import struct
    with open(path, "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF":
            return False
        end = "<" if head[5] == 1 else ">"
        if head[4] == 2:  # ELFCLASS64
            phoff, = struct.unpack(end + "Q", head[32:40])
            phentsize, phnum = struct.unpack(end + "HH", head[54:58])
        else:
            phoff, = struct.unpack(end + "I", head[28:32])
            phentsize, phnum = struct.unpack(end + "HH", head[42:46])
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = f.read(4)
            if len(ph) == 4 and struct.unpack(end + "I", ph)[0] == 3:  # PT_INTERP
                return True
    return False


class TracecellSandboxClient(BaseSandboxClient[Optional[TracecellSandboxClientOptions]]):
    """Sessions whose commands run under tracecell: the Linux counterpart of ``sandbox-exec``.

    Args:
        tracecell: the tracecell binary (default: ``$TRACECELL_BIN``, else ``tracecell`` on PATH).
        policy_file: an operator policy file (``tracecell run --policy``), resolved once here
            with ``tracecell policy resolve`` in the application's environment (``~`` is the
            application's home, not the workspace the SDK makes ``HOME``); the options
            apply on top of it (see :class:`TracecellSandboxClientOptions`).
        report_dir: where each session keeps its reports and its policy (a fresh directory
            per session under it; default: ``tracecell-reports-<uid>`` in the temporary
            directory, mode 0700). No command of any session may read or change anything
            under it: use one for all the clients of an application. It may not lie in a
            workspace or a path grant, where the SDK's own file operations reach.
        instrumentation, dependencies: as ``UnixLocalSandboxClient``.
    """

    backend_id = "tracecell"
    supports_default_options = True

    def __init__(self, *, tracecell: Optional[str] = None, policy_file: Optional[str] = None,
                 report_dir: Optional[str] = None, instrumentation: Optional[Instrumentation] = None,
                 dependencies: Optional[Dependencies] = None) -> None:
        self._tracecell = _find_tracecell(tracecell)
        if policy_file is not None and not os.path.isfile(policy_file):
            raise FileNotFoundError("tracecell.agents: policy file %s does not exist" % policy_file)
        self._file_policy = _resolve_policy(self._tracecell, policy_file) if policy_file is not None else {}
        if report_dir is None:
            report_dir = _default_report_dir()
        else:
            os.makedirs(report_dir, mode=0o700, exist_ok=True)
            report_dir = os.path.realpath(report_dir)
            st = os.stat(report_dir)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
                raise PermissionError("tracecell.agents: report_dir %s must be a directory of this user (uid %d) "
                                      "that no other user can write (mode 0700 or 0755)" % (report_dir, os.getuid()))
        self._report_dir = os.path.realpath(report_dir)
        self._instrumentation = instrumentation if instrumentation is not None else Instrumentation()
        self._dependencies = dependencies
        # The workspace clean-up is UnixLocal's.
        self._local = UnixLocalSandboxClient(instrumentation=self._instrumentation)

    def _session(self, state: TracecellSandboxSessionState) -> SandboxSession:
        inner = TracecellSandboxSession(state=state)
        rd = tempfile.mkdtemp(prefix="tracecell-reports-%s-" % state.session_id, dir=self._report_dir)
        try:
            inner._configure(self._tracecell, self._file_policy, rd, self._report_dir)
        except BaseException:
            os.rmdir(rd)
            raise
        return self._wrap_session(inner, instrumentation=self._instrumentation)

    async def create(self, *, snapshot: Optional[SnapshotSpec | SnapshotBase] = None, manifest: Optional[Manifest] = None,
                     options: Optional[TracecellSandboxClientOptions] = None) -> SandboxSession:
        opts = options if options is not None else TracecellSandboxClientOptions()
        manifest = manifest if manifest is not None else Manifest()
        if any(g.host_path is not None for g in manifest.extra_path_grants):
            raise ValueError("TracecellSandboxClient runs on the host's file system: give extra_path_grants without "
                             "host_path (the path is the host path)")
        if manifest.users or manifest.groups:
            raise ValueError("TracecellSandboxClient does not support manifest users or groups: commands run as "
                             "the application's user (set-id programs such as sudo gain nothing under tracecell)")
        self._validate_manifest_for_create(manifest)
        owned = False
        if manifest.root == Manifest.model_fields["root"].default:
            ws = tempfile.mkdtemp(prefix="tracecell-ws-", dir=_default_workspace_parent())
            manifest = manifest.model_copy(update={"root": ws}, deep=True)
            owned = True
        session_id = uuid.uuid4()
        state = TracecellSandboxSessionState(
            session_id=session_id, manifest=manifest, snapshot=resolve_snapshot(snapshot, str(session_id)),
            workspace_root_owned=owned, exposed_ports=opts.exposed_ports, options=opts,
        )
        return self._session(state)

    async def delete(self, session: SandboxSession) -> SandboxSession:
        """Removes the workspace when this client made it (as UnixLocal does); the reports stay.

        UnixLocal's removal gives up silently on a directory a command made unreadable
        (``chmod 000``), leaving the workspace behind (red team, session 25): such
        directories are made the owner's again (through ``O_PATH`` descriptors, never
        following a link) and the removal tried once more."""
        inner = session._inner
        if not isinstance(inner, TracecellSandboxSession):
            raise TypeError("TracecellSandboxClient.delete expects a session it created")
        out = await self._local.delete(session)
        root = str(inner.state.manifest.root)
        if inner.state.workspace_root_owned and os.path.isdir(root):
            await run_blocking_workspace_io(lambda: _unlock_tree(root))
            out = await self._local.delete(session)
        return out

    async def resume(self, state: SandboxSessionState) -> SandboxSession:
        if not isinstance(state, TracecellSandboxSessionState):
            raise TypeError("TracecellSandboxClient.resume expects a TracecellSandboxSessionState, got %s"
                            % type(state).__name__)
        state.assert_path_grants_rebound()
        return self._session(state)

    def deserialize_session_state(self, payload: Dict[str, object]) -> SandboxSessionState:
        return self._deserialize_session_state_payload(payload, TracecellSandboxSessionState)


def tracecell_reports(session: SandboxSession) -> List[CommandReport]:
    """The tracecell reports of a session made by :class:`TracecellSandboxClient`."""
    inner = session._inner
    if not isinstance(inner, TracecellSandboxSession):
        raise TypeError("tracecell_reports: not a TracecellSandboxClient session")
    return inner.reports

