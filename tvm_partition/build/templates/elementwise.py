"""Element-wise kernels (every block spatial: an imported model's unfolded batch norm + ReLU, concats,
transposes, an RNN's gates). Why: TVM 0.27 gives a CPU kernel no schedule of its own, so such a
kernel ran serially, each of its blocks a loop nest of its own with its intermediate tensors written
out; DenseNet-121's 58 batch-norm + ReLU kernels took 24.8 ms of its 83 (``run --kernels``),
onnxruntime's whole model 31.5. The template inlines every block into the outputs and runs the loops
above the innermost in parallel (TOPI's x86 ``schedule_injective``, minus its explicit vectors): a
[1, 160, 56, 56] batch norm + ReLU 442 -> 47 us, DenseNet-121 end to end 65.5 -> 44-48 ms
(2026-11-25, intel-r-xeon-r-processor-2c, 2 threads). Below :data:`MIN_ELEMENTS` the blocks are
inlined all the same and the loops stay serial
(:data:`tvm_partition.build.templates.INLINED_LABEL`): TVM's default schedule writes each
intermediate tensor out, and the lowering allocates every one over 1 KiB from the workspace pool at
every call (``TVMBackendAllocWorkspace``: an LSTM gate kernel of 8 x 64 outputs made 7 allocations a
call, seen in ``perf``); inlined, the LSTM and GRU ran 5-7% faster end to end, their split builds as
much (amd-epyc-znver5-2c, 2026-11-26, BENCHMARKS.md). A concatenation of at least
:data:`MIN_PARTITIONED_INPUTS` inputs has its axis's loop cut at its inputs' bounds, so that no
element tests TOPI's ``if_then_else`` per input (:func:`_concat_cuts`: torchvision's DenseNet-121,
up to 25 inputs a concatenation, 0.10-0.90x each kernel). A transpose between NCHW and NHWC moves
tiles of channels x pixels transposed in registers instead (:func:`_transposition`), tokens
``[1, H*W, C]`` into maps and back too (a reshape about the transpose), an element-wise epilogue
after the move computed on each tile staged (PVT-v2's GELU)."""

from __future__ import annotations

import dataclasses

import tvm

from ..transfer import root_children
from . import common, reductions, transposed


#: Output elements from which an element-wise kernel runs in parallel (smaller ones are inlined
#: and stay serial): one that computes gained 1.8-2.6x at 2,048 elements (an LSTM's gates at
#: batch 16, a batch norm + ReLU; 2 threads, each kernel timed alone, 2026-11-25). One that only
#: moves data: BERT-tiny's attention transposes and a concat, parallel over serial, 0.62-0.67x at
#: 262,144 elements, 0.59-0.64x at 131,072, 0.75-0.90x at 65,536, 0.80-1.15x at 32,768 and
#: 0.98-1.37x at 16,384 (medians of 3 rounds, amd-epyc-znver4-2c, 2026-11-27). It was 262,144 after
#: a concat on the Rocket Lake VM lost 5-7% up to 131,072 (2026-11-25): the halves of BERT-tiny's
#: transposes in its ``equal`` build (131,072 elements) then ran serial, 2.5x the whole one's time.
MIN_ELEMENTS = 1 << 11
#: Inputs from which an element-wise kernel's concatenation has its loop partitioned at their bounds
#: (:func:`_concat_cuts`; 2-6 measured either way, 7 not at all).
MIN_PARTITIONED_INPUTS = 8


def _elementwise_outputs(kmod: tvm.IRModule, target) -> tuple[tuple[str, ...], bool]:
    """``(blocks writing the outputs, parallel)`` of an element-wise kernel, where the element-wise
    template applies: an llvm kernel of spatial blocks only (no reduction) with outputs of rank 2
    or more; ``parallel`` from :data:`MIN_ELEMENTS` output elements (:data:`.common.MIN_MOVED_ELEMENTS`
    where it does no arithmetic). ``((), False)`` where it does not apply, or where a serial kernel
    has no block to inline (TVM's default schedule is then the same loop nest)."""
    if target.kind.name != "llvm":
        return (), False
    func = kmod["main"]
    blocks = common._root_blocks(kmod)
    if not blocks or any(int(v.iter_type) != 0 for b in blocks for v in b.iter_vars):
        return (), False
    outputs = [b for b in blocks if any(w.source.same_as(p) for w in b.writes for p in func.params)]
    if not outputs:
        return (), False
    extents = [v.dom.extent for b in outputs for v in b.iter_vars]
    if not all(isinstance(e, tvm.tirx.IntImm) for e in extents):
        return (), False
    if any(len(b.iter_vars) < 2 for b in outputs):
        return (), False
    moves = float(tvm.s_tir.analysis.estimate_tir_flops(kmod)) == 0
    parallel = max(_elements(b) for b in outputs) >= (common.MIN_MOVED_ELEMENTS if moves else MIN_ELEMENTS)
    if not parallel and len(blocks) == len(outputs):
        return (), False  # nothing to inline: TVM's default schedule is this one
    return tuple(b.name_hint for b in outputs), parallel


@dataclasses.dataclass(frozen=True)
class _Transposition:
    """A kernel that moves a float32 map between NCHW and NHWC (``channels_last``: into NHWC),
    either side's pixels one flat axis or rows of ``width``, its channels whole vectors of
    ``lanes``, its rows cut into segments of ``segment`` pixels (:mod:`.transposed`); ``epilogue``:
    element-wise arithmetic on the moved values (a GELU) before they are stored."""

    channels_last: bool
    lanes: int
    segment: int
    width: int
    epilogue: bool = False


#: Pixels of a tile staged for an epilogue: under 16 vectors of 16 lanes (1 KiB), the staging
#: buffer stays on the stack (:data:`.common.TILE_SCOPE`'s fact) where LLVM keeps it in registers.
_STAGED_PIXELS = 15


def _moving(kmod: tvm.IRModule):
    """``(schedule, move, output)``: ``kmod`` with its leading copies (blocks that store a load: a
    transpose, reshapes) inlined into the last of them, ``move``, whose indices are simplified
    over its iterators' domains (a reshape's div/mod folded), and every later block inlined into
    the last, ``output`` (``move`` itself where nothing follows); None where it has no leading
    copy or a block does not inline."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    blocks = root_children(sch)
    copies = 0
    while copies < len(blocks) and _copies(sch.get(blocks[copies])):
        copies += 1
    if not copies:
        return None
    try:
        for block in blocks[:copies - 1] + blocks[copies:-1]:
            sch.compute_inline(block)
    except tvm.s_tir.schedule.ScheduleError:
        return None
    move = blocks[copies - 1]
    _simplify_copy(sch, move)
    return sch, move, blocks[-1]


def _copies(block) -> bool:
    return isinstance(block.body, tvm.tirx.BufferStore) and isinstance(block.body.value, tvm.ir.TensorLoad)


def _simplify_copy(sch, rv) -> None:
    """The copy block ``rv`` with its load's indices simplified over its iterators' domains. Why:
    inlined, a reshape's flat index stays as TOPI wrote it (``((y*56 + x) // 3136 + c) % 256``
    for a channel ``c < 256``), whose region over a tile ``tensorize`` reads as the whole axis; no
    pass of TVM 0.27 simplifies a block's indices with its iterators' domains."""
    block = sch.get(rv)
    analyzer = _bounded(block.iter_vars)
    load = block.body.value
    indices = [analyzer.simplify(i) for i in load.indices]
    store = tvm.tirx.BufferStore(block.body.buffer, tvm.tirx.BufferLoad(load.source, indices), block.body.indices)
    reads = [tvm.tirx.BufferRegion(load.source, [tvm.ir.Range.from_min_extent(i, 1) for i in indices])]
    new = tvm.s_tir.SBlock(block.iter_vars, reads, block.writes, block.name_hint, store, None,
                           block.alloc_buffers, block.match_buffers, block.annotations)
    sch.state.replace(sch.get_sref(rv), new, {block: new})


def _bounded(iters) -> tvm.sym.Analyzer:
    """An analyzer that knows each of a block's iterators ``iters`` lies in its domain."""
    analyzer = tvm.sym.Analyzer()
    for v in iters:
        analyzer.bind(v.var, v.dom)
    return analyzer


def _offset_strides(indices, shape, iters) -> list[int] | None:
    """The flat offset of ``indices`` in a (contiguous) buffer of ``shape`` as integer multiples of the block's
    iterators ``iters`` (their domains bound: a reshape's div/mod folds away), None where it is not
    linear in them or has a constant part."""
    analyzer = _bounded(iters)
    offset, stride = 0, 1
    for index, extent in reversed(list(zip(indices, shape))):
        offset, stride = offset + index * stride, stride * extent
    coefficients = tvm.sym.detect_linear_equation(analyzer.simplify(offset), [v.var for v in iters])
    if len(coefficients) != len(iters) + 1:
        return None
    simplified = [analyzer.simplify(c) for c in coefficients]
    if not all(isinstance(c, tvm.tirx.IntImm) for c in simplified) or int(simplified[-1]) != 0:
        return None
    return [int(c) for c in simplified[:-1]]


def _transposition(kmod: tvm.IRModule, target) -> _Transposition | None:
    """The :class:`_Transposition` of a kernel whose blocks, inlined, store element-wise functions
    of one float32 input read moved between NCHW and NHWC, either side 4-d or its pixels one flat
    axis (TOPI's ``T_transpose``: ConvNeXt's around each block's layer norm and MLP; with a
    ``T_reshape`` around it and a GELU after, PVT-v2's and SegFormer's tokens ``[1, H*W, C]`` into
    and out of their depthwise convolutions' maps), whose channels fill whole vectors and whose rows
    a segment of 2 pixels or more divides; None for any other. Why: vectorised along the output's
    innermost axis, each of its vectors read a lane per plane (no gathers on our x86 targets); with
    the planes 1 KiB apart (256 channels) every such read missed the L1 cache, whose sets the
    stride aliases: PVT-v2-B0's two ``[1, 3136, 256]`` tokens into maps took 4.8 ms of its 15
    (``run --kernels``). ConvNeXt-T's seven transposes took 1.5 ms of its 41, tiled 0.8 ms, the
    model 0.96x (BENCHMARKS.md, "ConvNeXt's transposes tiled")."""
    out = kmod["main"].params[-1]  # TVM 0.27: a PrimFunc's params are its buffers, outputs last
    blocks = common._root_blocks(kmod)
    if str(out.dtype) != "float32" or len(out.shape) not in (3, 4) or not blocks or not _copies(blocks[0]):
        return None
    moving = _moving(kmod)
    if moving is None:
        return None
    sch, move, output = moving
    move, output = sch.get(move), sch.get(output)
    store, iters, source = move.body, list(move.iter_vars), move.reads[0].source
    if any(not i.same_as(v.var) for i, v in zip(store.indices, iters)) or str(source.dtype) != "float32" \
            or not any(source.same_as(p) for p in kmod["main"].params):
        return None
    epilogue = not move.same_as(output)
    if not (_reads_in_place(output, store.buffer, out) if epilogue else store.buffer.same_as(out)):
        return None
    strides = _offset_strides([r.min for r in move.reads[0].region], source.shape, iters)
    shape = [int(x) for x in out.shape]
    if strides is None:
        return None
    channels_last, width = _moved(shape, [int(x) for x in source.shape], strides)
    if not width:
        return None
    channels = shape[-1] if channels_last else shape[1]
    lanes = common._whole_vectors(channels, target)
    segment = common._row(width, min(lanes, _STAGED_PIXELS) if epilogue else lanes) if lanes else 1
    return _Transposition(channels_last, lanes, segment, width, epilogue) if segment > 1 else None


def _reads_in_place(output, moved, out) -> bool:
    """Whether the block ``output`` stores into ``out``, at its iterators, a function of ``moved``
    read at the same indices (and of anything else: a bias, the epilogue's constants)."""
    store = output.body
    iters = [v.var for v in output.iter_vars]
    mine = [r for r in output.reads if r.source.same_as(moved)]
    return (isinstance(store, tvm.tirx.BufferStore) and store.buffer.same_as(out)
            and len(store.indices) == len(iters) and all(i.same_as(v) for i, v in zip(store.indices, iters))
            and [int(x) for x in moved.shape] == [int(x) for x in out.shape] and len(mine) == 1
            and all(reductions.is_one(r.extent) and r.min.same_as(v) for r, v in zip(mine[0].region, iters)))


def _moved(out: list[int], source: list[int], strides: list[int]) -> tuple[bool, int]:
    """``(channels_last, width)`` where an output of shape ``out`` read at ``strides`` of the
    input (its offset's multiples of the output's indices; an axis of extent 1 may have any) is
    the input moved between NCHW and NHWC, each side's shape the layout's (the NHWC side's pixels
    may be one flat axis, the NCHW side's are rows: a tile's rows are a plane's); ``width`` 0 where
    it is not."""
    def reads(*expected):
        return all(s == e or n == 1 for s, e, n in zip(strides, expected, out))

    if len(out) == 4:
        n, a, b, c = out
        if reads(a * b * c, 1, c * a, a) and source in ([n, b * c, a], [n, b, c, a]):  # NCHW [n, C, H, W] from NHWC
            return False, c
        if reads(a * b * c, b, 1, a * b) and source == [n, c, a, b]:  # NHWC [n, H, W, C] from NCHW
            return True, b
        return False, 0
    n, pixels, channels = out
    if len(source) == 4 and source[:2] == [n, channels] and source[2] * source[3] == pixels \
            and reads(pixels * channels, 1, pixels):  # tokens [n, H*W, C] from NCHW
        return True, source[3]
    return False, 0


def _schedule_transposition(kmod: tvm.IRModule, plan: _Transposition) -> tvm.tirx.PrimFunc:
    """``n y`` one parallel loop (a flat axis of pixels split into rows), under it tiles of a
    vector of channels x a segment of a row's pixels, each transposed in registers
    (:mod:`.transposed`); with an epilogue, each tile staged so, then its epilogue along the
    output's innermost axis in vectors."""
    sch, move, output = _moving(kmod)
    loops = sch.get_loops(output)
    if len(loops) == 3:  # [n, H*W, C]: the pixels as rows
        loops = [loops[0], *sch.split(loops[1], [None, plan.width]), loops[2]]
    n, y, x, c = loops if plan.channels_last else (loops[0], loops[2], loops[3], loops[1])
    c_o, c_i = sch.split(c, [None, plan.lanes])
    x_o, x_i = sch.split(x, [None, plan.segment])
    order = "xc" if plan.channels_last else "cx"  # the block's iterators; the tile's loops alike
    outer, inner = ((x_o, c_o), (x_i, c_i)) if plan.channels_last else ((c_o, x_o), (c_i, x_i))
    sch.reorder(n, y, *outer, *inner)
    sch.parallel(sch.fuse(n, y))
    tile = transposed.intrinsic(transposed.Tile(plan.lanes, plan.segment, channel_rows=plan.channels_last,
                                                order=order, loops=order))
    if plan.epilogue:  # the tile staged, then the epilogue along the output's innermost axis
        sch.compute_at(move, outer[-1])
        sch.tensorize(sch.get_loops(move)[1 + len(outer)], tile)  # its first loop below the parallel and outer ones
        sch.vectorize(inner[-1])
    else:
        sch.tensorize(inner[0], tile)
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _elements(block) -> int:
    n = 1
    for v in block.iter_vars:
        n *= int(v.dom.extent)
    return n


def _schedule_elementwise(kmod: tvm.IRModule, target, outputs: tuple[str, ...],
                          parallel: bool) -> tvm.tirx.PrimFunc | None:
    """Every block but the outputs inlined; where ``parallel``, each output's loops but the
    innermost fused into one parallel loop, the innermost left to LLVM's loop vectoriser (as TVM's
    default schedule leaves it). Fused and split into explicit vectors instead, the flattened
    index's div/mod made every vector a gather: 0.2-0.6x the default schedule on one thread (2026-11-25).
    A concatenation of many inputs (:func:`_concat_cuts`) takes its axis inside the parallel loop, cut
    into one loop per input."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    for block in root_children(sch):
        if sch.get(block).name_hint not in outputs:
            try:
                sch.compute_inline(block)
            except tvm.s_tir.schedule.ScheduleError:
                return None
    cuts = _concat_cuts(kmod, outputs)
    for name in outputs if parallel or cuts else ():
        loops = sch.get_loops(sch.get_sblock(name))
        if cuts:  # the loops but the concatenation's axis and the innermost fused (parallel), then the axis in pieces
            axis, sizes = cuts
            outer = [loop for i, loop in enumerate(loops[:-1]) if i != axis]
            sch.reorder(*outer, loops[axis], *([loops[-1]] if axis != len(loops) - 1 else []))
            fused = sch.fuse(*outer) if len(outer) > 1 else outer[0]
            sch.loop_partition(loops[axis], [*sizes[:-1], None])
            if parallel:
                sch.parallel(fused)
            continue
        sch.parallel(sch.fuse(*loops[:-1]) if len(loops) > 2 else loops[0])
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _concat_cuts(kmod: tvm.IRModule, outputs: tuple[str, ...]) -> tuple[int, list[int]] | None:
    """``(axis, extent of each input along it)`` of a concatenation (TOPI's ``T_concat``) of at least
    :data:`MIN_PARTITIONED_INPUTS` inputs in a kernel of one output of its shape (its batch norm and
    ReLU after it, inlined), read off its ``if_then_else`` chain, where a loop besides the axis and
    the innermost is left to run in parallel; None for any other kernel. :func:`_schedule_elementwise`
    partitions the axis's loop at its inputs' bounds, so that each piece reads one input and the
    chain folds away.

    Why: TOPI writes a concatenation as one ``if_then_else`` per input, tested in turn for every
    element; torchvision's DenseNet-121 concatenates every earlier layer's output before each batch
    norm (up to 25 inputs at 14x14) and those kernels took 0.8-1.0 ms a call, 10.2 ms of a run
    (``run --kernels``). Each alone, partitioned against not (``benchmarks/template_ab.py
    concatenate ... --without MIN_PARTITIONED_INPUTS=inf``, 5 rounds, 2 threads,
    intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01): its 34 kernels of 8-25 inputs 0.10-0.90x,
    12.1 -> 2.9 ms summed (at 14x14 and 25 inputs 918 -> 101 us); in a scratch run before, 2-6 inputs
    0.87-1.24x (the 7 rows of a 7x7 map the only parallel tasks: 33 -> 42 us), so those keep the chain."""
    blocks = common._root_blocks(kmod)
    concat = [b for b in blocks if b.name_hint.startswith("T_concat")]
    if len(concat) != 1 or len(outputs) != 1:
        return None
    out = next(b for b in blocks if b.name_hint == outputs[0])
    shape = [int(x) for x in concat[0].writes[0].source.shape]
    if [int(x) for x in out.writes[0].source.shape] != shape:
        return None
    bounds = _concat_bounds(concat[0])
    if len(bounds) != 1:
        return None
    ((axis, starts),) = bounds.items()
    parallel_loops = len(shape) - 1 - (axis != len(shape) - 1)  # the loops but the axis and the innermost
    if len(starts) + 1 < MIN_PARTITIONED_INPUTS or parallel_loops == 0:
        return None
    cuts = [0, *sorted(starts), shape[axis]]
    return axis, [b - a for a, b in zip(cuts, cuts[1:])]


def _concat_bounds(concat) -> dict[int, set[int]]:
    """``{axis: offsets where an input starts}`` of a ``T_concat`` block, from its ``if_then_else``
    chain's conditions (``offset <= v_axis``)."""
    iter_vars = [v.var for v in concat.iter_vars]
    bounds: dict[int, set[int]] = {}

    def walk(expr):
        if isinstance(expr, tvm.ir.expr.Call) and expr.op.name.endswith("if_then_else"):
            cond = expr.args[0]
            if isinstance(cond, tvm.tirx.LE) and isinstance(cond.a, tvm.tirx.IntImm):
                axis = next((i for i, v in enumerate(iter_vars) if cond.b.same_as(v)), None)
                if axis is not None:
                    bounds.setdefault(axis, set()).add(int(cond.a.value))
            for arg in expr.args[1:]:
                walk(arg)

    walk(getattr(concat.body, "value", None))
    return bounds
