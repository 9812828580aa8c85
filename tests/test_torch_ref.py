"""The PyTorch reference rows of ``bench`` on a GPU (``pytorch``, ``pytorch-graph``): each twin
computes its zoo model's outputs (the oracle: TVM's unpartitioned build of the same model and
weights), the rows' folders travel in bundles without weights, and they are timed and checked
where they run. Tests that need torch skip without it (CI installs no torch: the folders and the
rules of which models and device sets get the rows are tested there too); the graph rows need a
CUDA GPU (``gpu`` marker).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from test_bench import LSTM, run_bench
from tvm_partition.bench import suite as bench, torch_ref
from tvm_partition.runtime.ort import tolerance

#: Settings that compile and run in seconds (BERT-base: one layer).
TINY = {"lstm": {"seq_len": 3, "batch": 2}, "gru": {"seq_len": 3, "batch": 2}, "bert": {"seq_len": 4, "layers": 1, "batch": 1},
        "bert-tiny": {"seq_len": 8, "batch": 2}, "mobilenetv2": {"image_size": 32}, "resnet18": {"image_size": 32, "batch": 2},
        "resnet50": {"image_size": 32}, "inception_v3": {"image_size": 75}}


def folder(tmp_path, name: str, strategy: str = torch_ref.NAME, **opts) -> str:
    """A PyTorch row's folder of zoo model ``name`` as ``bench`` writes it."""
    from tvm_partition import frontend
    from tvm_partition.cli.compile import reference_outputs

    model = frontend.load(name, seed=0, **opts)
    return torch_ref.save(model, str(tmp_path / f"{name}-{strategy}"), strategy, reference_outputs(model))


def test_every_zoo_model_has_a_twin_tested_here():
    from tvm_partition.flags import ZOO_MODELS

    assert set(TINY) == set(torch_ref.TWINS) == set(ZOO_MODELS)


@pytest.mark.parametrize("name", sorted(TINY))
def test_each_twin_computes_its_zoo_models_outputs(name, tmp_path):
    pytest.importorskip("torch")
    art = folder(tmp_path, name, **TINY[name])
    assert sorted(os.listdir(art)) == ["inputs.npz", "outputs.npz", "torch.json"]  # no weights: drawn where it runs
    with np.load(os.path.join(art, "outputs.npz")) as z:
        ref = z["arr_0"]
    out = torch_ref.run(art)
    assert len(out) == 1 and out[0].shape == ref.shape and np.abs(ref).max() > 1e-3
    err = torch_ref.check(art)
    assert err == float(np.max(np.abs(out[0].astype(np.float64) - ref))) and err <= tolerance([ref])


def test_a_twin_takes_every_zoo_weight_once(tmp_path):
    torch = pytest.importorskip("torch")
    from tvm_partition.bench import torch_twins
    from tvm_partition.frontend import zoo

    model = zoo.build("gru", seq_len=2, batch=1)
    names = [v.name for v in model.mod["main"].params[1:]]
    with pytest.raises(ValueError, match="got no zoo weight"):
        torch_twins.load(torch_twins.twin("gru", model.config), names[:-1], model.params[:-1])
    with pytest.raises(ValueError, match="fits no parameter"):  # not transposed: PyTorch's [3 * hidden, in]
        torch_twins.load(torch_twins.twin("gru", model.config), names, [p.T if p.ndim == 2 else p for p in model.params])
    twin = torch_twins.load(torch_twins.twin("gru", model.config), names, model.params)
    assert torch.equal(twin.rnn.weight_ih_l0, torch.from_numpy(model.params[0].T.copy()))
    with pytest.raises(ValueError, match="no PyTorch twin"):
        torch_twins.twin("nosuch", {})


def test_pytorch_rows_are_for_zoo_models_with_a_twin_on_a_gpu(tmp_path):
    zoo_model = type("M", (), {"name": "lstm", "config": {}, "weights": {"seed": 0, "specs": []}})()
    notes = []
    names = ["cpu", "tvm-cpu", "pytorch", "pytorch-graph"]
    assert bench.applicable(names, zoo_model, False, notes.append, gpu=True) == ["cpu", "tvm-cpu", "pytorch", "pytorch-graph"]
    assert bench.applicable(names, zoo_model, False, notes.append, gpu=False) == ["cpu", "tvm-cpu"] and notes == []
    onnx_model = type("M", (), {"name": "tiny", "config": {"source": "tiny.onnx"}, "weights": None})()
    assert bench.applicable(names, onnx_model, True, notes.append, gpu=True) == ["cpu", "tvm-cpu"]
    assert notes == [f"note: {s} runs the zoo models with a PyTorch twin ({', '.join(torch_ref.TWINS)}); "
                     "left out for tiny" for s in ("pytorch", "pytorch-graph")]
    rc, text, err = run_bench(*LSTM, "--strategies", "pytorch", "--out", tmp_path / "res")  # cpu,cpu
    assert rc == 0 and "note: pytorch times PyTorch on a GPU; left out for lstm" in err
    assert "0 rows, 0 failed" in text and not (tmp_path / "res").exists()


def test_a_gpu_bundle_carries_the_pytorch_rows_checked_here(tmp_path, monkeypatch):
    """``bench --devices cpu,gpu --export-bundle``: the two rows' folders, the twin checked on this CPU
    where torch is installed, the runner's modules in the bundle; measured on a machine without a
    CUDA GPU, each row is an error row that says so, in one line."""
    from tvm_partition.cli import compile as compile_mod

    bundle, calls, real = tmp_path / "bundle", [], compile_mod.reference_outputs
    monkeypatch.setattr(compile_mod, "reference_outputs", lambda model: calls.append(model) or real(model))
    rc, _, err = run_bench(*LSTM, "--devices", "cpu,gpu", "--strategies", "gpu,pytorch,pytorch-graph",
                           "--export-bundle", bundle)
    assert rc == 0, err
    assert len(calls) == 1  # one reference build for both rows of the model
    rows = json.loads((bundle / "bench.json").read_text())["rows"]
    assert [r["strategy"] for r in rows] == ["gpu", "pytorch", "pytorch-graph"]
    for r in rows[1:]:
        art = bundle / r["artifact"]
        spec = json.loads((art / "torch.json").read_text())
        assert spec["runtime"] == r["strategy"] and spec["model"] == "lstm" and spec["config"]["seq_len"] == 4
        assert not (art / "params.npz").exists() and r["tuned_kernels"] is None and r["predicted_us"] is None
        if torch_ref.available():
            with np.load(art / "outputs.npz") as z:
                assert 0 <= r["max_abs_err_vs_torch"] <= tolerance([z["arr_0"]])
    for module in ("torch_ref.py", "torch_twins.py"):
        assert (bundle / "site/tvm_partition/bench" / module).exists()
    from tvm_partition.bench.runtime import measure_interleaved

    if torch_ref.available():
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine has a CUDA GPU: test_pytorch_rows_time_on_the_gpu measures them")
    arts = [str(bundle / r["artifact"]) for r in rows[1:]]
    got = measure_interleaved(arts, 2)
    for a in arts:  # the measuring child's torch, if any, sees no GPU
        assert got[a]["error"] in [f"measuring failed: error: {why}" for why in (
            "no CUDA GPU here: the pytorch rows time PyTorch on the GPU",
            "torch is not installed here: pip install torch")], got


def test_pytorch_rows_are_timed_in_turn_after_their_outputs_are_checked(tmp_path):
    """The timing loop of the rows (on the CPU here: the eager row; a graph row needs the GPU), and a
    twin whose outputs differ from TVM's is refused before it is timed."""
    pytest.importorskip("torch")
    eager = folder(tmp_path, "lstm", **TINY["lstm"])
    other = folder(tmp_path, "gru", **TINY["gru"])
    got = torch_ref.time_together([eager, other], 6, blocks=2, block_min_s=0.0, device="cpu")
    for art in (eager, other):
        times, err = got[art]
        assert len(times) == 6 and min(times) > 0 and 0 <= err < 1e-4
    graph = folder(tmp_path, "lstm", torch_ref.GRAPH, **TINY["lstm"])
    with pytest.raises(torch_ref.TorchError, match="a CUDA graph replays on the GPU only"):
        torch_ref.time_together([graph], 2, device="cpu")
    with np.load(os.path.join(eager, "outputs.npz")) as z:
        wrong = z["arr_0"] + 1.0
    spec = json.loads(open(os.path.join(eager, "torch.json")).read())
    with open(os.path.join(eager, "outputs.npz"), "wb") as f:
        np.savez(f, wrong)
    with pytest.raises(torch_ref.TorchError, match="checksum mismatch"):
        torch_ref.time_together([eager], 2, device="cpu")
    spec["sha256"]["outputs.npz"] = torch_ref.file_sha256(os.path.join(eager, "outputs.npz"))
    with open(os.path.join(eager, "torch.json"), "w") as f:
        json.dump(spec, f)
    with pytest.raises(torch_ref.TorchError, match="not the same model, not measured"):
        torch_ref.time_together([eager], 2, device="cpu")


def test_a_twin_that_disagrees_is_an_error_row(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from tvm_partition.cli import compile as compile_mod

    real = compile_mod.reference_outputs
    monkeypatch.setattr(compile_mod, "reference_outputs", lambda model: [o + 1.0 for o in real(model)])
    bundle = tmp_path / "bundle"
    rc, text, _ = run_bench(*LSTM, "--devices", "cpu,gpu", "--strategies", "pytorch", "--export-bundle", bundle)
    (row,) = json.loads((bundle / "bench.json").read_text())["rows"]
    assert rc == 1 and "not the same model, not measured" in row["error"] and "artifact" not in row


@pytest.mark.gpu
def test_pytorch_rows_time_on_the_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA GPU")
    arts = [folder(tmp_path, "resnet18", s, **TINY["resnet18"]) for s in torch_ref.NAMES]
    got = torch_ref.time_together(arts, 20, blocks=4, block_min_s=0.02)
    for art in arts:
        times, err = got[art]
        assert len(times) >= 20 and err <= 1e-3, (art, err)


def test_pytorch_rows_share_a_process_of_their_own(tmp_path, monkeypatch):
    """measure_interleaved: a model's TVM rows in one process, its PyTorch rows in another (one CUDA
    context, the same phase), each onnxruntime row alone, the order reversed from round to round."""
    from tvm_partition.bench import runtime

    arts = {}
    for name, marker in (("cpu", None), ("gpu", None), ("pytorch", "torch.json"), ("graph", "torch.json"),
                         ("ort", "ort.json")):
        arts[name] = str(tmp_path / name)
        os.makedirs(arts[name])
        if marker:
            open(os.path.join(arts[name], marker), "w").close()
    units = []

    def fake(unit, repeat, timeout_s=None, preexec=None):
        units.append(unit if isinstance(unit, list) else [unit])
        one = {"measured_median_us": 1.0, "measured_p90_us": 1.0, "repeat": repeat}
        return {a: dict(one) for a in unit} if isinstance(unit, list) else one

    monkeypatch.setattr(runtime, "measure_process", fake)
    got = runtime.measure_interleaved(list(arts.values()), 9)
    a = arts
    first = [[a["cpu"], a["gpu"]], [a["pytorch"], a["graph"]], [a["ort"]]]
    assert units == first + first[::-1] + first
    assert all(got[x]["repeat"] == 9 for x in a.values())
