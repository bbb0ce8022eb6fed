"""Workload: load a ~200k-row sales CSV with pandas, group it, save a summary.

`pandas_csv.py --setup WORKDIR [SCALE]` writes WORKDIR/sales.csv (done once,
outside timing); `pandas_csv.py WORKDIR [SCALE]` is the timed part: import
pandas, read the CSV, group by region and product, write summary.csv.
"""
import hashlib
import os
import random
import sys

REGIONS = ["north", "south", "east", "west", "central"]
PRODUCTS = ["widget", "gadget", "doohickey", "gizmo", "sprocket", "flange"]


def setup(workdir, rows):
    rng = random.Random(20240601)
    path = os.path.join(workdir, "sales.csv")
    with open(path, "w") as f:
        f.write("order_id,day,region,product,units,unit_price\n")
        for i in range(rows):
            f.write(f"{i},{rng.randrange(1, 366)},{rng.choice(REGIONS)},"
                    f"{rng.choice(PRODUCTS)},{rng.randrange(1, 50)},"
                    f"{rng.randrange(100, 100000) / 100:.2f}\n")


def main():
    if sys.argv[1] == "--setup":
        scale = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
        setup(sys.argv[2], max(1, int(200_000 * scale)))
        return
    import pandas as pd

    workdir = sys.argv[1]
    df = pd.read_csv(os.path.join(workdir, "sales.csv"))
    df["revenue"] = df["units"] * df["unit_price"]
    g = (df.groupby(["region", "product"])
           .agg(orders=("order_id", "count"), units=("units", "sum"),
                revenue=("revenue", "sum"), mean_price=("unit_price", "mean"))
           .round(4))
    out = os.path.join(workdir, "summary.csv")
    g.to_csv(out)
    with open(out, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    print("pandas rows", len(df), "groups", len(g), digest)


main()
