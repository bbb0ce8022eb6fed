#!/usr/bin/env python3
"""Session benchmark: tracecell serve against jupyter_client + ipykernel.

Measures, in one run on the same machine:

  warm     execute `1+1` in a warm session (HTTP round trip for tracecell,
           execute request to idle for jupyter_client)
  create   create a session and run its first execution (tracecell: warm
           pool; jupyter: start a kernel, wait for it, execute)
  oneshot  a one-shot `import pandas; print(pandas.__version__)` (tracecell:
           POST /v1/execute with pandas preloaded in the pool; jupyter: start
           a kernel, execute, shut it down), and a cold `python3 -c` of the
           same code as the floor

Median and p99 of each, the targets of issue 3, and a Markdown table written
to bench/results/sessions.md.  Standard library only on the tracecell side;
the jupyter side needs Debian's python3-jupyter-client and python3-ipykernel
(`scripts/deps.sh bench` installs them).

Usage: sessions.py --tracecell bin/tracecell [--python /usr/bin/python3]
                   [--warm N] [--create N] [--oneshot N] [--out FILE]
"""
import argparse
import http.client
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PANDAS_CODE = "import pandas; print(pandas.__version__)"


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a Unix socket, kept alive between requests."""

    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Client:
    def __init__(self, sock):
        self.conn = UnixHTTPConnection(sock)

    def call(self, method, path, body=None, want=(200, 201, 204)):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        raw = r.read()
        if r.status not in want:
            raise RuntimeError("%s %s: HTTP %d: %s" % (method, path, r.status, raw[:300].decode("utf-8", "replace")))
        return json.loads(raw) if raw else None


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def summary(xs):
    return {"n": len(xs), "median_ms": statistics.median(xs), "p99_ms": pct(xs, 99)}


def wait_socket(path, proc, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError("tracecell serve exited with status %d before listening" % proc.returncode)
        if os.path.exists(path):
            try:
                c = Client(path)
                c.call("GET", "/healthz")
                return
            except OSError:
                pass
        time.sleep(0.05)
    raise RuntimeError("tracecell serve did not listen on %s within %ds" % (path, timeout))


def wait_pool(c, want, timeout=120):
    """Wait until the server reports `want` warm workers (from /metrics)."""
    end = time.time() + timeout
    while time.time() < end:
        c.conn.request("GET", "/metrics")
        r = c.conn.getresponse()
        text = r.read().decode()
        for line in text.splitlines():
            if line.startswith("tracecell_pool_ready ") or line.startswith("tracecell_pool_ready{"):
                if float(line.split()[-1]) >= want:
                    return
        time.sleep(0.1)
    raise RuntimeError("the worker pool did not fill to %d within %ds" % (want, timeout))


def bench_tracecell(args, tmp):
    sock = os.path.join(tmp, "tc.sock")
    state = os.path.join(tmp, "state")
    pool = 4
    cmd = [args.tracecell, "serve", "--listen", "unix:" + sock, "--state-dir", state,
           "--pool-size", str(pool), "--preload", "pandas", "--python", args.python,
           "--log-level", "warn"]
    log = open(os.path.join(tmp, "serve.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    out = {}
    try:
        wait_socket(sock, proc)
        c = Client(sock)
        wait_pool(c, pool)

        # Warm execute round trip.
        sid = c.call("POST", "/v1/sessions", {})["id"]
        for _ in range(10):
            c.call("POST", "/v1/sessions/%s/execute" % sid, {"code": "1+1"})
        xs = []
        for _ in range(args.warm):
            t = time.perf_counter()
            r = c.call("POST", "/v1/sessions/%s/execute" % sid, {"code": "1+1"})
            xs.append((time.perf_counter() - t) * 1000)
            if r.get("result") != "2":
                raise RuntimeError("1+1 gave %r" % (r,))
        out["warm"] = summary(xs)
        c.call("DELETE", "/v1/sessions/%s" % sid)

        # Session creation + first execution, with the pool refilled
        # between samples (a warm pool is the condition being measured).
        xs = []
        for _ in range(args.create):
            wait_pool(c, pool)
            t = time.perf_counter()
            sid = c.call("POST", "/v1/sessions", {})["id"]
            r = c.call("POST", "/v1/sessions/%s/execute" % sid, {"code": "1+1"})
            xs.append((time.perf_counter() - t) * 1000)
            if r.get("result") != "2":
                raise RuntimeError("first execution gave %r" % (r,))
            c.call("DELETE", "/v1/sessions/%s" % sid)
        out["create"] = summary(xs)

        # One-shot with pandas preloaded.
        xs = []
        for _ in range(args.oneshot):
            wait_pool(c, pool)
            t = time.perf_counter()
            r = c.call("POST", "/v1/execute", {"code": PANDAS_CODE})
            xs.append((time.perf_counter() - t) * 1000)
            if r.get("error") or not r.get("stdout", "").strip():
                raise RuntimeError("one-shot gave %r" % (r,))
        out["oneshot"] = summary(xs)

        # A burst larger than the pool: sessions created back to back
        # (kept open) until the pool runs dry, so the later ones wait for a
        # worker to start with its preload. Shows what a warm pool hides.
        wait_pool(c, pool)
        xs, sids = [], []
        for _ in range(args.burst):
            t = time.perf_counter()
            sid = c.call("POST", "/v1/sessions", {})["id"]
            c.call("POST", "/v1/sessions/%s/execute" % sid, {"code": "1+1"})
            xs.append((time.perf_counter() - t) * 1000)
            sids.append(sid)
        for sid in sids:
            c.call("DELETE", "/v1/sessions/%s" % sid)
        out["burst"] = summary(xs)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    return out


def bench_jupyter(args):
    try:
        from jupyter_client.manager import KernelManager
    except ImportError as e:
        return {"error": "jupyter_client is not installed (%s): run scripts/deps.sh bench" % e}

    def start():
        km = KernelManager(kernel_name="python3")
        # ipykernel's debugger (debugpy) warns about frozen modules on
        # every start; the kernel runs no debugger here.
        os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
        km.start_kernel(extra_arguments=["--HistoryManager.enabled=False"])
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        return km, kc

    def execute(kc, code):
        """Run code; return (result text, stdout) once the kernel is idle."""
        msg_id = kc.execute(code, store_history=False)
        result, stdout = None, ""
        while True:
            m = kc.get_iopub_msg(timeout=60)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            t = m["msg_type"]
            if t == "execute_result":
                result = m["content"]["data"].get("text/plain")
            elif t == "stream" and m["content"]["name"] == "stdout":
                stdout += m["content"]["text"]
            elif t == "error":
                raise RuntimeError("kernel error: %s" % m["content"]["evalue"])
            elif t == "status" and m["content"]["execution_state"] == "idle":
                break
        kc.get_shell_msg(timeout=60)  # the execute_reply
        return result, stdout

    def stop(km, kc):
        kc.stop_channels()
        km.shutdown_kernel(now=True)

    out = {}
    km, kc = start()
    try:
        for _ in range(10):
            execute(kc, "1+1")
        xs = []
        for _ in range(args.warm):
            t = time.perf_counter()
            r, _ = execute(kc, "1+1")
            xs.append((time.perf_counter() - t) * 1000)
            if r != "2":
                raise RuntimeError("jupyter 1+1 gave %r" % r)
        out["warm"] = summary(xs)
    finally:
        stop(km, kc)

    xs = []
    for _ in range(args.create):
        t = time.perf_counter()
        km, kc = start()
        execute(kc, "1+1")
        xs.append((time.perf_counter() - t) * 1000)
        stop(km, kc)
    out["create"] = summary(xs)

    xs = []
    for _ in range(args.oneshot):
        t = time.perf_counter()
        km, kc = start()
        _, so = execute(kc, PANDAS_CODE)
        stop(km, kc)
        xs.append((time.perf_counter() - t) * 1000)
        if not so.strip():
            raise RuntimeError("jupyter one-shot printed nothing")
    out["oneshot"] = summary(xs)
    return out


def bench_cold(args):
    xs = []
    for _ in range(max(5, args.oneshot // 2)):
        t = time.perf_counter()
        subprocess.run([args.python, "-c", PANDAS_CODE], check=True, stdout=subprocess.DEVNULL)
        xs.append((time.perf_counter() - t) * 1000)
    return summary(xs)


TARGETS = {"warm": 5.0, "create": 50.0, "oneshot": 100.0}
LABELS = {
    "warm": "execute `1+1` in a warm session (round trip)",
    "create": "create a session + first execution",
    "oneshot": "one-shot `import pandas; print(pandas.__version__)`",
}


def fmt(s):
    if not s or "median_ms" not in s:
        return "n/a"
    return "%.1f / %.1f" % (s["median_ms"], s["p99_ms"])


def python_version(python):
    """The version of the Python the workers and the cold run use (not the one running this script)."""
    try:
        out = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                             stdout=subprocess.PIPE, universal_newlines=True, timeout=30)
        return out.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tracecell", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--warm", type=int, default=200)
    ap.add_argument("--create", type=int, default=30)
    ap.add_argument("--oneshot", type=int, default=20)
    ap.add_argument("--burst", type=int, default=12)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "sessions.md"))
    args = ap.parse_args()
    args.tracecell = os.path.abspath(args.tracecell)

    load0 = os.getloadavg()[0]
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="tracecell-bench-")
    try:
        tc = bench_tracecell(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    jp = bench_jupyter(args)
    cold = bench_cold(args)
    load1 = os.getloadavg()[0]

    lines = []
    lines.append("# tracecell session benchmark — %s UTC" % time.strftime("%Y-%m-%d %H:%M", time.gmtime()))
    lines.append("")
    lines.append("Machine: %s %s, %d CPUs, Python %s (%s). Median / p99 in ms; %d warm executions, "
                 "%d creations, %d one-shots per system. tracecell: `serve` on a Unix socket, pool of 4 "
                 "workers with pandas preloaded, HTTP/1.1 keep-alive. jupyter_client: ipykernel, "
                 "history off. Benchmark took %.0f s."
                 % (platform.system(), platform.release(), os.cpu_count(), python_version(args.python),
                    args.python, args.warm, args.create, args.oneshot, time.time() - t0))
    lines.append("")
    if max(load0, load1) > 0.7 * (os.cpu_count() or 1):
        lines.append("**Warning:** 1-minute load average %.2f at the start, %.2f at the end: other work "
                     "was running and the numbers are noisy." % (load0, load1))
        lines.append("")
    lines.append("| measurement | tracecell ms | jupyter_client ms | target | result |")
    lines.append("|---|---:|---:|---:|---|")
    verdicts = []
    for k in ("warm", "create", "oneshot"):
        t, j = tc.get(k), jp.get(k) if isinstance(jp, dict) else None
        ok_target = t["median_ms"] < TARGETS[k]
        ok_jup = j is not None and "median_ms" in j and t["median_ms"] < j["median_ms"]
        if j is None or "median_ms" not in j:
            jup = "jupyter_client not measured"
        else:
            jup = "faster than jupyter" if ok_jup else "NOT faster than jupyter"
        verdict = "%s target, %s" % ("meets" if ok_target else "MISSES", jup)
        verdicts.append((k, ok_target, ok_jup))
        lines.append("| %s | %s | %s | < %.0f | %s |" % (LABELS[k], fmt(t), fmt(j), TARGETS[k], verdict))
    lines.append("| cold `python3 -c` of the same pandas code | %s | | | floor for the one-shot |" % fmt(cold))
    if "burst" in tc:
        lines.append("| create + first execution, %d back to back (the pool of 4 runs dry) | %s | | "
                     "| what a cold worker with pandas preloaded costs |" % (args.burst, fmt(tc["burst"])))
    if "error" in jp:
        lines.append("")
        lines.append("jupyter_client: %s" % jp["error"])
    lines.append("")
    text = "\n".join(lines)
    print(text)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"tracecell": tc, "jupyter": jp, "cold_python": cold}, f, indent=1)
    print("written to %s" % args.out)


if __name__ == "__main__":
    main()
