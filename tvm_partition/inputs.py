"""Seeded example inputs (numpy only: the runtime-only runner uses this too)."""

from __future__ import annotations

import numpy as np


def random_input(shape, dtype, rng: np.random.Generator, high: int = 2) -> np.ndarray:
    """Standard-normal floats; integers in ``[0, high)`` (valid token ids / indices for any model)."""
    dtype = str(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if "int" in dtype:
        return rng.integers(0, high, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)
