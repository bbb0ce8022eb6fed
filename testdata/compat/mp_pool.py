#!/usr/bin/python3
"""multiprocessing: a Pool (needs /dev/shm semaphores), a Queue, result files written by the workers."""
import multiprocessing as mp


def work(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    with open(f"part-{n}.txt", "w") as f:
        f.write(str(s))
    return s


def main():
    with mp.Pool(2) as pool:
        res = pool.map(work, [1000, 2000, 3000, 4000])
    print("pool", res)
    q = mp.Queue()
    p = mp.Process(target=q.put, args=("from child",))
    p.start()
    print("queue", q.get(timeout=30))
    p.join()
    print("exitcode", p.exitcode)


if __name__ == "__main__":
    main()
