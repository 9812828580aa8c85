"""Seeded example inputs and zoo weights, and the data inputs of an ONNX file (numpy, and onnx for
that one: the runtime-only runner and the onnxruntime reference row use this)."""

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


def draw_weights(recipe: dict) -> list[np.ndarray]:
    """The seeded weights a recipe ``{"seed": S, "specs": [[shape, mean, std], ...]}`` describes,
    in order: float32 normals of each ``std`` plus ``mean`` from the first child stream of ``S``
    (the second is the zoo's inputs'). The zoo draws its models' weights with this function
    (:func:`tvm_partition.frontend.zoo.export_model`), and an artifact's manifest keeps the recipe
    (``weights``), so a machine with numpy alone can draw the same weights again instead of
    receiving them (``benchmarks/gpu_proof``)."""
    param_ss, _ = np.random.SeedSequence(int(recipe["seed"])).spawn(2)
    rng = np.random.default_rng(param_ss)
    out = []
    for shape, mean, std in recipe["specs"]:
        value = rng.standard_normal(tuple(int(d) for d in shape), dtype=np.float32)
        value *= np.float32(std)
        if mean:
            value += np.float32(mean)
        out.append(value)
    return out


def graph_input_names(path: str) -> list[str]:
    """The ONNX graph's data inputs in order (inputs that are also initializers are weights)."""
    import onnx

    graph = onnx.load(path, load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    return [i.name for i in graph.input if i.name not in inits]
