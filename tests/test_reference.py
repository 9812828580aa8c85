"""The check's reference build (``build/reference.py``): its kernels reordered, its outputs TVM's
default pipeline's to the bit (the oracle: TVM's own CPU build of the same module)."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.relax.backend.cpu_generic import pipeline as cpu_generic

from helpers import SMALL
from tvm_partition import frontend
from tvm_partition.build import reference
from tvm_partition.cli.compile import reference_outputs
from tvm_partition.devices import cpu_target


def _default_outputs(model) -> list[np.ndarray]:
    """TVM's default CPU pipeline, nothing reordered."""
    ex = tvm.compile(model.mod, target=tvm.target.Target(dict(cpu_target(), **{"opt-level": 0})))
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(v) for v in [*model.inputs.values(), *model.params]])
    return [o.numpy() for o in (out if not hasattr(out, "numpy") else [out])]


def _legalized(model) -> tvm.IRModule:
    with tvm.target.Target(cpu_target()):
        return tvm.transform.Sequential(cpu_generic.legalize_passes(None))(model.mod)


@pytest.mark.parametrize("level", ["level 0", "level 2"])
@pytest.mark.parametrize("name", ["resnet18", "bert-tiny", "lstm"])
def test_reference_is_the_default_pipelines_to_the_bit(name, level, monkeypatch):
    # convolutions (three reduction loops: their nesting kept), matmuls, softmax and layer norm
    # reductions, pools; LLVM level 2 vectorises the reordered loops without reassociating a sum
    monkeypatch.setattr(reference, "LARGE_FLOPS", 0.0 if level == "level 2" else float("inf"))
    model = frontend.load(name, **SMALL[name])
    ours, default = reference_outputs(model), _default_outputs(model)
    assert len(ours) == len(default)
    for a, b in zip(ours, default):
        np.testing.assert_array_equal(a, b)


def test_kernels_without_a_root_block_keep_their_loops():
    # TVM's dispatched scans and sorts are written without one (RoBERTa's position ids: a CumSum)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4, 64), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.cumsum(relax.op.sort(x, axis=1), axis=1))
        bb.emit_func_output(y)
    model = frontend.load(bb.get())  # its input drawn, seeded
    (ours,), (default,) = reference_outputs(model), _default_outputs(model)
    np.testing.assert_array_equal(ours, default)


def test_matmuls_and_convolutions_sum_outside_their_innermost_output_loop():
    mod = _legalized(frontend.load("resnet18", **SMALL["resnet18"]))
    reordered = 0
    for func in (f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc)):
        sch = tvm.s_tir.Schedule(tvm.IRModule({"main": reference.ordered(func)}))
        for block in sch.get_child_blocks(sch.get_sblock("root")):
            kinds = [v.iter_type for v in sch.get(block).iter_vars]
            loops = [sch.get(loop) for loop in sch.get_loops(block)]
            if not (2 in kinds and 0 in kinds and len(kinds) > 2):  # a reduction into a tensor
                continue
            bound = list(loops[-1].body.iter_values)  # the block variables' loops, in their order
            innermost = next(i for i, v in enumerate(bound) if v.same_as(loops[-1].loop_var))
            assert kinds[innermost] == 0, f"{sch.get(block).name_hint}: a reduction loop innermost"
            assert loops[0].kind == tvm.tirx.ForKind.PARALLEL
            reordered += 1
    assert reordered >= 3  # the convolutions and the classifier's matmul


def test_model_flops_counts_each_call():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((64, 32), "float32"))
    w = relax.Var("w", relax.TensorType((32, 32), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.op.matmul(x, w))
            z = bb.emit_output(relax.op.matmul(y, w))
        bb.emit_func_output(z)
    with tvm.target.Target(cpu_target()):
        mod = tvm.transform.Sequential(cpu_generic.legalize_passes(None))(bb.get())
    assert reference.model_flops(mod) == 2 * (2 * 64 * 32 * 32)  # one kernel, called twice
