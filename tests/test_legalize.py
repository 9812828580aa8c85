"""Each distinct call legalized once (tvm_partition/ir/legalize.py).

Oracle: TVM's own ``LegalizeOps`` (with the same fast-math legalizations), which legalizes every
call afresh: the two modules must be structurally equal, while ours legalizes fewer calls."""

from __future__ import annotations

import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

from tvm_partition.ir import legalize
from tvm_partition.ir.fastmath import LEGALIZE


@I.ir_module
class Repeats:
    I.module_global_infos({"vdevice": [I.vdevice("llvm", 0), I.vdevice("llvm", 1)]})

    @R.function
    def main(x: R.Tensor((4, 8), "float32", "llvm:0"), y: R.Tensor((4, 8), "float32", "llvm:0"),
             u: R.Tensor((4, 8), "float32", "llvm:1"), v: R.Tensor((4, 8), "float32", "llvm:1")):
        with R.dataflow():
            a = R.add(x, y)
            b = R.add(a, y)  # a repeat: the first add's kernel
            c = R.multiply(b, b)  # one variable twice: a call of its own
            d = R.multiply(a, c)  # two variables: another
            e = R.multiply(d, d)  # a repeat of c's
            f = R.strided_slice(e, axes=[1], begin=[0], end=[4])
            g = R.strided_slice(e, axes=[1], begin=[4], end=[8])  # other constants: another kernel
            h = R.sigmoid(R.add(f, g))
            w = R.add(u, v)  # the same add on the second virtual device (the same text): another call
            z = R.add(w, v)  # a repeat of it
            R.output(h, z)
        return (h, z)


def test_a_repeated_call_gets_the_kernel_of_the_first_and_the_module_is_tvms_own(monkeypatch):
    fresh = []
    positions = legalize._operand_positions
    monkeypatch.setattr(legalize, "_operand_positions", lambda out, call: fresh.append(call) or positions(out, call))
    ours = legalize.legalize_ops()(Repeats)
    tvm.ir.assert_structural_equal(ours, relax.transform.LegalizeOps(customize_legalize_map=LEGALIZE)(Repeats))
    # add, multiply(b, b), multiply(a, c), two slices, add of f and g, sigmoid, add on the second device
    assert len(fresh) == 8


@pytest.mark.parametrize("twice", [False, True])
def test_a_pass_object_run_on_two_modules_legalizes_each_its_own(twice):
    """The same pass on a second module: the kernels the first one was given are not reused."""
    pass_ = legalize.legalize_ops()
    first = pass_(Repeats)
    second = pass_(Repeats) if twice else first
    tvm.ir.assert_structural_equal(second, relax.transform.LegalizeOps(customize_legalize_map=LEGALIZE)(Repeats))


@I.ir_module
class RepeatedSplits:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")):
        with R.dataflow():
            a = R.split(x, 2, axis=1)
            b = R.split(y, 2, axis=1)  # a repeat, of a kernel with two outputs
            c = R.add(a[0], b[1])
            R.output(c)
        return c


def test_a_repeated_call_of_several_outputs_gets_the_kernel_of_the_first():
    """A kernel of a tuple of outputs (``split``: an ONNX LSTM's steps) reused: found by
    ``tests/test_onnx_rnn.py``, whose second layer's Split failed to legalize."""
    ours = legalize.legalize_ops()(RepeatedSplits)
    tvm.ir.assert_structural_equal(ours, relax.transform.LegalizeOps(customize_legalize_map=LEGALIZE)(RepeatedSplits))
    assert len([gv for gv in ours.get_global_vars() if gv.name_hint.startswith("split")]) == 1
