"""The hand-written direct-convolution schedule (tvm_partition.build.templates), checked against
TVM's default schedule of the same kernel (the oracle: the PrimFunc unscheduled), and the build's
lifting of its weight packing to load time, checked against the unpartitioned model."""

from __future__ import annotations

import dataclasses
import functools
import re

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.relax.frontend import nn

from helpers import nn_model
from test_transfer import TARGET, kernel, matmul, run
from tvm_partition.build import templates
from tvm_partition.build.executable import kernel_calls, kernel_schedules, run_kernel_schedules
from tvm_partition.cli.compile import check, compile_model
from tvm_partition.devices import parse_devices


def conv(c_in, c_out, size, k=3, stride=1, groups=1, epilogue="bias_relu", padding=None):
    def build():
        x = relax.Var("x", relax.TensorType((1, c_in, size, size), "float32"))
        w = relax.Var("w", relax.TensorType((c_out, c_in // groups, k, k), "float32"))
        b = relax.Var("b", relax.TensorType((1, c_out, 1, 1), "float32"))
        y = relax.op.nn.conv2d(x, w, strides=stride, padding=k // 2 if padding is None else padding, groups=groups)
        if epilogue is None:
            return [x, w], y
        if epilogue == "batch_norm":  # as the ONNX importer leaves an unfolded batch norm
            y = relax.op.add(relax.op.multiply(relax.op.divide(relax.op.subtract(y, b), b), b), b)
            return [x, w, b], relax.op.nn.relu(y)
        if epilogue == "hard_swish":  # MobileNet-V3's, as PyTorch exports it: y * clip(y + 3, 0, 6) / 6
            y = relax.op.add(y, b)
            three, six = relax.const(3.0, "float32"), relax.const(6.0, "float32")
            return [x, w, b], relax.op.multiply(y, relax.op.divide(relax.op.clip(relax.op.add(y, three), 0, 6), six))
        if epilogue == "slice":  # a slice of the output channels (of channels padded to whole vectors)
            return [x, w], relax.op.strided_slice(y, axes=[1, 3], begin=[0, 0], end=[1, 1])
        if epilogue == "scalars":  # dynamic quantization's: scaled by a product of two scalars, one
            # computed at run time; FuseOps puts their multiply, of shape (), after the convolution
            s, t = relax.Var("s", relax.TensorType((), "float32")), relax.Var("t", relax.TensorType((), "float32"))
            return [x, w, b, s, t], relax.op.nn.relu(relax.op.add(relax.op.multiply(y, relax.op.multiply(s, t)), b))
        if epilogue == "scale":  # a squeeze-and-excitation's: a map scaled by the 1x1 map computed
            m = relax.Var("m", relax.TensorType((1, c_out, 5, 5), "float32"))
            return [x, w, b, m], relax.op.multiply(m, relax.op.sigmoid(relax.op.add(y, b)))
        return [x, w, b], relax.op.nn.relu(relax.op.add(y, b))

    return kernel(build)


@pytest.mark.parametrize("c_in,c_out,size,k,stride,epilogue", [
    (8, 32, 8, 3, 1, "bias_relu"),  # ResNet's 3x3
    (16, 16, 7, 1, 1, None),  # a 1x1 without padding or epilogue: no pad block
    (3, 16, 12, 7, 2, "bias_relu"),  # a strided stem
    (8, 16, 6, 3, 1, "batch_norm"),  # four element-wise blocks inlined into the last
    (16, 128, 4, 3, 1, "bias_relu"),  # 4 wide: a tile of several vectors of output channels
    (8, 24, 13, 1, 1, "bias_relu"),  # 24 channels: half-width vectors on AVX-512 (SqueezeNet's 1000)
    (3, 16, 12, 3, 2, "hard_swish"),  # MobileNet-V3's stem: the epilogue inlined into the write-back
    (24, 32, 1, 1, 1, "scale"),  # the epilogue writes a larger tensor: its own loop nest
    (8, 32, 8, 3, 1, "scalars"),  # an operand computed after the convolution, inlined into its reader
    (8, 32, 8, 3, 1, "slice"),  # ... or a smaller one (one channel's first column)
])
def test_the_template_computes_what_the_default_schedule_computes(c_in, c_out, size, k, stride, epilogue):
    kmod = conv(c_in, c_out, size, k, stride, epilogue=epilogue)
    func = templates.schedule(kmod, TARGET)
    assert func is not None and func.attrs["tirx.is_scheduled"]
    text = func.script()
    assert "T.vectorized" in text and "layout_rewrite_preproc" in text
    seen = templates.common._epilogue_operands_inlined(kmod)  # the kernel the templates see
    plan = templates.convolution._pointwise_plan(seen, TARGET) or templates.convolution._plan(seen, TARGET)
    assert plan is not None and ("T.parallel" in text) == plan.parallel
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size,k,parallel", [(1, 1, False), (4, 3, True)])
def test_a_convolution_too_small_for_the_thread_pool_runs_serial(size, k, parallel):
    """Below transfer.SERIAL_FLOPS no parallel loop: MobileNet-V3-Small's 14 squeeze-and-excitation
    1x1s on 1x1 maps (64 -> 240: 31k FLOP) ran 35 us summed serial, 50 with the thread pool; a 3x3
    at 4x4 (4.4 MFLOP) keeps its parallel loop."""
    kmod = conv(64, 240, size, k, 1)
    assert templates.convolution._plan(kmod, TARGET).parallel is parallel
    func = templates.schedule(kmod, TARGET)
    assert ("T.parallel" in func.script()) is parallel
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


def test_narrow_outputs_take_several_vectors_of_output_channels_a_tile():
    # AVX-512 (32 registers, 16 lanes): 14-wide rows one vector, 8-wide and narrower two; never
    # fewer than MIN_CHANNEL_BLOCKS blocks for the parallel loop; AVX2 (16 registers): 4 wide and narrower
    assert [templates.convolution._blocks(row, 512, 16, 32) for row in (14, 8, 7, 4, 2)] == [1, 2, 2, 2, 2]
    assert [templates.convolution._blocks(row, 512, 8, 16) for row in (12, 7, 4, 2)] == [1, 1, 2, 2]
    assert templates.convolution._blocks(7, 32, 16, 32) == 1 and templates.convolution._blocks(4, 128, 16, 32) == 2
    assert templates.convolution._blocks(7, 48, 16, 32) == 1  # 3 vectors: no whole pair
    kmod = conv(16, 128, 4)
    lanes = templates.common.vector_lanes(TARGET)[0]
    blocks = templates.convolution._plan(kmod, TARGET).blocks
    assert blocks > 1 and templates.inner_tiles(kmod, TARGET) == {1: blocks * lanes}


@pytest.mark.parametrize("kmod,tile", [
    (conv(16, 64, 28), (4, 2)),  # 4 divides the width: 4 pixels x 2 vectors
    (conv(16, 64, 32, k=1, stride=1, padding=0), (6, 2)),  # a 1x1 reading 4 KiB planes: AVX2's 1x1 tile
    (conv(16, 64, 64, k=1, stride=2, padding=0), (6, 2)),  # ... strided, from 16 KiB planes
    (conv(16, 64, 32), (4, 2)),  # a 3x3 on those planes
    (conv(16, 64, 14), (7, 1)),  # 14 wide: 2 pixels x 2 vectors would starve the multiply-adds
    (conv(16, 32, 28), (7, 1)),  # 32 channels: a pair of vectors would leave 2 blocks for the parallel loop
], ids=["28-wide", "1x1-4KiB-planes", "strided-1x1", "3x3-4KiB-planes", "14-wide", "32-channels"])
def test_on_avx2_two_vectors_of_4_pixels_where_4_divides_the_width(kmod, tile):
    avx2 = planned_for("znver3")
    assert templates.common.vector_lanes(avx2) == (8, 16)
    plan = templates.convolution._plan(kmod, avx2)
    assert (plan.row, plan.blocks) == tile
    assert templates.inner_tiles(kmod, avx2) == {1: 8 * tile[1]}


@pytest.mark.parametrize("kmod,tile", [
    (conv(64, 256, 56, k=1, padding=0), (6, 2)),  # ResNet-50's 64 -> 256: 6 pixels x 2 vectors, a tile of 2 last in a row
    (conv(256, 128, 28, k=1, padding=0), (6, 2)),
    (conv(256, 128, 14, k=1, padding=0), (6, 2)),  # 7 x 1 before
    (conv(512, 128, 7, k=1, padding=0), (7, 1)),  # 7 wide: a tile of 6 and one of 1 lost
    (conv(64, 64, 28), (4, 2)),  # a 3x3 keeps its tile: 6 x 2 ran 1.2-2x slower
    (conv(16, 64, 32, k=1, padding=0), (6, 2)),  # 4 KiB planes: 6 x 2 ran 0.68-0.94x of 8 x 1 there
    (conv(64, 256, 64, k=1, padding=0), (6, 2)),  # 16 KiB planes (MobileViT-S's 64 -> 256 at 64 x 64: 0.77x)
], ids=["56-wide", "28-wide", "14-wide", "7-wide", "3x3", "aliased", "aliased-16KiB"])
def test_on_avx2_a_1x1_takes_6_pixels_by_2_vectors(kmod, tile):
    """12 accumulators of AVX2's 16 registers on a 1x1 at least 14 wide (AVX2_1X1_ROW)."""
    avx2 = planned_for("znver2")
    assert templates.convolution._pointwise_plan(kmod, avx2) is None
    plan = templates.convolution._plan(kmod, avx2)
    assert (plan.row, plan.blocks) == tile


def test_a_1x1_tile_of_6_pixels_computes_the_convolution_where_6_does_not_divide_the_width():
    """The AVX2 1x1 tile, its last tile in a row of 2 pixels, run here on this machine's vectors."""
    for kmod in (conv(16, 64, 14, k=1, padding=0), conv(32, 64, 20, k=1, padding=0, epilogue=None)):
        plan = templates.convolution._plan(kmod, TARGET)
        func = templates.convolution._schedule_conv(kmod, TARGET, dataclasses.replace(plan, row=6, blocks=2))
        np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod,wide,narrow", [
    (conv(16, 128, 14), (7, 2), (14, 1)),  # 14 wide: 7 pixels x 2 vectors where 14 x 1 waited on its loads
    (conv(16, 128, 56, k=1, padding=0), "1x1", "1x1"),  # a strip of 16 x 56 x 4 B x 2 rows (7 KiB): the 1x1 template
    (conv(256, 128, 56, k=1, padding=0), (7, 2), "1x1"),  # a strip of 112 KiB: the direct template's 7 x 2
    (conv(144, 24, 56, k=1, padding=0), "1x1", "1x1"),  # 63 KiB, but 24 channels: no 7 x 2 (8-lane vectors)
    (conv(192, 32, 28, k=1, padding=0), "1x1", "1x1"),  # 84 KiB, but 32 channels: one vector, no pair
    (conv(3, 64, 56, k=7, stride=2), (7, 2), (14, 1)),  # a stem, rows first: 2 blocks of channels are enough
    (conv(32, 64, 4), (4, 1), (4, 1)),  # 2 blocks, channel blocks first: too few for the parallel loop
    (conv(16, 128, 16), (8, 2), (8, 2)),  # 7 does not divide the width
], ids=["14-wide", "1x1-small-strip", "1x1-large-strip", "1x1-large-strip-24-channels", "1x1-large-strip-32-channels",
        "stem", "64-channels-4-wide", "16-wide"])
def test_on_full_width_avx512_two_vectors_of_7_pixels(kmod, wide, narrow):
    """Sapphire/Emerald Rapids issue two 512-bit multiply-adds a cycle: a tile of 7 pixels x 2
    vectors loads 9 operands for 14 of them, 14 x 1 loads 15. Zen 4 (half-width) keeps its tiles.
    Ice Lake's server part keeps the 1x1 template over large strips (measured quicker there)."""
    ice = "1x1" if narrow == "1x1" else wide
    for mcpu, tile in (("emeraldrapids", wide), ("znver4", narrow), ("icelake-server", ice)):
        target = planned_for(mcpu)
        assert templates.common.vector_lanes(target) == (16, 32)
        if tile == "1x1":
            assert templates.convolution._pointwise_plan(kmod, target) is not None, mcpu
            continue
        assert templates.convolution._pointwise_plan(kmod, target) is None, mcpu
        plan = templates.convolution._plan(kmod, target)
        assert (plan.row, plan.blocks) == tile, mcpu


def test_a_tile_of_7_pixels_by_2_vectors_computes_the_convolution():
    """The full-width AVX-512 tile, run here on this machine's vectors (the plan's lanes are the host's)."""

    for kmod in (conv(16, 64, 14), conv(64, 32, 14, k=1, padding=0, epilogue=None)):
        plan = templates.convolution._plan(kmod, TARGET)
        func = templates.convolution._schedule_conv(kmod, TARGET, dataclasses.replace(plan, row=7, blocks=2))
        np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod,mcpu,tile", [
    (conv(16, 128, 17), "emeraldrapids", (7, 2)),  # prime width: 1 x 2 left the multiply-adds waiting
    (conv(16, 128, 17), "znver3", (4, 2)),  # ... on AVX2 too
    (conv(8, 32, 73, k=1, padding=0), "emeraldrapids", (14, 1)),  # one vector (32 channels): 1 x 1 -> 14 x 1
    (conv(16, 64, 27), "emeraldrapids", (7, 2)),  # rows first, full width: 9 x 1 -> 7 x 2
    (conv(16, 64, 27), "znver3", (9, 1)),  # ... AVX2: 4 x 2 holds fewer than twice 9
    (conv(16, 64, 27), "znver4", (9, 1)),  # ... Zen 4 (half-width): no paired tile
    (conv(64, 128, 12), "emeraldrapids", (12, 1)),  # channels first: 12 x 1 keeps the divisor
    (conv(16, 64, 14), "znver3", (7, 1)),  # 4 x 2 would hold fewer than twice 7
], ids=["17-wide", "17-wide-avx2", "73-wide-one-vector", "27-wide-rows-first", "27-wide-avx2", "27-wide-zen4",
        "12-wide-channels-first", "14-wide-avx2"])
def test_where_no_divisor_of_the_width_makes_a_good_tile_the_last_tile_of_a_row_is_shorter(kmod, mcpu, tile):
    target = planned_for(mcpu)
    plan = templates.convolution._plan(kmod, target)
    assert (plan.row, plan.blocks) == tile
    assert templates.inner_tiles(kmod, target) == {1: plan.lanes * plan.blocks}


@pytest.mark.parametrize("kmod,mcpu,tile", [
    (conv(512, 256, 13, k=1, padding=0), "emeraldrapids", (13, 2)),  # 13 x 1 fed one multiply-add a broadcast
    (conv(512, 256, 13, k=1, padding=0), "znver4", (13, 1)),  # half-width AVX-512: unmeasured, left alone
    (conv(64, 256, 13, k=1, padding=0), "emeraldrapids", (13, 1)),  # a short reduction: 13 x 2 ran 1.06x
    (conv(512, 256, 14, k=1, padding=0), "emeraldrapids", (7, 2)),  # 7 x 2 divides the width: kept
    (conv(512, 256, 13), "emeraldrapids", (13, 1)),  # a 3x3: 13 x 2 ran 1.3-1.5x, it keeps the divisor
], ids=["long-1x1", "long-1x1-zen4", "short-1x1", "long-1x1-14-wide", "3x3"])
def test_long_channels_first_1x1s_take_two_vectors_of_up_to_26_accumulators(kmod, mcpu, tile):
    target = planned_for(mcpu)
    plan = templates.convolution._plan(kmod, target)
    assert not plan.rows_outer and (plan.row, plan.blocks) == tile


def test_a_long_1x1_on_two_vectors_of_13_pixels_computes_the_convolution():

    kmod = conv(256, 64, 13, k=1, padding=0)
    plan = dataclasses.replace(templates.convolution._plan(kmod, TARGET), row=13, blocks=2)
    np.testing.assert_allclose(run(templates.convolution._schedule_conv(kmod, TARGET, plan)), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod,chunk", [
    (conv(2048, 128, 7), 256),  # FCN's head: 2048 channels x 9 taps, 2.4 MB a block of 2 x 16 channels
    (conv(2048, 64, 8), 512),  # one vector a block (8 wide): 1.2 MB
    (conv(512, 128, 7), 0),  # 590 KB a block: ran the same with chunks, keeps the whole reduction
    (conv(960, 128, 7), 0),  # 1.1 MB, but 960's powers of two make chunks of 64 channels: never measured
    (conv(2048, 128, 7, groups=2), 0),  # grouped: never chunked
], ids=["long", "one-vector", "short", "odd-channels", "grouped"])
def test_a_reduction_whose_weights_outgrow_the_l2_cache_runs_in_chunks(kmod, chunk):
    plan = templates.convolution._plan(kmod, planned_for("emeraldrapids"))
    assert plan.chunk == chunk, plan


@pytest.mark.parametrize("kmod,chunk", [(conv(256, 32, 9), 64), (conv(128, 16, 10, k=1, padding=0), 32),
                                        (conv(64, 32, 11, epilogue="batch_norm"), 16)],
                         ids=["3x3", "1x1", "batch-norm-tail"])
def test_a_convolution_in_chunks_of_its_reduction_computes_the_convolution(kmod, chunk):
    """The chunks forced on small kernels (run here: the host's lanes), a row's tiles under each
    chunk, the sums carried in the row's accumulator, the epilogue after the last chunk."""

    plan = dataclasses.replace(templates.convolution._plan(kmod, TARGET), chunk=chunk)
    func = templates.convolution._schedule_conv(kmod, TARGET, plan)
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


def prefetches_seen(monkeypatch, module) -> dict:
    """What a template hands the prefetches while it schedules, kept as it passes: ``"lines"`` the
    arguments of :func:`prefetch.lines`, ``"loops"`` those of ``module._prefetching`` after the
    function and its plan."""
    seen = {}
    lines, prefetching = templates.prefetch.lines, module._prefetching

    def lines_seen(*args):
        seen.setdefault("lines", args)
        return lines(*args)

    def prefetching_seen(func, plan, *loops):
        seen.setdefault("loops", loops)
        return prefetching(func, plan, *loops)

    monkeypatch.setattr(templates.prefetch, "lines", lines_seen)
    monkeypatch.setattr(module, "_prefetching", prefetching_seen)
    return seen


def evaluated(expr, variables, extents) -> np.ndarray:
    """``expr`` (an int64 TIR expression of ``variables``) at every point of the grid of
    ``extents``, compiled and run."""
    out = tvm.tirx.decl_buffer(extents, "int64", name="out")
    body = tvm.tirx.BufferStore(out, tvm.tirx.Cast("int64", expr), list(variables))
    for var, extent in reversed(list(zip(variables, extents))):
        body = tvm.tirx.For(var, 0, extent, tvm.tirx.ForKind.SERIAL, body)
    got = tvm.runtime.tensor(np.zeros(extents, "int64"))
    tvm.compile(tvm.IRModule({"main": tvm.tirx.PrimFunc([out], body).with_attr("global_symbol", "main")}),
                target=TARGET)["main"](got)
    return got.numpy()


@pytest.mark.parametrize("kmod,last", [(conv(32, 128, 7), False), (conv(64, 96, 7, k=1, padding=0), False),
                                       (conv(96, 64, 7, k=1, padding=0), True)], ids=["3x3", "1x1", "1x1-channels-last"])
def test_a_convolution_of_large_weights_prefetches_the_next_block_and_computes_the_convolution(kmod, last, monkeypatch):
    """Weights of :data:`PREFETCH_BYTES` or more (the bound forced down to these small kernels, and
    their parallel loop forced) make the direct template prefetch inside its reduction and compute
    what the default schedule does; under the bound, and where the rows are outer, it issues none."""
    plan = dataclasses.replace(templates.convolution._plan(kmod, TARGET), parallel=True, channels_last=last)
    for bound, rows_outer, prefetches in ((0, False, True), (float("inf"), False, False), (0, True, False)):
        monkeypatch.setattr(templates.convolution, "PREFETCH_BYTES", bound)
        func = templates.convolution._schedule_conv(kmod, TARGET, dataclasses.replace(plan, rows_outer=rows_outer))
        assert ("llvm.prefetch" in func.script()) == prefetches
        np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod,step", [(conv(512, 2048, 7, k=1, padding=0), 2), (conv(2048, 512, 7, k=1, padding=0), 2),
                                       (conv(512, 512, 7), 1), (conv(256, 256, 14), 1), (conv(128, 128, 28), 0),
                                       (conv(1024, 512, 14, k=1, padding=0), 8),
                                       (conv(1024, 1024, 1, k=1, padding=0), 0)],
                         ids=["512-2048", "2048-512", "3x3-7-wide", "3x3-14-wide", "under-1-mb", "1x1-14-wide", "one-tile"])
def test_a_tile_prefetches_at_steps_of_its_reduction_as_many_as_its_lines(kmod, step):
    """ResNet-50's stage 4 on this Xeon's tiles (7 x 2): a 1x1 of 512 input channels prefetches
    its 147 lines a tile every 2 channels (256 steps), a 3x3 at every channel (a few lines each);
    weights under :data:`PREFETCH_BYTES`, or read by fewer than :data:`PREFETCH_TILES` tiles (a
    1x1 map: DenseNet-121's classifier), none."""
    target = planned_for("emeraldrapids")
    plan = templates.convolution._plan(kmod, target)
    _, _, rows, width = (int(s) for s in kmod["main"].params[-1].shape)
    tiles, channels = -(-width // plan.row), int(kmod["main"].params[1].shape[1])
    assert templates.convolution._prefetch_step(plan, rows, tiles, channels, kmod) == step


def test_the_prefetches_of_a_block_s_rows_cover_the_next_block_s_weights_as_the_kernel_reads_them(monkeypatch):
    """Every cache line of packed weights that the convolution's update reads for output channels
    of block ``b + 1`` is prefetched by the tiles of block ``b`` (the block after the last is the
    first); anything more falls in the block after that (the slots' last lines): the update's own
    access, not the layout restated, the prefetch's addresses compiled and run for every task, tile,
    step and line."""
    kmod = conv(32, 128, 7)
    monkeypatch.setattr(templates.convolution, "PREFETCH_BYTES", 0)
    plan = dataclasses.replace(templates.convolution._plan(kmod, TARGET), rows_outer=False)
    seen = prefetches_seen(monkeypatch, templates.convolution)
    func = templates.convolution._schedule_conv(kmod, TARGET, plan)
    packed, start, elements, slot, slots = seen["lines"]
    *loops, rows = seen["loops"]
    per_line = templates.prefetch.LINE_BYTES // 4
    count = templates.prefetch.per_slot(elements, per_line, slots)
    size = int(np.prod([int(s) for s in packed.shape]))
    p = tvm.tirx.Var("p", "int64")
    got = evaluated(templates.prefetch.line(start, slot, p, count, per_line, size),
                    [loop.loop_var for loop in loops] + [p], [int(loop.extent) for loop in loops] + [count])

    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": func}))
    update = sch.get(sch.get_sblock("conv2d_nchw_update"))
    read = next(r for r in update.reads if r.source.same_as(packed))
    strides = [int(np.prod([int(s) for s in packed.shape[i + 1:]])) for i in range(len(packed.shape))]
    grid = [int(s) for s in kmod["main"].params[1].shape]  # the weights' ff rc ry rx (nn yy xx: any, the first)
    flat = sum(r.min * s for r, s in zip(read.region, strides))
    reads = evaluated(flat, [iv.var for iv in update.iter_vars], [1, grid[0], 1, 1, *grid[1:]]).reshape(grid)

    width = plan.blocks * plan.lanes
    blocks = grid[0] // width
    read_lines = [set((reads[b * width:(b + 1) * width] // per_line).ravel()) for b in range(blocks)]
    assert sorted(set().union(*read_lines)) == list(range(size // per_line))  # the oracle reads every line once
    tasks = got // per_line
    for b in range(blocks):
        prefetched = set(tasks[b * rows:(b + 1) * rows].ravel())
        nxt, after = read_lines[(b + 1) % blocks], read_lines[(b + 2) % blocks]
        assert nxt <= prefetched, b
        assert prefetched - nxt <= after and len(prefetched - nxt) < slots, b


@pytest.mark.parametrize("kmod,last", [
    (conv(1024, 256, 28, k=1, padding=0), True),  # FCN-ResNet50's dilated stage: 3.2 MB of input
    (conv(512, 1024, 28, k=1, stride=2, padding=0), True),  # ResNet-50's strided downsampling
    (conv(512, 2048, 28, k=1, padding=0), True),  # 1.6 MB read by 64 blocks of output channels
    (conv(1024, 1024, 14, k=1, padding=0), True),  # ResNeXt-50's: 0.8 MB read by 32
    (conv(1024, 256, 14, k=1, padding=0), True),  # ResNet-50's: 0.8 MB read by 8 blocks, 0.72-0.79x in the model
    (conv(1280, 320, 14, k=1, padding=0), True),  # PoolFormer's: 1 MB read by 10
    (conv(2048, 512, 7, k=1, padding=0), True),  # 0.4 MB read by 16
    (conv(512, 128, 28, k=1, padding=0), False),  # 1.6 MB read by 4: fits this Xeon's L2 cache
    (conv(1024, 128, 14, k=1, padding=0), False),  # DenseNet-121's into 128
    (conv(256, 1024, 14, k=1, padding=0), False),  # 256 channels
    (conv(256, 512, 56, k=1, stride=2, padding=0), False),  # strided, but 256 channels: 1.19-1.31x
    (conv(2048, 512, 28), False),  # 3x3 (reduction chunks instead)
    (conv(1024, 256, 28, k=1, padding=0, groups=32), False),  # grouped
], ids=["fcn", "strided", "read-by-64", "read-by-32", "read-by-8", "poolformer", "7-wide", "fits-l2", "into-128",
        "256-channels", "short", "3x3", "grouped"])
def test_long_1x1s_read_a_channels_last_copy_of_their_input(kmod, last):
    plan = templates.convolution._plan(kmod, planned_for("emeraldrapids"))
    assert plan.channels_last == last, plan


@pytest.mark.parametrize("kmod,ice_lake,emerald_rapids", [
    (conv(576, 128, 14, k=1, padding=0), True, False),  # Inception-v2's: 0.83x channels last on Ice Lake
    (conv(256, 1024, 14, k=1, padding=0), True, False),  # ResNet-50's expansion: 0.76x
    (conv(2048, 512, 7, k=1, padding=0), True, True),  # into 512 at 7 x 7: 0.86x
    (conv(512, 128, 7, k=1, padding=0), False, False),  # DenseNet's into 128 at 7 x 7: 1.09x, in place
    (conv(192, 128, 14, k=1, padding=0), False, False),  # a short reduction
    (conv(1024, 256, 28, k=1, padding=0), True, True),  # FCN's 3.2 MB of input: channels last on both
], ids=["inception", "expansion", "into-512", "densenet-7", "short", "fcn"])
def test_ice_lake_reads_long_1x1s_channels_last_at_any_size(kmod, ice_lake, emerald_rapids):
    assert templates.convolution._plan(kmod, planned_for("icelake-server")).channels_last == ice_lake
    assert templates.convolution._plan(kmod, planned_for("emeraldrapids")).channels_last == emerald_rapids


@pytest.mark.parametrize("kmod,parallel", [
    (conv(64, 32, 14, k=1, padding=0), True), (conv(32, 64, 12, k=1, stride=2, padding=0), True),
    (conv(48, 32, 7, k=1, padding=0, epilogue="batch_norm"), False),
    (conv(32, 32, 1, k=1, padding=0, epilogue="scale"), False),
], ids=["1x1", "strided", "batch-norm", "scale"])
def test_a_convolution_on_a_channels_last_copy_computes_the_convolution(kmod, parallel):
    """The copy forced on small kernels (run here: the host's lanes), in parallel and serial; its
    tiles transposed in registers where a segment of 2 or more pixels divides the row (14 and 12
    wide: 2 and 4 pixels), a vector of channels at a time where none does (7 and 1 wide)."""

    plan = dataclasses.replace(templates.convolution._plan(kmod, TARGET), channels_last=True, parallel=parallel)
    func = templates.convolution._schedule_conv(kmod, TARGET, plan)
    n, c, h, w = (int(x) for x in kmod["main"].params[0].shape)
    assert f"sblock_alloc_buffer(({', '.join(f'T.int64({e})' for e in (n, h, w, c))}))" in func.script(), "no copy"
    assert ("T.Shuffle" in func.script()) == (templates.common._row(w, plan.lanes) > 1)
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod,tile", [
    (conv(16, 64, 17), (7, 2)),
    (conv(8, 32, 13, k=1, padding=0), (7, 1)),
    (conv(16, 64, 11, epilogue="batch_norm"), (7, 2)),  # an epilogue of several blocks, inlined before the tile
    (conv(8, 32, 9, epilogue="slice"), (7, 2)),  # an epilogue of another shape: its own loop nest
    (conv(3, 32, 25, k=7, stride=2), (4, 2)),  # a strided stem (13 wide)
    (conv(64, 64, 13, groups=4), (4, 2)),  # groups of 16 output channels (8-lane vectors: AVX2's)
], ids=["3x3", "1x1", "batch-norm", "slice", "strided-stem", "grouped"])
def test_a_row_whose_last_tile_is_shorter_computes_the_convolution(kmod, tile):
    """Tiles that do not divide the width, run here (the plan's lanes are the host's; a group's
    vectors AVX2's): the tail's pixels under a predicate, the epilogue inlined into the write-back
    before it is placed."""

    target = TARGET if templates.convolution._plan(kmod, TARGET) is not None else AVX2
    plan = dataclasses.replace(templates.convolution._plan(kmod, target), row=tile[0], blocks=tile[1])
    func = templates.convolution._schedule_conv(kmod, target, plan)
    assert "T.where" in func.script()
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c_in,c_out,size,k,stride,rows_first", [
    (3, 16, 32, 7, 2, True),  # a stem: the padded input (3 x 38 x 38) outweighs the weights (16 x 3 x 7 x 7)
    (8, 64, 64, 1, 2, True),  # a strided 1x1 at a large size (a stride-1 one takes the 1x1 template)
    (32, 128, 4, 3, 1, False),  # a narrow deep layer: the weights outweigh the input
])
def test_the_parallel_loop_splits_the_larger_operand_between_the_threads(c_in, c_out, size, k, stride, rows_first):
    kmod = conv(c_in, c_out, size, k, stride)
    assert templates.convolution._plan(kmod, TARGET).rows_outer is rows_first
    func = templates.schedule(kmod, TARGET)
    loops = [m.group(1) for m in re.finditer(r"for (\w+) in T\.parallel", func.script())]
    assert any(("yy_ff_0" if rows_first else "ff_0_yy") in name for name in loops), loops
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c_in,c_out,size,k,stride,ice_lake_rows_first", [
    (64, 192, 56, 3, 1, False),  # Inception-v2's 3x3 at 56x56: 0.64x the time blocks first on Ice Lake
    (16, 32, 27, 5, 1, False),  # Inception-v1's 5x5: 0.53x
    (128, 128, 56, 3, 2, True),  # ResNet-50's strided 3x3: 1.28x blocks first, so rows first stays
    (3, 16, 32, 7, 2, True),  # a strided stem: within 4% either way
], ids=["3x3", "5x5", "strided-3x3", "stem"])
def test_ice_lake_runs_stride_1_convolutions_of_several_taps_over_channel_blocks_first(
        c_in, c_out, size, k, stride, ice_lake_rows_first):
    """Convolutions whose input outweighs their weights run rows first (the test above) but on the
    Sunny Cove CPUs, where those of several taps at stride 1 run channel blocks first on the same
    register tile (:data:`templates.convolution.SUNNY_COVE_BLOCKS_FIRST_TAPS`)."""
    kmod = conv(c_in, c_out, size, k, stride)
    ice, emerald = (templates.convolution._plan(kmod, planned_for(mcpu)) for mcpu in ("icelake-server", "emeraldrapids"))
    assert emerald.rows_outer and ice.rows_outer is ice_lake_rows_first
    assert (ice.row, ice.blocks) == (emerald.row, emerald.blocks)
    if not ice_lake_rows_first and size < 56:  # the order this plan gives, run here
        func = templates.convolution._schedule_conv(kmod, TARGET, dataclasses.replace(templates.convolution._plan(kmod, TARGET), rows_outer=False))
        assert any("ff_0_yy" in m.group(1) for m in re.finditer(r"for (\w+) in T\.parallel", func.script()))
        np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


def test_a_padding_that_pads_nothing_is_no_stage_of_its_own():
    """A strided 1x1 (ResNet's downsampling): TOPI writes its input's copy as ``pad_temp``; run as a
    parallel stage of its own it cost ResNet-18's 1x1s 2.4x their time. It is inlined."""
    kmod = conv(8, 64, 64, 1, 2, padding=0)
    assert templates.convolution._copied(kmod) and templates.convolution._plan(kmod, TARGET).padded
    func = templates.schedule(kmod, TARGET)
    assert 'T.sblock("pad_temp")' not in func.script() and func.script().count("T.parallel") == 1
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)
    assert not templates.convolution._copied(conv(8, 32, 8))  # a 3x3's padding stays


def residual_conv(c_in, c_out, size):
    """A 1x1 convolution + bias + residual add + ReLU, as ResNet's bottleneck ends."""
    def build():
        x = relax.Var("x", relax.TensorType((1, c_in, size, size), "float32"))
        w = relax.Var("w", relax.TensorType((c_out, c_in, 1, 1), "float32"))
        b = relax.Var("b", relax.TensorType((1, c_out, 1, 1), "float32"))
        r = relax.Var("r", relax.TensorType((1, c_out, size, size), "float32"))
        y = relax.op.add(relax.op.add(relax.op.nn.conv2d(x, w), b), r)
        return [x, w, b, r], relax.op.nn.relu(y)

    return kernel(build)


def residual_part():
    """A part of a convolution split along its rows, as TVM fuses it (``FuseOps``, ResNet-18's
    ``equal`` build): the slice of the residual it adds comes first, before the padding."""
    from tvm.script import tirx as T

    f32 = "float32"  # a name, not a string in the annotations (pyflakes reads those as names)

    @T.prim_func(private=True, s_tir=True)
    def main(r: T.Buffer((1, 32, 8, 8), f32), x: T.Buffer((1, 16, 4, 8), f32),
             w: T.Buffer((32, 16, 3, 3), f32), b: T.Buffer((1, 32, 1, 1), f32),
             out: T.Buffer((1, 32, 4, 8), f32)):
        T.func_attr({"tirx.noalias": True})
        sliced = T.sblock_alloc_buffer((1, 32, 4, 8))
        pad_temp = T.sblock_alloc_buffer((1, 16, 6, 10))
        conv = T.sblock_alloc_buffer((1, 32, 4, 8))
        biased = T.sblock_alloc_buffer((1, 32, 4, 8))
        summed = T.sblock_alloc_buffer((1, 32, 4, 8))
        for a0, a1, a2, a3 in T.grid(1, 32, 4, 8):
            with T.sblock("T_strided_slice_with_axes"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [a0, a1, a2, a3])
                sliced[v0, v1, v2, v3] = r[v0, v1, v2 + 4, v3]
        for i0, i1, i2, i3 in T.grid(1, 16, 6, 10):
            with T.sblock("pad_temp"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                pad_temp[v0, v1, v2, v3] = T.if_then_else(1 <= v2 and v2 < 5 and 1 <= v3 and v3 < 9,
                                                          x[v0, v1, v2 - 1, v3 - 1], T.float32(0.0))
        for n_, ff, yy, xx, rc, ry, rx in T.grid(1, 32, 4, 8, 16, 3, 3):
            with T.sblock("conv2d_nchw"):
                v_n, v_f, v_y, v_x, v_rc, v_ry, v_rx = T.axis.remap("SSSSRRR", [n_, ff, yy, xx, rc, ry, rx])
                with T.init():
                    conv[v_n, v_f, v_y, v_x] = T.float32(0.0)
                conv[v_n, v_f, v_y, v_x] = conv[v_n, v_f, v_y, v_x] \
                    + pad_temp[v_n, v_rc, v_y + v_ry, v_x + v_rx] * w[v_f, v_rc, v_ry, v_rx]
        for a0, a1, a2, a3 in T.grid(1, 32, 4, 8):
            with T.sblock("T_add"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [a0, a1, a2, a3])
                biased[v0, v1, v2, v3] = conv[v0, v1, v2, v3] + b[v0, v1, 0, 0]
        for a0, a1, a2, a3 in T.grid(1, 32, 4, 8):
            with T.sblock("T_add1"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [a0, a1, a2, a3])
                summed[v0, v1, v2, v3] = biased[v0, v1, v2, v3] + sliced[v0, v1, v2, v3]
        for a0, a1, a2, a3 in T.grid(1, 32, 4, 8):
            with T.sblock("compute"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [a0, a1, a2, a3])
                out[v0, v1, v2, v3] = T.max(summed[v0, v1, v2, v3], T.float32(0.0))

    return tvm.IRModule({"main": main.with_attr("global_symbol", "main")})


def test_a_part_that_slices_its_residual_first_takes_the_template():
    """The residual's slice is inlined into the add that reads it (it ran TVM's default schedule:
    4.6 ms for a part whose sibling ran the template in 70 us)."""
    kmod = residual_part()
    assert [b.name_hint for b in templates.common._root_blocks(kmod)][:2] == ["T_strided_slice_with_axes", "pad_temp"]
    done = templates.templated(kmod, TARGET)
    assert done is not None and done[1] == templates.CONV_LABEL
    # a split of it must cut whole channel tiles of the template it runs, not of no template
    assert templates.inner_tiles(kmod, TARGET).get(1, 0) >= templates.common.vector_lanes(TARGET)[0]
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod,tile", [
    (conv(3, 64, 64, k=7, stride=2), (8, 1)),  # ResNet's stem at 64 px: 32 x 32 planes (4 KiB), a reduction of 147
    (conv(3, 64, 56, k=7, stride=2), (7, 2)),  # ... at 112 px: 28 x 28 planes (3,136 B) keep two vectors
    (conv(64, 128, 32, k=1, padding=0), (8, 1)),  # a 1x1 of 64 input channels at 32 x 32
    (conv(256, 128, 32, k=1, padding=0), (8, 2)),  # ... of 256: a reduction long enough to keep two
    (residual_conv(256, 128, 32), (8, 1)),  # ... a residual read beside the output: one at any reduction
    (residual_conv(256, 128, 28), (7, 2)),  # ... on planes that do not alias
    (conv(16, 128, 16), (8, 2)),  # 16 x 16 planes (1 KiB): no alias
    (conv(64, 64, 32), (8, 2)),  # a 3x3 of 576 without a residual: 8 x 1 would halve the accumulators
    (conv(64, 64, 224), (14, 1)),  # ... at 224 wide: 14 x 1 holds as many as 7 x 2
    (conv(64, 64, 112), (7, 2)),  # ... at 112 wide: 112 x 112 planes (49 KiB) do not alias
], ids=["stem-32-wide", "stem-28-wide", "short-1x1", "long-1x1", "residual", "residual-28-wide", "16-wide",
        "3x3-32-wide", "3x3-224-wide", "3x3-112-wide"])
def test_output_planes_that_alias_in_the_l1_cache_take_one_vector_of_channels(kmod, tile):
    for mcpu in ("znver5", "emeraldrapids"):
        plan = templates.convolution._plan(kmod, planned_for(mcpu))
        assert (plan.row, plan.blocks) == tile, mcpu


def test_on_ice_lake_a_1x1_of_a_long_reduction_takes_4_channels_inside_its_vectors_of_pixels():
    """Ice Lake's server part: a 1x1 of 256 input channels or more takes 4 output channels x 7
    vectors of pixels, each vector feeding the 4 channels in turn (measured quicker there: the strip
    read once per 4 channels); shorter reductions keep 2 channels, other CPUs their tiles."""
    ice, emerald = planned_for("icelake-server"), planned_for("emeraldrapids")
    long, short = conv(256, 128, 56, k=1, padding=0), conv(128, 128, 56, k=1, padding=0)
    plan = templates.convolution._pointwise_plan(long, ice)
    assert (plan.channels, plan.channels_inner, plan.rows) == (templates.convolution.LONG_POINTWISE_CHANNELS, True, 2)
    assert templates.inner_tiles(long, ice) == {1: 4, 2: 2}
    assert templates.convolution._pointwise_plan(short, ice).channels == templates.convolution.POINTWISE_CHANNELS
    assert templates.convolution._pointwise_plan(long, emerald) is None  # the direct template's 7 x 2 there
    # the schedule itself, run here: the same outputs as the unscheduled kernel
    kmod = residual_conv(256, 16, 8)
    plan = dataclasses.replace(templates.convolution._pointwise_plan(kmod, TARGET), channels=4, channels_inner=True)
    func = templates.convolution._schedule_pointwise(kmod, TARGET, plan)
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod,rows", [
    # TARGET is a generic x86 (4 lanes, 16 registers): a tile of at most 4 vectors of pixels
    (conv(16, 32, 16, k=1), 1),  # a 16-wide row is 4 vectors
    (conv(8, 10, 8, k=1, epilogue="batch_norm"), 2),  # 10 channels: no whole vector of them
    (conv(6, 4, 12, k=1, epilogue=None), 1),  # no pad block; 12 wide: 3 vectors
    (residual_conv(24, 16, 8), 2),  # the residual read a vector at a time
], ids=["bias-relu", "10-channels", "12-wide", "residual"])
def test_a_1x1_convolution_is_vectorised_along_its_pixels(kmod, rows):
    done = templates.templated(kmod, TARGET)
    assert done is not None and done[1] == templates.POINTWISE_LABEL
    text = done[0].script()
    assert "T.parallel" in text and "T.vectorized" in text and "layout_rewrite_preproc" in text
    assert templates.inner_tiles(kmod, TARGET) == {1: templates.convolution.POINTWISE_CHANNELS, 2: rows}
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod,label", [
    (conv(16, 32, 16, k=1), templates.POINTWISE_LABEL),
    (conv(16, 32, 7, k=1), templates.CONV_LABEL),  # its padding a copy, inlined: no buffer but the tile
], ids=["1x1-template", "direct-template"])
def test_a_convolution_tile_calls_no_allocator(kmod, label):
    """A convolution template's accumulator tile kept on the stack (a ``global`` allocation under
    1 KiB, which TVM's LowerTVMBuiltin leaves as one) is held in registers by LLVM; as a ``local``
    one it became a TVMBackendAllocWorkspace call, a memset and a free per tile (the 1x1 template:
    MobileNet-V3-Large's 16 -> 64 at 112x112 2.1x slower) or per task (the direct template)."""
    func, name = templates.templated(kmod, TARGET)
    assert name == label
    mod = templates.without_packing(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}))
    lib = tvm.compile(mod, target=TARGET)
    source = (lib.mod.imports[0] if lib.mod.imports else lib.mod).inspect_source("ll")
    assert "TVMBackendAllocWorkspace" not in source
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod", [
    conv(16, 32, 7, k=1),  # 7 x 7: no whole rows in whole vectors
    conv(16, 32, 16, k=1, stride=2),  # strided: a gather per vector of pixels
    conv(16, 32, 16, k=3),  # not 1x1
    conv(16, 32, 14, k=1, padding=1),  # padded to 16 x 16: its pad block is no copy
    conv(16, 32, 2, k=1),  # the whole plane one vector: too few accumulators
], ids=["7-wide", "strided", "3x3", "padded", "one-vector"])
def test_other_convolutions_keep_vectors_of_output_channels(kmod):
    assert templates.label(kmod, TARGET) == templates.CONV_LABEL


@pytest.mark.parametrize("mcpu,pointwise", [("znver3", False), ("znver5", False), ("emeraldrapids", True)])
def test_a_1x1_on_planes_of_4_kib_takes_the_1x1_template_where_the_l1_holds_them(mcpu, pointwise):
    """Input planes of 4 KiB put each reduction step's pixels in the same L1 sets: the channel-vector
    template keeps the 1x1 (measured on a Zen 3), but on the Emerald Rapids VM the 1x1 template ran
    0.68-0.85x its time (ALIASED_INPUT_IGNORED); 16 KiB planes alike, 2.25 KiB planes take it anywhere."""
    target = planned_for(mcpu)
    for kmod in (conv(16, 32, 32, k=1, padding=0), conv(64, 256, 64, k=1, padding=0)):
        assert (templates.convolution._pointwise_plan(kmod, target) is not None) == pointwise
    assert templates.convolution._pointwise_plan(conv(16, 32, 24, k=1, padding=0), target) is not None


def test_timing_alone_runs_the_kernel_on_packed_weights():
    kmod = conv(8, 32, 8)
    packed = templates.without_packing(tvm.IRModule({"main": templates.schedule(kmod, TARGET)}))["main"]
    lanes = templates.common.vector_lanes(TARGET)[0]
    # the packing block stays, emptied (TVM's RemoveWeightLayoutRewriteBlock): the kernel reads the
    # weight parameter in the packed layout
    assert [int(x) for x in packed.params[1].shape] == [32 // lanes, 8, 3, 3, lanes]


@pytest.mark.parametrize("kmod", [
    conv(8, 10, 8),  # output channels not a whole number of vectors
    conv(16, 16, 8, groups=4),  # 4 channels a group, 8 wide: the replayed dense record was as fast
    conv(68, 68, 28, k=1, groups=2),  # grouped, 28 wide but 34 input channels a group (ShuffleNet's): likewise
], ids=["10-channels", "grouped-narrow", "grouped-deep"])
def test_the_template_leaves_other_kernels_alone(kmod):
    assert templates.schedule(kmod, TARGET) is None and not templates.applies(kmod, TARGET)
    assert templates.schedule(conv(8, 32, 8), tvm.target.Target({"kind": "cuda", "arch": "sm_90"})) is None


@pytest.mark.parametrize("c,groups,size,k,stride,epilogue", [
    (8, 8, 30, 3, 1, "bias_relu"),  # depthwise 3x3 (MobileNet-V2's), rows not a multiple of 4
    (10, 10, 56, 3, 2, "batch_norm"),  # depthwise, strided, no whole vectors of channels: 28 wide
    (16, 4, 28, 1, 1, None),  # grouped 1x1 (ShuffleNet's), 4 input channels a group, no padding
    (32, 8, 28, 3, 1, "bias_relu"),  # grouped 3x3, 4 channels a group (ResNeXt-50's first stage)
])
def test_the_grouped_template_computes_what_the_default_schedule_computes(c, groups, size, k, stride, epilogue):
    kmod = conv(c, c, size, k, stride, groups=groups, epilogue=epilogue)
    done = templates.templated(kmod, TARGET)
    assert done is not None and done[1] == templates.GROUP_LABEL
    text = done[0].script()
    assert "T.parallel" in text and "T.vectorized" in text
    # the epilogue inlined into the tile's write-back: no intermediate of the whole output
    assert "group_conv2d_nchw_intermediate = T.sblock_alloc_buffer" not in text
    if k > 1 and groups == c:  # depthwise: the padded rows a task reads copied under it, no stage first
        assert text.count("T.parallel") == 1 and text.index('T.sblock("pad_temp")') > text.index("T.parallel")
    if k > 1 and groups < c:  # groups of several channels: one parallel stage of padding first
        second = text.index("T.parallel", text.index("T.parallel") + 1)
        assert text.count("T.parallel") == 2 and text.index('T.sblock("pad_temp")') < second
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-4, atol=1e-4)


#: An AVX2 target (8-lane vectors): TARGET's generic CPU has 4-lane ones, too narrow for a group's vector
def planned_for(mcpu: str):
    """A 2-core CPU target of LLVM's ``-mcpu``, to plan kernels for (what runs here compiles for TARGET)."""
    return tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": 2})


AVX2 = planned_for("x86-64-v3")


@pytest.mark.parametrize("c,groups,size,stride,blocks", [
    (64, 8, 28, 2, 1),  # RegNet-Y's strided 3x3 of 8 channels a group
    (64, 4, 14, 1, 1),  # RegNet-X's, 16 a group
    (64, 4, 4, 1, 2),  # 4 wide: two vectors a tile, both in one group of 16
    (128, 4, 14, 2, 1),  # ResNeXt's last stage: 32 a group, 7 wide
], ids=["strided-8-a-group", "16-a-group", "two-vectors-a-group", "strided-32-a-group"])
def test_grouped_convolutions_of_whole_vectors_a_group_take_the_direct_template(c, groups, size, stride, blocks):
    """RegNet's and ResNeXt's grouped 3x3s ran a dense record replayed (the strided ones 1.3-2.4 ms)
    or the grouped row template; a group's output channels fill whole vectors, so the direct template
    takes them, its parallel loop channel blocks first, and computes what the default schedule does."""
    kmod = conv(c, c, size, 3, stride, groups=groups)
    done = templates.templated(kmod, AVX2)
    assert done is not None and done[1] == templates.CONV_LABEL
    plan = templates.convolution._plan(kmod, AVX2)
    assert (plan.lanes, plan.blocks, plan.rows_outer) == (8, blocks, False)
    assert templates.inner_tiles(kmod, AVX2) == {1: 8 * blocks}
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride,label", [(1, templates.GROUP_LABEL), (2, None)], ids=["stride-1", "strided"])
def test_groups_of_four_output_channels_keep_the_grouped_template_or_their_record(stride, label):
    """ResNeXt-50's first stage (4 channels a group) ran 1.43x slower on 4-lane vectors than on the
    grouped row template (:data:`templates.convolution.MIN_GROUP_LANES`); strided, it keeps its record."""
    assert templates.label(conv(64, 64, 56, 3, stride, groups=16), AVX2) == label


@pytest.mark.parametrize("c,size,k,stride,epilogue,padding", [
    (64, 7, 5, 1, "bias_relu", None),  # MobileNet-V3's 5x5 on a 7x7 map: 7-pixel tiles
    (24, 14, 3, 2, "batch_norm", None),  # strided, 24 channels: half-width vectors on AVX-512
    (64, 9, 3, 1, None, 0),  # no padding and no epilogue: the input copied all the same
    (64, 1, 3, 1, "bias_relu", None),  # a 1x1 map: one-pixel tiles
])
def test_the_depthwise_template_computes_what_the_default_schedule_computes(c, size, k, stride, epilogue, padding):
    kmod = conv(c, c, size, k, stride, groups=c, epilogue=epilogue, padding=padding)
    done = templates.templated(kmod, TARGET)
    assert done is not None and done[1] == templates.DEPTHWISE_LABEL
    text = done[0].script()
    assert "T.parallel" in text and "T.vectorized" in text and "layout_rewrite_preproc" in text
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-4, atol=1e-4)
    assert templates.inner_tiles(kmod, TARGET) == {1: templates.grouped._depthwise_plan(kmod, TARGET).lanes}


def test_the_depthwise_template_takes_a_map_of_one_row():
    """A Conformer's depthwise 1-D convolution as PyTorch exports it: 144 channels on a 1 x 100 map,
    a 1 x 15 window padded along the row only. Its input copy needs one row, a loop of one
    iteration, which ``compute_at`` dropped, and the schedule reordered the wrong loops:
    ``compile`` of that model (build/pytorch_models/conformer_*.onnx) stopped with a traceback
    in ``reorder`` on any device set (2026-11-30)."""
    def build():
        x = relax.Var("x", relax.TensorType((1, 144, 1, 100), "float32"))
        w = relax.Var("w", relax.TensorType((144, 1, 1, 15), "float32"))
        return [x, w], relax.op.nn.conv2d(x, w, padding=(0, 7), groups=144)

    kmod = kernel(build)
    done = templates.templated(kmod, TARGET)
    assert done is not None and done[1] == templates.DEPTHWISE_LABEL
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("lanes,k", [(4, 4), (4, 3), (8, 8), (8, 7), (16, 16), (16, 8), (16, 7), (16, 2)])
def test_a_tile_transposed_in_registers_is_the_transposition(lanes, k):
    """The intrinsic tensorized over a copy of 3 rows x 2 segments of ``k`` pixels of ``lanes``
    channels laid out ``[row, pixel, channel]``: numpy's transposition, every element (a wrong
    shuffle index or a lane past ``k`` moves some)."""
    from tvm import te

    src = te.placeholder((1, lanes, 3, 2 * k), name="src")  # a copy as the depthwise template's
    dst = te.compute((1, lanes, 3, 2 * k), lambda n, c, y, x: src[n, c, y, x], name="dst")
    sch = tvm.s_tir.Schedule(te.create_prim_func([src, dst]))
    copy = sch.get_sblock("dst")
    sch.transform_layout(copy, ("write", 0), lambda n, c, y, x: (n, y, x, c))
    n, c, y, x = sch.get_loops(copy)
    sch.reorder(y, x, c)
    _, pixels = sch.split(x, [None, k])
    sch.tensorize(pixels, templates.transposed.intrinsic(templates.transposed.Tile(lanes, k)))
    assert "T.Shuffle" in sch.mod["main"].script()
    data = np.random.default_rng(0).uniform(-1, 1, (1, lanes, 3, 2 * k)).astype("float32")
    out = tvm.runtime.tensor(np.zeros((1, 3, 2 * k, lanes), "float32"))
    tvm.compile(sch.mod, target=TARGET)["main"](tvm.runtime.tensor(data), out)
    np.testing.assert_array_equal(out.numpy(), data.transpose(0, 2, 3, 1))


def _host_runs(mcpu: str) -> bool:
    """Whether this CPU has every extension code compiled for ``mcpu`` uses (the check ``run`` makes)."""
    from tvm_partition import devices

    return set(devices.cpu_flags_needed(devices.cpu_target(mcpu))) <= devices.cpu_flags()


@pytest.mark.parametrize("mcpu", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("c,size,stride,padding", [
    (64, 56, 1, None),  # MobileNet's stride-1 3x3: 8-pixel segments
    (64, 56, 2, (0, 0, 1, 1)),  # TensorFlow's SAME at stride 2: padded at the bottom and right alone
    (32, 28, 2, None),  # 7-pixel segments
    (32, 17, 2, None),  # 17 wide: no segment of 2 to 8 or 16 pixels, each pixel's channels a vector
])
def test_the_depthwise_template_on_whole_vectors_computes_the_convolution(mcpu, c, size, stride, padding):
    """The input copy transposed in registers at this CPU's vector widths (8 and 16 lanes: TARGET's
    are 4), against TVM's default schedule; skipped where this CPU cannot run that width."""
    if not _host_runs(mcpu):
        pytest.skip(f"this CPU cannot run {mcpu}'s instructions")
    target = planned_for(mcpu)
    kmod = conv(c, c, size, 3, stride, groups=c, padding=padding)
    done = templates.templated(kmod, target)
    assert done is not None and done[1] == templates.DEPTHWISE_LABEL
    segment = templates.common._row(size, templates.common.vector_lanes(target)[0])
    assert ("T.Shuffle" in done[0].script()) == (segment > 1)
    np.testing.assert_allclose(run(done[0], target=target), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups,c_in,c_out,k", [(64, 64, 64, 3), (1, 1024, 256, 1)], ids=["depthwise", "channels-last"])
def test_float16_copies_keep_a_vector_of_channels_at_a_time(groups, c_in, c_out, k):
    """The transposition is float32's: a float16 depthwise kernel's copy, and a long 1x1's
    channels-last one, failed to match it (``tensorize``: "write buffers do not match"), and
    ``compile`` of such a model stopped there. They keep the copy of before, and build."""
    def build():
        x = relax.Var("x", relax.TensorType((1, c_in, 14, 14), "float16"))
        w = relax.Var("w", relax.TensorType((c_out, c_in // groups, k, k), "float16"))
        return [x, w], relax.op.nn.conv2d(x, w, strides=2, padding=k // 2, groups=groups)

    target = planned_for("skylake-avx512")
    done = templates.templated(kernel(build), target)
    assert done is not None and done[1] in (templates.DEPTHWISE_LABEL, templates.CONV_LABEL)
    assert "T.Shuffle" not in done[0].script()
    tvm.compile(tvm.IRModule({"main": done[0].with_attr("global_symbol", "main")}), target=target)


LANES = templates.common.vector_lanes(TARGET)[0]
BLOCKS = templates.grouped.MIN_DEPTHWISE_BLOCKS


@pytest.mark.parametrize("c,c_out,size,stride,label", [
    (LANES, LANES, 56, 1, templates.GROUP_LABEL),  # stride 1, one vector of channels: rows
    (LANES, LANES, 56, 2, templates.DEPTHWISE_LABEL),  # strided: channels at any count
    (BLOCKS * LANES, BLOCKS * LANES, 56, 1, templates.DEPTHWISE_LABEL),  # stride 1, enough vectors
    (BLOCKS * LANES, 2 * BLOCKS * LANES, 56, 1, templates.GROUP_LABEL),  # a multiplier of 2: f reads f // 2
    (10, 10, 14, 2, None),  # no whole vectors of channels (and 14 wide: no row template either)
], ids=["one-vector", "strided", "many-vectors", "multiplier-2", "10-channels"])
def test_depthwise_convolutions_take_the_channel_template_where_it_measured_quicker(c, c_out, size, stride, label):
    assert templates.label(conv(c, c_out, size, 3, stride, groups=c), TARGET) == label


@pytest.mark.parametrize("mcpu,size,label", [
    ("x86-64-v4", 64, templates.GROUP_LABEL),  # rows of 4 whole vectors: the row template
    ("x86-64-v4", 56, templates.DEPTHWISE_LABEL),  # rows of 14-pixel segments
    ("x86-64-v4", 16, templates.DEPTHWISE_LABEL),  # too narrow for the row template: channels, not a record
    ("znver4", 64, templates.DEPTHWISE_LABEL),  # AVX-512 run in halves: not measured
    ("x86-64-v3", 64, templates.DEPTHWISE_LABEL),  # AVX2: the channel template measured quicker
])
def test_depthwise_rows_of_whole_vectors_keep_the_row_template_on_full_width_avx512(mcpu, size, label):
    """SegFormer's and MobileViT-v2's stride-1 depthwise 3x3s (128-256 channels at 32-128 wide)
    ran 0.40-0.75x warm on the row template (:data:`templates.grouped.MIN_DEPTHWISE_BLOCKS`)."""
    assert templates.label(conv(128, 128, size, 3, 1, groups=128), planned_for(mcpu)) == label


def elementwise(shape, kind):
    def build():
        x = relax.Var("x", relax.TensorType(shape, "float32"))
        if kind == "concat":  # DenseNet's: a dense block's features joined along the channels
            y = relax.Var("y", relax.TensorType(shape, "float32"))
            return [x, y], relax.op.concat([x, y], axis=1)
        m = relax.Var("m", relax.TensorType((1, shape[1], 1, 1), "float32"))
        if kind == "batch_norm":  # an unfolded batch norm, then ReLU: DenseNet's pre-activation
            y = relax.op.add(relax.op.multiply(relax.op.divide(relax.op.subtract(x, m), m), m), m)
            return [x, m], relax.op.nn.relu(y)
        return [x, m], relax.op.multiply(relax.op.sigmoid(x), relax.op.tanh(relax.op.add(x, m)))

    return kernel(build)


@pytest.mark.parametrize("shape,kind", [
    ((1, 32, 28, 28), "batch_norm"),
    ((1, 24, 27, 27), "gates"),  # rows not a whole number of vectors
    ((1, 64, 64, 64), "concat"),  # moves data only: 524,288 output elements
])
def test_the_elementwise_template_computes_what_the_default_schedule_computes(shape, kind):
    kmod = elementwise(shape, kind)
    assert templates.label(kmod, TARGET) == templates.ELEMENTWISE_LABEL
    func = templates.schedule(kmod, TARGET)
    text = func.script()
    blocks = [b for b in re.findall(r'T\.sblock\("(\w+)"\)', text) if b != "root"]
    assert "T.parallel" in text and len(blocks) == 1  # the producers inlined into the one output
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(1, 4, 8, 8), (1, 2, 4, 64)])
def test_small_elementwise_kernels_are_inlined_and_stay_serial(shape):
    # a parallel launch costs more than it saves below MIN_ELEMENTS; the intermediate tensors the
    # default schedule writes out (each a workspace allocation at every call) are inlined all the same
    kmod = elementwise(shape, "gates")
    assert templates.label(kmod, TARGET) == templates.INLINED_LABEL
    text = templates.schedule(kmod, TARGET).script()
    blocks = [b for b in re.findall(r'T\.sblock\("(\w+)"\)', text) if b != "root"]
    assert "T.parallel" not in text and len(blocks) == 1 and "alloc_buffer" not in text
    np.testing.assert_allclose(run(templates.schedule(kmod, TARGET)), run(kmod["main"]), rtol=1e-5, atol=1e-6)


def test_a_small_copy_of_one_block_keeps_the_default_schedule():
    # a copy below MIN_MOVED_ELEMENTS: one block, nothing to inline, and no parallel loop pays
    assert templates.schedule(elementwise((1, 16, 32, 32), "concat"), TARGET) is None


def permuted(shape, axes, dtype="float32"):
    def build():
        x = relax.Var("x", relax.TensorType(shape, dtype))
        return [x], relax.op.permute_dims(x, axes)

    return kernel(build)


@pytest.mark.parametrize("mcpu", [None, "x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("shape,axes", [
    ((1, 96, 56, 56), (0, 2, 3, 1)),  # ConvNeXt's, into its layer norm: NCHW -> NHWC
    ((1, 56, 56, 96), (0, 3, 1, 2)),  # and back
    ((2, 32, 32, 36), (0, 2, 3, 1)),  # a batch of two; 36 wide: segments of 12, 6 and 4
    ((1, 40, 24, 96), (0, 3, 1, 2)),  # back, 40 rows of 24: segments of 12, 8 and 4
])
def test_a_transpose_between_nchw_and_nhwc_is_tiled_and_computes_the_transpose(mcpu, shape, axes):
    """Tiles transposed in registers (TARGET's 4 lanes, and where this CPU runs them AVX2's 8 and
    AVX-512's 16), against numpy's transposition."""
    if mcpu is not None and not _host_runs(mcpu):
        pytest.skip(f"this CPU cannot run {mcpu}'s instructions")
    target = TARGET if mcpu is None else planned_for(mcpu)
    done = templates.templated(permuted(shape, axes), target)
    assert done is not None and done[1] == templates.TRANSPOSE_LABEL
    assert "T.Shuffle" in done[0].script() and "T.parallel" in done[0].script()
    data = np.random.default_rng(0).uniform(-1, 1, shape).astype("float32")
    out = tvm.runtime.tensor(np.zeros([shape[a] for a in axes], "float32"))
    tvm.compile(tvm.IRModule({"main": done[0].with_attr("global_symbol", "main")}), target=target)["main"](
        tvm.runtime.tensor(data), out)
    np.testing.assert_array_equal(out.numpy(), data.transpose(axes))


@pytest.mark.parametrize("shape,axes,dtype", [
    ((1, 16, 64, 64), (0, 2, 1, 3), "float32"),  # the rows move, the innermost axis stays
    ((1, 96, 56, 56), (0, 2, 3, 1), "float16"),  # not the intrinsic's type
    ((1, 30, 56, 56), (0, 2, 3, 1), "float32"),  # 30 channels: no whole vectors
    ((1, 32, 136, 17), (0, 2, 3, 1), "float32"),  # 17 wide: no segment of 2 pixels or more (nor 4 lanes: TARGET's)
])
def test_other_transposes_keep_the_element_wise_template(shape, axes, dtype):
    assert templates.label(permuted(shape, axes, dtype), TARGET) == templates.ELEMENTWISE_LABEL


def tokens_moved(n, c, h, w, into_map: bool, gelu: bool = False, bias: bool = False):
    """PVT-v2's and SegFormer's tokens ``[n, h*w, c]`` moved into an NCHW map for their depthwise
    convolution (``into_map``: a transpose, then a reshape), or a map moved back into tokens (a
    reshape, then a transpose) with the exported GELU after it, ``x * (erf(x / s1) + s2) * s3``,
    its constants scalar inputs of the kernel as in the models; ``bias``: a vector of channels
    added after it."""
    def build():
        x = relax.Var("x", relax.TensorType((n, h * w, c) if into_map else (n, c, h, w), "float32"))
        if into_map:
            return [x], relax.op.reshape(relax.op.permute_dims(x, (0, 2, 1)), (n, c, h, w))
        y = relax.op.permute_dims(relax.op.reshape(x, (n, c, h * w)), (0, 2, 1))
        if not gelu:
            return [x], y
        scalars = [relax.Var(f"s{i}", relax.TensorType((), "float32")) for i in range(3)]
        e = relax.op.erf(relax.op.divide(y, scalars[0]))
        y = relax.op.multiply(relax.op.multiply(y, relax.op.add(e, scalars[1])), scalars[2])
        if bias:
            b = relax.Var("b", relax.TensorType((c,), "float32"))
            return [x, *scalars, b], relax.op.add(y, b)
        return [x, *scalars], y

    return kernel(build)


@pytest.mark.parametrize("mcpu", [None, "x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("n,c,h,w,into_map,gelu,bias", [
    (1, 256, 56, 56, True, False, False),  # PVT-v2-B0's first stage: 4.8 ms of its 15, untiled
    (1, 64, 56, 40, False, False, False),  # a map back into tokens, 40 wide
    (1, 160, 14, 14, False, True, False),  # and its GELU, on the staged tile
    (1, 64, 32, 32, False, True, True),  # a bias after; 32 wide: 16-pixel tiles would not fit the stack
    (2, 32, 32, 36, True, False, False),  # a batch of two, 36 wide: segments of 12, 6 and 4
])
def test_tokens_moved_between_a_map_are_tiled_and_compute_the_moves(mcpu, n, c, h, w, into_map, gelu, bias):
    """Tokens into maps and back (a reshape's flat index about the transpose), tiled as the
    transposes between NCHW and NHWC are, with a GELU after on the tile staged (in vectors, its
    tile under 1 KiB); against numpy (the moves) and TVM's default schedule (the GELU)."""
    if mcpu is not None and not _host_runs(mcpu):
        pytest.skip(f"this CPU cannot run {mcpu}'s instructions")
    target = TARGET if mcpu is None else planned_for(mcpu)
    kmod = tokens_moved(n, c, h, w, into_map, gelu, bias)
    done = templates.templated(kmod, target)
    assert done is not None and done[1] == templates.TRANSPOSE_LABEL
    assert "T.Shuffle" in done[0].script() and "T.parallel" in done[0].script()
    if gelu:
        plan = templates.elementwise._transposition(kmod, target)
        assert "T.vectorized" in done[0].script() and plan.segment * plan.lanes * 4 < 1024
        np.testing.assert_allclose(run(done[0], target=target), run(kmod["main"]), rtol=1e-5, atol=1e-6)
        return
    shape = (n, h * w, c) if into_map else (n, c, h, w)
    data = np.random.default_rng(0).uniform(-1, 1, shape).astype("float32")
    expected = data.transpose(0, 2, 1).reshape(n, c, h, w) if into_map else data.reshape(n, c, h * w).transpose(0, 2, 1)
    out = tvm.runtime.tensor(np.zeros(expected.shape, "float32"))
    tvm.compile(tvm.IRModule({"main": done[0].with_attr("global_symbol", "main")}), target=target)["main"](
        tvm.runtime.tensor(data), out)
    np.testing.assert_array_equal(out.numpy(), expected)


def moved_back_after_gelu(c, h, w):
    """A map into tokens, a GELU, and the tokens transposed back: ``[1, C, H*W]`` read from the
    GELU's ``[1, H*W, C]`` across (the same shape where ``C == H*W``)."""
    def build():
        x = relax.Var("x", relax.TensorType((1, c, h, w), "float32"))
        y = relax.op.nn.gelu(relax.op.permute_dims(relax.op.reshape(x, (1, c, h * w)), (0, 2, 1)))
        return [x], relax.op.permute_dims(y, (0, 2, 1))

    return kernel(build)


def rows_of_pixels_into_a_map(c, h, w):
    """``[1, H, W*C]`` (the same memory as NHWC) reshaped to NHWC and transposed into NCHW: its
    tiles' reads would not be a rectangle of that buffer."""
    def build():
        x = relax.Var("x", relax.TensorType((1, h, w * c), "float32"))
        return [x], relax.op.permute_dims(relax.op.reshape(x, (1, h, w, c)), (0, 3, 1, 2))

    return kernel(build)


@pytest.mark.parametrize("make", [
    lambda: permuted((1, 3136, 64), (0, 2, 1)),  # [1, H*W, C] -> [1, C, H*W]: no side in a plane's rows
    lambda: moved_back_after_gelu(64, 8, 8),  # the epilogue reads the moved tokens across
    lambda: rows_of_pixels_into_a_map(64, 32, 32),
], ids=["no-side-in-rows", "epilogue-reads-across", "source-not-a-layout"])
def test_other_moves_of_tokens_keep_the_element_wise_template(make):
    assert templates.label(make(), TARGET) == templates.ELEMENTWISE_LABEL


def dense_block_concat(inputs: int, size: int, axis: int = 1):
    """torchvision's DenseNet-121 before each layer: every earlier layer's 8 channels (32 there)
    concatenated (the block's input 16 wide), then the unfolded batch norm and ReLU."""
    def build():
        shapes = [[1, 16 if i == 0 else 8, size, size] for i in range(inputs)]
        if axis != 1:
            shapes = [[1, 8, size, s[1]] for s in shapes]
        xs = [relax.Var(f"x{i}", relax.TensorType(shape, "float32")) for i, shape in enumerate(shapes)]
        channels = 16 + 8 * (inputs - 1)
        m = relax.Var("m", relax.TensorType((1, channels, 1, 1) if axis == 1 else (1, 1, 1, channels), "float32"))
        y = relax.op.concat(xs, axis=axis)
        y = relax.op.add(relax.op.multiply(relax.op.divide(relax.op.subtract(y, m), m), m), m)
        return [*xs, m], relax.op.nn.relu(y)

    return kernel(build)


@pytest.mark.parametrize("inputs,size,axis,pieces", [
    (12, 14, 1, 12),  # 12 inputs: one loop each
    (templates.elementwise.MIN_PARTITIONED_INPUTS, 7, 1, templates.elementwise.MIN_PARTITIONED_INPUTS),
    (templates.elementwise.MIN_PARTITIONED_INPUTS - 1, 14, 1, 0),  # fewer: the chain stays
    (10, 14, 3, 10),  # along the innermost axis
], ids=["12-inputs", "fewest", "too-few", "innermost-axis"])
def test_a_concatenation_of_many_inputs_runs_one_loop_per_input(inputs, size, axis, pieces):
    kmod = dense_block_concat(inputs, size, axis)
    assert templates.label(kmod, TARGET) == templates.ELEMENTWISE_LABEL
    func = templates.schedule(kmod, TARGET)
    text = func.script()
    assert len(re.findall(r'T\.sblock\("\w+_partition"\)', text)) == pieces and "T.parallel" in text
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-5, atol=1e-6)


def _rows_padded(y, rank: int, rows: int):
    """``y`` with ``rows`` zero rows after its last but one axis (as ``pad_matmuls`` pads a matmul's input)."""
    return relax.op.nn.pad(y, [0, 0] * (rank - 2) + [0, rows, 0, 0]) if rows else y


def softmax(shape, pad_rows=0, scaled=False, guarded=False, channels=0):
    def build():
        x = relax.Var("x", relax.TensorType(shape, "float32"))
        y = relax.op.nn.softmax(x, axis=-1)
        y = relax.op.multiply(y, relax.const(2.0, "float32")) if scaled else y
        # Hugging Face's DistilBERT exported: where(isnan(p), 0, p), the softmax read twice
        y = relax.op.where(relax.op.isnan(y), relax.const(0.0, "float32"), y) if guarded else y
        if channels:  # MobileViT-v2's linear attention: the scores of one channel broadcast over the values'
            v = relax.Var("v", relax.TensorType([shape[0], channels, *shape[2:]], "float32"))
            return [x, v], relax.op.multiply(v, y)
        return [x], _rows_padded(y, len(shape), pad_rows)

    return kernel(build)


@pytest.mark.parametrize("shape,pad_rows,scaled,guarded", [
    ((4, 2, 16, 128), 0, False, False),  # BERT's attention rows: whole vectors of any width
    ((3, 5, 24), 0, False, False),  # 24: 8-lane vectors where 16 do not divide
    ((2, 3, 20), 0, False, False),  # 20: 4-lane vectors
    ((4, 8), 0, False, False),  # a row of one vector: nothing to accumulate across vectors
    ((2, 4, 37, 64), 3, False, False),  # its rows padded for the matmul after it: a loop nest of its own
    ((2, 3, 24), 0, True, False),  # an element-wise epilogue: inlined into the division
    ((2, 3, 16, 128), 0, False, True),  # an epilogue that reads the softmax twice
    ((2, 3, 16, 128), 0, True, True),  # ... after one that reads it once
    ((2, 3, 1500), 0, False, False),  # Whisper's rows of 1500: vectors of 16 and a last one of 12
    ((2, 2, 512), 0, True, True),  # long rows of whole vectors, under both epilogues
    ((2, 300), 3, False, False),  # long rows, then padded for the matmul after them
])
def test_the_softmax_template_computes_what_the_default_schedule_computes(shape, pad_rows, scaled, guarded):
    kmod = softmax(shape, pad_rows, scaled, guarded)
    assert templates.label(kmod, TARGET) == templates.SOFTMAX_LABEL
    text = templates.schedule(kmod, TARGET).script()
    assert "T.parallel" in text and "T.vectorized" in text
    # partial maxima and sums where a row holds more than one whole vector
    assert ("_rf" in text) == (shape[-1] > templates.reductions._softmax_lanes(kmod, TARGET) > 1)
    assert text.count("T.parallel") == 1 + bool(pad_rows)
    # a long row a register's vector at a time, what no whole vector fills in a loop of its own
    long_row = shape[-1] > templates.reductions.WHOLE_ROW_VECTOR
    assert (f"T.vectorized(T.int64({templates.reductions.ROW_VECTOR}))" in text) == long_row
    assert ("_partition" in text) == (long_row and shape[-1] % templates.reductions.ROW_VECTOR != 0)
    np.testing.assert_allclose(run(templates.schedule(kmod, TARGET)), run(kmod["main"]), rtol=1e-5, atol=1e-7)


def test_an_epilogue_that_broadcasts_the_softmax_runs_in_a_loop_nest_of_its_own():
    """MobileViT-v2's attention (a dynamo export): softmax over ``[1, 1, 4, 256]``, the product with
    values of 128 channels fused after it. Inlined backwards, TVM failed with an internal error
    (``reductions._one_to_one``); the product runs as a parallel loop nest of its own."""
    kmod = softmax((1, 1, 4, 256), channels=128)
    assert templates.label(kmod, TARGET) == templates.SOFTMAX_LABEL
    func = templates.schedule(kmod, TARGET)
    assert func.script().count("T.parallel") == 2
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-5, atol=1e-7)


def row_statistics(shape, axes, normalised):
    """The kernels TVM's ONNX frontend makes of ``InstanceNormalization``: the rows' mean and
    variance over ``axes`` (the innermost), then ``sqrt(var + eps)`` (``normalised`` False) or the
    normalisation ``(x - mean) / s * g + b`` by a given ``s`` (True): two kernels, as fusion cuts them."""
    def build():
        x = relax.Var("x", relax.TensorType(shape, "float32"))
        stats = [1 if i in axes else e for i, e in enumerate(shape)]
        if not normalised:
            return [x], relax.op.sqrt(relax.op.add(relax.op.variance(x, axis=axes, keepdims=True),
                                                   relax.const(1e-5, "float32")))
        s, g, b = (relax.Var(n, relax.TensorType(stats, "float32")) for n in "sgb")
        centred = relax.op.subtract(x, relax.op.mean(x, axis=axes, keepdims=True))
        return [x, s, g, b], relax.op.add(relax.op.multiply(relax.op.divide(centred, s), g), b)

    return kernel(build)


@pytest.mark.parametrize("shape,axes,normalised", [
    ((1, 32, 6272), [2], False),  # BiT's group norms, each group a row (a reshape to [n, groups, -1] before)
    ((1, 32, 6272), [2], True),
    ((1, 8, 32, 32), [2, 3], False),  # two reduced axes, fused into one row of 1,024
    ((1, 8, 32, 32), [2, 3], True),
    ((1, 1, 4000), [2], True),  # one row (GroupNorm of one group): no parallel loop
])
def test_statistics_of_rows_and_their_use_run_each_row_under_one_iteration(shape, axes, normalised):
    """``reductions._stats_plan``: each row's reductions accumulated in vector lanes under its
    iteration of one loop, parallel where there are rows to share, ``(x - mean)^2`` inlined into the
    variance's sum, a normalisation vectorised along the row; the outputs the default schedule's."""
    kmod = row_statistics(shape, axes, normalised)
    assert templates.label(kmod, TARGET) == templates.STATS_LABEL
    func = templates.schedule(kmod, TARGET)
    text = func.script()
    assert "T.vectorized" in text and "_rf" in text
    assert ("T.parallel" in text) == (shape[1] > 1)
    assert not re.search(r'T\.sblock\("T_subtract', text), "the rows' element-wise blocks are inlined"
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-5)


def test_statistics_of_long_rows_are_closer_to_float64_than_one_scalar_sum():
    """BiT's group norms over rows of 25,088 elements: TVM's default schedule adds every element to
    one float32 sum (the mean, then the squared deviations) and its ``sqrt(var + eps)`` was 9x
    further from float64's than onnxruntime's; partial sums in vector lanes each add a 32nd of the row."""
    kmod = row_statistics((1, 32, 25088), [2], False)
    x = (np.maximum(np.random.default_rng(0).standard_normal((1, 32, 25088)), 0) * 3 + 5).astype("float32")
    x64 = x.astype("float64")
    want = np.sqrt(((x64 - x64.mean(-1, keepdims=True)) ** 2).mean(-1, keepdims=True) + 1e-5)

    def error(func):
        lib = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}), target=TARGET)
        out = tvm.runtime.tensor(np.zeros((1, 32, 1), "float32"))
        lib["main"](tvm.runtime.tensor(x), out)
        return np.abs(out.numpy() - want).max()

    assert error(templates.schedule(kmod, TARGET)) * 4 < error(kmod["main"])


@pytest.mark.parametrize("shape,pad_rows,guarded", [
    ((4, 97, 197), 0, False),  # ViT's rows of 197 (prime): 12 vectors of 16 and a tail of 5
    ((2, 4, 37, 49), 3, False),  # a window's 49 tokens, its rows padded for the matmul after it
    ((2, 3, 16, 197), 0, True),  # under the epilogue that reads the softmax twice
    ((3, 17), 0, False),  # one whole vector and one element past it
])
def test_a_softmax_whose_rows_hold_no_whole_vector_keeps_its_partial_results_in_vectors(shape, pad_rows, guarded):
    """``fastmath.tailed_softmax``'s blocks (what our legalization makes of such a softmax) on the
    template: one parallel loop over the rows (the padding one of its own), the maximum's and the
    sum's lanes vectorised; against numpy's softmax, and against the same blocks unscheduled."""
    kmod = softmax(shape, pad_rows, guarded=guarded)
    assert "T_softmax_maxelem_lanes" in [b.name_hint for b in templates.common._root_blocks(kmod)]
    assert templates.label(kmod, TARGET) == templates.SOFTMAX_LABEL
    func = templates.schedule(kmod, TARGET)
    text = func.script()
    assert text.count("T.parallel") == 1 + bool(pad_rows)
    assert re.search(r"T\.vectorized\(T\.int64\(16\)\):\s+with T\.sblock\(\"T_softmax_maxelem_lanes", text)
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-5, atol=1e-7)


def test_a_tailed_softmax_matches_numpy():
    from tvm import te

    from tvm_partition.ir.fastmath import tailed_softmax

    x = te.placeholder((5, 197), "float32", name="x")
    func = te.create_prim_func([x, tailed_softmax(x)])
    v = (np.random.default_rng(0).standard_normal((5, 197)) * 10).astype(np.float32)
    v[0, 196], v[1, 3], v[2, 192] = 80.0, 80.0, 80.0  # the largest in the tail, in a lane, first of the tail
    out = tvm.runtime.tensor(np.zeros_like(v))
    tvm.compile(tvm.IRModule({"main": func}), target=TARGET)["main"](tvm.runtime.tensor(v), out)
    e = np.exp(v.astype(np.float64) - v.max(-1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), e / e.sum(-1, keepdims=True), rtol=2e-6, atol=1e-7)


def test_a_softmax_whose_rows_hold_no_whole_vector_keeps_its_schedule():
    assert templates.label(softmax((2, 3, 7)), TARGET) is None


def layer_norm(shape, axes=(-1,), pad_rows=0):
    def build():
        x = relax.Var("x", relax.TensorType(shape, "float32"))
        norm = [shape[a] for a in axes]
        gamma = relax.Var("gamma", relax.TensorType(norm, "float32"))
        beta = relax.Var("beta", relax.TensorType(norm, "float32"))
        y = relax.op.nn.layer_norm(x, gamma, beta, axes=list(axes))
        return [x, gamma, beta], _rows_padded(y, len(shape), pad_rows)

    return kernel(build)


@pytest.mark.parametrize("shape,pad_rows", [
    ((4, 128, 128), 0),  # BERT-tiny's, 4 of its 16 sequences: 65,536 outputs
    ((3, 512, 48), 0),  # 48: 8-lane vectors where 16 do not divide
    ((1, 2048, 36), 0),  # 36: 4-lane vectors
    ((1, 197, 768), 3),  # ViT-B/16's, its rows padded for the matmul after it
])
def test_the_layer_norm_template_computes_what_the_default_schedule_computes(shape, pad_rows):
    kmod = layer_norm(shape, pad_rows=pad_rows)
    assert templates.label(kmod, TARGET) == templates.LAYER_NORM_LABEL
    text = templates.schedule(kmod, TARGET).script()
    # one parallel loop over the rows, partial sums in vectors (not the record's loop a block); the
    # padding a parallel loop of its own
    assert text.count("T.parallel") == 1 + bool(pad_rows) and "_rf" in text and "T.vectorized" in text
    np.testing.assert_allclose(run(templates.schedule(kmod, TARGET)), run(kmod["main"]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,axes", [
    ((2, 128, 128), (-1,)),  # 32,768 outputs: below MIN_MOVED_ELEMENTS, the record's serial replay was quicker
    ((128, 128, 4), (-1,)),  # a row of one vector (the test target's lanes: 4)
    ((64, 128, 13), (-1,)),  # no whole vector in a row
])
def test_layer_norms_the_template_does_not_fit_keep_their_schedule(shape, axes):
    assert templates.label(layer_norm(shape, axes), TARGET) is None


def test_a_layer_norm_over_two_axes_takes_the_row_statistics_template():
    """Rows of 4,096 over two axes: no layer norm template, the row statistics' (``reductions._stats_plan``)."""
    kmod = layer_norm((16, 64, 64), (-2, -1))
    assert templates.label(kmod, TARGET) == templates.STATS_LABEL
    np.testing.assert_allclose(run(templates.schedule(kmod, TARGET)), run(kmod["main"]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kmod,label", [
    (layer_norm((2, 128, 128)), templates.FALLBACK_LAYER_NORM_LABEL),  # under MIN_MOVED_ELEMENTS
    (softmax((2, 3, 7)), templates.FALLBACK_SOFTMAX_LABEL),  # no whole vector a row, 42 elements
    (row_statistics((1, 8, 14, 14), [2, 3], True), templates.FALLBACK_STATS_LABEL),  # rows of 196 < STATS_MIN_ROW
    (layer_norm((128, 128, 4)), None),  # a row of one vector: no template at all
], ids=["small-layer-norm", "small-softmax", "short-rows", "one-vector-rows"])
def test_small_layer_norms_and_softmaxes_take_their_template_where_no_record_does(kmod, label):
    """Below their floor the layer norm and softmax templates leave a kernel to its record (which
    was quicker there); where none applies the build takes them all the same (MaxViT-T's layer
    norms of 25,088-50,176 outputs ran TVM's default schedule)."""
    assert templates.schedule(kmod, TARGET) is None
    done = templates.fallback(kmod, TARGET)
    assert (done and done[1]) == label
    if done is not None:
        np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-4, atol=1e-5)


def reduction(shape, op, axes, keepdims=True, relu=False):
    def build():
        x = relax.Var("x", relax.TensorType(shape, "float32"))
        y = getattr(relax.op, op)(x, axis=list(axes), keepdims=keepdims)
        return [x], relax.op.nn.relu(y) if relu else y

    return kernel(build)


@pytest.mark.parametrize("shape,op,axes,keepdims,relu,parallel", [
    ((1, 32, 64, 64), "mean", (2, 3), True, False, True),  # a global average pool: the division inlined
    ((2, 8, 16, 16), "sum", (2, 3), False, False, False),  # no epilogue block; below MIN_MOVED_ELEMENTS
    ((1, 16, 32), "max", (2,), True, False, False),
    ((4, 8, 24), "mean", (2,), False, True, False),  # 24: 8-lane vectors; the ReLU after the division
    ((16, 64), "max", (0, 1), False, False, False),  # to a scalar: no output loop (DynamicQuantizeLinear)
    ((16, 64), "mean", (0, 1), False, False, False),  # to a scalar, the division after it
])
def test_the_reduction_template_computes_what_the_default_schedule_computes(shape, op, axes, keepdims, relu, parallel):
    kmod = reduction(shape, op, axes, keepdims, relu)
    done = templates.templated(kmod, TARGET)
    assert done is not None and done[1] == templates.REDUCE_LABEL
    text = done[0].script()
    assert "_rf" in text and "T.vectorized" in text and ("T.parallel" in text) == parallel
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-5, atol=1e-5)


def test_a_reduction_broadcast_back_over_its_rows_is_summed_once_a_row():
    """``x - mean(x)`` in one kernel: not the reduction template's (computed under each output
    element, it would sum a row once per element of it) but the row statistics': the sum under each
    row's iteration, before the loop over its elements."""
    from tvm import te, topi

    x = te.placeholder((1, 16, 32, 32), "float32", name="x")
    total = topi.sum(x, axis=(2, 3), keepdims=True)
    y = te.compute(x.shape, lambda n, c, h, w: x[n, c, h, w] - total[n, c, 0, 0] / 1024.0, name="centred")
    kmod = tvm.IRModule({"main": te.create_prim_func([x, y])})
    assert templates.reductions._reduce_plan(kmod, TARGET) is None and templates.label(kmod, TARGET) == templates.STATS_LABEL
    text = templates.schedule(kmod, TARGET).script()
    assert "in T.parallel(16):" in text and text.index('T.sblock("x_red_rf")') < text.index('T.sblock("centred")')
    np.testing.assert_allclose(run(templates.schedule(kmod, TARGET)), run(kmod["main"]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,mcpu,lanes", [
    ((1, 1000, 13, 13), "emeraldrapids", 13),  # SqueezeNet's global average pool: 67 -> 8.8 us
    ((1, 64, 7, 7), "x86-64-v3", 7),  # a 7 x 7 map on AVX2
    ((1, 1280, 7, 7), "emeraldrapids", 7),
])
def test_rows_of_no_whole_vector_are_summed_in_partial_results_of_a_divisor(shape, mcpu, lanes):
    """A row of 169 or 49 elements holds no whole vector; it takes partial results of the largest
    divisor of the row the vector holds, where it kept TVM's serial loop (one scalar sum a row)."""
    kmod = reduction(shape, "mean", (2, 3))
    target = planned_for(mcpu)
    done = templates.templated(kmod, target)
    assert done is not None and done[1] == templates.REDUCE_LABEL
    assert templates.reductions._reduce_plan(kmod, target).lanes == lanes  # noqa: SLF001
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,axes", [
    ((1, 64, 197), (2,)),  # a prime row: no divisor to take partial results of
    ((1, 64, 128), (1,)),  # a middle axis: its elements are not contiguous
])
def test_reductions_the_template_does_not_fit_keep_their_schedule(shape, axes):
    assert templates.templated(reduction(shape, "mean", axes), TARGET) is None


class TinyCNN(nn.Module):
    """ResNet-18's kinds of packed kernels at a 64th of its build time (4 s against 28): a 3x3
    convolution and a classifier of batch 1 (a matrix-vector product)."""

    def __init__(self):
        self.conv = nn.Conv2D(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 64)

    def forward(self, x):
        return self.fc(nn.op.reshape(nn.op.relu(self.conv(x)), [1, 32 * 8 * 8]))


def test_a_build_packs_the_weights_once_at_load_and_matches_the_unpartitioned_model(tmp_path):
    model = nn_model(TinyCNN(), [1, 16, 8, 8])
    compiled = compile_model(model, parse_devices("cpu,cpu"), "equal", tuning_db=str(tmp_path / "no-database"))
    labels = kernel_schedules(compiled.build.module)
    conv_kernels = [k for k, v in labels.items() if v in (templates.CONV_LABEL, templates.MATMUL_LABEL)]
    packing = [k for k, v in labels.items() if v.startswith("packs weights")]
    # both halves of the split conv and of the classifier
    assert conv_kernels and len(packing) == len(conv_kernels)
    assert sum(labels[k] == templates.MATMUL_LABEL for k in conv_kernels) == 2
    calls = kernel_calls(compiled.build.module)
    assert all(calls[k] for k in conv_kernels) and not any(calls[k] for k in packing)  # packing: load time
    assert set(run_kernel_schedules(compiled.build.module)) == set(labels) - set(packing)  # what a run counts
    err, tol = check(compiled)
    assert err <= tol


@pytest.mark.parametrize("dim,packings", [(2, 1), (1, 2)])
def test_parts_on_two_cpus_pack_a_weight_they_share_once(tmp_path, dim, packings):
    """A conv split by rows (dim 2): both parts read the whole weight and pack it the same way, so
    the load-time function packs it once for both CPU virtual devices; split by output channels
    (dim 1) each part packs its own slice. Both match the unsplit model."""
    from test_split_rules import one_op_model, the_op
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.plan import Plan, Split

    model = one_op_model([(1, 16, 10, 10)], [(32, 16, 3, 3)],
                         lambda x, w: relax.op.nn.relu(relax.op.nn.conv2d(x, w, padding=1)))
    devices = parse_devices("cpu,cpu")
    plan_file = tmp_path / "plan.json"
    Plan(devices, {the_op(OpGraph(model.mod)).id: Split(dim, (0.5, 0.5), ("cpu1", "cpu"))}).save(plan_file)
    compiled = compile_model(model, devices, plan_file=str(plan_file), tuning_db=str(tmp_path / "no-database"))
    labels = kernel_schedules(compiled.build.module)
    assert sum(v == templates.CONV_LABEL for v in labels.values()) == 2  # the two parts
    assert sum(v.startswith("packs weights") for v in labels.values()) == packings
    err, tol = check(compiled)
    assert err <= tol


@pytest.mark.parametrize("devices", ["cpu,cpu", "cpu,gpu"])
def test_a_part_whose_weight_packing_is_a_reshape_builds(tmp_path, devices):
    """A classifier of 200 columns is padded to 208 and split 96 / 112: the host's part packs its
    112 columns as one tile, ``[64, 112] -> [64, 7, 16]``, which TVM's ``RewriteDataflowReshape``
    makes a ``reshape`` of the padded weight. That padded weight had no virtual device (``R.nn.pad``
    infers none), so the packed one took its input's there, a new variable the pass never gave the
    load-time function's result: the VM's codegen stopped at "Var lv is not defined" (MobileNet-V2's
    classifier under ``fixed`` on ``cpu,gpu``, the GPU kit of 2026-11-30). The build must go
    through, and compute the unsplit op (on two CPUs; the other cross-compiles its GPU half)."""
    from test_split_rules import one_op_model, the_op
    from tvm_partition.ir.graph import OpGraph
    from tvm_partition.plan import Plan, Split

    model = one_op_model([(1, 64)], [(64, 200), (200,)], lambda x, w, b: relax.op.add(relax.op.matmul(x, w), b))
    specs = parse_devices(devices)
    plan_file = tmp_path / "plan.json"
    Plan(specs, {the_op(OpGraph(model.mod)).id: Split(1, (0.48, 0.52), (specs[1].name, "cpu"))}).save(plan_file)
    compiled = compile_model(model, specs, plan_file=str(plan_file), tuning_db=str(tmp_path / "no-database"))
    labels = kernel_schedules(compiled.build.module)
    assert any(v == templates.MATMUL_LABEL for v in labels.values())  # the host's part, its weight packed
    assert any(v.startswith("packs weights") for v in labels.values())
    if devices == "cpu,cpu":
        err, tol = check(compiled)
        assert err <= tol


def pool(c, size, kind, k, stride, padding, relu=False):
    def build():
        x = relax.Var("x", relax.TensorType((1, c, size, size), "float32"))
        op = relax.op.nn.max_pool2d if kind == "max" else relax.op.nn.avg_pool2d
        y = op(x, pool_size=k, strides=stride, padding=padding)
        return [x], relax.op.nn.relu(y) if relu else y

    return kernel(build)


@pytest.mark.parametrize("c,size,kind,k,stride,padding,relu", [
    (8, 30, "max", 3, 2, 1, False),  # ResNet's stem pool: padded, strided
    (8, 14, "max", 2, 2, 0, False),  # VGG's: no padding block
    (6, 13, "avg", 3, 1, 1, False),  # Inception's branch pool: the sum divided by an epilogue block
    (8, 12, "avg", 2, 2, 0, False),  # DenseNet's transition
    (8, 12, "avg", 3, 2, 1, True),  # two epilogue blocks: the division inlined into the ReLU
])
def test_the_pooling_template_computes_what_the_default_schedule_computes(c, size, kind, k, stride, padding, relu):
    kmod = pool(c, size, kind, k, stride, padding, relu)
    epilogue = templates.pooling._pool_nest(kmod, TARGET).epilogue
    assert len(epilogue) == (kind == "avg") + relu  # pool_avg, then the fused ReLU
    done = templates.templated(kmod, TARGET)
    assert done is not None and done[1] == templates.POOL_LABEL
    assert "T.parallel" in done[0].script() and templates.inner_tiles(kmod, TARGET) == {}
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("c,size,kind,stride,plane", [
    (6, 13, "avg", 1, True),  # Inception-v1's and -v2's branch pools at 13-28 columns: each plane padded once
    (4, 28, "max", 1, True),
    (8, 7, "max", 1, False),  # narrower: each output row's input rows, as before
    (8, 27, "max", 2, False),  # strided: the same
])
def test_a_stride_one_pooling_pads_each_plane_once(c, size, kind, stride, plane):
    kmod = pool(c, size, kind, 3, stride, 1)
    done = templates.templated(kmod, TARGET)
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": done[0]}))
    loops = sch.get_loops(sch.get_sblock("pad_temp"))
    # under the channels' parallel loop, the plane's rows and columns; under an output row, that
    # row's loop above the padded rows' and columns'
    assert len(loops) == (3 if plane else 4)
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("c,size,kind,stride,padding,relu,vectors,stack", [
    (6, 28, "avg", 1, 1, True, True, True),  # Inception-v2's branch pools: each output row one vector
    (6, 13, "max", 1, 1, False, True, True),
    (6, 7, "max", 1, 1, False, False, True),  # narrower: a scalar a pixel, on the stack
    (6, 27, "max", 2, 0, False, True, True),  # strided, 13 columns: one vector of 16 lanes holds them
    (6, 28, "avg", 2, 1, True, True, True),  # strided, 14 columns, padded
    (6, 56, "max", 2, 1, False, False, False),  # strided, 28 columns: a scalar a pixel, in a local buffer
])
def test_a_pooling_computes_its_rows_as_vectors_from_13_columns(c, size, kind, stride, padding, relu, vectors, stack):
    """Rules 62 (:data:`templates.pooling.POOL_ROW_MIN_WIDTH`): Inception-v2's stride-1 average pools at 28
    and 14 columns 0.61-0.83x the time of a scalar a pixel. The template's decisions for a CPU of
    16-lane vectors (AVX-512), compiled for a generic x86 one, so that its outputs are checked on
    any CI machine."""
    from unittest import mock

    kmod = pool(c, size, kind, 3, stride, padding, relu)
    with mock.patch.object(templates.common, "vector_lanes", lambda target: (16, 32)):
        func, label = templates.templated(kmod, TARGET)
    assert label == templates.POOL_LABEL
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": func}))
    update = sch.get_sblock(templates.pooling._pool_nest(kmod, TARGET).block.name_hint + "_update")
    assert (sch.get(sch.get_loops(update)[-1]).kind == tvm.tirx.ForKind.VECTORIZED) == vectors
    assert ('scope="local"' not in func.script()) == stack
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-5, atol=1e-6)


def test_builds_compile_x86_kernels_without_vector_gathers():
    """ShuffleNet's 3x3 stride-2 average pool (136 channels, 28x28) on the pooling template's scalar
    schedule (a pixel at a time, as before rules 62 vectorised its rows): compiled for the target
    MetaSchedule keeps, LLVM vectorises its stride-2 reads into gathers (150-210 us on an Ice Lake
    VM); for the target builds compile with, into none (70 us)."""
    from unittest import mock

    from tvm_partition.devices import NO_GATHER, codegen_target

    device = parse_devices("cpu", cpu_mcpu="icelake-server")[0]
    with mock.patch.multiple(templates.pooling, POOL_ROW_MIN_WIDTH=float("inf"), POOL_STACK_MAX_WIDTH=0):
        func = templates.schedule(pool(136, 28, "avg", 3, 2, 1), device.tvm_target())

    def gathers(target) -> int:
        lib = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}), target=target)
        return lib.mod.inspect_source("asm").count("vgather")

    assert gathers(tvm.target.Target(device.target)) > 0  # the oracle: LLVM's own choice gathers
    assert gathers(device.tvm_target()) == 0
    assert NO_GATHER in codegen_target(device.target)["mattr"]
    assert codegen_target({**device.target, "mattr": ["-prefer-no-gather"]})["mattr"] == ["-prefer-no-gather"]
    arm = {"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a78"}
    assert codegen_target(arm) == arm  # an x86 feature means nothing to another CPU


def test_kernels_timed_alone_are_compiled_as_builds_compile_them(monkeypatch):
    """``tuning.time_kernel`` (``template_ab``, ``bench-kernels``, the templates' races) compiles
    for the target builds compile with: timed with gathers, Inception-v2's 320-channel strided max
    pool read 3.4x its time in a build."""
    from tvm_partition.build import tuning
    from tvm_partition.devices import NO_GATHER

    seen = []

    def compile(mod, target):
        seen.append(target)
        raise RuntimeError("compiled")

    monkeypatch.setattr(tvm, "compile", compile)
    with pytest.raises(RuntimeError, match="compiled"):
        icelake = tvm.target.Target({"kind": "llvm", "mcpu": "icelake-server"})
        tuning.time_kernel(pool(8, 14, "max", 3, 2, 1)["main"], icelake)
    assert list(seen[0].attrs["mattr"]) == [NO_GATHER]


def test_a_global_pooling_keeps_the_default_schedule():
    assert templates.templated(pool(16, 7, "avg", 7, 1, 0), TARGET) is None


def batched_matmul(b, m, k, n, epilogue="bias_gelu"):
    def build():
        x = relax.Var("x", relax.TensorType((b, m, k), "float32"))
        w = relax.Var("w", relax.TensorType((k, n), "float32"))
        c = relax.Var("c", relax.TensorType((n,), "float32"))
        y = relax.op.matmul(x, w)
        if epilogue is None:
            return [x, w], y
        return [x, w, c], relax.op.nn.gelu(relax.op.add(y, c))

    return kernel(build)


@pytest.mark.parametrize("kmod", [
    batched_matmul(2, 8, 24, 32),  # BERT's FFN: bias and GELU inlined into the tile's epilogue
    batched_matmul(3, 12, 40, 20, epilogue=None),  # columns of half a vector: one vector a tile
    matmul(16, 64, 48),  # an RNN's gate matmul, rank 2: serial (below SERIAL_FLOPS)
    matmul(64, 256, 64),  # parallel
], ids=["ffn", "half-vector", "rnn", "parallel"])
def test_the_matmul_template_computes_what_the_default_schedule_computes(kmod):
    done = templates.templated(kmod, TARGET)
    assert done is not None and done[1] == templates.MATMUL_LABEL
    text = done[0].script()
    assert "T.vectorized" in text and "layout_rewrite_preproc" in text
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-4, atol=1e-4)


def test_a_matrix_vector_product_takes_one_row_tiles_of_several_vectors():
    """A classifier at batch 1 (one row): a tile of one row and as many vectors of columns as
    divide them (up to GEMV_VECTORS: independent accumulators), correct; rows that are neither 1
    nor a multiple of MATMUL_ROWS stay with their records."""
    lanes = templates.common.vector_lanes(TARGET)[0]
    kmod = matmul(1, 64, 6 * lanes)
    done = templates.templated(kmod, TARGET)
    assert done is not None and done[1] == templates.MATMUL_LABEL
    np.testing.assert_allclose(run(done[0]), run(kmod["main"]), rtol=1e-4, atol=1e-4)
    assert templates.inner_tiles(kmod, TARGET) == {0: 1, 1: 6 * lanes}
    assert templates.inner_tiles(matmul(1, 64, 11 * lanes), TARGET) == {0: 1, 1: lanes}  # 11: prime
    assert templates.templated(matmul(6, 64, 48), TARGET) is None  # rows not a multiple of MATMUL_ROWS
    kmod = batched_matmul(2, 8, 24, 32)
    lanes = templates.common.vector_lanes(TARGET)[0]
    # planners cut rows at multiples of the tile's rows, columns at its vectors
    assert templates.inner_tiles(kmod, TARGET) == {1: templates.matmul.MATMUL_ROWS, 2: 2 * lanes}


def scores(b, m, k, n):
    """Attention's ``q @ k^T``: a batch of products of two computed matrices (neither a weight)."""
    def build():
        q = relax.Var("q", relax.TensorType((b, m, k), "float32"))
        kt = relax.Var("kt", relax.TensorType((b, k, n), "float32"))
        return [q, kt], relax.op.matmul(q, kt)

    return kernel(build)


def test_scores_of_a_short_reduction_take_the_template_where_their_output_is_large():
    """A reduction of 64 (a head's width) stays with its record, but for outputs of at least
    MIN_BATCHED_OUTPUT elements (Whisper's 6 x 1500 x 1504): the template computes the product."""
    lanes = templates.common.vector_lanes(TARGET)[0]
    width = templates.matmul.MIN_BATCHED_OUTPUT // (8 * 128)  # 8 x 128 x width: the floor exactly
    assert width % (2 * lanes) == 0
    assert templates.matmul._matmul_plan(scores(12, 128, 64, 8 * lanes), TARGET) is None  # ViT-, BERT-sized
    assert templates.matmul._matmul_plan(scores(8, 128, 64, width), TARGET) is not None
    assert templates.matmul._matmul_plan(scores(8, 128, 64, width - 2 * lanes), TARGET) is None
    assert templates.matmul._matmul_plan(scores(8, 128, 128, 8 * lanes), TARGET) is not None  # a long reduction
    small = scores(2, 8, 16, 2 * lanes)
    func = templates.matmul._schedule_matmul(small, TARGET, templates.matmul._matmul_plan(small, TARGET, fallback=True))
    np.testing.assert_allclose(run(func), run(small["main"]), rtol=1e-4, atol=1e-4)


def test_softmax_at_v_into_four_or_five_vectors_is_one_tile_of_all_of_them():
    """``softmax @ v`` into a head of 64 (4 vectors of 16) or 40 (5 of 8): one tile of 4 rows x all
    its vectors on a full-width AVX-512 CPU, 2 vectors elsewhere and where the columns are more; it
    computes what the default schedule does."""
    head, keys = scores(12, 128, 128, 64), scores(12, 128, 128, 128)
    plan = templates.matmul._matmul_plan(head, planned_for("emeraldrapids"))
    assert (plan.rows, plan.blocks) == (templates.matmul.MATMUL_ROWS, 4)
    plan = templates.matmul._matmul_plan(scores(16, 256, 256, 40), planned_for("emeraldrapids"))  # MobileViT's
    assert (plan.rows, plan.blocks, plan.lanes) == (templates.matmul.MATMUL_ROWS, 5, 8)
    assert templates.matmul._matmul_plan(keys, planned_for("emeraldrapids")).blocks == 2
    assert templates.matmul._matmul_plan(matmul(128, 128, 64), planned_for("emeraldrapids")).blocks == 2  # a weight's
    assert templates.matmul._matmul_plan(head, planned_for("znver4")).blocks == 2  # half-width AVX-512
    assert templates.matmul._matmul_plan(head, AVX2).blocks == 2
    lanes = templates.common.vector_lanes(TARGET)[0]
    small = scores(2, 8, 128, 4 * lanes)
    plan = dataclasses.replace(templates.matmul._matmul_plan(small, TARGET), rows=4, blocks=4)
    func = templates.matmul._schedule_matmul(small, TARGET, plan)
    np.testing.assert_allclose(run(func), run(small["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod,mcpu,tile,columns_outer,chunk", [
    (matmul(196, 384, 1536), "emeraldrapids", 7, True, 0),  # ConvNeXt-T's MLP at 14x14: weights outweigh x
    (matmul(196, 384, 1536), "znver4", 4, True, 0),  # half-width AVX-512 keeps 4 rows; the order is no matter of width
    (matmul(196, 384, 1536), "x86-64-v3", 4, True, 0),  # AVX2 likewise
    (matmul(52, 768, 512), "emeraldrapids", 13, True, 128),  # a 7x7 map's 49 rows padded to 52: 4 tiles a chunk
    (matmul(24, 768, 512), "emeraldrapids", 8, True, 0),  # 3 tiles of 8: too few to pass each chunk
    (matmul(64, 768, 3072), "emeraldrapids", 8, True, 128),  # GPT-2's FFN at 64 tokens: 8 tiles of 8 rows
    (matmul(3136, 96, 384), "emeraldrapids", 7, False, 0),  # a first stage: x outweighs the weights
    (matmul(2048, 128, 512), "emeraldrapids", 4, False, 0),  # BERT-tiny's 16 x 128 rows: no 7 or 13 divides them
    (matmul(196, 64, 8), "emeraldrapids", 4, False, 0),  # one vector of columns, no 16 or 8 rows: 4, as before
    (matmul(256, 144, 144), "emeraldrapids", 16, False, 0),  # MobileViT-S's 9 vectors of columns: 16 rows x 1
    (matmul(200, 240, 240), "emeraldrapids", 8, True, 0),  # 15 vectors, 200 rows: 8 x 1
    (matmul(256, 144, 144), "znver4", 4, False, 0),  # half-width AVX-512 keeps 4 x 1
    (matmul(200, 768, 768), "emeraldrapids", 8, True, 128),  # ViT-B/16's 197 rows padded to 200
    (matmul(128, 768, 3072), "emeraldrapids", 8, True, 128),  # BERT-base's FFN at 128 tokens
    (matmul(200, 3072, 768), "emeraldrapids", 8, True, 0),  # its second: x (2.4 MB) outgrows the L2 cache
    (matmul(128, 128, 768), "emeraldrapids", 4, True, 0),  # a short reduction: 8 x 2 ran slower than 4 x 2
    (matmul(128, 512, 768), "emeraldrapids", 8, True, 128),  # ... from COLUMNS_OUTER_MIN_REDUCTION on
    (matmul(16, 64, 256), "znver5", 4, True, 0),  # the LSTM's gate matmul at batch 16: 4 x 2, 0.3-0.5x of 8 x 2
    (matmul(196, 768, 384), "emeraldrapids", 7, True, 128),  # 28 tiles of 7 rows past each chunk
    (matmul(200, 768, 768), "znver4", 4, True, 0),
    (matmul(1500, 384, 384), "znver5", 12, False, 0),  # Whisper's encoder: 1500 rows, no 7, 13 or 8 divides them
    (matmul(1500, 384, 1536), "znver5", 12, True, 0),  # its first FFN matmul: x (2.3 MB) outgrows the chunks' 1 MiB
    (matmul(1500, 384, 384), "znver4", 4, False, 0),
], ids=["14x14-mlp", "14x14-mlp-zen4", "14x14-mlp-avx2", "7x7-mlp", "three-tiles", "64-tokens", "first-stage", "bert-tiny", "one-vector",
        "one-vector-16", "one-vector-8", "one-vector-zen4", "vit", "bert-base-ffn", "vit-ffn-out", "short-reduction", "long-enough", "lstm-gates", "swin", "vit-zen4", "whisper", "whisper-ffn",
        "whisper-zen4"])
def test_matmuls_whose_weights_outweigh_their_rows_sweep_rows_under_each_block_of_columns(kmod, mcpu, tile,
                                                                                          columns_outer, chunk):
    """Rows first, a weight that outgrows the L2 cache streamed from beyond it once per block of rows;
    on full-width AVX-512 a tile of 7 (or 13) rows x 2 vectors where 7 (13) divides the rows, else 8
    with the columns outer over a reduction of at least 512, else 12, 10 or 6 where one divides
    them, and the reduction in chunks where a block's weights outgrow L1 and many tiles of rows pass
    them; the planners cut the rows at the tile's multiples."""
    target = planned_for(mcpu)
    plan = templates.matmul._matmul_plan(kmod, target)
    assert (plan.rows, plan.columns_outer, plan.chunk) == (tile, columns_outer, chunk)
    assert templates.inner_tiles(kmod, target)[0] == tile


@pytest.mark.parametrize("kmod,mcpu,blocks", [
    (matmul(200, 768, 768), "znver2", 3),  # Data2Vec's 197 rows padded to 200: 12 of AVX2's 16 registers
    (matmul(128, 3072, 768), "x86-64-v3", 3),  # BERT-base's FFN down-projection
    (matmul(128, 512, 2048), "x86-64-v3", 2),  # 2048 columns: no whole tiles of three vectors
    (matmul(200, 768, 768), "emeraldrapids", 2),  # AVX-512 keeps two (its rows: WIDE_MATMUL_ROWS)
    (matmul(200, 768, 768), "znver4", 2),
    (matmul(1, 768, 768), "x86-64-v3", 8),  # one row: a matrix-vector product's vectors
], ids=["data2vec-zen2", "bert-ffn-avx2", "2048-columns-avx2", "avx512", "zen4", "one-row"])
def test_on_avx2_a_matmul_tile_holds_three_vectors_where_they_divide_the_columns(kmod, mcpu, blocks):
    """On 16 vector registers a tile of 4 rows x 3 vectors (12 accumulators, 3 weight vectors and a
    broadcast row: the 16), where 3 vectors divide the columns; the planners cut columns at the tile's."""
    target = planned_for(mcpu)
    plan = templates.matmul._matmul_plan(kmod, target)
    assert plan.blocks == blocks
    assert templates.inner_tiles(kmod, target)[1] == blocks * plan.lanes


def test_a_tile_of_three_vectors_computes_the_product():
    """The 4 x 3 tile run here on this machine's vectors, rows and columns outer, an epilogue too."""
    lanes = templates.common.vector_lanes(TARGET)[0]
    for kmod in (matmul(16, 96, 6 * lanes), batched_matmul(2, 8, 32, 3 * lanes)):
        kmod = templates.common._epilogue_operands_inlined(kmod)
        base = dataclasses.replace(templates.matmul._matmul_plan(kmod, TARGET), rows=4, blocks=3, chunk=0)
        for plan in (base, dataclasses.replace(base, columns_outer=not base.columns_outer)):
            func = templates.matmul._schedule_matmul(kmod, TARGET, plan)
            np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kmod,rows", [
    (batched_matmul(1, 32, 256, 64), 8),  # bias and GELU computed per block of columns
    (batched_matmul(2, 16, 384, 32, epilogue=None), 4),  # a leading batch axis beside the rows
    (matmul(24, 256, 64), 8),
], ids=["ffn", "batched", "rank-2"])
def test_a_matmul_in_reduction_chunks_computes_the_product(kmod, rows):

    kmod = templates.common._epilogue_operands_inlined(kmod)
    base = templates.matmul._matmul_plan(kmod, TARGET)
    plan = dataclasses.replace(base, rows=rows, columns_outer=True, chunk=templates.matmul.MATMUL_CHUNK)
    func = templates.matmul._schedule_matmul(kmod, TARGET, plan)
    assert func.script() != templates.matmul._schedule_matmul(kmod, TARGET, dataclasses.replace(plan, chunk=0)).script()
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


def test_a_one_vector_matmul_tile_of_16_rows_computes_the_product():
    """ONE_VECTOR_ROWS' tile (16 rows x 1 vector), run here on this machine's vectors, batched too."""
    lanes = templates.common.vector_lanes(TARGET)[0]
    for kmod in (matmul(32, 48, 3 * lanes), batched_matmul(2, 32, 24, lanes)):
        kmod = templates.common._epilogue_operands_inlined(kmod)
        plan = dataclasses.replace(templates.matmul._matmul_plan(kmod, TARGET), rows=16, blocks=1, chunk=0)
        np.testing.assert_allclose(run(templates.matmul._schedule_matmul(kmod, TARGET, plan)), run(kmod["main"]),
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,k,n,rows", [(28, 64, 192, 7), (52, 32, 256, 13), (12, 48, 64, 4), (36, 48, 64, 12),
                                        (40, 32, 64, 10)])
def test_a_matmul_on_columns_outer_and_wide_tiles_computes_the_product(m, k, n, rows):
    """The columns-outer order and the 7-, 13-, 12- and 10-row tiles, run here on this machine's vectors."""

    kmod = templates.common._epilogue_operands_inlined(matmul(m, k, n))
    plan = dataclasses.replace(templates.matmul._matmul_plan(kmod, TARGET), rows=rows, blocks=2, columns_outer=True)
    func = templates.matmul._schedule_matmul(kmod, TARGET, plan)
    rows_outer = templates.matmul._schedule_matmul(kmod, TARGET, dataclasses.replace(plan, columns_outer=False))
    assert func.script() != rows_outer.script()
    np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


def test_a_failed_check_in_tvms_lowering_is_one_build_error(monkeypatch):
    """A check of TVM's passes failing while we lower (``SplitLayoutRewritePreproc`` on a kernel with
    no blocks did, beside a SegNet's unpooling) reaches the user as one line, not a traceback."""
    from tvm_partition.build import executable

    def failing(*args):
        raise tvm.error.InternalError("Check failed: (current_subtree_ == -1) is false")

    monkeypatch.setattr(executable, "lower", failing)
    with pytest.raises(executable.BuildError, match="could not lower the partitioned module: Check failed"):
        executable.build(None, None)


@pytest.mark.parametrize("elements,slots", [(128 * 32, 25), (128 * 32, 4), (128 * 16, 7), (64, 3)])
def test_the_prefetches_of_all_slots_cover_every_line_of_the_next_chunk(elements, slots):
    """Every cache line of ``elements`` elements from ``start`` is prefetched by some slot, and
    the slots together reach past them by less than a line each (DeiT-B's chunks: 256 lines over 25
    tiles of rows, 11 each); at the buffer's end they are clamped to its last element."""
    from tvm_partition.build.templates import prefetch

    per_line, start = 16, 3 * elements
    for size in (10 * elements, start + elements):  # a chunk inside the buffer, and its last
        count = prefetch.per_slot(elements, per_line, slots)
        imm = functools.partial(tvm.tirx.IntImm, "int64")  # constants: TVM folds the expression
        offsets = {int(prefetch.line(imm(start), imm(s), imm(p), count, per_line, size))
                   for s in range(slots) for p in range(count)}
        assert set(range(start, start + elements, per_line)) <= offsets
        assert max(offsets) < min(size, start + elements + slots * per_line) and min(offsets) == start


def test_a_chunked_matmul_prefetches_its_next_chunk_and_computes_the_product():
    """A chunked columns-outer matmul (forced on this machine's vectors) issues ``llvm.prefetch``
    at its tiles of rows and computes what the default schedule does; an unchunked one issues none."""
    lanes = templates.common.vector_lanes(TARGET)[0]
    kmod = matmul(32, 256, 4 * lanes)
    base = dataclasses.replace(templates.matmul._matmul_plan(kmod, TARGET), rows=4, blocks=2, columns_outer=True)
    for chunk, prefetches in ((128, True), (0, False)):
        func = templates.matmul._schedule_matmul(kmod, TARGET, dataclasses.replace(base, chunk=chunk))
        assert ("llvm.prefetch" in func.script()) == prefetches
        np.testing.assert_allclose(run(func), run(kmod["main"]), rtol=1e-4, atol=1e-4)


def test_each_tile_prefetches_from_the_first_element_of_the_next_chunk_the_kernel_reads(monkeypatch):
    """The prefetches' start, for every block of columns and chunk, is where the matmul's own read of
    its packed weights lands at the next chunk's first step (the block's access, not the layout
    restated): the next chunk of the block, and after its last the next block's first."""
    lanes = templates.common.vector_lanes(TARGET)[0]
    (k, chunk, blocks), kmod = (256, 64, 2), matmul(32, 256, 4 * lanes)
    plan = dataclasses.replace(templates.matmul._matmul_plan(kmod, TARGET), rows=4, blocks=2, columns_outer=True,
                               chunk=chunk)
    seen = prefetches_seen(monkeypatch, templates.matmul)
    func = templates.matmul._schedule_matmul(kmod, TARGET, plan)
    (packed, start), (tile, chunks, _) = seen["lines"][:2], seen["loops"]
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": func}))
    update = sch.get(sch.get_sblock("matmul_update"))
    read = next(r for r in update.reads if r.source.same_as(packed))
    strides = [int(np.prod([int(s) for s in packed.shape[i + 1:]])) for i in range(len(packed.shape))]

    def read_at(column, step):  # the flat element of the packed weights the update reads there
        values = [0] * (len(update.iter_vars) - 2) + [column, step]
        at = tvm.tirx.IndexMap([iv.var for iv in update.iter_vars], [r.min for r in read.region], None).map_indices(values)
        return sum(int(i) * s for i, s in zip(at, strides))

    starts = evaluated(start, [tile.loop_var, chunks.loop_var], [blocks, k // chunk])  # at every block and chunk
    for b, c in np.ndindex(blocks, k // chunk):
        nxt = (b, c + 1) if c + 1 < k // chunk else (b + 1, 0)
        if nxt[0] < blocks:
            assert starts[b, c] == read_at(nxt[0] * 2 * lanes, nxt[1] * chunk), (b, c)
