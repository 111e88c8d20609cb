#!/usr/bin/env python3
"""Compares two .npy files: prints the max absolute and the max relative (to the largest
reference magnitude) difference, and, for outputs with a class axis (axis 1 of two or more
dimensions), the share of positions whose arg-max class agrees; exits 1 when the relative
difference is above the tolerance.

    python3 bench/models/compare.py REFERENCE.npy GOT.npy [--tol 1e-4]
"""
import argparse
import sys

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("ref")
ap.add_argument("got")
ap.add_argument("--tol", type=float, default=1e-4)
a = ap.parse_args()
r, g = np.load(a.ref), np.load(a.got)
if r.shape != g.shape:
    print(f"shape {g.shape} != reference {r.shape}")
    sys.exit(1)
d = np.abs(r.astype(np.float64) - g.astype(np.float64))
rel = d.max() / max(np.abs(r).max(), 1e-30)
agree = ""
if r.ndim >= 2 and r.shape[1] > 1:
    agree = f" argmax_agree {np.mean(r.argmax(axis=1) == g.argmax(axis=1)) * 100:.2f}%"
print(f"max_abs {d.max():.3g} rel {rel:.3g} ref_max {np.abs(r).max():.3g}{agree}")
sys.exit(0 if rel <= a.tol else 1)
