"""onnxruntime's outputs of an .onnx model: the second oracle of ``compile --check``.

``--check`` compares a build with TVM's own unpartitioned build of the same Relax module, which
checks the partitioning exactly but shares TVM's ONNX importer and our frontend's rewrites
(:func:`tvm_partition.frontend.normalize`) with the build: an op they read differently passes it.
onnxruntime reads the file itself. Its CPU session runs the same seeded inputs (under the graph's
input names, in the graph's order: :func:`tvm_partition.inputs.graph_input_names`) with the build's
thread count; onnxruntime is the ``test`` extra's, and where it is missing or cannot load the
file (a custom op domain), :func:`outputs` says so in :class:`Unavailable` and the check is TVM's
alone. The ``onnxruntime`` rows of ``bench`` check their outputs the same way
(:func:`tvm_partition.bench.ort.max_abs_err`), in the benchmark bundle's own module.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from ..errors import TvmPartitionError
from ..inputs import graph_input_names


class Unavailable(TvmPartitionError):
    """onnxruntime cannot give this model's outputs here; the message says why."""


def source(model) -> str | None:
    """The .onnx file ``model`` (a :class:`~tvm_partition.frontend.model.Model`) was loaded from;
    None for a zoo model or an IRModule."""
    path = (getattr(model, "config", None) or {}).get("source")
    return path if isinstance(path, str) and path.endswith(".onnx") else None


def outputs(model, threads: int) -> list[np.ndarray]:
    """onnxruntime's outputs of ``model``'s .onnx file on ``model.inputs``; :class:`Unavailable`
    where there is no file, no onnxruntime, or onnxruntime cannot load it."""
    path = source(model)
    if path is None:
        raise Unavailable(f"{model.name} was not loaded from an .onnx file")
    if importlib.util.find_spec("onnxruntime") is None:
        raise Unavailable("onnxruntime is not installed (pip install onnxruntime)")
    import onnxruntime as ort

    names = graph_input_names(path)
    if len(names) != len(model.inputs):
        raise Unavailable(f"{path} has {len(names)} graph inputs where the frontend made {len(model.inputs)}")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.log_severity_level = int(threads), 3
    try:
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        return [np.asarray(o) for o in session.run(None, dict(zip(names, model.inputs.values())))]
    except Exception as e:  # noqa: BLE001 - onnxruntime's own error types; keep its first line
        raise Unavailable(f"onnxruntime cannot run {path}: {(str(e).strip().splitlines() or [''])[0]}") from None
