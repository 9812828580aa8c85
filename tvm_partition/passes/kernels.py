"""GroupOps: every op of the plan is one kernel, the fused kernel of its OpGraph op, where ApplyPlan put it.

:class:`tvm_partition.passes.ApplyPlan` emits a split op's parts one after the other, after the
copies all of them need, so that the GPU part runs while the VM runs the CPU part. Left to TVM's
``FuseOps``, the kernels were regrouped and the groups moved:

* an elementwise op of a split op whose other producer is an earlier split op joined that op's
  part group (its first producer in binding order), not its own as in
  :class:`tvm_partition.ir.graph.OpGraph`; LSTM's ``eop`` plan on ``cpu,gpu``: the GPU parts of the
  last step's gate matmuls ran before the copy their CPU siblings needed, which waited for them;
* ``FuseOps`` emits a group where its first member stood, after every group it depends on
  (``OperatorFusor::TopoSortByGroupDep``, a depth-first walk of the groups' dependencies, not in
  binding order): Inception-v3's last block concatenates branches computed after its first concat
  (an op placed whole, whose bindings ApplyPlan emits in the model's order,
  :func:`tvm_partition.ir.emission.units`), and the walk pulled the 1x1 convolution's GPU part
  ahead of the copy of its input to the CPU (``equal`` plan, ``tests/test_vm_order.py``).

So the ops are grouped before ``FuseOps`` runs, as the OpGraph has them: the bindings ApplyPlan
emitted for one op placed whole, or for one part of a split op (legalized ``call_tir`` s and tuple
accesses), become one private Relax function with attribute ``Primitive``
(``relax.attr.kPrimitive``), called once where the last of them stood, which is where the
simulator runs the kernel (:meth:`tvm_partition.planners.simulate.Run.emit_member`). TVM 0.27
facts relied on (``src/relax/transform/fuse_ops.cc``, ``fuse_tir.cc``):

* ``FuseOps`` (``GraphCreator``) does not visit a Relax function with ``Primitive`` set, and gives
  a call that is not a ``call_tir`` (here: the call of such a function) pattern ``kOpaque``:
  nothing is fused into or out of it, and all of its inputs are defined before it, so no walk
  moves anything ahead of it;
* ``FuseTIR`` fuses every Relax function with ``Primitive`` set into one PrimFunc, as it does the
  groups ``FuseOps`` makes, and calls it with ``call_tir``: the kernel is the one
  :class:`~tvm_partition.ir.graph.OpGraph` found by running ``FuseOps`` on the unsplit model, and
  is named as ``FuseOps`` names groups (``fused_`` + its kernels).

What is left to ``FuseOps`` is the glue ApplyPlan adds (slices; the joins are opaque:
:mod:`tvm_partition.passes.joins`), priced by the simulator as tasks of their own. ApplyPlan marks
an op's bindings by their variables' name (``<KERNEL_PREFIX><n>_``): ``LegalizeOps`` and the other
passes before ``FuseOps`` rebind a binding under its name (the fact :mod:`tvm_partition.ir.graph`
relies on too). A group with a binding that is neither a ``call_tir`` nor a tuple access is left
to ``FuseOps``.
"""

from __future__ import annotations

import re

import tvm
from tvm import relax

from ..ir.relax_utils import substitute

#: Name prefix of the variables ApplyPlan binds an op's (or part's) values to: ``<KERNEL_PREFIX><n>_`` (the
#: BlockBuilder makes names unique by appending digits: the ``_`` ends the part's number).
KERNEL_PREFIX = "tvmp_kernel"
_KERNEL = re.compile(rf"^({KERNEL_PREFIX}\d+)_")

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


def kernel_name(n: int) -> str:
    return f"{KERNEL_PREFIX}{n}_"


def _kernel_of(binding) -> str | None:
    m = _KERNEL.match(binding.var.name)
    return m.group(1) if m else None


def _groupable(binding) -> bool:
    v = binding.value
    return isinstance(v, relax.TupleGetItem) or (isinstance(v, relax.Call) and v.op.same_as(_CALL_TIR))


def _leaves(expr) -> list:
    found = []
    substitute(expr, lambda x: found.append(x) or x)
    return found


def _primitive(bindings: list, outputs: list) -> tuple[relax.Function, list, str]:
    """One op's (or part's) bindings as a Relax function with ``Primitive`` set, like the groups of
    ``FuseOps`` (constants lifted to parameters: ``FuseOps``' ``lift_constants``); its arguments
    and its name."""
    inside = {b.var for b in bindings}
    args = []
    for b in bindings:
        for x in _leaves(b.value):
            if x not in inside and not any(x.same_as(a) for a in args):
                args.append(x)
    params = [relax.Var(a.name if isinstance(a, relax.Var) else f"param_{i}", a.ty) for i, a in enumerate(args)]
    kernels = [b.value.args[0].name_hint for b in bindings if isinstance(b.value, relax.Call)]
    bb = relax.BlockBuilder()
    env = {}

    def leaf(x):
        if x in env:
            return env[x]
        return next(p for a, p in zip(args, params) if x.same_as(a))

    with bb.function("kernel", params, attrs={"Primitive": 1}, pure=True, private=True):
        with bb.dataflow():
            for b in bindings:
                value = substitute(b.value, leaf)
                env[b.var] = bb.emit_output(value, name_hint=b.var.name) if b.var in outputs else bb.emit(value, name_hint=b.var.name)
            outs = [env[v] for v in outputs]
        bb.emit_func_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
    return bb.get()["kernel"], args, "fused_" + "_".join(kernels)


@tvm.transform.module_pass(opt_level=0, name="GroupOps")
class GroupOps:
    """Run after ``LegalizeOps`` / ``AnnotateTIROpPattern`` / ``FoldConstant`` and right before
    ``FuseOps``, on ``func_name`` (default ``main``)."""

    def __init__(self, func_name: str = "main"):
        self.func_name = func_name

    def transform_module(self, mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        func = mod[self.func_name]
        bindings = [b for block in func.body.blocks for b in block.bindings]
        groups: dict = {}
        for b in bindings:
            if _kernel_of(b):
                groups.setdefault(_kernel_of(b), []).append(b)
        groups = {k: bs for k, bs in groups.items() if all(_groupable(b) for b in bs)}
        if not groups:
            return mod
        used_by = {}  # var -> the groups reading it (None: a binding of no group, or main's result)
        for b in bindings:
            for x in _leaves(b.value):
                used_by.setdefault(x, set()).add(_kernel_of(b) if _kernel_of(b) in groups else None)
        for x in _leaves(func.body.body):
            used_by.setdefault(x, set()).add(None)
        last = {bs[-1].var: k for k, bs in groups.items()}

        bb = relax.BlockBuilder()  # main and the groups' functions: they replace / join mod's
        vmap = {}

        def leaf(e):
            return vmap.get(e, e)

        with bb.function(self.func_name, list(func.params), attrs=dict(func.attrs) if func.attrs else None, pure=True):
            with bb.dataflow():
                for b in bindings:
                    k = _kernel_of(b) if _kernel_of(b) in groups else None
                    if k is None:
                        vmap[b.var] = bb.emit(substitute(b.value, leaf), name_hint=b.var.name)
                        continue
                    if b.var not in last:
                        continue  # emitted with its group's last binding, where the simulator runs the kernel
                    members = groups[k]
                    outputs = [m.var for m in members if used_by.get(m.var, set()) - {k}]
                    prim, args, name = _primitive(members, outputs)
                    gv = bb.add_func(prim, name)
                    call = bb.emit(relax.Call(gv, [leaf(a) for a in args]), name_hint=k)
                    if len(outputs) == 1:
                        vmap[outputs[0]] = call
                    else:
                        for i, v in enumerate(outputs):
                            vmap[v] = bb.emit(relax.TupleGetItem(call, i), name_hint=v.name)
                out = bb.emit_output(substitute(func.body.body, leaf))
            bb.emit_func_output(out)
        out = tvm.IRModule(dict(mod.functions), attrs=mod.attrs, global_infos=mod.global_infos)
        for gv, f in bb.get().functions_items():
            out[self.func_name if gv.name_hint == self.func_name else gv] = f
        return out
