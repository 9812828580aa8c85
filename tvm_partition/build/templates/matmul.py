"""Matmuls with constant weights (TOPI's ``matmul`` of ``x[..., m, k]`` by ``w[k, n]``, element-wise
epilogue: BERT's projections and FFN, the RNNs' gates, imported models' ``MatMul`` and ``Gemm``).
Why: their schedules were MetaSchedule records tuned for BERT-tiny's and the RNNs' shapes, replayed
onto every other; on BERT-base's FFN matmul + GELU (2048 x 768 x 3072) the replay ran 99-120 ms
where onnxruntime's MatMul alone took 49-62 (2 Zen 4 threads), and the cost model, which had only
the records' own shapes to learn from, predicted BERT-base at half its measured latency. The
schedule is :func:`_schedule_matmul`: the register-tiled GEMM micro-kernel of CPU libraries (a tile
of :data:`MATMUL_ROWS` rows x one or two vectors of columns over the whole reduction, the weights
packed so each step reads contiguous vectors), with the element-wise epilogue per tile as the
convolution's. On the 13 distinct matmul kernels of LSTM, GRU, BERT-tiny and BERT-base, each alone
against the records the builds replayed (``python benchmarks/template_ab.py matmul lstm gru
bert-tiny bert``, 2 Zen 4 threads, 2026-11-27): BERT-base's 271 -> 143 ms of kernels (0.39-0.97x
each), BERT-tiny's 0.84-1.01x but its FFN + GELU at K = 128 1.14x (a record tuned at exactly that
shape), the RNNs' 0.81-0.94x. A matrix-vector product (one row: a classifier at batch 1) takes a
tile of one row and up to :data:`GEMV_VECTORS` vectors of columns, as many independent accumulators
(one vector a tile left each on one chain of dependent FMAs: ResNet-18's classifier ran 1.4-2.4x its
record). Memory-bound where its weights come from memory, it reads them as one contiguous stream a
tile: ZFNet-512's 1 x 9216 x 4096 (302 MB) ran 17.6 ms on the record replayed, 11.1 as one-row tiles
(27 GB/s), the model 37.8 -> 27.2 ms and AlexNet 19.3 -> 14.2 (paired, 5 rounds;
``benchmarks/template_ab.py matmul``: every classifier of ResNet-18, ResNet-50, AlexNet and
Inception-v1 0.35-0.62x its record alone; 2 Zen 4 threads, 2026-11-27). The same schedule takes
attention's batched matmuls of computed operands (``softmax @ v``: the right operand read in place,
not packed) where their reduction is long enough (:data:`MIN_BATCHED_REDUCTION`), and tiles a
sequence-first ``[tokens, 1, features]`` projection over its tokens
(:func:`tvm_partition.ir.relax_utils.matmul_row_axis`); ViT-B/16 (torchvision, 197 tokens) with
these and :func:`tvm_partition.frontend.inference.pad_matmuls` ran 0.53x the build before, 1.22x
onnxruntime's time (2 Zen 4 threads, 2026-11-30; BENCHMARKS.md, "torchvision's models")."""

from __future__ import annotations

import dataclasses
import math

import tvm

from ...ir.relax_utils import matmul_row_axis
from .. import amx, vnni
from . import common, prefetch


#: TOPI's block of ``relax.matmul`` (``topi.matmul``: ``x[..., m, k] * w[k, n]``)
_MATMUL = "matmul"
#: Rows of a matmul's register tile; the template applies where the rows are a multiple of it or 1
#: (a matrix-vector product: :data:`GEMV_VECTORS`) and the planners cut rows at its multiples
#: (:func:`tvm_partition.build.templates.inner_tiles`). Each
#: kernel alone against the record builds replayed, 5 alternating rounds, 2 Zen 4 threads
#: (amd-epyc-znver4-2c, 2026-11-27; ``x`` rows x ``k`` x ``n`` columns): 4 rows x 2 vectors
#: (8 accumulators) ran BERT-base's FFN + GELU (2048 x 768 x 3072) 0.43x, its 768 x 768 0.64x, BERT-tiny's
#: K = 512 0.68x and K = 128 + GELU 1.01x, the GRU's 0.93-0.97x; 4 x 4 within 0.08 of it either way;
#: 8 x 2 0.75-1.58x where 4 x 2 ran 0.68-1.01x.
MATMUL_ROWS = 4
#: Rows of a two-vector matmul tile on a full-width AVX-512 CPU (:func:`.common._full_width_fma`), the first
#: that divides the rows (else :data:`MATMUL_ROWS`): 7 (14 accumulators, as the convolution's 7 x 2,
#: :data:`.convolution.PAIRED_ROW`), then 13 (26: ConvNeXt-T's and Swin-T's last stage, 7 x 7 pixels padded to 52
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
#: Vectors of columns a 4-row tile holds on a CPU of 16 vector registers (AVX2), where they divide
#: the columns: 12 accumulators, the three vectors of weights a step and the broadcast row filling
#: the 16 (onnxruntime's FMA3 kernel keeps 12 too: 6 rows x 2 vectors); else two. Each alone, 4 x 3
#: against 4 x 2 in the same loop order (3 alternating rounds, 2 threads, amd-epyc-znver2-2c,
#: 2026-12-06; ``benchmarks/results/amd-epyc-znver2-2c/avx2_matmul/tiles.py``): Data2Vec vision's
#: five matmuls (200 rows; 768 -> 768, 768 -> 3072 + GELU, 3072 -> 768) 0.79-0.83x, the zoo's
#: BERT-base's four (2048 rows) 0.78-0.82x; 5 x 2 (10 accumulators, where 5 divides the rows)
#: 0.79-0.85x, 5 x 3 and 8 x 2 (15 and 16: they spill) 1.29-1.45x, 2 x 4 1.01-1.24x. As builds
#: (``benchmarks/build_with.py``, then ``paired.py --in-process``, 7 rounds): Data2Vec vision,
#: YOLOS and DPT 0.82x, WavLM 0.94x (BENCHMARKS.md, "Matmuls on AVX2").
NARROW_MATMUL_BLOCKS = 3
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
#: ... and at least this many tiles of rows pass each chunk (the chunk is read from L1 by every tile).
#: It was 16, from kernels timed alone, their weights warm in the caches: ConvNeXt-T's and Swin-T's
#: matmuls of 52 rows (4 tiles of 13) ran 0.96-1.03x with chunks. In a model a matmul's weights come
#: from the L3 cache or memory, not L2 (4-6 layers of a transformer: 39-450 MB of them), and there
#: the chunks paid on 4 and 8 tiles: whole builds against 16 (``benchmarks/paired.py --in-process``,
#: 7 alternating rounds, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-06; Hugging
#: Face exports at 64 tokens, each matmul 8 tiles of 8 rows, built with 8, which makes the same
#: kernels there as 4; ConvNeXt and Swin with 4): DeBERTa-v2 0.69x,
#: DistilBERT 0.77x, GPT-2 0.92x, OPT 0.92x, Llama 0.95x (0.76-1.28), eight 64 x 768 x 3072 FFNs
#: 0.74x; ConvNeXt's 4 tiles of 13 0.94x (every round under 0.99), Swin's 0.98x.
MATMUL_CHUNK_TILES = 4
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
#: Rows of a tile of one vector of columns (columns an odd number of vectors: MobileViT-S's 144
#: and 240, its attention's 40 in 8-lane vectors) on a full-width AVX-512 CPU: the first that
#: divides the rows (else :data:`MATMUL_ROWS`). 4 rows x 1 vector left 4 accumulators, each a
#: chain of dependent multiply-adds; 16 rows hold 16 (as the convolution's 14 x 1). Each alone,
#: 3 alternating rounds, 2 threads (``benchmarks/template_ab.py matmul MOBILEVIT.onnx --without
#: 'ONE_VECTOR_ROWS=()'``, intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-07): MobileViT-S's
#: 256- and 16-row matmuls into 144 and 240 columns 0.60-0.69x (five of six; the sixth 0.85x), its
#: ``softmax @ v`` into 40 0.73x (since tiled whole: :data:`ALL_COLUMN_VECTORS`); 8 rows ran
#: between (256 x 144 x 144: 4 rows 270-280 us, 8 179-300, 16 162-175).
ONE_VECTOR_ROWS = (16, 8)
#: Vectors of columns that a batched matmul of computed operands (``softmax @ v``) holds whole in
#: one tile of :data:`MATMUL_ROWS` rows where its columns are exactly one of these many (a head of
#: 64 in fp32, 4 x 16 lanes; MobileViT-S's heads of 36 padded to 40, 5 x 8; full-width AVX-512):
#: each ``x`` element broadcast once for every column, where two tiles of 2 vectors broadcast it
#: twice (16 accumulators, as the records tuned for BERT-tiny's ``softmax @ v`` tile it) and
#: one-vector tiles (:data:`ONE_VECTOR_ROWS`) five times: MobileViT-S's 16 x 256 x 40 by 256 ran
#: 635 us on 4 x 5 against 1,007 on 16 x 1 (0.63x) and its record's 1,048 (``wide4.md``), and
#: 673 against 982 (0.69x, ``template_ab.py ... --without 'ALL_COLUMN_VECTORS=(4,)'``, 7 rounds);
#: 5 vectors of 16 (a head of 80) take it untimed. 4 x 4, each alone against the tile before,
#: 5 alternating rounds, 2 threads
#: (``benchmarks/results/intel-r-xeon-r-processor-emeraldrapids-2c/attention_reductions/variants.py``,
#: 2026-12-07; ``wide4.md``): the zoo's BERT at batch 16 (192 x 128 x 64 by 128) 0.77x, DeiT's
#: (12 x 200 x 64 by 198, on 10 x 2 before) 0.84x, BERT-tiny's, T5's and GPT-2's at 128 tokens
#: 0.87-0.91x; 5 and 8 rows x 4 ran 1.04-1.10x of 4 x 4. Where the columns are more (scores of
#: 128 keys) 4 x 4 ran 0.94-1.14x of 4 x 2: no rule.
ALL_COLUMN_VECTORS = (4, 5)
#: Rows of the register tile of a matmul the template schedules only where no record does
#: (:func:`tvm_partition.build.templates.fallback`), at most: the largest divisor of its rows up to it. MaxViT-T's ``softmax @
#: v`` (49 rows a window) on tiles of 1, 7 rows x 2 vectors: 245 and 105 us (each alone).
FALLBACK_ROWS = 8


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
    divisor up to :data:`FALLBACK_ROWS` (:func:`tvm_partition.build.templates.fallback`)."""
    if target.kind.name != "llvm":
        return None
    blocks = common._root_blocks(kmod)
    if not blocks or blocks[0].name_hint != _MATMUL or any(b.name_hint == _MATMUL for b in blocks[1:]):
        return None
    mm, rank = blocks[0], len(blocks[0].iter_vars) - 1
    if rank < 2 or common._iter_kinds(mm) != "S" * rank + "R":
        return None
    extents = [v.dom.extent for v in mm.iter_vars]
    if not all(isinstance(e, tvm.tirx.IntImm) for e in extents):
        return None
    weight = common._weight(kmod, mm)
    if weight is None:
        return None
    shared = len(mm.reads[1].source.shape) == 2
    short = int(extents[rank]) < MIN_BATCHED_REDUCTION and math.prod(int(e) for e in extents[:rank]) < MIN_BATCHED_OUTPUT
    if not shared and short and not fallback:
        return None
    if any(common._iter_kinds(b) != "S" * rank for b in blocks[1:]):  # element-wise only, over the matmul's output
        return None
    axis = matmul_row_axis([int(e) for e in extents[:-1]], shared)  # output extents: [..., m, n]
    rows, cols = int(extents[axis]), int(extents[rank - 1])
    lanes = common._whole_vectors(cols, target)
    tile_rows = min(rows, MATMUL_ROWS) if rows % MATMUL_ROWS == 0 or rows == 1 else \
        common._row(rows, FALLBACK_ROWS) if fallback else None
    if lanes is None or tile_rows is None:
        return None
    from ..transfer import serial

    if rows == 1:  # a matrix-vector product: its accumulators' chains side by side, not rows
        tile = max(b for b in range(1, GEMV_VECTORS + 1) if (cols // lanes) % b == 0)
    else:
        widest, registers = common.vector_lanes(target)
        fits = 2 * tile_rows <= common.ACC_BUDGET[registers]
        tile = 2 if cols % (2 * lanes) == 0 and fits else 1
        three = registers == 16 and tile_rows == MATMUL_ROWS and lanes == widest and not fallback
        tile = NARROW_MATMUL_BLOCKS if three and cols % (NARROW_MATMUL_BLOCKS * lanes) == 0 else tile
    columns_outer = shared and _columns_outer(mm)
    chunk = 0
    whole = rows > 1 and not shared and not fallback and cols // lanes in ALL_COLUMN_VECTORS
    if whole and common._full_width_fma(target):
        tile, tile_rows = cols // lanes, MATMUL_ROWS  # not fallback: the rows are a multiple of it
    elif rows > 1 and tile == 2 and not fallback and common._full_width_fma(target):
        wide = [r for r in WIDE_MATMUL_ROWS if rows % r == 0]
        divisors = [r for r in DIVISOR_MATMUL_ROWS if rows % r == 0]
        eight = columns_outer and rows % COLUMNS_OUTER_ROWS == 0 and int(extents[rank]) >= COLUMNS_OUTER_MIN_REDUCTION
        tile_rows = wide[0] if wide else COLUMNS_OUTER_ROWS if eight else divisors[0] if divisors else tile_rows
        chunk = _matmul_chunk(mm, tile * lanes, rows // tile_rows) if columns_outer else 0
    elif rows > 1 and tile == 1 and not fallback and common._full_width_fma(target):
        tile_rows = next((r for r in ONE_VECTOR_ROWS if rows % r == 0), tile_rows)
    return _MatmulPlan(tuple(b.name_hint for b in blocks[1:]), weight, lanes, tile, not serial(kmod, target),
                       tile_rows, axis, shared, columns_outer, chunk)


def _integer_matmul_plan(kmod: tvm.IRModule, target) -> vnni.Plan | None:
    """The :class:`.vnni.Plan` of an llvm kernel of TOPI's ``matmul`` block (first) that
    :func:`.vnni.fits` the template, by a weight parameter (:func:`.common._weight`), then element-wise
    blocks only, on a :func:`.vnni.sums_bytes` target; None for any other kernel."""
    if not vnni.sums_bytes(target):
        return None
    blocks = common._root_blocks(kmod)
    if not blocks or blocks[0].name_hint != _MATMUL:
        return None
    mm, rank = blocks[0], len(blocks[0].iter_vars) - 1
    if rank < 2 or common._iter_kinds(mm) != "S" * rank + "R" or any(common._iter_kinds(b) != "S" * rank for b in blocks[1:]):
        return None
    weight = common._weight(kmod, mm)
    if weight is None or not vnni.fits(mm):
        return None
    from ..transfer import serial

    return vnni.Plan(tuple(b.name_hint for b in blocks[1:]), weight, not serial(kmod, target))


def _in_tiles(kmod: tvm.IRModule, target) -> bool:
    """Whether an integer matmul kernel (:func:`_integer_matmul_plan`'s) takes :mod:`.amx`'s
    template: its CPU has the tiles and the kernel is whole ones."""
    return amx.multiplies_tiles(target) and amx.fits(common._root_blocks(kmod)[0])


def _matmul_chunk(mm, columns: int, tiles: int) -> int:
    """:data:`MATMUL_CHUNK` where a columns-outer matmul's block of ``columns`` columns' weights over
    its whole reduction outgrow :data:`MATMUL_CHUNK_FROM_BYTES`, the chunk divides the reduction,
    ``x`` fits in :data:`MATMUL_CHUNK_X_BYTES` and its ``tiles`` tiles of rows number at least
    :data:`MATMUL_CHUNK_TILES`; else 0."""
    reduction = int(mm.iter_vars[-1].dom.extent)
    x, _ = common._operand_elements(mm)
    bits = mm.reads[1].source.dtype.bits
    if reduction % MATMUL_CHUNK or reduction == MATMUL_CHUNK or tiles < MATMUL_CHUNK_TILES:
        return 0
    if reduction * columns * bits // 8 <= MATMUL_CHUNK_FROM_BYTES or x * bits // 8 > MATMUL_CHUNK_X_BYTES:
        return 0
    return MATMUL_CHUNK


def _prefetching(func: tvm.tirx.PrimFunc, plan: _MatmulPlan, tile, chunks, rows) -> tvm.tirx.PrimFunc:
    """``func`` (a chunked matmul, :func:`_matmul_chunk`: its parallel loop ``tile`` over blocks of
    columns, the loops ``chunks`` over their reduction's chunks and ``rows`` over the tiles of rows)
    with the next chunk's packed weights prefetched while the tiles of rows pass the current one,
    a few lines at each tile (:mod:`.prefetch`; the chunk after a block's last is the next block's
    first: the packing lays them out in that order). Unchanged where the packed weights are not laid
    out ``[blocks of columns, chunks, chunk, vectors, lanes]``. An unchunked matmul gets none: on
    DeiT-B's 3072 -> 768 (a block of 384 KiB) the prefetches at each tile, or at every 64 steps of
    the reduction (split so), ran 0.99-1.05x the time without (each alone, weights cold, 5-7 rounds,
    intel-r-xeon-r-processor-emeraldrapids-2c, 2026-12-07)."""
    columns = plan.blocks * plan.lanes
    inner = [int(chunks.extent), plan.chunk, plan.blocks, plan.lanes]
    packed = prefetch.packed_weight(func, plan.weight, lambda shape: shape[1:] == inner)
    if packed is None:
        return func
    block = tvm.tirx.floordiv(tile.loop_var, int(tile.extent) // int(packed.shape[0]))  # the lead axes inside it
    start = ((block * int(chunks.extent) + chunks.loop_var + 1) * plan.chunk) * columns
    stmt = prefetch.lines(packed, start, plan.chunk * columns, rows.loop_var, int(rows.extent))
    return prefetch.before_body(func, rows.loop_var, stmt)


def _columns_outer(mm) -> bool:
    """Whether a matmul's parallel loop runs over blocks of columns first (``n_o``, then the rows),
    so that a block's packed weights stay in cache while every row of ``x`` passes them, rather than
    rows first (a tile's rows of ``x`` in L1 while they pass every column's weights): where the
    weights hold more elements than ``x``, as :func:`.convolution._rows_outer` decides for a convolution. Why: rows
    first, a weight of 0.6-9.4 MB (ConvNeXt-T's and Swin-T's MLPs at 14x14 and 7x7, 196 and 52 rows)
    was read from beyond the L2 cache once per block of rows. Each alone on 4 x 2 tiles
    (``benchmarks/matmul_tiles.py``, 5 rounds, 2 threads, intel-r-xeon-r-processor-emeraldrapids-2c,
    2026-12-01): the 11 such matmuls of the two models 0.44-0.96x (median 0.59), with the tile of
    :data:`WIDE_MATMUL_ROWS` 0.43-0.78x; where ``x`` outweighs the weights (their first stages,
    BERT-tiny's) the columns outer gained nothing in a scratch run (0.94-1.11x)."""
    x, weights = common._operand_elements(mm)
    return weights > x


def _schedule_matmul(kmod: tvm.IRModule, target, plan: _MatmulPlan) -> tvm.tirx.PrimFunc | None:
    """The matmul schedule: ``lead m_o n_o | k | m_i n_b n_i``, a register tile of ``plan.rows``
    rows (:data:`MATMUL_ROWS`; on :func:`tvm_partition.build.templates.fallback` a divisor of the rows up to
    :data:`FALLBACK_ROWS`) x ``blocks`` vectors of columns accumulated in a ``local`` tile over the
    whole reduction, each ``x`` element broadcast, the weights read as contiguous vectors (packed
    ``[n_o, k, n_b, n_i]`` at load time, as the convolution's); the loops above the tile one parallel
    loop, rows outer (a tile's rows of ``x`` stay in L1 while it sweeps the columns, as the tuned
    records of BERT-tiny's matmuls do) or, where the weights outweigh ``x``, columns outer
    (:func:`_columns_outer`); the epilogue computed per tile. With ``plan.chunk``
    (:func:`_matmul_chunk`, columns outer) every tile of rows runs under each chunk of the
    reduction instead, the block of columns' sums carried in an accumulator of all its rows, which
    is written back, and its epilogue computed, a vector at a time after the last chunk, and each
    tile of rows prefetches its share of the next chunk's packed weights (:func:`_prefetching`). The
    leading axes are not fused with the rows: fused, the tile's rows were a division of the fused
    index and LLVM kept an 8-row tile's accumulators in memory.
    """
    func = kmod["main"].with_attr("layout_free_buffers", [plan.weight]) if plan.packed else kmod["main"]
    sch, mm = common._opened(func, _MATMUL, plan.epilogue)
    *spatial, n, k = sch.get_loops(mm)
    m = spatial[plan.row_axis]
    lead = [loop for i, loop in enumerate(spatial) if i != plan.row_axis % len(spatial)]
    m_o, m_i = sch.split(m, [None, plan.rows])
    n_o, n_b, n_i = sch.split(n, [None, plan.blocks, plan.lanes])
    outer = (n_o, *lead, m_o) if plan.columns_outer else (*lead, m_o, n_o)
    if plan.chunk:  # every tile of rows under each chunk, their sums carried in the block's accumulator
        k_o, k = sch.split(k, [None, plan.chunk])
        sch.reorder(*outer[:-1], k_o, m_o, k, m_i, n_b, n_i)
        acc = sch.cache_write(mm, 0, common.TILE_SCOPE)
        common._per_tile(sch, acc, outer[-2], plan.epilogue)
        for block in [acc, *([sch.get_sblock(plan.epilogue[-1])] if plan.epilogue else [])]:  # written back
            common._in_vectors(sch, sch.get_loops(block)[-1], plan.lanes)
        tile, zeroed = sch.fuse(*outer[:-1]), k_o
        ahead = (k_o, m_o)  # where the next chunk is prefetched (:func:`_prefetching`)
    else:
        sch.reorder(*outer, k, m_i, n_b, n_i)
        common._per_tile(sch, sch.cache_write(mm, 0, "local"), outer[-1], plan.epilogue)
        tile, zeroed, ahead = sch.fuse(*outer), k, None
    if plan.parallel:
        sch.parallel(tile)
    sch.vectorize(n_i)
    sch.unroll(n_b)
    sch.unroll(m_i)
    sch.decompose_reduction(mm, zeroed)
    if not plan.packed:
        return sch.mod["main"].with_attr("tirx.is_scheduled", True)
    loops = [sch.get(loop) for loop in (tile, *(ahead or ()))]  # before packing: its loop variables stay
    func = common._packed(sch, target)
    return _prefetching(func, plan, *loops) if func is not None and ahead else func
