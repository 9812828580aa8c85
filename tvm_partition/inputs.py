"""Seeded example inputs, and the data inputs of an ONNX file (numpy, and onnx for that one: the
runtime-only runner and the onnxruntime reference row use this)."""

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


def graph_input_names(path: str) -> list[str]:
    """The ONNX graph's data inputs in order (inputs that are also initializers are weights)."""
    import onnx

    graph = onnx.load(path, load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    return [i.name for i in graph.input if i.name not in inits]
