# tracecell worker: executes code requests in one persistent namespace, as a
# Jupyter kernel would. Standard library only; Python 3.8 or newer.
#
# It runs under the tracer (every write outside the sandbox is denied), with
# cwd = the sandbox, stdin = /dev/null, stdout/stderr = pipes read by the
# worker-host, requests as JSON lines on fd 3 and responses on fd 4.
#
# After each request the worker writes a marker (with the request's random
# token) straight to fds 1 and 2, then the response on fd 4: the host splits
# each output stream at its marker, so what C extensions and child processes
# write to fds 1 and 2 is attributed to the right execution, in order.

import ast
import errno
import io
import json
import linecache
import os
import signal
import sys
import time
import traceback

REQ_FD = 3
RESP_FD = 4
MARKER_PREFIX = b"\x1eTRACECELL-END-"
RESULT_CAP = 10000  # characters of the last expression's repr
ERROR_CAP = 20000  # characters of an exception's message, and of its traceback (the end is kept)
WALK_CAP = 20000  # sandbox entries scanned for artifacts
SKIP_TOP = (".tmp", ".cache", ".config")  # the worker's HOME/TMPDIR/XDG dirs
WORKER_FILE = os.path.abspath(__file__)

_main_pid = os.getpid()
_running = False  # user code is running: SIGINT raises KeyboardInterrupt
_pending_interrupts = 0  # SIGINTs that arrived while no user code ran


def _on_sigint(signum, frame):
    global _pending_interrupts
    if _running:
        raise KeyboardInterrupt
    _pending_interrupts += 1


def _write_all(fd, data):
    while data:
        try:
            n = os.write(fd, data)
        except InterruptedError:
            continue
        data = data[n:]


def _send(obj):
    _write_all(RESP_FD, (json.dumps(obj) + "\n").encode("ascii"))


def _same_file(a, b):
    return a is not None and b is not None and a.st_dev == b.st_dev and a.st_ino == b.st_ino


def _fstat(fd):
    try:
        return os.fstat(fd)
    except OSError:
        return None


class Worker(object):
    def __init__(self):
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__, "__doc__": None}
        self.flags = 0  # __future__ compiler flags seen so far
        self.cells = 0
        self.orig_stdout = sys.stdout
        self.orig_stderr = sys.stderr
        # Keep copies of the output pipes so that user code that closes or
        # redirects fd 1 or 2 does not break every later execution.
        self.out_st = (_fstat(1), _fstat(2))
        self.saved_fds = (os.dup(1), os.dup(2))
        for fd in self.saved_fds:
            try:
                os.set_inheritable(fd, False)
            except OSError:
                pass

    # -- output streams ------------------------------------------------

    def restore_streams(self, notes):
        for fd, st, saved, name in ((1, self.out_st[0], self.saved_fds[0], "stdout"),
                                    (2, self.out_st[1], self.saved_fds[1], "stderr")):
            if not _same_file(_fstat(fd), st):
                try:
                    os.dup2(saved, fd)
                    notes.append("fd %d (%s) was closed or redirected by the code; restored" % (fd, name))
                except OSError:
                    pass
        if sys.stdout is not self.orig_stdout:
            sys.stdout = self.orig_stdout
            notes.append("sys.stdout was replaced by the code; restored")
        if sys.stderr is not self.orig_stderr:
            sys.stderr = self.orig_stderr
            notes.append("sys.stderr was replaced by the code; restored")

    def flush_streams(self):
        for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                if s is not None:
                    s.flush()
            except Exception:
                pass

    def write_markers(self, token):
        marker = MARKER_PREFIX + token.encode("ascii") + b"\x1e"
        ok = []
        for fd in (1, 2):
            try:
                _write_all(fd, marker)
                ok.append(True)
            except OSError:
                ok.append(False)
        return ok

    # -- compile and run -------------------------------------------------

    def _note_future(self, code):
        import __future__
        for name in __future__.all_feature_names:
            feat = getattr(__future__, name)
            if code.co_flags & feat.compiler_flag:
                self.flags |= feat.compiler_flag

    def compile_cell(self, source, filename):
        """Returns (exec_code or None, eval_code or None)."""
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        tree = compile(source, filename, "exec", ast.PyCF_ONLY_AST | self.flags, True)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not source.rstrip().endswith(";"):
            last = tree.body.pop()
        exec_code = None
        if tree.body or last is None:
            exec_code = compile(tree, filename, "exec", self.flags, True)
            self._note_future(exec_code)
        eval_code = None
        if last is not None:
            expr = ast.Expression(last.value)
            eval_code = compile(expr, filename, "eval", self.flags, True)
        return exec_code, eval_code

    def format_error(self, etype, value, tb):
        # Drop the worker's own frames: they come first in the chain.
        while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) == WORKER_FILE:
            tb = tb.tb_next
        try:
            te = traceback.TracebackException(etype, value, tb)
            text = "".join(te.format())
        except Exception:
            text = "".join(traceback.format_exception_only(etype, value))
        name = etype.__name__
        mod = getattr(etype, "__module__", "builtins")
        if mod not in ("builtins", "__main__", None):
            name = mod + "." + name
        try:
            msg = str(value)
        except Exception as e:
            msg = "<str() of the exception failed: %s>" % type(e).__name__
        # The host refuses a response line over 8 MiB (worker-host maxWorkerLine).
        if len(msg) > ERROR_CAP:
            msg = msg[:ERROR_CAP] + "\u2026 (truncated, %d characters in all)" % len(msg)
        if len(text) > ERROR_CAP:
            text = "(traceback truncated, %d characters in all) \u2026" % len(text) + text[-ERROR_CAP:]
        return {"name": name[:1000], "message": msg, "traceback": text}

    def execute(self, req):
        global _running, _pending_interrupts
        self.cells += 1
        cell_id = req.get("id", self.cells)
        filename = "<cell-%s>" % cell_id
        notes = []
        before, walk_truncated = self.snapshot()
        result = None
        error = None
        t0 = time.perf_counter()
        try:
            try:
                exec_code, eval_code = self.compile_cell(req.get("code", ""), filename)
                # The host sends SIGINT only after this message: an interrupt
                # that arrives before _running is set is not lost.
                _pending_interrupts = 0
                _send({"started": cell_id})
                _running = True
                if _pending_interrupts:
                    raise KeyboardInterrupt
                if exec_code is not None:
                    exec(exec_code, self.ns)
                if eval_code is not None:
                    value = eval(eval_code, self.ns)
                    if value is not None:
                        self.ns["_"] = value
                        r = repr(value)
                        if len(r) > RESULT_CAP:
                            r = r[:RESULT_CAP] + "\u2026 (truncated, %d characters in all)" % len(r)
                        result = r
            finally:
                _running = False
        except BaseException:
            etype, value, tb = sys.exc_info()
            try:
                error = self.format_error(etype, value, tb)
            finally:
                del etype, value, tb
        duration = (time.perf_counter() - t0) * 1000.0
        if os.getpid() != _main_pid:
            # A fork() child that fell through the user's code must not
            # become a second worker reading requests.
            os._exit(0)
        self.flush_streams()
        self.restore_streams(notes)
        if signal.getsignal(signal.SIGINT) is not _on_sigint:
            signal.signal(signal.SIGINT, _on_sigint)
            notes.append("the code changed the SIGINT handler; the worker's own was put back (it turns an interrupt into KeyboardInterrupt)")
        if signal.getsignal(signal.SIGXFSZ) != signal.SIG_IGN:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        figures = self.save_figures(cell_id, notes)
        after, t2 = self.snapshot()
        walk_truncated = walk_truncated or t2
        if walk_truncated:
            notes.append("the sandbox has more than %d entries: artifacts were listed from the first %d only" % (WALK_CAP, WALK_CAP))
        artifacts, art_truncated = self.diff(before, after, figures, int(req.get("max_artifacts") or 200))
        if art_truncated:
            notes.append("more than %d files changed: the artifact list is truncated" % int(req.get("max_artifacts") or 200))
        return {
            "id": cell_id,
            "result": result,
            "error": error,
            "artifacts": artifacts,
            "duration_ms": duration,
            "truncated": bool(walk_truncated or art_truncated),
            "notes": notes,
        }

    # -- artifacts ---------------------------------------------------------

    def snapshot(self):
        """path -> (size, mtime_ns, ino) of the sandbox's regular files."""
        files = {}
        count = 0
        stack = [""]
        while stack:
            rel = stack.pop()
            try:
                it = os.scandir(rel or ".")
            except OSError:
                continue
            with it:
                for e in it:
                    count += 1
                    if count > WALK_CAP:
                        return files, True
                    p = rel + "/" + e.name if rel else e.name
                    try:
                        if e.is_dir(follow_symlinks=False):
                            if not (rel == "" and e.name in SKIP_TOP):
                                stack.append(p)
                        elif e.is_file(follow_symlinks=False):
                            st = e.stat(follow_symlinks=False)
                            files[p] = (st.st_size, st.st_mtime_ns, st.st_ino)
                    except OSError:
                        continue
        return files, False

    def diff(self, before, after, figures, cap):
        import mimetypes
        out = []
        changed = []
        for p, st in after.items():
            old = before.get(p)
            if old is None:
                changed.append((p, st, "created"))
            elif old != st:
                changed.append((p, st, "modified"))
        changed.sort()
        truncated = len(changed) > cap
        for p, st, change in changed[:cap]:
            fig = p in figures
            mime = "image/png" if fig else (mimetypes.guess_type(p)[0] or "")
            a = {"path": p, "size": st[0], "change": change, "kind": "figure" if fig else "file"}
            if mime:
                a["mime"] = mime
            out.append(a)
        return out, truncated

    def save_figures(self, cell_id, notes):
        plt = sys.modules.get("matplotlib.pyplot")
        saved = set()
        if plt is None:
            return saved
        try:
            nums = list(plt.get_fignums())
        except Exception:
            return saved
        if not nums:
            return saved
        try:
            os.makedirs("outputs", exist_ok=True)
        except OSError as e:
            notes.append("cannot create outputs/ for figures: %s" % e)
            return saved
        for i, num in enumerate(nums, 1):
            base = "outputs/figure-%s-%d" % (cell_id, i)
            path = base + ".png"
            k = 2
            while os.path.lexists(path):
                path = "%s-%d.png" % (base, k)
                k += 1
            try:
                fig = plt.figure(num)
                fig.savefig(path, format="png")
                saved.add(path)
            except Exception as e:
                notes.append("figure %s could not be saved: %s: %s" % (num, type(e).__name__, e))
            finally:
                try:
                    plt.close(num)
                except Exception:
                    pass
        return saved

    # -- preload -------------------------------------------------------------

    def preload(self, modules):
        import importlib
        done = []
        errors = {}
        for m in modules:
            try:
                importlib.import_module(m)
                done.append(m)
            except BaseException as e:  # SystemExit, KeyboardInterrupt from an import
                errors[m] = "%s: %s" % (type(e).__name__, e)
        return {"preloaded": done, "errors": errors}


def _operator_path():
    """Puts the operator's PYTHONPATH on sys.path. The worker runs isolated
    (python -I: no user site-packages, no PYTHON* variables, not the
    script's directory), so that nothing the code leaves in the sandbox
    (HOME) runs before the worker's hello; the path is set up here, after
    it. The sandbox itself goes first on sys.path at the first execution
    (_sandbox_path), after the preload: a module the code left in the
    sandbox under a preloaded module's name is not imported at start-up,
    where its denials would belong to no execution."""
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(WORKER_FILE):
        del sys.path[0]  # python without -I (3.3 and older have no -I)
    extra = []
    for p in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if p and p not in extra and p not in sys.path:
            extra.append(p)
    sys.path[0:0] = extra


def _sandbox_path():
    """The sandbox (cwd) first on sys.path, as in an interactive session."""
    if not sys.path or sys.path[0] != "":
        sys.path.insert(0, "")


def main():
    sys.dont_write_bytecode = True
    signal.signal(signal.SIGINT, _on_sigint)
    # Past RLIMIT_FSIZE a write fails with EFBIG instead of killing us.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        import faulthandler
        faulthandler.enable()  # a crash in C code prints the Python stack on stderr
    except Exception:
        pass
    w = Worker()
    reqs = io.open(REQ_FD, "rb", closefd=True)
    os.set_inheritable(REQ_FD, False)
    os.set_inheritable(RESP_FD, False)
    # The host knows the worker's pid from the tracer; the one here is
    # only compared with it.
    _send({"hello": True, "pid": os.getpid(), "python": sys.executable,
           "version": "%d.%d.%d" % sys.version_info[:3]})
    _operator_path()
    while True:
        req = None
        try:
            line = reqs.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            break
        try:
            req = json.loads(line.decode("utf-8"))
            op = req.get("op")
            if op == "execute":
                if w.cells == 0:
                    _sandbox_path()
                resp = w.execute(req)
            elif op == "preload":
                resp = w.preload(req.get("modules") or [])
            else:
                resp = {"error": {"name": "WorkerError", "message": "unknown op %r" % (op,), "traceback": ""}}
        except BaseException as e:  # a bug in the worker, or an interrupt outside user code
            resp = {"id": req.get("id") if isinstance(req, dict) else None,
                    "error": {"name": "WorkerError", "message": "%s: %s" % (type(e).__name__, e),
                              "traceback": traceback.format_exc()}}
        token = req.get("token") if isinstance(req, dict) else None
        if token:
            w.flush_streams()
            resp["markers"] = w.write_markers(str(token))
        while True:
            try:
                _send(resp)
                break
            except KeyboardInterrupt:
                continue
            except OSError as e:
                if e.errno == errno.EPIPE:
                    return
                raise


if __name__ == "__main__":
    main()
