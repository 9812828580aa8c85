"""ElideHostCopies: no copy between two CPU virtual devices of one process.

On ``cpu,cpu`` a plan has two CPU virtual devices, and :class:`tvm_partition.passes.ApplyPlan`
moves a tensor between them with ``R.to_vdevice`` as it would between a CPU and a GPU. TVM 0.27
lowers every such copy to ``vm.builtin.to_device``, which allocates a tensor on the other device
and copies the bytes (``Tensor::CopyTo``, ``src/runtime/vm/builtin.cc``) even where both devices
are host memory. Measured before this pass (``bench --quick --split-ops 2``, amd-epyc-znver4-2c,
2026-11-27): BERT-tiny's K = 512 matmul, placed whole on the second CPU with its operands on the
first, ran 2.94 ms against 1.97 on the first: ~1 ms of copies in and out, which every split part on
the second CPU paid too.

The two CPUs of one process are one memory, so this pass binds the destination of every copy
from a CPU virtual device to another CPU virtual device to its source: the consumer reads the
producer's buffer. The runtime gives every CPU virtual device the same TVM device, ``cpu(0)``
(:attr:`tvm_partition.devices.DeviceSpec.device_id`): a kernel's arguments must agree on their
``device_id`` (``MakePackedAPI`` binds it from the first tensor and asserts the others), so a
buffer of the first CPU read by a kernel of the second is legal only if both are ``cpu(0)``.
Copies to or from a GPU are left as they are.

Run it in the link pipeline before ``StaticPlanBlockMemory`` (:func:`tvm_partition.build.executable.vm_pipeline`):
the planner then sees the source live until its last reader on either device.
"""

from __future__ import annotations

import tvm
from tvm import relax

from ..ir.relax_utils import copy_module

_TO_VDEVICE = tvm.ir.Op.get("relax.to_vdevice")


def _on_cpu(vdevice) -> bool:
    """A tensor without a virtual device is on the host (the first device, a CPU)."""
    return vdevice is None or vdevice.target.kind.name == "llvm"


def host_copy(value) -> bool:
    """``value`` is a ``to_vdevice`` from a CPU virtual device to a CPU virtual device."""
    if not (isinstance(value, relax.Call) and value.op.same_as(_TO_VDEVICE)):
        return False
    src = getattr(value.args[0].ty, "vdevice", None)
    return _on_cpu(src) and _on_cpu(value.attrs.dst_vdevice)


@relax.expr_functor.mutator
class _Elide(relax.PyExprMutator):
    def visit_var_binding_(self, binding):
        if host_copy(binding.value):
            self.set_var_remap(binding.var, self.visit_expr(binding.value.args[0]))
            return None
        return super().visit_var_binding_(binding)


@tvm.transform.module_pass(opt_level=0, name="ElideHostCopies")
def elide_host_copies(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """Every Relax function of ``mod`` (``main`` and the load-time ``main_transform_params``)
    without its CPU-to-CPU copies."""
    found = [gv for gv, f in mod.functions_items()
             if isinstance(f, relax.Function) and any(host_copy(b.value) for b in _bindings(f))]
    if not found:
        return mod
    out = copy_module(mod)
    for gv in found:
        out[gv] = _Elide().visit_expr(mod[gv])
    return out


def _bindings(func: relax.Function):
    body = func.body
    if not isinstance(body, relax.SeqExpr):
        return []
    return [b for block in body.blocks for b in block.bindings if isinstance(b, relax.VarBinding)]
