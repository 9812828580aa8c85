"""What the templates share: the target's vectors and registers, a kernel's blocks as the templates
read them (:class:`_Nest`, :func:`_root_blocks`, :func:`_epilogue_operands_inlined`), and the
schedule steps every template takes (:func:`_opened`, :func:`_per_tile`, :func:`_packed`,
:func:`_in_vectors`)."""

from __future__ import annotations

import dataclasses
import functools
import math

import tvm

from ..transfer import root_children


#: Elements from which a kernel that only moves data (a transpose, a concat: :mod:`.elementwise`) or a row
#: template's (softmax, layer norm, reductions: :mod:`.reductions`) runs its rows in parallel; the
#: measurements that set it are :data:`.elementwise.MIN_ELEMENTS`'s.
MIN_MOVED_ELEMENTS = 1 << 16
#: Output pixels a register tile may hold, by vector registers: 14 of 32 measured best on AVX-512
#: (7: 1366 us, 14: 1108 us, 2x7 rows: 1106 us, 2x14 (spilling): 2483 us on the 3x3 convolution
#: above); 12 of 16 (AVX2) leaves a register for the weights and one for the broadcast: 14 there
#: ran 0.81-1.75x the time of 12's 8 x 1 and 7 x 1 tiles, slower on most (each kernel alone on 2
#: Zen 3 threads, 2026-11-27); where 4 divides the width :data:`.convolution.PAIRED_ROW` comes first.
ROW_BUDGET = {32: 14, 16: 12}
#: Accumulators a convolution tile of several vectors may hold, by vector registers (:func:`.convolution._blocks`;
#: measured on AVX-512 only: 16 of 32; 28 spilled or ran slower).
ACC_BUDGET = {32: 16, 16: 8}
#: AVX-512 CPUs (LLVM's ``-mcpu``) that execute a 512-bit multiply-add as two 256-bit halves.
HALF_WIDTH_AVX512 = frozenset({"znver4"})
#: Storage scope of the 1x1 and direct-convolution templates' accumulator tiles. TVM 0.27's
#: ``LowerTVMBuiltin`` leaves on the stack only CPU allocations of scope ``global`` under 1 KiB; any
#: other, a ``local`` one too, becomes a ``TVMBackendAllocWorkspace`` call and a free. The 1x1
#: template's tile is its parallel loop's body, so each tile of 2 x 7 vectors called the allocator,
#: zeroed its 896 bytes with ``memset`` and stored every accumulator there (LLVM cannot drop stores
#: to memory the allocator returned); the direct template's allocates once per task of several
#: tiles but zeroes and stores per tile. On the stack, LLVM keeps the tile in registers and none of
#: that is left. Each alone, ``local`` against ``global`` (9 rounds, 2 threads,
#: intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01, torchvision exports): the 30 1x1-template
#: kernels of MobileNet-V2 and -V3-Large, EfficientNet-B0, RegNet-Y-400MF, DenseNet-121,
#: MNASNet-0.5 and ResNet-50 0.47-0.95x (MobileNet-V3-Large's 16 -> 64 at 112x112 292 -> 138 us);
#: 94 direct-template kernels of ResNet-50, GoogLeNet, SqueezeNet 1.1, RegNet-Y-400MF, ResNeXt-50
#: and EfficientNet-B0 0.70-1.08x, median 0.95 (the 8 over 1.0 within 8%, most of them kernels of
#: 11-28 us). A tile of 16 vectors or more (1 KiB) still takes the allocator. The other templates
#: keep ``local``: grouped (0.99x and 1.41x), depthwise (1.04x), matmul (0.89-1.18x on ConvNeXt-T's)
#: and pooling (0.96x) tiles measured no better.
TILE_SCOPE = "global"


def vector_lanes(target) -> tuple[int, int]:
    """``(float32 lanes of one vector register, vector registers)`` of an llvm target."""
    from tvm.target.codegen import llvm_cpu_has_features, llvm_get_vector_width

    if "x86" in str(target.attrs.get("mtriple", "x86")):  # no triple: this machine's, x86 here
        if llvm_cpu_has_features(["avx512f"], target):
            return 16, 32
        if llvm_cpu_has_features(["avx2"], target):
            return 8, 16
        return 4, 16
    return max(4, int(llvm_get_vector_width(target)) // 32), 32


def _full_width_fma(target) -> bool:
    """Whether ``target`` is an AVX-512 CPU that runs a 512-bit multiply-add whole
    (:data:`HALF_WIDTH_AVX512`: not), so that a register tile's loads, not its multiply-adds, bound it."""
    return vector_lanes(target) == (16, 32) and _mcpu(target) not in HALF_WIDTH_AVX512


def _mcpu(target) -> str:
    """LLVM's ``-mcpu`` of ``target`` ("" where it names none): what the per-CPU rules are keyed by."""
    return str(target.attrs.get("mcpu", ""))


def _whole_vectors(extent: int, target) -> int | None:
    """The lanes of the vectors an axis of ``extent`` (output channels, matmul columns) is cut into
    by the templates: the widest vector, or half of it (of at least 4 lanes), that divides it; None
    where neither does."""
    widest, _ = vector_lanes(target)
    return next((n for n in (widest, widest // 2) if n >= 4 and extent % n == 0), None)


def _row(width: int, budget: int) -> int:
    """Output pixels per register tile: the largest divisor of the output width within the budget
    (:func:`.convolution._tail_tile` says where a tile whose last one in a row is shorter replaces it)."""
    return max(d for d in range(1, min(width, budget) + 1) if width % d == 0)


@dataclasses.dataclass(frozen=True)
class _Nest:
    """A convolution kernel as the templates see it: its convolution block (TOPI's name), the
    element-wise blocks after it, in order, and whether a ``pad_temp`` block comes first."""

    block: object  # the convolution's SBlock
    extents: tuple[int, ...]  # n, f, y, x, rc, ry, rx
    epilogue: tuple[str, ...]
    padded: bool


def _nest(kmod: tvm.IRModule, target, kinds: tuple[str, ...], iters: str = "SSSSRRR") -> _Nest | None:
    """The :class:`_Nest` of an llvm kernel made of one block named one of ``kinds`` (a
    convolution; a pooling with ``iters="SSSSRR"``) after its padding, if any, and element-wise
    blocks, with constant extents; None for any other kernel."""
    if target.kind.name != "llvm":
        return None
    blocks = _root_blocks(kmod)
    names = [b.name_hint for b in blocks]
    name = next((n for n in kinds if n in names), None)
    if name is None or names.count(name) != 1 or names[0] not in (name, "pad_temp") or names.index(name) > 1:
        return None
    conv = blocks[names.index(name)]
    if _iter_kinds(conv) != iters:
        return None
    extents = [v.dom.extent for v in conv.iter_vars]
    if not all(isinstance(e, tvm.tirx.IntImm) for e in extents):
        return None
    epilogue = blocks[names.index(name) + 1:]
    if any(_iter_kinds(b) != "SSSS" for b in epilogue):  # element-wise only: every iterator spatial
        return None
    return _Nest(conv, tuple(int(e) for e in extents), tuple(b.name_hint for b in epilogue), names[0] == "pad_temp")


@functools.lru_cache(maxsize=8)
def _epilogue_operands_inlined(kmod: tvm.IRModule) -> tvm.IRModule:
    """``kmod`` with the element-wise blocks that come before its first reduction but feed only the
    blocks after it (an epilogue's operand computed first: a slice of a residual) inlined into their
    readers, so a template sees its convolution or matmul first (after its padding); ``kmod`` itself
    where it has none or they cannot be inlined.

    Why: a convolution split along its rows adds the same rows of its residual, a slice that is no
    block of memory in NCHW (so no view, :mod:`tvm_partition.passes.slice_views`), and TVM's
    ``FuseOps`` fuses that slice into the part's kernel ahead of the convolution. No template
    took such a kernel and no record transferred: a part of ResNet-18's 256-channel 3x3 at 4x4
    (64 px) ran TVM's default schedule, 4.6 ms a call where its sibling part ran the template in 70
    us, and the ``equal`` build 7.7 ms against the whole model's 1.9 (`run --kernels`,
    intel-r-xeon-r-processor-rocketlake-2c, 2026-12-01)."""
    blocks = _root_blocks(kmod)
    core = next((i for i, b in enumerate(blocks) if "R" in _iter_kinds(b)), None)
    if core is None:
        return kmod
    inputs = [r.source for b in blocks[:core + 1] if b.name_hint == "pad_temp" or b is blocks[core] for r in b.reads]
    lead = [b for b in blocks[:core] if b.name_hint != "pad_temp"]
    if any(set(_iter_kinds(b)) != {"S"} or any(w.source.same_as(i) for w in b.writes for i in inputs)
           for b in lead):
        return kmod
    operands = lead + _operands_after(blocks, core)
    if not operands:
        return kmod
    sch = tvm.s_tir.Schedule(kmod)
    try:
        for b in operands:
            sch.compute_inline(sch.get_sblock(b.name_hint, func_name="main"))
    except tvm.s_tir.schedule.ScheduleError:
        return kmod
    return sch.mod


def _operands_after(blocks, core: int) -> list:
    """The element-wise blocks after the reduction ``blocks[core]`` that read nothing it or a block
    after it computed: an epilogue's operand computed in the kernel. Why: dynamic quantization
    scales a convolution by the product of two scalars (its input's scale, computed at run time, and
    its weights'); ``FuseOps`` puts that ``multiply`` of shape () after the convolution, which no
    template's element-wise epilogue is, and SqueezeNet's convolutions ran transferred records,
    30.5 ms a run against 4.6 with the templates (its QOperator form; 2026-12-05, rocketlake-2c)."""
    computed = {w.source for w in blocks[core].writes}
    operands = []
    for b in blocks[core + 1:]:
        if any(r.source in computed for r in b.reads):
            computed |= {w.source for w in b.writes}
        elif set(_iter_kinds(b)) <= {"S"}:
            operands.append(b)
    return operands


@functools.lru_cache(maxsize=8)
def _root_blocks(kmod: tvm.IRModule) -> tuple:
    """The blocks directly under ``main``'s root block, in order. Cached per module object (TVM
    objects hash and compare by identity): :func:`tvm_partition.build.templates.templated` tries up to eight plans on one kernel,
    each of which opened a Schedule (ResNet-18's ``equal`` build: 643 Schedules, 0.95 s; now 89,
    0.13 s; 2026-11-29, cProfile)."""
    sch = tvm.s_tir.Schedule(kmod)
    return tuple(sch.get(b) for b in root_children(sch))


def _iter_kinds(block) -> str:
    """``block``'s iterators in order: ``S`` spatial, ``R`` reduction, ``O`` any other kind."""
    return "".join({0: "S", 2: "R"}.get(int(v.iter_type), "O") for v in block.iter_vars)


def _weight(kmod: tvm.IRModule, block) -> int | None:
    """The kernel parameter ``block`` reads as its weights (TOPI's convolutions and matmuls read the
    data, then the weights), None where it reads other than two buffers or its weights are computed
    in the kernel (they would be packed at every call)."""
    if len(block.reads) != 2:
        return None
    return next((n for n, buf in enumerate(kmod["main"].params) if buf.same_as(block.reads[1].source)), None)


def _operand_elements(block) -> tuple[int, int]:
    """``(elements of the data, of the weights)``: a convolution's or matmul's first two reads (TOPI's
    order), as :func:`.convolution._rows_outer` and :func:`.matmul._columns_outer` weigh them."""
    data, weights = (math.prod(int(x) for x in r.source.shape) for r in block.reads[:2])
    return data, weights


def _column_stride(conv) -> int:
    """The stride of a convolution block along the width: the coefficient of its output column in
    the column its input (its first read) is read at; 1 where that is not a linear form of it."""
    from tvm.sym.pattern import detect_linear_equation

    column = conv.iter_vars[3].var
    coefficients = detect_linear_equation(conv.reads[0].region[3].min, [column])
    return int(coefficients[0]) if len(coefficients) == 2 and isinstance(coefficients[0], tvm.tirx.IntImm) else 1


def _in_vectors(sch, loop, lanes: int) -> None:
    """``loop`` a vector of ``lanes`` at a time (split, the inner loop vectorised) where its extent
    is a known whole number of them and ``lanes`` > 1; else left as it is."""
    extent = sch.get(loop).extent
    if lanes > 1 and isinstance(extent, tvm.tirx.IntImm) and int(extent) % lanes == 0:
        sch.vectorize(sch.split(loop, [None, lanes])[1])


def _packed(sch, target) -> tvm.tirx.PrimFunc | None:
    """The scheduled kernel with its layout-free weights packed by MetaSchedule's ``RewriteLayout``
    (a preprocessing block the build lifts to load time), None where it cannot pack them."""
    import tvm.s_tir.meta_schedule as ms

    ctx = ms._ffi_api.TuneContext(sch.mod, target, None, None, "template", 1, -1, None)  # noqa: SLF001
    pack = ms.postproc.RewriteLayout()
    pack._initialize_with_tune_context(ctx)  # noqa: SLF001 - MetaSchedule's own set-up call
    if not pack.apply(sch):
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _opened(func: tvm.tirx.PrimFunc, block: str, epilogue: tuple[str, ...]):
    """``(schedule of func, its convolution block)``, every epilogue block but the last inlined."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": func}))
    for name in epilogue[:-1]:
        sch.compute_inline(sch.get_sblock(name))
    return sch, sch.get_sblock(block)


def _per_tile(sch, acc, tile_loop, epilogue: tuple[str, ...]) -> None:
    """The accumulator written back, and the (last) epilogue block computed, per register tile."""
    sch.reverse_compute_at(acc, tile_loop)
    if epilogue:
        sch.reverse_compute_at(sch.get_sblock(epilogue[-1]), tile_loop)
