#!/usr/bin/env python3
"""tracecell benchmark: wall time against the bare program and strace.

    python3 bench/bench.py --tracecell bin/tracecell [--runs 7] [--quick]

For every workload (bench/workloads/*.py, plus `python3 -c pass`) the same
command runs bare, under the C floor tracer (bench/floor.c), under its
user-notification variant (bench/floor_notif.c, skipped on kernels without
it), under `tracecell run` (and --no-freeze), and under
`strace -f --seccomp-bpf -e trace=%file,%process,%network -o /dev/null`,
interleaved (bare, floor, notif, tracecell, ..., bare, ...) so that drift on
the machine hits all of them alike.  Times are medians of wall time; speed is reported as a
ratio to the bare run measured in the same invocation, never as an absolute
target.  Every run's stdout must hash the same as the bare run's, so a run
that a tracer broke is an error, never a timing.

With --compare BIN[:LABEL] (repeatable) another tracecell binary, e.g. the
build before a change, runs as one more mode right after tracecell, in the
same interleaving, with its own column and its geometric mean beside
tracecell's: a before/after measured in one run.

Results go to stdout and to bench/results/latest.md and latest.json (with
--quick: quick.md and quick.json).  Targets are printed as PASS or MISS; a
MISS never fails the run, an error (non-zero exit, different output,
tracecell failure) does (exit status 1).

Standard library only.
"""

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads")
STRACE = ["strace", "-f", "--seccomp-bpf", "-e", "trace=%file,%process,%network",
          "-o", "/dev/null"]
MODES = ("bare", "floor", "notif", "tracecell", "nofreeze", "strace")
# floor is bench/floor.c: a C ptrace + seccomp tracer that traps the same
# kinds of call and makes only the system calls every stop needs, deciding
# nothing; what any such supervisor costs on this machine.  nofreeze is
# tracecell with --no-freeze: what the race hardening (stopping the rest of
# the tree during a checked call) costs threaded programs.  notif is
# bench/floor_notif.c: the same floor with SECCOMP_RET_USER_NOTIF (kernel
# 5.0+, answered with SECCOMP_USER_NOTIF_FLAG_CONTINUE, 5.5+) instead of
# ptrace stops; dropped with a line in the results when the kernel lacks it.
# See docs/USER_NOTIF.md.
MODE_LABELS = {"floor": "C floor tracer", "notif": "C user-notif floor",
               "nofreeze": "tracecell --no-freeze"}
# --compare modes are named cmp1, cmp2, ...; parse_args adds their labels
# here and their binaries to COMPARE_BINS.
COMPARE_BINS = {}

# Variables tracecell passes through from its own environment (config.KeptEnv
# plus LC_*); the bare and strace runs get exactly the same environment.
KEPT_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR",
            "COLUMNS", "LINES")

# Targets (DESIGN.md §6 and the project brief).
FREE_RATIO = 1.05      # workloads with no checked calls beyond start-up
PER_CALL_US = 15.0     # cost of one checked call
# bench/percall.c: each case adds one step to the one before (see the file).
PERCALL_N = 20000
PERCALL_CASES = [
    ("signal", "trap, register read, decision on registers (kill), resume: the floor"),
    ("relative", "+ read the path, lstat the name (open O_CREAT of a name in the cwd)"),
    ("absolute", "+ stat the deepest remembered directory (a path 4 levels below the sandbox)"),
]
GEOMEAN_RATIO = 1.10   # geometric mean of tracecell/bare over all workloads


class Workload:
    """One benchmarked command.

    args: the python3 arguments; "{wd}" and "{scale}" are substituted.
    fs: where its sandbox lives ("tmpfs" or "disk").
    free: True for workloads that make no checked calls beyond start-up
    (the ≤1.05x target).  per_call: the workload that prices one checked call.
    """

    def __init__(self, name, label, args, fs="tmpfs", free=False,
                 per_call=False, setup=None, factor=1.0, allow_exec=()):
        self.name, self.template, self.args, self.fs = name, label, args, fs
        self.free, self.per_call, self.setup = free, per_call, setup
        self.factor = factor  # size relative to the others at the same --scale
        self.allow_exec = list(allow_exec)
        self.label = label
        self.scale = factor

    def scaled(self, scale):
        """Fix the size factor; "{n:3000}" in the label becomes the count."""
        self.scale = scale * self.factor
        self.label = re.sub(r"\{n:(\d+)\}",
                            lambda m: str(max(1, int(int(m.group(1)) * self.scale))),
                            self.template)

    def argv(self, python, wd):
        return [python] + [a.format(wd=wd, scale=f"{self.scale:g}") for a in self.args]


def script(name):
    return os.path.join(WORKLOADS, name)


# Debian's pandas/__init__.py calls platform.uname(), which runs `uname -p`
# in a subprocess.  The bare run does that work, so the traced run is allowed
# to do it too rather than be timed with the exec refused.
PANDAS_EXEC = ("uname",)


def csv_setup(python, wd, scale):
    subprocess.run([python, script("pandas_csv.py"), "--setup", wd, str(scale)],
                   check=True, stdin=subprocess.DEVNULL)


ALL_WORKLOADS = [
    Workload("startup", "python start-up (-c pass)", ["-c", "pass"], free=True),
    Workload("imports", "import numpy, pandas, matplotlib",
             [script("imports.py"), "{wd}", "{scale}"], free=True,
             allow_exec=PANDAS_EXEC),
    Workload("pandas-csv", "pandas CSV groupby ({n:200000} rows, tmpfs)",
             [script("pandas_csv.py"), "{wd}", "{scale}"], setup=csv_setup,
             allow_exec=PANDAS_EXEC),
    Workload("files-tmpfs", "{n:3000} files create/write/read/delete (tmpfs)",
             [script("files.py"), "{wd}", "{scale}"], per_call=True),
    # The disk variants are a third of the size: creating and unlinking on
    # ext4 costs ten times what it does on tmpfs here, and `make bench` must
    # stay within a few minutes.
    Workload("files-disk", "{n:3000} files create/write/read/delete (disk)",
             [script("files.py"), "{wd}", "{scale}"], fs="disk", factor=1 / 3),
    Workload("walk", "walk + lstat /usr/lib/python3",
             [script("walk.py"), "{wd}", "{scale}"], free=True),
    Workload("mp-pool", "multiprocessing Pool(4, fork), {n:2000} tasks",
             [script("mp_pool.py"), "{wd}", "{scale}"]),
    Workload("threads-tmpfs", "8 threads x {n:300} files (tmpfs)",
             [script("threads.py"), "{wd}", "{scale}"]),
    Workload("threads-disk", "8 threads x {n:300} files (disk)",
             [script("threads.py"), "{wd}", "{scale}"], fs="disk", factor=1 / 3),
    Workload("cpu", "pure-CPU loop ({n:2000000} iterations)",
             [script("cpu.py"), "{wd}", "{scale}"], free=True),
]


class RunError(Exception):
    pass


def fstype(path):
    """File system type of the mount holding path (longest mount point)."""
    best, typ = "", "?"
    path = os.path.realpath(path)
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                mnt = parts[1].replace("\\040", " ")
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) \
                        and len(mnt) >= len(best):
                    best, typ = mnt, parts[2]
    except OSError:
        pass
    return typ


def clean_env(wd):
    """The environment tracecell gives its tree, for a sandbox at wd."""
    env = {k: v for k, v in os.environ.items()
           if k in KEPT_ENV or k.startswith("LC_")}
    # A fixed PATH: the caller's may hold a dozen directories, and a PATH
    # search (uname, above) costs one failed execve per entry.
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    env.update(HOME=wd, TMPDIR=os.path.join(wd, ".tmp"),
               XDG_CACHE_HOME=os.path.join(wd, ".cache"),
               XDG_CONFIG_HOME=os.path.join(wd, ".config"),
               MPLCONFIGDIR=os.path.join(wd, ".tmp", "matplotlib"),
               # The harness runs as whoever calls it, maybe root: a bare
               # run must not byte-compile into /usr/lib.  Set for all modes.
               PYTHONDONTWRITEBYTECODE="1")
    return env


class HWMPoller(threading.Thread):
    """Fallback for tracecell's peak RSS: poll VmHWM of the tracecell process.

    VmHWM only grows, so the last reading before the process exits is its peak
    (less whatever it allocated in its last few milliseconds).  wait4's
    ru_maxrss cannot be used: for a reaped child it is the maximum over the
    child and its descendants, i.e. the Python program's.
    """

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.path, self.kb, self.done = f"/proc/{pid}/status", 0, threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                with open(self.path) as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            self.kb = max(self.kb, int(line.split()[1]))
            except (OSError, ValueError):
                return
            self.done.wait(0.005)


class Bench:
    def __init__(self, args):
        self.a = args
        self.python = args.python
        self.tc = os.path.abspath(args.tracecell) if args.tracecell else None
        self.modes = args.modes
        self.base = {}
        self.reports = None
        self.rss_source = None  # "report" or "VmHWM polling"
        self.errors = []
        self.percall_results = []
        self.percall_note = ""
        self.percall_n = 0
        self.floor = None  # the compiled bench/floor.c
        self.notif = None  # the compiled bench/floor_notif.c, if the kernel runs it
        self.notif_note = ""  # why floor_notif.c could not be built or run
        self.notif_skipped = ""  # set when the notif mode was asked for and dropped
        self.percall_exe = None  # the compiled bench/percall.c
        self.bindir = None  # the copies of the tracecell binaries (stage_binaries)

    # -- running ---------------------------------------------------------

    def command(self, mode, wl, wd, report):
        argv = wl.argv(self.python, wd)
        if mode == "bare":
            return argv
        if mode == "strace":
            return STRACE + argv
        if mode == "floor":
            return [self.floor] + argv
        if mode == "notif":
            return [self.notif] + argv
        cmd = [COMPARE_BINS.get(mode, self.tc), "run", "--quiet", "--write", wd, "--report", report,
               "--env", "PYTHONDONTWRITEBYTECODE=1"]
        if mode == "nofreeze":
            cmd.append("--no-freeze")
        for prog in wl.allow_exec:
            cmd += ["--allow-exec", prog]
        return cmd + ["--"] + argv

    def run_once(self, mode, wl, wd, tag):
        report = os.path.join(self.reports, f"{wl.name}-{tag}.json")
        if os.path.exists(report):
            os.unlink(report)
        cmd = self.command(mode, wl, wd, report)
        poll = mode == "tracecell" and self.rss_source == "VmHWM polling"
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=wd, env=clean_env(wd),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        poller = None
        if poll:
            poller = HWMPoller(p.pid)
            poller.start()
        out, err = p.communicate()
        elapsed = time.perf_counter() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        # Everything the run reaped: the tracer and, through its own
        # RUSAGE_CHILDREN, the tree it waited for.
        run_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        if poller:
            poller.done.set()
            poller.join()
        res = {"ms": elapsed * 1000, "hash": hashlib.sha256(out).hexdigest(),
               "rc": p.returncode}
        if p.returncode != 0:
            raise RunError(f"{wl.name} [{mode}] exited {p.returncode}: "
                           f"{' '.join(cmd)}\n{tail(err)}{report_exit(report)}")
        if mode == "tracecell" or mode in COMPARE_BINS:
            try:
                with open(report) as f:
                    rep = json.load(f)
            except (OSError, ValueError) as e:
                raise RunError(f"{wl.name} [tracecell] report {report}: {e}")
            if rep.get("error"):
                raise RunError(f"{wl.name} [tracecell] report error: {rep['error']}")
            counts = rep.get("counts", {})
            res["checked"] = counts.get("checked", 0)
            # The tracer's own CPU: the run's less the tree's (the report's
            # RUSAGE_CHILDREN of the tracer). Steadier than wall time on a
            # shared machine, and what a tracer takes from the tree there.
            tree = (rep.get("cpu_user_seconds") or 0) + (rep.get("cpu_system_seconds") or 0)
            res["tracer_cpu_ms"] = max(0.0, run_cpu - tree) * 1000
            res["denied"] = counts.get("denied", 0)
            if res["denied"]:
                d = (rep.get("denials") or [{}])[0]
                res["first_denial"] = {k: d.get(k) for k in
                                       ("syscall", "paths", "program", "reason")}
            kb = rep.get("tracer_peak_rss_kb") or 0
            if mode != "tracecell":
                res["tracer_rss_kb"] = kb
                return res
            if self.rss_source is None:
                self.rss_source = "report" if kb else "VmHWM polling"
            if self.rss_source == "report":
                res["tracer_rss_kb"] = kb
            elif poller:
                res["tracer_rss_kb"] = poller.kb
        return res

    def workdir(self, wl, mode):
        wd = os.path.join(self.base[wl.fs], wl.name, mode)
        os.makedirs(os.path.join(wd, ".tmp"), exist_ok=True)
        return wd

    def bench_workload(self, wl):
        wds = {m: self.workdir(wl, m) for m in self.modes}
        if wl.setup:
            first = wds[self.modes[0]]
            wl.setup(self.python, first, wl.scale)
            for m in self.modes[1:]:
                for name in os.listdir(first):
                    src = os.path.join(first, name)
                    if os.path.isfile(src):
                        shutil.copy(src, wds[m])
        runs = {m: [] for m in self.modes}
        ref = None
        # Warm-up (untimed) for bare and tracecell: page cache, the sandbox's
        # config dirs, and the reference output every later run must
        # reproduce.  strace, only a point of comparison and the slowest by
        # far, skips it to keep `make bench` short.
        rounds = ([("warm", False)] if self.a.warmup else []) + \
                 [(str(i), True) for i in range(self.a.runs)]
        for tag, timed in rounds:
            for m in self.modes:
                if not timed and m == "strace":
                    continue
                r = self.run_once(m, wl, wds[m], f"{m}-{tag}")
                if ref is None:
                    ref = r["hash"]
                elif r["hash"] != ref:
                    raise RunError(f"{wl.name} [{m}] output differs from the "
                                   f"first run ({self.modes[0]}): {r['hash'][:12]} "
                                   f"!= {ref[:12]}")
                if timed:
                    runs[m].append(r)
            if timed:
                progress(f"  {wl.name:14s} run {int(tag) + 1}/{self.a.runs}: " +
                         "  ".join(f"{MODE_LABELS[m] if m in COMPARE_BINS else m} "
                                   f"{runs[m][-1]['ms']:8.1f} ms" for m in self.modes))
        return summarize(wl, runs, self.modes)

    def percall(self):
        """Time bench/percall.c bare and under tracecell, interleaved: what
        one checked call costs, split into its parts (see PERCALL_CASES)."""
        if "tracecell" not in self.modes or (self.a.only and "percall" not in self.a.only):
            return
        if not self.percall_exe or not self.floor:
            self.percall_note = "not measured: " + self.cc_error
            return
        exe, floor = self.percall_exe, self.floor
        wd = os.path.join(self.base["tmpfs"], "percall")
        os.makedirs(wd, exist_ok=True)
        n = str(max(1000, int(PERCALL_N * self.a.scale)))
        self.percall_n = int(n)
        progress(f"percall: {', '.join(c for c, _ in PERCALL_CASES)} ({n} calls a run)")
        for case, what in PERCALL_CASES:
            argv = [exe, case, n, wd]
            # floor: bench/floor.c, a C tracer doing only the stop's
            # unavoidable system calls, in the same minutes as tracecell.
            times = {"bare": [], "floor": [], "tracecell": []}
            prefix = {"bare": [], "floor": [floor],
                      "tracecell": [self.tc, "run", "--quiet", "--write", wd, "--"]}
            if self.notif:
                times["notif"], prefix["notif"] = [], [self.notif]
            for _ in range(self.a.runs):
                for mode in times:
                    cmd = prefix[mode] + argv
                    p = subprocess.run(cmd, cwd=wd, env=clean_env(wd), stdin=subprocess.DEVNULL,
                                       capture_output=True)
                    if p.returncode != 0:
                        self.errors.append(f"percall {case} [{mode}] exited {p.returncode}: {tail(p.stderr)}")
                        return
                    times[mode].append(float(p.stdout.decode().strip()))
            bare, fl, traced = (statistics.median(times[m]) for m in ("bare", "floor", "tracecell"))
            row = {"case": case, "what": what, "bare_ns": round(bare, 1),
                   "floor_ns": round(fl, 1),
                   "floor_added_us": round((fl - bare) / 1000, 2),
                   "tracecell_ns": round(traced, 1),
                   "added_us": round((traced - bare) / 1000, 2)}
            if self.notif:
                nt = statistics.median(times["notif"])
                row.update(notif_ns=round(nt, 1), notif_added_us=round((nt - bare) / 1000, 2))
            self.percall_results.append(row)

    def compile_c(self):
        """Build bench/percall.c, bench/floor.c and (with the notif mode)
        bench/floor_notif.c into the reports dir.  Sets cc_error (and leaves
        the paths None) when that fails; the user-notification floor is
        optional (see probe_notif)."""
        self.cc_error = ""
        cc = shutil.which("gcc") or shutil.which("cc")
        if not cc:
            self.cc_error = "no C compiler (gcc) in PATH"
            return
        built = {}
        for name in ("percall", "floor"):
            out = os.path.join(self.reports, name)
            r = subprocess.run([cc, "-O2", "-o", out, os.path.join(HERE, name + ".c")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                self.cc_error = f"{cc} bench/{name}.c failed: {tail(r.stderr.encode())}"
                return
            built[name] = out
        self.percall_exe, self.floor = built["percall"], built["floor"]
        if "notif" not in self.modes:
            return
        out = os.path.join(self.reports, "floor_notif")
        r = subprocess.run([cc, "-O2", "-o", out, os.path.join(HERE, "floor_notif.c")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.notif_note = f"{cc} bench/floor_notif.c failed: {tail(r.stderr.encode(), 300)}"
            return
        self.probe_notif(out)

    def probe_notif(self, exe):
        """Keep the user-notification floor only if this kernel runs it: it
        exits 124 without SECCOMP_RET_USER_NOTIF (5.0) or
        SECCOMP_USER_NOTIF_FLAG_CONTINUE (5.5).  The probe makes one trapped
        call (kill), so the CONTINUE answer is tried too."""
        try:
            r = subprocess.run([exe, "/bin/sh", "-c", "kill -0 $$"], capture_output=True,
                               stdin=subprocess.DEVNULL, timeout=20)
        except (OSError, subprocess.SubprocessError) as e:
            self.notif_note = f"bench/floor_notif.c did not run: {e}"
            return
        if r.returncode != 0:
            why = tail(r.stderr, 300).strip() or f"exit status {r.returncode}"
            self.notif_note = (f"this kernel ({platform.release()}) cannot run the "
                               f"user-notification floor: {why}")
            return
        self.notif = exe
    def stage_binaries(self):
        """Run every tracecell binary from a copy in the state of a cold install.

        How a binary's pages came into the page cache changes how fast it
        starts (Linux 6.18, ext4, 2026-11-27): pages written by write(2) (a
        copy, `make install`) ran `--version` 0.6 ms faster than pages the
        Go linker wrote through mmap, or pages read in by exec after they
        were dropped (a binary after a reboot); `run -- /bin/true` 0.85 ms
        (300-800 interleaved runs). Dropped and read in again by exec, a
        copy and the linker's output started alike (3.41 and 3.46 ms). The
        build under test is usually the linker's output and the builds it
        is compared with are copies, so each is copied, written out and
        dropped from the cache here: every one is read in by its first exec,
        as after a reboot.
        """
        d = tempfile.mkdtemp(prefix="tracecell-bench-bin-", dir=self.a.disk_dir)
        self.bindir = d
        staged = {}
        for mode, path in [("tracecell", self.tc)] + list(COMPARE_BINS.items()):
            if not path:
                continue
            dst = os.path.join(d, mode)
            shutil.copyfile(path, dst)
            os.chmod(dst, 0o755)
            fd = os.open(dst, os.O_RDONLY)
            try:
                os.fsync(fd)  # clean pages can be dropped, dirty ones not
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            staged[mode] = dst
        try:
            for dst in staged.values():
                subprocess.run([dst, "--version"], check=True, capture_output=True,
                               stdin=subprocess.DEVNULL, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            progress(f"bench: running the binaries as given: their copies in {d} do not run ({e})")
            return
        for mode, dst in staged.items():
            if mode == "tracecell":
                self.tc = dst
            else:
                COMPARE_BINS[mode] = dst

    def run(self):
        self.base["tmpfs"] = tempfile.mkdtemp(prefix="tracecell-bench-", dir=self.a.tmpfs_dir)
        self.base["disk"] = tempfile.mkdtemp(prefix="tracecell-bench-", dir=self.a.disk_dir)
        self.reports = tempfile.mkdtemp(prefix="tracecell-bench-reports-", dir=self.a.disk_dir)
        results = []
        t0 = time.time()
        try:
            self.stage_binaries()
            self.compile_c()
            if "floor" in self.modes and not self.floor:
                raise SystemExit(f"bench: cannot build the floor tracer: {self.cc_error} "
                                 "(install gcc, or leave floor out of --modes)")
            if "notif" in self.modes and not self.notif:
                # self.modes is the list main() also passes on: the column
                # goes from every table, and the results say why.
                self.notif_skipped = self.notif_note or self.cc_error
                progress("bench: skipping the user-notif floor column: " + self.notif_skipped)
                self.modes.remove("notif")
            for wl in self.selected():
                wl.scaled(self.a.scale)
                progress(f"{wl.name}: {wl.label}")
                try:
                    results.append(self.bench_workload(wl))
                except RunError as e:
                    self.errors.append(str(e))
                    progress(f"ERROR: {e}")
                    results.append({"name": wl.name, "label": wl.label, "error": str(e)})
            self.percall()
        finally:
            if not self.a.keep:
                for d in list(self.base.values()) + [self.reports, self.bindir]:
                    if d:
                        shutil.rmtree(d, ignore_errors=True)
        return results, time.time() - t0

    def selected(self):
        if not self.a.only:
            return ALL_WORKLOADS
        names = {w.name for w in ALL_WORKLOADS}
        bad = [n for n in self.a.only if n not in names and n != "percall"]
        if bad:
            sys.exit(f"bench: unknown workload(s) {bad}; have {sorted(names)}")
        return [w for w in ALL_WORKLOADS if w.name in self.a.only]


def report_exit(path):
    """What a tracecell report (if written) says about how the run ended."""
    try:
        with open(path) as f:
            rep = json.load(f)
    except (OSError, ValueError):
        return ""
    return (f"report: exit {json.dumps(rep.get('exit'))}, counts "
            f"{json.dumps(rep.get('counts'))}, error {rep.get('error')!r}")


def tail(b, n=1500):
    s = b.decode(errors="replace")
    return s[-n:]


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


def summarize(wl, runs, modes):
    s = {"name": wl.name, "label": wl.label, "scale": wl.scale, "fs": wl.fs, "free": wl.free,
         "per_call": wl.per_call}
    for m in modes:
        ms = [r["ms"] for r in runs[m]]
        s[m] = {"median_ms": statistics.median(ms), "runs_ms": [round(x, 2) for x in ms]}
    bare = s["bare"]["median_ms"] if "bare" in modes else None
    for m in modes:
        if m != "bare" and bare:
            s[m]["ratio"] = s[m]["median_ms"] / bare
    if "floor" in modes:
        # Over the floor round by round (paired_ratios): what the
        # machine's drift does to the ratio of medians shows against it.
        fl = [r["ms"] for r in runs["floor"]]
        for m in modes:
            if m not in ("bare", "floor", "notif", "strace"):
                pr = paired_ratios([r["ms"] for r in runs[m]], fl)
                if pr:
                    s[m]["over_floor_rounds"] = [round(x, 4) for x in pr]
                    s[m]["over_floor_paired"] = statistics.median(pr)
    if "tracecell" in modes:
        t = s["tracecell"]
        rs = runs["tracecell"]
        t["checked"] = int(statistics.median(r["checked"] for r in rs))
        t["denied"] = max(r["denied"] for r in rs)
        for r in rs:
            if "first_denial" in r:
                t["first_denial"] = r["first_denial"]
                break
        rss = [r["tracer_rss_kb"] for r in rs if r.get("tracer_rss_kb")]
        t["tracer_peak_rss_kb"] = max(rss) if rss else None
    for m in modes:
        if m == "tracecell" or m in COMPARE_BINS:
            cpu = [r["tracer_cpu_ms"] for r in runs[m] if "tracer_cpu_ms" in r]
            if cpu:
                s[m]["tracer_cpu_ms"] = statistics.median(cpu)
    for m in modes:
        if m in COMPARE_BINS:
            rs = runs[m]
            s[m]["checked"] = int(statistics.median(r["checked"] for r in rs))
            s[m]["denied"] = max(r["denied"] for r in rs)
            rss = [r["tracer_rss_kb"] for r in rs if r.get("tracer_rss_kb")]
            s[m]["tracer_peak_rss_kb"] = max(rss) if rss else None
    # Per checked call, from tracecell's count of checked calls (without
    # tracecell among the modes there is no count).
    t = s.get("tracecell")
    if wl.per_call and bare and t and t["checked"]:
        t["per_call_us"] = (t["median_ms"] - bare) * 1000 / t["checked"]
        for m in ["floor", "notif"] + [c for c in modes if c in COMPARE_BINS]:
            if m in modes:
                # The floors trap the same calls on this workload (files.py).
                s[m]["per_call_us"] = (s[m]["median_ms"] - bare) * 1000 / t["checked"]
    return s


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def paired_ratios(a, b):
    """Each run of a over the run of b in the same round: the modes of a
    round run one after the other, so a ratio within a round cancels most of
    the machine's drift, which a ratio of medians over all rounds keeps."""
    return [x / y for x, y in zip(a, b) if x > 0 and y > 0]


def paired_geomean(rounds, resamples=2000, level=0.90, seed=20261127):
    """The geometric mean over workloads of each workload's median paired
    ratio, and a bootstrap interval at level: each resample draws every
    workload's rounds again with replacement. rounds: one list of per-round
    ratios per workload. Returns (geomean, low, high), low and high None
    when a workload has fewer than 3 rounds; None without rounds."""
    rounds = [r for r in rounds if r]
    if not rounds:
        return None
    g = geomean([statistics.median(r) for r in rounds])
    if min(len(r) for r in rounds) < 3:
        return g, None, None
    rng = random.Random(seed)
    gs = sorted(geomean([statistics.median(rng.choices(r, k=len(r))) for r in rounds])
                for _ in range(resamples))
    lo = gs[int((1 - level) / 2 * (resamples - 1))]
    hi = gs[int((1 + level) / 2 * (resamples - 1))]
    return g, lo, hi


def run_text(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def machine_info(a, bench):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Model", "CPU part")):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    py = run_text([a.python, "-c", "import sys; print(sys.version.split()[0])"])
    # Every trace stop is a hand-off between two tasks; in a virtual machine
    # its cost depends on how an idle vCPU waits (haltpoll, acpi_idle, ...).
    try:
        with open("/sys/devices/system/cpu/cpuidle/current_driver") as f:
            cpuidle = f.read().strip()
    except OSError:
        cpuidle = ""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(), "machine": platform.machine(),
        "nproc": os.cpu_count(), "cpu": cpu, "cpuidle": cpuidle,
        "python": f"{a.python} {py}",
        "strace": run_text(["strace", "-V"]).splitlines()[0] if "strace" in a.modes else "",
        "tracecell": (run_text([bench.tc, "--version"]).replace("tracecell version ", "")
                      or "?") if bench.tc else "",
        "runs": a.runs, "scale": a.scale, "loadavg_start": loadavg(),
        "tmpfs_dir": f"{a.tmpfs_dir} ({fstype(a.tmpfs_dir)})",
        "disk_dir": f"{a.disk_dir} ({fstype(a.disk_dir)})",
    }


def evaluate(results, modes, percall=()):
    """Targets as (name, verdict, detail); verdict is PASS, MISS or n/a.

    The per-call target is judged on percall.c's file cases (trap, decode,
    resolve, decide, resume, as the target defines it: the slower case);
    the cost derived from the files-tmpfs workload is shown beside it."""
    ok = [r for r in results if "error" not in r]
    if "tracecell" not in modes or "bare" not in modes:
        return [("tracecell targets", "n/a", "tracecell or bare not measured")]
    if not ok:
        return [("tracecell targets", "n/a", "no workload ran without error")]
    targets = []
    free = [r for r in ok if r["free"]]
    bad = [r for r in free if r["tracecell"]["ratio"] > FREE_RATIO]
    targets.append((f"<= {FREE_RATIO:.2f}x on workloads without checked calls",
                    "MISS" if bad or not free else "PASS",
                    ", ".join(f"{r['name']} {r['tracecell']['ratio']:.3f}x" + floor_note(r)
                              for r in free)))
    pc = [r for r in ok if r["per_call"] and "per_call_us" in r["tracecell"]]
    files = [r for r in percall if r["case"] != "signal"]
    wl = (f"{pc[0]['tracecell']['per_call_us']:.2f} us from {pc[0]['name']} "
          f"({pc[0]['tracecell']['checked']} checked calls"
          + (f"; the C floor tracer {pc[0]['floor']['per_call_us']:.2f} us"
             if "per_call_us" in pc[0].get("floor", {}) else "") + ")") if pc else ""
    if files:
        worst = max(files, key=lambda r: r["added_us"])
        floor = [r for r in percall if r["case"] == "signal"]
        targets.append((f"per checked call < {PER_CALL_US:g} us",
                        "PASS" if worst["added_us"] < PER_CALL_US else "MISS",
                        f"{worst['added_us']:.2f} us (percall {worst['case']}; the C floor "
                        f"tracer {worst['floor_added_us']:.2f} us)"
                        + (f"; stop round trip alone {floor[0]['added_us']:.2f} us" if floor else "")
                        + (f"; {wl}" if wl else "")))
    elif pc:
        us = pc[0]["tracecell"]["per_call_us"]
        targets.append((f"per checked call < {PER_CALL_US:g} us",
                        "PASS" if us < PER_CALL_US else "MISS", wl))
    else:
        targets.append((f"per checked call < {PER_CALL_US:g} us", "n/a",
                        "files-tmpfs not measured"))
    g = geomean([r["tracecell"]["ratio"] for r in ok])
    gf = geomean([r["floor"]["ratio"] for r in ok]) if "floor" in modes else None
    gn = geomean([r["notif"]["ratio"] for r in ok]) if "notif" in modes else None
    targets.append((f"geomean < {GEOMEAN_RATIO:.2f}x",
                    "n/a" if g is None else ("PASS" if g < GEOMEAN_RATIO else "MISS"),
                    "" if g is None else f"{g:.3f}x over {len(ok)} workloads"
                    + (f" (the C floor tracer: {gf:.3f}x; tracecell / floor: {g / gf:.3f}x"
                       + paired_note(ok)
                       + (f"; the user-notif floor: {gn:.3f}x" if gn else "") + ")"
                       if gf else "")
                    + compare_note(ok, modes, g)))
    for mode, name in (("tracecell", "faster than strace on every workload"),
                       ("nofreeze", "(for comparison) tracecell --no-freeze faster than strace on every workload")):
        if "strace" in modes and mode in modes:
            slower = [r["name"] for r in ok if r[mode]["median_ms"] >= r["strace"]["median_ms"]]
            targets.append((name, "MISS" if slower or not ok else "PASS",
                            ("not faster on: " + ", ".join(slower)) if slower else
                            f"all {len(ok)} workloads"))
    return targets


def paired_note(ok):
    """ ", per round 1.075x (90 %: 1.02–1.13)": tracecell over the floor by
    the ratios within rounds (paired_geomean), when they were measured."""
    pg = paired_geomean([r["tracecell"].get("over_floor_rounds") for r in ok])
    if not pg:
        return ""
    return f", per round {pg[0]:.3f}x" + (f" (90 %: {pg[1]:.3f}–{pg[2]:.3f})" if pg[1] else "")


def compare_note(ok, modes, g):
    """ "; tracecell LABEL: 1.234x, tracecell / LABEL: 0.950x" for every
    --compare mode (the geometric means of the same workloads)."""
    out = ""
    for m in modes:
        if m not in COMPARE_BINS:
            continue
        gc = geomean([r[m].get("ratio") for r in ok])
        if gc:
            out += f"; {MODE_LABELS[m]}: {gc:.3f}x" + (
                f", tracecell / {MODE_LABELS[m]}: {g / gc:.3f}x" if g else "")
    return out


def floor_note(r):
    """ " (floor 1.02x)" when the C floor tracer ran on workload r."""
    return f" (floor {r['floor']['ratio']:.3f}x)" if "ratio" in r.get("floor", {}) else ""


def fmt_cell(r, m):
    if m not in r:
        return "-"
    c = r[m]
    if "ratio" in c:
        return f"{c['median_ms']:.1f} ({c['ratio']:.2f}x)"
    return f"{c['median_ms']:.1f}"


def over_floor_markdown(ok, modes):
    """tracecell over the C floor tracer two ways: the ratio of the medians
    (the main table's ratios divided) and the median of per-round ratios
    (paired_ratios), with its spread and, for the geometric mean, a
    bootstrap interval: how finely this run can tell two tracers apart."""
    ms = [m for m in modes if any("over_floor_paired" in r.get(m, {}) for r in ok)]
    if not ms or "bare" not in modes:
        return []
    L = ["Over the C floor tracer: the ratio of the medians above, and the median of the "
         "ratios within a round (each run over the floor's run of the same round, which "
         "cancels most of the machine's drift between rounds), with the middle half of "
         "those ratios. The interval of the geometric mean is a 90 % bootstrap over the "
         "rounds: differences smaller than it are not resolved by this run.", ""]
    head = ["workload"]
    for m in ms:
        lab = MODE_LABELS.get(m, m)
        head += [f"{lab}: medians", f"{lab}: per round (middle half)"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    for r in ok:
        row = [r["label"]]
        for m in ms:
            c, f = r.get(m, {}), r.get("floor", {})
            pr = c.get("over_floor_rounds") or []
            if "ratio" in c and "ratio" in f and pr:
                q = statistics.quantiles(pr, n=4) if len(pr) > 1 else [pr[0], pr[0], pr[0]]
                row += [f"{c['ratio'] / f['ratio']:.3f}x",
                        f"{c['over_floor_paired']:.3f}x ({q[0]:.2f}–{q[2]:.2f})"]
            else:
                row += ["-", "-"]
        L.append("| " + " | ".join(row) + " |")
    row = ["**geometric mean**"]
    for m in ms:
        gm = geomean([r[m]["ratio"] / r["floor"]["ratio"] for r in ok
                      if "ratio" in r.get(m, {}) and "ratio" in r.get("floor", {})])
        pg = paired_geomean([r[m].get("over_floor_rounds") for r in ok])
        row += [f"**{gm:.3f}x**" if gm else "-",
                f"**{pg[0]:.3f}x**" + (f" (90 %: {pg[1]:.3f}–{pg[2]:.3f})" if pg[1] else "")
                if pg else "-"]
    L.append("| " + " | ".join(row) + " |")
    L.append("")
    return L


def tracer_cpu_markdown(ok, modes):
    """With --compare: the tracer's own CPU per workload (median ms), each
    tracecell build beside the other."""
    cmp = [m for m in modes if m in COMPARE_BINS]
    if "tracecell" not in modes or not cmp or not ok:
        return []
    L = ["Tracer CPU (median ms of the same runs: the run's user+system CPU less the "
         "tree's, from the report; what the tracer itself spent):", ""]
    L.append("| workload | tracecell | " + " | ".join(MODE_LABELS[m] for m in cmp) + " |")
    L.append("|---|---:|" + "---:|" * len(cmp))
    for r in ok:
        cells = [f"{r[m]['tracer_cpu_ms']:.1f}" if "tracer_cpu_ms" in r[m] else "?"
                 for m in ["tracecell"] + cmp]
        L.append(f"| {r['label']} | " + " | ".join(cells) + " |")
    L.append("")
    return L


def percall_markdown(rows, note, runs, n):
    L = []
    if not rows and not note:
        return L
    L.append(f"Per checked call, measured directly (`bench/percall.c`, {n} calls a run, "
             f"median of {runs} interleaved runs; a tracer's cost is the difference to bare). "
             "The floor is `bench/floor.c`: a C tracer that makes only the system calls every "
             "stop needs (wait4, PTRACE_GETREGSET, process_vm_readv and the same stat calls "
             "for a path, PTRACE_CONT) and decides nothing, run in the same minutes:")
    L.append("")
    if note:
        L.append(note)
        L.append("")
        return L
    notif = all("notif_ns" in r for r in rows)
    L.append("| case | what the tracer does | bare ns/call | C floor ns/call | tracecell ns/call "
             "| floor added µs | tracecell added µs | tracecell over the floor µs |"
             + (" user-notif floor added µs | ptrace floor / user-notif floor |" if notif else ""))
    L.append("|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if notif else ""))
    for r in rows:
        L.append(f"| {r['case']} | {r['what']} | {r['bare_ns']:.0f} | {r['floor_ns']:.0f} | "
                 f"{r['tracecell_ns']:.0f} | {r['floor_added_us']:.2f} | **{r['added_us']:.2f}** | "
                 f"{r['added_us'] - r['floor_added_us']:+.2f} |"
                 + (f" {r['notif_added_us']:.2f} | {notif_ratio(r)} |" if notif else ""))
    L.append("")
    if notif:
        L.append("The user-notif floor is `bench/floor_notif.c`: the same filter and the same "
                 "per-call work with SECCOMP_RET_USER_NOTIF, answered with "
                 "SECCOMP_USER_NOTIF_FLAG_CONTINUE; no register read (the arguments come with "
                 "the notification), one SECCOMP_IOCTL_NOTIF_ID_VALID after a path read. "
                 "See docs/USER_NOTIF.md.")
        L.append("")
    return L


def notif_ratio(r):
    """How many times cheaper the user-notif floor's added cost is than the
    ptrace floor's on percall row r ("-" when either is not positive)."""
    if r["notif_added_us"] <= 0 or r["floor_added_us"] <= 0:
        return "-"
    return f"{r['floor_added_us'] / r['notif_added_us']:.2f}x"


def markdown(results, info, targets, modes, elapsed, rss_source, percall=(), percall_note="", percall_n=0):
    ok = [r for r in results if "error" not in r]
    L = []
    L.append(f"# tracecell benchmark — {info['date']}")
    L.append("")
    L.append(f"Machine: Linux {info['kernel']} {info['machine']}, {info['nproc']} CPUs"
             f" ({info['cpu'] or '?'}"
             + (f", cpuidle {info['cpuidle']}" if info.get("cpuidle") else "")
             + f"), Python {info['python']}"
             + (f", {info['strace']}" if info['strace'] else "")
             + (f", tracecell {info['tracecell']}" if info['tracecell'] else "") + ".")
    L.append(f"Median wall time of {info['runs']} interleaved runs per mode"
             f" (scale {info['scale']:g}); sandboxes: tmpfs {info['tmpfs_dir']},"
             f" disk {info['disk_dir']}. strace: `{' '.join(STRACE)} CMD`."
             f" Benchmark took {elapsed:.0f} s.")
    busy = [x for x in (info.get("loadavg_start"), info.get("loadavg_end"))
            if x is not None and x > 0.5 * (info["nproc"] or 1)]
    if busy:
        L.append("")
        L.append(f"**Warning:** 1-minute load average {info.get('loadavg_start')} at the start, "
                 f"{info.get('loadavg_end')} at the end, on {info['nproc']} CPUs: other work "
                 f"was running and the ratios below are noisy.")
    if info.get("notif_note"):
        L.append("")
        L.append(f"No user-notif floor column: {info['notif_note']}.")
    L.append("")
    head = ["workload"]
    if "tracecell" in modes:
        head.append("checked calls")
    head += [f"{MODE_LABELS.get(m, m)} ms" + (" (ratio)" if m != "bare" else "") for m in modes]
    if "tracecell" in modes:
        head.append("tracer RSS MB")
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    for r in results:
        if "error" in r:
            L.append(f"| {r['label']} | " + " | ".join(["ERROR"] * (len(head) - 1)) + " |")
            continue
        row = [r["label"]]
        if "tracecell" in modes:
            row.append(str(r["tracecell"]["checked"]) +
                       (f" ({r['tracecell']['denied']} denied)" if r["tracecell"]["denied"] else ""))
        row += [fmt_cell(r, m) for m in modes]
        if "tracecell" in modes:
            kb = r["tracecell"].get("tracer_peak_rss_kb")
            row.append(f"{kb / 1024:.1f}" if kb else "?")
        L.append("| " + " | ".join(row) + " |")
    if "bare" in modes and ok:
        row = ["**geometric mean**"] + ([""] if "tracecell" in modes else [])
        for m in modes:
            g = geomean([r[m].get("ratio") for r in ok]) if m != "bare" else None
            row.append(f"**{g:.3f}x**" if g else "")
        if "tracecell" in modes:
            row.append("")
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    if "tracecell" in modes and ok:
        pc = [r for r in ok if r["per_call"] and "per_call_us" in r["tracecell"]]
        if pc:
            t = pc[0]["tracecell"]
            L.append(f"Per checked call: **{t['per_call_us']:.2f} µs** "
                     f"((tracecell − bare) / counts.checked on {pc[0]['name']}: "
                     f"({t['median_ms']:.1f} − {pc[0]['bare']['median_ms']:.1f}) ms / {t['checked']}).")
        kbs = [r["tracecell"].get("tracer_peak_rss_kb") or 0 for r in ok]
        if max(kbs):
            L.append(f"Tracer peak RSS: **{max(kbs) / 1024:.1f} MB** (largest over workloads; "
                     f"source: {'report tracer_peak_rss_kb' if rss_source == 'report' else 'VmHWM of the tracecell process, polled every 5 ms'}).")
        den = [r for r in ok if r["tracecell"]["denied"]]
        for r in den:
            L.append(f"Note: {r['name']} had {r['tracecell']['denied']} denial(s) under tracecell; "
                     f"first: `{json.dumps(r['tracecell'].get('first_denial'))}`.")
        L.append("")
    L += over_floor_markdown(ok, modes)
    L += tracer_cpu_markdown(ok, modes)
    L += percall_markdown(percall, percall_note, info["runs"], percall_n)
    L.append("Targets (a MISS is reported, never fatal):")
    L.append("")
    for name, verdict, detail in targets:
        L.append(f"- **{verdict}** {name}" + (f" — {detail}" if detail else ""))
    errs = [r for r in results if "error" in r]
    if errs:
        L.append("")
        L.append("Errors:")
        L.append("")
        for r in errs:
            L.append("```")
            L.append(r["error"].strip())
            L.append("```")
    return "\n".join(L) + "\n"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tracecell", help="tracecell binary (required unless --modes leaves it out)")
    p.add_argument("--runs", type=int, default=7, help="timed runs per mode (default 7)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 1 run, no warm-up, scale 0.2, results to quick.md")
    p.add_argument("--scale", type=float, default=None,
                   help="workload size factor (default 1; 0.2 with --quick)")
    p.add_argument("--modes", default="bare,floor,notif,tracecell,nofreeze,strace",
                   help="comma-separated subset of bare,floor,notif,tracecell,nofreeze,strace"
                        " (bare first; floor is the C floor tracer bench/floor.c, notif its"
                        " SECCOMP_RET_USER_NOTIF variant bench/floor_notif.c, skipped on"
                        " kernels without it, nofreeze is"
                        " tracecell --no-freeze)")
    p.add_argument("--compare", action="append", default=[], metavar="BIN[:LABEL]",
                   help="another tracecell binary (e.g. the build before a change) to run as"
                        " one more mode after tracecell, interleaved with the others, in its"
                        " own column and geometric mean; LABEL names it (default: its"
                        " --version); repeatable")
    p.add_argument("--only", default="", help="comma-separated workload names")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--tmpfs-dir", default="/dev/shm")
    p.add_argument("--disk-dir", default="/var/tmp",
                   help="directory on a disk file system (default /var/tmp)")
    p.add_argument("--results", default=os.path.join(HERE, "results"),
                   help="where latest.md/latest.json go")
    p.add_argument("--keep", action="store_true", help="keep sandboxes and reports")
    a = p.parse_args(argv)
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    if not a.modes or any(m not in MODES for m in a.modes) or len(set(a.modes)) != len(a.modes):
        p.error(f"--modes: want a subset of {','.join(MODES)}")
    if "bare" in a.modes:
        a.modes.remove("bare")
        a.modes.insert(0, "bare")
    a.only = [n.strip() for n in a.only.split(",") if n.strip()]
    a.compare_bins = []
    for i, spec in enumerate(a.compare, 1):
        path, _, label = spec.partition(":")
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            p.error(f"--compare {spec}: {path} is not an executable file")
        path = os.path.abspath(path)
        if not label:
            label = (run_text([path, "--version"]).replace("tracecell version ", "")
                     or os.path.basename(path))
        mode = f"cmp{i}"
        COMPARE_BINS[mode] = path
        MODE_LABELS[mode] = f"tracecell {label}"
        a.compare_bins.append({"mode": mode, "path": path, "label": label})
        # Right after tracecell (or last): the pair is run back to back.
        at = a.modes.index("tracecell") + i if "tracecell" in a.modes else len(a.modes)
        a.modes.insert(at, mode)
    if a.quick:
        a.runs = 1
    if a.scale is None:
        a.scale = 0.2 if a.quick else 1.0
    a.warmup = not a.quick
    if a.runs < 1:
        p.error("--runs must be at least 1")
    if "tracecell" in a.modes or "nofreeze" in a.modes:
        if not a.tracecell:
            p.error("--tracecell BIN is required (or leave tracecell out of --modes)")
        if not os.access(a.tracecell, os.X_OK):
            p.error(f"--tracecell {a.tracecell}: not an executable file")
    if "strace" in a.modes and not shutil.which("strace"):
        p.error("strace not found in PATH (or leave it out of --modes)")
    a.disk_dir = os.path.abspath(a.disk_dir)
    os.makedirs(a.disk_dir, exist_ok=True)
    for d, want in ((a.tmpfs_dir, True), (a.disk_dir, False)):
        if (fstype(d) == "tmpfs") != want:
            progress(f"bench: warning: {d} is {fstype(d)}, expected "
                     f"{'tmpfs' if want else 'a disk file system'}")
    return a


def main(argv):
    a = parse_args(argv)
    bench = Bench(a)
    info = machine_info(a, bench)
    progress(f"bench: modes {','.join(a.modes)}, {a.runs} run(s), scale {a.scale:g}")
    results, elapsed = bench.run()
    info["loadavg_end"] = loadavg()
    if bench.notif_skipped:
        info["notif_note"] = bench.notif_skipped
    targets = evaluate(results, a.modes, bench.percall_results)
    md = markdown(results, info, targets, a.modes, elapsed, bench.rss_source,
                  bench.percall_results, bench.percall_note, bench.percall_n)
    sys.stdout.write(md)
    os.makedirs(a.results, exist_ok=True)
    stem = "quick" if a.quick else "latest"
    with open(os.path.join(a.results, stem + ".md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.results, stem + ".json"), "w") as f:
        json.dump({"machine": info, "elapsed_seconds": round(elapsed, 1),
                   "modes": a.modes, "compare": a.compare_bins,
                   "tracer_rss_source": bench.rss_source,
                   "workloads": results, "percall": bench.percall_results,
                   "targets": [{"target": n, "verdict": v, "detail": d}
                               for n, v, d in targets],
                   "errors": bench.errors}, f, indent=1)
        f.write("\n")
    return 1 if bench.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
