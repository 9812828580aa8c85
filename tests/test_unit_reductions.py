"""dlight's ``Fallback`` on a reduction over one element (tvm_partition.build.unit_reductions).

The kernel is MobileNetV2's at 32 px that the GPU proof's seventh run found wrong on an H200: a
depthwise convolution of one tap (a 3x3 window on a 1x1 map, its padding taps cut away), its bias
and ReLU6, at 8 channels instead of 960."""

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from tvm_partition.build import gpu_schedules, tuning, unit_reductions

F32 = "float32"  # a name, not a string in the annotations (pyflakes reads those as names)
C8 = (T.int64(1), T.int64(8), T.int64(1), T.int64(1))


@T.prim_func(private=True, s_tir=True)
def one_tap(x: T.Buffer(C8, F32), w: T.Buffer((T.int64(8), T.int64(1), T.int64(1), T.int64(1)), F32),
            bias: T.Buffer(C8, F32), out: T.Buffer(C8, F32)):
    T.func_attr({"tirx.noalias": True})
    conv = T.sblock_alloc_buffer(C8)
    biased = T.sblock_alloc_buffer(C8)
    for n, c, y, x_, rc, ry, rx in T.grid(T.int64(1), T.int64(8), T.int64(1), T.int64(1), T.int64(1), T.int64(1), T.int64(1)):
        with T.sblock("conv"):
            v_n, v_c, v_y, v_x, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [n, c, y, x_, rc, ry, rx])
            T.reads(x[v_n, v_c + v_rc, v_y + v_ry, v_x + v_rx], w[v_c, v_rc, v_ry, v_rx])
            T.writes(conv[v_n, v_c, v_y, v_x])
            with T.init():
                conv[v_n, v_c, v_y, v_x] = T.float32(0.0)
            conv[v_n, v_c, v_y, v_x] = conv[v_n, v_c, v_y, v_x] + x[v_n, v_c + v_rc, v_y + v_ry, v_x + v_rx] * w[v_c, v_rc, v_ry, v_rx]
    for n, c, y, x_ in T.grid(T.int64(1), T.int64(8), T.int64(1), T.int64(1)):
        with T.sblock("add"):
            v_n, v_c, v_y, v_x = T.axis.remap("SSSS", [n, c, y, x_])
            T.reads(conv[v_n, v_c, v_y, v_x], bias[v_n, v_c, v_y, v_x])
            T.writes(biased[v_n, v_c, v_y, v_x])
            biased[v_n, v_c, v_y, v_x] = conv[v_n, v_c, v_y, v_x] + bias[v_n, v_c, v_y, v_x]
    for n, c, y, x_ in T.grid(T.int64(1), T.int64(8), T.int64(1), T.int64(1)):
        with T.sblock("clip"):
            v_n, v_c, v_y, v_x = T.axis.remap("SSSS", [n, c, y, x_])
            T.reads(biased[v_n, v_c, v_y, v_x])
            T.writes(out[v_n, v_c, v_y, v_x])
            out[v_n, v_c, v_y, v_x] = T.max(T.min(biased[v_n, v_c, v_y, v_x], T.float32(6.0)), T.float32(0.0))


CUDA = tvm.target.Target({"kind": "cuda", "arch": "sm_90"})
GV = tvm.ir.GlobalVar("one_tap")


def _on(func, target):
    return func.with_attr("target", target)


def _run_on_cpu(func) -> tuple[np.ndarray, np.ndarray]:
    """``func``'s output built for the CPU, and the one-tap convolution's by numpy."""
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal(s).astype("float32") for s in ((1, 8, 1, 1), (8, 1, 1, 1)))
    bias = np.full((1, 8, 1, 1), 2.0, "float32")  # clip(bias) = bias: the miscompiled form adds it twice
    func = _on(func, tvm.target.Target("llvm")).with_attr("global_symbol", "main")
    lib = tvm.compile(tvm.IRModule({"main": func}), target="llvm")
    out = tvm.runtime.tensor(np.zeros((1, 8, 1, 1), "float32"))
    lib["main"](*(tvm.runtime.tensor(a) for a in (x, w, bias)), out)
    return out.numpy(), np.clip(x * w.reshape(1, 8, 1, 1) + bias, 0, 6)


def test_tvm_fallback_inlines_the_epilogue_into_a_one_element_reductions_init():
    """The TVM 0.27 fact the module works around: should a TVM upgrade fix it, this fails and the
    rewrite can go."""
    scheduled = gpu_schedules._dlight(GV, _on(one_tap, CUDA), "Fallback")
    assert unit_reductions.init_reads_buffers(scheduled) == ["conv"]


def test_a_one_element_reduction_is_a_map_that_computes_the_same():
    rewritten = unit_reductions.as_maps(one_tap)
    got, want = _run_on_cpu(rewritten)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_run_on_cpu(one_tap)[0], want, rtol=1e-6, atol=1e-6)  # the oracle's own check
    assert unit_reductions.as_maps(rewritten).same_as(rewritten)  # nothing left to rewrite


def test_the_gpu_schedule_of_a_one_element_reduction_has_no_epilogue_in_an_init():
    rule, scheduled = gpu_schedules.gpu_rule(GV, _on(one_tap, CUDA))
    assert rule == "Fallback"
    assert unit_reductions.init_reads_buffers(scheduled) == []


def test_a_schedule_with_an_epilogue_in_its_init_is_refused(monkeypatch):
    monkeypatch.setattr(unit_reductions, "as_maps", lambda func: func)
    with pytest.raises(tuning.TuningError, match="reduction init of kernel one_tap"):
        gpu_schedules.gpu_rule(GV, _on(one_tap, CUDA))
