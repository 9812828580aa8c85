"""Schedule transfer: a tuned kernel's MetaSchedule trace replayed onto the same computation at
other extents (a split's parts, another model's layer, another batch size, another CPU).

Why: EOP deploys every operator, and every part of a split operator, with the best schedule the
tuner found (Sec. 2.1, Sec. 3.2 Step 1); its ratio search on a 0.01 grid makes up to ~100 part
shapes per op, and a model nobody tuned has no record at all. TVM 0.27's default llvm pipeline
leaves such kernels as naive loop nests, 7-100x slower than a tuned schedule (BENCHMARKS.md),
and tuning every shape costs about an hour per model on the build machine. A tuned schedule is a
*trace* of schedule primitives (split, reorder, compute_at, annotations) whose only
shape-specific parts are the tile sizes it sampled, so it carries over:

1. **Candidates.** A kernel's :func:`signature` is its blocks in order, each by its name with the
   module-dependent part removed (``lv85_red`` -> ``lv_red``, ``T_add1`` -> ``T_add``) and its
   iterator kinds (``SSSR``): the same TOPI computation at any extents. Records of the same
   signature are candidates, and so are records that share the blocks up to the reduction and
   differ only in the element-wise epilogue after it (:func:`match`: a convolution with an
   imported model's unfolded batch norm takes a convolution-with-bias schedule). Every tuned
   record of any database is indexed (:class:`TransferIndex`); exact signatures first, then the
   nearest in shape, then records of the same CPU (or GPU arch), then the best measured
   throughput on their own kernel.
2. **Replay** (:func:`replay`). The trace up to ``enter_postproc`` is applied to the recipient, its
   ``GetSBlock`` names mapped to the recipient's blocks (extra epilogue blocks inlined first,
   steps on source blocks the recipient lacks dropped), every ``SamplePerfectTile``
   decision re-fitted to the recipient's loop extent (:func:`fit_tile`; on CPU axes that are not
   vectorised, the register tile kept where the extent allows, :func:`register_tile`; a CPU
   reduction's depth the largest divisor, not a power of two, :func:`_reduction_axes`);
   ``SampleCategorical`` and ``SampleComputeLocation`` decisions replay as they were; on CPU the
   reduction's register tile then accumulates in a ``local`` buffer (:func:`local_accumulator`:
   without it LLVM kept the tile in registers at some extents only, 2.6-2.8x apart). The target's own MetaSchedule
   postprocessors then derive the parallel / vectorise / unroll loops and the reduction's init
   block for the new extents (replaying the recorded post-processing fails on 1x1 convolutions:
   the extent-1 window loops drop out of ``sample_compute_location``'s candidates; DESIGN.md);
   a CPU kernel too small for the thread pool to pay gets no parallel loop (:data:`SERIAL_FLOPS`).
3. **Check.** A replay that raises, or a postprocessor that rejects the result, moves on to the
   next candidate; with none left the kernel keeps the default schedule (:func:`transfer`). A
   replay with no parallel loop where the kernel is large enough for one gives way to a later
   candidate that has one (a record tuned on 2 cores may be serial).

Measured on the build machine (DESIGN.md, "found since"): replayed onto seven unseen shapes (1x1 and
3x3 convolutions of ResNet-50 size, BERT-base matmuls) a ResNet-18 and a BERT-tiny record were
14-156x faster than the default schedule and 65-100% of a 32-trial tuning of the recipient; tile
factors that divide the new extent beat predicated (ceil) tiles by 2.5-5x. Where the new extent is
not a multiple of the source's innermost tile the vector tile shrinks, so planners cut splits at
multiples of it (:func:`innermost_tiles`, :mod:`tvm_partition.build.align`).

The same replay serves CUDA records (``Postproc.create("cuda")`` verifies the GPU code); only the
target kind must match.
"""

from __future__ import annotations

import dataclasses
import math
import re

import tvm

#: Candidates tried per kernel before it keeps the default schedule (each failed replay costs
#: ~10-50 ms; the first candidate replays on every kernel of the zoo models).
MAX_TRIES = 4


class TransferError(RuntimeError):
    """A trace does not replay onto a kernel; the message says which step failed."""


@dataclasses.dataclass(frozen=True)
class Block:
    name: str
    iters: str  # iterator kinds, S (spatial) R (reduction) O (other), e.g. "SSSR"
    extents: tuple[int, ...]
    #: ``name`` with a kernel parameter's name at its head replaced by ``lv`` (see :func:`blocks_of`)
    stem: str = ""


def _iter_kind(iv) -> str:
    return {0: "S", 2: "R"}.get(int(iv.iter_type), "O")


def root_children(sch) -> list:
    """The block handles directly under the root block of ``sch``'s ``main``; none where its body
    is no root block: TOPI's scatters write a block of their own named after them, ir_builder loops
    inside (``ScatterElements``: "Cannot find a block with the name: root")."""
    try:
        root = sch.get_sblock("root", func_name="main")
    except tvm.s_tir.schedule.ScheduleError:
        return []
    return list(sch.get_child_blocks(root))


def blocks_of(kmod: tvm.IRModule) -> tuple[Block, ...]:
    """The blocks of the kernel's ``main`` (below its root), in program order; none where its body is
    no root block (:func:`root_children`).

    TOPI names some blocks after the tensor they read (``layer_norm``: ``lv4_sum``, ``lv4_mean``),
    and a kernel's parameters are named after whatever fed it: a Relax variable in a build
    (``lv4``), an ONNX input (``input``), a profile sample's operand (``in0``). Each block's
    ``stem`` has a parameter's name at its head replaced by ``lv``, so the same computation has
    one signature wherever it was lowered: BERT-tiny's layer norm found its record in the build and
    none as a profile sample (``in0_sum``), which then timed TVM's default schedule at 231 us for
    a kernel the build runs in 21 us (2026-11-26, amd-epyc-znver5-2c)."""
    sch = tvm.s_tir.Schedule(kmod)
    params = sorted((p.name for p in kmod["main"].params), key=len, reverse=True)
    out = []
    for rv in root_children(sch):
        b = sch.get(rv)
        extents = tuple(int(iv.dom.extent) if isinstance(iv.dom.extent, tvm.tirx.IntImm) else -1 for iv in b.iter_vars)
        out.append(Block(b.name_hint, "".join(_iter_kind(iv) for iv in b.iter_vars), extents, _stem(b.name_hint, params)))
    return tuple(out)


def _stem(name: str, params: list[str]) -> str:
    """``name`` with the longest parameter name it starts with (followed by ``_``) replaced by ``lv``."""
    head = next((p for p in params if name.startswith(p + "_")), None)
    return "lv" + name[len(head):] if head else name


def _norm(name: str, family: bool = True) -> str:
    """A block's name without what depends on the module it came from: the Relax variable it was
    named after (``lv85_red``) and the counter FuseTIR appends to repeated names (``T_add1``). With
    ``family``, a grouped convolution's block (TOPI's ``group_conv2d_nchw``, depthwise ones
    included) is named as a convolution's: the same loops (SSSSRRR) over an input channel offset
    by the group, so a convolution's trace replays on it. Measured on ShuffleNet's grouped 1x1
    convolutions (4 groups), which no database here holds: 4-10x faster than TVM's default
    schedule with a ResNet-18 1x1 convolution's schedule (2026-11-23, build machine)."""
    name = re.sub(r"_?\d+$", "", re.sub(r"\blv\d+", "lv", name))
    return re.sub(r"^group_conv", "conv", name) if family else name


def signature(blocks: tuple[Block, ...], family: bool = True) -> str:
    """What two kernels must share for one's trace to replay on the other as it is (see module
    docstring); ``family=False`` tells a grouped convolution from a dense one (:func:`_norm`)."""
    return "|".join(f"{_norm(b.stem or b.name, family)}:{b.iters}" for b in blocks)


def main_block(blocks: tuple[Block, ...]) -> int:
    """Index of the block whose loops carry the kernel's tiles: the first with a reduction
    (matmul, conv2d), else the last (an element-wise chain's output)."""
    return next((i for i, b in enumerate(blocks) if "R" in b.iters), len(blocks) - 1)


def anchor(blocks: tuple[Block, ...]) -> str:
    """The signature of the blocks up to the main one (:func:`main_block`): what a source must
    share exactly; the element-wise blocks after it (bias, batch norm, activation, residual add)
    may differ (:func:`match`)."""
    return signature(blocks[:main_block(blocks) + 1])


def _epilogue(blocks: tuple[Block, ...]) -> tuple[Block, ...] | None:
    """The blocks after a reduction main block, if all are element-wise (spatial iterators only)."""
    m = main_block(blocks)
    tail = blocks[m + 1:]
    if "R" not in blocks[m].iters or any(set(b.iters) != {"S"} for b in tail):
        return None
    return tail


def match(blocks: tuple[Block, ...], source: tuple[Block, ...]) -> tuple[dict[str, str], list[str]] | None:
    """How a trace recorded on ``source`` blocks replays on ``blocks``: ``(rename, inline)``, the
    source block name -> recipient block name the trace's ``GetSBlock`` must look up (source
    blocks left out have no counterpart: the trace's steps on them are dropped, :func:`_rewritten`),
    and the recipient blocks to inline first; None where it cannot.

    The same signature maps block by block. Otherwise the kernels must share their blocks up to a
    reduction main block (:func:`anchor`) and end in element-wise epilogues, matched from the end:
    a longer recipient epilogue has its first extra blocks inlined into their consumers (as
    MetaSchedule's AutoInline would), a shorter one leaves the source's first extra blocks out. So
    a convolution followed by an imported model's unfolded batch norm (subtract, divide, multiply,
    add, ReLU) takes the schedule of a convolution with bias and ReLU (add, ReLU), and a bare
    convolution (DenseNet's, whose batch norm comes before it) the same schedule without them."""
    if signature(blocks) == signature(source):
        return {s.name: b.name for s, b in zip(source, blocks)}, []
    if anchor(blocks) != anchor(source):
        return None
    mine, theirs = _epilogue(blocks), _epilogue(source)
    if mine is None or theirs is None or not theirs:
        return None
    n = min(len(mine), len(theirs))
    kept, used = mine[len(mine) - n:], theirs[len(theirs) - n:]
    if any(a.iters != b.iters for a, b in zip(kept, used)):
        return None
    head = main_block(blocks) + 1
    rename = {s.name: b.name for s, b in zip(source[:head] + used, blocks[:head] + kept)}
    return rename, [b.name for b in mine[:len(mine) - n]]


# ----------------------------------------------------------------------------- tile fitting
def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def fit_tile(decision: list[int], extent: int, max_innermost: int | None = None, vector: bool = True) -> list[int]:
    """Tile factors for a loop of ``extent`` shaped like ``decision`` (outermost first, product =
    the source's extent): innermost first, each factor the largest divisor of what is left that
    is no larger than the source's (so vector and register tiles are kept where they divide), the
    innermost a power of two where one of at least 4 divides, the rest to the outermost factor.
    Where that leaves the outermost factor 1 and the source's was not, it is fitted second,
    right after the vector loop: MetaSchedule's CPU schedules fuse the
    outer tiles of the spatial axes into the loop they run in parallel, and ResNet-18's
    512-channel 3x3 convolution (64 px) cut to 256 channels ran on one thread, 675-723 us with 1
    or 2 threads against 745 us for the whole op on 2; 349 us with the outer factor kept
    (2026-11-25). Fitted second everywhere, other parts lost up to 2x (smaller register tiles).
    The product is always ``extent`` (a perfect tile, as ``SamplePerfectTile`` requires).

    The power of two: the innermost loop is the one vectorised, and LLVM turned a 48-wide one (a
    BERT-tiny matmul cut to N=48 under a record whose tile was 64) into code 60x slower than the
    16-wide one (3.8 ms against 65 us at N=32; 2026-11-23). A reduction's loop (``vector=False``)
    is no vector loop: its innermost factor is the largest divisor, a power of two or not (the depth
    of the register tile's reduction between loads and stores of its accumulators). MobileViT-S's
    attention scores (16 x 256 x 256, a reduction of 36, under a record tuned at 64 as 4 x 16) got
    9 x 4 and ran 926-932 us alone, 615-619 as 3 x 12 (0.66-0.69x, two runs of 5 alternating
    rounds; in the model, ``run --kernels``, its share 6.3-6.5% -> 4.2-4.4%); its reductions of 48
    and 60 0.91-0.95x and 0.96-1.03x; no kernel of 24 other models changed (2 threads,
    intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-07; BENCHMARKS.md, "A replayed reduction's
    depth"). Replayed for an AVX2 target the same kernels ran 0.91-0.96x."""
    if math.prod(decision) == extent:
        return list(decision)
    between = list(range(len(decision) - 2, 0, -1))
    out = _fitted(decision, extent, max_innermost, between, vector)
    if out[0] == 1 and decision[0] > 1 and between:  # the parallel loop lost: fit it before the tiles between
        return _fitted(decision, extent, max_innermost, [0] + between, vector)
    return out


#: :func:`register_tile` grows only tiles of at most this many rows: a larger one is a cache tile,
#: not registers. BERT-tiny's 128x128 matmul (a 32-row x 64-column tile) cut at M = 40 and 88 ran
#: 2.8x its share grown to 40 and 44 rows, 1.0x with perfect tiles (20 and 22 rows; 2026-11-26).
MAX_REGISTER_ROWS = 16


def register_tile(decision: list[int], extent: int, max_innermost: int | None = None) -> list[int]:
    """Tile factors for a loop of ``extent`` on an axis that is not vectorised: :func:`fit_tile`'s,
    unless they shrink the source's register tile (its innermost factor, the innermost two where
    there are four levels: MetaSchedule's CPU ``SSRSRS`` tiles put those inside the reduction
    loop); then the innermost factor becomes the divisor of ``extent`` nearest above the register
    tile, up to twice it (and ``max_innermost``), the rest fitted as before. An LSTM matmul cut to
    11 and 13 of its 16 rows (register tile 8 rows: perfect tiles leave 1) ran 3.3-3.6x the whole
    op x its fraction (amd-epyc-znver5-2c, 2026-11-26). A tile of more rows is more accumulators:
    with the accumulator in registers (:func:`local_accumulator`) up to 2x the source's fit."""
    perfect = fit_tile(decision, extent, max_innermost)
    k = 2 if len(decision) >= 4 else 1
    size = math.prod(decision[-k:])
    if len(decision) < 2 or extent <= size or size > MAX_REGISTER_ROWS or math.prod(perfect[-k:]) >= size:
        return perfect
    cap = min(2 * size, max_innermost or 2 * size)
    grown = [d for d in _divisors(extent) if size <= d <= cap]
    if not grown:
        return perfect
    inner = min(grown)
    return fit_tile(list(decision[:-k]), extent // inner) + [1] * (k - 1) + [inner]


def _fitted(decision: list[int], extent: int, max_innermost: int | None, order: list[int],
            vector: bool = True) -> list[int]:
    """:func:`fit_tile`'s factors: the vector (innermost) loop first, then the loops of ``order``,
    each the largest divisor of what is left no larger than the source's factor, what is left
    multiplied into the outermost."""
    out = [1] * len(decision)
    rest = extent
    for i in ([len(decision) - 1] if len(decision) > 1 else []) + order:
        cap = decision[i]
        if i == len(decision) - 1 and max_innermost:
            cap = min(cap, max_innermost)
        fits = [d for d in _divisors(rest) if d <= max(1, cap)]
        if i == len(decision) - 1 and vector:  # the vector loop: a power of two of at least 4 lanes where one divides
            fits = [d for d in fits if d >= 4 and d & (d - 1) == 0] or fits
        out[i] = max(fits)
        rest //= out[i]
    out[0] *= rest
    return out


# ----------------------------------------------------------------------------- replay
def _rewritten(trace, rename: dict[str, str], main: str, bare: bool):
    """``trace`` for the recipient: its ``GetSBlock`` instructions naming the recipient's blocks
    (``rename``), and every step on a source block the recipient has not (not in ``rename``)
    dropped with all that depends on it; with ``bare`` (the recipient's ``main`` block has no
    consumer) also the consumers the trace looked up for it."""
    from tvm.s_tir.schedule import Instruction, Trace

    insts, decisions = [], dict(trace.decisions.items())
    dead, main_rvs = [], []

    def is_dead(x) -> bool:
        return any(d.same_as(x) for d in dead) if hasattr(x, "same_as") else False

    for inst in trace.insts:
        kind = inst.kind.name
        if any(is_dead(x) for x in inst.inputs) or (
                kind == "GetSBlock" and str(inst.attrs[0]) not in rename and str(inst.attrs[0]) != "root") or (
                bare and kind == "GetConsumers" and any(m.same_as(inst.inputs[0]) for m in main_rvs)):
            dead.extend(inst.outputs)
            decisions.pop(inst, None)
            continue
        if kind == "GetSBlock" and str(inst.attrs[0]) in rename:
            if str(inst.attrs[0]) == main:
                main_rvs.extend(inst.outputs)
            new = Instruction(inst.kind, list(inst.inputs), [rename[str(inst.attrs[0])], inst.attrs[1]],
                              list(inst.outputs))
            if inst in decisions:
                decisions[new] = decisions.pop(inst)
            inst = new
        insts.append(inst)
    return Trace(insts, decisions)


#: What MetaSchedule's CUDA postprocessors check a kernel against where the target does not say
#: (a target built from ``{"kind": "cuda", "arch": ...}`` carries no limits): every arch since sm_20.
CUDA_LIMITS = {"max_threads_per_block": 1024, "max_shared_memory_per_block": 49152, "thread_warp_size": 32}


def _with_limits(target):
    if target.kind.name != "cuda" or all(k in target.attrs for k in CUDA_LIMITS):
        return target
    return tvm.target.Target({**CUDA_LIMITS, **dict(target.export())}, host=target.host)


#: A CPU kernel doing fewer floating-point operations than this runs its replayed schedule without
#: the parallel loop (MetaSchedule's ``meta_schedule.parallel`` annotation is dropped before the
#: postprocessors turn it into one). Small kernels gain little from the pool's fork and join and
#: lose to it whenever this VM's phases make it slow: the LSTM's 8-row recurrent matmul part
#: (0.26 MFLOP) ran 1.28 us on one thread, 1.31-1.38 on two in a fast phase and 2.26-2.47 in a slow
#: one; its 16-row whole (0.52 MFLOP) 2.5 us on one thread, 1.95 / 2.9 on two. Set first at 350k
#: (parts serial, wholes parallel: GRU and LSTM ``equal`` 0.94x / 0.95x, paired 9 rounds, in a
#: fast phase where serial wholes had cost the GRU ``cpu`` build 5%); raised to 700k when a slow
#: phase showed the wholes' side of the trade: the ``cpu`` builds at batch 16 (whole matmuls
#: 0.39-0.66 MFLOP) ran 0.76x (LSTM) and 0.66x (GRU) of their latency with serial wholes, at batch
#: 24 (0.59-0.98) 0.87x / 0.76x with every matmul serial, at batch 32 (0.79-1.31) 1.26x / 1.26x:
#: the break-even lies near 1 MFLOP in a slow phase, lower in a fast one (paired, 5 rounds each;
#: amd-epyc-znver5-2c, 2026-11-26). A serial kernel also waits for no second thread when a neighbour
#: process holds a core. Other kernels the rule reaches (max-pools and a mean of ResNet-18 and
#: Inception-v2, ShuffleNet's small grouped convolutions): their ``cpu`` builds ran 0.997x, 1.007x
#: and 1.004x with the rule at 350k, ShuffleNet and Inception-v2 1.005x / 1.012x at 700k against
#: 350k (ResNet-18 and DenseNet-121 build the same kernels at both; paired, 7 rounds).
SERIAL_FLOPS = 700_000


def serial(kmod: tvm.IRModule, target) -> bool:
    """Whether ``kmod`` runs its replayed schedule without a parallel loop (:data:`SERIAL_FLOPS`)."""
    if target.kind.name != "llvm":
        return False
    try:
        return float(tvm.s_tir.analysis.estimate_tir_flops(kmod)) < SERIAL_FLOPS
    except Exception:  # noqa: BLE001 - no estimate: keep the record's parallel loop
        return False


def _postprocess(sch, target) -> None:
    root = sch.get_sblock("root", func_name="main")
    if serial(sch.mod, target):
        if "meta_schedule.parallel" in sch.get(root).annotations:
            sch.unannotate(root, "meta_schedule.parallel")
    if target.kind.name == "llvm":
        _vector_within_rows(sch, root)
    run_postprocs(sch, target)


def run_postprocs(sch, target) -> None:
    """MetaSchedule's postprocessors of ``target``'s kind on ``sch`` (a design: its loops
    annotated, not yet rewritten), as a tuning run ends a candidate; raises :class:`TransferError`
    where one rejects it."""
    import tvm.s_tir.meta_schedule as ms

    target = _with_limits(target)
    # MetaSchedule's TuneContext constructor imports every tensor intrinsic first (20 s on the
    # build machine); the postprocessors need only the module and target, so build it directly
    ctx = ms._ffi_api.TuneContext(sch.mod, target, None, None, "transfer", 1, -1, None)  # noqa: SLF001
    for post in ms.postproc.Postproc.create("cuda" if target.kind.name == "cuda" else "llvm"):
        post._initialize_with_tune_context(ctx)  # noqa: SLF001 - MetaSchedule's own set-up call
        if not post.apply(sch):
            raise TransferError(f"postprocessor {type(post).__name__} rejected the replayed schedule")


#: The narrowest vector :func:`_vector_within_rows` caps a kernel to: an AVX-512 register of fp32.
#: Its cap applies to every block of the kernel, so on narrow rows it would cut the main block's
#: vectors too: ResNet-18's 3x3 convolution at 28 x 28 px cut to 78 channels (transferred), capped
#: at 4 lanes, ran 16.5 ms against 1.4 (2026-11-26).
MIN_EPILOGUE_LANES = 16


def _vector_within_rows(sch, root) -> None:
    """Cap the replayed ``meta_schedule.vectorize`` extent at the largest power of two dividing
    the innermost extent of the kernel's output. MetaSchedule's postprocessor fuses an element-wise
    block's loops and splits the fused loop by that extent; where it does not divide the rows the
    lanes' indices wrap (``(i * 64 + j) % 96``) and LLVM gathers them. BERT-tiny's FFN matmul +
    GELU (a 64-lane epilogue) cut to N = 96, 160, 224... of 512 ran 1.8x slower a column than at
    N = 128, 192, 256 (2026-11-26)."""
    width = sch.get(root).annotations.get("meta_schedule.vectorize")
    if width is None:
        return
    out = sch.mod["main"].params[-1]  # the kernel's output (TVM's destination-passing style)
    if not out.shape or not isinstance(out.shape[-1], tvm.tirx.IntImm):
        return
    row, cap = int(out.shape[-1]), int(width)
    if row % cap == 0 or cap % row == 0:  # whole rows a vector, or whole vectors a row
        return
    while row % cap:
        cap //= 2
    if cap < MIN_EPILOGUE_LANES:  # the cap binds every block's vector loops, the main one's too
        return
    sch.unannotate(root, "meta_schedule.vectorize")
    sch.annotate(root, "meta_schedule.vectorize", cap)


def _prepared(kmod: tvm.IRModule, trace, source_blocks: tuple[Block, ...]):
    """``(schedule of kmod, trace to replay, kmod's main block)``: the recipient's extra epilogue
    inlined, the trace rewritten for its blocks (:func:`match`, :func:`_rewritten`)."""
    blocks = blocks_of(kmod)
    found = match(blocks, source_blocks)
    if found is None:
        raise TransferError("not the same computation (block structure differs)")
    rename, inline = found
    sch = tvm.s_tir.Schedule(kmod)
    for name in inline:
        sch.compute_inline(sch.get_sblock(name, func_name="main"))
    m = main_block(blocks)
    return (sch, _rewritten(trace, rename, source_blocks[main_block(source_blocks)].name, m == len(blocks) - 1),
            blocks[m])


def _apply(sch, trace, decide) -> None:
    trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=decide)


def _walk(stmt):
    """Every statement of the loop nest ``stmt``, the blocks' bodies included (depth first)."""
    todo = [stmt]
    while todo:
        s = todo.pop()
        yield s
        if isinstance(s, tvm.s_tir.SBlockRealize):
            todo.append(s.block.body)
        elif hasattr(s, "seq"):
            todo.extend(s.seq)
        elif hasattr(s, "body"):
            todo.append(s.body)


def _realize(stmt, name: str):
    """The ``SBlockRealize`` of block ``name`` in the loop nest ``stmt``, or None."""
    blocks = (s for s in _walk(stmt) if isinstance(s, tvm.s_tir.SBlockRealize))
    return next((s for s in blocks if s.block.name_hint == name), None)


#: The largest accumulator tile (elements) :func:`local_accumulator` moves to a stack buffer: a
#: register tile is at most 32 vectors (512 fp32 on AVX-512). Larger tiles are cache tiles:
#: BERT-tiny's 32 x 64 ones (2,048) ran the same with and without the buffer (M = 40, 88, 96 of
#: 128, 2026-11-26); none larger was measured, so none larger gets one.
MAX_LOCAL_TILE = 4096


def local_accumulator(sch, name: str) -> bool:
    """Accumulate block ``name``'s (the main reduction's) register tile in a ``local`` buffer, written out
    after its reduction loops (``cache_write`` + ``reverse_compute_at`` at the loop just outside
    the first reduction loop, the copy's innermost loop vectorised). Returns whether it did.

    Why: MetaSchedule's CPU records accumulate into the block's own (global) buffer and leave the
    register tile to LLVM, which keeps it in registers only where it can prove the tile's addresses
    apart: a BERT-tiny matmul with a GELU epilogue cut along M ran at the whole op's speed x its
    fraction at M = 16, 32, 64, and 2.6-2.8x slower at every other M tried (48, 56, 60, 66, 72, 80,
    88, 96, 104, 112; 68: 1.26x): each FMA loaded and stored its accumulator. A ``local`` buffer is
    a stack array of its own, which LLVM keeps in registers where it fits: M = 96 868 us against
    2443 (853 ideal), M = 64 unchanged
    (amd-epyc-znver5-2c, 2026-11-26). The convolution templates accumulate the same way
    (:mod:`tvm_partition.build.templates`)."""
    block = sch.get_sblock(name, func_name="main")
    loops = sch.get_loops(block)
    realize = _realize(sch.get(loops[0]), name) if loops else None
    if realize is None or realize.block.writes[0].source.scope() == "local":
        return False
    reduce_vars = {v.name for iv, value in zip(realize.block.iter_vars, realize.iter_values)
                   if iv.iter_type == tvm.tirx.IterVar.CommReduce for v in tvm.tirx.analysis.undefined_vars(value)}
    first = next((i for i, rv in enumerate(loops) if sch.get(rv).loop_var.name in reduce_vars), 0)
    if first == 0:  # no reduction, or one outermost: no tile to keep
        return False
    tile = math.prod(int(sch.get(rv).extent) for rv in loops[first:] if sch.get(rv).loop_var.name not in reduce_vars)
    if tile > MAX_LOCAL_TILE:
        return False
    copy = sch.cache_write(block, 0, "local")
    at = sch.get_sref(loops[first - 1])
    if not any(sch.get_sref(rv).same_as(at) for rv in sch.get_loops(copy)):  # else already there (a consumer is)
        sch.reverse_compute_at(copy, loops[first - 1], preserve_unit_loops=True)
    sch.vectorize(sch.get_loops(copy)[-1])
    return True


def _loop_vars(sch, main: Block) -> list:
    """The loop variables around block ``main``, outermost first."""
    return [sch.get(rv).loop_var for rv in sch.get_loops(sch.get_sblock(main.name, func_name="main"))]


def _max_innermost(attrs) -> int | None:
    """A ``SamplePerfectTile``'s cap on its innermost factor, None where it has none."""
    return int(attrs[1]) if len(attrs) > 1 and int(attrs[1]) > 0 else None


def _unvectorised_axes(sch, main: Block) -> list:
    """Loop variables of block ``main``'s spatial axes but its last (the one CPU schedules
    vectorise): the axes :func:`register_tile` tiles."""
    loops = _loop_vars(sch, main)
    spatial = [i for i, kind in enumerate(main.iters) if kind == "S" and i < len(loops)]
    return [loops[i] for i in spatial[:-1]]


def _reduction_axes(sch, main: Block) -> list:
    """Loop variables of block ``main``'s reduction axes; none where its last spatial axis (the one
    vectorised) has extent 1: there LLVM vectorises the reduction's innermost loop, whose power of
    two :func:`fit_tile` keeps (SwiftFormer's one-column matmuls of reductions 48-220, fitted to
    their largest divisors instead, ran 1.1-1.9x)."""
    loops = _loop_vars(sch, main)
    spatial = [e for kind, e in zip(main.iters, main.extents) if kind == "S"]
    if spatial and spatial[-1] == 1:
        return []
    return [loops[i] for i, kind in enumerate(main.iters) if kind == "R" and i < len(loops)]


def _replayed(kmod: tvm.IRModule, trace, source_blocks: tuple[Block, ...], target, mark: str | None = None):
    """The schedule of :func:`replay`; raises :class:`TransferError` where the trace does not fit.
    Its trace is laid out as MetaSchedule's own records are (the design, ``enter_postproc``, the
    post-processing), so MetaSchedule can seed a search with it; ``mark`` annotates the design
    with :data:`PROVENANCE`."""
    try:
        sch, rewritten, main = _prepared(kmod, trace, source_blocks)
        unvectorised = _unvectorised_axes(sch, main) if target.kind.name == "llvm" else []
        reduced = _reduction_axes(sch, main) if target.kind.name == "llvm" else []

        def decide(inst, inputs, attrs, decision):
            if inst.kind.name == "SamplePerfectTile":
                loop = sch.get(inputs[0])
                if not isinstance(loop.extent, tvm.tirx.IntImm):
                    raise TransferError("a loop of dynamic extent")
                if any(loop.loop_var.same_as(v) for v in unvectorised):
                    return register_tile([int(x) for x in decision], int(loop.extent), _max_innermost(attrs))
                vector = not any(loop.loop_var.same_as(v) for v in reduced)
                return fit_tile([int(x) for x in decision], int(loop.extent), _max_innermost(attrs), vector)
            return decision

        _apply(sch, rewritten, decide)
        if target.kind.name == "llvm":
            local_accumulator(sch, main.name)
        if mark is not None:
            sch.annotate(sch.get_sblock("root", func_name="main"), PROVENANCE, mark)
        sch.enter_postproc()
        _postprocess(sch, target)
    except TransferError:
        raise
    except Exception as e:  # noqa: BLE001 - a schedule primitive refusing the replay (TVM's ScheduleError...)
        raise TransferError(str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__) from None
    return sch


def replay(kmod: tvm.IRModule, trace, source_blocks: tuple[Block, ...], target) -> tvm.tirx.PrimFunc:
    """``kmod``'s ``main`` scheduled by ``trace`` (recorded on a kernel with ``source_blocks``),
    tile sizes re-fitted to ``kmod``'s extents. Raises :class:`TransferError` where it does not fit."""
    return _replayed(kmod, trace, source_blocks, target).mod["main"].with_attr("tirx.is_scheduled", True)


#: Root-block annotation naming where a transferred schedule came from, in a trace recorded for
#: the recipient itself (:func:`recipient_trace`); it changes no code.
PROVENANCE = "tvm_partition.transferred_from"


def recipient_trace(kmod: tvm.IRModule, source: "Source", target):
    """The whole trace of ``source`` replayed onto ``kmod`` (its own blocks and tile sizes, the
    post-processing included), marked with :data:`PROVENANCE`: a tuning record of ``kmod``'s own."""
    return _replayed(kmod, source.trace, source.blocks, target, mark=source.label).trace


def provenance(trace) -> str | None:
    """The source a trace's schedule was transferred from (:func:`recipient_trace`), or None."""
    for inst in trace.insts:
        if inst.kind.name == "Annotate" and str(inst.attrs[0]) == PROVENANCE:
            return str(inst.inputs[1]).strip('"')
    return None


# ----------------------------------------------------------------------------- candidates
@dataclasses.dataclass(frozen=True)
class Source:
    """A tuned schedule other kernels can borrow: its trace, the blocks it was recorded on, its
    target, where it comes from (``label``: database and kernel) and how fast it ran on its own
    kernel (GFLOP/s, the measured quality candidates are ranked by); ``workload``: the structural
    hash of that kernel (0 where unknown)."""

    trace: object
    blocks: tuple[Block, ...]
    target: object
    gflops: float
    label: str
    workload: int = 0


def source_of(record, database: str, gflops: float) -> Source:
    """The :class:`Source` of a MetaSchedule tuning record of database ``database``."""
    import tvm_ffi

    blocks = blocks_of(record.workload.mod)
    return Source(record.trace, blocks, record.target, gflops, f"{database}: {_shape_label(blocks)}",
                  int(tvm_ffi.structural_hash(record.workload.mod)))


@dataclasses.dataclass(frozen=True)
class Transferred:
    func: tvm.tirx.PrimFunc
    source: Source


def _shape_label(blocks: tuple[Block, ...]) -> str:
    """``matmul 16x128x128x512``: the kernel's main block (the first reduction, else the last block)
    and its iteration extents."""
    main = blocks[main_block(blocks)]
    return f"{_norm(main.stem or main.name)} {'x'.join(str(x) for x in main.extents)}"


def same_device(a, b) -> bool:
    """Two targets of the same kind and the same CPU (``mcpu``) or GPU (``arch``)."""
    if a is None or b is None or a.kind.name != b.kind.name:
        return False
    key = "arch" if a.kind.name == "cuda" else "mcpu"
    return str(a.attrs.get(key, "")) == str(b.attrs.get(key, ""))


class TransferIndex:
    """Sources by the signature of their blocks up to the main one (:func:`anchor`): what
    :func:`transfer` draws on."""

    def __init__(self, sources):
        self.by_anchor: dict[str, list[Source]] = {}
        for src in sources:
            self.by_anchor.setdefault(anchor(src.blocks), []).append(src)

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_anchor.values())

    def without(self, workload: int) -> "TransferIndex":
        """The index less the sources recorded on ``workload`` (a kernel's own records left out:
        what a model that was never tuned would get)."""
        return TransferIndex(s for v in self.by_anchor.values() for s in v if s.workload != workload)

    def candidates(self, kmod: tvm.IRModule, target) -> list[Source]:
        """Sources for ``kmod`` on ``target`` (:func:`match`, same target kind): the same signature
        (a grouped convolution's before a dense one's, :func:`_norm`) before a different epilogue;
        then the nearest in shape (:func:`shape_distance`); then those
        of the same CPU (GPU arch); then the best measured throughput on their own kernel.

        Shape before throughput: a tile structure is tuned for its shape. ResNet-50's 7x7 stem
        convolution (ONNX, 224 px) ran 2.2 ms with the schedule of the same convolution in
        ResNet-18 and 16.9 ms with the fastest-measured one (a 3x3 convolution at 56 px, 80 GFLOP/s
        on its own kernel); the same CPU before another: 2.2 against 7.3 ms (2026-11-23)."""
        blocks = blocks_of(kmod)
        found = [s for s in self.by_anchor.get(anchor(blocks), ())
                 if s.target.kind.name == target.kind.name and match(blocks, s.blocks) is not None]
        exact = signature(blocks, family=False)
        return sorted(found, key=lambda s: (signature(s.blocks, family=False) != exact,
                                            *shape_distance(blocks, s.blocks),
                                            not same_device(s.target, target), -s.gflops))


def shape_distance(a: tuple[Block, ...], b: tuple[Block, ...]) -> tuple[int, float]:
    """How far two kernels' main blocks are in shape: how many iterators differ in extent, then
    the sum of |log2| of their extents' ratios (``(0, 0.0)``: the same extents). The count comes
    first so that a part of a split (one axis cut) takes its whole op's schedule: parts scheduled
    from whichever record was nearest in all axes ran up to 1.8x off the whole op's time x their
    fraction, and not monotonically in the part's size (a ResNet-18 conv at 256 of 512 channels
    861 us, at 288 channels 476 us; profile of 2026-11-23)."""
    ma, mb = a[main_block(a)].extents, b[main_block(b)].extents
    if len(ma) != len(mb):
        return len(ma) + len(mb), float("inf")
    return (sum(x != y for x, y in zip(ma, mb)),
            round(sum(abs(math.log2(max(x, 1) / max(y, 1))) for x, y in zip(ma, mb)), 3))


def transfer(kmod: tvm.IRModule, target, index: TransferIndex, tries: int = MAX_TRIES) -> Transferred | None:
    """The first candidate of ``index`` whose trace replays onto ``kmod`` (:func:`replay`), or
    None: the kernel keeps its default schedule. A replay with no parallel loop where the kernel
    wants one (:func:`wants_parallel`) is taken only where no later candidate has one. Why: a
    record tuned on 2 cores may run serially; BERT-tiny's attention scores (Q x K^T, scaled, 67
    MFLOP) took the Intel build machine's record of exactly its shape, one serial loop nest, before
    the Zen 3's parallel one (64 blocks), and on the H200 host's 16 cores ran 2,295 us a run at 2
    threads and 2,547 at 16, 54% of BERT-tiny's kernel time there (2026-11-28, the sixth GPU run)."""
    serial_one = None
    for src in index.candidates(kmod, target)[:tries]:
        try:
            got = Transferred(replay(kmod, src.trace, src.blocks, target), src)
        except TransferError:
            continue
        if not wants_parallel(kmod, target) or has_parallel(got.func):
            return got
        serial_one = serial_one or got
    return serial_one


def wants_parallel(kmod: tvm.IRModule, target) -> bool:
    """A CPU kernel of a target with several cores, large enough for the pool (:func:`serial`)."""
    return target.kind.name == "llvm" and int(target.attrs.get("num-cores", 1)) > 1 and not serial(kmod, target)


def has_parallel(func: tvm.tirx.PrimFunc) -> bool:
    """Whether ``func``'s loop nest has a parallel loop."""
    return any(isinstance(s, tvm.tirx.For) and s.kind == tvm.tirx.ForKind.PARALLEL for s in _walk(func.body))


def inner_tile(tiles: list[int]) -> int:
    """The tile a cut must keep whole on an axis tiled ``tiles`` (outermost first): the innermost
    factor, or where that is 1 (a schedule that vectorises another axis) the product of the
    factors out to the first one above 1, the outermost (parallel) factor never included. An LSTM
    matmul tiled ``[1, 16, 16, 1]`` on N cut at N=151 of 256 (prime: the 16-wide tile gone) ran
    its part 13 us against 4 us for the whole op (amd-epyc-znver5-2c, 2026-11-26)."""
    out = 1
    for f in reversed(tiles[1:]):
        out *= f
        if out > 1:
            break
    return out


def innermost_tiles(kmod: tvm.IRModule, source: Source) -> dict[int, int]:
    """``{axis: factor}``: the inner tile (:func:`inner_tile`) ``source``'s trace gives each spatial
    axis of ``kmod``'s main block (:func:`main_block`) at ``kmod``'s extents (:func:`fit_tile`). A
    part whose extent on that axis is a multiple of it keeps the same inner tiles; other extents
    shrink them (an extent of 61 leaves no vector tile at all: 11x slower on a BERT-tiny matmul,
    2026-11-23)."""
    try:
        sch, rewritten, main = _prepared(kmod, source.trace, source.blocks)
    except Exception:  # noqa: BLE001 - no replay (TransferError) or an epilogue that does not inline
        return {}
    loops = _loop_vars(sch, main)
    spatial = {i: main.iters[:i].count("S") for i, kind in enumerate(main.iters) if kind == "S"}
    found: dict[int, int] = {}

    def decide(inst, inputs, attrs, decision):
        if inst.kind.name != "SamplePerfectTile":
            return decision
        loop = sch.get(inputs[0])
        tiles = fit_tile([int(x) for x in decision], int(loop.extent), _max_innermost(attrs))
        for i, var in enumerate(loops):
            if var.same_as(loop.loop_var) and i in spatial:
                found.setdefault(spatial[i], inner_tile(tiles))
        return tiles

    try:
        _apply(sch, rewritten, decide)
    except Exception:  # noqa: BLE001 - a trace that does not replay says nothing about tiles
        return {}
    return found
