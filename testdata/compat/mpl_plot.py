#!/usr/bin/python3
"""A plot to PNG with the Agg backend (no display), plus an SVG."""
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

# SVG element ids are salted hashes; a fixed salt makes the file reproducible.
plt.rcParams["svg.hashsalt"] = "tracecell"

x = np.linspace(0, 10, 500)
fig, axes = plt.subplots(1, 2, figsize=(8, 3), dpi=100)
axes[0].plot(x, np.sin(x), label="sin")
axes[0].plot(x, np.cos(x), label="cos")
axes[0].legend()
axes[1].hist(np.random.default_rng(1).normal(size=2000), bins=40)
axes[1].set_title("normal")
fig.tight_layout()
# metadata={"Software": None} keeps the matplotlib version out of the file.
fig.savefig("plot.png", metadata={"Software": None})
fig.savefig("plot.svg", metadata={"Date": None})
plt.close(fig)
print("saved", matplotlib.get_backend())
