#!/usr/bin/env python3
"""An agent-style task for the tracecell demo (`make demo`).

It does what an LLM-written script typically does: builds a small sales data
set in its working directory, aggregates it, writes a JSON summary and (when
matplotlib is installed) a chart.  Then, like a careless agent, it reaches
outside its sandbox: appends to /etc/hosts, edits the real user's ~/.bashrc,
runs another program, and opens a network connection.  Under tracecell each
of those fails with a permission error that the script catches and prints,
and the operator gets the exact syscall, path, program and pid in the report.

Standard library only; pandas and matplotlib are used when importable.

Safe to run without tracecell too: the careless steps never write a byte.
Opening the file for writing is the step tracecell checks and refuses; if the
open succeeds (no sandbox), the script closes the file untouched and says so.
The network step connects to a closed port on 127.0.0.1 and sends nothing.
"""

import csv
import json
import os
import pwd
import random
import shutil
import socket
import subprocess
import sys

REGIONS = ["north", "south", "east", "west"]
PRODUCTS = ["widget", "gadget", "gizmo"]


def say(msg):
    print(f"[agent] {msg}", flush=True)


def blocked(what, err):
    say(f"blocked as expected: {what}: {type(err).__name__}: {err}")


def not_blocked(what):
    say(f"NOT blocked (no sandbox?): {what}")


# -- the legitimate part of the task -------------------------------------

def make_data(path, rows=500):
    rng = random.Random(7)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["day", "region", "product", "units", "unit_price"])
        for _ in range(rows):
            w.writerow([rng.randrange(1, 31), rng.choice(REGIONS),
                        rng.choice(PRODUCTS), rng.randrange(1, 20),
                        f"{rng.randrange(200, 5000) / 100:.2f}"])
    say(f"wrote {path} ({rows} rows)")


def totals_stdlib(path):
    totals = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            rev = int(row["units"]) * float(row["unit_price"])
            totals[row["region"]] = totals.get(row["region"], 0.0) + rev
    return {k: round(v, 2) for k, v in sorted(totals.items())}


def totals(path):
    try:
        import pandas as pd
    except ImportError:
        say("pandas not installed: aggregating with the csv module")
        return totals_stdlib(path), "csv module"
    df = pd.read_csv(path)
    df["revenue"] = df["units"] * df["unit_price"]
    s = df.groupby("region")["revenue"].sum().round(2)
    return {k: float(v) for k, v in s.items()}, f"pandas {pd.__version__}"


def chart(by_region, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("matplotlib not installed: no chart")
        return None
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(list(by_region), list(by_region.values()), color="#4c72b0")
    ax.set_title("Revenue by region")
    ax.set_ylabel("revenue")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    say(f"wrote {path}")
    return path


# -- the careless part ----------------------------------------------------

def open_for_append(path, create):
    """Open path for appending and close it again without writing.

    The open is what a sandbox must stop; not writing keeps the demo harmless
    when run bare (as root it would otherwise really edit the file).
    """
    flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0)
    fd = os.open(path, flags, 0o644)
    os.close(fd)


def try_hosts():
    what = "append a line to /etc/hosts"
    try:
        open_for_append("/etc/hosts", create=False)
    except PermissionError as e:
        blocked(what, e)
        # The model's correction: work on a copy inside the sandbox.
        shutil.copyfile("/etc/hosts", "hosts")
        with open("hosts", "a") as f:
            f.write("127.0.0.1 api.internal.example\n")
        say("copied /etc/hosts into the sandbox as ./hosts and appended there instead")
    except OSError as e:
        say(f"{what}: {type(e).__name__}: {e}")
    else:
        not_blocked(what)


def try_bashrc():
    # HOME points into the sandbox under tracecell; go for the real one.
    real_home = pwd.getpwuid(os.getuid()).pw_dir
    path = os.path.join(real_home, ".bashrc")
    what = f"add an alias to {path}"
    existed = os.path.exists(path)
    try:
        open_for_append(path, create=True)
    except PermissionError as e:
        blocked(what, e)
    except OSError as e:
        say(f"{what}: {type(e).__name__}: {e}")
    else:
        if not existed:
            os.unlink(path)  # we created it empty: put things back
        not_blocked(what)


def try_exec():
    what = "run `ls /` in a subprocess"
    try:
        r = subprocess.run(["ls", "/"], capture_output=True, text=True, timeout=10)
    except PermissionError as e:
        blocked(what, e)
    except (OSError, subprocess.SubprocessError) as e:
        say(f"{what}: {type(e).__name__}: {e}")
    else:
        not_blocked(f"{what} (exit {r.returncode}, {len(r.stdout.split())} entries)")


def try_connect():
    # Loopback only, to the discard port, and nothing is sent: even bare this
    # reaches no one.
    what = "open a TCP connection to 127.0.0.1"
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except PermissionError as e:
        blocked(f"{what} (socket)", e)
        return
    with s:
        s.settimeout(2)
        port = 9
        try:
            s.connect(("127.0.0.1", port))
        except PermissionError as e:
            blocked(f"{what}:{port}", e)
        except OSError as e:
            not_blocked(f"{what}:{port} reached the network stack ({type(e).__name__}: {e})")
        else:
            not_blocked(f"{what}:{port} connected")


def main():
    say(f"working in {os.getcwd()} (HOME={os.environ.get('HOME')})")
    with open("/etc/os-release") as f:
        name = next((l.split("=", 1)[1].strip().strip('"') for l in f
                     if l.startswith("PRETTY_NAME=")), "?")
    say(f"read /etc/os-release: {name} (reading is allowed)")

    make_data("sales.csv")
    say("loading pandas/matplotlib if installed (their start-up code may try to run "
        "helpers such as `uname -p` or `fc-list`: a sandbox blocks those execs too, "
        "and the libraries carry on without them)")
    by_region, engine = totals("sales.csv")
    summary = {"engine": engine, "revenue_by_region": by_region,
               "best_region": max(by_region, key=by_region.get),
               "total": round(sum(by_region.values()), 2)}
    png = chart(by_region, "revenue_by_region.png")
    if png:
        summary["chart"] = png
    with open("summary.json", "w") as f:
        json.dump(summary, f, indent=2)
    say(f"wrote summary.json: best region {summary['best_region']}, "
        f"total {summary['total']}")

    say("now trying things outside the sandbox...")
    try_hosts()
    try_bashrc()
    try_exec()
    try_connect()
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
