"""The ``onnxruntime`` reference row of ``tvm-partition bench``: the same .onnx file on onnxruntime's CPU.

``tvm-cpu`` says what TVM alone makes of a model; this row says what the runtime most people
would deploy an ONNX model with makes of it on the same cores, so a split is judged against both.
It is measured like every other row (:mod:`tvm_partition.bench.runtime`: fresh processes, warm-up,
``repeat`` timed end-to-end runs, median of the per-process medians) from a folder of its own:

* ``model.onnx``: the file as given, byte for byte (the weights our builds import from it), and
  the files its external data lies in, at the same places beside it (:func:`external_files`),
* ``inputs.npz``: the frontend's seeded example inputs (``frontend.load(path, seed=0).inputs``)
  under the ONNX graph input names, in the graph's order (TVM may rename inputs, e.g. "0"),
* ``ort.json``: those names, the thread count (our CPU build's: ``--threads`` or all cores) and
  the sha256 of both files.

The session is the CPU execution provider with ``intra_op_num_threads`` = that thread count,
``inter_op_num_threads`` = 1 and ``ORT_ENABLE_ALL`` graph optimisations. Before it is measured,
the bench checks its outputs against TVM's unpartitioned model on the same inputs
(:func:`tvm_partition.runtime.ort.max_abs_err`): a row that disagrees is an error row, never a silent timing of another
model. Only for .onnx models (a zoo model has no ONNX file). This module needs numpy and, when a
row runs, onnxruntime (the ``test`` extra; without it the row says ``pip install onnxruntime``):
it is copied into benchmark bundles, whose measuring machine needs onnxruntime for these rows
(and so does the machine that exports them, where the outputs are checked).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time

import numpy as np

from ..runtime.ort import OrtError, feeds, session, source

NAME = "onnxruntime"
SPEC = "ort.json"
FILES = ("model.onnx", "inputs.npz")


def file_sha256(path: str) -> str:
    """The file's sha256, read a MiB at a time (a model's external data may outgrow the memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def read_checked(art_dir: str, spec_name: str, error: type[Exception]) -> dict:
    """A reference row's spec (``ort.json``, ``torch.json``), each file it names checked against its
    sha256 first (``error`` where one differs)."""
    with open(os.path.join(art_dir, spec_name), encoding="utf-8") as f:
        spec = json.load(f)
    for name, digest in spec["sha256"].items():
        if file_sha256(os.path.join(art_dir, name)) != digest:
            raise error(f"{os.path.join(art_dir, name)}: checksum mismatch (re-copy the folder)")
    return spec


def external_files(path: str) -> list[str]:
    """The files an .onnx model keeps its external data in, as it names them (relative to its
    folder), in the order first named; initializers, constants' tensors and subgraphs' alike.

    Why: PyTorch's exporter writes the weights of a model past 2 GiB, or of any model saved with
    ``external_data=True``, to files beside the .onnx; copied alone, the row's model failed in
    onnxruntime ("External data path validation failed", a Llama export, 2026-12-06). Where a
    location leaves the model's folder (an absolute path, ``..``) onnxruntime refuses it anyway:
    :class:`OrtError`."""
    import onnx

    def tensors(graph):
        yield from graph.initializer
        for node in graph.node:
            for attr in node.attribute:
                yield from ([attr.t] if attr.HasField("t") else []) + list(attr.tensors)
                for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    yield from tensors(sub)

    names = []
    for tensor in tensors(onnx.load(path, load_external_data=False).graph):
        for entry in tensor.external_data if tensor.data_location == onnx.TensorProto.EXTERNAL else ():
            if entry.key == "location" and entry.value not in names:
                names.append(entry.value)
    for name in names:
        if os.path.isabs(name) or os.path.normpath(name).split(os.sep)[0] == os.pardir:
            raise OrtError(f"{path}: external data outside the model's folder ({name}): onnxruntime refuses it")
    return names


def save(model, art_dir: str, num_threads: int) -> str:
    """Write the row's folder for a model loaded from an .onnx file."""
    inputs = feeds(model)
    path = source(model)
    os.makedirs(art_dir, exist_ok=True)
    shutil.copyfile(path, os.path.join(art_dir, "model.onnx"))
    data = external_files(path)
    for name in data:
        os.makedirs(os.path.dirname(os.path.join(art_dir, name)), exist_ok=True)
        shutil.copyfile(os.path.join(os.path.dirname(path), name), os.path.join(art_dir, name))
    with open(os.path.join(art_dir, "inputs.npz"), "wb") as f:
        np.savez(f, **inputs)
    spec = {"runtime": NAME, "model": model.name, "source": os.path.abspath(path), "inputs": list(inputs),
            "num_threads": int(num_threads),
            "sha256": {n: file_sha256(os.path.join(art_dir, n)) for n in (*FILES, *data)}}
    with open(os.path.join(art_dir, SPEC), "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=1)
    return art_dir


def is_artifact(art_dir: str) -> bool:
    return os.path.exists(os.path.join(art_dir, SPEC))


def _load(art_dir: str) -> tuple[dict, dict[str, np.ndarray]]:
    spec = read_checked(art_dir, SPEC, OrtError)
    with np.load(os.path.join(art_dir, "inputs.npz")) as z:
        inputs = {n: z[n] for n in spec["inputs"]}
    return spec, inputs


def _loaded(art_dir: str):
    spec, inputs = _load(art_dir)
    return session(os.path.join(art_dir, "model.onnx"), spec["num_threads"]), inputs


def run(art_dir: str) -> list[np.ndarray]:
    """The outputs of one run of the row's folder on its inputs."""
    sess, inputs = _loaded(art_dir)
    return [np.asarray(o) for o in sess.run(None, inputs)]


def time_runs(art_dir: str, repeat: int) -> list[float]:
    """Wall time of ``repeat`` runs in microseconds after the same warm-up as
    :meth:`tvm_partition.runtime.runner.Runner.time` (inputs from host arrays, outputs back as numpy arrays)."""
    from ..runtime.runner import warm_up

    sess, inputs = _loaded(art_dir)
    warm_up(lambda: sess.run(None, inputs))
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sess.run(None, inputs)
        times.append((time.perf_counter() - t0) * 1e6)
    return times
