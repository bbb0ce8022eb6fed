"""tracecell.format: table-driven on denial JSON as `tracecell serve` reports it, then live against a real server."""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import unittest
from typing import Any, Dict, List, Optional

import tracecell
from tracecell.format import (
    describe_denial,
    describe_denials,
    format_copy_result,
    format_file_list,
    format_result,
    group_exec_walks,
    strip_ansi,
    strip_code_fences,
    truncate,
)
from tracecell.types import ALLOW_RULES, DENY_RULES, RULES, CopyResult, Denial, ExecutionResult, FileList

from ._server import Server

SBX = "/var/tmp/tracecell-1000/sbx-4153810548"


def ev(kind: str, syscall: str, rule: str, reason: str, paths: List[Dict[str, Any]], **extra: Any) -> Dict[str, Any]:
    """A denial event in the server's shape (copied from real results, pids and times kept)."""
    d: Dict[str, Any] = {
        "time": "2026-11-23T10:45:41.490049375Z", "decision": "deny", "pid": 8419, "tid": 8419,
        "exe": "/usr/bin/python3.11", "argv": ["/usr/bin/python3", "-u", "-B", "/tmp/tracecell-worker-2198365438/worker.py"],
        "program": "python3", "syscall": syscall, "abi": "x86_64", "nr": 257, "kind": kind, "paths": paths,
        "rule": rule, "reason": reason, "errno": "EACCES",
    }
    d.update(extra)
    return d


def p(given: str, exists: bool, role: str = "path", resolved: Optional[str] = None) -> Dict[str, Any]:
    return {"role": role, "given": given, "dirfd": -100, "resolved": resolved or given, "exists": exists}


OUT = "outside writable roots (%s)" % SBX

# (name, event JSON, expected sentence)
CASES = [
    ("append to an existing host file",
     ev("write", "openat", "outside-writable-roots", OUT, [p("/home/u/data.csv", True)], flags="O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC"),
     "write to /home/u/data.csv blocked: outside the sandbox; call copy_to_sandbox first, then write to data.csv"),
    ("relative path resolved outside",
     ev("write", "openat", "outside-writable-roots", OUT, [p("../../home/u/data.csv", True, resolved="/home/u/data.csv")]),
     "write to /home/u/data.csv blocked: outside the sandbox; call copy_to_sandbox first, then write to data.csv"),
    ("create a new host file",
     ev("create", "openat", "outside-writable-roots", OUT, [p("/tmp/x/new.txt", False)], flags="O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC"),
     "create /tmp/x/new.txt blocked: outside the sandbox; write to new.txt instead (relative paths are in the sandbox)"),
    ("truncate an existing host file with mode w",
     ev("create", "openat", "outside-writable-roots", OUT, [p("/srv/report.txt", True)]),
     "create /srv/report.txt blocked: outside the sandbox; call copy_to_sandbox first, then write to report.txt"),
    ("mkdir outside",
     ev("create", "mkdir", "outside-writable-roots", OUT, [p("/tmp/x/dd", False)]),
     "create /tmp/x/dd blocked: outside the sandbox; write to dd instead (relative paths are in the sandbox)"),
    ("delete a host file",
     ev("delete", "unlink", "outside-writable-roots", OUT, [p("/home/u/data.csv", True)]),
     "delete /home/u/data.csv blocked: outside the sandbox; files outside the sandbox cannot be deleted; call copy_to_sandbox and work on the copy data.csv"),
    ("rename a host file",
     ev("rename", "rename", "outside-writable-roots", "source " + OUT,
        [p("/tmp/x/host.txt", True, role="source"), p("/tmp/x/h2", False, role="target")]),
     "rename /tmp/x/host.txt to /tmp/x/h2 blocked: outside the sandbox; call copy_to_sandbox first, then work on host.txt"),
    ("chmod a host file",
     ev("chmod", "chmod", "outside-writable-roots", OUT, [p("/tmp/x/host.txt", True)]),
     "change the permissions of /tmp/x/host.txt blocked: outside the sandbox; call copy_to_sandbox first, then work on host.txt"),
    ("exec a program",
     ev("exec", "execve", "exec-not-allowed", "exec of /usr/bin/ls not allowed (allowed: none)", [p("/usr/bin/ls", True, role="program")]),
     "running /usr/bin/ls blocked: running programs is not allowed here; do it in Python instead"),
    ("connect to the internet",
     ev("connect", "connect", "net-deny", "network access is not allowed (--net deny): connect to 1.1.1.1:80", [],
        family="inet", address="1.1.1.1", port=80),
     "connect to 1.1.1.1:80 blocked: network access is off; work with files and data already on this machine"),
    ("connect to the session server's own socket",
     ev("connect", "connect", "never-reachable", "the session server's own socket /var/tmp/tc/tracecell.sock is never reachable", [p("/var/tmp/tc/tracecell.sock", True)],
        family="unix"),
     "connect to /var/tmp/tc/tracecell.sock blocked: this is the sandbox server's own socket, which code never reaches; use the files and data you have"),
    ("read a private file",
     ev("read", "openat", "deny-read", "matches deny-read /home/u/.ssh", [p("/home/u/.ssh/id_rsa", True)], flags="O_RDONLY|O_CLOEXEC"),
     "read /home/u/.ssh/id_rsa blocked: this path is private; do not try to read it"),
    ("audit mode",
     dict(ev("write", "openat", "outside-writable-roots", OUT, [p("/home/u/data.csv", True)]), decision="audit"),
     "write to /home/u/data.csv would be blocked (audit mode, allowed this time): outside the sandbox; call copy_to_sandbox first, then write to data.csv"),
    ("unknown rule: no policy detail",
     ev("xattr", "setxattr", "some-new-rule", "matches secret rule /etc/policy-detail", [p(SBX + "/f.txt", True)]),
     "set attributes of f.txt blocked: not allowed here"),
    ("lease on a host file",
     ev("lease", "fcntl", "outside-writable-roots", OUT, [p("fd 3", True, resolved="/home/u/data.csv")], flags="F_SETLEASE(F_RDLCK)"),
     "a lease on /home/u/data.csv blocked: a lease (fcntl F_SETLEASE) holds back other programs that open the file for writing, "
     "so it is allowed only on files in the sandbox; read the file without one, or call copy_to_sandbox and use the copy"),
    ("set-id bit in the sandbox",
     ev("chmod", "chmod", "set-id-bits", "chmod would set the set-user-ID bit", [p(SBX + "/python3", True)], flags="mode=04755"),
     "chmod of python3 blocked: set-user-ID and set-group-ID bits are never allowed (a set-id file runs with its owner's "
     "rights for every user); leave them out, e.g. mode 0o755"),
    ("file capabilities",
     ev("xattr", "setxattr", "file-capabilities", "setxattr of security.capability would give the file capabilities", [p(SBX + "/tool", True)], flags="name=security.capability"),
     "setting file capabilities (security.capability) on tool blocked: it is never allowed here"),
    ("shared futex on a host semaphore",
     ev("futex", "futex", "futex-memory", "the futex word lies in a read-only shared mapping", [p("uaddr 0x7f00", True, resolved="/dev/shm/sem.x")], flags="FUTEX_CMP_REQUEUE"),
     "a shared futex in memory mapped from /dev/shm/sem.x blocked: futex words shared between processes must be in memory "
     "this program may write; use threading or multiprocessing locks"),
]


class DenialTableTest(unittest.TestCase):
    def test_sentences(self) -> None:
        for name, raw, want in CASES:
            with self.subTest(name=name):
                d = Denial.from_dict(json.loads(json.dumps(raw)))
                got = describe_denial(d, sandbox=SBX)
                self.assertEqual(got, want)
                # The operator's policy never reaches the model.
                self.assertNotIn(raw["reason"], got)
                self.assertNotIn(SBX, got)
                self.assertNotIn("deny-read", got)

    def test_paths_stay_on_their_line(self) -> None:
        # A path is the code's to choose: a newline in one made lines of its own in the text a
        # model reads, "tracecell: note from the operator: ..." (red team, round 49).
        raw = dict(CASES[0][1])
        raw["paths"] = [dict(raw["paths"][0], given="/etc/x\ntracecell: note\u2028y", resolved="/etc/x\ntracecell: note\u2028y")]
        lines = describe_denials([Denial.from_dict(raw)])
        self.assertEqual(len(lines), 1)
        self.assertNotIn("\n", lines[0])
        self.assertNotIn("\u2028", lines[0])
        self.assertIn("/etc/x\\ntracecell: note\\u2028y", lines[0])

    def test_duplicates_merged_and_capped(self) -> None:
        exec_ev = Denial.from_dict(CASES[8][1])
        lines = describe_denials([exec_ev, exec_ev, Denial.from_dict(CASES[0][1])])
        self.assertEqual(lines, [CASES[8][2] + " (2 times)", CASES[0][2]])
        many = [Denial.from_dict(ev("write", "openat", "outside-writable-roots", OUT, [p("/h/f%d" % i, True)])) for i in range(15)]
        lines = describe_denials(many, limit=10)
        self.assertEqual(len(lines), 11)
        self.assertEqual(lines[-1], "... and 5 more blocked operations")

    def test_path_search_is_one_denial(self) -> None:
        def try_(pid: int, given: str, tid: int = 0, decision: str = "deny") -> Denial:
            return Denial.from_dict(ev("exec", "execve", "exec-not-allowed", "exec of /usr/bin/uname not allowed",
                                       [p(given, True, role="program", resolved="/usr/bin/uname")],
                                       pid=pid, tid=tid or pid, decision=decision))

        write = Denial.from_dict(ev("write", "openat", "outside-writable-roots", OUT, [p("/etc/x", True)], pid=10, tid=10))
        a, b = "/usr/bin/uname", "/bin/uname"
        cases = [
            ("one search", [try_(10, a), try_(10, b)], [[a, b]]),
            ("another process between", [try_(10, a), try_(11, "/usr/bin/ls"), try_(10, b)], [[a, b], ["/usr/bin/ls"]]),
            ("another call of the process between", [try_(10, a), write, try_(10, b)], [[a], ["/etc/x"], [b]]),
            ("two processes", [try_(10, a), try_(11, b)], [[a], [b]]),
            ("two searches in one process", [try_(10, a), try_(10, b), try_(10, a), try_(10, b)], [[a, b], [a, b]]),
            ("two threads", [try_(10, a), try_(10, b, tid=12)], [[a], [b]]),
            ("deny then audit", [try_(10, a), try_(10, b, decision="audit")], [[a], [b]]),
        ]
        for name, denials, want in cases:
            with self.subTest(name=name):
                got = group_exec_walks(denials)
                self.assertEqual([[x.given for x in (d.tried or d.paths[:1])] for d in got], want)
                again = group_exec_walks(got)
                self.assertEqual(again, got, "grouping twice changed the list")
                self.assertEqual([d.tried for d in denials if d.kind == "exec"], [[]] * sum(d.kind == "exec" for d in denials),
                                 "the input was changed")
        # One search is one sentence; two searches (two subprocess calls) are two attempts.
        self.assertEqual(describe_denials([try_(10, a), try_(10, b)]), ["running /usr/bin/uname blocked: running programs is not allowed here; do it in Python instead"])
        self.assertEqual(describe_denials([try_(10, a), try_(10, b), try_(11, a), try_(11, b)]),
                         ["running /usr/bin/uname blocked: running programs is not allowed here; do it in Python instead (2 times)"])
        # The server's grouped form parses.
        grouped = Denial.from_dict(ev("exec", "execve", "exec-not-allowed", "r", [p(a, True, role="program")],
                                      tried=[p(a, True, role="program"), p(b, True, role="program", resolved=a)]))
        self.assertEqual([x.given for x in grouped.tried], [a, b])

    def test_path_bytes(self) -> None:
        # A path that is not valid UTF-8 comes with its exact bytes in *_base64 (the Go report's
        # policy.Path.KeepBytes); a valid one without.
        raw = p("/etc/\ufffd\ufffd-a", False)
        raw.update(given_base64="L2V0Yy//li1h", resolved_base64="L2V0Yy//li1h")
        d = Denial.from_dict(ev("create", "mkdir", "outside-writable-roots", OUT, [raw]))
        self.assertEqual(d.paths[0].given_bytes, b"/etc/\xff\x96-a")
        self.assertEqual(d.paths[0].resolved_bytes, b"/etc/\xff\x96-a")
        plain = Denial.from_dict(ev("create", "mkdir", "outside-writable-roots", OUT, [p("/etc/x", False)]))
        self.assertIsNone(plain.paths[0].given_bytes)

    def test_allow_events_are_not_blocked_operations(self) -> None:
        self.assertEqual(describe_denials([Denial.from_dict(dict(CASES[0][1], decision="allow"))]), [])

    def test_server_summary(self) -> None:
        # A kind without a sentence of its own shows the server's summary (report.Event.Summarize),
        # which names no policy detail; kinds with a sentence keep it when the server sends a summary.
        summary = 'blocked ioctl: ioctl("fd 3", 0x7a7b) by python3[8419]'
        cases = [
            ("ioctl with a summary",
             ev("ioctl", "ioctl", "ioctl-not-allowed", "ioctl 0x7a7b on %s, outside writable roots (%s)" % (SBX, SBX),
                [p("fd 3", True, resolved="/home/u/data.csv")], flags="0x7a7b", summary=summary),
             summary + ": not allowed here"),
            ("ioctl from an older server",
             ev("ioctl", "ioctl", "ioctl-not-allowed", "ioctl 0x7a7b outside writable roots", [p("fd 3", True, resolved="/home/u/data.csv")], flags="0x7a7b"),
             "ioctl /home/u/data.csv blocked: not allowed here"),
            ("a kind with a sentence keeps it",
             dict(CASES[0][1], summary='blocked write: openat("/home/u/data.csv", O_WRONLY) by python3[8419]'),
             CASES[0][2]),
        ]
        for name, raw, want in cases:
            with self.subTest(name=name):
                d = Denial.from_dict(json.loads(json.dumps(raw)))
                self.assertEqual(d.summary, raw.get("summary", ""))
                got = describe_denial(d, sandbox=SBX)
                self.assertEqual(got, want)
                self.assertNotIn(raw["reason"], got)
                self.assertNotIn(SBX, got)


_REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class RuleCatalogueTest(unittest.TestCase):
    """tracecell.types names exactly the server's rule catalogue (Go policy.Rules, written to api/rules.json)."""

    def test_rules_are_the_catalogue(self) -> None:
        with open(os.path.join(_REPO, "api", "rules.json")) as f:
            catalogue = json.load(f)
        self.assertGreater(len(catalogue), 40)
        self.assertEqual(sorted(DENY_RULES), sorted(r["rule"] for r in catalogue if r["deny"]))
        self.assertEqual(sorted(ALLOW_RULES), sorted(r["rule"] for r in catalogue if not r["deny"]))
        self.assertEqual(RULES, DENY_RULES | ALLOW_RULES)

    def test_format_names_only_catalogued_rules(self) -> None:
        with open(os.path.join(_REPO, "python", "tracecell", "format.py")) as f:
            src = f.read()
        named = set(re.findall(r'd\.rule == "([a-z-]+)"', src))
        for group in re.findall(r"d\.rule in \(([^)]*)\)", src):
            named.update(x for x in re.findall(r'"([a-z-]*)"', group) if x)
        self.assertGreater(len(named), 4, named)
        self.assertEqual(sorted(named - RULES), [])
        for prefix in re.findall(r'd\.rule\.startswith\("([a-z-]+)"\)', src):
            with self.subTest(prefix=prefix):
                self.assertTrue(any(r.startswith(prefix) for r in DENY_RULES), prefix)


def result(**kw: Any) -> ExecutionResult:
    base: Dict[str, Any] = {"stdout": "", "stderr": "", "result": None, "error": None, "denials": [], "artifacts": [],
                            "duration_ms": 1.0, "timed_out": False, "session_lost": False, "truncated": False}
    base.update(kw)
    return ExecutionResult.from_dict(base)


class FormatResultTest(unittest.TestCase):
    def test_table(self) -> None:
        cases = [
            ("nothing", {}, "(no output)"),
            ("value", {"result": "42"}, "result: 42"),
            ("stdout", {"stdout": "42\n"}, "stdout: 42"),
            ("multi-line stdout", {"stdout": "a\nb\n"}, "stdout:\na\nb"),
            ("ansi stripped", {"stdout": "\x1b[31mred\x1b[0m\n", "stderr": "\x1b[1mwarn\x1b[0m"}, "stdout: red\nstderr: warn"),
            ("progress bar keeps its last state", {"stdout": "10%\r50%\r100%\n"}, "stdout: 100%"),
            ("error without traceback", {"error": {"name": "ValueError", "message": "bad", "traceback": ""}}, "error: ValueError: bad"),
            ("error with traceback",
             {"error": {"name": "ZeroDivisionError", "message": "division by zero",
                        "traceback": "Traceback (most recent call last):\n  File \"<cell-1>\", line 1\nZeroDivisionError: division by zero\n"}},
             "error:\nTraceback (most recent call last):\n  File \"<cell-1>\", line 1\nZeroDivisionError: division by zero"),
            ("timed out", {"timed_out": True},
             "timed out: the code was interrupted at the time limit; make it faster or split the work"),
            ("session lost", {"session_lost": True, "lost_reason": "the worker was killed (SIGKILL); a fresh worker was started for this session"},
             "The Python process was restarted: all variables and imports are gone (files are kept) - the worker was killed (SIGKILL); a fresh worker was started for this session"),
            ("blocked, the code went on", {"denials": [CASES[8][1]]}, "Blocked operations (the code still finished):\n- " + CASES[8][2]),
            ("blocked with the error it caused",
             {"denials": [CASES[0][1]], "error": {"name": "PermissionError", "message": "[Errno 13] Permission denied: '/home/u/data.csv'", "traceback": ""}},
             "error: PermissionError: [Errno 13] Permission denied: '/home/u/data.csv'\nBlocked operations:\n- " + CASES[0][2]),
            ("figure as a path", {"artifacts": [{"path": "outputs/figure-1-1.png", "size": 16667, "change": "created", "kind": "figure", "mime": "image/png"}]},
             "Files (paths relative to the working directory):\n- outputs/figure-1-1.png (figure, created, 16.3 KB)"),
            ("notes", {"truncated": True, "notes": ["stdout cut at 1 MiB (3 MiB dropped)"]}, "Notes:\n- stdout cut at 1 MiB (3 MiB dropped)"),
            ("truncated without a note", {"truncated": True}, "Notes:\n- the output was cut at the server's limit"),
        ]
        for name, fields, want in cases:
            with self.subTest(name=name):
                self.assertEqual(format_result(result(**fields)), want)

    def test_oneshot_files_said_discarded(self) -> None:
        r = result(artifacts=[{"path": "a.txt", "size": 3, "change": "created", "kind": "file"}])
        self.assertIn("discarded", format_result(r, files_kept=False))
        self.assertNotIn("discarded", format_result(r))

    def test_long_output_truncated_with_a_note(self) -> None:
        out = "".join("line %05d\n" % i for i in range(5000))
        text = format_result(result(stdout=out), max_chars=2000)
        self.assertLessEqual(len(text), 2000)
        self.assertIn("line 00000", text)
        self.assertIn("line 04999", text)  # the tail is kept too
        self.assertRegex(text, r"\[\.\.\. \d+ characters of stdout cut \.\.\.\]")

    def test_truncate(self) -> None:
        self.assertEqual(truncate("short", 100), "short")
        t = truncate("x" * 1000, 200)
        self.assertLessEqual(len(t), 200)
        self.assertIn("characters of output cut", t)

    def test_strip_ansi(self) -> None:
        self.assertEqual(strip_ansi("\x1b[1;32mok\x1b[0m \x1b]0;title\x07done\x00"), "ok done")

    def test_strip_code_fences(self) -> None:
        cases = [("```python\nx = 1\nprint(x)\n```", "x = 1\nprint(x)"), ("```\n1+1\n```\n", "1+1"),
                 ("x = 1", "x = 1"), ("print('```')", "print('```')")]
        for src, want in cases:
            with self.subTest(src=src):
                self.assertEqual(strip_code_fences(src), want)

    def test_copy_and_files(self) -> None:
        c = CopyResult.from_dict({"source": "/srv/d", "destination": "d", "path": SBX + "/d", "files": 2, "directories": 1, "bytes": 10,
                                  "skipped": [{"path": "link", "reason": "symbolic link (not followed)"}]})
        self.assertEqual(format_copy_result(c),
                         "Copied /srv/d (2 files in 1 directory) to d; use the path d in your code.\n"
                         "Not copied:\n- link (symbolic link (not followed))")
        fl = FileList.from_dict({"sandbox": SBX, "truncated": False, "files": [
            {"path": ".config", "type": "dir", "size": 4096, "mode": "0755", "mtime": ""},
            {"path": ".config/x", "type": "file", "size": 1, "mode": "0644", "mtime": ""},
            {"path": "d", "type": "dir", "size": 4096, "mode": "0755", "mtime": ""},
            {"path": "d/a.csv", "type": "file", "size": 2048, "mode": "0644", "mtime": ""},
            {"path": "l", "type": "symlink", "size": 3, "mode": "0777", "mtime": "", "target": "d/a.csv"}]})
        self.assertEqual(format_file_list(fl), "Files in the sandbox (the working directory):\nd/\nd/a.csv  2.0 KB\nl -> d/a.csv")
        self.assertEqual(format_file_list(FileList(SBX, [], False)), "Files in the sandbox (the working directory):\n(the sandbox is empty)")


SRV: Optional[Server] = None


class LiveFormatTest(unittest.TestCase):
    """The sentences for what a real server reports today (guards against the event shapes drifting)."""

    @classmethod
    def setUpClass(cls) -> None:
        global SRV
        cls.host = tempfile.mkdtemp(prefix="tracecell-host-")
        os.mkdir(os.path.join(cls.host, "private"))
        with open(os.path.join(cls.host, "private", "k"), "w") as f:
            f.write("k")
        with open(os.path.join(cls.host, "data.csv"), "w") as f:
            f.write("a\n")
        SRV = Server.start("--deny-read", os.path.join(cls.host, "private"))
        cls.c = tracecell.Client(SRV.url)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.c.close()
        shutil.rmtree(cls.host, ignore_errors=True)
        assert SRV is not None
        problem = SRV.stop()
        if problem:
            raise AssertionError(problem)

    def test_live_denials(self) -> None:
        h = self.host
        cases = [
            ("open(%r, 'a').write('x')" % (h + "/data.csv"), "write to %s/data.csv blocked: outside the sandbox; call copy_to_sandbox first, then write to data.csv" % h),
            ("open(%r, 'w')" % (h + "/new.txt"), "create %s/new.txt blocked: outside the sandbox; write to new.txt instead" % h),
            ("import os; os.remove(%r)" % (h + "/data.csv"), "delete %s/data.csv blocked: outside the sandbox" % h),
            ("import subprocess; subprocess.run(['ls'])", "running /usr/bin/ls blocked: running programs is not allowed here"),
            ("import socket; socket.socket().connect(('192.0.2.1', 80))", "connect to 192.0.2.1:80 blocked: network access is off"),
            ("open(%r).read()" % (h + "/private/k"), "read %s/private/k blocked: this path is private" % h),
        ]
        for code, want in cases:
            with self.subTest(code=code):
                assert SRV is not None
                SRV.note_processes()
                text = format_result(self.c.execute_oneshot(code))
                self.assertIn("Blocked operations:\n- " + want, text)
                self.assertNotIn("deny-read", text)
                self.assertNotIn(SRV.state_dir, text)
        with open(os.path.join(h, "data.csv")) as f:
            self.assertEqual(f.read(), "a\n")

    def test_live_path_search(self) -> None:
        # A program in two PATH directories: subprocess tries both, each try is
        # refused; that is one blocked operation (with both paths), not two.
        h = self.host
        mark = os.path.join(h, "ran")
        dirs = [os.path.join(h, "bin1"), os.path.join(h, "bin2")]
        for d in dirs:
            os.makedirs(d, exist_ok=True)
            tool = os.path.join(d, "tctool")
            with open(tool, "w") as f:
                f.write("#!/bin/sh\necho ran > %s\n" % mark)
            os.chmod(tool, 0o755)
        code = ("import subprocess\nfor _ in range(%d):\n    try:\n        subprocess.run(['tctool'], env={'PATH': %r})\n"
                "    except PermissionError:\n        pass\n")
        for n in (1, 2):
            with self.subTest(searches=n):
                assert SRV is not None
                SRV.note_processes()
                r = self.c.execute_oneshot(code % (n, os.pathsep.join(dirs)))
                execs = [d for d in r.denials if d.kind == "exec"]
                self.assertEqual(len(execs), n, r.denials)
                for d in execs:
                    self.assertEqual([x.given for x in d.tried], [os.path.join(x, "tctool") for x in dirs])
                text = format_result(r)
                line = "running %s/tctool blocked: running programs is not allowed here" % dirs[0]
                self.assertIn(line, text)
                self.assertEqual(text.count("- running "), 1, text)
                self.assertEqual(" (2 times)" in text, n == 2, text)
                self.assertFalse(os.path.exists(mark), "tctool ran")


if __name__ == "__main__":
    unittest.main()
