"""What the profiler times: one fused op at one part size, built exactly as a split plan builds it.

A *sample* is ``(op, dim, size)``: the op's output with axis ``dim`` cut to ``size`` (EOP Sec. 3.2,
Step 1, which varies batch, HW and HW1W2). Its Relax function re-emits the op's high-level
bindings on operands of the part's shapes, which the split rules derive
(:meth:`tvm_partition.ir.graph.OpGraph.propagate`), so TVM's fusion turns it into the same PrimFunc
a plan with that split launches, and the tuning database, looked up by that PrimFunc, gives the
same schedule (:func:`lower_sample`). Sizes above the model's own extent are allowed along the
batch axis (EOP samples batch 1..1024); they must keep every operand's shape consistent, or the
size is dropped.

Communication samples (EOP Sec. 2.2: split, device copy, concat) are float32 tensors of a range
of sizes: the slice and concat kernels are built here, copies are timed by the runtime.
"""

from __future__ import annotations

import dataclasses
import math

from ..ir.graph import op_signature
from ..ir.split_rules import IllegalSplit, Region, is_tensor, shape_of, substitute_operands, tensor_operands

#: EOP Sec. 2.3: batch sizes are sampled from 1 to 1024.
MAX_BATCH = 1024
#: Samples whose tensors need more than this are skipped ("capped by memory").
MAX_SAMPLE_BYTES = 256 << 20
#: Tensor sizes (bytes) of the communication samples.
COMM_BYTES = tuple(4 << k for k in range(0, 25, 2))  # 4 B .. 64 MiB


@dataclasses.dataclass(frozen=True)
class Sample:
    """One op at one part size on one device."""

    sig: str
    op_id: str
    kind: str
    dim: int
    dim_name: str
    size: int  # extent of ``dim`` in this sample
    full: int  # extent of ``dim`` in the model
    shape: tuple[int, ...]  # output shape of the sample
    device: str  # device kind: cpu | gpu


def size_grid(full: int, extend: bool, points: int = 16, granule: int = 1) -> list[int]:
    """Sizes to sample along an axis of extent ``full``, in coarse-to-fine order.

    Within ``[1, full]``: the full extent, its halves, quarters... (bisection order, so a budget
    cut still leaves every op sampled at coarse resolution), up to ``points`` evenly spaced
    sizes, plus powers of two (tile boundaries, where steps appear). With ``extend`` (a batch
    axis), powers of two up to :data:`MAX_BATCH` are added after them. Sizes below ``full`` are
    rounded to multiples of ``granule``: the only part sizes a build cuts (:mod:`tvm_partition.build.align`);
    none is smaller than one granule. Sizes below it (the powers of two 1, 2, 4 of an axis cut
    in 8s) were samples no build launches, and bent the fits of the sizes builds do launch: on
    Zen 5 (2026-11-26) leaving them out took the held-out error of transferred kernels from 16.4%
    to 12.5%."""
    order: list[int] = []

    def add(n):
        n = int(n)
        if n != full:
            if n < granule:
                return
            n = round(n / granule) * granule
        if n >= 1 and n not in order:
            order.append(n)

    add(full)
    step = 2
    while step <= points:
        for k in range(1, step, 2):
            add(round(full * k / step))
        step *= 2
    p = 1
    while p < full:
        add(p)
        p *= 2
    if extend:
        while p <= MAX_BATCH:
            add(p)
            p *= 2
    return order


def samples_of(graph, device_kinds: list[str]) -> list[Sample]:
    """Every sample of every compute op of ``graph`` on each device kind, heaviest op first,
    each op's sizes in coarse-to-fine order. Ops with the same signature are sampled once; those
    whose sizes the data decides (``graph.cpu_only``: a non-maximum suppression, a ``NonZero``)
    are not: a sample's time would be that of the data it was drawn with."""
    out, seen = [], set()
    ops = sorted((op for op in graph.ops.values() if not op.is_view and op.id not in graph.cpu_only),
                 key=lambda o: -o.flops)
    for op in ops:
        sig = op_signature(op)
        if sig in seen:
            continue
        seen.add(sig)
        full_shape = tuple(op.output_shapes[-1])
        dims = sorted(op.split_dims) or [0]
        for dim in dims:
            if dim >= len(full_shape):
                continue
            extend = op.split_dims.get(dim) == "batch"
            sizes = (size_grid(full_shape[dim], extend, granule=op.granules.get(dim, 1)) if dim in op.split_dims
                     else [full_shape[dim]])
            for size in sizes:
                shape = full_shape[:dim] + (size,) + full_shape[dim + 1:]
                for dev in device_kinds:
                    out.append(Sample(sig, op.id, op.kind, dim, graph.dim_name(op, dim), size, full_shape[dim],
                                      shape, dev))
    return out


# ----------------------------------------------------------------------------- Relax functions
def _region_shape(expr, region: Region | None) -> tuple[int, ...]:
    shape = shape_of(expr)
    if region is None:
        return shape
    return shape[: region.axis] + (region.size,) + shape[region.axis + 1:]


def external_operands(graph, op) -> list:
    """What ``op`` reads from outside itself (earlier ops' outputs, model inputs, weights,
    constants), once each, in operand order: the parameters of :func:`sample_module`'s ``main``."""
    from tvm import relax

    member_vars = {graph.bindings[m].var for m in op.members}
    out: dict = {}  # insertion-ordered set
    for m in op.members:
        b = graph.bindings[m]
        operands = tensor_operands(b.value) if isinstance(b.value, relax.Call) else graph.free[m]
        out.update((o, None) for o in operands if o not in member_vars)
    return list(out)


def sample_module(graph, op, dim: int, size: int):
    """A module whose ``main`` computes ``op``'s output cut to ``size`` along ``dim`` from fresh
    params, with the model's own PrimFuncs that ``main`` calls (:func:`with_callees`: an
    ``F.normalize`` exported by PyTorch clips its norm by a ``call_tir`` of TOPI's maximum, and a
    sample without it failed every build of such a model: "There is no definition of
    I.GlobalVar("maximum")").

    Raises :class:`IllegalSplit` when the op cannot be computed at that size."""
    from tvm import relax

    from ..ir.relax_utils import substitute, with_callees

    full = shape_of(op.primary)[dim]
    region = None if size == full else Region(dim, 0, size)
    needs, rebuilds, _ = graph.propagate(op, region)
    bb = relax.BlockBuilder()
    params, env = [], {}

    def param_for(expr):
        if expr not in env:
            if is_tensor(expr):
                ty = relax.TensorType(_region_shape(expr, needs.get(expr)), expr.ty.dtype)
            else:
                ty = expr.ty
            env[expr] = relax.Var(f"in{len(params)}", ty)
            params.append(env[expr])
        return env[expr]

    # parameters first, in operand order, so the function signature is fixed before emitting
    for o in external_operands(graph, op):
        param_for(o)
    with bb.function("main", params, pure=True):
        with bb.dataflow():
            for m in op.members:
                b = graph.bindings[m]
                if not isinstance(b.value, relax.Call):
                    env[b.var] = bb.emit(substitute(b.value, lambda v: env[v]))
                    continue
                operands = [env[o] for o in tensor_operands(b.value)]
                rebuild = rebuilds.get(m)
                env[b.var] = bb.emit(rebuild(operands) if rebuild else substitute_operands(b.value, operands))
            outs = [env[o] for o in op.outputs]
            result = bb.emit_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
        bb.emit_func_output(result)
    func = bb.get()["main"]
    got = shape_of(env[op.primary])
    want = shape_of(op.primary)[:dim] + (size,) + shape_of(op.primary)[dim + 1:]
    if got != want:
        raise IllegalSplit(f"the op computes {got} instead of {want} at size {size}")
    nbytes = sum(math.prod(shape_of(p)) * 4 for p in params if is_tensor(p)) + math.prod(got) * 4
    if nbytes > MAX_SAMPLE_BYTES:
        raise IllegalSplit(f"the sample needs {nbytes / 2**20:.0f} MiB (cap {MAX_SAMPLE_BYTES >> 20} MiB)")
    return with_callees(func, graph.mod)


#: Kernels in the launch-overhead sample (:func:`launch_function`).
LAUNCH_CHAIN = 256


def launch_function(k: int = LAUNCH_CHAIN):
    """A Relax function of ``k`` chained one-element ``tanh`` kernels: run by the VM, its time over
    ``k`` is what one kernel launch costs beyond the kernel (dispatch, output allocation, call)."""
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1,), "float32"))
    with bb.function("main", [x], pure=True):
        with bb.dataflow():
            y = x
            for _ in range(k):
                y = bb.emit(relax.op.tanh(y))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


#: Views in the view-overhead sample (:func:`view_function`).
VIEW_CHAIN = 256


def view_function(k: int = VIEW_CHAIN):
    """A Relax function of one one-element ``tanh`` kernel and ``k`` chained views of its output
    (``R.memory.view`` + ``R.memory.ensure_zero_offset``: what a split's rows and a part written
    into its join are): run by the VM, its time over ``k`` is what one view costs it (two calls,
    no kernel)."""
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1,), "float32"))
    with bb.function("main", [x], pure=True):
        with bb.dataflow():
            y = bb.emit(relax.op.tanh(x))  # computed in main: a view of an argument is none over RPC
            for _ in range(k):
                y = bb.emit(relax.op.memory.ensure_zero_offset(bb.emit(relax.op.memory.view(y, [1], "float32", 0))))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


#: Arguments beyond the first in the argument-overhead sample (:func:`args_function`).
ARG_CHAIN = 64


def args_function(k: int = ARG_CHAIN):
    """A Relax function of one one-element ``tanh`` kernel, as the ``run`` sample, with ``k``
    one-element tensor arguments more: run by the VM from Python, what it takes beyond that run,
    over ``k``, is what each argument of ``main`` costs a run (its conversion in the call, the VM's
    check of its type and shape). 0.105 us an argument on a Zen 4, beside 0.77 us for a run of one
    argument (2026-11-30): a model's ``main`` takes its inputs and every weight, and the one-op GRU
    and LSTM rows of ``bench --split-ops`` (3-4 arguments, 4.5-9 us) were predicted 0.2-0.3 us low
    without them. The log's record keeps ``k`` as its ``kernels`` (the chain's length, as the other
    chains')."""
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1,), "float32"))
    extra = [relax.Var(f"a{i}", relax.TensorType((1,), "float32")) for i in range(k)]
    with bb.function("main", [x, *extra], pure=True):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.tanh(x)))
        bb.emit_func_output(out)
    return bb.get()


#: Storages beyond the first in the storage-overhead samples (:func:`alloc_function`).
ALLOC_CHAIN = 63


def alloc_function(k: int = ALLOC_CHAIN, alive: bool = True):
    """A Relax function of ``k + 1`` one-element ``tanh`` kernels of its argument, summed by ``k``
    ``add`` kernels: with ``alive``, every ``tanh`` first, so that all their outputs live at once
    and the VM allocates a storage for each (``vm.builtin.alloc_storage`` every run: the static
    memory plan reuses a storage only once its tensor is dead); else each added as soon as it is
    made, the same kernels in storages that take turns. The two runs' difference over ``k`` is what
    a storage costs a run: 0.14-0.22 us on a Zen 4 (three timings of 64 kernels, 2026-11-30; the
    profile's record 0.175), where a split's slices of the model's inputs each take one: the
    LSTM's gate matmul split four ways ran 5 ``alloc_storage`` a run where its whole op runs 1, and
    was predicted 9% low. The log's records keep ``k`` as their ``kernels`` (as the ``arg`` chain)."""
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1,), "float32"))
    with bb.function("main", [x], pure=True):
        with bb.dataflow():
            if alive:
                made = [bb.emit(relax.op.tanh(x)) for _ in range(k + 1)]
                y = made[0]
                for t in made[1:]:
                    y = bb.emit(relax.op.add(y, t))
            else:
                y = bb.emit(relax.op.tanh(x))
                for _ in range(k):
                    y = bb.emit(relax.op.add(y, bb.emit(relax.op.tanh(x))))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


#: The chain each ``comm`` record of the VM's own costs times (:func:`launch_module`): ``alloc``
#: and ``alloc0`` are :func:`alloc_function`'s two orders, alive and taking turns.
CHAINS = {"launch": launch_function, "run": launch_function, "view": view_function, "arg": args_function,
          "alloc": alloc_function, "alloc0": lambda k: alloc_function(k, alive=False)}


def chain_arguments(comm: str, k: int) -> int:
    """The tensors ``main`` of chain ``comm`` of length ``k`` takes (:data:`CHAINS`)."""
    return 1 + k if comm == "arg" else 1


def launch_module(k: int, device, comm: str = "launch"):
    """The chain ``comm`` times (:data:`CHAINS`, of ``k`` kernels or views) for ``device``: on a GPU
    legalized and given dlight's schedules first (:func:`tvm_partition.build.gpu_schedules.schedule_gpu`;
    unscheduled TIR does not build for CUDA)."""
    import tvm

    from ..build.gpu_schedules import schedule_gpu
    from ..ir.legalize import legalize_ops

    mod = CHAINS[comm](k)
    if device.kind != "gpu":
        return mod
    mod = legalize_ops()(mod)
    target = device.tvm_target()
    placed = {}
    for gv, f in mod.functions_items():
        if isinstance(f, tvm.tirx.PrimFunc):
            mod[gv] = f.with_attr("target", target)
            placed[gv.name_hint] = device.name
    return schedule_gpu(mod, placed, [device])


def comm_module(kind: str, nbytes: int):
    """The module (its Relax ``main``) of a communication op on a float32 tensor of ``nbytes`` (>= 8 bytes):
    ``slice`` takes the first half of it, ``concat`` joins two halves into it."""
    from tvm import relax

    n = max(2, nbytes // 4)
    n -= n % 2
    bb = relax.BlockBuilder()
    if kind == "slice":
        x = relax.Var("x", relax.TensorType((n,), "float32"))
        with bb.function("main", [x], pure=True):
            with bb.dataflow():
                y = bb.emit_output(bb.emit(relax.op.strided_slice(x, [0], [0], [n // 2])))
            bb.emit_func_output(y)
    elif kind == "concat":
        a = relax.Var("a", relax.TensorType((n // 2,), "float32"))
        b = relax.Var("b", relax.TensorType((n // 2,), "float32"))
        with bb.function("main", [a, b], pure=True):
            with bb.dataflow():
                y = bb.emit_output(bb.emit(relax.op.concat([a, b], axis=0)))
            bb.emit_func_output(y)
    else:
        raise ValueError(f"unknown communication op {kind!r}")
    return bb.get()


# ----------------------------------------------------------------------------- kernels
@dataclasses.dataclass
class KernelLibrary:
    """Sample kernels of one device built into one library.

    ``kernels`` maps a kernel (symbol) name to its argument specs ``[[shape, dtype], ...]`` and
    whether it runs a tuned schedule; ``samples`` maps a sample id to the kernels it launches, in
    order (most ops launch one; a view launches none)."""

    module: object  # what tvm.compile returned
    device: str
    target: dict
    kernels: dict[str, dict]
    samples: dict[str, list[str]]


def lower_sample(mod, target=None) -> list:
    """``[(name, kernel)]``: the kernels (``kernel_module`` form, in launch order) TVM's fusion makes
    of a sample module's ``main``, with TVM's names for them; legalized under ``target`` where it is
    a GPU's, as a build legalizes that device's ops (:func:`tvm_partition.ir.legalize.under_gpu_target`:
    TOPI's GPU scatter, without which ``profile --devices cpu,gpu`` of a model with an
    ``index_fill`` failed, "no dlight GPU schedule applies to kernel k0_scatter_elements")."""
    import tvm
    from tvm import relax

    from ..build.tuning import kernel_module
    from ..ir.legalize import legalize_ops, under_gpu_target

    fuse = tvm.transform.Sequential([
        legalize_ops(), relax.transform.AnnotateTIROpPattern(), relax.transform.FoldConstant(),
        relax.transform.FuseOps(), relax.transform.FuseTIR(),
    ])
    with under_gpu_target(target):
        lowered = fuse(mod)
    call_tir = tvm.ir.Op.get("relax.call_tir")
    names: list[str] = []

    def visit(expr):
        if isinstance(expr, relax.Call) and expr.op.same_as(call_tir):
            names.append(expr.args[0].name_hint)

    relax.analysis.post_order_visit(lowered["main"].body, visit)
    return [(n, kernel_module(lowered[n])) for n in names]


def kernel_args(func) -> list:
    """``[[shape, dtype], ...]`` of a PrimFunc's buffers: how a bundle says what to call a kernel
    with (:func:`tvm_partition.cost_models.timing.random_tensor` draws them there)."""
    return [[[int(x) for x in buf.shape], str(buf.dtype)] for buf in func.params]


def build_library(modules: dict[str, object], device, schedules=None, gpu_rules: tuple[str, ...] | None = None
                  ) -> KernelLibrary:
    """Lower each sample (id -> :func:`sample_module` or :func:`comm_module`) with TVM's fusion, give its kernels the
    schedules a build would (:class:`tvm_partition.build.tuning.Schedules`: tuned where this machine's
    database has a record, transferred where another record of the same computation replays;
    dlight on a GPU, TVM's default llvm pipeline otherwise), and compile all distinct kernels of
    ``device`` into one library. Each kernel says its ``schedule``: tuned, transferred or default.
    ``gpu_rules``: the dlight rules a GPU kernel may take (default: a build's)."""
    import tvm
    import tvm_ffi

    from ..build.templates import without_packing
    from ..build.gpu_schedules import GPU_RULES, schedule_gpu
    from ..build.tuning import apply_schedules

    target = device.tvm_target()
    prims, by_hash, samples = {}, {}, {}
    for sid, sample in modules.items():
        names = []
        for callee, kmod in lower_sample(sample, target):
            h = tvm_ffi.structural_hash(kmod)
            if h not in by_hash:
                name = f"k{len(by_hash)}_{callee}"[:60]
                by_hash[h] = name
                prims[name] = kmod["main"].with_attr("global_symbol", name).with_attr("target", target)
            names.append(by_hash[h])
        samples[sid] = names
    mod = tvm.IRModule({tvm.ir.GlobalVar(n): f for n, f in prims.items()})
    placed = {n: device.name for n in prims}
    mod, labels = apply_schedules(mod, placed, [device], schedules)
    mod = schedule_gpu(mod, placed, [device], gpu_rules or GPU_RULES)
    mod = without_packing(mod)  # a build packs weights once at load: time the kernel on packed ones
    kernels = {}
    for gv, f in mod.functions_items():
        schedule = labels.get(gv.name_hint, "default").split()[0]  # tuned | transferred | default
        kernels[gv.name_hint] = {
            "args": kernel_args(f),
            "tuned": schedule == "tuned", "schedule": schedule,
        }
    module = tvm.compile(mod, target=target) if prims else None
    return KernelLibrary(module, device.kind, dict(device.target), kernels, samples)
