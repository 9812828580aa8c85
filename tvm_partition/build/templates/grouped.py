"""Grouped and depthwise convolutions (TOPI's ``group_conv2d_nchw``: MobileNet-V2's depthwise 3x3s,
ShuffleNet's grouped 1x1s). Why: no record of them exists, so they ran a dense convolution's record
replayed onto their loop nest: MobileNet-V2's four largest depthwise convolutions took 217-649 us
each, slower than TVM's naive default schedule (141-242), and its depthwise kernels about 2 of its
6.7 ms (``run --kernels``; amd-epyc-znver5-2c, 2026-11-25). A channel has too few inputs for a
vector of output channels, so this schedule vectorises along the output row instead: a register tile
of ``rows`` output rows x one row segment (the largest divisor of the width up to a vector),
accumulated over the group's input channels and the window, each weight broadcast; the loops over
batch, channels and row blocks one parallel loop, the padding a parallel stage of its own. Where it
pays (each kernel alone, 2 threads): outputs at least :data:`MIN_GROUP_WIDTH` wide with at most
:data:`MAX_GROUP_CHANNELS` input channels per group: a 32-channel 112x112 depthwise 258 -> 49 us, a
stride-2 96-channel one 649 -> 229 us (BENCHMARKS.md); on 14- and 7-wide maps, and for ShuffleNet's
groups of 34-136 input channels, the replayed dense record was as fast or faster (up to 2x), so
those keep it. Nor a strided convolution of several input channels a group: each step of its row
segment reads every other input pixel, and the replayed dense record ran 2.7-3.4x quicker
(RegNet-Y-400MF's and ResNeXt-50's, 2 Zen 3 threads, 2026-11-30, ``benchmarks/template_ab.py
conv2d``). Groups of whole vectors of output channels (8 or more) take the direct-convolution
template above instead, strided or not, which outran both; this one keeps depthwise convolutions and
groups of fewer output channels (ResNeXt-50's 4). Strided groups of 2-7 channels were not measured.
A depthwise convolution whose channels fill whole vectors takes a schedule vectorised along its
channels instead where that measured quicker (strided, or stride 1 with at least
:data:`MIN_DEPTHWISE_BLOCKS` vectors of channels: :func:`_depthwise_plan`): each parallel task
copies its channels' padded input channels innermost (tiles transposed in registers,
:mod:`.transposed`) and accumulates a row segment of pixels x one vector of channels, the weights
packed at load time (MobileNet-V3-Small's 576-channel 5x5 at 7x7 458 us replayed, 109 on the row
template, 16 here)."""

from __future__ import annotations

import dataclasses

import tvm

from . import common, convolution, transposed


#: Where the grouped-convolution template replaces a replayed dense record (see the module
#: docstring for the measurements that set them).
MIN_GROUP_WIDTH = 28
MAX_GROUP_CHANNELS = 32
#: Output rows a register tile of the grouped template holds, the first that divides the height:
#: 4 rows ran a 112x112 depthwise in 47 us, 2 rows 77, 1 row 89 (one row segment of 16 lanes each).
GROUP_ROWS = (4, 2, 1)
#: Output pixels of a depthwise template's register tile (the largest divisor of the width up to
#: it), one vector of channels each: 8 (7 on 7-, 14- and 28-wide maps) against 14 and against two
#: rows of 7 ran 0.85-0.98x their time on MNASNet's nine depthwise kernels (each alone, 3 rounds,
#: 2 Zen 4 threads, 2026-11-30); two rows of 7 won only on 56- and 112-wide maps of few channels,
#: which keep the row template (:data:`MIN_DEPTHWISE_BLOCKS`).
DEPTHWISE_ROW = 8
#: Vectors of channels from which a stride-1 depthwise convolution takes the channel template
#: rather than the row template (strided ones always do: a row segment reads every other pixel).
#: Each alone, row against channel template (us, 2 Zen 4 threads, 2026-11-30): 16 and 32 channels
#: at 112x112 (1 and 2 vectors) 38 / 126 and 145 / 228, 48 at 56x56 (3) 49 / 63; 72 at 56x56 (9
#: vectors of 8) 69 / 58, 144 at 56x56 342 / 283.
MIN_DEPTHWISE_BLOCKS = 4
#: A stride-1 depthwise convolution whose output rows are whole vectors keeps the row template
#: whatever its channels on a full-width AVX-512 CPU (:func:`.common._full_width_fma`,
#: :func:`_rows_whole`): there the channel template's write-back into NCHW, a vector of 16 channels
#: into 16 planes, outweighs what it saves. Each alone, row against channel template, 3 alternating
#: rounds, 2 threads, intel-r-xeon-r-processor-rocketlake-2c, 2026-12-07 (both with the copy
#: transposed in registers): MobileViT-v2's 64 channels at 128 x 128, 256 at 64 x 64 and 32 x 32
#: 0.59-0.75x warm, 0.84-0.90x cold; SegFormer's 128 at 64 x 64 and 256 at 32 x 32 0.40x warm,
#: 0.61-0.70x cold; EfficientNet's 64 at 112 x 112 0.75x warm, 1.01x cold. On rows of 14 and 7
#: pixels (56 and 28 wide: segments of partial vectors) the row template lost 1.02-17x (ConvNeXt's
#: 7x7s, MobileNet-V1's, -V2's, EfficientNet's, FocalNet's, SwiftFormer's, PVT-v2's); compiled for
#: AVX2 (8 lanes, run here) it lost on whole rows too (0.87-1.11x warm, 1.01-1.52x cold), so the
#: rule is AVX-512's. Builds, paired: SegFormer 0.945x, MobileViT-S 0.982x, MobileViT-v2 0.989x,
#: EfficientNet 0.990x (BENCHMARKS.md, "Depthwise rows of whole vectors on AVX-512").


@dataclasses.dataclass(frozen=True)
class _GroupPlan:
    """What :func:`_schedule_group` needs of a grouped convolution kernel it applies to."""

    epilogue: tuple[str, ...]
    row: int  # output pixels of a row segment (vectorised)
    rows: int  # output rows per register tile (unrolled)
    padded: bool
    depthwise: bool = False  # one input channel a group


def _group_plan(kmod: tvm.IRModule, target) -> _GroupPlan | None:
    """The :class:`_GroupPlan` of a grouped or depthwise convolution the template pays on (see
    :data:`MIN_GROUP_WIDTH`), or None."""
    nest = common._nest(kmod, target, (convolution._GROUP,))
    if nest is None:
        return None
    _, _, oh, ow, group_channels, _, _ = nest.extents
    if ow < MIN_GROUP_WIDTH or group_channels > MAX_GROUP_CHANNELS:
        return None
    if group_channels > 1 and common._column_stride(nest.block) > 1:
        return None
    lanes, _ = common.vector_lanes(target)
    return _GroupPlan(nest.epilogue, common._row(ow, lanes), next(r for r in GROUP_ROWS if oh % r == 0), nest.padded,
                      group_channels == 1)


@dataclasses.dataclass(frozen=True)
class _DepthwisePlan:
    """What :func:`_schedule_depthwise` needs of a depthwise convolution kernel it applies to."""

    epilogue: tuple[str, ...]
    weight: int  # the kernel parameter holding the weights
    lanes: int  # channels per vector
    row: int  # output pixels per register tile
    padded: bool


def _depthwise_plan(kmod: tvm.IRModule, target) -> _DepthwisePlan | None:
    """The :class:`_DepthwisePlan` of a depthwise convolution (one input channel a group, as many
    output channels as input channels, a whole number of vectors of them) that is strided or has
    at least :data:`MIN_DEPTHWISE_BLOCKS` vectors of channels; None for any other kernel.

    Why: on 14- and 7-wide maps, where the row template's segments are 7 pixels, these kernels ran
    a dense convolution's record replayed (MobileNet-V3-Small's 576-channel 5x5 at 7x7 458 us
    alone, 519 a call in the model, of its 5.1 ms) or the row template on 7-lane vectors (109 us);
    vectorised along the channels, 16 us. Every one of MobileNet-V3-Large's, MNASNet's and
    EfficientNet-B0's depthwise kernels but the stride-1 ones of 1-3 vectors of channels ran
    0.13-0.84x the row template's time; those 1.3-3.3x (BENCHMARKS.md, "Depthwise convolutions")."""
    nest = common._nest(kmod, target, (convolution._GROUP,))
    if nest is None:
        return None
    _, channels, _, ow, group_channels, _, _ = nest.extents
    data = nest.block.reads[0].source if not nest.padded else common._root_blocks(kmod)[0].reads[0].source
    weight = common._weight(kmod, nest.block)
    if group_channels != 1 or int(data.shape[1]) != channels or weight is None:
        return None  # grouped, or a depthwise multiplier above 1 (output channel f reads input f // m)
    lanes = common._whole_vectors(channels, target)
    if lanes is None or (common._column_stride(nest.block) == 1
                         and (channels // lanes < MIN_DEPTHWISE_BLOCKS or _rows_whole(ow, target))):
        return None
    return _DepthwisePlan(nest.epilogue, weight, lanes, common._row(ow, DEPTHWISE_ROW), nest.padded)


def _rows_whole(width: int, target) -> bool:
    """Whether a depthwise convolution's output rows of ``width`` are whole vectors on a full-width
    AVX-512 CPU, where its row template beats its channel template (:data:`MIN_DEPTHWISE_BLOCKS`),
    and wide enough for the row template to take them (:data:`MIN_GROUP_WIDTH`: a 16-wide one would
    replay a dense convolution's record)."""
    lanes, _ = common.vector_lanes(target)
    return common._full_width_fma(target) and width >= MIN_GROUP_WIDTH and width % lanes == 0


def _schedule_depthwise(kmod: tvm.IRModule, target, plan: _DepthwisePlan) -> tvm.tirx.PrimFunc | None:
    """The depthwise schedule: ``n f_o | y x_o | ry rx x_i f_i``, ``f_i`` one vector of channels,
    ``x_i`` a row segment (unrolled, as the window), ``n f_o`` one parallel loop. Under it the
    padded input of its channels is copied channels innermost (``[h, w, f_i]``,
    :func:`_copied_transposed`), so each step of the window loads one contiguous vector and the
    weights (packed at load time ``[f_o, ry, rx, f_i]``) another; the accumulator, laid out ``[y,
    x, f]``, is written out through the inlined epilogue a vector of channels at a time (a scatter
    per vector: NCHW). Measured on MobileNet-V3-Small's 576-channel 5x5: the epilogue computed from
    an NCHW copy of the accumulator 23.9 us, inlined and vectorised 18.3, the input copy gathered a
    vector at a time 16.1 (each alone, 2 Zen 4 threads). The write-back's tiles transposed in
    registers too (8 or 7 pixels x 16 channels into 16 rows, the epilogue along the pixels) ran
    0.81-0.97x cold on 8-pixel tiles but 0.96-1.02x warm, 1.07-1.29x on MobileNet-V1's 7-pixel
    ones (1.10-1.47x with masked stores of 7 lanes), and on the 8-pixel ones alone MobileNet-V1
    and -V2 1.002x and 0.996x as builds: not kept (intel-r-xeon-r-processor-rocketlake-2c,
    2026-12-07; BENCHMARKS.md, "Depthwise copies transposed in registers")."""
    func = kmod["main"].with_attr("layout_free_buffers", [plan.weight])
    sch, conv = common._opened(func, convolution._GROUP, plan.epilogue)
    lanes = plan.lanes
    if not plan.padded:  # the input read in place: copy it all the same, channels innermost
        sch.cache_read(conv, 0, "global")
    data = sch.get_producers(conv)[0]
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    f_o, f_i = sch.split(f, [None, lanes])
    x_o, x_i = sch.split(x, [None, plan.row])
    sch.reorder(n, f_o, y, x_o, rc, ry, rx, x_i, f_i)
    acc = sch.cache_write(conv, 0, "local")
    sch.transform_layout(conv, ("write", 0), lambda a, b, c, d: (a, c, d, b))
    epilogue = convolution._epilogue_inlined(sch, acc, plan.epilogue)
    common._per_tile(sch, acc, x_o, epilogue)
    convolution._write_back_by_channels(sch, acc, epilogue, lanes, plan.row)
    tasks = sch.fuse(n, f_o)
    sch.parallel(tasks)
    sch.vectorize(f_i)
    for loop in (x_i, rx, ry):
        sch.unroll(loop)
    sch.decompose_reduction(conv, rc)
    sch.transform_layout(data, ("write", 0), lambda a, b, c, d: (a, b // lanes, c, d, b % lanes))
    sch.compute_at(data, tasks, preserve_unit_loops=True)  # a map of one row keeps its row loop
    channel, row, column = sch.get_loops(data)[-3:]
    sch.reorder(row, column, channel)
    _copied_transposed(sch, data, row, lanes, plan.padded and not convolution._copied(kmod))
    return common._packed(sch, target)


def _copied_transposed(sch, data, row, lanes: int, pads: bool) -> None:
    """The input copy ``data`` (under its task: ``row column channel``) a tile of ``lanes``
    channels x a row segment at a time, transposed in registers (:mod:`.transposed`), its padding
    (where it ``pads``: a padding of 0 is a copy, which ``decompose_padding`` refuses) zeroed first
    by a stage of its own; where no segment of 2 or more pixels divides
    the row, a vector of channels at a time (each lane a scalar load). Why: the copy vectorised
    along the channels was about half of a depthwise kernel's time (``perf``: MobileNet-V1's
    128-channel 3x3 at 56 x 56); transposed, MobileNet-V1's depthwise kernels ran 0.60-0.97x their
    time warm, 0.70-0.96x cold (each alone, 3 alternating rounds, 2 threads,
    intel-r-xeon-r-processor-rocketlake-2c, 2026-12-07; BENCHMARKS.md, "Depthwise copies
    transposed in registers")."""
    if pads:
        fill = sch.decompose_padding(data, row)  # zeros everywhere, then the input's own pixels
        sch.vectorize(sch.get_loops(fill)[-1])
    _, column, channel = sch.get_loops(data)[-3:]
    if not transposed.tensorized(sch, data, column, lanes):
        sch.vectorize(channel)


def _schedule_group(kmod: tvm.IRModule, plan: _GroupPlan) -> tvm.tirx.PrimFunc:
    """The grouped-convolution schedule: ``n f y_o x_o | rc ry rx | y_i x_i``, ``x_i`` a row
    segment (vectorised), ``y_i`` the tile's rows (unrolled), accumulated in a ``local`` tile; the
    window loops unrolled; ``n f y_o`` one parallel loop. The epilogue's last block is inlined into
    the tile's write-back (:func:`.convolution._epilogue_inlined`), which is vectorised as the
    segment, and, depthwise, the padded rows a task reads are copied under it. Why: the write-back and the
    epilogue were scalar loops through an intermediate of the whole output (a SiLU's sigmoid one
    element at a time) and the padding a parallel stage over the whole input, a pass through
    memory of its own; EfficientNet's (Hugging Face's default configuration) depthwise kernels
    this template takes at 112 and 56 wide ran 0.50-0.62x their time after, 0.83x a 5x5 at 28
    wide, a strided one 1.01x; a 64-channel 3x3 at 128 x 128 with a bias 0.70x, with a SiLU 0.53x.
    A grouped one (4 channels a group: ResNeXt-50's first stage, 128 channels at 56 x 56) copying
    its padded rows per task ran 1.31x (each of a group's output channels copied the group's input
    again): groups of several channels keep the stage (each alone, 5 alternating rounds, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c,
    2026-12-07; BENCHMARKS.md, "MobileViT's 1x1s on planes of 4 KiB, its one-vector matmuls, the
    grouped row template's epilogue")."""
    sch, conv = common._opened(kmod["main"], convolution._GROUP, plan.epilogue)
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    y_o, y_i = sch.split(y, [None, plan.rows])
    x_o, x_i = sch.split(x, [None, plan.row])
    sch.reorder(n, f, y_o, x_o, rc, ry, rx, y_i, x_i)
    acc = sch.cache_write(conv, 0, "local")
    epilogue = convolution._epilogue_inlined(sch, acc, plan.epilogue)
    common._per_tile(sch, acc, x_o, epilogue)
    *_, rows, segment = sch.get_loops(acc)
    sch.unroll(rows)
    sch.vectorize(segment)
    if epilogue:  # of another shape (:func:`.convolution._write_back_by_channels`): its innermost loop
        sch.vectorize(sch.get_loops(sch.get_sblock(epilogue[-1]))[-1])
    task = sch.fuse(n, f, y_o)
    sch.parallel(task)
    sch.vectorize(x_i)
    for loop in (y_i, rx, ry):
        sch.unroll(loop)
    if plan.padded and plan.depthwise:  # a task reads its own channel's rows: they are copied for it alone
        sch.decompose_reduction(conv, rc)
        pad = sch.get_sblock("pad_temp")
        sch.compute_at(pad, task, preserve_unit_loops=True)
        sch.vectorize(sch.get_loops(pad)[-1])
    else:  # each of a group's output channels would copy the group's input again: one stage first
        convolution._reduction_and_padding(sch, conv, rc, plan.padded)
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)
