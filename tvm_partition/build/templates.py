"""Hand-written CPU schedules: direct convolutions and matmuls (weights packed once at load time),
softmax, layer norm, pooling, reductions and element-wise kernels (parallel).

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
  where no divisor makes a good tile, :data:`PAIRED_ROW` (two vectors) or :data:`ROW_BUDGET` pixels,
  the last tile of each row shorter (:func:`_tail_tile`);
  ``n f_o y`` one parallel loop (the weights of an ``f_o`` block stay in cache over its rows).
- The accumulator is a cache on the stack (:data:`TILE_SCOPE`) laid out ``[x_i, f_i]`` (pixels
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

Matmuls with constant weights (TOPI's ``matmul`` of ``x[..., m, k]`` by ``w[k, n]``, element-wise
epilogue: BERT's projections and FFN, the RNNs' gates, imported models' ``MatMul`` and ``Gemm``).
Why: their schedules were MetaSchedule records tuned for BERT-tiny's and the RNNs' shapes,
replayed onto every other; on BERT-base's FFN matmul + GELU (2048 x 768 x 3072) the replay ran
99-120 ms where onnxruntime's MatMul alone took 49-62 (2 Zen 4 threads), and the cost model,
which had only the records' own shapes to learn from, predicted BERT-base at half its measured
latency. The schedule is :func:`_schedule_matmul`: the register-tiled GEMM micro-kernel of CPU
libraries (a tile of :data:`MATMUL_ROWS` rows x one or two vectors of columns over the whole
reduction, the weights packed so each step reads contiguous vectors), with the element-wise
epilogue per tile as the convolution's. On the 13 distinct matmul kernels of LSTM, GRU,
BERT-tiny and BERT-base, each alone against the records the builds replayed (``python
benchmarks/template_ab.py matmul lstm gru bert-tiny bert``, 2 Zen 4 threads, 2026-11-27): BERT-base's
271 -> 143 ms of kernels (0.39-0.97x each), BERT-tiny's 0.84-1.01x but its FFN + GELU at K = 128
1.14x (a record tuned at exactly that shape), the RNNs' 0.81-0.94x. A matrix-vector product (one
row: a classifier at batch 1) takes a tile of one row and up to :data:`GEMV_VECTORS` vectors of
columns, as many independent accumulators (one vector a tile left each on one chain of dependent
FMAs: ResNet-18's classifier ran 1.4-2.4x its record). Memory-bound where its weights come from
memory, it reads them as one contiguous stream a tile: ZFNet-512's 1 x 9216 x 4096 (302 MB) ran
17.6 ms on the record replayed, 11.1 as one-row tiles (27 GB/s), the model 37.8 -> 27.2 ms and
AlexNet 19.3 -> 14.2 (paired, 5 rounds; ``benchmarks/template_ab.py matmul``: every classifier of
ResNet-18, ResNet-50, AlexNet and Inception-v1 0.35-0.62x its record alone; 2 Zen 4 threads,
2026-11-27). The same schedule takes attention's batched matmuls of computed operands
(``softmax @ v``: the right operand read in place, not packed) where their reduction is long
enough (:data:`MIN_BATCHED_REDUCTION`), and tiles a sequence-first ``[tokens, 1, features]``
projection over its tokens (:func:`tvm_partition.ir.relax_utils.matmul_row_axis`); ViT-B/16 (torchvision, 197 tokens) with these and
:func:`tvm_partition.frontend.inference.pad_matmuls` ran 0.53x the build before, 1.22x
onnxruntime's time (2 Zen 4 threads, 2026-11-30; BENCHMARKS.md, "torchvision's models").

Grouped and depthwise convolutions (TOPI's ``group_conv2d_nchw``: MobileNet-V2's depthwise 3x3s,
ShuffleNet's grouped 1x1s). Why: no record of them exists, so they ran a dense convolution's record
replayed onto their loop nest: MobileNet-V2's four largest depthwise convolutions took 217-649 us
each, slower than TVM's naive default schedule (141-242), and its depthwise kernels about 2 of its
6.7 ms (``run --kernels``; amd-epyc-znver5-2c, 2026-11-25). A channel has too few inputs for a vector
of output channels, so this schedule vectorises along the output row instead: a register tile of
``rows`` output rows x one row segment (the largest divisor of the width up to a vector),
accumulated over the group's input channels and the window, each weight broadcast; the loops
over batch, channels and row blocks one parallel loop, the padding a parallel stage of its own.
Where it pays (each kernel alone, 2 threads): outputs at least :data:`MIN_GROUP_WIDTH` wide with at
most :data:`MAX_GROUP_CHANNELS` input channels per group: a 32-channel 112x112 depthwise 258 -> 49 us,
a stride-2 96-channel one 649 -> 229 us (BENCHMARKS.md); on 14- and 7-wide maps, and for ShuffleNet's groups of
34-136 input channels, the replayed dense record was as fast or faster (up to 2x), so those keep it.
Nor a strided convolution of several input channels a group: each step of its row segment reads
every other input pixel, and the replayed dense record ran 2.7-3.4x quicker (RegNet-Y-400MF's
and ResNeXt-50's, 2 Zen 3 threads, 2026-11-30, ``benchmarks/template_ab.py conv2d``). Groups of
whole vectors of output channels (8 or more) take the direct-convolution template above instead,
strided or not, which outran both; this one keeps depthwise convolutions and groups of fewer
output channels (ResNeXt-50's 4). Strided groups of 2-7 channels were not measured.
A depthwise convolution whose channels fill whole vectors takes a schedule vectorised along its
channels instead where that measured quicker (strided, or stride 1 with at least
:data:`MIN_DEPTHWISE_BLOCKS` vectors of channels: :func:`_depthwise_plan`): each parallel task
copies its channels' padded input channels innermost and accumulates a row segment of pixels x one
vector of channels, the weights packed at load time (MobileNet-V3-Small's 576-channel 5x5 at 7x7
458 us replayed, 109 on the row template, 16 here).

Softmax over the last axis (``topi.nn.fast_softmax``, :mod:`tvm_partition.ir.fastmath`): each row
in parallel, its maximum and sum accumulated in vector lanes and combined, its exponentials and
division vectorised (:func:`_schedule_softmax`: BERT-tiny's attention softmax 493 -> 75 us).
Layer norm over the last axis (TOPI's ``layer_norm``) the same way, from :data:`MIN_MOVED_ELEMENTS`
outputs (:func:`_schedule_layer_norm`). Why: the one record of it (BERT-tiny's, tuned at batch 16)
runs five parallel loops a call, one per block, each waking the thread pool: replayed at 4, 8 and
32 sequences it ran 1.3-1.5x this template's time alone, and at its own shape, quicker alone
(46 us against 61), it ran 1.2-1.3x the template's time in the model (107-124 us a call against
82-101, ``run --kernels``; 2 Zen 3 threads, 2026-11-29), so the template outranks it there too.
Both take an element-wise epilogue (inlined) or a padding of their rows (the matmul after them
pads its rows, :func:`tvm_partition.frontend.inference.pad_matmuls`; a parallel loop nest of its
own), and a softmax whose rows hold no whole vector keeps scalar reductions: ViT-B/16's softmax
and layer norms, each fused with such a padding, ran TVM's default schedule, 12.6 and 5.2 ms of
the model's 217; with these 7.2 and under 0.9 (``run --kernels``, 2 Zen 4 threads, 2026-11-30).

Max and average pooling (TOPI's ``pool_max``, ``pool_sum`` + ``pool_avg``, NCHW), global ones
excepted: the channels in parallel, each output row's padded input rows computed under it, or at
stride 1 from :data:`PLANE_PADDING_MIN_WIDTH` columns each channel's padded plane once
(:func:`_schedule_pool`: TVM gave an unpadded pool no parallel loop, and a padded one's replayed
record ran its parts up to 3.3x their share; padded row by row, a stride-1 3x3 pads each row
three times, Inception-v2's average pools 1.4-3x the time); from :data:`POOL_ROW_MIN_WIDTH`
output columns (strided: up to a vector's lanes) each output row one vector, its window's taps
outside it (a scalar a pixel had made each window a chain of dependent instructions; stride-1
rows 0.63-0.87x their time each alone).

Reductions over the innermost axes of one tensor (TOPI's ``sum``, ``max``, ``min``, ``prod`` and
``mean``, its division and any element-wise block after it inlined under each row): ONNX's
``GlobalAveragePool`` and ``ReduceMean`` over H and W, which PyTorch's exporters write for
``adaptive_avg_pool2d(x, 1)``, a squeeze-and-excitation's pooling. The reduced axes fused into one row,
summed as one or two vectors of partial results (``rfactor``), the rows in parallel from
:data:`MIN_MOVED_ELEMENTS` elements (:func:`_schedule_reduce`). Why: TVM's default schedule adds
each element to one scalar; an EfficientNet-like block's two global pools took 138 and 70 us of its
755 (``run --kernels``), 6-13 us on this schedule, the model paired 0.79x (2 Zen 3 threads, 2026-11-30).

Element-wise kernels (every block spatial: an imported model's unfolded batch norm + ReLU, concats,
transposes, an RNN's gates). Why: TVM 0.27 gives a CPU kernel no schedule of its own, so such a
kernel ran serially, each of its blocks a loop nest of its own with its intermediate tensors
written out; DenseNet-121's 58 batch-norm + ReLU kernels took 24.8 ms of its 83 (``run
--kernels``), onnxruntime's whole model 31.5. The template inlines every block into the outputs
and runs the loops above the innermost in parallel (TOPI's x86 ``schedule_injective``, minus its
explicit vectors): a [1, 160, 56, 56] batch norm + ReLU 442 -> 47 us, DenseNet-121 end to end
65.5 -> 44-48 ms (2026-11-25, intel-r-xeon-r-processor-2c, 2 threads). Below :data:`MIN_ELEMENTS`
the blocks are inlined all the same and the loops stay serial (:data:`INLINED_LABEL`): TVM's
default schedule writes each intermediate tensor out, and the lowering allocates every one over
1 KiB from the workspace pool at every call (``TVMBackendAllocWorkspace``: an LSTM gate kernel of
8 x 64 outputs made 7 allocations a call, seen in ``perf``); inlined, the LSTM and GRU ran 5-7%
faster end to end, their split builds as much (amd-epyc-znver5-2c, 2026-11-26, BENCHMARKS.md).
A concatenation of at least :data:`MIN_PARTITIONED_INPUTS` inputs has its axis's loop cut at its
inputs' bounds, so that no element tests TOPI's ``if_then_else`` per input (:func:`_concat_cuts`:
torchvision's DenseNet-121, up to 25 inputs a concatenation, 0.10-0.90x each kernel).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import tvm

from ..ir.fastmath import ROW_LANES, TAILED_SOFTMAX_BLOCKS
from ..ir.relax_utils import matmul_row_axis
from . import amx, vnni
from .transfer import root_children

#: Labels of the kernels scheduled here (the manifest and ``--explain`` show them beside tuned,
#: transferred and default).
CONV_LABEL = "template (direct convolution, packed weights)"
ELEMENTWISE_LABEL = "template (element-wise, parallel and vectorised)"
#: An element-wise kernel too small for a parallel loop, its blocks inlined (:data:`MIN_ELEMENTS`).
INLINED_LABEL = "template (element-wise, inlined, serial)"
GROUP_LABEL = "template (grouped convolution, vectorised along the rows)"
DEPTHWISE_LABEL = "template (depthwise convolution, vectorised along the channels)"
SOFTMAX_LABEL = "template (softmax, rows in parallel, vectorised reductions)"
LAYER_NORM_LABEL = "template (layer norm, rows in parallel, vectorised reductions)"
POOL_LABEL = "template (pooling, channels in parallel, padding per row)"
MATMUL_LABEL = "template (matmul, packed weights)"
BATCHED_MATMUL_LABEL = "template (matmul, operands read in place)"
#: :mod:`.vnni`'s: a uint8 x int8 product summed by ``vpdpbusd``
INTEGER_MATMUL_LABEL = "template (uint8 x int8 matmul, VNNI, packed weights)"
#: :mod:`.amx`'s: the same product summed in AMX tiles by ``tdpbusd``, where the CPU has them
INTEGER_TILES_LABEL = "template (uint8 x int8 matmul, AMX tiles, packed weights)"
#: The matmul template's labels: a record tuned here for the kernel can outrank it (see
#: :class:`tvm_partition.build.tuning.Schedules`), as for no other template
MATMUL_LABELS = (MATMUL_LABEL, BATCHED_MATMUL_LABEL)
POINTWISE_LABEL = "template (1x1 convolution, vectorised along the pixels)"
#: A matmul no record schedules (:func:`fallback`): the matmul template, any reduction and rows
FALLBACK_MATMUL_LABEL = "template (matmul, where no record applies)"
#: ... and a layer norm or a softmax under :data:`MIN_MOVED_ELEMENTS` outputs
FALLBACK_LAYER_NORM_LABEL = "template (layer norm, where no record applies)"
FALLBACK_SOFTMAX_LABEL = "template (softmax, where no record applies)"
REDUCE_LABEL = "template (reduction over the innermost axes, vectorised partial results)"

_CONV = "conv2d_nchw"
_GROUP = "group_conv2d_nchw"
#: TOPI's pooling blocks (``nn.pool2d``): a maximum, or a sum that an element-wise ``pool_avg`` divides
_POOLS = ("pool_max", "pool_sum")
#: TOPI's block of ``relax.matmul`` (``topi.matmul``: ``x[..., m, k] * w[k, n]``)
_MATMUL = "matmul"
#: Rows of a matmul's register tile; the template applies where the rows are a multiple of it or 1
#: (a matrix-vector product: :data:`GEMV_VECTORS`) and the planners cut rows at its multiples
#: (:func:`inner_tiles`). Each
#: kernel alone against the record builds replayed, 5 alternating rounds, 2 Zen 4 threads
#: (amd-epyc-znver4-2c, 2026-11-27; ``x`` rows x ``k`` x ``n`` columns): 4 rows x 2 vectors
#: (8 accumulators) ran BERT-base's FFN + GELU (2048 x 768 x 3072) 0.43x, its 768 x 768 0.64x, BERT-tiny's
#: K = 512 0.68x and K = 128 + GELU 1.01x, the GRU's 0.93-0.97x; 4 x 4 within 0.08 of it either way;
#: 8 x 2 0.75-1.58x where 4 x 2 ran 0.68-1.01x.
MATMUL_ROWS = 4
#: Rows of a two-vector matmul tile on a full-width AVX-512 CPU (:func:`_full_width_fma`), the first
#: that divides the rows (else :data:`MATMUL_ROWS`): 7 (14 accumulators, as the convolution's 7 x 2,
#: :data:`PAIRED_ROW`), then 13 (26: ConvNeXt-T's and Swin-T's last stage, 7 x 7 pixels padded to 52
#: rows). Each alone against 4 x 2 in the same loop order (``benchmarks/matmul_tiles.py``, 5 rounds,
#: 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01): the 11 matmuls of ConvNeXt-T
#: and Swin-T with the rows outer 0.64-0.93x on 7 x 2 (the same schedule timed twice read 0.79-1.15:
#: the VM's noise), those with the columns outer (:func:`_columns_outer`) a further 0.78-0.89x on 7 x 2
#: (196 rows) and 0.81-1.05x on 13 x 2 (52 rows). In a scratch run before, 8 x 2, 14 x 2 and
#: 16 x 2 ran 0.98-1.26x of 4 x 2 on Swin-T's rows-outer matmuls of 56-3,136 rows (7 x 2: 0.78-0.88x),
#: 8 x 2 0.93-1.40x on BERT-tiny's 128 rows (which keep 4: no 7 or 13 divides them).
WIDE_MATMUL_ROWS = (7, 13)
#: ... and where neither divides them and the columns are outer, 8 (16 accumulators): ViT-B/16's
#: 197 rows (padded to 200) and BERT-base's 128 kept 4 x 2. Each alone, 8 x 2 against 4 x 2 (7
#: alternating rounds, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-02, Hugging
#: Face exports): all eight of their matmuls with a weight 0.70-0.98x.
COLUMNS_OUTER_ROWS = 8
#: ... where the reduction is at least this long: over a short one the 8 x 2 tile ran slower than
#: every other tile tried, 4 x 2 included. Each alone, 3 alternating rounds, 2 threads
#: (amd-epyc-znver5-2c, 2026-12-02; a synthetic ``x @ w + b``): 4 x 2 against 8 x 2 at K = 64
#: 0.28-0.68x (the LSTM's and GRU's gate matmuls, 8-128 rows: 0.5-0.6x; in the LSTM's build 11.2 us
#: a call where the record it replayed before rules 49 took 5.2), K = 128 0.74x, K = 256 0.82-0.90x,
#: K = 512 1.01x; at K = 768 (the evidence for 8 rows) 8 x 2 stayed quickest. 7-, 12- and 6-row
#: tiles at K = 64-256 ran within 0.66-1.03x of 8 x 2's best rivals: they keep their rules.
COLUMNS_OUTER_MIN_REDUCTION = 512
#: ... and where none of those divides them, the first of these that does (else :data:`MATMUL_ROWS`):
#: Whisper's encoder's 1500 rows kept 4 x 2. Its six weight matmuls each alone, in their own loop
#: order, 12 x 2 against 4 x 2 (a scratch script, 5 alternating rounds, 2 threads, amd-epyc-znver5-2c,
#: 2026-12-02; BENCHMARKS.md, "The Emerald Rapids VM's template rules timed on a Zen 5"): the
#: 384 x 384 projections 0.84-0.89x, the FFN's 0.93x (columns outer) and 0.75x; 6 and 10 rows within
#: a few percent of 12 on all six. Timed on the Zen 5 only: 8 rows lost to 4 on the Emerald Rapids VM's
#: rows-outer matmuls of 128 rows, which none of these divides.
DIVISOR_MATMUL_ROWS = (12, 10, 6)
#: Reduction elements a chunk of a columns-outer matmul's reduction holds (:func:`_matmul_chunk`):
#: the chunk's packed weights of a block of columns (128 x 2 vectors: 16 KiB on AVX-512) stay in
#: the L1 cache while every tile of rows passes them, the rows' sums carried in the block's
#: accumulator. Why: over the whole reduction a block's weights (96 KiB at K = 768) were read from
#: the L2 cache by every tile of rows. ViT-B/16's and BERT-base's K = 768 matmuls on 8 x 2, chunks
#: of 128 against none: 0.84-0.97x; at K = 3072 1.27x slower (their ``x`` of 1.5-2.4 MB, read in
#: slices of each row, outgrows the L2 cache): :data:`MATMUL_CHUNK_X_BYTES`.
MATMUL_CHUNK = 128
#: A matmul's reduction runs in chunks only where the block of columns' weights outgrow this
#: (this VM's 48 KiB L1 data cache)...
MATMUL_CHUNK_FROM_BYTES = 48 * 1024
#: ... and its ``x`` fits in this (half the 2 MiB L2 cache a core of the VM that measured it)...
MATMUL_CHUNK_X_BYTES = 1024 * 1024
#: ... and at least this many tiles of rows pass each chunk: ConvNeXt-T's and Swin-T's matmuls of
#: 52 rows (4 tiles of 13) ran 0.96-1.03x with chunks, Swin-T's of 196 (28 of 7) 0.95x (the same
#: rounds): the chunk is read from L1 by every tile, and a few tiles leave little to gain.
MATMUL_CHUNK_TILES = 16
#: Vectors of columns a one-row tile (a matrix-vector product) accumulates at most: the most that
#: divide its columns, each an independent chain of FMAs (ResNet-18's classifier, 1000 columns in
#: 5 vectors of 8, 12.7 us alone where its record took 30.2 and one vector a tile 42.2)
GEMV_VECTORS = 8
#: A batched matmul of computed operands (attention's ``q @ k^T`` and ``softmax @ v``: its right
#: operand read in place, not packed) takes the template where its reduction is at least this
#: long. Each alone, template against the record a build replays (``benchmarks/template_ab.py
#: matmul``, 5 rounds, amd-epyc-znver4-2c, 2026-11-30): ViT-B/16's ``softmax @ v`` (12 x 200 x 64,
#: reduction 197) 305 against 843 us, BERT-tiny's (16 x 2 x 128 x 64, 128) 333 against 333, but both
#: models' ``q @ k^T`` (reduction 64, the heads' width) 551 against 361 and 370 against 326.
MIN_BATCHED_REDUCTION = 128
#: ... or where its output has at least this many elements (8 MiB): Whisper's encoder (6 heads of
#: 1500 x 1504 scores, a reduction of 64) 16.1 against 23.2 ms on a record transferred from a
#: 16 x 2 x 128 x 128 one, the zoo's BERT-base at batch 16 (192 x 128 x 128) 2.1 against 3.5;
#: below, records still win: ViT-B/16 (12 x 200 x 208) 784 against 543 us, T5-small (8 x 128 x 128)
#: 136 against 114, Hugging Face BERT-base at batch 1 (12 x 128 x 128) 237 against 274 (each alone,
#: 5 rounds, emeraldrapids-2c, 2026-12-02; ``template_ab.py matmul1 ... --without
#: MIN_BATCHED_REDUCTION=32``).
MIN_BATCHED_OUTPUT = 1 << 21
#: Rows of the register tile of a matmul the template schedules only where no record does
#: (:func:`fallback`), at most: the largest divisor of its rows up to it. MaxViT-T's ``softmax @
#: v`` (49 rows a window) on tiles of 1, 7 rows x 2 vectors: 245 and 105 us (each alone).
FALLBACK_ROWS = 8

#: Where the grouped-convolution template replaces a replayed dense record (see the module
#: docstring for the measurements that set them).
MIN_GROUP_WIDTH = 28
MAX_GROUP_CHANNELS = 32
#: Output channels of a group's vector in the direct-convolution template, at least: ResNeXt-50's
#: 128-channel 3x3 at 56x56 of 4 channels a group ran 1.43x the grouped template's time on
#: 4-lane vectors (AVX2's half), where groups of 8, 16 and 32 channels ran 0.05-0.9x the time of
#: what they ran before (BENCHMARKS.md, "Grouped convolutions").
MIN_GROUP_LANES = 8
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

#: Output width from which a padded stride-1 pooling pads each channel's plane once, before its
#: rows, where narrower ones and strided ones pad the input rows under each output row
#: (:func:`_schedule_pool`). A 3x3 window at stride 1 reads each padded row under three output
#: rows, so padding per row pads every row three times over. Each kernel alone, plane against
#: rows (3-5 alternating rounds, 2 threads, amd-epyc-znver5-2c, 2026-12-03): the 11 stride-1 pools
#: of Inception-v1 and -v2 (onnx light models) 13-28 wide 0.33-0.75x (Inception-v2's 576-channel
#: average pool at 14x14, four calls a run, 121 -> 40 us), 6-7 wide 1.03-1.38x; synthetic 3x3s at
#: 13-224 wide 0.35-0.90x, at 7-12 wide 0.37-2.47x (a max pool at 10x10 2.4x slower, an average
#: pool at 12x12 1.4x). Strided ones (3x3 and 2x2 at stride 2, 19 kernels) 0.74-1.51x: rows kept.
PLANE_PADDING_MIN_WIDTH = 13
#: Output width from which a pooling computes each output row as one vector: the row's sums (or
#: maxima) accumulated tap by tap over the whole row, its epilogue (the average's divisor, a fused
#: ReLU) in vectors, the accumulator on the stack (:data:`TILE_SCOPE`); a strided one only where the
#: row fits one vector (it reads a scalar a lane: x86 builds have no gathers); others keep one
#: scalar a pixel (:func:`_schedule_pool`). Each alone, against the scalar schedule (11-21
#: alternating rounds of short timings, 2 threads, intel-r-xeon-r-processor-2-60ghz-icelake-server-2c,
#: 2026-12-04): Inception-v2's stride-1 average pools 28 wide 0.61-0.70x, 14 wide 0.81-0.83x, 7
#: wide 1.08-1.58x (rows of 7 lanes: kept scalar); strided max and average pools of Inception-v2,
#: SqueezeNet and DenseNet-121 13-14 wide 0.54-0.73x, 7 wide 0.87-0.91x (kept scalar, as at stride
#: 1), 27-56 wide 3.0-6.8x.
POOL_ROW_MIN_WIDTH = 13
#: Output width up to which a pooling keeps its scalar accumulator on the stack
#: (:data:`TILE_SCOPE`) rather than in a ``local`` buffer, which TVM allocates from the workspace
#: pool in every channel's task. Each alone against the ``local`` buffer (7 alternating rounds, 2
#: threads, intel-r-xeon-r-processor-2-60ghz-icelake-server-2c, 2026-12-04;
#: ``benchmarks/template_ab.py pool``): the 11 pools of 6-12 output columns of seven onnx light
#: models 0.41-0.88x. Strided pools of 27-56 columns ran 1.04-1.16x with it (a scratch run of 7
#: rounds, compiled with gathers as ``tuning.time_kernel`` then was; LLVM gathers in none of them):
#: they keep the ``local`` buffer, for a reason not found.
POOL_STACK_MAX_WIDTH = 12

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
MIN_MOVED_ELEMENTS = 1 << 16

#: Output pixels a register tile may hold, by vector registers: 14 of 32 measured best on AVX-512
#: (7: 1366 us, 14: 1108 us, 2x7 rows: 1106 us, 2x14 (spilling): 2483 us on the 3x3 convolution
#: above); 12 of 16 (AVX2) leaves a register for the weights and one for the broadcast: 14 there
#: ran 0.81-1.75x the time of 12's 8 x 1 and 7 x 1 tiles, slower on most (each kernel alone on 2
#: Zen 3 threads, 2026-11-27); where 4 divides the width :data:`PAIRED_ROW` comes first.
ROW_BUDGET = {32: 14, 16: 12}
#: Accumulators a convolution tile of several vectors may hold, by vector registers (:func:`_blocks`;
#: measured on AVX-512 only: 16 of 32; 28 spilled or ran slower).
ACC_BUDGET = {32: 16, 16: 8}
#: Input channels from which a 1x1 convolution running channel blocks first (:func:`_rows_outer`) on
#: a full-width AVX-512 CPU (:func:`_full_width_fma`), whose width's tile holds one vector, takes two
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
#: Accumulators of that tile: 13 x 2 = 26 of the 32 vector registers (spilling began at 28 on 3x3s: :data:`ACC_BUDGET`).
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
#: read an input of :data:`CHANNELS_LAST_REREAD_BYTES`. Why: a tile of 7 pixels reads 28 bytes of
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
#: Output channels (32 or more blocks of two vectors, each reading the whole input) from which an
#: input of :data:`CHANNELS_LAST_REREAD_BYTES` or more is read channels last.
CHANNELS_LAST_OUTPUT = 1024
CHANNELS_LAST_REREAD_BYTES = 768 * 1024
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
#: CPU (:func:`_full_width_fma`), whose rows give the threads their tasks: ResNet-50's stem (64
#: channels at 112x112) on 7 pixels x 2 vectors 0.79x the time of 14 x 1, its 64-channel 3x3 at
#: 56x56 0.97x, its 1x1 256 -> 64 at 56x56 0.67x (``benchmarks/conv_tiles.py``: each alone, 3
#: rounds, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01).
MIN_CHANNEL_BLOCKS = 4
ROWS_FIRST_CHANNEL_BLOCKS = 2
#: Output pixels of a tile of two vectors of output channels, by ``(lanes, registers)``: taken
#: first where it divides the output width (and two vectors fit, :func:`_blocks`), before the
#: largest row within :data:`ROW_BUDGET`. On AVX2 (2 Zen 3 threads, each kernel alone,
#: 2026-11-27, 3 rounds; ResNet-18, ResNet-50, Inception-v2, DenseNet-121) 4 pixels x 2 vectors
#: (8 accumulators: 2 weight loads and 4 broadcasts feed 8 multiply-adds, where 8 pixels x 1 vector
#: load 9) ran 0.69-0.97x the time of 7 x 1 on 28-wide maps, 0.80-0.96x that of 8 x 1 on 56-wide
#: (two 1x1s 1.01 and 1.08), 0.77-0.93x on the 112- and 64-wide stems and a 32-wide 3x3, 0.75-1.04x
#: on 16- and 8-wide maps; 1x1s reading 32x32 planes 1.06-1.59x (:data:`ALIASED_PLANE_BYTES`: they
#: keep 8 x 1). Where 4 does not divide the width (14 and 7 wide) two vectors of 2 or 1 pixels ran
#: 1.1-3.2x the time of 7 x 1, and one vector of 4 pixels (32 output channels: no pair of vectors
#: for the parallel loop) 1.15x that of 8 x 1. On a full-width AVX-512 CPU (:func:`_full_width_fma`)
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
#: AVX-512 CPUs (LLVM's ``-mcpu``) that execute a 512-bit multiply-add as two 256-bit halves.
HALF_WIDTH_AVX512 = frozenset({"znver4"})
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
#: Bytes of input a 1x1 tile reads over its reduction (input channels x its pixels) above which a
#: full-width AVX-512 CPU (:func:`_full_width_fma`) leaves the 1x1 to the direct template's 7 x 2
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


def _sunny_cove(target) -> bool:
    """Whether ``target`` is one of the :data:`POINTWISE_ANY_STRIP` CPUs (Ice Lake's core and its
    kin), which rules 57, 58 and 60 give 1x1 convolutions rules of their own."""
    return _mcpu(target) in POINTWISE_ANY_STRIP


def _whole_vectors(extent: int, target) -> int | None:
    """The lanes of the vectors an axis of ``extent`` (output channels, matmul columns) is cut into
    by the templates: the widest vector, or half of it (of at least 4 lanes), that divides it; None
    where neither does."""
    widest, _ = vector_lanes(target)
    return next((n for n in (widest, widest // 2) if n >= 4 and extent % n == 0), None)


def _row(width: int, budget: int) -> int:
    """Output pixels per register tile: the largest divisor of the output width within the budget
    (:func:`_tail_tile` says where a tile whose last one in a row is shorter replaces it)."""
    return max(d for d in range(1, min(width, budget) + 1) if width % d == 0)


def applies(kmod: tvm.IRModule, target) -> bool:
    """Whether :func:`schedule` schedules this kernel (then no tuning record of it is used)."""
    return schedule(kmod, target) is not None


def label(kmod: tvm.IRModule, target) -> str | None:
    """The label of the template :func:`schedule` gives ``kmod``, None where none applies."""
    done = templated(kmod, target)
    return None if done is None else done[1]


def inner_tiles(kmod: tvm.IRModule, target) -> dict[int, int]:
    """``{spatial axis: innermost tile}`` of the schedule (as
    :func:`tvm_partition.build.transfer.innermost_tiles`): a convolution's output channels (axis 1)
    in whole vectors (its row tile fits any width: a divisor of it, or a tail tile), a 1x1's in
    tile's channels and its output rows (axis 2) in its tile's rows; a matmul's rows in
    its tile's (:data:`MATMUL_ROWS`, :data:`WIDE_MATMUL_ROWS`, its one row, or on :func:`fallback` a
    divisor of them) and its columns in whole tiles of vectors; none for an element-wise kernel
    (any cut keeps its loops: the outer ones parallel, the innermost LLVM's).
    Read of the kernel :func:`templated` schedules (its epilogue's operands inlined)."""
    kmod = _epilogue_operands_inlined(kmod)
    pointwise = _pointwise_plan(kmod, target)
    if pointwise is not None:
        return {1: pointwise.channels, 2: pointwise.rows}
    plan = _plan(kmod, target)
    if plan is not None:
        return {1: plan.lanes * plan.blocks}
    depthwise = _depthwise_plan(kmod, target)
    if depthwise is not None:
        return {1: depthwise.lanes}
    rank = len(kmod["main"].params[-1].shape)  # the output's (kernel_module form: outputs last)
    if _integer_matmul_plan(kmod, target) is not None:  # AMX's tiles where they fit, else VNNI's (which they divide)
        return {rank - 2: amx.ROWS if _in_tiles(kmod, target) else vnni.ROWS, rank - 1: vnni.VECTORS * vnni.LANES}
    mm = _matmul_plan(kmod, target) or _matmul_plan(kmod, target, fallback=True)
    if mm is None:
        return {}
    return {mm.row_axis % (rank - 1): mm.rows, rank - 1: mm.lanes * mm.blocks}


@dataclasses.dataclass(frozen=True)
class _Plan:
    """What :func:`schedule` needs of a convolution kernel it applies to."""

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
    objects hash and compare by identity): :func:`templated` tries up to eight plans on one kernel,
    each of which opened a Schedule (ResNet-18's ``equal`` build: 643 Schedules, 0.95 s; now 89,
    0.13 s; 2026-11-29, cProfile)."""
    sch = tvm.s_tir.Schedule(kmod)
    return tuple(sch.get(b) for b in root_children(sch))


def _iter_kinds(block) -> str:
    """``block``'s iterators in order: ``S`` spatial, ``R`` reduction, ``O`` any other kind."""
    return "".join({0: "S", 2: "R"}.get(int(v.iter_type), "O") for v in block.iter_vars)


def _plan(kmod: tvm.IRModule, target) -> _Plan | None:
    """The :class:`_Plan` of a direct convolution kernel, or None where the template does not apply."""
    nest = _nest(kmod, target, (_CONV, _GROUP))
    if nest is None:
        return None
    conv = nest.block
    weight = _weight(kmod, conv)
    if weight is None:
        return None
    _, registers = vector_lanes(target)
    _, oc, _, ow, group_channels, _, _ = nest.extents
    per_group = oc * group_channels // int(conv.reads[0].source.shape[1])  # oc where ungrouped
    if nest.block.name_hint == _GROUP and group_channels == 1:
        return None  # depthwise: no input channels to accumulate a vector of outputs over
    lanes = _whole_vectors(per_group, target)
    if lanes is None or (per_group < oc and lanes < MIN_GROUP_LANES):
        return None
    rows_outer = per_group == oc and _rows_outer(conv)  # grouped: channel blocks first (module docstring)
    wide = _full_width_fma(target)
    least = ROWS_FIRST_CHANNEL_BLOCKS if rows_outer and wide else MIN_CHANNEL_BLOCKS
    row_budget = ROW_BUDGET[registers]
    paired = PAIRED_ROW.get((lanes, registers)) if lanes != 16 or wide else None
    one_by_one = nest.extents[5:] == (1, 1)

    def tile(one_vector: bool) -> tuple[int, int]:
        """``(row, blocks)``: pixels and vectors of output channels a register tile."""
        def vectors(pixels: int) -> int:
            return 1 if one_vector else _blocks(pixels, oc, lanes, registers, per_group, least)

        row = _row(ow, row_budget)
        two = paired and vectors(paired) == 2
        if two and ow % paired == 0 and not (one_by_one and _aliased(conv)):
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
    from .transfer import serial

    taps = nest.extents[5] * nest.extents[6]
    if rows_outer and taps >= SUNNY_COVE_BLOCKS_FIRST_TAPS and _sunny_cove(target) and _column_stride(conv) == 1:
        rows_outer = False  # the tile stays the one chosen for rows first
    chunk = _reduction_chunk(group_channels, taps, blocks * lanes) if per_group == oc else 0
    unpadded = not nest.padded or _copied(kmod)
    last = not chunk and per_group == oc and unpadded and _channels_last(nest, lanes, target)
    return _Plan(nest.epilogue, weight, lanes, row, nest.padded, blocks, rows_outer, not serial(kmod, target),
                 nest.block.name_hint, chunk, last)


def _channels_last(nest: _Nest, lanes: int, target) -> bool:
    """Whether a 1x1 convolution reads its input from a channels-last copy: at least
    :data:`CHANNELS_LAST_INPUT` input channels, a whole number of vectors of them, and strided (its
    input wider than its output), an input of more than :data:`CHANNELS_LAST_BYTES`, or at least
    :data:`CHANNELS_LAST_OUTPUT` output channels reading :data:`CHANNELS_LAST_REREAD_BYTES`; on the
    :data:`POINTWISE_ANY_STRIP` CPUs, :func:`_channels_last_any_size`."""
    _, outputs, _, width, channels, ry, rx = nest.extents
    if (ry, rx) != (1, 1) or channels % lanes:
        return False
    if _sunny_cove(target) and _channels_last_any_size(outputs, width, channels):
        return True
    data = nest.block.reads[0].source
    strided = int(data.shape[-1]) > width
    size = _operand_elements(nest.block)[0] * data.dtype.bits // 8
    reread = outputs >= CHANNELS_LAST_OUTPUT and size >= CHANNELS_LAST_REREAD_BYTES
    return channels >= CHANNELS_LAST_INPUT and (strided or size > CHANNELS_LAST_BYTES or reread)


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
    (:func:`_full_width_fma`) running rows first (:func:`_rows_outer`), where it holds more and
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


def _write_back_bound(kmod: tvm.IRModule, nest: _Nest) -> bool:
    """Whether a convolution's reduction is shorter than :data:`ALIASED_SHORT_REDUCTION` or its
    epilogue reads a residual (a kernel parameter of the output's shape): on output planes that
    alias, its tile takes one vector of output channels even where that halves its accumulators."""
    _, _, _, _, channels, ry, rx = nest.extents
    if channels * ry * rx < ALIASED_SHORT_REDUCTION:
        return True
    out = nest.block.writes[0].source
    shape = [int(x) for x in out.shape]
    params = kmod["main"].params  # TVM 0.27: a PrimFunc's params are its buffers (it has no buffer_map)
    epilogue = [b for b in _root_blocks(kmod) if b.name_hint in nest.epilogue]
    return any(any(r.source.same_as(p) for p in params) and [int(x) for x in r.source.shape] == shape
               for b in epilogue for r in b.reads)


def _copied(kmod: tvm.IRModule) -> bool:
    """Whether the kernel's ``pad_temp`` block pads nothing (TOPI writes one for a convolution of
    padding 0 too: a copy of the input). Why inline it: as a stage of its own it was a second
    parallel loop per call copying the whole input: MobileNet-V3-Small's 1x1 convolutions on the
    direct template 451 -> 278 us summed (1x1s of 40-96 output channels from 96-576 at 14x14 and
    7x7 0.3-0.5x), ResNet-18's three strided 1x1 downsamplings 481 -> 202 (each alone, 3 rounds,
    2 Zen 4 threads, 2026-11-30)."""
    pad = _root_blocks(kmod)[0]
    return [int(x) for x in pad.reads[0].source.shape] == [int(x) for x in pad.writes[0].source.shape]


def _aliased(conv) -> bool:
    """Whether the input channel planes ``conv`` reads are a multiple of :data:`ALIASED_PLANE_BYTES`."""
    return _aliased_planes(conv.reads[0].source)


def _aliased_output(conv) -> bool:
    """Whether the output channel planes ``conv`` writes are a multiple of :data:`ALIASED_PLANE_BYTES`."""
    return _aliased_planes(conv.writes[0].source)


def _aliased_planes(buf) -> bool:
    """Whether the planes of an NCHW buffer (its last two dimensions) are a multiple of
    :data:`ALIASED_PLANE_BYTES`: every plane's row segment then falls in the same L1 set."""
    return int(buf.shape[-2]) * int(buf.shape[-1]) * buf.dtype.bits // 8 % ALIASED_PLANE_BYTES == 0


def _weight(kmod: tvm.IRModule, block) -> int | None:
    """The kernel parameter ``block`` reads as its weights (TOPI's convolutions and matmuls read the
    data, then the weights), None where it reads other than two buffers or its weights are computed
    in the kernel (they would be packed at every call)."""
    if len(block.reads) != 2:
        return None
    return next((n for n, buf in enumerate(kmod["main"].params) if buf.same_as(block.reads[1].source)), None)


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
    data, weights = _operand_elements(conv)
    return data > weights


def _operand_elements(block) -> tuple[int, int]:
    """``(elements of the data, of the weights)``: a convolution's or matmul's first two reads (TOPI's
    order), as :func:`_rows_outer` and :func:`_columns_outer` weigh them."""
    data, weights = (math.prod(int(x) for x in r.source.shape) for r in block.reads[:2])
    return data, weights


def _blocks(row: int, channels: int, lanes: int, registers: int, per_group: int | None = None,
            least: int = MIN_CHANNEL_BLOCKS, budget: int | None = None) -> int:
    """Vectors of output channels a register tile holds: two where a tile of ``row`` pixels x two
    vectors stays within :data:`ACC_BUDGET` accumulators and leaves at least ``least``
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
    :data:`ACC_BUDGET`'s (:data:`LONG_1X1_ACC_BUDGET`)."""
    budget = budget or ACC_BUDGET[registers]
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
    nest = _nest(kmod, target, (_CONV,))
    if nest is None:
        return None
    _, oc, oh, ow, _, ry, rx = nest.extents
    conv = nest.block
    data = [int(x) for x in conv.reads[0].source.shape]
    if (ry, rx) != (1, 1) or oc % POINTWISE_CHANNELS or data[2:] != [oh, ow]:
        return None  # not 1x1, or stride or padding other than 1 and 0
    if nest.padded and not _copied(kmod):
        return None
    if _aliased(conv):
        return None
    weight = _weight(kmod, conv)
    lanes, registers = vector_lanes(target)

    def rows_within(accumulators: int, channels: int) -> int | None:
        """The most whole output rows a tile of ``channels`` keeps within ``accumulators``."""
        most = accumulators // channels
        return max((t for t in range(1, oh + 1) if oh % t == 0 and t * ow % lanes == 0
                    and POINTWISE_VECTORS <= t * ow // lanes <= most), default=None)

    if weight is None:
        return None
    if (_full_width_fma(target) and _sunny_cove(target) and nest.extents[4] >= LONG_POINTWISE_REDUCTION
            and oc % LONG_POINTWISE_CHANNELS == 0 and (rows := rows_within(LONG_POINTWISE_ACC, LONG_POINTWISE_CHANNELS))):
        return _PointwisePlan(nest.epilogue, weight, lanes, rows, ow, nest.padded, _rows_outer(conv),
                              LONG_POINTWISE_CHANNELS, True)
    rows = rows_within(ACC_BUDGET[registers], POINTWISE_CHANNELS)
    if rows is None:
        return None
    if (_full_width_fma(target) and not _sunny_cove(target)
            and _strip_bytes(nest, rows) > POINTWISE_STRIP_BYTES and _paired_tile(kmod, target)):
        return None  # the strip comes from L2: the direct template's 7 x 2 tile is quicker
    return _PointwisePlan(nest.epilogue, weight, lanes, rows, ow, nest.padded, _rows_outer(conv))


def _paired_tile(kmod: tvm.IRModule, target) -> bool:
    """Whether the direct template (:func:`_plan`) tiles this convolution two full-width vectors of
    output channels (:data:`PAIRED_ROW`), the tile :data:`POINTWISE_STRIP_BYTES` was measured against."""
    plan = _plan(kmod, target)
    return plan is not None and plan.blocks == 2 and plan.lanes == vector_lanes(target)[0]


def _strip_bytes(nest: _Nest, rows: int) -> int:
    """The input a 1x1 tile of ``rows`` whole output rows reads over its reduction: input channels x
    its pixels x the element's bytes (:data:`POINTWISE_STRIP_BYTES`)."""
    _, _, _, width, channels, _, _ = nest.extents
    return channels * rows * width * nest.block.reads[0].source.dtype.bits // 8


def _schedule_pointwise(kmod: tvm.IRModule, target, plan: _PointwisePlan) -> tvm.tirx.PrimFunc | None:
    """The 1x1 schedule: ``n f_o y_o | rc | f_i y_i x`` (``n f_o y_o``, or ``n y_o f_o``, one parallel
    loop), ``f_i`` the tile's channels (unrolled; :data:`POINTWISE_CHANNELS`, or
    :data:`LONG_POINTWISE_CHANNELS` inside the vectors of pixels), ``y_i x`` its pixels
    fused and cut into vectors (unrolled, vectorised), accumulated in a tile that LLVM keeps in
    registers (in :data:`TILE_SCOPE`); the write-back and the epilogue per tile, vectorised
    alike; the weights packed at load time as the convolution template's, the zero padding (a copy)
    inlined."""
    func = kmod["main"].with_attr("layout_free_buffers", [plan.weight])
    sch, conv = _opened(func, _CONV, plan.epilogue)
    if plan.padded:
        sch.compute_inline(sch.get_sblock("pad_temp"))
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    f_o, f_i = sch.split(f, [None, plan.channels])
    y_o, y_i = sch.split(y, [None, plan.rows])
    outer = (y_o, f_o) if plan.rows_outer else (f_o, y_o)
    sch.reorder(n, *outer, rc, ry, rx, f_i, y_i, x)
    acc = sch.cache_write(conv, 0, TILE_SCOPE)
    _per_tile(sch, acc, outer[1], plan.epilogue)
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
    return _packed(sch, target)


def _pixel_vectors(sch, loop, lanes: int) -> tuple:
    """``loop`` (a tile's pixels) cut into vectors of ``lanes``: the vectors unrolled, each
    vectorised; ``(vectors, lane)``, their loops."""
    vectors, lane = sch.split(loop, [None, lanes])
    sch.unroll(vectors)
    sch.vectorize(lane)
    return vectors, lane


@dataclasses.dataclass(frozen=True)
class _GroupPlan:
    """What :func:`_schedule_group` needs of a grouped convolution kernel it applies to."""

    epilogue: tuple[str, ...]
    row: int  # output pixels of a row segment (vectorised)
    rows: int  # output rows per register tile (unrolled)
    padded: bool


def _group_plan(kmod: tvm.IRModule, target) -> _GroupPlan | None:
    """The :class:`_GroupPlan` of a grouped or depthwise convolution the template pays on (see
    :data:`MIN_GROUP_WIDTH`), or None."""
    nest = _nest(kmod, target, (_GROUP,))
    if nest is None:
        return None
    _, _, oh, ow, group_channels, _, _ = nest.extents
    if ow < MIN_GROUP_WIDTH or group_channels > MAX_GROUP_CHANNELS:
        return None
    if group_channels > 1 and _column_stride(nest.block) > 1:
        return None
    lanes, _ = vector_lanes(target)
    return _GroupPlan(nest.epilogue, _row(ow, lanes), next(r for r in GROUP_ROWS if oh % r == 0), nest.padded)


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
    nest = _nest(kmod, target, (_GROUP,))
    if nest is None:
        return None
    _, channels, _, ow, group_channels, _, _ = nest.extents
    data = nest.block.reads[0].source if not nest.padded else _root_blocks(kmod)[0].reads[0].source
    weight = _weight(kmod, nest.block)
    if group_channels != 1 or int(data.shape[1]) != channels or weight is None:
        return None  # grouped, or a depthwise multiplier above 1 (output channel f reads input f // m)
    lanes = _whole_vectors(channels, target)
    if lanes is None or (_column_stride(nest.block) == 1 and channels // lanes < MIN_DEPTHWISE_BLOCKS):
        return None
    return _DepthwisePlan(nest.epilogue, weight, lanes, _row(ow, DEPTHWISE_ROW), nest.padded)


def _schedule_depthwise(kmod: tvm.IRModule, target, plan: _DepthwisePlan) -> tvm.tirx.PrimFunc | None:
    """The depthwise schedule: ``n f_o | y x_o | ry rx x_i f_i``, ``f_i`` one vector of channels,
    ``x_i`` a row segment (unrolled, as the window), ``n f_o`` one parallel loop. Under it the
    padded input of its channels is copied channels innermost (``[h, w, f_i]``, a gather per
    vector), so each step of the window loads one contiguous vector and the weights (packed at load
    time ``[f_o, ry, rx, f_i]``) another; the accumulator, laid out ``[y, x, f]``, is written out
    through the inlined epilogue a vector of channels at a time (a scatter per vector: NCHW).
    Measured on MobileNet-V3-Small's 576-channel 5x5: the epilogue computed from an NCHW copy of
    the accumulator 23.9 us, inlined and vectorised 18.3, the input copy gathered a vector at a
    time 16.1 (each alone, 2 Zen 4 threads)."""
    func = kmod["main"].with_attr("layout_free_buffers", [plan.weight])
    sch, conv = _opened(func, _GROUP, plan.epilogue)
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
    epilogue = _epilogue_inlined(sch, acc, plan.epilogue)
    _per_tile(sch, acc, x_o, epilogue)
    _write_back_by_channels(sch, acc, epilogue, lanes, plan.row)
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
    sch.vectorize(channel)
    return _packed(sch, target)


def _column_stride(conv) -> int:
    """The stride of a convolution block along the width: the coefficient of its output column in
    the column its input (its first read) is read at; 1 where that is not a linear form of it."""
    from tvm.sym.pattern import detect_linear_equation

    column = conv.iter_vars[3].var
    coefficients = detect_linear_equation(conv.reads[0].region[3].min, [column])
    return int(coefficients[0]) if len(coefficients) == 2 and isinstance(coefficients[0], tvm.tirx.IntImm) else 1


@dataclasses.dataclass(frozen=True)
class _MatmulPlan:
    """What :func:`_schedule_matmul` needs of a matmul kernel it applies to."""

    epilogue: tuple[str, ...]
    weight: int  # the kernel parameter holding ``w[k, n]`` (or ``w[..., k, n]``)
    lanes: int  # output columns per vector
    blocks: int  # vectors of output columns per register tile
    parallel: bool  # a parallel loop (not below :data:`tvm_partition.build.transfer.SERIAL_FLOPS`)
    rows: int = MATMUL_ROWS  # rows per register tile: 1 for a matrix-vector product
    row_axis: int = -1  # the spatial axis tiled as rows (``matmul_row_axis``); -1: the one before the columns
    packed: bool = True  # ``w`` a rank-2 weight, packed at load time; else read in place
    columns_outer: bool = False  # the parallel loop over blocks of columns first (:func:`_columns_outer`)
    chunk: int = 0  # reduction elements a chunk outside the tiles of rows; 0: none (:func:`_matmul_chunk`)


def _matmul_plan(kmod: tvm.IRModule, target, fallback: bool = False) -> _MatmulPlan | None:
    """The :class:`_MatmulPlan` of an llvm kernel made of TOPI's ``matmul`` block (first) and
    element-wise blocks, whose right operand is a kernel parameter of rank 2 (a model's weights,
    packed once at load time; a computed one would be packed per call, a copy of it) or a batch of
    computed matrices with a reduction of at least :data:`MIN_BATCHED_REDUCTION` (or an output of
    :data:`MIN_BATCHED_OUTPUT` elements), its rows 1
    or a multiple of :data:`MATMUL_ROWS` and its columns of a vector (or half of one); None for any
    other kernel. ``fallback``: any reduction, and rows of another count in tiles of their largest
    divisor up to :data:`FALLBACK_ROWS` (:func:`fallback`)."""
    if target.kind.name != "llvm":
        return None
    blocks = _root_blocks(kmod)
    if not blocks or blocks[0].name_hint != _MATMUL or any(b.name_hint == _MATMUL for b in blocks[1:]):
        return None
    mm, rank = blocks[0], len(blocks[0].iter_vars) - 1
    if rank < 2 or _iter_kinds(mm) != "S" * rank + "R":
        return None
    extents = [v.dom.extent for v in mm.iter_vars]
    if not all(isinstance(e, tvm.tirx.IntImm) for e in extents):
        return None
    weight = _weight(kmod, mm)
    if weight is None:
        return None
    shared = len(mm.reads[1].source.shape) == 2
    short = int(extents[rank]) < MIN_BATCHED_REDUCTION and math.prod(int(e) for e in extents[:rank]) < MIN_BATCHED_OUTPUT
    if not shared and short and not fallback:
        return None
    if any(_iter_kinds(b) != "S" * rank for b in blocks[1:]):  # element-wise only, over the matmul's output
        return None
    axis = matmul_row_axis([int(e) for e in extents[:-1]], shared)  # output extents: [..., m, n]
    rows, cols = int(extents[axis]), int(extents[rank - 1])
    lanes = _whole_vectors(cols, target)
    tile_rows = min(rows, MATMUL_ROWS) if rows % MATMUL_ROWS == 0 or rows == 1 else \
        _row(rows, FALLBACK_ROWS) if fallback else None
    if lanes is None or tile_rows is None:
        return None
    from .transfer import serial

    if rows == 1:  # a matrix-vector product: its accumulators' chains side by side, not rows
        tile = max(b for b in range(1, GEMV_VECTORS + 1) if (cols // lanes) % b == 0)
    else:
        fits = 2 * tile_rows <= ACC_BUDGET[vector_lanes(target)[1]]
        tile = 2 if cols % (2 * lanes) == 0 and fits else 1
    columns_outer = shared and _columns_outer(mm)
    chunk = 0
    if rows > 1 and tile == 2 and not fallback and _full_width_fma(target):
        wide = [r for r in WIDE_MATMUL_ROWS if rows % r == 0]
        divisors = [r for r in DIVISOR_MATMUL_ROWS if rows % r == 0]
        eight = columns_outer and rows % COLUMNS_OUTER_ROWS == 0 and int(extents[rank]) >= COLUMNS_OUTER_MIN_REDUCTION
        tile_rows = wide[0] if wide else COLUMNS_OUTER_ROWS if eight else divisors[0] if divisors else tile_rows
        chunk = _matmul_chunk(mm, tile * lanes, rows // tile_rows) if columns_outer else 0
    return _MatmulPlan(tuple(b.name_hint for b in blocks[1:]), weight, lanes, tile, not serial(kmod, target),
                       tile_rows, axis, shared, columns_outer, chunk)


def _integer_matmul_plan(kmod: tvm.IRModule, target) -> vnni.Plan | None:
    """The :class:`.vnni.Plan` of an llvm kernel of TOPI's ``matmul`` block (first) that
    :func:`.vnni.fits` the template, by a weight parameter (:func:`_weight`), then element-wise
    blocks only, on a :func:`.vnni.sums_bytes` target; None for any other kernel."""
    if not vnni.sums_bytes(target):
        return None
    blocks = _root_blocks(kmod)
    if not blocks or blocks[0].name_hint != _MATMUL:
        return None
    mm, rank = blocks[0], len(blocks[0].iter_vars) - 1
    if rank < 2 or _iter_kinds(mm) != "S" * rank + "R" or any(_iter_kinds(b) != "S" * rank for b in blocks[1:]):
        return None
    weight = _weight(kmod, mm)
    if weight is None or not vnni.fits(mm):
        return None
    from .transfer import serial

    return vnni.Plan(tuple(b.name_hint for b in blocks[1:]), weight, not serial(kmod, target))


def _in_tiles(kmod: tvm.IRModule, target) -> bool:
    """Whether an integer matmul kernel (:func:`_integer_matmul_plan`'s) takes :mod:`.amx`'s
    template: its CPU has the tiles and the kernel is whole ones."""
    return amx.multiplies_tiles(target) and amx.fits(_root_blocks(kmod)[0])


def _matmul_chunk(mm, columns: int, tiles: int) -> int:
    """:data:`MATMUL_CHUNK` where a columns-outer matmul's block of ``columns`` columns' weights over
    its whole reduction outgrow :data:`MATMUL_CHUNK_FROM_BYTES`, the chunk divides the reduction,
    ``x`` fits in :data:`MATMUL_CHUNK_X_BYTES` and its ``tiles`` tiles of rows number at least
    :data:`MATMUL_CHUNK_TILES`; else 0."""
    reduction = int(mm.iter_vars[-1].dom.extent)
    x, _ = _operand_elements(mm)
    bits = mm.reads[1].source.dtype.bits
    if reduction % MATMUL_CHUNK or reduction == MATMUL_CHUNK or tiles < MATMUL_CHUNK_TILES:
        return 0
    if reduction * columns * bits // 8 <= MATMUL_CHUNK_FROM_BYTES or x * bits // 8 > MATMUL_CHUNK_X_BYTES:
        return 0
    return MATMUL_CHUNK


def _columns_outer(mm) -> bool:
    """Whether a matmul's parallel loop runs over blocks of columns first (``n_o``, then the rows),
    so that a block's packed weights stay in cache while every row of ``x`` passes them, rather than
    rows first (a tile's rows of ``x`` in L1 while they pass every column's weights): where the
    weights hold more elements than ``x``, as :func:`_rows_outer` decides for a convolution. Why: rows
    first, a weight of 0.6-9.4 MB (ConvNeXt-T's and Swin-T's MLPs at 14x14 and 7x7, 196 and 52 rows)
    was read from beyond the L2 cache once per block of rows. Each alone on 4 x 2 tiles
    (``benchmarks/matmul_tiles.py``, 5 rounds, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c,
    2026-12-01): the 11 such matmuls of the two models 0.44-0.96x (median 0.59), with the tile of
    :data:`WIDE_MATMUL_ROWS` 0.43-0.78x; where ``x`` outweighs the weights (their first stages,
    BERT-tiny's) the columns outer gained nothing in a scratch run (0.94-1.11x)."""
    x, weights = _operand_elements(mm)
    return weights > x


def fallback(kmod: tvm.IRModule, target) -> tuple[tvm.tirx.PrimFunc, str] | None:
    """``(scheduled kernel, its label)`` of a template for a kernel it leaves to records, for a build
    to run where no record schedules it: the matmul template whatever the rows and reduction
    (:func:`_matmul_plan` with ``fallback``), the layer norm and softmax templates below their floor
    of :data:`MIN_MOVED_ELEMENTS`; None where even so none applies.

    Why: where no record transfers, such a matmul ran TVM's default schedule. MaxViT-T's attention
    (its einsums as batched matmuls, :mod:`tvm_partition.frontend.einsum`: 49-token windows, a
    reduction of 32 or 49) took 3.8 ms a call for ``softmax @ v`` of 128 heads' windows, 105 us on
    tiles of 7 rows x 2 vectors, and ``q @ k^T`` (with its bias) 474 -> 274 us (each alone, 3
    rounds, 2 Zen 4 threads, 2026-12-01). Where a record transfers it keeps it: ViT-B/16's
    ``q @ k^T`` (a reduction of 64) ran 361 us replayed, 551 on the template
    (:data:`MIN_BATCHED_REDUCTION`). Likewise the layer norms and softmaxes of the same model and of
    Swin-T under the floor: layer norms of 50,176 and 37,632 outputs 81 -> 6.4 and 70 -> 6.9 us,
    softmaxes of rows of 49 (no whole vector: scalar reductions) 91 -> 25 and 136 -> 37 us (each
    alone, 5 rounds); MaxViT-T 0.96x paired, Swin-T 0.99x (within noise)."""
    kmod = _epilogue_operands_inlined(kmod)  # as templated(): the kernel a template would see
    if (plan := _matmul_plan(kmod, target, fallback=True)) is not None:
        func, label = _schedule_matmul(kmod, target, plan), FALLBACK_MATMUL_LABEL
    elif (norm := _layer_norm_plan(kmod, target, fallback=True)) is not None:
        func, label = _schedule_layer_norm(kmod, *norm), FALLBACK_LAYER_NORM_LABEL
    elif (lanes := _softmax_lanes(kmod, target, fallback=True)) is not None:
        func, label = _schedule_softmax(kmod, lanes), FALLBACK_SOFTMAX_LABEL
    else:
        return None
    return None if func is None else (func, label)


def _schedule_matmul(kmod: tvm.IRModule, target, plan: _MatmulPlan) -> tvm.tirx.PrimFunc | None:
    """The matmul schedule: ``lead m_o n_o | k | m_i n_b n_i``, a register tile of ``plan.rows``
    rows (:data:`MATMUL_ROWS`; on :func:`fallback` a divisor of the rows up to
    :data:`FALLBACK_ROWS`) x ``blocks`` vectors of columns accumulated in a ``local`` tile over the
    whole reduction, each ``x`` element broadcast, the weights read as contiguous vectors (packed
    ``[n_o, k, n_b, n_i]`` at load time, as the convolution's); the loops above the tile one parallel
    loop, rows outer (a tile's rows of ``x`` stay in L1 while it sweeps the columns, as the tuned
    records of BERT-tiny's matmuls do) or, where the weights outweigh ``x``, columns outer
    (:func:`_columns_outer`); the epilogue computed per tile. With ``plan.chunk``
    (:func:`_matmul_chunk`, columns outer) every tile of rows runs under each chunk of the
    reduction instead, the block of columns' sums carried in an accumulator of all its rows, which
    is written back, and its epilogue computed, a vector at a time after the last chunk. The
    leading axes are not fused with the rows: fused, the tile's rows were a division of the fused
    index and LLVM kept an 8-row tile's accumulators in memory.
    """
    func = kmod["main"].with_attr("layout_free_buffers", [plan.weight]) if plan.packed else kmod["main"]
    sch, mm = _opened(func, _MATMUL, plan.epilogue)
    *spatial, n, k = sch.get_loops(mm)
    m = spatial[plan.row_axis]
    lead = [loop for i, loop in enumerate(spatial) if i != plan.row_axis % len(spatial)]
    m_o, m_i = sch.split(m, [None, plan.rows])
    n_o, n_b, n_i = sch.split(n, [None, plan.blocks, plan.lanes])
    outer = (n_o, *lead, m_o) if plan.columns_outer else (*lead, m_o, n_o)
    if plan.chunk:  # every tile of rows under each chunk, their sums carried in the block's accumulator
        k_o, k = sch.split(k, [None, plan.chunk])
        sch.reorder(*outer[:-1], k_o, m_o, k, m_i, n_b, n_i)
        acc = sch.cache_write(mm, 0, TILE_SCOPE)
        _per_tile(sch, acc, outer[-2], plan.epilogue)
        for block in [acc, *([sch.get_sblock(plan.epilogue[-1])] if plan.epilogue else [])]:  # written back
            _in_vectors(sch, sch.get_loops(block)[-1], plan.lanes)
        tile, zeroed = sch.fuse(*outer[:-1]), k_o
    else:
        sch.reorder(*outer, k, m_i, n_b, n_i)
        _per_tile(sch, sch.cache_write(mm, 0, "local"), outer[-1], plan.epilogue)
        tile, zeroed = sch.fuse(*outer), k
    if plan.parallel:
        sch.parallel(tile)
    sch.vectorize(n_i)
    sch.unroll(n_b)
    sch.unroll(m_i)
    sch.decompose_reduction(mm, zeroed)
    return _packed(sch, target) if plan.packed else sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _in_vectors(sch, loop, lanes: int) -> None:
    """``loop`` a vector of ``lanes`` at a time (split, the inner loop vectorised) where its extent
    is a known whole number of them and ``lanes`` > 1; else left as it is."""
    extent = sch.get(loop).extent
    if lanes > 1 and isinstance(extent, tvm.tirx.IntImm) and int(extent) % lanes == 0:
        sch.vectorize(sch.split(loop, [None, lanes])[1])


def schedule(kmod: tvm.IRModule, target) -> tvm.tirx.PrimFunc | None:
    """``kmod``'s ``main`` (a :func:`tvm_partition.build.tuning.kernel_module`) with the template
    that applies to it, None where none does."""
    done = templated(kmod, target)
    return None if done is None else done[0]


def templated(kmod: tvm.IRModule, target) -> tuple[tvm.tirx.PrimFunc, str] | None:
    """``(scheduled kernel, its label)`` of the template that applies to ``kmod``, in one pass
    (a build asks for both for every kernel); None where none applies."""
    kmod = _epilogue_operands_inlined(kmod)
    if (pointwise := _pointwise_plan(kmod, target)) is not None:
        func, name = _schedule_pointwise(kmod, target, pointwise), POINTWISE_LABEL
    elif (plan := _plan(kmod, target)) is not None:
        func, name = _schedule_conv(kmod, target, plan), CONV_LABEL
    elif (integer := _integer_matmul_plan(kmod, target)) is not None:
        if _in_tiles(kmod, target):
            func, name = amx.schedule(kmod, integer), INTEGER_TILES_LABEL
        else:
            func, name = vnni.schedule(kmod, integer), INTEGER_MATMUL_LABEL
    elif (mm := _matmul_plan(kmod, target)) is not None:
        func, name = _schedule_matmul(kmod, target, mm), MATMUL_LABEL if mm.packed else BATCHED_MATMUL_LABEL
    elif (depthwise := _depthwise_plan(kmod, target)) is not None:
        func, name = _schedule_depthwise(kmod, target, depthwise), DEPTHWISE_LABEL
    elif (group := _group_plan(kmod, target)) is not None:
        func, name = _schedule_group(kmod, group), GROUP_LABEL
    elif (lanes := _softmax_lanes(kmod, target)) is not None:
        func, name = _schedule_softmax(kmod, lanes), SOFTMAX_LABEL
    elif (tailed := _tailed_softmax_epilogue(kmod, target)) is not None:
        func, name = _schedule_tailed_softmax(kmod, tailed), SOFTMAX_LABEL
    elif (norm := _layer_norm_plan(kmod, target)) is not None:
        func, name = _schedule_layer_norm(kmod, *norm), LAYER_NORM_LABEL
    elif (pool := _pool_nest(kmod, target)) is not None:
        func, name = _schedule_pool(kmod, target, pool), POOL_LABEL
    elif (reduce := _reduce_plan(kmod, target)) is not None:
        func, name = _schedule_reduce(kmod, reduce), REDUCE_LABEL
    else:
        outputs, parallel = _elementwise_outputs(kmod, target)
        func = _schedule_elementwise(kmod, target, outputs, parallel) if outputs else None
        name = ELEMENTWISE_LABEL if parallel else INLINED_LABEL
    return None if func is None else (func, name)


def _schedule_conv(kmod: tvm.IRModule, target, plan: _Plan) -> tvm.tirx.PrimFunc | None:
    """The direct convolution schedule, its weights marked layout-free and packed by a
    preprocessing block that the build lifts to load time."""
    func = kmod["main"].with_attr("layout_free_buffers", [plan.weight])
    sch, conv = _opened(func, plan.block, plan.epilogue)
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
    acc = sch.cache_write(conv, 0, TILE_SCOPE)
    sch.transform_layout(conv, ("write", 0), lambda a, b, c, d: (a, c, d, b))
    epilogue = _epilogue_inlined(sch, acc, plan.epilogue)
    _per_tile(sch, acc, written, epilogue)
    _write_back_by_channels(sch, acc, epilogue, plan.lanes, plan.row)
    tasks = sch.fuse(n, *outer)
    # below SERIAL_FLOPS no parallel loop: MobileNet-V3-Small's 14 squeeze-and-excitation 1x1s on
    # 1x1 maps ran 35 us all told serial, 50 with the thread pool (each alone, 2 Zen 4 threads)
    if plan.parallel:
        sch.parallel(tasks)
    sch.vectorize(f_i)
    sch.unroll(f_b)
    sch.unroll(x_i)
    _reduction_and_padding(sch, conv, zeroed, padded and plan.parallel)  # serial: a serial padding too
    return _packed(sch, target)


def _channels_last_copy(sch, conv, lanes: int, parallel: bool) -> None:
    """``conv``'s input copied channels last (``n y x c``) in a stage before it, its rows in
    parallel, each pixel's channels a vector at a time (:func:`_channels_last`)."""
    copy = sch.cache_read(conv, 0, "global")
    sch.transform_layout(copy, ("write", 0), lambda n, c, y, x: (n, y, x, c))
    n, c, y, x = sch.get_loops(copy)
    sch.reorder(n, y, x, c)
    _, lane = sch.split(c, [None, lanes])
    rows = sch.fuse(n, y)
    if parallel:
        sch.parallel(rows)
    sch.vectorize(lane)


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


def _schedule_group(kmod: tvm.IRModule, plan: _GroupPlan) -> tvm.tirx.PrimFunc:
    """The grouped-convolution schedule: ``n f y_o x_o | rc ry rx | y_i x_i``, ``x_i`` a row
    segment (vectorised), ``y_i`` the tile's rows (unrolled), accumulated in a ``local`` tile; the
    window loops unrolled; ``n f y_o`` one parallel loop; the epilogue computed per tile."""
    sch, conv = _opened(kmod["main"], _GROUP, plan.epilogue)
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    y_o, y_i = sch.split(y, [None, plan.rows])
    x_o, x_i = sch.split(x, [None, plan.row])
    sch.reorder(n, f, y_o, x_o, rc, ry, rx, y_i, x_i)
    _per_tile(sch, sch.cache_write(conv, 0, "local"), x_o, plan.epilogue)
    sch.parallel(sch.fuse(n, f, y_o))
    sch.vectorize(x_i)
    for loop in (y_i, rx, ry):
        sch.unroll(loop)
    _reduction_and_padding(sch, conv, rc, plan.padded)
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _pool_nest(kmod: tvm.IRModule, target) -> _Nest | None:
    """The :class:`_Nest` of a pooling kernel (TOPI's max or average ``pool2d``, NCHW) with more
    than one output pixel per channel, else None. A global pooling (a 7x7 window to 1x1) keeps
    TVM's serial loop: each channel's 49 additions are too little for a parallel loop (ResNet-50's
    2048 channels 20.5 us serial, 23.9 us with this schedule; Inception-v2's 1024 10.3 / 12.2)."""
    nest = _nest(kmod, target, _POOLS, "SSSSRR")
    return None if nest is None or nest.extents[2] * nest.extents[3] == 1 else nest


def _schedule_pool(kmod: tvm.IRModule, target, nest: _Nest) -> tvm.tirx.PrimFunc:
    """The pooling schedule: ``n c`` one parallel loop; under each output row ``y`` the input rows
    its windows read padded (``pad_temp`` computed there, not as a whole tensor first), or at
    stride 1 from :data:`PLANE_PADDING_MIN_WIDTH` output columns the channel's whole plane padded
    once under ``n c``; from :data:`POOL_ROW_MIN_WIDTH` columns (strided: up to a vector's lanes)
    each output row accumulated as one vector, window tap by tap (``y | ry rx | x``, ``x``
    vectorised), and written out with its epilogue in vectors; otherwise each output pixel
    accumulated over its window in a scalar (on the stack up to :data:`POOL_STACK_MAX_WIDTH`
    columns) and written out with its epilogue.

    Why: TVM gives an unpadded pool (AlexNet's, VGG's, SqueezeNet's) no parallel loop, and a padded
    one took a record tuned on ResNet-18's whole max pool, replayed: its parts along the width ran
    up to 3.3x their share of the whole (14 of 56 columns: 112 us, the whole 64), and parts of fewer
    than 36 channels ran serial (:data:`tvm_partition.build.transfer.SERIAL_FLOPS`), 2x their share.
    This schedule is that record's loop nest with the channels' loop the parallel one, at any
    extent: ResNet-18's max pool whole 61 us, its parts at 16, 32, 48 channels and 14, 28 rows
    within 1.05x of their share (amd-epyc-znver5-2c, 2026-11-26; BENCHMARKS.md, "Pooling")."""
    sch, pool = _opened(kmod["main"], nest.block.name_hint, nest.epilogue)
    n, c, y, x, ry, rx = sch.get_loops(pool)
    channels = sch.fuse(n, c)
    sch.parallel(channels)
    width, stride_1 = nest.extents[3], _column_stride(nest.block) == 1
    if nest.padded:
        plane = stride_1 and width >= PLANE_PADDING_MIN_WIDTH
        sch.compute_at(sch.get_sblock("pad_temp"), channels if plane else y)
    rows = width >= POOL_ROW_MIN_WIDTH and (stride_1 or width <= vector_lanes(target)[0])
    acc = sch.cache_write(pool, 0, TILE_SCOPE if rows or width <= POOL_STACK_MAX_WIDTH else "local")
    if rows:  # each output row one vector
        _per_tile(sch, acc, y, nest.epilogue)
        sch.reorder(ry, rx, x)
        for block in [pool, acc] + ([sch.get_sblock(nest.epilogue[-1])] if nest.epilogue else []):
            sch.vectorize(sch.get_loops(block)[-1])
    else:
        _per_tile(sch, acc, x, nest.epilogue)
    sch.decompose_reduction(pool, ry)
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


def _epilogue_inlined(sch, acc, epilogue: tuple[str, ...]) -> tuple[str, ...]:
    """The epilogue left (its blocks but the last are inlined already, :func:`_opened`): none where
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
    :func:`_per_tile`) a vector of channels at a time, the pixels unrolled, with the last epilogue
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


def _elementwise_outputs(kmod: tvm.IRModule, target) -> tuple[tuple[str, ...], bool]:
    """``(blocks writing the outputs, parallel)`` of an element-wise kernel, where the element-wise
    template applies: an llvm kernel of spatial blocks only (no reduction) with outputs of rank 2
    or more; ``parallel`` from :data:`MIN_ELEMENTS` output elements (:data:`MIN_MOVED_ELEMENTS`
    where it does no arithmetic). ``((), False)`` where it does not apply, or where a serial kernel
    has no block to inline (TVM's default schedule is then the same loop nest)."""
    if target.kind.name != "llvm":
        return (), False
    func = kmod["main"]
    blocks = _root_blocks(kmod)
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
    parallel = max(_elements(b) for b in outputs) >= (MIN_MOVED_ELEMENTS if moves else MIN_ELEMENTS)
    if not parallel and len(blocks) == len(outputs):
        return (), False  # nothing to inline: TVM's default schedule is this one
    return tuple(b.name_hint for b in outputs), parallel


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
    blocks = _root_blocks(kmod)
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


#: The blocks of ``topi.nn.fast_softmax`` over the last axis (:mod:`tvm_partition.ir.fastmath`), in order.
SOFTMAX_BLOCKS = ("T_softmax_maxelem", "T_softmax_delta", "T_fast_exp", "T_softmax_expsum", "T_softmax_norm")


def _softmax_lanes(kmod: tvm.IRModule, target, fallback: bool = False) -> int | None:
    """The vector lanes the softmax template gives ``kmod``'s reductions: an llvm kernel of
    :data:`SOFTMAX_BLOCKS` (TVM's fusion leaves a softmax alone: an attention mask added before it
    is a kernel of its own), then element-wise blocks at most (:func:`_epilogue_of`: a padding of
    its rows for the matmul after it), its rows a whole number of vectors (the register's, 8 or 4
    lanes), or else 1 (reductions left scalar) where it has :data:`MIN_MOVED_ELEMENTS` elements:
    ViT-B/16's 12 x 197 rows of 197 ran 457 us so, TVM's default schedule 661 (alone, 2 Zen 4
    threads, 2026-11-30; such rows, longer than a vector, are now legalized as
    :func:`~tvm_partition.ir.fastmath.tailed_softmax`, :func:`_schedule_tailed_softmax`);
    ``fallback``: 1 at any size (:func:`fallback`); else None."""
    if target.kind.name != "llvm":
        return None
    blocks = _root_blocks(kmod)
    core = len(SOFTMAX_BLOCKS)
    if tuple(b.name_hint for b in blocks[:core]) != SOFTMAX_BLOCKS or _epilogue_of(blocks, core) is None:
        return None
    norm = blocks[core - 1].iter_vars
    if not all(isinstance(v.dom.extent, tvm.tirx.IntImm) for v in norm):
        return None
    lanes = _row_lanes(int(norm[-1].dom.extent), target)
    if lanes is None and (fallback or math.prod(int(v.dom.extent) for v in norm) >= MIN_MOVED_ELEMENTS):
        return 1
    return lanes


#: :func:`tvm_partition.ir.fastmath.tailed_softmax`'s blocks but its reductions' (which come first).
_TAILED_REST = ("T_softmax_delta", "T_fast_exp", "T_softmax_norm")


def _division_and_epilogue(sch, epilogue: tuple[str, ...], lanes: int) -> None:
    """A softmax template's last steps, its rows' loops placed: ``epilogue`` in parallel
    (:func:`_epilogue_in_parallel`), then the exponentials and the division vectorised along the
    row (last: a partition renames the blocks). A division that took an epilogue in (DistilBERT's
    ``where(isnan(p), 0, p)``) stays one vector of the row: in vectors of 16 its rows of 512 ran
    2.52 ms against 2.13 (each alone; the exponentials' vectors alone 1.72)."""
    _epilogue_in_parallel(sch, epilogue, lanes)
    for name in ("T_fast_exp",) + (() if epilogue else ("T_softmax_norm",)):
        _vectorised_row(sch, sch.get_loops(sch.get_sblock(name))[-1])
    if epilogue:
        sch.vectorize(sch.get_loops(sch.get_sblock("T_softmax_norm"))[-1])


def _tailed_softmax_epilogue(kmod: tvm.IRModule, target) -> tuple[str, ...] | None:
    """The epilogue (:func:`_epilogue_of`; empty: none) of an llvm kernel of
    :func:`~tvm_partition.ir.fastmath.tailed_softmax`'s blocks, None for any other kernel."""
    if target.kind.name != "llvm":
        return None
    blocks = _root_blocks(kmod)
    core = len(TAILED_SOFTMAX_BLOCKS) + len(_TAILED_REST)
    if sorted(b.name_hint for b in blocks[:core]) != sorted(TAILED_SOFTMAX_BLOCKS + _TAILED_REST):
        return None
    return _epilogue_of(blocks, core)


def _schedule_tailed_softmax(kmod: tvm.IRModule, epilogue: tuple[str, ...]) -> tvm.tirx.PrimFunc | None:
    """Every row in parallel, all of its work under its iteration (as :func:`_schedule_softmax`):
    the maximum's and the sum's :data:`~tvm_partition.ir.fastmath.ROW_LANES` partial results
    accumulated a vector at a time over the row's whole vectors, the exponentials and the division
    vectorised (:func:`_vectorised_row`), the tails and the combinations scalar."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    try:
        sch.compute_inline(sch.get_sblock("T_softmax_delta"))
        row = sch.fuse(*sch.get_loops(sch.get_sblock("T_softmax_norm"))[:-1])
        sch.parallel(row)
        expsum, maxelem = TAILED_SOFTMAX_BLOCKS[4:][::-1], TAILED_SOFTMAX_BLOCKS[:4][::-1]
        for name in expsum + ("T_fast_exp",) + maxelem:  # consumers first, under the row
            sch.compute_at(sch.get_sblock(name), row)
        for name in ("T_softmax_maxelem_lanes", "T_softmax_expsum_lanes"):
            loops = sch.get_loops(sch.get_sblock(name))
            if len(loops) == 3:  # row, lane, vector (one vector a row: its loop of one is gone)
                sch.reorder(loops[2], loops[1])
            sch.vectorize(loops[1])
        _division_and_epilogue(sch, epilogue, ROW_LANES)
    except tvm.s_tir.schedule.ScheduleError:
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _epilogue_of(blocks: tuple, core: int) -> tuple[str, ...] | None:
    """The names of ``blocks`` after the first ``core`` where every one is spatial (element-wise or
    moving data, as a padding is), else None."""
    rest = blocks[core:]
    if any(set(_iter_kinds(b)) - {"S"} for b in rest):
        return None
    return tuple(b.name_hint for b in rest)


def _epilogue_in_parallel(sch, names: tuple[str, ...], lanes: int) -> None:
    """Blocks ``names`` (after a row template's output) each inlined into the block after it,
    the last into the block before it where it maps its elements one to one, else a loop nest of
    its own: all but its innermost loop one parallel loop, the innermost vectorised where a whole
    number of ``lanes`` (a padding of the rows, whose extents are not the output's).

    Forward first (as :func:`_opened` does): an epilogue that reads the output twice
    (``where(isnan(p), 0, p)`` after Hugging Face DistilBERT's softmax) inlined backwards block by
    block left ``isnan`` in the output's block and ``where`` reading a buffer no longer defined:
    TVM's ``reverse_compute_inline`` does not refuse a block whose producer has another consumer
    (TVM 0.27; the kernel then failed to build)."""
    for name in names[:-1]:
        try:
            sch.compute_inline(sch.get_sblock(name))
        except tvm.s_tir.schedule.ScheduleError:
            pass
    for name in names:
        try:
            block = sch.get_sblock(name)
        except tvm.s_tir.schedule.ScheduleError:  # inlined above
            continue
        if all(len(sch.get_consumers(p)) == 1 for p in sch.get_producers(block)):
            try:
                sch.reverse_compute_inline(block)
                continue
            except tvm.s_tir.schedule.ScheduleError:
                pass
        loops = sch.get_loops(block)
        if len(loops) > 1:
            sch.parallel(sch.fuse(*loops[:-1]))
        _in_vectors(sch, loops[-1], lanes)


def _row_lanes(row: int, target) -> int | None:
    """The widest vector (the register's, 8 or 4 lanes) of which a row of ``row`` elements holds a
    whole number, None where none does."""
    widest, _ = vector_lanes(target)
    return next((n for n in (widest, 8, 4) if n <= widest and row % n == 0), None)


def _partial_sums(sch, names, lanes: int) -> dict:
    """``{name: rfactor block}``: each reduction block of ``names`` (over its innermost loop) as
    ``lanes`` partial results, combined after."""
    partial = {}
    for name in names:
        _, k_i = sch.split(sch.get_loops(sch.get_sblock(name))[-1], [None, lanes])
        partial[name] = sch.rfactor(k_i, len(sch.get_loops(sch.get_sblock(name))) - 2)
    return partial


#: A row of more elements than this is vectorised a register's vector at a time, not as one vector
#: of the whole row: LLVM legalises a vector of 1500 lanes, with fast_exp's 30 operations on it,
#: into passes over the row through the stack.
WHOLE_ROW_VECTOR = 256
#: The lanes of those vectors (a zmm register's floats; narrower registers take two or four).
ROW_VECTOR = 16


def _vectorised_row(sch, loop) -> None:
    """``loop`` (a row's elements) vectorised: whole up to :data:`WHOLE_ROW_VECTOR` elements, else
    in vectors of :data:`ROW_VECTOR` lanes, the elements past the last whole one a vector of
    their own."""
    n = int(sch.get(loop).extent)
    if n <= WHOLE_ROW_VECTOR:
        sch.vectorize(loop)
        return
    tail = n % ROW_VECTOR
    if tail:
        loop, rest = sch.loop_partition(loop, [n - tail, None])
        sch.vectorize(rest)
    _in_vectors(sch, loop, ROW_VECTOR)


def _rows_in_parallel(sch, out: str, under: list, partial: dict, vectorised: bool = True):
    """Block ``out``'s rows (every loop but its innermost, fused) in parallel and its rows
    vectorised (whole; the caller's where not ``vectorised``); the blocks ``under`` (consumers
    first; None skipped) computed under each row; the ``partial`` sums' lanes vectorised innermost.
    Returns the row loop."""
    norm = sch.get_sblock(out)
    row = sch.fuse(*sch.get_loops(norm)[:-1])
    sch.parallel(row)
    if vectorised:
        sch.vectorize(sch.get_loops(norm)[-1])
    for block in under:
        if block is not None:
            sch.compute_at(block, row)
    for rf in partial.values():  # under the row: lanes, then the vectors: lanes innermost
        k_i, k_o = sch.get_loops(rf)[-2:]
        sch.reorder(k_o, k_i)
        sch.vectorize(k_i)
    return row


def _schedule_softmax(kmod: tvm.IRModule, lanes: int) -> tvm.tirx.PrimFunc | None:
    """Every row in parallel, all of its work under its iteration: the maximum and the sum as
    ``lanes`` partial results each (``rfactor``) accumulated in vectors, then combined, and the
    exponentials and the division vectorised. TVM gives the reductions one scalar chain each (a
    compare, then an add, per element, each waiting for the one before): with ``fast_exp`` and the
    rows in parallel but scalar reductions BERT-tiny's softmax took 272 us, with these 75 us,
    TVM's default schedule of the same kernel 381 us (amd-epyc-znver5-2c, 2026-11-26)."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    try:
        sch.compute_inline(sch.get_sblock("T_softmax_delta"))
        row_len = int(sch.get(sch.get_loops(sch.get_sblock("T_softmax_norm"))[-1]).extent)
        # a row of one vector has nothing to accumulate across vectors: its reductions stay as TVM
        # wrote them (split, the outer loop of extent 1 would vanish from the loop nest), and so do
        # those of a row of no whole vector (lanes 1): a split by lanes that does not divide the row
        # leaves rfactor reading past its end (no error; the results wrong, 2026-11-30)
        partial = _partial_sums(sch, ("T_softmax_maxelem", "T_softmax_expsum") if row_len > lanes > 1 else (), lanes)
        _rows_in_parallel(sch, "T_softmax_norm", [
            sch.get_sblock("T_softmax_expsum"), partial.get("T_softmax_expsum"), sch.get_sblock("T_fast_exp"),
            sch.get_sblock("T_softmax_maxelem"), partial.get("T_softmax_maxelem")], partial, vectorised=False)
        epilogue = _epilogue_of(_root_blocks(kmod), len(SOFTMAX_BLOCKS))
        _division_and_epilogue(sch, epilogue, lanes)
    except tvm.s_tir.schedule.ScheduleError:
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def _layer_norm_plan(kmod: tvm.IRModule, target, fallback: bool = False) -> tuple[int, tuple[str, ...], tuple[str, ...]] | None:
    """``(lanes, block names, epilogue)`` of an llvm kernel of TOPI's layer norm over its last axis
    alone (blocks ``<input>_sum``, ``<input>_mean``, ``<input>_var_sum``, ``T_layer_norm``, then
    element-wise blocks at most, :func:`_epilogue_of`: a padding of its rows for the matmul after
    it, as ViT-B/16's) whose rows
    hold more than one whole vector and whose outputs number at least :data:`MIN_MOVED_ELEMENTS`;
    else None. Why the floor: below it the record's serial replay was as quick or quicker (BERT-tiny's
    layer norm, each alone, 2 Zen 3 threads, 2026-11-29: 1 sequence of 128 x 128, 16,384 outputs,
    4.3 us against the template's 5.9; 2 sequences 9.0-9.9 against 9.2-11.2). ``fallback``: at
    any size (:func:`fallback`)."""
    if target.kind.name != "llvm":
        return None
    blocks = _root_blocks(kmod)
    names, epilogue = tuple(b.name_hint for b in blocks[:4]), _epilogue_of(blocks, 4)
    if (len(names) != 4 or epilogue is None or not names[0].endswith("_sum") or names[1] != names[0][:-4] + "_mean"
            or names[2] != names[0][:-4] + "_var_sum" or names[3] != "T_layer_norm"):
        return None
    if _iter_kinds(blocks[0]) != "S" * (len(blocks[0].iter_vars) - 1) + "R" or _iter_kinds(blocks[2]) != _iter_kinds(blocks[0]):
        return None
    extents = [v.dom.extent for v in blocks[3].iter_vars]
    if not all(isinstance(e, tvm.tirx.IntImm) for e in extents):
        return None
    if math.prod(int(e) for e in extents) < MIN_MOVED_ELEMENTS and not fallback:
        return None
    lanes = _row_lanes(int(extents[-1]), target)
    return None if lanes is None or int(extents[-1]) <= lanes else (lanes, names, epilogue)


def _schedule_layer_norm(kmod: tvm.IRModule, lanes: int, names: tuple[str, ...],
                         epilogue: tuple[str, ...] = ()) -> tvm.tirx.PrimFunc | None:
    """Every row in parallel, all of its work under its iteration (:func:`_schedule_softmax`'s
    layout): the sum and the sum of squared deviations as ``lanes`` partial results each
    (``rfactor``) accumulated in vectors, then combined, the mean inlined, the normalisation
    vectorised. Partials of 2 and 4 vectors a row (16, 32 lanes) ran the same or slower, and
    partials kept in ``local`` buffers 2-3x slower (BERT-tiny's layer norm at 1-16 sequences,
    2 Zen 3 threads, 2026-11-29)."""
    total, mean, var, norm_name = names
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    try:
        sch.compute_inline(sch.get_sblock(mean))
        partial = _partial_sums(sch, (total, var), lanes)
        _rows_in_parallel(sch, norm_name, [sch.get_sblock(var), partial[var], sch.get_sblock(total), partial[total]],
                          partial)
        _epilogue_in_parallel(sch, epilogue, lanes)
    except tvm.s_tir.schedule.ScheduleError:
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


#: :func:`_reduce_plan` gives rows of at least this many elements two vectors of partial results
#: (two independent chains of vector additions), shorter rows one: over 4,096-element rows (a global
#: average pool of a 64 x 64 map) two 8-lane vectors took 6.4 us where one took 9.7 (TVM's default
#: 137), over 64-element rows 3.0 us where one took 2.2 (2 Zen 3 threads, 2026-11-30).
TWO_VECTOR_ROW = 1024


@dataclasses.dataclass(frozen=True)
class _ReducePlan:
    lanes: int  # partial results a row: one or two vectors
    parallel: bool  # the rows in parallel (from MIN_MOVED_ELEMENTS elements read)
    reduction: str  # the reduction block
    reduced: int  # its reduced axes, its innermost
    epilogue: tuple[str, ...]  # the element-wise blocks after it (mean's division), in order


def _reduce_plan(kmod: tvm.IRModule, target) -> _ReducePlan | None:
    """The :class:`_ReducePlan` of an llvm kernel whose first block reduces the innermost axes of
    the one tensor it reads (TOPI's ``sum``, ``max``, ``min``, ``prod``, and ``mean`` with its
    division after: ONNX's ``GlobalAveragePool`` and ``ReduceMean`` over H and W, a
    squeeze-and-excitation's pooling), its rows a whole number of vectors (or of
    :func:`_divisor_lanes` partial results), any further blocks element-wise; else None."""
    if target.kind.name != "llvm":
        return None
    blocks = _root_blocks(kmod)
    if not blocks or any("R" in _iter_kinds(b) for b in blocks[1:]):
        return None
    red = blocks[0]
    kinds = _iter_kinds(red)
    reduced = len(kinds) - len(kinds.rstrip("R"))
    if reduced == 0 or "R" in kinds[:-reduced] or len(red.reads) != 1:
        return None
    # a row is contiguous where the reduced axes are the read tensor's innermost, in order
    region = red.reads[0].region
    axes = [v.var for v in red.iter_vars[-reduced:]]
    if len(region) < reduced or not all(r.min.same_as(v) and is_one(r.extent) for r, v in zip(region[-reduced:], axes)):
        return None
    extents = [v.dom.extent for v in red.iter_vars]
    if not all(isinstance(e, tvm.tirx.IntImm) for e in extents):
        return None
    # every later block over the reduction's outputs alone: one that broadcasts them back over the
    # reduced axes (x - mean(x)) would recompute a row's reduction for each of its elements
    # (unit axes aside: a mean to a scalar divides in a block of one unit axis)
    spatial = [int(e) for e in extents[:-reduced] if int(e) != 1]
    if any([int(v.dom.extent) for v in b.iter_vars if int(v.dom.extent) != 1] != spatial for b in blocks[1:]):
        return None
    row = math.prod(int(e) for e in extents[-reduced:])
    widest, _ = vector_lanes(target)
    lanes = 2 * widest if row >= TWO_VECTOR_ROW and row % (2 * widest) == 0 else \
        _row_lanes(row, target) or _divisor_lanes(row, widest)
    if lanes is None or row <= lanes:
        return None
    return _ReducePlan(lanes, math.prod(int(e) for e in extents) >= MIN_MOVED_ELEMENTS, red.name_hint, reduced,
                       tuple(b.name_hint for b in blocks[1:]))


def _divisor_lanes(row: int, widest: int) -> int | None:
    """The largest divisor of ``row`` no wider than the widest vector, as the partial results of a
    row that holds no whole vector (None where only 1 divides it: a prime row).

    Why: such rows kept TVM's serial loop, one scalar sum a row. LLVM carries ``<13 x float>`` in a
    16-lane register. Global average pools alone, TVM's loop against partial results of the divisor
    (2 threads, 9 rounds, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-01): SqueezeNet's 1000
    channels of 13 x 13 (13 lanes) 67 -> 8.8 us, 2048 of 7 x 7 (7 lanes) 20 -> 8.0, 1280 of 7 x 7
    11.1 -> 8.3, 512 and 576 of 7 x 7 4.4 -> 3.3 and 5.0 -> 3.7; 5 x 5 and 3 x 3 maps of 64-96
    channels 0.2-0.3 us either way. A row that some narrower vector divides keeps it
    (:func:`_row_lanes`): 1024 channels of 14 x 14 on 4 lanes 7.4 us, on 14 9.2; 512 of 10 x 10
    3.2 and 4.1 (on 10)."""
    lanes = _row(row, widest)
    return lanes if lanes > 1 else None


def is_one(expr) -> bool:
    """Whether ``expr`` is the integer constant 1 (a unit extent)."""
    return isinstance(expr, tvm.tirx.IntImm) and int(expr) == 1


def _schedule_reduce(kmod: tvm.IRModule, plan: _ReducePlan) -> tvm.tirx.PrimFunc | None:
    """The reduced axes fused into one row, accumulated as ``plan.lanes`` partial results
    (``rfactor``) in vectors and combined; every output row (the last block's loops, fused) one
    iteration of a loop, parallel where ``plan.parallel``, the reduction and the epilogue under it.
    Why: TVM's default schedule adds each element to one scalar, each addition waiting for the one
    before: a [1, 32, 64, 64] mean took 137 us, this schedule 6.4 (serial: 1.9 us at 32 x 32 x 32,
    where the parallel loop took 2.3; 2 Zen 3 threads, 2026-11-30; BENCHMARKS.md, "Models written in
    PyTorch")."""
    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": kmod["main"]}))
    try:
        for name in plan.epilogue[:-1]:
            sch.compute_inline(sch.get_sblock(name))
        if plan.epilogue and not sch.get_loops(sch.get_sblock(plan.epilogue[-1])):
            # a scalar's epilogue outside any loop: TVM 0.27's rfactor fails an internal check
            # beside it (BlockReplacer), and the reduction needs a loop to be computed at
            sch.add_unit_loop(sch.get_sblock(plan.epilogue[-1]))
        red = sch.get_sblock(plan.reduction)
        loops = sch.get_loops(red)
        reduced = sch.fuse(*loops[-plan.reduced:]) if plan.reduced > 1 else loops[-1]
        _, lanes = sch.split(reduced, [None, plan.lanes])
        partial = sch.rfactor(lanes, len(sch.get_loops(red)) - 2)
        out = sch.get_sblock(plan.epilogue[-1]) if plan.epilogue else red
        # the output's loops over its elements (a reduction block left alone keeps its lanes' loop)
        rows = sch.get_loops(out)[:len(sch.get_loops(out)) - (not plan.epilogue)]
        if rows:
            row = sch.fuse(*rows) if len(rows) > 1 else rows[0]
            if plan.parallel:
                sch.parallel(row)
            for block in ((red,) if plan.epilogue else ()) + (partial,):
                sch.compute_at(block, row)
            lane, vectors = sch.get_loops(partial)[-2:]  # compute_at orders the loops as the block's axes
            sch.reorder(vectors, lane)
        else:  # all axes reduced to a scalar (DynamicQuantizeLinear's min and max): rfactor's own loops
            lane = sch.get_loops(partial)[-1]
        sch.vectorize(lane)
    except tvm.s_tir.schedule.ScheduleError:
        return None
    return sch.mod["main"].with_attr("tirx.is_scheduled", True)


def without_packing(mod: tvm.IRModule) -> tvm.IRModule:
    """``mod`` with every kernel as a build runs it: weights already packed (the packing block
    removed, the weight parameter in the packed layout), for timing kernels alone as MetaSchedule's
    builder does; kernels without packing unchanged."""
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
