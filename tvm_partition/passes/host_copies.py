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

:func:`share_packed_weights` applies the same fact to weights a schedule packs at load time
(:func:`tvm_partition.build.executable.lift_weight_packing`): two parts of a split whose axis does
not cut the weight (a convolution split by rows, a matmul by batch) each packed their own copy of
it, the same kernel on the same tensor. Measured (``bench --split-ops 2``, amd-epyc-znver3-2c,
2026-11-28): ResNet-18's (64 px) last 3x3 convolution, 512 channels (a 9.4 MB weight), split by
rows on ``cpu,cpu`` ran 0.543 ms against 0.301 whole, each part as slow as the whole where its
profile sample alone (its one weight hot in the cache) ran half the whole's time: the parts read
two 9.4 MB copies in turn.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import relax

from ..ir.relax_utils import copy_module, remove_uncalled

_TO_VDEVICE = tvm.ir.Op.get("relax.to_vdevice")
_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
#: The load-time function ``LiftTransformParams`` makes: where weights are packed.
TRANSFORM_PARAMS = "main_transform_params"


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
            src = self.visit_expr(binding.value.args[0])
            if isinstance(src, relax.Var):
                self.set_var_remap(binding.var, src)
                return None
            # a constant (FoldConstant folds the kernels that computed it): bound as it is
            return super().visit_var_binding_(relax.VarBinding(binding.var, src))
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


def _kernel(func: tvm.tirx.PrimFunc):
    """``func`` without what names or labels it: two packings that compare equal so compute the
    same tensor from the same input."""
    # "tvm_partition.schedule": build.executable.SCHEDULE_ATTR (passes import nothing of the build)
    return func.with_attr("global_symbol", "kernel").without_attr("tvm_partition.schedule")


@tvm.transform.module_pass(opt_level=0, name="SharePackedWeights")
def share_packed_weights(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """``mod`` whose load-time function packs each weight once for all CPU virtual devices: a
    ``call_tir`` of a kernel equal (:func:`_kernel`) to an earlier one's, on the same arguments
    (seen through CPU-to-CPU copies), becomes a copy of the earlier result (a copy
    :func:`elide_host_copies` then drops), and a kernel no longer called is removed."""
    names = {gv.name_hint: gv for gv in mod.get_global_vars()}
    if TRANSFORM_PARAMS not in names:
        return mod
    kernels = {gv: f for gv, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)}
    sharer = _Share(kernels)
    func = sharer.visit_expr(mod[TRANSFORM_PARAMS])
    if not sharer.shared:
        return mod
    out = copy_module(mod)
    out[names[TRANSFORM_PARAMS]] = func
    remove_uncalled(out, sharer.shared)
    return out


@relax.expr_functor.mutator
class _Share(relax.PyExprMutator):
    def __init__(self, kernels):
        super().__init__()
        self.kernels = kernels
        self.source: dict = {}  # var -> what it is: the var it copies (CPU to CPU), or (tuple, index)
        self.done: list = []  # (kernel, argument sources, result var) of the calls kept
        self.shared: list = []  # kernels whose calls were replaced

    def _origin(self, expr):
        return self.source.get(expr, expr)

    @staticmethod
    def _same(a, b) -> bool:
        """Two origins are one tensor (vars by identity, ``(tuple, index)`` item by item)."""
        if isinstance(a, tuple) or isinstance(b, tuple):
            return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                    and all(_Share._same(x, y) for x, y in zip(a, b)))
        return a.same_as(b) if hasattr(a, "same_as") else a == b

    def visit_var_binding_(self, binding):
        value = binding.value
        if host_copy(value):
            self.source[binding.var] = self._origin(value.args[0])
        elif isinstance(value, relax.TupleGetItem):  # LiftTransformParams reads a weight once per use
            self.source[binding.var] = (self._origin(value.tuple_value), int(value.index))
        elif isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR) and value.args[0] in self.kernels:
            gv, args = value.args[0], [self._origin(a) for a in value.args[1].fields]
            for kept, kept_args, result in self.done:
                if (self._same(tuple(args), tuple(kept_args))
                        and tvm_ffi.structural_equal(_kernel(self.kernels[gv]), _kernel(self.kernels[kept]))):
                    self.shared.append(gv)
                    copy = relax.op.to_vdevice(self.visit_expr(result), binding.var.ty.vdevice)
                    emit = self.builder_.emit if isinstance(binding.var, relax.DataflowVar) else self.builder_.emit_output
                    self.set_var_remap(binding.var, emit(copy))
                    return
            self.done.append((gv, args, binding.var))
        super().visit_var_binding_(binding)


@tvm.transform.module_pass(opt_level=0, name="MergeRepeatedParams")
def merge_repeated_params(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
    """``mod`` whose ``main`` takes each load-time tensor once. Run after :func:`elide_host_copies`.

    ``LiftTransformParams`` gives ``main`` one parameter per call site of a lifted weight transform,
    and :func:`share_packed_weights` and :func:`elide_host_copies` leave many of them the same
    tensor: an RNN packs its input weight for every time step, so the README's LSTM (sequence 100)
    took 207 arguments, 200 of them two packed weights repeated (8 distinct buffers), and every run
    passes every argument through the FFI (the run time this saved was within the VM's noise:
    0.985-1.003x, GRU and LSTM, amd-epyc-znver3-2c, 2026-11-29). Where ``main_transform_params`` returns one variable at several positions, ``main``'s later
    parameters become the first, and the load-time function returns it once; the runner passes
    what that function returns, so both sides change together."""
    names = {gv.name_hint: gv for gv in mod.get_global_vars()}
    if TRANSFORM_PARAMS not in names or "main" not in names:
        return mod
    load, main = mod[TRANSFORM_PARAMS], mod["main"]
    if main.attrs is None or "num_input" not in main.attrs:
        return mod  # not the shape LiftTransformParams makes (it marks where main's inputs end)
    fields, lifted = _returned(load), list(main.params[int(main.attrs["num_input"]):])
    if fields is None or len(fields) != len(lifted):
        return mod
    kept, merged = [], {}
    for j, field in enumerate(fields):
        first = next(i for i in range(j + 1) if fields[i].same_as(field))
        if first == j:
            kept.append(field)
        else:
            merged[lifted[j]] = lifted[first]
    if not merged:
        return mod
    returned = relax.BlockBuilder().normalize(relax.Tuple(kept))
    out = copy_module(mod)
    out[names[TRANSFORM_PARAMS]] = relax.Function(load.params, relax.SeqExpr(list(load.body.blocks), returned),
                                                  returned.ty, load.is_pure, load.attrs)
    out[names["main"]] = main.bind_params(merged)
    return out


def _returned(func: relax.Function) -> list | None:
    """The fields of the tuple ``func`` returns (directly or through the variable it is bound to)."""
    body = func.body
    if not isinstance(body, relax.SeqExpr):
        return None
    value = body.body
    if isinstance(value, relax.Var):
        value = next((b.value for b in _bindings(func) if b.var.same_as(value)), None)
    return list(value.fields) if isinstance(value, relax.Tuple) else None
