"""The ``pytorch`` and ``pytorch-graph`` reference rows of ``tvm-partition bench``: the zoo model in
PyTorch on the GPU, eager and replayed as one CUDA graph.

``onnxruntime`` says what a CPU deployment would run instead of our build; on a GPU the mission's
users would run PyTorch, so a ``cpu,gpu`` bench of a zoo model carries these two rows too (a zoo
model has no PyTorch file: :mod:`tvm_partition.bench.torch_twins` writes each in ``torch.nn``, the
same architecture and weights). ``pytorch`` is eager PyTorch, the default a user gets;
``pytorch-graph`` captures the same forward once as a CUDA graph and replays it (``torch.cuda.graph``:
one launch a run instead of one a kernel, what ``torch.compile(mode="reduce-overhead")`` does
without its compilation), the strongest PyTorch on small batches, where launches dominate. Both
are timed as every row is (:mod:`tvm_partition.bench.runtime`: fresh processes, warm-up, the
median of the processes' medians) end to end, as our rows are: the inputs copied in from host
memory, the outputs copied back. cuDNN picks its fastest algorithms (``cudnn.benchmark``) and
TF32 is off for matmuls and convolutions: our CUDA kernels compute in float32, and so does the
reference they are compared with.

A row's folder holds no weights: ``torch.json`` (the zoo model's name, config and weights recipe,
:func:`tvm_partition.inputs.draw_weights`, which the twin draws again where it runs: ResNet-18's
47 MB do not travel), ``inputs.npz`` (the zoo's inputs) and ``outputs.npz`` (TVM's unpartitioned
model's outputs on them). Before it is timed the twin's outputs on the GPU are checked against
those (``max_abs_err_vs_torch``): a twin that disagrees is an error row, never a timing of another
model. Needs torch and a CUDA GPU where the rows run (the GPU machines' image has both); it
imports no TVM and travels in benchmark bundles (:data:`tvm_partition.bench.suite.BUNDLE_MODULES`).
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from ..errors import TvmPartitionError
from ..runtime.ort import max_abs_err
from .ort import file_sha256, read_checked

NAME = "pytorch"
GRAPH = "pytorch-graph"
NAMES = (NAME, GRAPH)
SPEC = "torch.json"
FILES = ("inputs.npz", "outputs.npz")
#: The zoo models :mod:`tvm_partition.bench.torch_twins` writes in PyTorch: all of them.
TWINS = ("lstm", "gru", "bert", "bert-tiny", "mobilenetv2", "resnet18", "resnet50", "inception_v3")


class TorchError(TvmPartitionError, ValueError):
    """PyTorch cannot run the row here; the message says why and what to do."""


def has_twin(model) -> bool:
    """Whether ``model`` is a zoo model with a PyTorch twin (its weights drawn from a recipe)."""
    return model.name in TWINS and getattr(model, "weights", None) is not None


def save(model, art_dir: str, strategy: str, reference: list[np.ndarray]) -> str:
    """Write the row's folder; ``reference``: TVM's unpartitioned outputs on the zoo's inputs."""
    if strategy not in NAMES:
        raise TorchError(f"{strategy!r} is not a PyTorch row ({', '.join(NAMES)})")
    if not has_twin(model):
        raise TorchError(f"{model.name}: no PyTorch twin (zoo models {', '.join(TWINS)})")
    # main's weights that the recipe drew (the twin's state_dict keys but for transposes); constants
    # the frontend lifted into parameters follow them
    names = [v.name for v in model.mod["main"].params[len(model.inputs):]][:len(model.weights["specs"])]
    os.makedirs(art_dir, exist_ok=True)
    with open(os.path.join(art_dir, "inputs.npz"), "wb") as f:
        np.savez(f, **model.inputs)
    with open(os.path.join(art_dir, "outputs.npz"), "wb") as f:
        np.savez(f, *reference)
    spec = {"runtime": strategy, "model": model.name, "config": model.config, "weights": model.weights,
            "names": names, "inputs": list(model.inputs),
            "sha256": {n: file_sha256(os.path.join(art_dir, n)) for n in FILES}}
    with open(os.path.join(art_dir, SPEC), "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=1)
    return art_dir


def is_artifact(art_dir: str) -> bool:
    return os.path.exists(os.path.join(art_dir, SPEC))


def _load(art_dir: str) -> tuple[dict, list[np.ndarray], list[np.ndarray]]:
    spec = read_checked(art_dir, SPEC, TorchError)
    with np.load(os.path.join(art_dir, "inputs.npz")) as z:
        inputs = [z[n] for n in spec["inputs"]]
    with np.load(os.path.join(art_dir, "outputs.npz")) as z:
        refs = [z[f"arr_{i}"] for i in range(len(z.files))]
    return spec, inputs, refs


def _torch():
    try:
        import torch
    except ImportError:
        raise TorchError("torch is not installed here: pip install torch") from None
    return torch


def _module(spec: dict, device: str):
    """The twin with the recipe's weights, in inference mode on ``device``."""
    from ..inputs import draw_weights
    from . import torch_twins

    module = torch_twins.load(torch_twins.twin(spec["model"], spec["config"]), spec["names"],
                              draw_weights(spec["weights"]))
    return module.to(device)


def _step(torch, module, host: list, graph: bool):
    """One end-to-end run as a function: inputs in from host memory, forward, outputs back to host
    memory (``.cpu()`` waits for the GPU). ``graph``: the forward captured once as a CUDA graph
    (after warm-up runs on a side stream, as ``torch.cuda.graph`` asks) and replayed."""
    device = next(module.parameters()).device
    if not graph:
        def run():
            out = module(*(x.to(device) for x in host))
            return [o.cpu() for o in (out if isinstance(out, tuple) else (out,))]
        return run
    static = [x.to(device) for x in host]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            module(*static)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = module(*static)
    outs = out if isinstance(out, tuple) else (out,)

    def replay():
        for s, x in zip(static, host):
            s.copy_(x)
        g.replay()
        return [o.cpu() for o in outs]
    return replay


def available() -> bool:
    """Whether torch can be imported here (the build machine checks a row's twin where it can)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def run(art_dir: str, device: str = "cpu") -> list[np.ndarray]:
    """The twin's outputs on the row's inputs, eager on ``device``."""
    spec, inputs, _ = _load(art_dir)
    return _eager(spec, inputs, device)


def _eager(spec: dict, inputs: list[np.ndarray], device: str) -> list[np.ndarray]:
    torch = _torch()
    with torch.inference_mode():
        module = _module(spec, device)
        return [o.numpy() for o in _step(torch, module, [torch.from_numpy(x) for x in inputs], False)()]


def _compared(outs: list[np.ndarray], refs: list[np.ndarray]) -> float:
    """The largest difference of ``outs`` from ``refs``; :class:`TorchError` where it exceeds their tolerance."""
    err, tol = max_abs_err(outs, refs)
    if err > tol:
        raise TorchError(f"PyTorch's outputs differ from TVM's unpartitioned model by {err:.3g} (tolerance "
                         f"{tol:.3g}) on the same inputs: not the same model, not measured")
    return err


def check(art_dir: str, device: str = "cpu") -> float:
    """The twin's largest difference from the folder's outputs (TVM's unpartitioned model's), run
    eager on ``device`` (the build machine checks a row on its CPU before it is measured or
    exported); :class:`TorchError` where it exceeds the tolerance."""
    spec, inputs, refs = _load(art_dir)
    return _compared(_eager(spec, inputs, device), refs)


def time_together(art_dirs: list[str], repeat: int, blocks: int = 1, block_min_s: float = 0.0,
                  device: str = "cuda") -> dict:
    """``{art: (wall times of its runs in us, max_abs_err)}`` on this machine's GPU (``device``;
    the tests time the eager rows on the CPU too): each row's
    outputs checked against its folder's (TVM's unpartitioned model's), then the rows timed in
    turn as :func:`tvm_partition.bench.runtime.measure_together` times TVM's, in ``blocks`` blocks
    of at least ``repeat`` runs in all, each block after one untimed run and at least
    ``block_min_s`` long, the order reversed from block to block (the eager and graph rows of a
    model in one process: one CUDA context, one twin, the same phase of the machine).
    :class:`TorchError` where there is no torch, no CUDA GPU, or a row's outputs differ."""
    from ..runtime.runner import warm_up

    torch = _torch()
    if device == "cuda" and not torch.cuda.is_available():
        raise TorchError("no CUDA GPU here: the pytorch rows time PyTorch on the GPU")
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    steps, errs, twins = {}, {}, {}
    times: dict[str, list[float]] = {a: [] for a in art_dirs}
    with torch.inference_mode():
        for art in art_dirs:
            spec, inputs, refs = _load(art)
            key = json.dumps([spec["model"], spec["config"], spec["weights"], spec["names"]], sort_keys=True)
            if spec["runtime"] == GRAPH and device != "cuda":
                raise TorchError(f"{art}: a CUDA graph replays on the GPU only")
            if key not in twins:
                twins[key] = _module(spec, device)
            steps[art] = _step(torch, twins[key], [torch.from_numpy(x) for x in inputs], spec["runtime"] == GRAPH)
            errs[art] = _compared([o.numpy() for o in steps[art]()], refs)
            warm_up(steps[art])
        blocks = max(1, min(blocks, repeat))
        for b in range(blocks):
            runs = repeat // blocks + (b < repeat % blocks)
            for art in (art_dirs if b % 2 == 0 else art_dirs[::-1]):
                steps[art]()
                spent, done = 0.0, 0
                while done < runs or spent < block_min_s * 1e6:
                    t0 = time.perf_counter()
                    steps[art]()
                    times[art].append((time.perf_counter() - t0) * 1e6)
                    spent, done = spent + times[art][-1], done + 1
    return {a: (times[a], errs[a]) for a in art_dirs}
