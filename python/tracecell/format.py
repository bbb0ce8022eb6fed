"""Results formatted for language models: compact text, no ANSI codes, bounded length,
and every blocked operation turned into a sentence saying what to do instead.

The text never shows the operator's policy (rules, roots, deny lists): only what was
blocked and the way forward.
"""
from __future__ import annotations

import base64
import dataclasses
import posixpath
import re
from typing import Dict, Iterable, List, Optional, Set, Tuple

from .types import Artifact, CopyResult, Denial, ExecutionResult, FileList

__all__ = [
    "DEFAULT_MAX_CHARS", "strip_ansi", "truncate", "describe_denial", "describe_denials", "group_exec_walks", "format_result",
    "format_copy_result", "format_file_list", "image_artifacts", "data_url", "strip_code_fences",
]

#: Default cap on the text of one tool result (characters).
DEFAULT_MAX_CHARS = 8000

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# Operations that change the file system; blocked outside the sandbox.
_FS_VERBS = {
    "write": "write to {p}",
    "create": "create {p}",
    "delete": "delete {p}",
    "rename": "rename {p}",
    "link": "link {p}",
    "chmod": "change the permissions of {p}",
    "chown": "change the owner of {p}",
    "xattr": "set attributes of {p}",
}


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences and other control characters (keeps newlines and tabs); ``\\r\\n`` becomes ``\\n``."""
    text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n")
    # A progress bar redraws its line with \r: keep what the line finally showed.
    if "\r" in text:
        text = "\n".join(line.rsplit("\r", 1)[-1] if "\r" in line.rstrip("\r") else line.rstrip("\r") for line in text.split("\n"))
    return _CTRL.sub("", text)


def truncate(text: str, max_chars: int, what: str = "output") -> str:
    """Keep the head and the tail of ``text`` within ``max_chars``, with a note saying how much was cut."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    keep = max(max_chars - 80, 20)
    head = keep * 2 // 3
    tail = keep - head
    cut = len(text) - head - tail
    return "%s\n[... %d characters of %s cut ...]\n%s" % (text[:head], cut, what, text[len(text) - tail:])


def _rel_to(path: str, sandbox: Optional[str]) -> Optional[str]:
    if sandbox:
        sb = sandbox.rstrip("/")
        if path == sb:
            return "."
        if path.startswith(sb + "/"):
            return path[len(sb) + 1:]
    return None


def _shown(path: str, sandbox: Optional[str]) -> str:
    rel = _rel_to(path, sandbox)
    return rel if rel is not None else path


def describe_denial(d: Denial, sandbox: Optional[str] = None) -> str:
    """One actionable sentence for a blocked operation.

    ``sandbox`` (the session's sandbox path), when given, shows paths inside it
    relative to it, as the code uses them.
    """
    paths = [p.resolved or p.given for p in d.paths if p.resolved or p.given]
    first = _shown(paths[0], sandbox) if paths else ""
    audit = d.decision == "audit"
    blocked = "would be blocked (audit mode, allowed this time)" if audit else "blocked"

    if d.kind == "exec":
        prog = first or d.program or "a program"
        return "running %s %s: running programs is not allowed here; do it in Python instead" % (prog, blocked)
    if d.kind in ("connect", "bind") or d.rule.startswith("net-") or d.rule.startswith("unix-"):
        if d.address:
            target = "%s:%d" % (d.address, d.port) if d.port else d.address
        else:
            target = first or "the network"
        verb = "listen on" if d.kind == "bind" else "connect to"
        if d.rule == "never-reachable":
            # The session server's own sockets, whatever the network mode.
            return "%s %s %s: this is the sandbox server's own socket, which code never reaches; use the files and data you have" % (verb, target, blocked)
        return "%s %s %s: network access is off; work with files and data already on this machine" % (verb, target, blocked)
    if d.kind == "read" or d.rule in ("deny-read", "read-not-allowed"):
        return "read %s %s: this path is private; do not try to read it" % (first or "a file", blocked)
    if d.kind == "lease":
        return ("a lease on %s %s: a lease (fcntl F_SETLEASE) holds back other programs that open the file for writing, "
                "so it is allowed only on files in the sandbox; read the file without one, or call copy_to_sandbox and use the copy"
                % (first or "a file", blocked))
    if d.rule == "set-id-bits":
        return ("%s of %s %s: set-user-ID and set-group-ID bits are never allowed (a set-id file runs with its owner's "
                "rights for every user); leave them out, e.g. mode 0o755" % (d.syscall or "chmod", first or "a file", blocked))
    if d.rule == "file-capabilities":
        return "setting file capabilities (security.capability) on %s %s: it is never allowed here" % (first or "a file", blocked)
    if d.kind == "futex":
        return ("a shared futex in memory mapped from %s %s: futex words shared between processes must be in memory "
                "this program may write; use threading or multiprocessing locks" % (first or "a file", blocked))
    if d.kind in _FS_VERBS:
        if d.kind in ("rename", "link") and len(paths) > 1:
            phrase = "%s %s to %s" % (d.kind, first, _shown(paths[1], sandbox))
        else:
            phrase = _FS_VERBS[d.kind].format(p=first or "a file")
        inside = bool(paths) and _rel_to(paths[0], sandbox) is not None
        if d.rule == "outside-writable-roots" or (not inside and d.rule in ("", "outside-tree")):
            base = (posixpath.basename(paths[0].rstrip("/")) if paths else "") or "a file"
            exists = bool(d.paths) and d.paths[0].exists
            if d.kind == "write" or (d.kind == "create" and exists):
                advice = "call copy_to_sandbox first, then write to %s" % base
            elif d.kind == "create":
                advice = "write to %s instead (relative paths are in the sandbox)" % base
            elif d.kind == "delete":
                advice = "files outside the sandbox cannot be deleted; call copy_to_sandbox and work on the copy %s" % base
            else:
                advice = "call copy_to_sandbox first, then work on %s" % base
            return "%s %s: outside the sandbox; %s" % (phrase, blocked, advice)
        return "%s %s: not allowed here" % (phrase, blocked)
    if d.kind in ("signal", "process"):
        return "acting on another process (%s) %s: only your own Python process and its children may be touched" % (d.syscall or d.kind, blocked)
    if d.kind == "forbidden-syscall" or d.rule == "forbidden-syscall":
        return "system call %s %s: it is never allowed here" % (d.syscall or "?", blocked)
    if d.summary:
        # A kind without a sentence here: the server's own line for the event
        # (report.Event.Summarize), which carries no detail of the policy.
        return "%s: not allowed here" % d.summary
    what = "%s %s" % (d.kind or d.syscall or "an operation", first) if first else (d.kind or d.syscall or "an operation")
    return "%s %s: not allowed here" % (what, blocked)


def _exec_base(d: Denial) -> str:
    if d.kind != "exec" or d.decision == "allow" or not d.paths or not d.paths[0].given:
        return ""
    return posixpath.basename(d.paths[0].given)


def group_exec_walks(denials: Iterable[Denial]) -> List[Denial]:
    """``denials`` with the refused tries of one PATH search merged into one (its ``tried``).

    subprocess, execvp and posix_spawnp look a program name up by trying each PATH
    directory in turn; with programs refused, each directory holding it (``/usr/bin/uname``,
    ``/bin/uname``) is one refused call for one action. The rule, as the server's
    (Go ``report.ExecWalks``): an exec denial continues the previous denial of the same
    process when that was an exec denial from the same thread, with the same decision,
    of a program of the same name, and this path was not tried yet. The server groups
    already; this keeps results from older servers right. Grouping twice changes nothing.
    """
    out: List[Denial] = []
    # pid -> (index in out, tid, name, decision, paths tried)
    walks: Dict[int, Tuple[int, int, str, str, Set[str]]] = {}
    for d in denials:
        base = _exec_base(d)
        if not base:
            walks.pop(d.pid, None)
            out.append(d)
            continue
        tries = d.tried or d.paths[:1]
        w = walks.get(d.pid)
        if w is not None and w[1:4] == (d.tid, base, d.decision) and not any(p.given in w[4] for p in tries):
            first = out[w[0]]
            out[w[0]] = dataclasses.replace(first, tried=(first.tried or first.paths[:1]) + tries)
            w[4].update(p.given for p in tries)
            continue
        walks[d.pid] = (len(out), d.tid, base, d.decision, {p.given for p in tries})
        out.append(d)
    return out


def visible(s: str) -> str:
    """``s`` with line breaks, other control characters and unprintable code points escaped
    (``\\n``, ``\\x1b``, ``\\u2028``), so that text a program chose stays on its own line."""
    if s.isprintable():
        return s
    out = []
    for ch in s:
        if ch.isprintable():
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x100:
            out.append("\\x%02x" % ord(ch))
        elif ord(ch) <= 0xFFFF:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append("\\U%08x" % ord(ch))
    return "".join(out)


def describe_denials(denials: Iterable[Denial], sandbox: Optional[str] = None, limit: int = 10) -> List[str]:
    """The sentences for ``denials``, duplicates merged (with a count), at most ``limit`` plus a line for the rest.

    The tries of one PATH search are one denial (:func:`group_exec_walks`): "(2 times)" means two attempts.
    """
    seen: List[str] = []
    counts: Dict[str, int] = {}
    for d in group_exec_walks(denials):
        if d.decision == "allow":
            continue
        # Paths and names are the code's to choose: a newline in one made
        # lines of its own in the text a model reads (red team, round 49).
        s = visible(describe_denial(d, sandbox))
        if s not in counts:
            seen.append(s)
            counts[s] = 0
        counts[s] += 1
    lines = [s if counts[s] == 1 else "%s (%d times)" % (s, counts[s]) for s in seen]
    if len(lines) > limit:
        rest = len(lines) - limit
        lines = lines[:limit] + ["... and %d more blocked operations" % rest]
    return lines


def _size(n: int) -> str:
    if n < 1024:
        return "%d B" % n
    if n < 1024 * 1024:
        return "%.1f KB" % (n / 1024)
    return "%.1f MB" % (n / (1024 * 1024))


def _section(label: str, body: str) -> str:
    body = body.rstrip("\n")
    if "\n" in body:
        return "%s:\n%s" % (label, body)
    return "%s: %s" % (label, body)


def format_result(r: ExecutionResult, *, max_chars: int = DEFAULT_MAX_CHARS, sandbox: Optional[str] = None,
                  files_kept: bool = True) -> str:
    """The execution as compact text for a model.

    Sections appear only when non-empty: ``stdout``, ``stderr``, ``result``, ``error``
    (the traceback), ``Blocked operations`` (one actionable line each), ``Files``
    (artifacts, with paths relative to the working directory; figures are PNG files),
    ``Notes``. stdout, stderr and the traceback share ``max_chars``; the total stays
    close to it. ``files_kept=False`` (one-shot runs) says the files were discarded.
    """
    out_budget = max(max_chars - 1500, max_chars // 2) if max_chars > 0 else 0
    parts: List[str] = []
    stdout = strip_ansi(r.stdout)
    stderr = strip_ansi(r.stderr)
    tb = strip_ansi(r.error.traceback) if r.error and r.error.traceback else ""
    pieces = [x for x in (stdout, stderr, tb) if x]
    each = out_budget // max(len(pieces), 1) if out_budget else 0
    if stdout.strip():
        parts.append(_section("stdout", truncate(stdout, each, "stdout")))
    if stderr.strip():
        parts.append(_section("stderr", truncate(stderr, each, "stderr")))
    if r.result is not None:
        parts.append(_section("result", truncate(strip_ansi(r.result), 1000 if max_chars > 0 else 0, "the result")))
    if r.error is not None:
        if tb:
            parts.append(_section("error", truncate(tb, each, "the traceback")))
        else:
            parts.append("error: %s: %s" % (r.error.name, strip_ansi(r.error.message)))
    if r.timed_out:
        parts.append("timed out: the code was interrupted at the time limit; make it faster or split the work")
    if r.session_lost:
        reason = strip_ansi(r.lost_reason).strip()
        parts.append("The Python process was restarted: all variables and imports are gone (files are kept)%s" % (" - " + reason if reason else ""))
    blocked = describe_denials(r.denials, sandbox)
    if blocked:
        # Without an error the code (or a library it called) got past the refusal.
        finished = r.error is None and not r.timed_out and not r.session_lost
        head = "Blocked operations (the code still finished):" if finished else "Blocked operations:"
        parts.append(head + "\n" + "\n".join("- " + b for b in blocked))
    if r.artifacts:
        lines = []
        for a in r.artifacts[:20]:
            desc = [a.change]
            if a.kind == "figure":
                desc.insert(0, "figure")
            desc.append(_size(a.size))
            lines.append(visible("- %s (%s)" % (a.path, ", ".join(desc))))
        if len(r.artifacts) > 20:
            lines.append("- ... and %d more" % (len(r.artifacts) - 20))
        head = "Files (paths relative to the working directory):" if files_kept else \
            "Files (discarded with this one-shot run; use the python tool to keep files):"
        parts.append(head + "\n" + "\n".join(lines))
    notes = [strip_ansi(n) for n in r.notes if n.strip()]
    if r.truncated and not notes:
        notes.append("the output was cut at the server's limit")
    if notes:
        parts.append("Notes:\n" + "\n".join("- " + n for n in notes))
    if not parts:
        return "(no output)"
    return "\n".join(parts)


def format_copy_result(c: CopyResult) -> str:
    """A copy's outcome, with the path the code should use."""
    what = "%d file%s" % (c.files, "" if c.files == 1 else "s")
    if c.directories:
        what += " in %d director%s" % (c.directories, "y" if c.directories == 1 else "ies")
    text = "Copied %s (%s) to %s; use the path %s in your code." % (c.source, what, c.destination, c.destination)
    if c.skipped:
        shown = [visible("- %s (%s)" % (s.path, s.reason)) for s in c.skipped[:20]]
        if len(c.skipped) > 20:
            shown.append("- ... and %d more" % (len(c.skipped) - 20))
        text += "\nNot copied:\n" + "\n".join(shown)
    return text


def format_file_list(fl: FileList, *, show_hidden: bool = False, limit: int = 200) -> str:
    """The sandbox's files as ``path  size`` lines (directories end with ``/``); hidden entries left out by default."""
    lines: List[str] = []
    hidden = 0
    for f in fl.files:
        if not show_hidden and any(c.startswith(".") for c in f.path.split("/")):
            hidden += 1
            continue
        if f.type == "dir":
            lines.append(visible(f.path) + "/")
        elif f.type == "symlink":
            lines.append(visible("%s -> %s" % (f.path, f.target)))
        else:
            lines.append(visible("%s  %s" % (f.path, _size(f.size))))
    total = len(lines)
    if total > limit:
        lines = lines[:limit] + ["... and %d more" % (total - limit)]
    if not lines:
        lines = ["(the sandbox is empty)"]
    if fl.truncated:
        lines.append("(the listing was cut at the server's limits: 10000 entries, 64 directory levels)")
    return "Files in the sandbox (the working directory):\n" + "\n".join(lines)


def image_artifacts(r: ExecutionResult, limit: int = 4) -> List[Artifact]:
    """The image files an execution produced (figures first), at most ``limit``."""
    imgs = [a for a in r.artifacts if a.is_image]
    imgs.sort(key=lambda a: a.kind != "figure")
    return imgs[:limit]


def data_url(data: bytes, mime: str) -> str:
    """A ``data:`` URL for an image, as model APIs that accept images take it."""
    return "data:%s;base64,%s" % (mime or "application/octet-stream", base64.b64encode(data).decode("ascii"))




_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_+-]*[^\S\n]*\n(.*?)\n?```\s*\Z", re.S)


def strip_code_fences(code: str) -> str:
    """The code inside one Markdown fence (```python ... ```), or the code unchanged."""
    m = _FENCE.match(code)
    return m.group(1) if m else code
