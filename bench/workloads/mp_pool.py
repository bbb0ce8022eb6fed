"""Workload: a fork-based multiprocessing Pool running many tiny tasks.

Prices process creation (each fork is traced) and the semaphores
multiprocessing creates in /dev/shm; the tasks themselves only talk over
pipes, which are never trapped.
Usage: mp_pool.py WORKDIR [SCALE]   (2000 tasks, chunksize 1, at SCALE 1)
"""
import multiprocessing
import sys

WORKERS = 4


def task(i):
    return (i * i) % 1_000_003


def main():
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    n = max(1, int(2000 * scale))
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(WORKERS) as pool:
        results = pool.map(task, range(n), chunksize=1)
    print("pool", WORKERS, "tasks", n, "sum", sum(results))


if __name__ == "__main__":
    main()
