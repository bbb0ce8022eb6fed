"""Workload: a pure-CPU loop (about half a second at SCALE 1).

Makes almost no system calls after start-up, so any slowdown under a tracer
is the cost of start-up alone.
Usage: cpu.py WORKDIR [SCALE]
"""
import sys


def main():
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    n = int(2_000_000 * scale)
    x = 12345
    acc = 0
    for i in range(n):
        # A 32-bit linear congruential step: integer work the interpreter
        # cannot skip, and a result that proves the loop ran to the end.
        x = (1103515245 * x + 12345) & 0xFFFFFFFF
        acc ^= x >> (i & 15)
    print("cpu", n, acc)


main()
