"""Exponentials that vectorise: ``sigmoid``, ``tanh``, ``exp``, ``erf``, GELU (and its tanh form), SiLU and softmax legalized on TVM's ``fast_exp`` / ``fast_tanh`` / ``fast_erf``; ``isnan`` / ``isinf`` as tests of the bits; LRN's pool that fuses.

TVM 0.27 legalizes ``R.sigmoid``, ``R.tanh`` and ``R.exp`` to ``T.sigmoid`` / ``T.tanh`` / ``T.exp``,
which LLVM lowers to a call of libm's scalar ``expf`` (``tanhf``) for every element: no loop
around them vectorises, whatever the schedule. An RNN's gate kernels are made of them:
``perf`` of the GRU (batch 16, hidden 64) on the Zen 5 VM put 18% of the VM thread's samples in
libm's ``expf``, and a GRU gate kernel of 1,024 elements took 9-10 us. ``topi.fast_exp`` (a
polynomial on a range-reduced argument: float arithmetic, a floor and an exponent built by a bit
shift) and ``topi.fast_tanh`` (a rational function) are plain arithmetic that LLVM vectorises.
Measured on ``sigmoid(a) * tanh(b)`` over 16 x 64 (amd-epyc-znver5-2c, 2026-11-25): libm
5.08 us, these 0.38 us; the largest error against float64 1.96e-7, libm's 1.45e-7. GELU
(``x * (0.5 + 0.5 * erf(x / sqrt 2))``, BERT's feed-forward epilogue) calls libm's ``erff`` the same
way; ``topi.fast_erf`` is a rational function. So does an ``erf`` of its own: PyTorch's
TorchScript exporter writes ``nn.GELU`` out as ``Div, Erf, Add, Mul, Mul`` (its dynamo exporter as
ONNX's ``Gelu``), and an MLP-Mixer's feed-forward matmul with that epilogue ran 338 us a call on
libm's ``erff``, 99 us as ``gelu`` (``run --kernels``, amd-epyc-znver3-2c, 2026-11-30). The tanh-approximated
GELU (``R.nn.gelu_tanh``: ONNX's ``Gelu`` with ``approximate="tanh"``, which PyTorch's dynamo exporter
writes for GPTBigCode's, Starcoder2's and Gemma's feed-forward) calls libm's ``tanhf`` the same way:
GPTBigCode's 64 x 512 x 2048 matmul with it ran 1,363 us alone, its 2048 -> 512 one without an
epilogue 699 (emeraldrapids-2c, 2026-12-06); written on ``fast_tanh``, GPTBigCode, Gemma and
Starcoder2 ran 0.74x, 0.83x and 0.72x their time (paired builds, 9 rounds; BENCHMARKS.md,
"Twenty-eight more Hugging Face architectures"). SiLU (``R.nn.silu``, ``x sigmoid(x)``, what TVM's
PyTorch importers make of ``F.silu``) is written on the sigmoid here likewise. ``softmax`` over the last axis exponentiates
every element the same way: it becomes ``topi.nn.fast_softmax`` (BERT-tiny's attention softmax,
16 x 2 x 128 x 128, took 493 us on a transferred record with libm's ``expf``; on ``fast_exp`` and
the softmax template, 75 us; amd-epyc-znver5-2c, 2026-11-26); on a CPU, one over rows no whole
number of vectors fills (ViT's 197) becomes :func:`tailed_softmax`, whose maximum and sum the
template keeps in vectors. LRN's pool over the channels (an
``avg_pool3d`` TVM legalizes as a reduction, which fuses with nothing) is written out as a sum of
neighbours that ``FuseOps`` joins to the rest of the LRN (:func:`_avg_pool3d`).

:data:`LEGALIZE` overrides TVM's legalization of these ops in every ``LegalizeOps`` that makes the
kernels of our builds, of :class:`tvm_partition.ir.graph.OpGraph` and of the profile's samples
(:func:`tvm_partition.ir.legalize.legalize_ops`), so the three see the same kernels. The PrimFuncs
keep TVM's names (``tir_sigmoid``, ...), so fused kernels keep theirs. TVM's own flow (``bench``'s
``tvm-cpu`` row, the reference outputs of ``--check``) keeps libm: the baseline is TVM as a user
gets it.
"""

from __future__ import annotations

import math

import tvm
from tvm import te, topi


def _sigmoid(x):
    e = topi.fast_exp(topi.negative(x))
    return te.compute(x.shape, lambda *i: 1.0 / (1.0 + e(*i)), name="T_sigmoid", tag="elemwise")


def _gelu(x):
    """TVM's GELU (``x * (0.5 + 0.5 * erf(x / sqrt 2))``) on ``topi.fast_erf``."""
    erf = topi.fast_erf(x * tvm.tirx.const(0.5**0.5, x.dtype))
    return x * (tvm.tirx.const(0.5, x.dtype) + erf * tvm.tirx.const(0.5, x.dtype))


def _gelu_tanh(x):
    """TVM's tanh-approximated GELU (``0.5 x (1 + tanh(sqrt(2 / pi) x (1 + 0.044715 x^2)))``, ONNX's
    ``Gelu`` with ``approximate="tanh"``) on ``topi.fast_tanh``."""
    def inner(*i):
        return tvm.tirx.const(math.sqrt(2.0 / math.pi), x.dtype) * x(*i) \
            * (tvm.tirx.const(1.0, x.dtype) + tvm.tirx.const(0.044715, x.dtype) * x(*i) * x(*i))

    t = topi.fast_tanh(te.compute(x.shape, inner, name="T_gelu_inner", tag="elemwise"))
    return te.compute(x.shape, lambda *i: tvm.tirx.const(0.5, x.dtype) * x(*i) * (tvm.tirx.const(1.0, x.dtype) + t(*i)),
                      name="T_gelu_tanh", tag="elemwise")


def _silu(x):
    """SiLU (``x sigmoid(x)``) on :func:`_sigmoid`."""
    s = _sigmoid(x)
    return te.compute(x.shape, lambda *i: x(*i) * s(*i), name="T_silu", tag="elemwise")


def _softmax(bb, call):
    """``R.nn.softmax`` over the last axis on ``topi.nn.fast_softmax`` (TVM's blocks plus a
    ``T_softmax_delta`` and a ``T_fast_exp``, which :mod:`tvm_partition.build.templates` schedules);
    other axes and dtypes as TVM legalizes them."""
    x = call.args[0]
    axis = int(call.attrs.axis)
    if x.ty.dtype != "float32" or axis not in (-1, len(x.ty.shape) - 1):
        return tvm.ir.Op.get("relax.nn.softmax").get_attr("FLegalize")(bb, call)
    row = x.ty.shape[-1]
    if isinstance(row, tvm.tirx.IntImm) and int(row) > ROW_LANES and int(row) % NARROWEST_LANES and not _off_cpu(x):
        return bb.call_te(tailed_softmax, x, primfunc_name_hint="softmax")
    return bb.call_te(topi.nn.fast_softmax, x, -1, primfunc_name_hint="softmax")


#: The lanes a row's maximum and sum are kept in by :func:`tailed_softmax` (a zmm register's floats;
#: two ymm's on AVX2).
ROW_LANES = 16
#: Rows a whole number of vectors of this many lanes fill (the narrowest the softmax template takes)
#: keep ``fast_softmax``, whose partial results the template keeps in such vectors; only rows of
#: none (ViT's 197, a window's 49) take :func:`tailed_softmax`.
NARROWEST_LANES = 4
#: :func:`tailed_softmax`'s reduction blocks, in order.
TAILED_SOFTMAX_BLOCKS = tuple(f"T_softmax_{r}{part}" for r in ("maxelem", "expsum") for part in ("_lanes", "_over", "_tail", ""))


def _off_cpu(x) -> bool:
    """Whether ``x`` lies on a GPU: its virtual device's (a build), else the current target's (a GPU
    profile sample, :func:`tvm_partition.ir.legalize.under_gpu_target`)."""
    vdevice = getattr(x.ty, "vdevice", None)
    target = vdevice.target if vdevice is not None else tvm.target.Target.current(allow_none=True)
    return target is not None and target.kind.name != "llvm"


def tailed_softmax(x):
    """``fast_softmax`` over a last axis of ``n`` elements, no whole number of vectors
    (:data:`NARROWEST_LANES`), with its maximum and its sum each kept in :data:`ROW_LANES` lanes over the row's whole vectors
    (``*_lanes``), combined (``*_over``) with the ``n % ROW_LANES`` elements past them (``*_tail``).

    Why: ``topi.nn.fast_softmax`` reduces a row in one loop, which the softmax template can give
    partial results only where a whole number of vectors divides it (``rfactor`` after a split that
    does not divide the row loses the split's predicate: results off by 0.17; ``loop_partition``
    gives each part its own ``init``), so a row of 197 (ViT's 197 tokens; prime) kept two scalar
    chains of dependent compares and adds: 12 x 197 rows took 1,485 us on one thread, these blocks
    288 (2026-12-06, rocketlake). Every read stays within the row. CPUs only: a GPU keeps TVM's
    blocks, which dlight's reduction rules know."""
    *lead, n = (int(d) for d in x.shape)
    whole, tail = n - n % ROW_LANES, n % ROW_LANES

    def reduced(src, name: str, reduce, combine):
        k = te.reduce_axis((0, whole // ROW_LANES), "k")
        lanes = te.compute([*lead, ROW_LANES], lambda *i: reduce(src[(*i[:-1], k * ROW_LANES + i[-1])], axis=k),
                           name=f"{name}_lanes")
        lane = te.reduce_axis((0, ROW_LANES), "lane")
        over = te.compute(lead, lambda *i: reduce(lanes[(*i, lane)], axis=lane), name=f"{name}_over")
        t = te.reduce_axis((0, tail), "t")
        rest = te.compute(lead, lambda *i: reduce(src[(*i, whole + t)], axis=t), name=f"{name}_tail")
        return te.compute(lead, lambda *i: combine(over[i], rest[i]), name=name)

    top = reduced(x, "T_softmax_maxelem", te.max, te.max)
    exp = topi.fast_exp(te.compute(x.shape, lambda *i: x[i] - top[i[:-1]], name="T_softmax_delta"))
    total = reduced(exp, "T_softmax_expsum", te.sum, lambda a, b: a + b)
    return te.compute(x.shape, lambda *i: exp[i] / total[i[:-1]], name="T_softmax_norm")


def _window_sum(x, k: int, front: int, depth: int):
    """``avg_pool3d`` of window ``(k, 1, 1)``, stride 1, zero padding counted: each output the sum
    of ``k`` neighbours along the depth axis over ``k``, written out (no reduction axis)."""
    n, c, d, h, w = x.shape

    def element(b, ch, z, y, xx):
        total = None
        for j in range(k):
            src = z + (j - front)
            v = tvm.tirx.if_then_else(tvm.tirx.all(src >= 0, src < d), x[b, ch, src, y, xx],
                                      tvm.tirx.const(0.0, x.dtype))
            total = v if total is None else total + v
        return total * tvm.tirx.const(1.0 / k, x.dtype)

    return te.compute((n, c, depth, h, w), element, name="T_window_sum", tag="injective")


#: Windows :func:`_avg_pool3d` writes out: up to this many neighbours (LRN's ``size``: 3-11).
MAX_WINDOW = 16


def _avg_pool3d(bb, call):
    """LRN's pool (the ONNX frontend's ``avg_pool3d`` of window ``(size, 1, 1)`` over the channels,
    stride 1, padding counted) as :func:`_window_sum`: a kernel of no reduction, which ``FuseOps``
    joins to the square before it and the normalisation after it (TVM's pool is a reduction it
    fuses with nothing, on a default schedule). ZFNet-512's first LRN (96 x 109 x 109) ran three
    kernels, 0.19 + 1.29 (the pool) + 2.77 ms (the normalisation, in ``powf``); one kernel on the
    element-wise template, its power as roots (:func:`tvm_partition.frontend.inference.roots_for_powers`),
    0.81 ms (``run --kernels``, amd-epyc-znver4-2c, 2026-11-27). Other pools as TVM legalizes them."""
    a = call.attrs
    x = call.args[0]
    size = [int(v) for v in a.pool_size]
    pad = [int(v) for v in a.padding]
    if (a.layout == a.out_layout == "NCDHW" and x.ty.dtype == "float32" and size[1:] == [1, 1]
            and 1 < size[0] <= MAX_WINDOW and all(int(v) == 1 for v in list(a.strides) + list(a.dilation))
            and not a.ceil_mode and a.count_include_pad and pad[1:3] == [0, 0] and pad[4:] == [0, 0]):
        shape = [int(v) for v in x.ty.shape.values]
        depth = shape[2] + pad[0] + pad[3] - size[0] + 1
        if depth > 0:
            return bb.call_te(_window_sum, x, size[0], pad[0], depth, primfunc_name_hint="avg_pool3d")
    return tvm.ir.Op.get("relax.nn.avg_pool3d").get_attr("FLegalize")(bb, call)


#: The bits of a float type's infinity (its exponent all ones, the mantissa 0), by type: a NaN's
#: bits without the sign are more, an infinity's equal (IEEE 754).
_INFINITY_BITS = {"float16": 0x7C00, "float32": 0x7F800000, "float64": 0x7FF0000000000000}


def _bits_test(test: str):
    """``isnan`` / ``isinf`` as a test of the element's bits, which vectorises. Why: TVM's
    vectorizer scalarises a loop that calls ``tir.isnan`` (LLVM then compares and divides an
    element at a time): DistilBERT's attention softmax, ``where(isnan(softmax), 0, softmax)``,
    ran 177 us over 12 x 128 rows of 128 where the softmax alone ran 52 (onnxruntime, the whole:
    234; its normalisation alone, 80 us scalar and 18 as bits; rocketlake-2c, 2026-12-06). A
    float's own ``x != x`` is no test: TVM's simplifier folds it to false."""

    def compute(x):
        dtype = str(x.dtype)
        bits, inf = dtype.replace("float", "int"), _INFINITY_BITS[dtype]
        magnitude = tvm.tirx.const((1 << (int(dtype[5:]) - 1)) - 1, bits)  # every bit but the sign

        def element(*i):
            unsigned = tvm.tirx.reinterpret(bits, x(*i)) & magnitude
            return unsigned > tvm.tirx.const(inf, bits) if test == "isnan" else unsigned == tvm.tirx.const(inf, bits)

        return te.compute(x.shape, element, name=f"T_{test}", tag="elemwise")

    return _legalize(f"relax.{test}", compute, f"tir_{test}", tuple(_INFINITY_BITS))


def _legalize(op: str, fn, name: str, dtypes: tuple[str, ...] = ("float32",)):
    """``op`` legalized as ``fn`` of its operand where that is of ``dtypes`` (``fast_exp`` /
    ``fast_tanh`` are float32 only), else as TVM legalizes it."""
    def legalize(bb, call):
        if str(call.args[0].ty.dtype) not in dtypes:
            return tvm.ir.Op.get(op).get_attr("FLegalize")(bb, call)
        return bb.call_te(fn, call.args[0], primfunc_name_hint=name)

    return legalize


#: ``LegalizeOps(customize_legalize_map=LEGALIZE)``.
LEGALIZE = {
    "relax.sigmoid": _legalize("relax.sigmoid", _sigmoid, "tir_sigmoid"),
    "relax.tanh": _legalize("relax.tanh", topi.fast_tanh, "tir_tanh"),
    "relax.exp": _legalize("relax.exp", topi.fast_exp, "tir_exp"),
    "relax.nn.gelu": _legalize("relax.nn.gelu", _gelu, "gelu"),
    "relax.nn.gelu_tanh": _legalize("relax.nn.gelu_tanh", _gelu_tanh, "gelu_tanh"),
    "relax.nn.silu": _legalize("relax.nn.silu", _silu, "silu"),
    "relax.erf": _legalize("relax.erf", topi.fast_erf, "erf"),
    "relax.nn.softmax": _softmax,
    "relax.nn.avg_pool3d": _avg_pool3d,
    "relax.isnan": _bits_test("isnan"),
    "relax.isinf": _bits_test("isinf"),
}
