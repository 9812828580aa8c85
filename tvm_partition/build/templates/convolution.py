"""Direct convolutions (TOPI's ``conv2d_nchw``, and ``group_conv2d_nchw`` of whole vectors a group): a
register tile over every input channel and window offset, weights packed once at load time, and 1x1
convolutions along their pixels.

Convolutions. Why: a convolution of a model nobody tuned ran a schedule transferred from a 32-trial MetaSchedule
record, 40-130 GFLOP/s on the build machine where onnxruntime's kernels run 320-410 GFLOP/s
(its numpy sgemm peak: 374), and more trials did not close it: the same ResNet-18 3x3 convolution
(256 channels, 14x14) took 1.8-2.9 ms after 64 and 128 trials, with or without MetaSchedule's
layout-free weights. This schedule is the direct convolution that CPU libraries hand-write
(oneDNN's and TOPI's x86 ``conv2d_NCHWc``): a register tile of ``row`` output pixels x one vector
of output channels is accumulated over every input channel and window offset, the weights read as
one contiguous vector per step, each input pixel broadcast. On the 24 convolution kernels of
ResNet-50 (onnx light model, each timed alone) it took 23.5 ms where the transferred schedules
took 43.0, 75-323 GFLOP/s, 22 kernels faster (up to 5.2x) and two 1x1 convolutions with 64 input
channels 10-20% slower (2026-11-25, intel-r-xeon-r-processor-2c; BENCHMARKS.md, "Convolutions").

The schedule (TVM 0.27 ``s_tir.Schedule``):

- ``conv2d_nchw`` loops ``n, f, y, x, rc, ry, rx`` become ``n f_o y x_o | rc ry rx | x_i f_b f_i``:
  ``f_i`` one vector of output channels (vectorised), ``f_b`` one vector, or two where the output is
  so narrow that a row tile would leave most accumulators idle (unrolled; :func:`_blocks`), but
  one where the output's channel planes alias in the L1 cache (:func:`_aliased_output`),
  ``x_i`` the largest divisor of the output width up to the register budget (unrolled), or,
  where no divisor makes a good tile, :data:`PAIRED_ROW` (two vectors) or :data:`.common.ROW_BUDGET` pixels,
  the last tile of each row shorter (:func:`_tail_tile`);
  ``n f_o y`` one parallel loop (the weights of an ``f_o`` block stay in cache over its rows).
- The accumulator is a cache on the stack (:data:`.common.TILE_SCOPE`) laid out ``[x_i, f_i]`` (pixels
  outer), so every ``x_i`` is one vector register: LLVM keeps all of them in registers (laid out
  ``[f_i, x_i]`` the 14-pixel tile ran 48x slower: strided vector accesses).
- The element-wise epilogue (bias, an imported model's unfolded batch norm, residual add, ReLU) is
  inlined into its last block, computed per tile right after the accumulation.
- The weights are declared layout-free (``layout_free_buffers``) and MetaSchedule's
  ``RewriteLayout`` packs them ``[f_o, rc, ry, rx, f_i]``; the build splits that packing off
  (``relax.transform.SplitLayoutRewritePreproc``) so it runs once in ``main_transform_params``,
  not per call. Read in place (``OIHW``, a gather per vector) the same schedule ran 4198 us, packed
  1325 us.
- Where a block's weights outgrow the L2 cache the reduction runs in chunks of input channels
  outside the row's tiles (:func:`_reduction_chunk`); a 1x1 of a long reduction over a large or
  often read input reads a channels-last copy of it made first (:func:`_channels_last`).
- Where the weights come from memory (:data:`PREFETCH_BYTES` or more), each tile prefetches its
  share of the next block's packed weights inside its reduction (:func:`_prefetching`).

A 1x1, stride-1 convolution whose tile of whole output rows holds whole vectors of pixels (56 and
28 wide on AVX-512, not 14 or 7) takes a schedule of its own instead (:func:`_pointwise_plan`):
vectors of pixels, two output channels a tile, stored a vector at a time; ResNet-50 end to end
52.7 -> 46.5 ms (2 Zen 4 threads, 2026-11-27).

Only ``conv2d_nchw`` blocks (TOPI's names) whose output channels are a multiple of the
vector width, or of half of it (then half-width vectors: SqueezeNet's 1x1 classifier convolution
to 1000 channels, 1000 = 62.5 x 16, ran a replayed record in 7.7 ms of the model's 10.9 and the
template on 8-lane vectors in 1.3-1.9 ms, the model 0.40x paired; amd-epyc-znver5-2c,
2026-11-26), and grouped ones (``group_conv2d_nchw``) whose output channels *a group* are, in
vectors of at least :data:`MIN_GROUP_LANES` lanes: a tile's vector of output channels lies in one
group, so each step broadcasts one input pixel of that group, as for an ungrouped convolution.
Why: RegNet's and ResNeXt's grouped 3x3s (8-32 channels a group) ran a dense convolution's record
replayed, or the grouped template below; the strided ones took 1.3-2.4 ms on the record where this
schedule takes 0.1-0.3 (RegNet-X-400MF's 32-channel one at 56x56, 16 a group, 2,374 -> 265 us), and
on all 20 grouped kernels of RegNet-X-400MF, RegNet-Y-400MF and ResNeXt-50 it ran 0.05-0.87x the
time of what they ran before (each alone, 5 rounds, 2 Zen 4 threads, 2026-12-01; BENCHMARKS.md,
"Grouped convolutions"); compiled for AVX2 (``-mcpu=znver3``, on the same machine) 0.38-0.90x on
18 of them, the other two 0.64x and 0.84x measured again. Their parallel loop takes channel blocks
first (:attr:`_Plan.rows_outer` false): rows first ran 1.1-4.3x slower on 17 of the 20 and within
10% on the others (a group's weights are few, and rows first leaves each thread's consecutive
tasks in other groups' input channels). Anything else keeps the transferred or default schedule.
"""

from __future__ import annotations

import dataclasses
import math

import tvm

from . import common, prefetch, transposed


_CONV = "conv2d_nchw"
_GROUP = "group_conv2d_nchw"
#: Output channels of a group's vector in the direct-convolution template, at least: ResNeXt-50's
#: 128-channel 3x3 at 56x56 of 4 channels a group ran 1.43x the grouped template's time on
#: 4-lane vectors (AVX2's half), where groups of 8, 16 and 32 channels ran 0.05-0.9x the time of
#: what they ran before (BENCHMARKS.md, "Grouped convolutions").
MIN_GROUP_LANES = 8
#: Input channels from which a 1x1 convolution running channel blocks first (:func:`_rows_outer`) on
#: a full-width AVX-512 CPU (:func:`.common._full_width_fma`), whose width's tile holds one vector, takes two
#: vectors within :data:`LONG_1X1_ACC_BUDGET` accumulators: where the width is 13 (prime) the
#: divisor's tile was 13 pixels x 1 vector, each broadcast feeding one multiply-add. Each alone
#: against it (2 threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01;
#: ``benchmarks/conv_tiles.py --long-1x1``, 9 rounds): Inception-v1's 480 -> 192 and 528 -> 256 at
#: 13 x 13 on 13 x 2 0.69x and 0.80x (0.83x and 0.74x in an earlier run; 7 x 2 with a shorter last
#: tile 0.86x, 0.80x), SqueezeNet's classifier 512 -> 1024 (padded from 1000) 0.82x (0.79x; 7 x 2
#: 0.85x); short reductions lose (48 -> 192 and 64 -> 256 at 13 x 13: 1.09x, 1.06x), and
#: 14 x 2 on 14-wide 1x1s of 256-1024 input channels, where 7 x 2 divides the width, ran 0.88-1.02x
#: of it (median 0.97): they keep 7 x 2.
LONG_1X1_REDUCTION = 256
#: Accumulators of that tile: 13 x 2 = 26 of the 32 vector registers (spilling began at 28 on 3x3s: :data:`.common.ACC_BUDGET`).
LONG_1X1_ACC_BUDGET = 26
#: Bytes of one block of output channels' weights (a tile's vectors x the whole reduction) from
#: which the direct template cuts the reduction into chunks of input channels outside the row's
#: tiles (:func:`_reduction_chunk`): each chunk's weights are read from the L2 cache by every tile of
#: the row, and the row's partial sums are carried between chunks in its accumulator. Why: a block
#: whose weights outgrow the L2 cache streamed them from beyond it for every tile of 7 pixels.
#: FCN-ResNet50's head (2048 -> 512 channels 3x3 at 28 x 28: 2.36 MB a block of 32 channels) 126
#: -> 77 ms a call with chunks of 128, 256 or 512 channels (0.61-0.62x), where the model's 512 -> 512
#: 3x3s (590 KB a block) ran 1.02-1.03x with them: they keep the whole reduction (each alone, 9
#: rounds, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01; torchvision export).
LONG_REDUCTION_BYTES = 1024 * 1024
#: The most bytes of a block's weights one chunk holds: its input channels the largest power of two
#: that divides them within it (256 of FCN's 2048, 295 KB; 128 and 512 ran the same).
REDUCTION_CHUNK_BYTES = 512 * 1024
#: Input channels from which an ungrouped 1x1 convolution on the direct template may read its input
#: from a channels-last copy the kernel makes first (:func:`_channels_last`): where it is strided,
#: its input outgrows :data:`CHANNELS_LAST_BYTES`, or :data:`CHANNELS_LAST_OUTPUT` output channels
#: read it. Why: a tile of 7 pixels reads 28 bytes of
#: each input channel's plane and jumps to the next plane, so over 512 channels or more it touches
#: more cache lines than the L1 cache holds (768 of 64 bytes on this Xeon), each partly used, and a
#: strided tile every other pixel of twice as many; channels last it reads 7 x 4 bytes x channels in
#: whole lines, in order, for one copy of the input a call. Every ungrouped 1x1 of ResNet-50,
#: FCN-ResNet50, DenseNet-121, GoogLeNet, ResNeXt-50 and SqueezeNet 1.1 (torchvision exports) both
#: ways, each alone, in two runs (5 rounds each, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c,
#: 2026-12-02; ``benchmarks/conv_tiles.py --channels-last``; BENCHMARKS.md "1x1 convolutions of long
#: reductions, channels last"): the strided ones from 512 channels 0.70-0.87x; FCN's stride-1 ones of
#: 1024 and 2048 input channels at 28 x 28 (3.2 and 6.4 MB) 0.71-0.96x; those of 1024 and 2048
#: output channels from 512 at 28 x 28 (1.6 MB, read by 32 and 64 blocks of channels) 0.69-0.81x and
#: ResNeXt's 1024 -> 1024 at 14 x 14 (0.8 MB) 0.84-0.89x. Smaller inputs read by fewer blocks lose
#: or tie: 512 channels at 28 x 28 into 128-512 0.91-1.16x, 1024 at 14 x 14 into 256-512 0.78-1.21x,
#: the 14-, 13- and 7-wide ones of DenseNet-121, GoogLeNet and SqueezeNet 0.97-2.35x, ResNet-50's and
#: ResNeXt-50's 7-wide ones 0.90-1.10x; under 512 channels the strided 256 -> 512 from 56 wide
#: 1.21-1.28x and most others 0.95-2.29x (FCN's 256 -> 1024 and ResNeXt's 256 -> 512 at 28 x 28,
#: 0.81-0.92x, are left in place with them).
CHANNELS_LAST_INPUT = 512
#: Bytes of input beyond which a stride-1 1x1 of :data:`CHANNELS_LAST_INPUT` channels reads a
#: channels-last copy: this Xeon's L2 cache a core (2 MiB), beyond which the planes' partly used
#: lines come from L3 at every row of tiles.
CHANNELS_LAST_BYTES = 2 * 1024 * 1024
#: Output channels (8 or more blocks of two vectors, each reading the whole input) from which a
#: stride-1 1x1 of :data:`CHANNELS_LAST_INPUT` channels reads its input channels last at any size.
#: It was 1024 where the input held 768 KiB or more, from the kernels above timed alone, which put
#: 1024 channels at 14 x 14 into 256-512 at 0.78-1.21x. In a model that input comes from the kernel
#: before it, and there the copy paid: whole builds against the rule before
#: (``benchmarks/paired.py --in-process``, 9 alternating rounds, 2 threads,
#: intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-06; Hugging Face exports, the onnx package's
#: light DenseNet-121) PoolFormer-S12 0.913x (its 1280 -> 320 at 14 x 14), RegNet 0.955x, ResNet-50
#: 0.978x (0.945-1.001), DenseNet-121 0.993x (0.984-1.004). Within builds that took 256 channels
#: and more (``run --kernels``, 4 alternating runs of each, a kernel's ratio over its run's median
#: one): PoolFormer's 1280 -> 320 0.68-0.78x, ResNet-50's 1024 -> 256 and 1024 -> 512 at 14 x 14
#: 0.72-0.79x and 0.75-0.89x, its 7-wide ones and 512 -> 256 at 28 x 28 within 6%, but its strided
#: 256 -> 512 from 56 wide 1.19-1.31x: under 512 channels the rule stays out. Ice Lake's rules
#: (:data:`POINTWISE_ANY_STRIP`, :func:`_channels_last_any_size`) ran DenseNet-121 1.09-1.13x here.
CHANNELS_LAST_OUTPUT = 256
#: Where the Ice Lake server VM measured otherwise (:func:`_channels_last_any_size`): every 1x1 of
#: ResNet-50, DenseNet-121 and Inception-v2 (onnx light models) on this template both ways, each alone
#: (``benchmarks/conv_tiles.py --channels-last``, 3 rounds, 2 threads,
#: intel-r-xeon-r-processor-2-60ghz-icelake-server-2c, 2026-12-03): at 14 x 14 from 256-1024 input
#: channels 0.62-1.04x the time in place (31 of 35 under 0.96x: ResNet-50's 0.62-0.95x, DenseNet's
#: 24 into 128 0.73-1.04x, Inception-v2's 576 into 64-224 0.73-1.02x), at 7 x 7 into 352-2048
#: channels 0.70-0.86x (4), into 128-192 0.91-1.14x (19, DenseNet's sixteen into 128 0.97-1.14x:
#: kept in place); ResNet-50's strided 256 -> 512 at 28 x 28 0.96x. The Emerald Rapids VM (an L2 of
#: 2 MiB a core) had run the 14- and 7-wide ones of other models 0.78-2.35x: its rule above stands
#: for every other CPU.
CHANNELS_LAST_ICE_LAKE_INPUT = 256
CHANNELS_LAST_ICE_LAKE_WIDTH = 14
CHANNELS_LAST_ICE_LAKE_OUTPUT = 256
#: Blocks of output channels the parallel loop keeps at least, when a tile takes several vectors;
#: :data:`ROWS_FIRST_CHANNEL_BLOCKS` where it runs over output rows first on a full-width AVX-512
#: CPU (:func:`.common._full_width_fma`), whose rows give the threads their tasks: ResNet-50's stem (64
#: channels at 112x112) on 7 pixels x 2 vectors 0.79x the time of 14 x 1, its 64-channel 3x3 at
#: 56x56 0.97x, its 1x1 256 -> 64 at 56x56 0.67x (``benchmarks/conv_tiles.py``: each alone, 3
#: rounds, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01).
MIN_CHANNEL_BLOCKS = 4
ROWS_FIRST_CHANNEL_BLOCKS = 2
#: Output pixels of a tile of two vectors of output channels, by ``(lanes, registers)``: taken
#: first where it divides the output width (and two vectors fit, :func:`_blocks`), before the
#: largest row within :data:`.common.ROW_BUDGET`. On AVX2 (2 Zen 3 threads, each kernel alone,
#: 2026-11-27, 3 rounds; ResNet-18, ResNet-50, Inception-v2, DenseNet-121) 4 pixels x 2 vectors
#: (8 accumulators: 2 weight loads and 4 broadcasts feed 8 multiply-adds, where 8 pixels x 1 vector
#: load 9) ran 0.69-0.97x the time of 7 x 1 on 28-wide maps, 0.80-0.96x that of 8 x 1 on 56-wide
#: (two 1x1s 1.01 and 1.08), 0.77-0.93x on the 112- and 64-wide stems and a 32-wide 3x3, 0.75-1.04x
#: on 16- and 8-wide maps; 1x1s reading 32x32 planes 1.06-1.59x (:data:`ALIASED_PLANE_BYTES`: they
#: keep 8 x 1 of this rule; :data:`AVX2_1X1_ROW` takes them since rules 75). Where 4 does not divide the width (14 and 7 wide) two vectors of 2 or 1 pixels ran
#: 1.1-3.2x the time of 7 x 1, and one vector of 4 pixels (32 output channels: no pair of vectors
#: for the parallel loop) 1.15x that of 8 x 1. On a full-width AVX-512 CPU (:func:`.common._full_width_fma`)
#: 7 pixels x 2 vectors (14 accumulators fed by 2 weight loads and 7 broadcasts, where 14 x 1 loads
#: 15: two 512-bit multiply-adds a cycle wait on the loads) ran 0.64-1.01x the time of 14 x 1 on
#: all 58 kernels of ResNet-50 and DenseNet-121 where they differ (112-, 56-, 28- and 14-wide maps;
#: 1x1s 0.64-0.99x, 3x3s 0.89-1.01x; ``benchmarks/conv_tiles.py``) and 0.81-0.94x the 1x1
#: template's on 1x1s whose strip outgrows :data:`POINTWISE_STRIP_BYTES` (each alone, 3 rounds, 2
#: threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01). 4 x 4 and 8 x 2 ran within
#: about 10% of 7 x 2 on 28- and 56-wide maps, each ahead on some. Zen 4 (a 512-bit multiply-add in two 256-bit
#: halves, one a cycle: the loads keep up) keeps 14 x 1: its 1x1 template measured 0.40-0.72x
#: of that, 7 x 2 there unmeasured.
PAIRED_ROW = {(8, 16): 4, (16, 32): 7}
#: Output pixels of the tile of two vectors of output channels a 1x1 convolution takes on AVX2 (8
#: lanes, 16 registers) where its output is at least :data:`AVX2_1X1_MIN_WIDTH` wide, the last
#: tile of a row shorter where 6 does not divide the width: 12
#: accumulators, 2 weight vectors and a broadcast (the matmul template's 12 on AVX2,
#: :data:`.matmul.NARROW_MATMUL_BLOCKS`). Each alone against the tiles chosen before (4 x 2, 7 x 1),
#: 3 alternating rounds, 2 threads, amd-epyc-znver2-2c (Zen 2), 2026-12-07 (the zoo's ResNet-50):
#: its 15 1x1s at 56, 28 and 14 wide 0.82-0.95x, at 7 wide (one tile of 6 and one of 1) 1.04-1.05x;
#: six of its seven 3x3s 1.16-1.95x slower on 6 x 2 (they keep theirs); 4 x 3 fits none of its channel
#: counts, 3 x 4 lost on all but three 3x3s (0.85-1.07x). As builds, paired: ResNet-50 and
#: Inception-v3 0.95x (BENCHMARKS.md, "1x1 convolutions on AVX2"). Input planes of a multiple of
#: :data:`ALIASED_PLANE_BYTES` take it too (rules 75): where 4 x 2 had lost to 8 x 1 on them, 6 x 2
#: ran 0.68-0.94x the time of 8 x 1 on ResNet-50's 1x1s reading 32 x 32 planes at 128 px (the
#: kernels that set that rule) and 0.65-0.97x on MobileViT-S's at 128 x 128, 64 x 64 and 32 x 32
#: (each alone, 3 alternating rounds, 2 threads, amd-epyc-znver3-2c, 2026-12-07); MobileViT-S's build
#: 0.946x and 0.951x paired (BENCHMARKS.md, "amd-epyc-znver3-2c: the convolution prefetch, fourteen
#: Hugging Face models, RegNet's check").
AVX2_1X1_ROW = 6
AVX2_1X1_MIN_WIDTH = 14
#: Output channels a tile of the 1x1 template holds, each weight broadcast over its vectors of
#: pixels (:func:`_pointwise_plan`). On ResNet-50's eight 1x1 convolutions at 56x56 and 28x28 (7
#: vectors a tile, each kernel alone, 2 Zen 4 threads): 4 channels (28 accumulators + 7 pixel
#: vectors: more than 32 registers) reloaded and stored every accumulator each step and ran
#: 0.62-1.72x the channel-vector template's time, slower on six of the eight; 2 channels 0.40-0.72x.
POINTWISE_CHANNELS = 2
#: Vectors of pixels a 1x1 tile holds at least (``POINTWISE_CHANNELS`` times as many accumulators):
#: on AVX2 (2 Zen 3 threads, each kernel alone, 2026-11-27: ResNet-50 and MobileNet-V2 at 128 px,
#: 1x1s of 64-256 channels) tiles of 3 and 4 vectors ran 0.58-0.98x the channel-vector template's
#: time (24-, 16- and 8-wide maps), tiles of 2 (4x4 maps: 4 accumulators to cover the
#: multiply-adds' latency) 1.10-1.66x.
POINTWISE_VECTORS = 3
#: Input channel planes whose size in bytes is a multiple of this keep the channel-vector template:
#: each reduction step of a 1x1 tile reads the next plane at the same offset, and at a multiple of
#: 4 KiB every plane falls in the same sets of the L1 cache (8 ways on Zen 3 and 4), so the tile's
#: pixels are read from L2. The 1x1 convolutions of ResNet-50 at 128 px on AVX2 (2 Zen 3 threads,
#: 2026-11-27): 32x32 maps (4 KiB planes, one row of 4 vectors a tile) 1.21-1.38x the
#: channel-vector template's time, where 24x24 maps (2.25 KiB, 3 vectors; 64 -> 256 and 128 -> 128
#: channels) ran 0.83-0.96x and 16x16 (1 KiB, 4 vectors) 0.76-0.98x.
#: Measured on AVX2 only; the cache's sets are no matter of the vector width.
ALIASED_PLANE_BYTES = 4096
#: CPUs (LLVM's ``-mcpu``) on which input planes of a multiple of :data:`ALIASED_PLANE_BYTES` keep no
#: 1x1 from the 1x1 template (nor from the direct template's 7 x 2 tile): on this Xeon (48 KiB L1, 12 ways,
#: where the Zen 3 that set the rule has 8) nine of MobileViT-S's ten 1x1s at 128 x 128, 64 x 64
#: and 32 x 32 (16-256 input channels) ran 0.68-0.85x the channel-vector template's time, the tenth
#: 0.97x; the 16- and 8-wide ones, on planes that do not alias, read 0.83-1.22x of themselves in
#: the same runs: the noise (each alone, 3 alternating rounds, 2 threads,
#: intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-07; BENCHMARKS.md, "MobileViT's 1x1s on
#: planes of 4 KiB, its one-vector matmuls, the grouped row template's epilogue"). The output's
#: rule (:data:`ALIASED_SHORT_REDUCTION`) stands: undone as well, four of them lost most of what
#: this gained.
ALIASED_INPUT_IGNORED = frozenset({"emeraldrapids"})
#: Bytes of input a 1x1 tile reads over its reduction (input channels x its pixels) above which a
#: full-width AVX-512 CPU (:func:`.common._full_width_fma`) leaves the 1x1 to the direct template's 7 x 2
#: tile (:data:`PAIRED_ROW`): each tile reads its strip once per pair of output channels, and a
#: strip that outgrows the L1 cache (48 KiB on this Xeon) is read from L2 at a rate two multiply-adds
#: a cycle outrun. DenseNet-121's and ResNet-50's 1x1s, the 1x1 template against 7 x 2
#: (``benchmarks/conv_1x1.py``: each alone, 3 rounds, 2 threads,
#: intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01): strips of 28 KiB 0.58-0.82x (the 1x1
#: template ahead), 42 KiB 1.07x, 56-224 KiB 1.06-1.23x (7 x 2 ahead). Only where the direct template
#: tiles it so (:func:`_paired_tile`): where its output channels make no pair of full vectors (24 and
#: 40 channels: 8-lane vectors; 32: one vector) it takes a tile of 14 pixels x 1 vector, and the 1x1
#: template ran 0.47-0.57x its time on strips of 52-105 KiB, 0.85x and 0.92x at 32 channels
#: (MobileNet-V2's, EfficientNet-B0's and MNASNet's projections, torchvision exports, each alone, 9
#: rounds, 2 threads, the same machine, 2026-12-01; ``benchmarks/conv_1x1.py``).
POINTWISE_STRIP_BYTES = 48 * 1024
#: Full-width AVX-512 CPUs (LLVM's ``-mcpu``) on which the 1x1 template keeps the tiles whose strip
#: outgrows :data:`POINTWISE_STRIP_BYTES`: on an Ice Lake server VM (``icelake-server``, two 512-bit
#: multiply-add units: numpy's float32 matmul 117 GFLOP/s on one core) it ran 0.67-0.87x the 7 x 2
#: tile's time on all 23 such 1x1s of ResNet-50 and DenseNet-121 (strips of 56-224 KiB), where the
#: Emerald Rapids VM had run them 1.06-1.23x (``benchmarks/conv_1x1.py ... --rounds 7``, 2 threads,
#: intel-r-xeon-r-processor-2-60ghz-icelake-server-2c, 2026-12-03). Why the two differ was not found
#: (both cores load two 512-bit vectors a cycle from a 48 KiB L1). The client parts of the same core
#: (Sunny Cove: ``icelake-client``, and its ``rocketlake`` and ``tigerlake`` kin) are listed unmeasured;
#: every other AVX-512 CPU keeps the rule as the Emerald Rapids VM measured it.
POINTWISE_ANY_STRIP = frozenset({"icelake-server", "icelake-client", "rocketlake", "tigerlake"})
#: Input channels from which a 1x1 on a :data:`POINTWISE_ANY_STRIP` CPU takes a tile of
#: :data:`LONG_POINTWISE_CHANNELS` output channels x 7 vectors of pixels (:data:`LONG_POINTWISE_ACC`
#: accumulators), its channels innermost: each vector of pixels loaded once feeds its 4 channels'
#: multiply-adds, and each tile reads its strip of input once per 4 output channels, not 2. LLVM
#: holds the 4 broadcast weights and the vector in registers and spills one of the 28 accumulators
#: (a load and a store a reduction step for its 28 multiply-adds; the assembly of a 256 -> 128 at
#: 28 x 28 for ``icelake-server``). Each
#: alone, two runs of 3 and 5 rounds (2 threads, intel-r-xeon-r-processor-2-60ghz-icelake-server-2c,
#: 2026-12-03; ``benchmarks/template_ab.py conv2d ... --without``): ResNet-50's 1x1s of 256 and 512
#: input channels at 56 x 56 and 28 x 28 0.67-0.82x the 2-channel tile's time (0.75-0.94x on 256 ->
#: 128 at 56 x 56), those of 64 input channels 1.0-1.24x and of 128 0.85-0.95x, where kernels the
#: rule leaves alone read 0.87-1.33x of themselves in the same runs; as built, DenseNet-121's of
#: 256-512 at 56 x 56 and 28 x 28 0.80-0.97x. End to end (``benchmarks/paired.py``, 10 pairs)
#: ResNet-50 0.939x, DenseNet-121 0.972x. With the channels outermost (as the Zen 4 measured the
#: 4-channel tile: LLVM then holds the 7 vectors of pixels) it ran 1.3-2.0x.
LONG_POINTWISE_REDUCTION = 256
LONG_POINTWISE_CHANNELS = 4
LONG_POINTWISE_ACC = 28
#: Reduction elements (input channels x taps) under which a convolution whose output channel planes
#: are a multiple of :data:`ALIASED_PLANE_BYTES` (:func:`_aliased_output`) takes one vector of output
#: channels a tile even where that halves its accumulators; one whose epilogue reads a residual (a
#: second tensor of the output's shape) takes one at any reduction (:func:`_write_back_bound`); any
#: other on such planes takes one where its row keeps as many accumulators (224 wide: 14 x 1 for
#: 7 x 2). Why: a tile writes its vectors of channels back as one row segment in each channel's
#: plane, and at a multiple of 4 KiB every plane's segment falls in the same set of the L1 cache (12
#: ways on Zen 5): two vectors touch 32 lines there, 64 with a residual read beside them. Each alone,
#: the two-vector tile against one vector (``benchmarks/conv_tiles.py --aliased``, 5 alternating
#: rounds, three runs, 2 threads, amd-epyc-znver5-2c, 2026-12-03; ResNet-18 at 64-256 px, ResNet-50
#: at 128 px, VGG-19; BENCHMARKS.md "Convolutions whose output planes alias in the L1 cache"): the
#: 7x7 stems (147) at 32-128 wide 0.53-0.79x; 1x1s of 64 input channels at 32 x 32 0.31-0.70x;
#: residual 3x3s of 576-1152 0.59-0.85x; VGG-19's first (27) 0.25-0.28x, its 3x3 of 576 at 224 wide
#: 0.76-0.77x (synthetic 3x3s of 288-576 there, a scratch script, 0.79-0.82x; at 112 and 56 wide,
#: no alias, 0.95-1.00x); 3x3s of 576-1152 at 32-64 wide without a residual, 8 x 1 against 8 x 2,
#: 0.98-1.07x, and 1x1s of 256 at 32 x 32 1.19-1.21x (a scratch script, 2026-12-02): they keep two.
#: AVX-512 only (the Xeon unmeasured); AVX2's tiles stand.
ALIASED_SHORT_REDUCTION = 256
#: Bytes of weights from which the direct template prefetches the next block of output channels'
#: packed weights while the current block's tiles compute (:func:`_prefetching`). Why: in a model a
#: kernel's weights come from beyond the L2 cache, and a block's first tile reads them from there at
#: the rate its multiply-adds consume them; the next block's, prefetched during the current one,
#: arrive while it computes. Each kernel alone, with against without, weights flushed before each run
#: (TVM's ``cache_flush_cpu_non_first_arg``) and warm, 5-9 alternating rounds, 2 threads,
#: intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-07 (BENCHMARKS.md, "Weights from memory: a
#: convolution prefetches its next block"): the 11 such convolutions of ResNet-50 (1-9.4 MB) cold
#: 0.80-0.94x (its stage 4's 1x1s 0.80-0.92x), warm 0.95-1.04x; Inception-v1's six 0.75-0.91x cold,
#: 0.92-1.02x warm; VGG-19's and ZFNet-512's 0.84-1.03x cold, 0.93-1.00x warm but ZFNet's 256 ->
#: 512 3x3 at 12 x 12 1.26x (0.79-2.41x over its rounds). Under 1 MB, ResNet-50's 128 -> 128 3x3
#: (590 KB) ran 0.99x cold. In the model, builds paired: ResNet-50 0.92x (two runs), ZFNet-512 0.94x.
#: On AVX2 (2 Zen 3 threads, 2026-12-07; BENCHMARKS.md "amd-epyc-znver3-2c: the convolution
#: prefetch, fourteen Hugging Face models, RegNet's check"), where half-width multiply-adds consume
#: the weights half as fast, ResNet-50's eleven ran 0.89-1.10x cold (median 0.99x), 0.96-1.01x
#: warm, its build 0.951x and 0.978x paired: no loss, kept for every CPU.
PREFETCH_BYTES = 1024 * 1024
#: Tiles a block of output channels' weights is read by (rows x tiles a row) under which a
#: convolution prefetches nothing: DenseNet-121's classifier (a 1x1 on a 1 x 1 map, 1024 -> 1024
#: channels: one tile a block, 2 lines prefetched for every 2 multiply-adds) ran 1.24x its time
#: warm and 1.00x cold with the prefetches; six tiles (Inception-v1's 6 x 6 maps) 0.75-0.86x cold.
PREFETCH_TILES = 6


def _sunny_cove(target) -> bool:
    """Whether ``target`` is one of the :data:`POINTWISE_ANY_STRIP` CPUs (Ice Lake's core and its
    kin), which rules 57, 58 and 60 give 1x1 convolutions rules of their own."""
    return common._mcpu(target) in POINTWISE_ANY_STRIP


@dataclasses.dataclass(frozen=True)
class _Plan:
    """What :func:`tvm_partition.build.templates.schedule` needs of a convolution kernel it applies to."""

    epilogue: tuple[str, ...]  # the element-wise blocks after the convolution, in order
    weight: int  # the kernel parameter holding the weights
    lanes: int  # output channels per vector
    row: int  # output pixels per register tile
    padded: bool  # a pad_temp block comes first
    blocks: int = 1  # vectors of output channels per register tile (:func:`_blocks`)
    rows_outer: bool = False  # the parallel loop takes output rows before channel blocks (:func:`_rows_outer`; never grouped)
    parallel: bool = True  # a parallel loop (not below :data:`tvm_partition.build.transfer.SERIAL_FLOPS`)
    block: str = _CONV  # the convolution block's name: TOPI's ungrouped or grouped one
    chunk: int = 0  # input channels a reduction chunk outside the row's tiles; 0: none (:func:`_reduction_chunk`)
    channels_last: bool = False  # the input read from a channels-last copy made first (:func:`_channels_last`)


def _plan(kmod: tvm.IRModule, target) -> _Plan | None:
    """The :class:`_Plan` of a direct convolution kernel, or None where the template does not apply."""
    nest = common._nest(kmod, target, (_CONV, _GROUP))
    if nest is None:
        return None
    conv = nest.block
    weight = common._weight(kmod, conv)
    if weight is None:
        return None
    _, registers = common.vector_lanes(target)
    _, oc, _, ow, group_channels, _, _ = nest.extents
    per_group = oc * group_channels // int(conv.reads[0].source.shape[1])  # oc where ungrouped
    if nest.block.name_hint == _GROUP and group_channels == 1:
        return None  # depthwise: no input channels to accumulate a vector of outputs over
    lanes = common._whole_vectors(per_group, target)
    if lanes is None or (per_group < oc and lanes < MIN_GROUP_LANES):
        return None
    rows_outer = per_group == oc and _rows_outer(conv)  # grouped: channel blocks first (module docstring)
    wide = common._full_width_fma(target)
    least = ROWS_FIRST_CHANNEL_BLOCKS if rows_outer and wide else MIN_CHANNEL_BLOCKS
    row_budget = common.ROW_BUDGET[registers]
    paired = PAIRED_ROW.get((lanes, registers)) if lanes != 16 or wide else None
    one_by_one = nest.extents[5:] == (1, 1)

    def tile(one_vector: bool) -> tuple[int, int]:
        """``(row, blocks)``: pixels and vectors of output channels a register tile."""
        def vectors(pixels: int) -> int:
            return 1 if one_vector else _blocks(pixels, oc, lanes, registers, per_group, least)

        row = common._row(ow, row_budget)
        two = paired and vectors(paired) == 2
        if two and ow % paired == 0 and not (one_by_one and _aliased(conv, target)):
            row = paired
        elif _tail_tile(ow, row * vectors(row), paired if two else row_budget, 2 if two else 1, rows_outer and wide):
            row = paired if two else row_budget
        blocks = vectors(row)
        if blocks == 1 and one_by_one and wide and not rows_outer and nest.extents[4] >= LONG_1X1_REDUCTION \
                and not one_vector:
            blocks = _blocks(row, oc, lanes, registers, per_group, least, LONG_1X1_ACC_BUDGET)
        return row, blocks

    row, blocks = tile(False)
    # AVX-512 only: measured on Zen 5; on AVX2 the paired tile of a 3x3 on 4 KiB planes stands (Zen 3)
    if blocks > 1 and lanes == 16 and _aliased_output(conv):
        one = tile(True)
        if _write_back_bound(kmod, nest) or one[0] >= row * blocks:
            row, blocks = one
    if one_by_one and (lanes, registers) == (8, 16) and per_group == oc and ow >= AVX2_1X1_MIN_WIDTH \
            and _blocks(AVX2_1X1_ROW, oc, lanes, registers, per_group, least, 2 * AVX2_1X1_ROW) == 2:
        row, blocks = AVX2_1X1_ROW, 2
    from ..transfer import serial

    taps = nest.extents[5] * nest.extents[6]
    if rows_outer and taps >= SUNNY_COVE_BLOCKS_FIRST_TAPS and _sunny_cove(target) and common._column_stride(conv) == 1:
        rows_outer = False  # the tile stays the one chosen for rows first
    chunk = _reduction_chunk(group_channels, taps, blocks * lanes) if per_group == oc else 0
    unpadded = not nest.padded or _copied(kmod)
    last = not chunk and per_group == oc and unpadded and _channels_last(nest, lanes, target)
    return _Plan(nest.epilogue, weight, lanes, row, nest.padded, blocks, rows_outer, not serial(kmod, target),
                 nest.block.name_hint, chunk, last)


def _channels_last(nest: common._Nest, lanes: int, target) -> bool:
    """Whether a 1x1 convolution reads its input from a channels-last copy: at least
    :data:`CHANNELS_LAST_INPUT` input channels, a whole number of vectors of them, and strided (its
    input wider than its output), an input of more than :data:`CHANNELS_LAST_BYTES`, or at least
    :data:`CHANNELS_LAST_OUTPUT` output channels reading it; on the
    :data:`POINTWISE_ANY_STRIP` CPUs, :func:`_channels_last_any_size`."""
    _, outputs, _, width, channels, ry, rx = nest.extents
    if (ry, rx) != (1, 1) or channels % lanes:
        return False
    if _sunny_cove(target) and _channels_last_any_size(outputs, width, channels):
        return True
    data = nest.block.reads[0].source
    strided = int(data.shape[-1]) > width
    size = common._operand_elements(nest.block)[0] * data.dtype.bits // 8
    return channels >= CHANNELS_LAST_INPUT and (strided or size > CHANNELS_LAST_BYTES or outputs >= CHANNELS_LAST_OUTPUT)


def _channels_last_any_size(outputs: int, width: int, channels: int) -> bool:
    """On the :data:`POINTWISE_ANY_STRIP` CPUs (Ice Lake's core: an L2 of 1.25 MiB a core), a 1x1 of
    :data:`CHANNELS_LAST_ICE_LAKE_INPUT` input channels or more reads its input channels last at any
    input size: on a map :data:`CHANNELS_LAST_ICE_LAKE_WIDTH` or more wide, or into
    :data:`CHANNELS_LAST_ICE_LAKE_OUTPUT` or more output channels (more blocks of channels reading
    the copy). The 1x1s this template takes there are the 14- and 7-wide ones (the 1x1 template
    takes the wider) and the strided ones."""
    return channels >= CHANNELS_LAST_ICE_LAKE_INPUT and (
        width >= CHANNELS_LAST_ICE_LAKE_WIDTH or outputs >= CHANNELS_LAST_ICE_LAKE_OUTPUT)


def _reduction_chunk(channels: int, taps: int, block_channels: int) -> int:
    """Input channels a chunk of an ungrouped convolution's reduction holds where a block of
    ``block_channels`` output channels' weights outgrows :data:`LONG_REDUCTION_BYTES`: the largest
    power of two dividing ``channels`` whose weights stay within :data:`REDUCTION_CHUNK_BYTES`, if
    they fill a quarter of it (chunks of 128-512 channels, 147-590 KB, were measured; smaller ones
    never); 0 (the whole reduction under each tile) otherwise."""
    per_channel = block_channels * taps * 4  # float32
    if per_channel * channels <= LONG_REDUCTION_BYTES:
        return 0
    chunk = 1
    while channels % (2 * chunk) == 0 and 2 * chunk * per_channel <= REDUCTION_CHUNK_BYTES:
        chunk *= 2
    return chunk if chunk < channels and chunk * per_channel >= REDUCTION_CHUNK_BYTES // 4 else 0


def _tail_tile(width: int, accumulators: int, tail: int, blocks: int, rows_first_wide: bool) -> bool:
    """Whether a convolution takes a tile of ``tail`` pixels x ``blocks`` vectors whose last one in
    each row is shorter (``tail`` does not divide the output ``width``: a predicate ``x < width`` on
    its pixels) rather than the tile of a divisor of the width, of ``accumulators`` vectors: where
    the tail's tile holds at least twice as many, or, on a full-width AVX-512 CPU
    (:func:`.common._full_width_fma`) running rows first (:func:`_rows_outer`), where it holds more and
    takes two vectors (:data:`PAIRED_ROW`).

    Why: a prime width (17, 73, 109, 149) left tiles of 1 pixel x 1 or 2 vectors (the multiply-adds
    wait on their latency), and widths such as 55, 27 and 13 one vector of 9-13 pixels. Each alone
    against the divisor's tile (5 rounds, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c,
    2026-12-01; ``benchmarks/conv_tiles.py --tail``, BENCHMARKS.md "Tiles whose last one in a row is
    shorter"): Inception-v3's 16 kernels of 1 x 2 (17 and 71 wide: 3x3, 1x7, 7x1, 1x1) 0.31-0.39x
    with 7 x 2, its 1 x 1 tiles at 149 and 73 wide 0.81x and 0.50x with 14 x 1, its 7 x 1 at 147
    and 35 wide 0.78-1.08x with 14 x 1; ZFNet-512's 7x7 stem at 109 wide (1 x 2) 0.38x; rows first,
    AlexNet's 11x11 stem at 54 (9 x 1) 0.83x, SqueezeNet's stem at 111 (3 x 2) 0.98x, its kernels at
    55, 27 and 13 wide (11 x 1, 9 x 1, 13 x 1) 0.77-1.06x. Channel blocks first, where the weights
    outweigh the input, a tile of 10-13 accumulators keeps the divisor: a tile reads its weights
    once per row segment, and more segments read them more often; AlexNet's and ZFNet-512's at 12,
    25 and 26 wide (12 x 1, 5 x 2, 13 x 1) ran 1.03-1.31x with 7 x 2 and a tail (3 rounds, the same
    day). AVX2 code (``--target-cpu znver3``, timed on the same Xeon): 1 x 2 -> 4 x 2 0.38-0.69x
    (25 kernels of SqueezeNet, ZFNet-512 and Inception-v3), 1 x 1 -> 12 x 1 0.41-0.90x, AlexNet's
    2 x 2 at 26 wide 0.66x; 7 x 1 at 35 wide ran 1.24-1.31x with 12 x 1 (3 rounds: fewer than twice
    the accumulators, so it keeps 7 x 1). Zen 4 code (``--target-cpu znver4``: no 7 x 2, its tails
    14 x 1; on the same Xeon's full-width units) 0.22-0.98x on 32 kernels."""
    if width <= tail or width % tail == 0:
        return False
    more = tail * blocks
    return more >= 2 * accumulators or (rows_first_wide and blocks == 2 and more > accumulators)


def _write_back_bound(kmod: tvm.IRModule, nest: common._Nest) -> bool:
    """Whether a convolution's reduction is shorter than :data:`ALIASED_SHORT_REDUCTION` or its
    epilogue reads a residual (a kernel parameter of the output's shape): on output planes that
    alias, its tile takes one vector of output channels even where that halves its accumulators."""
    _, _, _, _, channels, ry, rx = nest.extents
    if channels * ry * rx < ALIASED_SHORT_REDUCTION:
        return True
    out = nest.block.writes[0].source
    shape = [int(x) for x in out.shape]
    params = kmod["main"].params  # TVM 0.27: a PrimFunc's params are its buffers (it has no buffer_map)
    epilogue = [b for b in common._root_blocks(kmod) if b.name_hint in nest.epilogue]
    return any(any(r.source.same_as(p) for p in params) and [int(x) for x in r.source.shape] == shape
               for b in epilogue for r in b.reads)


def _copied(kmod: tvm.IRModule) -> bool:
    """Whether the kernel's ``pad_temp`` block pads nothing (TOPI writes one for a convolution of
    padding 0 too: a copy of the input). Why inline it: as a stage of its own it was a second
    parallel loop per call copying the whole input: MobileNet-V3-Small's 1x1 convolutions on the
    direct template 451 -> 278 us summed (1x1s of 40-96 output channels from 96-576 at 14x14 and
    7x7 0.3-0.5x), ResNet-18's three strided 1x1 downsamplings 481 -> 202 (each alone, 3 rounds,
    2 Zen 4 threads, 2026-11-30)."""
    pad = common._root_blocks(kmod)[0]
    return [int(x) for x in pad.reads[0].source.shape] == [int(x) for x in pad.writes[0].source.shape]


def _aliased(conv, target) -> bool:
    """Whether the input channel planes ``conv`` reads are a multiple of :data:`ALIASED_PLANE_BYTES`,
    on a CPU other than :data:`ALIASED_INPUT_IGNORED`."""
    return common._mcpu(target) not in ALIASED_INPUT_IGNORED and _aliased_planes(conv.reads[0].source)


def _aliased_output(conv) -> bool:
    """Whether the output channel planes ``conv`` writes are a multiple of :data:`ALIASED_PLANE_BYTES`."""
    return _aliased_planes(conv.writes[0].source)


def _aliased_planes(buf) -> bool:
    """Whether the planes of an NCHW buffer (its last two dimensions) are a multiple of
    :data:`ALIASED_PLANE_BYTES`: every plane's row segment then falls in the same L1 set."""
    return int(buf.shape[-2]) * int(buf.shape[-1]) * buf.dtype.bits // 8 % ALIASED_PLANE_BYTES == 0

#: Taps (window height x width) from which a stride-1 convolution on the :func:`_sunny_cove` CPUs
#: runs its channel blocks first, whatever :func:`_rows_outer` says, on the register tile chosen
#: for rows first (7 pixels x 2 vectors). Each alone, both orders, 3 alternating rounds, 2 threads
#: (``benchmarks/conv_order.py MODEL...``, ``icelake-server``, 2026-12-04; BENCHMARKS.md,
#: "Convolutions of several taps over channel blocks first on Ice Lake"): of the 11 stride-1
#: kernels of several taps in six models that ran rows first, rows first took 1.07-1.93x the time
#: in 10 (Inception-v2's 64 -> 192 3x3 at 56x56 3,483 against 2,710 us; Inception-v1's 5x5 16 ->
#: 32 at 27x27 167 against 87) and 0.98x in one (DenseNet-121's at 56x56). Stride 2 keeps rows
#: first: ResNet-50's 128-channel 3x3 at 56x56 ran in 0.68x the time rows first (the stems and
#: the other strided ones 0.81-1.01x); the 1x1s, 0.74-1.21x (median 0.99), keep it too. A Zen 4
#: had the 64-channel 3x3 at 56x56 within 1% either way (:func:`_rows_outer`).
SUNNY_COVE_BLOCKS_FIRST_TAPS = 2


def _rows_outer(conv) -> bool:
    """Whether the parallel loop runs over output rows first (``y, f_o``), so that each thread reads
    its share of the input and all the weights, rather than channel blocks first (``f_o, y``: its
    share of the weights and all the input): rows first where the (padded) input holds more
    elements than the weights. Each kernel alone on 2 Zen 4 threads, ``f_o, y`` -> ``y, f_o``
    (amd-epyc-znver4-2c, 2026-11-27; input / weight elements in brackets): ResNet-18's stem at
    64 px 201 -> 110 us (1.6), a 1x1 256 -> 64 at 56x56 2576 -> 1555 (49), 32 channels 3x3 at
    112x112 1790 -> 1502 (45), a 3x3 64 -> 128 stride 2 at 56 839 -> 755 (2.9), the stem at 224 px
    and 64 channels 3x3 at 56 within 1%; weight-heavy ones within 4% either way (128 channels 3x3
    at 8x8 112 -> 116, 512 at 7x7 1154 -> 1092), so they keep channel blocks first, whose threads
    each read half the weights that stream from memory in a model."""
    data, weights = common._operand_elements(conv)
    return data > weights


def _blocks(row: int, channels: int, lanes: int, registers: int, per_group: int | None = None,
            least: int = MIN_CHANNEL_BLOCKS, budget: int | None = None) -> int:
    """Vectors of output channels a register tile holds: two where a tile of ``row`` pixels x two
    vectors stays within :data:`.common.ACC_BUDGET` accumulators and leaves at least ``least``
    (:data:`MIN_CHANNEL_BLOCKS`) blocks of output channels for the parallel loop, else one. A row tile
    is a divisor of the output width, so a narrow output (ResNet's last stages: 7, 4 or 2 wide) left
    most accumulators idle with one vector, and each input pixel broadcast fed one multiply-add.
    Each kernel alone on 2 Zen 5 threads (amd-epyc-znver5-2c, 2026-11-26; one, two, four vectors):
    512 channels 3x3 at 2x2 143 / 81 / 93 us, 256 3x3 at 4x4 74 / 45 / 42, 512 3x3 at 7x7 567 / 458 /
    1213, 512 -> 2048 1x1 at 7x7 338 / 248 / 508, 128 3x3 at 8x8 44 / 40 / 50; at 14 wide two vectors
    (28 accumulators) ran 1.0-1.6x slower; 32 channels at 7 wide, two vectors (one block: half the
    parallel tasks) 17 -> 20 us. In the model, where the weights come from memory, four vectors lost
    what they gained alone (ResNet-18 at 64 px, 9 paired rounds: 0.95x of one vector's latency with
    four at 2 and 4 wide, 0.84x with two), so two at most. ``budget``: accumulators other than
    :data:`.common.ACC_BUDGET`'s (:data:`LONG_1X1_ACC_BUDGET`)."""
    budget = budget or common.ACC_BUDGET[registers]
    two = 2 * row <= budget and (per_group or channels) % (2 * lanes) == 0 \
        and channels // (2 * lanes) >= least
    return 2 if two else 1


@dataclasses.dataclass(frozen=True)
class _PointwisePlan:
    """What :func:`_schedule_pointwise` needs of a 1x1 convolution kernel it applies to."""

    epilogue: tuple[str, ...]
    weight: int  # the kernel parameter holding the weights
    lanes: int  # pixels per vector
    rows: int  # whole output rows a register tile holds: their pixels a whole number of vectors
    width: int  # the output's
    padded: bool  # a pad_temp block comes first (a copy: the padding is zero)
    rows_outer: bool  # as :attr:`_Plan.rows_outer`
    channels: int = POINTWISE_CHANNELS  # output channels a tile (:data:`LONG_POINTWISE_CHANNELS`)
    channels_inner: bool = False  # each vector of pixels feeds the tile's channels in turn


def _pointwise_plan(kmod: tvm.IRModule, target) -> _PointwisePlan | None:
    """The :class:`_PointwisePlan` of a 1x1, stride-1, unpadded convolution whose tile of
    :data:`POINTWISE_CHANNELS` output channels x whole output rows holds a whole number of vectors
    of pixels, at most ``ACC_BUDGET / POINTWISE_CHANNELS`` of them (the most rows that fit); None
    for any other kernel.

    Why: such a convolution is a matrix product of the weights by the input's channels-by-pixels
    matrix, whose pixels lie contiguous in NCHW. The channel-vector template (:func:`_plan`) reads
    them one broadcast at a time and stores its tile across channel planes, a scalar store per
    output element, once per ``rc`` steps of the reduction: where ``rc`` is 64-256 that store and
    the epilogue's reads ran as long as the multiply-adds (ResNet-50's 64 -> 256 at 56x56 with its
    residual add, 68 GFLOP/s of the 209 that ``bench-kernels`` measures as this machine's peak). Here each step loads
    vectors of contiguous pixels, broadcasts one weight per output channel, and the tile is stored
    and its epilogue (bias, residual, ReLU) computed a vector at a time: the 1x1 convolutions of
    ResNet-50 at 56x56 and 28x28, each alone on 2 Zen 4 threads, 0.40-0.72x the channel-vector
    template's time, 158-206 GFLOP/s (amd-epyc-znver4-2c, 2026-11-27; BENCHMARKS.md, "1x1
    convolutions"). 14x14 and 7x7 maps (196 and 49 pixels: no whole rows in whole vectors),
    strided 1x1s (a gather per vector), tiles of fewer than :data:`POINTWISE_VECTORS` vectors and
    input planes of a multiple of :data:`ALIASED_PLANE_BYTES` keep the channel-vector template; on a
    :data:`POINTWISE_ANY_STRIP` CPU a reduction of :data:`LONG_POINTWISE_REDUCTION` or more takes a
    tile of :data:`LONG_POINTWISE_CHANNELS` channels where its rows fit; and so
    do, on a full-width AVX-512 CPU other than :data:`POINTWISE_ANY_STRIP`, tiles whose strip exceeds
    :data:`POINTWISE_STRIP_BYTES` where that template would take its tile of two full vectors
    (:func:`_paired_tile`)."""
    nest = common._nest(kmod, target, (_CONV,))
    if nest is None:
        return None
    _, oc, oh, ow, _, ry, rx = nest.extents
    conv = nest.block
    data = [int(x) for x in conv.reads[0].source.shape]
    if (ry, rx) != (1, 1) or oc % POINTWISE_CHANNELS or data[2:] != [oh, ow]:
        return None  # not 1x1, or stride or padding other than 1 and 0
    if nest.padded and not _copied(kmod):
        return None
    if _aliased(conv, target):
        return None
    weight = common._weight(kmod, conv)
    lanes, registers = common.vector_lanes(target)

    def rows_within(accumulators: int, channels: int) -> int | None:
        """The most whole output rows a tile of ``channels`` keeps within ``accumulators``."""
        most = accumulators // channels
        return max((t for t in range(1, oh + 1) if oh % t == 0 and t * ow % lanes == 0
                    and POINTWISE_VECTORS <= t * ow // lanes <= most), default=None)

    if weight is None:
        return None
    if (common._full_width_fma(target) and _sunny_cove(target) and nest.extents[4] >= LONG_POINTWISE_REDUCTION
            and oc % LONG_POINTWISE_CHANNELS == 0 and (rows := rows_within(LONG_POINTWISE_ACC, LONG_POINTWISE_CHANNELS))):
        return _PointwisePlan(nest.epilogue, weight, lanes, rows, ow, nest.padded, _rows_outer(conv),
                              LONG_POINTWISE_CHANNELS, True)
    rows = rows_within(common.ACC_BUDGET[registers], POINTWISE_CHANNELS)
    if rows is None:
        return None
    if (common._full_width_fma(target) and not _sunny_cove(target)
            and _strip_bytes(nest, rows) > POINTWISE_STRIP_BYTES and _paired_tile(kmod, target)):
        return None  # the strip comes from L2: the direct template's 7 x 2 tile is quicker
    return _PointwisePlan(nest.epilogue, weight, lanes, rows, ow, nest.padded, _rows_outer(conv))


def _paired_tile(kmod: tvm.IRModule, target) -> bool:
    """Whether the direct template (:func:`_plan`) tiles this convolution two full-width vectors of
    output channels (:data:`PAIRED_ROW`), the tile :data:`POINTWISE_STRIP_BYTES` was measured against."""
    plan = _plan(kmod, target)
    return plan is not None and plan.blocks == 2 and plan.lanes == common.vector_lanes(target)[0]


def _strip_bytes(nest: common._Nest, rows: int) -> int:
    """The input a 1x1 tile of ``rows`` whole output rows reads over its reduction: input channels x
    its pixels x the element's bytes (:data:`POINTWISE_STRIP_BYTES`)."""
    _, _, _, width, channels, _, _ = nest.extents
    return channels * rows * width * nest.block.reads[0].source.dtype.bits // 8


def _schedule_pointwise(kmod: tvm.IRModule, target, plan: _PointwisePlan) -> tvm.tirx.PrimFunc | None:
    """The 1x1 schedule: ``n f_o y_o | rc | f_i y_i x`` (``n f_o y_o``, or ``n y_o f_o``, one parallel
    loop), ``f_i`` the tile's channels (unrolled; :data:`POINTWISE_CHANNELS`, or
    :data:`LONG_POINTWISE_CHANNELS` inside the vectors of pixels), ``y_i x`` its pixels
    fused and cut into vectors (unrolled, vectorised), accumulated in a tile that LLVM keeps in
    registers (in :data:`.common.TILE_SCOPE`); the write-back and the epilogue per tile, vectorised
    alike; the weights packed at load time as the convolution template's, the zero padding (a copy)
    inlined."""
    func = kmod["main"].with_attr("layout_free_buffers", [plan.weight])
    sch, conv = common._opened(func, _CONV, plan.epilogue)
    if plan.padded:
        sch.compute_inline(sch.get_sblock("pad_temp"))
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    f_o, f_i = sch.split(f, [None, plan.channels])
    y_o, y_i = sch.split(y, [None, plan.rows])
    outer = (y_o, f_o) if plan.rows_outer else (f_o, y_o)
    sch.reorder(n, *outer, rc, ry, rx, f_i, y_i, x)
    acc = sch.cache_write(conv, 0, common.TILE_SCOPE)
    common._per_tile(sch, acc, outer[1], plan.epilogue)
    sch.parallel(sch.fuse(n, *outer))
    sch.unroll(f_i)
    vectors, lane = _pixel_vectors(sch, sch.fuse(y_i, x), plan.lanes)
    if plan.channels_inner:
        sch.reorder(vectors, f_i, lane)
    # the write-back and the epilogue with every loop unrolled: LLVM keeps a local array in
    # registers only where every index into it is a constant
    pixels = plan.rows * plan.width
    for block in [acc] + ([sch.get_sblock(plan.epilogue[-1])] if plan.epilogue else []):
        loops = sch.get_loops(block)[1:]  # under the parallel loop: the tile's (loops of extent 1 dropped)
        cut, size = len(loops), 1
        while size < pixels:  # the innermost loops, whose extents multiply to the tile's pixels
            cut -= 1
            size *= int(sch.get(loops[cut]).extent)
        for loop in loops[:cut]:
            sch.unroll(loop)
        _pixel_vectors(sch, sch.fuse(*loops[cut:]) if len(loops) - cut > 1 else loops[cut], plan.lanes)
    sch.decompose_reduction(conv, rc)
    return common._packed(sch, target)


def _pixel_vectors(sch, loop, lanes: int) -> tuple:
    """``loop`` (a tile's pixels) cut into vectors of ``lanes``: the vectors unrolled, each
    vectorised; ``(vectors, lane)``, their loops."""
    vectors, lane = sch.split(loop, [None, lanes])
    sch.unroll(vectors)
    sch.vectorize(lane)
    return vectors, lane


def _schedule_conv(kmod: tvm.IRModule, target, plan: _Plan) -> tvm.tirx.PrimFunc | None:
    """The direct convolution schedule, its weights marked layout-free and packed by a
    preprocessing block that the build lifts to load time."""
    func = kmod["main"].with_attr("layout_free_buffers", [plan.weight])
    sch, conv = common._opened(func, plan.block, plan.epilogue)
    padded = plan.padded and not _copied(kmod)
    if plan.padded and not padded:
        sch.compute_inline(sch.get_sblock("pad_temp"))
    if plan.channels_last:
        _channels_last_copy(sch, conv, plan.lanes, plan.parallel)
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    f_o, f_b, f_i = sch.split(f, [None, plan.blocks, plan.lanes])
    x_o, x_i = sch.split(x, [None, plan.row])
    outer = (y, f_o) if plan.rows_outer else (f_o, y)
    if plan.chunk:  # the row's tiles under each chunk, their sums carried in the row's accumulator
        rc_o, rc = sch.split(rc, [None, plan.chunk])
        sch.reorder(n, *outer, rc_o, x_o, rc, ry, rx, x_i, f_b, f_i)
        written, zeroed = outer[1], rc_o  # the accumulator written back, and zeroed, per row
    else:
        sch.reorder(n, *outer, x_o, rc, ry, rx, x_i, f_b, f_i)
        written, zeroed = x_o, rc  # per tile
    acc = sch.cache_write(conv, 0, common.TILE_SCOPE)
    sch.transform_layout(conv, ("write", 0), lambda a, b, c, d: (a, c, d, b))
    epilogue = _epilogue_inlined(sch, acc, plan.epilogue)
    common._per_tile(sch, acc, written, epilogue)
    _write_back_by_channels(sch, acc, epilogue, plan.lanes, plan.row)
    rows = int(sch.get(y).extent)
    tasks = sch.fuse(n, *outer)
    # below SERIAL_FLOPS no parallel loop: MobileNet-V3-Small's 14 squeeze-and-excitation 1x1s on
    # 1x1 maps ran 35 us all told serial, 50 with the thread pool (each alone, 2 Zen 4 threads)
    if plan.parallel:
        sch.parallel(tasks)
    sch.vectorize(f_i)
    sch.unroll(f_b)
    sch.unroll(x_i)
    _reduction_and_padding(sch, conv, zeroed, padded and plan.parallel)  # serial: a serial padding too
    step = _prefetch_step(plan, rows, sch.get(x_o).extent, sch.get(rc).extent, kmod)
    if step > 1:
        rc, _ = sch.split(rc, [None, step])
    loops = [sch.get(loop) for loop in (tasks, x_o, rc)]  # before packing: their loop variables stay
    func = common._packed(sch, target)
    return _prefetching(func, plan, *loops, rows) if func is not None and step else func


def _prefetch_step(plan: _Plan, rows: int, tiles, channels, kmod: tvm.IRModule) -> int:
    """Input channels between two of a tile's prefetches of the next block's packed weights
    (:func:`_prefetching`): the largest power of two that divides ``channels`` and leaves each of the
    block's ``rows`` x ``tiles`` tiles as many steps as lines to prefetch, at least 1; 0 for no
    prefetch (a block's rows not consecutive in one thread's tasks, a chunked reduction, no parallel
    loop, weights under :data:`PREFETCH_BYTES`, or a block read by fewer than :data:`PREFETCH_TILES`
    tiles)."""
    weight = kmod["main"].params[plan.weight]
    elements = math.prod(int(s) for s in weight.shape)
    if plan.rows_outer or plan.chunk or not plan.parallel or elements * weight.dtype.bits // 8 < PREFETCH_BYTES \
            or rows * int(tiles) < PREFETCH_TILES:
        return 0
    per_line = prefetch.LINE_BYTES * 8 // weight.dtype.bits
    blocks = int(weight.shape[0]) // (plan.blocks * plan.lanes)
    count = prefetch.per_slot(elements // blocks, per_line, rows * int(tiles))
    step, channels = 1, int(channels)
    while channels % (2 * step) == 0 and channels // (2 * step) >= count:
        step *= 2
    return step


def _prefetching(func: tvm.tirx.PrimFunc, plan: _Plan, tasks, tiles, steps, rows: int) -> tvm.tirx.PrimFunc:
    """``func`` (a convolution whose parallel loop ``tasks`` runs over images, blocks of output
    channels, then its ``rows`` rows; ``tiles`` the loop over a row's tiles, ``steps`` over a tile's
    steps of its reduction, :func:`_prefetch_step`) with the next block's packed weights prefetched
    while the current block's tiles read their own, a line or a few at each step (:mod:`.prefetch`;
    the packing lays the blocks out in order; the block after the last is the first). Unchanged where
    the weights are not packed ``[blocks, ...]``."""
    blocks = int(func.params[plan.weight].shape[0]) // (plan.blocks * plan.lanes)  # TVM 0.27: params are buffers
    packed = prefetch.packed_weight(func, plan.weight, lambda shape: shape[0] == blocks)
    if packed is None:
        return func
    per_block = math.prod(int(s) for s in packed.shape) // blocks
    block = tvm.tirx.floormod(tvm.tirx.floordiv(tasks.loop_var, rows) + 1, blocks)
    tile = tvm.tirx.floormod(tasks.loop_var, rows) * int(tiles.extent) + tiles.loop_var
    slot = tile * int(steps.extent) + steps.loop_var
    stmt = prefetch.lines(packed, block * per_block, per_block, slot, rows * int(tiles.extent) * int(steps.extent))
    return prefetch.before_body(func, steps.loop_var, stmt)


def _channels_last_copy(sch, conv, lanes: int, parallel: bool) -> None:
    """``conv``'s input copied channels last (``n y x c``) in a stage before it, its rows in
    parallel (:func:`_channels_last`), tiles of a vector of channels x a row segment transposed in
    registers (:mod:`.transposed`; where no segment divides the row, each pixel's channels a vector
    at a time, each lane a scalar load). Transposed, ResNet-50's strided 256 -> 512 1x1 (its copy
    of a 56 x 56 input) ran 0.80x its time warm and 0.86x cold, its and MobileNet-V1's other
    channels-last 1x1s (14 and 7 wide) 0.92-1.07x, within the noise (each alone, 3 alternating
    rounds, 2 threads, intel-r-xeon-r-processor-rocketlake-2c, 2026-12-07)."""
    copy = sch.cache_read(conv, 0, "global")
    sch.transform_layout(copy, ("write", 0), lambda n, c, y, x: (n, y, x, c))
    n, c, y, x = sch.get_loops(copy)
    vectors, lane = sch.split(c, [None, lanes])
    sch.reorder(n, y, vectors, x, lane)
    rows = sch.fuse(n, y)
    if parallel:
        sch.parallel(rows)
    if not transposed.tensorized(sch, copy, x, lanes):
        sch.reorder(x, vectors)
        sch.vectorize(lane)


def _epilogue_inlined(sch, acc, epilogue: tuple[str, ...]) -> tuple[str, ...]:
    """The epilogue left (its blocks but the last are inlined already, :func:`.common._opened`): none where
    its last block is inlined into the write-back ``acc`` here, before the write-back is placed
    under its tile (a tile whose last segment of a row is shorter, :func:`_tail_tile`, places it
    under a predicate, and TVM inlines into no predicated block); all of it where that block writes
    another shape than the convolution."""
    if not epilogue:
        return epilogue
    last = sch.get_sblock(epilogue[-1])
    if list(sch.get(last).writes[0].source.shape) != list(sch.get(acc).writes[0].source.shape):
        return epilogue
    sch.reverse_compute_inline(last)
    return ()


def _write_back_by_channels(sch, acc, epilogue: tuple[str, ...], lanes: int, row: int) -> None:
    """A convolution tile's write-back (its ``local`` accumulator laid out pixels x channels,
    :func:`.common._per_tile`) a vector of channels at a time, the pixels unrolled, with the last epilogue
    block inlined into it (:func:`_epilogue_inlined`, before; ``epilogue``: what that left): each
    vector's epilogue computed in vector registers, then scattered
    into the NCHW output. Why: computed from an NCHW copy of the tile, the epilogue ran a scalar
    loop per element; a hard swish's division per output was most of MobileNet-V3's 1x1 and stem
    kernels: its stem 230 -> 108 us, its 240-channel 1x1 at 14x14 65 -> 33, ResNet-18's
    convolutions 14.4 -> 13.5 ms all told (each alone, 3 rounds, 2 Zen 4 threads, 2026-11-30). An
    epilogue that writes another shape than the convolution (a squeeze-and-excitation's scaling of
    the feature map by the 1x1 map it computes; a slice of padded channels) keeps its own loop nest
    under the tile, its innermost loop vectorised: MobileNet-V3-Small's scalings 9.5-26.1 us ->
    4.3-7.5 (the same measurements)."""
    if epilogue:  # of another shape: its own loop nest under the tile
        sch.vectorize(sch.get_loops(sch.get_sblock(epilogue[-1]))[-1])
        return
    loops = sch.get_loops(acc)  # under the tile's loop: channels (a whole number of vectors), pixels
    if row > 1:
        channel, pixel = loops[-2:]
        sch.reorder(pixel, channel)
        sch.unroll(pixel)
    else:
        channel = loops[-1]
    vectors, lane = sch.split(channel, [None, lanes])
    sch.unroll(vectors)
    sch.vectorize(lane)


def _reduction_and_padding(sch, conv, init_loop, padded: bool) -> None:
    """The accumulator's zeroing split off above the reduction, the padding a parallel stage."""
    sch.decompose_reduction(conv, init_loop)
    if padded:
        loops = sch.get_loops(sch.get_sblock("pad_temp"))
        sch.parallel(sch.fuse(loops[0], loops[1]))
