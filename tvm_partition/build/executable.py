"""Build: apply a Plan and compile one multi-device executable with TVM's Relax VM.

Pipeline (DESIGN.md, "TVM facts"):

1. :class:`~tvm_partition.passes.ApplyPlan` — split / to_vdevice / concat per the plan;
2. ``RealizeVDevice`` — every tensor gets its virtual device;
3. ``LiftTransformParams`` — weight slicing and weight copies move to ``main_transform_params``,
   run once at load time, never per inference;
4. TVM's fusion (the ``zero`` pipeline: LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps,
   FuseTIR), with the concats joining a split op's parts kept out of fused groups
   (:mod:`tvm_partition.passes.joins`) and no kernel fused or moved across a cross-device copy
   (:mod:`tvm_partition.passes.fences`);
5. :func:`attach_targets` — every PrimFunc gets the target of the device it runs on (FuseTIR
   drops the attribute, and a CUDA kernel without it silently compiles as host code);
6. dlight GPU schedules for the CUDA kernels (a CUDA PrimFunc without a schedule has no CUDA module);
7. :func:`link` with no target: each function compiles for its own device's target, through
   TVM's default Relax pipeline with each device's buffers planned apart (:func:`vm_pipeline`),
   ``main`` compiled to native code beside a bytecode twin for the kernel instrument.
"""

from __future__ import annotations

import collections
import dataclasses
import re
import time

import tvm
from tvm import relax

from ..devices import DeviceSpec
from ..errors import TvmPartitionError
from ..ir.legalize import legalize_ops
from ..ir.relax_utils import copy_module, rewrite_functions
from ..passes import (ApplyPlan, FenceCopies, PropagateVDevice, elide_host_copies, keep_joins_apart, merge_repeated_params,
                      share_packed_weights, slices_as_views, write_joins_in_place)
from ..passes.host_copies import TRANSFORM_PARAMS
from ..plan import Plan
from ..runtime.artifact import KERNELS_MAIN
from .gpu_schedules import schedule_gpu
from .tuning import apply_schedules, tuning_target


#: PrimFunc attribute naming the schedule a kernel got (:meth:`tvm_partition.build.tuning.Schedules.schedule`):
#: ``tuned`` or ``transferred from ...``; kernels without it run TVM's default schedule.
SCHEDULE_ATTR = "tvm_partition.schedule"


class BuildError(TvmPartitionError, RuntimeError):
    """The plan could not be compiled; the message says which kernel or device."""


@dataclasses.dataclass
class BuildResult:
    executable: object  # relax.VMExecutable
    module: tvm.IRModule  # the lowered module (before link's own pipeline)
    plan: Plan
    kernel_devices: dict[str, str]  # PrimFunc name -> device name
    compile_s: float


_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


def _out_type(call_tir: relax.Call):
    """The output type of a ``call_tir``: what says the device its kernel runs on."""
    return call_tir.ty_args[0] if call_tir.ty_args else call_tir.ty


def _call_sites(mod: tvm.IRModule, function: str | None = None):
    """(PrimFunc name, out type) for every call_tir in every relax function (``function``: in
    that one only)."""
    found = []

    def visit(expr):
        if isinstance(expr, relax.Call) and expr.op.same_as(_CALL_TIR):
            found.append((expr.args[0].name_hint, _out_type(expr)))

    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function) and function in (None, gv.name_hint):
            relax.analysis.post_order_visit(func.body, visit)
    return found


def kernel_calls(mod: tvm.IRModule) -> collections.Counter:
    """``{PrimFunc name: calls per run}`` of a lowered module's ``main`` (not of
    ``main_transform_params``, which runs once at load)."""
    return collections.Counter(name for name, _ in _call_sites(mod, "main"))


def _vdevice_of(ty):
    if isinstance(ty, relax.TupleType):
        for f in ty.fields:
            v = _vdevice_of(f)
            if v is not None:
                return v
        return None
    return getattr(ty, "vdevice", None)


def device_by_vdevice(devices: list[DeviceSpec], vdev) -> DeviceSpec:
    if vdev is None:
        return devices[0]
    kind = "gpu" if vdev.target.kind.name == "cuda" else "cpu"
    for d in devices:
        if d.kind == kind and d.index == int(vdev.vdevice_id):
            return d
    raise BuildError(f"no device of the plan matches virtual device {vdev.target.kind.name}:{vdev.vdevice_id}")


def attach_targets(mod: tvm.IRModule, devices: list[DeviceSpec]) -> tuple[tvm.IRModule, dict[str, str]]:
    """Give every PrimFunc the target of the device its call sites run on (a kernel called on
    devices of two targets first becomes a kernel a target: :func:`kernel_per_target`)."""
    mod = kernel_per_target(mod, devices)
    where: dict[str, DeviceSpec] = {}
    for name, ty in _call_sites(mod):
        dev = device_by_vdevice(devices, _vdevice_of(ty))
        first = where.setdefault(name, dev)
        if first.target != dev.target:
            raise BuildError(f"kernel {name} is called on two devices ({first.name}, {dev.name})")
    out = copy_module(mod)
    placed = {}
    for gv, func in mod.functions_items():
        if isinstance(func, tvm.tirx.PrimFunc):
            dev = where.get(gv.name_hint, devices[0])
            out[gv] = func.with_attr("target", dev.tvm_target())
            placed[gv.name_hint] = dev.name
    return out, placed


#: The attribute that tells a kernel's copy for another device from it, while it is added
_COPY_ATTR = "tvm_partition.copy_for"


def kernel_per_target(mod: tvm.IRModule, devices: list[DeviceSpec]) -> tvm.IRModule:
    """``mod`` where a PrimFunc called on devices of two targets is one a target: the calls on
    each further device call a copy, ``NAME_<device>``. Why: TVM legalizes the same op on the
    same shapes to one PrimFunc whatever the device (``BlockBuilder.add_func`` keeps one of
    structurally equal functions), and a conv2d's output carries no vdevice to tell them apart in
    its name: a bare conv2d split in halves by its channels over ``cpu,gpu`` was one kernel of
    both parts (the TCN of ``build/pytorch_models`` under ``equal``: "kernel conv2d is called on two
    devices (gpu, cpu)", 2026-11-30). Fused kernels are each group's own already."""
    first: dict[str, DeviceSpec] = {}
    moved: dict[tuple[str, str], str] = {}  # (kernel, device) -> its copy
    for name, ty in _call_sites(mod):
        dev = device_by_vdevice(devices, _vdevice_of(ty))
        if first.setdefault(name, dev).target != dev.target:
            moved.setdefault((name, dev.name), f"{name}_{dev.name}")
    if not moved:
        return mod
    bb = relax.BlockBuilder(copy_module(mod))
    copies = {}
    for (name, dev), new in moved.items():
        func = mod[mod.get_global_var(name)]
        if func.attrs is not None and "global_symbol" in func.attrs:
            func = func.with_attr("global_symbol", new)
        # tagged past add_func's merging of equal functions (it types the GlobalVar as calls need),
        # then untagged: a tuning record is looked up by the kernel as it is
        copies[new] = bb.add_func(func.with_attr(_COPY_ATTR, dev), new)
        bb.update_func(copies[new], func)

    @relax.expr_functor.mutator
    class Retarget(relax.PyExprMutator):
        def visit_call_(self, call):
            call = super().visit_call_(call)
            if not call.op.same_as(_CALL_TIR):
                return call
            new = moved.get((call.args[0].name_hint, device_by_vdevice(devices, _vdevice_of(_out_type(call))).name))
            if new is None:
                return call
            return relax.Call(call.op, [copies[new], *call.args[1:]], call.attrs, call.ty_args)

    return rewrite_functions(bb.get(), lambda _mod, _func: Retarget())


def lower(mod: tvm.IRModule, plan: Plan, graph=None, schedules=None) -> tuple[tvm.IRModule, dict[str, str]]:
    """Steps 1-6 of the pipeline: the module :func:`link` receives, and where each kernel runs.

    ``graph``: the OpGraph of ``mod`` if the caller has it (saves analysing the model again).
    ``schedules``: a :class:`tvm_partition.build.tuning.Schedules`; kernels it has a record for get
    their tuned schedule, kernels of the same computation at other extents a transferred one
    (attribute :data:`SCHEDULE_ATTR` says which), the others dlight (GPU) or TVM's default llvm
    pipeline (CPU)."""
    seq = tvm.transform.Sequential(
        [
            ApplyPlan(plan, graph=graph),
            relax.transform.DeadCodeElimination(["main"]),
            relax.transform.RealizeVDevice(),
            relax.transform.LiftTransformParams(),
            # TVM's fusion (the "zero" pipeline), with the vdevice of every kernel kept
            legalize_ops(),  # sigmoid, tanh, exp that vectorise (ir/fastmath.py), each distinct call once (ir/legalize.py)
            PropagateVDevice(),
            relax.transform.AnnotateTIROpPattern(),
            keep_joins_apart,  # a split op's parts stay apart from the concat joining them
            relax.transform.FoldConstant(),
            FenceCopies(),  # no kernel fused or moved across a cross-device copy
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
        ]
    )
    mod = seq(mod)
    mod, placed = attach_targets(mod, plan.devices)
    if schedules is not None:

        mod, labels = apply_schedules(mod, placed, plan.devices, schedules)
        for name, label in labels.items():
            gv = mod.get_global_var(name)
            mod[gv] = mod[gv].with_attr(SCHEDULE_ATTR, label)
        mod, placed = lift_weight_packing(mod, placed)
    mod = schedule_gpu(mod, placed, plan.devices)
    return mod, placed


#: Suffixes ``relax.transform.SplitLayoutRewritePreproc`` gives the two halves of a kernel whose
#: weights a schedule packs (:mod:`tvm_partition.build.templates`).
_PACKING, _PACKED = "_weight_prepack", "_prepacked"
#: :data:`SCHEDULE_ATTR` of a packing half: it runs once, in ``main_transform_params``
PACKING_LABEL = "packs weights (load time)"


def lift_weight_packing(mod: tvm.IRModule, placed: dict[str, str]) -> tuple[tvm.IRModule, dict[str, str]]:
    """Kernels with a weight-packing block (:mod:`tvm_partition.build.templates`) split in two, the
    packing lifted into ``main_transform_params`` (run once at load: TVM's second
    ``LiftTransformParams`` composes with the first, checked numerically in the tests), and
    ``placed`` renamed to match. Packing a weight per call would cost about what the packed
    kernel saves (a 2.4 MB weight of ResNet's 3x3 convolutions). Parts on CPU virtual devices
    that pack the same weight the same way share one packed copy
    (:func:`~tvm_partition.passes.share_packed_weights`)."""
    if not any(isinstance(f, tvm.tirx.PrimFunc) and f.attrs and "layout_free_buffers" in f.attrs
               for _, f in mod.functions_items()):
        return mod, placed
    mod = _split_layout_rewrite(mod)
    mod = PropagateVDevice()(mod)  # the packed weight stays on its weight's device
    mod = relax.transform.LiftTransformParams()(mod)
    # and where its weight was a parameter of main with none (a padded weight: R.nn.pad infers no
    # vdevice): a one-tile packing is a reshape to RewriteDataflowReshape, which renames a variable
    # whose type that changes and leaves the load-time function's result on the old one
    mod = PropagateVDevice(TRANSFORM_PARAMS)(mod)
    mod = share_packed_weights(mod)
    names = {gv.name_hint for gv in mod.get_global_vars()}
    for name in [n for n in names if n + _PACKED in names]:  # the kernels split in two, now uncalled
        del mod[mod.get_global_var(name)]
        names.discard(name)
    out = {}
    for name, dev in placed.items():
        for suffix in ("", _PACKING, _PACKED):
            if name + suffix in names:
                out[name + suffix] = dev
    for name in names:
        if name.endswith(_PACKING):
            gv = mod.get_global_var(name)
            mod[gv] = mod[gv].with_attr(SCHEDULE_ATTR, PACKING_LABEL)
    return mod, out


def _split_layout_rewrite(mod: tvm.IRModule) -> tvm.IRModule:
    """``relax.transform.SplitLayoutRewritePreproc`` on the kernels that pack weights only. TVM
    0.27's pass walks every kernel's body for blocks and fails ("There should be a compute block if
    there is only one subtree under the root") on a kernel that has none: TOPI's ``scatter_elements``
    and ``scatter_nd`` are written with the IR builder (a SegNet's unpooling beside a convolution
    template's packed weights). The other kernels are set aside and put back unchanged."""
    aside = {gv: f for gv, f in mod.functions_items()
             if isinstance(f, tvm.tirx.PrimFunc) and not (f.attrs and "layout_free_buffers" in f.attrs)}
    kept = tvm.IRModule({gv: f for gv, f in mod.functions_items() if gv not in aside}, attrs=mod.attrs,
                        global_infos=mod.global_infos)
    split = relax.transform.SplitLayoutRewritePreproc()(kept)
    for gv, f in aside.items():
        split[gv] = f
    return split


def kernel_schedules(mod: tvm.IRModule) -> dict[str, str]:
    """``{kernel: tuned | transferred from ... | default}`` for every kernel of a lowered module."""
    return {gv.name_hint: str(f.attrs.get(SCHEDULE_ATTR, "default")) if f.attrs else "default"
            for gv, f in sorted(mod.functions_items(), key=lambda kv: kv[0].name_hint)
            if isinstance(f, tvm.tirx.PrimFunc)}


def run_kernel_schedules(mod: tvm.IRModule) -> dict[str, str]:
    """:func:`kernel_schedules` of the kernels a run launches: without the weight packing, which
    runs once at load."""
    return {k: v for k, v in kernel_schedules(mod).items() if v != PACKING_LABEL}


def tuned_kernels(mod: tvm.IRModule) -> list[str]:
    """Kernels of a lowered module that run their own record of the tuning database."""
    return [name for name, label in kernel_schedules(mod).items() if label == "tuned"]


#: Suffix :func:`scope_storage_by_device` gives the storage scope of tensors off the first vdevice.
_DEVICE_SCOPE = ".tvm_partition.vdevice"
_ALLOC_TENSOR = tvm.ir.Op.get("relax.builtin.alloc_tensor")
_ALLOC_STORAGE = tvm.ir.Op.get("relax.memory.alloc_storage")


def _rescoped(mod: tvm.IRModule, scope_of) -> tvm.IRModule:
    """``mod`` with the storage scope argument of every ``builtin.alloc_tensor`` and
    ``memory.alloc_storage`` call replaced by ``scope_of(scope, vdevice index)``."""

    @relax.expr_functor.mutator
    class Rescope(relax.PyExprMutator):
        def visit_call_(self, call):
            call = super().visit_call_(call)
            where = {_ALLOC_TENSOR: 3, _ALLOC_STORAGE: 2}
            op = next((o for o in where if call.op.same_as(o)), None)
            if op is None:
                return call
            i = where[op]  # the scope; the vdevice index comes before it
            vdev = call.args[i - 1]
            if not isinstance(vdev, tvm.tirx.IntImm):
                return call
            scope = scope_of(call.args[i].value, int(vdev))
            return relax.Call(call.op, [*call.args[:i], tvm.ir.StringImm(scope), *call.args[i + 1:]], call.attrs,
                              call.ty_args)

    out = copy_module(mod)
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            out[gv] = Rescope().visit_expr(func)
    return out


@tvm.transform.module_pass(opt_level=0, name="ScopeStorageByDevice")
def scope_storage_by_device(mod, _ctx):
    """Tell ``StaticPlanBlockMemory`` the devices apart: every tensor allocation off vdevice 0 gets
    a storage scope naming its vdevice, so the planner (which pools storage by scope and dtype
    only) never hands one device's buffer to another's tensor; :func:`unscope_storage` restores
    the scope afterwards."""
    return _rescoped(mod, lambda scope, vdev: scope if vdev == 0 else f"{scope}{_DEVICE_SCOPE}{vdev}")


@tvm.transform.module_pass(opt_level=0, name="UnscopeStorage")
def unscope_storage(mod, _ctx):
    """Undo :func:`scope_storage_by_device` after memory planning (the runtime allocates only the
    scopes it knows)."""
    return _rescoped(mod, lambda scope, vdev: scope.split(_DEVICE_SCOPE)[0])


def vm_pipeline(off_host: bool) -> tvm.transform.Pass:
    """TVM 0.27's default Relax build pipeline; where any kernel runs off the host device, its
    static memory planning sees each device's tensors apart (:func:`scope_storage_by_device`):
    ``StaticPlanBlockMemory`` pools storage by (scope, dtype) only, so it would hand a buffer
    allocated on one device to a tensor of another ("expected to match device_id" at run time, seen
    on cpu,cpu). Builds used to leave the planning out instead, and every intermediate tensor was
    allocated at every run: an LSTM split on cpu,cpu made 174 storage allocations per inference
    where its one-device build made 14 (27 now), about a third of its time (``run --kernels``,
    2026-11-23).

    Every build, ``off_host`` or not, binds the copies between two CPU virtual devices to their
    source (:func:`~tvm_partition.passes.elide_host_copies`, after ``ToNonDataflow``: a block output
    bound to a dataflow variable would be read outside its block): a split whose two parts are the
    same kernel on ``cpu`` and ``cpu1`` compiles it once, placed on ``cpu``, so a build that copies
    to ``cpu1`` may launch nothing there. Then the parts of a split that are aligned blocks of their
    join write into it (:func:`~tvm_partition.passes.write_joins_in_place`: the planner after it
    sees one allocation where it saw three, and no concat). First of all, a slice kernel on a CPU
    that copies one aligned block of a tensor ``main`` computes becomes a view of it
    (:func:`~tvm_partition.passes.slices_as_views`: the groups of an ungrouped convolution)."""
    t = relax.transform
    planned = [scope_storage_by_device, t.StaticPlanBlockMemory(), unscope_storage] if off_host else [
        t.StaticPlanBlockMemory()]
    return tvm.transform.Sequential(  # relax.get_pipeline("default") of TVM 0.27, plus the passes above
        [
            relax.backend.DispatchSampling(), relax.backend.DispatchSortScan(), t.LegalizeOps(), slices_as_views,
            t.RewriteDataflowReshape(), t.ToNonDataflow(), t.RemovePurityChecking(), t.CallTIRRewrite(),
            elide_host_copies, merge_repeated_params, write_joins_in_place, *planned,
            t.RewriteCUDAGraph(), t.LowerAllocTensor(), t.KillAfterLastUse(), t.LowerRuntimeBuiltin(),
            t.ComputePrimValue(), t.VMShapeLower(), t.AttachGlobalSymbol(),
        ]
    )


def link_pipeline(lowered: tvm.IRModule, placed: dict[str, str], host: str) -> tvm.transform.Pass:
    """:func:`vm_pipeline` for ``lowered`` (:func:`lower`'s module and placement): ``off_host`` where
    any of its kernels runs off the ``host`` device."""
    return vm_pipeline(any(placed.get(name, host) != host for name, _ in _call_sites(lowered)))


def link(mod: tvm.IRModule, pipeline: tvm.transform.Pass):
    """``relax.build(mod, relax_pipeline=pipeline, exec_mode="compiled")`` (no target: each
    function has its own), plus a bytecode twin of ``main`` named
    :data:`~tvm_partition.runtime.artifact.KERNELS_MAIN` that calls the same kernels in the same
    order.

    Why compiled: the bytecode VM interprets every instruction of ``main`` (an allocation, the call,
    a register cleared after it), and models of many small kernels pay it at every launch. Paired 5
    rounds of fresh processes (2026-11-26, amd-epyc-znver5-2c, LSTM seq 10 on ``cpu,cpu``): ``cpu``
    148.3 -> 133.1 us (0.906x), ``equal`` 183.9 -> 153.6 us (0.835x), so a split costs 1.15x where it
    cost 1.25x; ResNet-18 (64 px) the same within noise (2026-11-26 morning). Why the twin: compiled
    code calls its kernels directly, past the VM's instrument, so ``run --kernels`` and
    :mod:`tvm_partition.build.vm_order` (which reads ``as_text()``) read the twin. It costs the
    bytecode only; the kernels are compiled once (an LSTM ``equal`` ``model.so`` 438 -> 479 KB).
    TVM 0.27 exposes the two codegens as ``relax.vm_build._vmcodegen``'s ``VMCodeGen`` and
    ``VMTIRCodeGen``, which one ``ExecBuilder`` can take in turn; ``_vmlink`` is ``relax.build``'s
    own last step.

    A program of more than :data:`COMPILED_CALLS` calls stays in bytecode: LLVM's cost on the
    compiled program grows with the square of its length (its -O3 ``MemCpyOptPass``, ARCHITECTURE.md)
    and the gain does not. ``benchmarks/vm_modes.py`` (2026-11-29, amd-epyc-znver3-2c): the LSTM at
    sequence 10 (288 calls) links in 1.7 s compiled against 1.3 s in bytecode, at sequence 100 (2,898
    calls, the README's model) 50.0 s against 4.5, its ``equal`` build (5,804) 323.5 s against 12.0;
    the compiled program ran 0.967x and 0.993x the bytecode's there (0.96-1.03x at sequence 10).

    Only ``main`` is compiled: the module's other functions (``main_transform_params``, which packs
    the weights once at load time) stay in bytecode, where the VM's per-instruction cost is paid
    once per load. Compiled, DenseNet-121's (onnx light, ``cpu``) took 131 of the 144 s LLVM spent
    on the whole build, every kernel together 13 (each function built alone, 2026-12-03,
    amd-epyc-znver5-2c)."""
    from tvm.relax import vm_build

    mod = pipeline(mod)
    kernels = {gv: f for gv, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)}
    twin = tvm.IRModule(kernels, attrs=mod.attrs)
    twin[KERNELS_MAIN] = mod["main"].with_attr("global_symbol", KERNELS_MAIN)
    builder = relax.ExecBuilder()
    vm_build._vmcodegen(builder, twin, "bytecode")
    others = {gv: f for gv, f in mod.functions_items() if isinstance(f, relax.Function) and gv.name_hint != "main"}
    if others:  # the weights' packing at load time (main_transform_params): bytecode (docstring)
        vm_build._vmcodegen(builder, tvm.IRModule({**kernels, **others}, attrs=mod.attrs), "bytecode")
        mod = tvm.IRModule({gv: f for gv, f in mod.functions_items() if gv not in others}, attrs=mod.attrs)
    leftover = vm_build._vmcodegen(builder, mod, "compiled" if program_calls(mod["main"]) <= COMPILED_CALLS else "bytecode")
    attrs = dict(mod.attrs) if mod.attrs else {}
    return vm_build._vmlink(builder, None, vm_build._filter_tir(leftover),
                            ext_libs=list(attrs.get("external_mods", [])),
                            params=dict(attrs.get("const_name_to_constant", {})))


#: The longest VM program :func:`link` compiles to native code, in calls (kernels and the VM's
#: builtins): LLVM spends about 5 s on it (about 5.4e-6 s x calls squared, measured above).
COMPILED_CALLS = 1000


def program_calls(func: relax.Function) -> int:
    """How many calls the VM program of ``func`` (lowered for the VM) makes."""
    calls = []
    relax.analysis.post_order_visit(func.body, lambda e: isinstance(e, relax.Call) and calls.append(e))
    return len(calls)


def build(mod: tvm.IRModule, plan: Plan, graph=None, schedules=None) -> BuildResult:
    """Apply ``plan`` to ``mod`` (high-level Relax, ``main`` with ``num_input``) and compile it,
    with the schedules ``schedules`` (:class:`tvm_partition.build.tuning.Schedules`) has for its kernels."""
    t0 = time.perf_counter()
    try:
        lowered, placed = lower(mod, plan, graph, schedules)
    except tvm.error.InternalError as e:  # a check of TVM's passes failed: its message, in one line
        raise BuildError(f"TVM could not lower the partitioned module: {e}") from e
    pipeline = link_pipeline(lowered, placed, plan.host)
    try:
        try:
            ex = link(lowered, pipeline)
        except Exception as e:  # TVM raises its own error types
            if LLVM_VERIFY not in str(e):
                raise
            ex = link(llvm_opt_level(lowered, 2), pipeline)
    except Exception as e:  # keep TVM's message
        raise BuildError(f"TVM could not compile the partitioned module: {e}") from e
    return BuildResult(ex, lowered, plan, placed, time.perf_counter() - t0)


#: What TVM's LLVM codegen says when LLVM's own verifier rejects the optimised module.
LLVM_VERIFY = "LLVM module verification failed"


def llvm_opt_level(mod: tvm.IRModule, level: int) -> tvm.IRModule:
    """``mod`` with its CPU kernels' targets at LLVM ``opt-level`` ``level`` (TVM's default: 3).

    Why: LLVM 22 (TVM 0.27's) at -O3 for AVX2 CPUs (``mcpu`` znver3, x86-64-v3; not x86-64-v4, not
    without ``mcpu``) emits ``shufflevector``s that do not dominate their uses in TVM's default
    schedule of a 1x1x5x6 stride-2 3x3 convolution + ReLU (a batch part of a split, found by
    ``tests/test_split_rules.py`` 2026-11-28) and its verifier rejects the module; at ``opt-level``
    2 the same kernel builds and matches. :func:`build` retries a module that failed so, whole."""
    out = copy_module(mod)
    for gv, func in mod.functions_items():
        target = func.attrs.get("target") if isinstance(func, tvm.tirx.PrimFunc) and func.attrs else None
        if target is not None and target.kind.name == "llvm":
            out[gv] = func.with_attr("target", tvm.target.Target({**target.export(), "opt-level": level}))
    return out


def cuda_sources(executable) -> list[str]:
    """The CUDA source of each CUDA module of the executable: built without a GPU, TVM 0.27 keeps
    it as source (format ``cuda``), which the GPU machine compiles with NVRTC when it loads it."""
    return [m.inspect_source() for m in _all_modules(executable.mod) if m.kind == "cuda"]


def cuda_kernel_names(executable) -> set[str]:
    """Names of the kernels in the executable's CUDA module (empty if it has none)."""
    names = set()
    for src in cuda_sources(executable):
        names.update(re.findall(r"__global__\s+void\s+(?:__launch_bounds__\(\d+\)\s+)?(\w+)\s*\(", src))
    return names


def _all_modules(mod):
    out, stack = [], [mod]
    while stack:
        m = stack.pop()
        out.append(m)
        stack.extend(m.imports)
    return out


def build_reference(mod: tvm.IRModule, plan: Plan, database=None) -> BuildResult:
    """The unpartitioned model built by TVM's own CPU flow, the ``tvm-cpu`` reference of the
    benchmarks: with a tuning ``database`` (:func:`tvm_partition.build.databases.open_database`), TVM's
    ``static_shape_tuning`` pipeline with no trials (decompose, fusion, ``MetaScheduleApplyDatabase``
    on that database), then ``tvm.compile`` for the plan's host CPU; without one, plain
    ``tvm.compile(mod, target)`` (no fusion). ``plan`` is the all-on-host plan the artifact records;
    kernels scheduled from the database are marked as tuned."""
    t0 = time.perf_counter()
    device = plan.devices[0]
    if database is not None:
        with database:  # MetaScheduleApplyDatabase takes the current database before its work_dir
            mod = relax.get_pipeline("static_shape_tuning", total_trials=0, target=tuning_target(device))(mod)
        mod = tvm.IRModule({gv: (f.with_attr(SCHEDULE_ATTR, "tuned") if isinstance(f, tvm.tirx.PrimFunc) and f.attrs
                                 and f.attrs.get("tirx.is_scheduled") else f) for gv, f in mod.functions_items()},
                           attrs=mod.attrs, global_infos=mod.global_infos)
    try:
        ex = tvm.compile(mod, target=device.tvm_target())
    except Exception as e:  # noqa: BLE001 - TVM's own error types; keep the message
        raise BuildError(f"TVM could not compile the unpartitioned module: {e}") from e
    kernels = {gv.name_hint: device.name for gv, f in mod.functions_items() if isinstance(f, tvm.tirx.PrimFunc)}
    return BuildResult(ex, mod, plan, kernels, time.perf_counter() - t0)
