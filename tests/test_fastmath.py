"""sigmoid, tanh, exp, erf, GELU (both forms) and SiLU legalized on TVM's polynomials (tvm_partition/ir/fastmath.py).

Oracles: numpy in float64 (the error stays within a few float32 ulps), the legalized PrimFuncs'
text (no libm call is left, TVM's names are kept), and TVM's own legalization where ours declines."""

from __future__ import annotations

import math
import platform

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import relax
from tvm.script import relax as R

from tvm_partition.devices import cpu_target
from tvm_partition.ir.legalize import legalize_ops


def _module(dtype: str):
    @tvm.script.ir_module
    class Gate:
        @R.function
        def main(a: R.Tensor((16, 64), dtype), b: R.Tensor((16, 64), dtype)):
            with R.dataflow():
                s = R.sigmoid(a)
                t = R.tanh(b)
                e = R.exp(R.multiply(a, R.const(0.25, dtype)))
                g = R.nn.gelu(b)
                f = R.erf(R.multiply(a, R.const(0.3, dtype)))
                h = R.nn.gelu_tanh(a)
                u = R.nn.silu(b)
                y = R.add(R.add(R.add(R.add(R.add(R.multiply(s, t), e), g), f), h), u)
                R.output(y)
            return y

    return Gate


def test_the_gate_functions_vectorise_and_keep_their_accuracy_and_names():
    legal = legalize_ops()(_module("float32"))
    names = {gv.name_hint: f for gv, f in legal.functions_items() if isinstance(f, tvm.tirx.PrimFunc)}
    assert {"tir_sigmoid", "tir_tanh", "tir_exp", "gelu", "erf", "gelu_tanh", "silu"} <= set(names)
    for name in ("tir_sigmoid", "tir_tanh", "tir_exp", "gelu", "erf", "gelu_tanh", "silu"):
        text = names[name].script()
        assert not any(f"T.{f}(" in text for f in ("exp", "tanh", "sigmoid", "erf")), name
    ex = tvm.compile(legal, target=tvm.target.Target(cpu_target()))
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((16, 64)) * 6).astype("float32")
    b = (rng.standard_normal((16, 64)) * 6).astype("float32")
    a[0, :4] = [-100.0, 100.0, 0.0, -87.0]  # saturated and clamped ends
    got = vm["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b)).numpy()
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    erf = np.vectorize(math.erf)
    want = np.tanh(b64) / (1 + np.exp(-a64)) + np.exp(a64 * 0.25) + b64 * 0.5 * (1 + erf(b64 / math.sqrt(2))) + erf(a64 * 0.3)
    want += 0.5 * a64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (a64 + 0.044715 * a64**3))) + b64 / (1 + np.exp(-b64))
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


def test_other_dtypes_are_legalized_as_tvm_does():
    ours = legalize_ops()(_module("float16"))
    theirs = relax.transform.LegalizeOps()(_module("float16"))
    assert tvm_ffi.structural_equal(ours, theirs)


@pytest.mark.parametrize("op", ["sigmoid", "tanh"])
def test_a_build_of_the_lstm_calls_no_libm_exponential(op):
    """The LSTM's gate kernels, as a build compiles them: the exponential is arithmetic."""
    from tvm_partition import frontend
    from tvm_partition.build.executable import lower
    from tvm_partition.devices import parse_devices
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.planners.baselines import plan_cpu

    model = frontend.load("lstm", batch=2, seq_len=2, layers=1)
    graph = OpGraph(model.mod)
    mod, _ = lower(model.mod, plan_cpu(graph, parse_devices("cpu,cpu")), graph)
    gates = [f.script() for gv, f in mod.functions_items() if f"tir_{op}" in gv.name_hint]
    assert gates and not any(f"T.{op}(" in text or "T.exp(" in text for text in gates)


def _softmax_module(dtype: str, axis: int):
    @tvm.script.ir_module
    class Softmax:
        @R.function
        def main(x: R.Tensor((4, 6, 32), dtype)):
            with R.dataflow():
                y = R.nn.softmax(x, axis=axis)
                R.output(y)
            return y

    return Softmax


def test_softmax_over_the_last_axis_exponentiates_on_the_polynomial():
    legal = legalize_ops()(_softmax_module("float32", -1))
    [text] = [f.script() for gv, f in legal.functions_items() if gv.name_hint == "softmax"]
    assert 'T.sblock("T_fast_exp")' in text and "T.exp(" not in text
    ex = tvm.compile(legal, target=tvm.target.Target(cpu_target()))
    x = (np.random.default_rng(0).standard_normal((4, 6, 32)) * 10).astype("float32")
    x[0, 0, :3] = [-1e4, 1e4, 0.0]  # one element takes the whole row, one nothing
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.runtime.tensor(x)).numpy()
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("dtype,axis", [("float16", -1), ("float32", 1)])
def test_other_softmaxes_are_legalized_as_tvm_does(dtype, axis):
    ours = legalize_ops()(_softmax_module(dtype, axis))
    assert tvm_ffi.structural_equal(ours, relax.transform.LegalizeOps()(_softmax_module(dtype, axis)))


def _softmax_on(shape, vdevice=None):
    x = relax.Var("x", relax.TensorType(shape, "float32", vdevice=vdevice))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.nn.softmax(x, axis=-1)))
        bb.emit_func_output(out)
    mod = bb.get() if vdevice is None else tvm.IRModule(bb.get().functions, global_infos={"vdevice": [vdevice]})
    [text] = [f.script() for gv, f in legalize_ops()(mod).functions_items() if gv.name_hint.startswith("softmax")]
    return text


@pytest.mark.parametrize("row,tailed", [(197, True), (49, True), (20, False), (128, False), (7, False)])
def test_a_softmax_over_rows_of_no_whole_vector_keeps_its_maximum_and_sum_in_lanes(row, tailed):
    """Rows no whole number of 4-lane vectors fills, longer than one vector of 16, take
    ``tailed_softmax`` (the softmax template's partial results need whole vectors); the others keep
    ``fast_softmax``."""
    assert ('T.sblock("T_softmax_maxelem_lanes")' in _softmax_on((3, row))) == tailed


@pytest.mark.parametrize("how", ["vdevice", "current-target"])
def test_a_softmax_on_a_gpu_keeps_tvms_blocks(how):
    """dlight's reduction rules know ``fast_softmax``'s blocks, not ``tailed_softmax``'s: a build
    says a GPU by the virtual device, a GPU profile sample by the current target."""
    from tvm_partition.ir.legalize import under_gpu_target

    cuda = tvm.target.Target({"kind": "cuda", "arch": "sm_90"})
    if how == "vdevice":
        text = _softmax_on((3, 197), relax.VDevice(cuda, 0, "global"))
    else:
        with under_gpu_target(cuda):
            text = _softmax_on((3, 197))
    assert 'T.sblock("T_softmax_maxelem")' in text and "T_softmax_maxelem_lanes" not in text


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_isnan_and_isinf_test_the_bits_and_vectorise(dtype):
    """``isnan`` / ``isinf`` legalized as tests of the bits (TVM's ``tir.isnan`` scalarises the loop
    around it): every special value as numpy says, and a vectorised loop of them compiles to
    vector compares, no scalar one."""
    @tvm.script.ir_module
    class Tests:
        @R.function
        def main(x: R.Tensor((4, 16), dtype)):
            with R.dataflow():
                y = (R.isnan(x), R.isinf(x))
                R.output(y)
            return y

    legal = legalize_ops()(Tests)
    funcs = {gv.name_hint: f for gv, f in legal.functions_items() if isinstance(f, tvm.tirx.PrimFunc)}
    assert {"tir_isnan", "tir_isinf"} <= set(funcs)
    assert not any(f"T.{t}(" in f.script() for f in funcs.values() for t in ("isnan", "isinf"))
    info = np.finfo(dtype)
    bits = np.dtype(dtype.replace("float", "uint"))
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, info.max, -info.max, info.tiny,
                        info.smallest_subnormal, 1.0, -1.0], dtype)
    nans = (np.array([np.inf], dtype).view(bits) | 1).view(dtype)  # the NaN next to infinity (signalling)
    x = np.resize(np.concatenate([special, nans, -nans]), (4, 16)).astype(dtype)
    vm = relax.VirtualMachine(tvm.compile(legal, target=tvm.target.Target(cpu_target())), tvm.cpu())
    nan, inf = (t.numpy() for t in vm["main"](tvm.runtime.tensor(x)))
    np.testing.assert_array_equal(nan, np.isnan(x))
    np.testing.assert_array_equal(inf, np.isinf(x))
    if dtype != "float32" or platform.machine() != "x86_64":
        return
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": funcs["tir_isnan"].with_attr("global_symbol", "main")}))
    block = sch.get_sblock("T_isnan")
    sch.vectorize(sch.get_loops(block)[-1])
    asm = tvm.compile(sch.mod, target=tvm.target.Target(cpu_target())).mod.inspect_source("asm")
    assert "vucomiss" not in asm and "ucomiss" not in asm
