"""A tile of ``lanes`` rows x ``k`` columns (``k <= lanes``) transposed in vector registers: a tensor
intrinsic the templates tensorize copies with (a channels-last copy of an NCHW input: the depthwise
template's).

Why: such a copy, vectorised along the channels, reads each vector's lanes from ``lanes`` planes;
LLVM has no gathers on our x86 targets (:func:`tvm_partition.devices.codegen_target`), so each
lane was a scalar load and an insert (``vmovss`` / ``vinsertps``): half the time of MobileNet-V1's
128-channel depthwise 3x3 at 56 x 56 (``perf``). Here each of the tile's rows is one vector load
(``k`` contiguous pixels of one channel), the transposition a butterfly of two-input shuffles
(``log2(lanes)`` stages of ``lanes`` shuffles, each one ``vpermt2ps`` on AVX-512), each of its
``k`` columns one vector store. A 128-channel 56 x 56 map copied channels last in 16-channel
blocks: 56 -> 23 us (2 threads, intel-r-xeon-r-processor-rocketlake-2c, 2026-12-07).

The TVM facts it relies on: ``tirx.Shuffle`` of several vectors is one LLVM ``shufflevector`` of
their concatenation (``CodeGenLLVM``), a vector ``Bind`` a value LLVM keeps in a register, and
``tensorize`` matches a region of more dimensions than the description's buffer only where the
extra ones lead and have extent 1: the input's row is a dimension of the description (``lanes x 1
x k``), not squeezed.
"""

from __future__ import annotations

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


def _source(lanes: int, k: int) -> tuple[str, str]:
    """TVMScript of the intrinsic's description and implementation: ``b[x, c] = a[c, 0, x]``,
    ``a`` ``lanes`` rows of ``k`` pixels (a 4-d input's region: channels, one row, pixels), ``b``
    ``k`` pixels of ``lanes`` channels, both strided but for their last dimension."""
    def header(strided: bool) -> str:
        a_strides, b_strides = (", strides=[sa0, sa1, 1]", ", strides=[sb0, 1]") if strided else ("", "")
        return (f"    a = T.match_buffer(a_handle, ({lanes}, 1, {k}), 'float32', offset_factor=1{a_strides})\n"
                f"    b = T.match_buffer(b_handle, ({k}, {lanes}), 'float32', offset_factor=1{b_strides})\n"
                f"    with T.sblock('root'):\n"
                f"        T.reads(a[0:{lanes}, 0, 0:{k}])\n"
                f"        T.writes(b[0:{k}, 0:{lanes}])\n")

    signature = "(a_handle: T.handle, b_handle: T.handle) -> None:\n"
    description = (f"@T.prim_func(s_tir=True)\ndef description{signature}" + header(False)
                   + f"        for x, c in T.grid({k}, {lanes}):\n"
                     f"            with T.sblock('transposed'):\n"
                     f"                vc, vx = T.axis.remap('SS', [c, x])\n"  # the copy's own order
                     f"                b[vx, vc] = a[vc, 0, vx]\n")
    vector = f"T.float32x{lanes}"
    lines = []
    for c in range(lanes):  # a channel's k pixels, widened with zeros to a whole vector
        row = f"a[{c}, 0, T.Ramp(0, 1, {k})]"
        if k < lanes:
            zeros = "T.float32(0)" if lanes - k == 1 else f"T.Broadcast(T.float32(0), {lanes - k})"
            row = f"T.Shuffle([{row}, {zeros}], {list(range(lanes))})"
        lines.append(f"r{c}: T.let[{vector}] = {row}")
    names = {c: f"r{c}" for c in range(lanes)}
    for n, (i, j, low, high) in enumerate(_butterfly(lanes)):
        new = {i: f"s{n}_0", j: f"s{n}_1"}
        for row, indices in ((i, low), (j, high)):
            lines.append(f"{new[row]}: T.let[{vector}] = T.Shuffle([{names[i]}, {names[j]}], {indices})")
        names.update(new)
    lines += [f"b[{x}, T.Ramp(0, 1, {lanes})] = {names[x]}" for x in range(k)]
    return description, (f"@T.prim_func(s_tir=True)\ndef implementation{signature}"
                         "    sa0 = T.int32()\n    sa1 = T.int32()\n    sb0 = T.int32()\n"
                         + header(True) + "".join(f"        {line}\n" for line in lines))


@functools.cache
def intrinsic(lanes: int, k: int) -> str:
    """The transposition of a ``lanes x k`` float32 tile into ``k x lanes`` (``2 <= k <= lanes``,
    ``lanes`` a power of two), registered once a shape; its name."""
    from tvm.s_tir import TensorIntrin
    from tvm.script import from_source

    description, implementation = _source(lanes, k)
    name = f"tvm_partition_transposed_{lanes}x{k}"
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
    sch.tensorize(pixels, intrinsic(lanes, segment))
    return True
