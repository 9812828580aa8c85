"""Seeded weights for the onnx package's light models (tvm_partition.frontend.zoo.onnx_light, benchmarks/onnx_light.py).

The smallest model (squeezenet, batch 1) only: the copy's weights differ from the shipped
constants with the same shapes, and onnxruntime's output on a random input is finite and varied.
In the heavy tier (``pytest -m heavy``), issue 17's matrix: every light model under every strategy
on ``cpu,cpu``, against onnxruntime.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import numpy_helper  # noqa: E402

from tvm_partition.frontend.zoo import onnx_light  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "squeezenet"


def weights(path) -> dict[str, np.ndarray]:
    """Every float weight: initializers and the values ConstantOfShape nodes fill in."""
    proto = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    out = {k: v for k, v in inits.items() if v.dtype.kind == "f"}
    for node in proto.graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            value = numpy_helper.to_array(node.attribute[0].t)
            out[node.output[0]] = np.full(tuple(inits[node.input[0]]), value.ravel()[0], value.dtype)
    return out


@pytest.fixture(scope="module")
def shipped():
    path = onnx_light.light_path(NAME)
    if not os.path.exists(path):
        pytest.skip(f"this onnx install does not ship {path}")
    return path


def test_seeded_copy_differs_keeps_shapes_and_gives_a_varied_output(shipped, tmp_path):
    seeded = onnx_light.reseed(shipped, str(tmp_path / "s.onnx"), seed=0)
    before, after = weights(shipped), weights(seeded)
    assert before.keys() == after.keys() and len(after) > 20
    for name, w in after.items():
        assert w.shape == before[name].shape and w.dtype == before[name].dtype, name
        assert not np.array_equal(w, before[name]) and np.std(w) > 0, name
    assert not any(n.op_type == "ConstantOfShape" for n in onnx.load(seeded).graph.node)
    assert onnx_light.problem(onnx_light.ort_outputs(shipped)) is not None  # the shipped output is constant
    (out,) = onnx_light.ort_outputs(seeded)
    assert out.shape == (1, 1000, 1, 1) and onnx_light.problem([out]) is None
    again = onnx_light.reseed(shipped, str(tmp_path / "again.onnx"), seed=0)
    other = onnx_light.reseed(shipped, str(tmp_path / "other.onnx"), seed=1)
    assert open(again, "rb").read() == open(seeded, "rb").read()  # the seed decides the weights
    assert not np.array_equal(weights(other)["conv1_w_0"], after["conv1_w_0"])


def test_script_writes_and_checks_the_copies(shipped, tmp_path):
    out = tmp_path / "light"
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "onnx_light.py"), "--out", str(out),
                           "--models", NAME, "--seed", "3", "--check"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    path = str(out / f"light_{NAME}_seed3.onnx")
    assert proc.stdout.splitlines()[0] == path and os.path.exists(path)
    assert "  ok: output [1, 1000, 1, 1]" in proc.stdout
    proc = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks", "onnx_light.py"), "--models", "nosuch"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: unknown light model 'nosuch'")
    assert len(proc.stderr.splitlines()) == 1


# --- the heavy tier: every light model x every strategy against onnxruntime ----------------------

#: The planners of issue 17's matrix (compile --strategy names).
MATRIX_STRATEGIES = ("cpu", "gpu", "equal", "fixed", "eop", "auto", "milp", "dominators", "dp", "heft")
_SEEDED: dict = {}


def seeded_model(name: str, folder) -> tuple:
    """(path of the seeded copy, its Model, onnxruntime's outputs on the Model's inputs), once per model."""
    from tvm_partition import frontend
    from tvm_partition.bench.ort import session
    from tvm_partition.inputs import graph_input_names

    if name not in _SEEDED:
        src = onnx_light.light_path(name)
        if not os.path.exists(src):
            pytest.skip(f"this onnx install does not ship {src}")
        path = onnx_light.reseed(src, os.path.join(str(folder), f"{name}.onnx"), seed=0)
        model = frontend.load(path)
        sess = session(path, 1)
        # inputs by position (the Model keys them by these names as well)
        feeds = dict(zip(graph_input_names(path), model.inputs.values()))
        _SEEDED[name] = (path, model, [np.asarray(o) for o in sess.run(None, feeds)])
    return _SEEDED[name]


@pytest.mark.heavy
@pytest.mark.parametrize("strategy", MATRIX_STRATEGIES)
@pytest.mark.parametrize("name", onnx_light.NAMES)
def test_every_strategy_on_every_light_model_matches_onnxruntime(name, strategy, tmp_path_factory):
    """Compiled with this machine's schedules (tuned, transferred, default), saved, run by the
    runtime-only Runner on the Model's seeded inputs: within 1e-4 of the largest reference value of
    onnxruntime on the same inputs (seeded weights: the shipped constant ones hide a broken split)."""
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.runtime.ort import tolerance
    from tvm_partition.devices import parse_devices
    from tvm_partition.runtime.runner import Runner
    from tvm_partition.devices import database_dir

    _, model, ref = seeded_model(name, tmp_path_factory.mktemp("light"))
    assert onnx_light.problem(ref) is None, "the seeded model's reference output looks broken"
    compiled = compile_model(model, parse_devices("cpu,cpu"), strategy, tuning_db=database_dir(None))
    runner = Runner(compiled.save(str(tmp_path_factory.mktemp("art"))))
    outs = runner.run(dict(zip([i["name"] for i in runner.input_info], model.inputs.values())))
    assert [o.shape for o in outs] == [r.shape for r in ref]
    err = max(float(np.max(np.abs(o - r))) for o, r in zip(outs, ref))
    assert err <= tolerance(ref), f"{name} {strategy}: max_abs_err {err:.3g} > {tolerance(ref):.3g}"
