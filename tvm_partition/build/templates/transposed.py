"""A tile of ``lanes`` channels x ``k`` pixels (``k <= lanes``) transposed in vector registers: a
tensor intrinsic the templates tensorize copies with (a channels-last copy of an NCHW input: the
depthwise template's, a long 1x1's; a transpose kernel between NCHW and NHWC, either way, or
between tokens ``[1, H*W, C]`` and a map).

Why: such a copy, vectorised along the channels, reads each vector's lanes from ``lanes`` planes;
LLVM has no gathers on our x86 targets (:func:`tvm_partition.devices.codegen_target`), so each
lane was a scalar load and an insert (``vmovss`` / ``vinsertps``): half the time of MobileNet-V1's
128-channel depthwise 3x3 at 56 x 56 (``perf``). Here each of the tile's rows is one vector load
(from NCHW: ``k`` contiguous pixels of one channel, widened with zeros; from NHWC: a vector of
channels, the rows past ``k`` zeros), the transposition a butterfly of two-input shuffles
(``log2(lanes)`` stages of ``lanes`` shuffles, each one ``vpermt2ps`` on AVX-512), each row of
the result one vector store (to NCHW: its first ``k`` lanes). A 128-channel 56 x 56 map copied
channels last in 16-channel blocks: 56 -> 23 us (2 threads, intel-r-xeon-r-processor-rocketlake-2c,
2026-12-07).

The TVM facts it relies on: ``tirx.Shuffle`` of several vectors is one LLVM ``shufflevector`` of
their concatenation (``CodeGenLLVM``), a vector ``Bind`` a value LLVM keeps in a register, and
``tensorize`` matches a region of more dimensions than the description's buffer only where the
extra ones lead and have extent 1: the input's row is a dimension of the description (``lanes x 1
x k``), not squeezed.
"""

from __future__ import annotations

import dataclasses
import functools

from . import common


def _butterfly(lanes: int) -> list[tuple[int, int, list[int], list[int]]]:
    """The transposition's shuffles in order: ``(i, j, low, high)``, rows ``i`` and ``j`` becoming
    ``shuffle(i, j, low)`` and ``shuffle(i, j, high)`` (indices into the concatenation ``i ++ j``).
    Stage ``t`` (``lanes/2 .. 1``) swaps, between rows ``i`` and ``j = i + t`` (``i & t == 0``), the
    blocks of ``t`` lanes off the diagonal; after the last, row ``c`` holds column ``c``."""
    steps = []
    t = lanes // 2
    while t:
        for i in (i for i in range(lanes) if not i & t):
            low = [lane if not lane & t else lanes + lane - t for lane in range(lanes)]
            high = [lane + t if not lane & t else lanes + lane for lane in range(lanes)]
            steps.append((i, i + t, low, high))
        t //= 2
    return steps


@dataclasses.dataclass(frozen=True)
class Tile:
    """A tile the intrinsic transposes: ``lanes`` channels x ``k`` pixels (``2 <= k <= lanes``,
    ``lanes`` a power of two), read with the channels as rows (``channel_rows``: a row of ``k``
    pixels each, one dimension of extent 1 between: an NCHW plane's row) or the pixels as rows (a
    row of ``lanes`` channels each: NHWC), written the other way; ``order``: the copy block's
    iterators (``"cx"``: the channel's first) and its two loops over the tile, outer first."""

    lanes: int
    k: int
    channel_rows: bool = True
    order: str = "cx"
    loops: str = "xc"


def _source(tile: Tile) -> tuple[str, str]:
    """TVMScript of the intrinsic's description and implementation, both buffers strided but for
    their last dimension: ``b[x, c] = a[c, 0, x]`` (channel rows in), or ``b[c, 0, x] = a[x, c]``."""
    lanes, k = tile.lanes, tile.k
    shapes = [(lanes, 1, k), (k, lanes)] if tile.channel_rows else [(k, lanes), (lanes, 1, k)]
    regions = [", ".join("0" if e == 1 else f"0:{e}" for e in shape) for shape in shapes]
    access = {3: "[vc, 0, vx]", 2: "[vx, vc]"}

    def header(strided: bool) -> str:
        strides = [(", strides=[s{n}0, s{n}1, 1]" if len(shape) == 3 else f", strides=[s{n}0, 1]").format(n=n)
                   if strided else "" for n, shape in zip("ab", shapes)]
        return (f"    a = T.match_buffer(a_handle, {shapes[0]}, 'float32', offset_factor=1{strides[0]})\n"
                f"    b = T.match_buffer(b_handle, {shapes[1]}, 'float32', offset_factor=1{strides[1]})\n"
                f"    with T.sblock('root'):\n"
                f"        T.reads(a[{regions[0]}])\n"
                f"        T.writes(b[{regions[1]}])\n")

    extents = {"x": k, "c": lanes}
    iters = ", ".join(f"v{i}" for i in tile.order)
    signature = "(a_handle: T.handle, b_handle: T.handle) -> None:\n"
    description = (f"@T.prim_func(s_tir=True)\ndef description{signature}" + header(False)
                   + f"        for {tile.loops[0]}, {tile.loops[1]} in T.grid({extents[tile.loops[0]]}, {extents[tile.loops[1]]}):\n"
                     f"            with T.sblock('transposed'):\n"
                     f"                {iters} = T.axis.remap('SS', [{', '.join(tile.order)}])\n"
                     f"                b{access[len(shapes[1])]} = a{access[len(shapes[0])]}\n")
    rows, width = (lanes, k) if tile.channel_rows else (k, lanes)
    vector = f"T.float32x{lanes}"
    lines = []
    for r in range(lanes):  # the rows read, each widened with zeros to a whole vector; then rows of zeros
        if r >= rows:
            lines.append(f"r{r}: T.let[{vector}] = T.Broadcast(T.float32(0), {lanes})")
            continue
        row = f"a[{r}, 0, T.Ramp(0, 1, {width})]" if len(shapes[0]) == 3 else f"a[{r}, T.Ramp(0, 1, {width})]"
        if width < lanes:
            zeros = "T.float32(0)" if lanes - width == 1 else f"T.Broadcast(T.float32(0), {lanes - width})"
            row = f"T.Shuffle([{row}, {zeros}], {list(range(lanes))})"
        lines.append(f"r{r}: T.let[{vector}] = {row}")
    names = {r: f"r{r}" for r in range(lanes)}
    for n, (i, j, low, high) in enumerate(_butterfly(lanes)):
        new = {i: f"s{n}_0", j: f"s{n}_1"}
        for row, indices in ((i, low), (j, high)):
            lines.append(f"{new[row]}: T.let[{vector}] = T.Shuffle([{names[i]}, {names[j]}], {indices})")
        names.update(new)
    for r in range(width):  # row r of the transposition: its first `rows` lanes
        value = names[r] if rows == lanes else f"T.Shuffle([{names[r]}], {list(range(rows))})"
        target = f"b[{r}, T.Ramp(0, 1, {rows})]" if len(shapes[1]) == 2 else f"b[{r}, 0, T.Ramp(0, 1, {rows})]"
        lines.append(f"{target} = {value}")
    return description, (f"@T.prim_func(s_tir=True)\ndef implementation{signature}"
                         + "".join(f"    s{n}{d} = T.int32()\n" for n in "ab" for d in "01")
                         + header(True) + "".join(f"        {line}\n" for line in lines))


@functools.cache
def intrinsic(tile: Tile) -> str:
    """The transposition of ``tile`` (float32), registered once a tile; its name."""
    from tvm.s_tir import TensorIntrin
    from tvm.script import from_source

    description, implementation = _source(tile)
    name = (f"tvm_partition_transposed_{tile.lanes}x{tile.k}_{'channels' if tile.channel_rows else 'pixels'}"
            f"_{tile.order}_{tile.loops}")
    TensorIntrin.register(name, from_source(description), from_source(implementation), override=True)
    return name


def tensorized(sch, copy, column, lanes: int) -> bool:
    """The loop over a row's pixels ``column`` of the block ``copy``, directly above its loop over
    ``lanes`` channels, cut into segments (the largest number of pixels up to ``lanes`` that divides
    the row) each transposed by the intrinsic; False, and nothing done, where no segment of 2 pixels
    or more divides the row or the copy moves other than float32 (the intrinsic's: a float16
    depthwise kernel's copy failed to match it)."""
    block = sch.get(copy)
    if any(str(r.source.dtype) != "float32" for r in list(block.reads) + list(block.writes)):
        return False
    segment = common._row(int(sch.get(column).extent), lanes)
    if segment < 2:
        return False
    _, pixels = sch.split(column, [None, segment])
    sch.tensorize(pixels, intrinsic(Tile(lanes, segment)))
    return True
