#!/usr/bin/env python3
"""Print a compact, human summary of a tracecell JSON report.

    python3 examples/demo/show_report.py REPORT.json

Shows the command, sandbox, how it ended, the counters, and one line per
denial: syscall and flags, path as given and as resolved, program[pid],
reason and errno.  Standard library only.
"""

import json
import sys


def path_text(p):
    given = p.get("given", "")
    resolved = p.get("resolved", "")
    s = repr(given) if given else "(fd)"
    if p.get("relative_to"):
        s += f" (relative to {p['relative_to']})"
    if resolved and resolved != given:
        s += f" -> {resolved}"
    if p.get("special"):
        s += f" [{p['special']}]"
    role = p.get("role")
    return f"{role}: {s}" if role and role not in ("path", "") else s


def denial_line(i, d):
    call = d.get("syscall", "?")
    if d.get("flags"):
        call += f"({d['flags']})"
    target = "; ".join(path_text(p) for p in d.get("paths") or [])
    if not target and d.get("address"):
        target = f"{d.get('family', '')} {d['address']}" + \
                 (f":{d['port']}" if d.get("port") else "")
    if not target and d.get("target_pid") is not None:
        target = f"pid {d['target_pid']}" + (f" {d['signal']}" if d.get("signal") else "")
    who = f"{d.get('program') or d.get('exe') or '?'}[{d.get('pid', '?')}"
    if d.get("tid") and d.get("tid") != d.get("pid"):
        who += f"/{d['tid']}"
    who += "]"
    lines = [f"  {i:>2}. {d.get('kind', '?'):<8} {call} {target}".rstrip(),
             f"      by {who}: {d.get('reason', '?')}"
             + (f" -> {d['errno']}" if d.get("errno") else "")
             + (f" (rule {d['rule']})" if d.get("rule") else "")]
    if d.get("decision") and d["decision"] != "deny":
        lines[0] += f"  [{d['decision']}]"
    if len(d.get("tried") or []) > 1:
        # One PATH search (execvp, subprocess): every directory's copy was refused.
        lines.append("      PATH search tried: " + ", ".join(p.get("given", "?") for p in d["tried"]))
    return "\n".join(lines)


def summary(r):
    out = []
    cmd = " ".join(r.get("command") or [])
    out.append(f"command : {cmd}")
    out.append(f"sandbox : {r.get('sandbox', '?')}  (cwd {r.get('cwd', '?')})")
    e = r.get("exit") or {}
    how = f"exit code {e.get('code')}"
    if e.get("signal"):
        how = f"killed by {e['signal']}"
    if e.get("timed_out"):
        how += ", timed out"
    out.append(f"ended   : {how}; tracecell exit status {e.get('status')}")
    out.append(f"time    : {r.get('wall_seconds', 0):.2f}s wall, "
               f"{r.get('cpu_user_seconds', 0):.2f}s user, "
               f"{r.get('cpu_system_seconds', 0):.2f}s system; "
               f"peak RSS {r.get('peak_rss_kb', 0) / 1024:.1f} MB"
               + (f", tracer {r['tracer_peak_rss_kb'] / 1024:.1f} MB"
                  if r.get("tracer_peak_rss_kb") else ""))
    c = r.get("counts") or {}
    out.append("counts  : " + ", ".join(f"{k} {v}" for k, v in c.items()))
    den = r.get("denials") or []
    dropped = r.get("denials_dropped") or 0
    calls = sum(max(1, len(d.get("tried") or [])) for d in den)
    out.append(f"denials : {len(den)}" + (f" (+{dropped} not kept)" if dropped else "")
               + (f" ({calls} refused calls: a PATH search tries each directory)" if calls > len(den) else ""))
    for i, d in enumerate(den, 1):
        out.append(denial_line(i, d))
    if r.get("scratch_left"):
        out.append("scratch files left: " + ", ".join(r["scratch_left"]))
    if r.get("error"):
        out.append(f"tracecell error: {r['error']}")
    return "\n".join(out)


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} REPORT.json", file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        print(f"show_report: {argv[1]}: {e}", file=sys.stderr)
        return 1
    print(summary(r))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
