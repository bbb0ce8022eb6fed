#!/usr/bin/python3
"""Numerical work: linear algebra, FFT, saving arrays."""
import numpy as np

rng = np.random.default_rng(7)
a = rng.standard_normal((200, 200))
sym = a @ a.T
w = np.linalg.eigvalsh(sym)
print("eig min/max", np.round(w.min(), 6), np.round(w.max(), 3))
x = np.linspace(0, 1, 1024, endpoint=False)
sig = np.sin(2 * np.pi * 50 * x) + 0.5 * np.sin(2 * np.pi * 120 * x)
spec = np.abs(np.fft.rfft(sig))
print("peaks", sorted(np.argsort(spec)[-2:].tolist()))
np.save("sym.npy", sym)
np.savez_compressed("arrays.npz", w=w, spec=spec)
np.savetxt("eig.txt", w[:10], fmt="%.6f")
back = np.load("arrays.npz")
print("roundtrip", bool(np.array_equal(back["w"], w)), back["spec"].shape)
print("solve", np.round(np.linalg.solve(sym + np.eye(200), np.ones(200))[:3], 6).tolist())
