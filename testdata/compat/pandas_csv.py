#!/usr/bin/python3
"""An agent-style data task: build a CSV, read it back, group, write results."""
import numpy as np
import pandas as pd

rng = np.random.default_rng(42)
n = 5000
df = pd.DataFrame({
    "region": rng.choice(["north", "south", "east", "west"], n),
    "product": rng.choice(["a", "b", "c"], n),
    "units": rng.integers(1, 100, n),
    "price": rng.uniform(1.0, 50.0, n).round(2),
})
df.to_csv("sales.csv", index=False)

back = pd.read_csv("sales.csv")
back["revenue"] = (back["units"] * back["price"]).round(2)
summary = back.groupby(["region", "product"]).agg(
    units=("units", "sum"), revenue=("revenue", "sum"), orders=("units", "size")).reset_index()
summary["revenue"] = summary["revenue"].round(2)
summary.to_csv("summary.csv", index=False)
back.describe().round(3).to_json("describe.json")
pivot = summary.pivot(index="region", columns="product", values="revenue")
pivot.to_csv("pivot.csv")
print(summary.to_string(index=False))
print("total revenue", round(float(back["revenue"].sum()), 2))
