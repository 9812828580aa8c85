"""FenceCopies: no kernel crosses a cross-device copy in TVM's fusion.

:class:`tvm_partition.passes.ApplyPlan` emits every split op in the order that lets its parts
overlap (EOP Sec. 3.1, Eq. 2): inputs copied, GPU part launched, CPU part run, copy back, concat.
TVM 0.27's VM runs that order as written, and every copy (``vm.builtin.to_device``) waits for the
devices it touches. ``FuseOps`` regroups a dataflow block and emits the groups in its own
topological order (``TopoSortByGroupDep``), where a group runs at its first member's place: in
LSTM's ``eop`` plan on ``cpu,gpu`` an element-wise op joined the part group of an earlier split op,
and both GPU parts of the last step's gate matmuls ran before the copy the CPU parts needed, which
then waited for them; in Inception-v3's ``equal`` plan the GPU part of a 1x1 convolution ran ahead
of the copy of its input to the CPU (``tests/test_vm_order.py`` read both in the compiled program).

``FuseOps`` fuses and sorts within one dataflow block only, and blocks run in order. This pass
cuts ``main``'s dataflow block at every ``R.to_vdevice``: each copy is a block of its own, and the
kernels between two copies one block. A variable used outside the block that defines it becomes a
block output (a ``relax.Var``: FuseOps keeps it materialised), the others stay dataflow variables,
so everything between two copies fuses as before. A one-device build has no copy and is left as
it is. Run it after ``LegalizeOps`` and before ``FuseOps``.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.relax_utils import rebuilt

_TO_VDEVICE = tvm.ir.Op.get("relax.to_vdevice")


def _is_copy(binding) -> bool:
    return isinstance(binding.value, relax.Call) and binding.value.op.same_as(_TO_VDEVICE)


def segments(bindings) -> list[list]:
    """``bindings`` cut before and after every copy: kernels between copies together, each copy alone."""
    out, current = [], []
    for b in bindings:
        if _is_copy(b):
            if current:
                out.append(current)
            out.append([b])
            current = []
        else:
            current.append(b)
    if current:
        out.append(current)
    return out


@tvm.transform.module_pass(opt_level=0, name="FenceCopies")
class FenceCopies:
    def __init__(self, func_name: str = "main"):
        self.func_name = func_name

    def transform_module(self, mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        func = mod[self.func_name]
        blocks = func.body.blocks
        bindings = [b for block in blocks for b in block.bindings]
        if not any(_is_copy(b) for b in bindings):
            return mod
        if not all(isinstance(block, relax.DataflowBlock) for block in blocks) or not all(
                isinstance(b, relax.VarBinding) for b in bindings):
            return mod  # not the one dataflow block ApplyPlan and PropagateVDevice make: leave it to FuseOps
        return rebuilt(mod, self.func_name, segments=segments(bindings))
