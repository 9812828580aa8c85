"""Tests for the built-in model zoo (tvm_partition.frontend.zoo).

Every model is built with a small configuration, compiled for LLVM and run on the CPU; the
RNNs are also checked against an independent numpy implementation of PyTorch's equations.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax

from helpers import SMALL
from tvm_partition.frontend import zoo

OUTPUT_SHAPE = {
    "lstm": (2, 64),
    "gru": (2, 64),
    "bert": (1, 8, 768),
    "bert-tiny": (2, 16, 128),
    "mobilenetv2": (1, 1000),
    "resnet18": (1, 1000),
    "resnet50": (1, 1000),
    "inception_v3": (1, 1000),
}
CNNS = ("mobilenetv2", "resnet18", "resnet50", "inception_v3")

_BUILT: dict[str, zoo.ZooModel] = {}
_OUTPUTS: dict[str, np.ndarray] = {}


def small(name: str) -> zoo.ZooModel:
    """The small model ``name`` (built once per test session)."""
    if name not in _BUILT:
        _BUILT[name] = zoo.build(name, **SMALL[name])
    return _BUILT[name]


def run(zm: zoo.ZooModel) -> np.ndarray:
    ex = tvm.compile(zm.mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](
        *[tvm.runtime.tensor(v) for v in zm.inputs.values()],
        *[tvm.runtime.tensor(p) for p in zm.params],
    )
    return out.numpy()


def small_output(name: str) -> np.ndarray:
    if name not in _OUTPUTS:
        _OUTPUTS[name] = run(small(name))
    return _OUTPUTS[name]


def shape_of(var_or_func) -> tuple[int, ...]:
    ty = var_or_func.ret_ty if isinstance(var_or_func, relax.Function) else var_or_func.ty
    return tuple(int(d) for d in ty.shape.values)


# ------------------------------------------------------------------------------------------
# numpy references (PyTorch gate equations, zero initial state, weights stored [in, G*H])
# ------------------------------------------------------------------------------------------


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_reference(x: np.ndarray, params: list[np.ndarray], hidden: int = 64) -> np.ndarray:
    x = x.astype(np.float64)
    seq = [x[:, t] for t in range(x.shape[1])]
    for layer in range(len(params) // 4):
        w_ih, w_hh, b_ih, b_hh = (p.astype(np.float64) for p in params[4 * layer : 4 * layer + 4])
        h = np.zeros((x.shape[0], hidden))
        c = np.zeros_like(h)
        out = []
        for x_t in seq:
            z = x_t @ w_ih + b_ih + h @ w_hh + b_hh
            i, f, g, o = np.split(z, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
            out.append(h)
        seq = out
    return seq[-1]


def gru_reference(x: np.ndarray, params: list[np.ndarray], hidden: int = 64) -> np.ndarray:
    x = x.astype(np.float64)
    seq = [x[:, t] for t in range(x.shape[1])]
    for layer in range(len(params) // 4):
        w_ih, w_hh, b_ih, b_hh = (p.astype(np.float64) for p in params[4 * layer : 4 * layer + 4])
        h = np.zeros((x.shape[0], hidden))
        out = []
        for x_t in seq:
            i_r, i_z, i_n = np.split(x_t @ w_ih + b_ih, 3, axis=1)
            h_r, h_z, h_n = np.split(h @ w_hh + b_hh, 3, axis=1)
            r = _sigmoid(i_r + h_r)
            z = _sigmoid(i_z + h_z)
            n = np.tanh(i_n + r * h_n)
            h = (1.0 - z) * n + z * h
            out.append(h)
        seq = out
    return seq[-1]


REFERENCES = {"lstm": lstm_reference, "gru": gru_reference}


# ------------------------------------------------------------------------------------------
# Structure
# ------------------------------------------------------------------------------------------


def test_names():
    assert zoo.NAMES == (
        "lstm", "gru", "bert", "bert-tiny", "mobilenetv2", "resnet18", "resnet50", "inception_v3"
    )  # fmt: skip


@pytest.mark.parametrize("name", zoo.NAMES)
def test_structure(name):
    zm = small(name)
    assert zm.name == name
    assert [gv.name_hint for gv in zm.mod.get_global_vars()] == ["main"]
    main = zm.mod["main"]
    assert main.attrs["global_symbol"] == "main"
    num_input = int(main.attrs["num_input"])
    assert num_input == len(zm.inputs) == 1
    assert [v.name for v in main.params[:num_input]] == list(zm.inputs)
    weights = main.params[num_input:]
    assert len(weights) == len(zm.params)
    for var, value in zip(weights, zm.params):
        assert shape_of(var) == value.shape, var.name
        assert var.ty.dtype == "float32" and value.dtype == np.float32, var.name
        assert np.isfinite(value).all() and value.std() > 0, var.name
    for var, value in zip(main.params[:num_input], zm.inputs.values()):
        assert shape_of(var) == value.shape and var.ty.dtype == str(value.dtype)
    assert shape_of(main) == OUTPUT_SHAPE[name]

    # Only single-tensor operators from the zoo's vocabulary.
    ops = zoo.relax_ops(zm.mod)
    assert ops <= zoo.OPS, ops - zoo.OPS
    assert {"relax.matmul"} <= ops
    for block in main.body.blocks:
        for binding in block.bindings:
            assert isinstance(binding.var.ty, relax.TensorType), binding.var.name

    # The module prints as TVMScript.
    assert "def main(" in zm.mod.script()


@pytest.mark.parametrize("name", ["gru", "bert-tiny", "resnet18"])
def test_script_roundtrip(name):
    zm = small(name)
    tvm.ir.assert_structural_equal(tvm.script.from_source(zm.mod.script()), zm.mod)


def test_inputs_and_weights_are_seeded():
    a = zoo.build("lstm", seq_len=3, batch=2, seed=1)
    b = zoo.build("lstm", seq_len=3, batch=2, seed=1)
    c = zoo.build("lstm", seq_len=3, batch=2, seed=2)
    assert all(np.array_equal(p, q) for p, q in zip(a.params, b.params))
    assert np.array_equal(a.inputs["x"], b.inputs["x"])
    assert not np.array_equal(a.params[0], c.params[0])
    assert not np.array_equal(a.inputs["x"], c.inputs["x"])
    # Weights do not depend on the input shape.
    d = zoo.build("lstm", seq_len=5, batch=4, seed=1)
    assert all(np.array_equal(p, q) for p, q in zip(a.params, d.params))


def test_bert_token_ids():
    ids = small("bert-tiny").inputs["input_ids"]
    assert np.issubdtype(ids.dtype, np.integer)
    assert ids.min() >= 0 and ids.max() < small("bert-tiny").config["vocab"]
    assert len(np.unique(ids)) > 1


# ------------------------------------------------------------------------------------------
# Compile and run
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", zoo.NAMES)
def test_compile_and_run(name):
    out = small_output(name)
    assert out.shape == OUTPUT_SHAPE[name]
    assert out.dtype == np.float32
    assert np.isfinite(out).all()
    assert out.std() > 1e-2, "output is (nearly) constant"
    assert np.abs(out).max() < 1e3, "activations blew up"
    if out.shape[0] > 1:  # different batch items give different outputs
        assert not np.allclose(out[0], out[1])


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_rnn_matches_numpy(name):
    zm = small(name)
    expected = REFERENCES[name](zm.inputs["x"], zm.params)
    np.testing.assert_allclose(small_output(name), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_rnn_three_layers_matches_numpy(name):
    zm = zoo.build(name, batch=3, seq_len=3, layers=3, seed=5)
    expected = REFERENCES[name](zm.inputs["x"], zm.params)
    np.testing.assert_allclose(run(zm), expected, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------
# Defaults and overrides (export only, no compilation)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_rnn_defaults_and_overrides(name):
    zm = zoo.build(name)
    assert zm.config == {"batch": 16, "seq_len": 100, "layers": 2, "input_size": 80, "hidden": 64}
    assert zm.inputs["x"].shape == (16, 100, 80)
    assert len(zm.params) == 8
    assert shape_of(zm.mod["main"]) == (16, 64)

    zm = zoo.build(name, batch=3, seq_len=5, layers=3)
    assert (zm.config["batch"], zm.config["seq_len"], zm.config["layers"]) == (3, 5, 3)
    assert zm.inputs["x"].shape == (3, 5, 80)
    assert len(zm.params) == 12
    assert shape_of(zm.mod["main"]) == (3, 64)


def test_bert_defaults_and_overrides():
    zm = zoo.build("bert-tiny")
    assert {k: zm.config[k] for k in ("batch", "seq_len", "layers", "hidden", "heads", "ffn")} == {
        "batch": 16, "seq_len": 128, "layers": 2, "hidden": 128, "heads": 2, "ffn": 512
    }  # fmt: skip
    assert zm.inputs["input_ids"].shape == (16, 128)
    assert len(zm.params) == 4 + 2 * 16
    assert shape_of(zm.mod["main"]) == (16, 128, 128)

    zm = zoo.build("bert-tiny", layers=1, seq_len=7, batch=3)
    assert zm.inputs["input_ids"].shape == (3, 7)
    assert len(zm.params) == 4 + 16
    assert shape_of(zm.mod["main"]) == (3, 7, 128)

    # BERT-base sizes (one layer to keep the weights small).
    zm = zoo.build("bert", layers=1)
    assert {k: zm.config[k] for k in ("batch", "seq_len", "layers", "hidden", "heads", "ffn")} == {
        "batch": 16, "seq_len": 128, "layers": 1, "hidden": 768, "heads": 12, "ffn": 3072
    }  # fmt: skip
    assert shape_of(zm.mod["main"]) == (16, 128, 768)


@pytest.mark.parametrize("name", CNNS)
def test_cnn_defaults_and_overrides(name):
    zm = zoo.build(name)
    size = 299 if name == "inception_v3" else 224
    assert (zm.config["batch"], zm.config["image_size"]) == (1, size)
    assert zm.inputs["data"].shape == (1, 3, size, size)
    assert shape_of(zm.mod["main"]) == (1, 1000)

    size = 80 if name == "inception_v3" else 48
    zm = zoo.build(name, batch=2, image_size=size)
    assert zm.inputs["data"].shape == (2, 3, size, size)
    assert shape_of(zm.mod["main"]) == (2, 1000)


# ------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------


def test_unknown_name():
    with pytest.raises(ValueError, match="known models:.*lstm.*inception_v3"):
        zoo.build("vgg16")


@pytest.mark.parametrize(
    "name, kwargs, applicable",
    [
        ("resnet18", dict(seq_len=8), "batch, image_size"),
        ("inception_v3", dict(layers=3), "batch, image_size"),
        ("lstm", dict(image_size=32), "batch, seq_len, layers"),
        ("bert-tiny", dict(image_size=32), "batch, seq_len, layers"),
    ],
)
def test_inapplicable_override(name, kwargs, applicable):
    with pytest.raises(ValueError, match=f"{next(iter(kwargs))}.*options that apply: {applicable}"):
        zoo.build(name, **kwargs)


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("lstm", dict(batch=0)),
        ("gru", dict(seq_len=-1)),
        ("bert-tiny", dict(layers=1.5)),
        ("bert-tiny", dict(seq_len=513)),
        ("resnet18", dict(image_size=16)),
        ("inception_v3", dict(image_size=74)),
    ],
)
def test_bad_values(name, kwargs):
    with pytest.raises(ValueError):
        zoo.build(name, **kwargs)


def test_inception_minimum_size_is_tight():
    # 75 is the smallest size whose last feature map is non-empty (1x1); 74 would give 0x0.
    zm = zoo.build("inception_v3", image_size=75)
    last_concat = [
        b.var
        for blk in zm.mod["main"].body.blocks
        for b in blk.bindings
        if isinstance(b.value, relax.Call) and b.value.op.name == "relax.concat"
    ][-1]
    assert shape_of(last_concat) == (1, 2048, 1, 1)
    with pytest.raises(ValueError, match="at least 75"):
        zoo.build("inception_v3", image_size=74)
