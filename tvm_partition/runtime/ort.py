"""onnxruntime's CPU session of an .onnx model, and how a build's outputs are compared with a
reference's.

Two oracles use it: ``compile --check`` (an .onnx model's build against onnxruntime's outputs,
beside TVM's own unpartitioned build, which shares TVM's importer and our frontend's rewrites with
the build: onnxruntime reads the file itself) and the ``onnxruntime`` rows of ``bench``
(:mod:`tvm_partition.bench.ort`, whose outputs are checked against TVM's before they are timed).
It sits in the runtime half because benchmark bundles carry that half to machines with no
compiler. onnxruntime is the ``test`` extra's; it is imported only where a session is made.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..errors import TvmPartitionError
from ..inputs import graph_input_names

#: Outputs may differ by this much relative to the reference's largest output (at least 1): two
#: runtimes sum in different orders (seeded light ResNet-50 and DenseNet-121,
#: benchmarks/onnx_light.py: 3e-6 and 1.5e-5 of outputs up to 18), and a different model (weights,
#: inputs, an op read differently) is off by far more.
RTOL = 1e-4

#: A quantized model rounds to its integers at every quantize: where two builds sum a value in
#: different orders and it lands by a rounding's midpoint, one rounds up, the other down, and the
#: step moves what follows. The light ResNet-50 quantized by onnxruntime (QOperator form): 0.6% of its
#: 1,000 outputs beyond RTOL, by up to 6% of their range, between TVM's default schedules and the
#: templates, as between either and onnxruntime (benchmarks/quantized.py, 2026-12-05). Such a model
#: agrees where at most FLIPPED_SHARE of the elements lie beyond the tolerance and none by more
#: than FLIPPED_RANGE of its output's largest value; a wrong scale or axis moves most of them.
FLIPPED_SHARE, FLIPPED_RANGE = 0.02, 0.1

#: Where a quantized model quantizes its activations dynamically (a scale from each tensor's own
#: minimum and maximum) a flip moves a whole tensor's grid, and the flips cascade: DistilBERT quantized
#: by onnxruntime's ``quantize_dynamic`` differs in 96-97% of its outputs, by up to 1.2% of their
#: range, between onnxruntime with its graph optimizations and without (their fused GELU and attention
#: sum in other orders), and our build about as much from either: mean differences 0.0077 between
#: onnxruntime's two, 0.0092 from TVM's unpartitioned build, 0.0077 from onnxruntime (``compile
#: --check``'s seeded inputs, token ids over the vocabulary; on ids of 0 and 1: 0.0059, 0.0079 and
#: 0.010; 2026-12-05). Quantized statically, flips cascade too: a value lands within float32's
#: rounding of a step's midpoint (a GELU's ``erf + 1`` adds two nearly equal scales: 96.5000043 steps,
#: which onnxruntime's ``QLinearAdd`` rounds to 96 and TVM to 97), one element moves, and the matmuls
#: after it spread the move. The QOperator DistilBERT: mean differences 0.013 between TVM's builds,
#: 0.029 from onnxruntime, which runs the same integer kernels with its graph optimizations and
#: without; with its scales moved (:func:`nudged`), 0.031-0.034 from itself (2026-12-06).
#: Such a model agrees where its mean difference is within SPREAD_FACTOR of onnxruntime's own
#: (:func:`spread`: its outputs without its graph optimizations, or with its scales a few units in the
#: last place off, :func:`nudged`) and none further than FLIPPED_RANGE of the range. Our build sums
#: in other orders than onnxruntime at more ops than its two runs differ by: DistilBERT 1.0-1.7x, a
#: stack of 24 dynamically quantized matmuls and GELUs 1.55x (12 of them: 1.03x;
#: tests/test_onnx_quant.py), hence 3; a wrong scale or zero point moves every element by a step or
#: more. ``compile --check`` holds each pair of its three evaluations to the third pair's distance
#: too (:func:`tvm_partition.cli.compile.with_distance`: on a Zen 2 onnxruntime's two runs agree to
#: 1.6e-7 on that stack, and it lies 0.00021 from TVM's build). Where flips cascade, a fault smaller
#: than that spread cannot be told from them by the outputs.
SPREAD_FACTOR = 3.0

#: A float model's outputs may also differ from the reference by up to NOISE_FACTOR times
#: onnxruntime's own difference between its outputs with its graph optimizations and without
#: (:func:`own_difference`: its fused kernels sum in other orders), where that is more than
#: :data:`RTOL` allows: in a deep network of large outputs two valid float32 evaluations lie further
#: apart than RTOL. Hugging Face RegNet (RegNet-Y-4GF's config, seeded weights, outputs up to 7.9,
#: tolerance 7.9e-4; ``benchmarks/hf_models.py``, 2 Zen 3 threads, 2026-12-07): onnxruntime's two
#: evaluations 6.9e-4 apart, each 5.7-5.9e-4 from the model evaluated in float64 (PyTorch, the same
#: weights), our build 8.4e-4 from float64 and 1.0e-3 from onnxruntime (mean differences 5.8e-5 and
#: 8.2e-5 from float64); ``compile --check`` had failed it. A model whose two evaluations agree to
#: the last bits keeps RTOL alone, and a wrong rewrite (a split's seam, an op read otherwise) is off
#: by a share of the outputs' range, far beyond either. The factor is the quantized models' (our
#: build sums in other orders at more ops than onnxruntime's two runs differ by: 1.5x on RegNet).
NOISE_FACTOR = SPREAD_FACTOR


class OrtError(TvmPartitionError, ValueError):
    """onnxruntime cannot run the model here; the message says why and what to do."""


def source(model) -> str | None:
    """The .onnx file a frontend model was loaded from (None for a zoo model or an IRModule)."""
    path = (getattr(model, "config", None) or {}).get("source")
    return path if isinstance(path, str) and path.endswith(".onnx") else None


def feeds(model) -> dict[str, np.ndarray]:
    """``model``'s inputs under its .onnx file's graph input names, in the graph's order (TVM may
    rename an input, e.g. "0")."""
    path = source(model)
    if path is None:
        raise OrtError(f"{model.name}: onnxruntime runs .onnx models only (this is a zoo model)")
    names = graph_input_names(path)
    if len(names) != len(model.inputs):
        raise OrtError(f"{path}: {len(names)} graph inputs, but the frontend made {len(model.inputs)}")
    return dict(zip(names, model.inputs.values()))


#: onnxruntime's session option that rewrites its products of unsigned by signed bytes as products
#: of unsigned bytes where the CPU (x86 without VNNI) sums them pairwise in int16 with saturation
#: (``vpmaddubsw``) and the weights leave [-64, 63] (one of its graph optimizations: off with them).
#: Why: on such a CPU (a Zen 2, AVX2) a stack of 24 matmul + GELU blocks quantized by
#: ``quantize_dynamic`` came out 0.030 from TVM's unpartitioned build on average, 99% of its outputs
#: beyond the tolerance; with the option 0.00021, as far as the flips of dynamic quantization take
#: two correct evaluations (``reduce_range`` weights without it: 0.0013; 2026-12-07).
PRECISE_BYTES = ("session.x64quantprecision", "1")


def session(model: str | bytes, num_threads: int, optimized: bool = True, precise: bool = True):
    """onnxruntime's CPU session of an .onnx file or a serialized model, with our CPU build's thread
    count (its graph optimizations off where not ``optimized``; its byte products as they saturate
    on x86 CPUs without VNNI where not ``precise``, :data:`PRECISE_BYTES`, and where that option
    leaves a graph it cannot load: onnxruntime 1.32 rewrites a ``QLinearMatMul`` of int8 inputs
    into one it has no kernel for)."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise OrtError("onnxruntime is not installed here: pip install onnxruntime") from None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(num_threads)
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
                                     else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    opts.log_severity_level = 3
    if precise:
        opts.add_session_config_entry(*PRECISE_BYTES)
    try:
        return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime's own error types; keep the message
        if precise and optimized:
            return session(model, num_threads, optimized, precise=False)
        raise OrtError(f"onnxruntime cannot load {_name(model)}: {_first_line(e)}") from None


def outputs(model, num_threads: int, optimized: bool = True, proto: bytes | None = None,
            precise: bool = True) -> list[np.ndarray]:
    """onnxruntime's outputs of ``model``'s .onnx file (or of ``proto``, a model serialized in its
    place) on ``model.inputs`` (its graph optimizations off where not ``optimized``, and
    :data:`PRECISE_BYTES` where not ``precise``); :class:`OrtError` where there is no file, no
    onnxruntime, or onnxruntime cannot load or run it."""
    inputs = feeds(model)
    sess = session(source(model) if proto is None else proto, num_threads, optimized, precise)
    try:
        return [np.asarray(o) for o in sess.run(None, inputs)]
    except Exception as e:  # noqa: BLE001 - onnxruntime's own error types; keep the message
        raise OrtError(f"onnxruntime cannot run {source(model)}: {_first_line(e)}") from None


def spread(model, num_threads: int) -> float | None:
    """onnxruntime's own spread on ``model``: the largest mean difference of its outputs from other
    evaluations of the model, each as valid (see :data:`SPREAD_FACTOR`): without its graph
    optimizations, and with its scales a few units in the last place off (:func:`nudged`, each of
    :data:`NUDGES`); None where onnxruntime cannot run it or they do not pair up. Without its graph
    optimizations it has no :data:`PRECISE_BYTES` either: where that option changes its outputs (its
    byte products saturate on this CPU) that run is no valid evaluation, and is left out."""
    try:
        ref = outputs(model, num_threads)
        saturated = any(not np.array_equal(a, b) for a, b in zip(outputs(model, num_threads, precise=False), ref))
        others = [] if saturated else [outputs(model, num_threads, optimized=False)]
        read = _read(source(model))  # once: DistilBERT's file is 66 MB, and each nudge copies it
        others += [outputs(model, num_threads, proto=nudged(read, ulps, sign)) for ulps, sign in NUDGES]
    except OrtError:
        return None
    spreads = [mean_abs_err(o, ref) for o in others]
    return None if None in spreads else max(spreads)


def own_difference(model, num_threads: int) -> float | None:
    """onnxruntime's own float noise on ``model``: the largest difference between its outputs with
    its graph optimizations and without (:data:`NOISE_FACTOR`); None where
    onnxruntime cannot run it or they do not pair up."""
    try:
        err = max_abs_err(outputs(model, num_threads), outputs(model, num_threads, optimized=False))[0]
    except OrtError:
        return None
    return err if np.isfinite(err) else None


#: The float inputs of these operators (com.microsoft's integer operators) are all scales.
_SCALED = ("QLinear", "QGemm")

#: :func:`nudged`'s moves, in units in the last place and the first scale's direction: as far as two
#: evaluations' roundings of a few products and sums differ (a QLinearAdd of 44.5000089 steps: TVM
#: rounds it to 45, our build to 44, 2.3 units apart; onnxruntime's precomputed ratio of scales
#: rounds 96.5000043 to 96). Which moves flip a model's few values that close to a midpoint is
#: chance: a stack of 24 statically quantized GELU blocks moved 4e-8 (its float sums' own
#: differences) by 1 unit either way, 0.0011 by 2 one way, 0.0021 by 4, as far as our build is
#: from onnxruntime (0.0017); the QOperator DistilBERT 0.031-0.034 by every move (2026-12-06).
NUDGES = tuple((ulps, sign) for ulps in (1, 2, 4) for sign in (1, -1))


def nudged(model, ulps: int = 1, sign: int = 1) -> bytes:
    """``model`` (an onnx ``ModelProto``, left as it is) with every quantization scale it holds
    ``ulps`` units in the last place off, up and down in turn (by name, from up where ``sign`` is 1: two scales of one rounding move
    apart, as two evaluations' float32 roundings of one product do) and the input of every quantize
    whose float32 scale it holds as far the other way: the model's meaning within float32's
    rounding, whose roundings flip where a value lies that close to a step's midpoint. A dynamic
    quantize, whose scale is computed, stays (moving all of a tensor moves its scale: a stack of 24
    dynamically quantized GELU blocks 0.012 by 2 units, 14x our build's difference; their spread
    without graph optimizations, 0.00057, is 0.65x it). :class:`OrtError` where it cannot be
    written again (a model over 2 GB)."""
    import onnx
    from onnx import numpy_helper

    proto = onnx.ModelProto()
    proto.CopyFrom(model)
    graph = proto.graph
    inits = {t.name: t for t in graph.initializer}
    moved = {}
    for k, name in enumerate(sorted({name for node in graph.node for name in _scale_inputs(node)} & set(inits))):
        value = numpy_helper.to_array(inits[name])
        if np.issubdtype(value.dtype, np.floating):
            moved[name] = sign if k % 2 == 0 else -sign
            for _ in range(ulps):
                value = np.nextafter(value, np.array(moved[name] * np.inf, value.dtype))
            inits[name].CopyFrom(numpy_helper.from_array(value, name))
    nodes = []
    for k, node in enumerate(graph.node):
        if node.op_type == "QuantizeLinear" and _float32(inits, node.input[1]):
            way = -moved.get(node.input[1], -sign)
            by = numpy_helper.from_array(np.array(1 + way * ulps * np.finfo(np.float32).eps, np.float32))
            nodes += [onnx.helper.make_node("Constant", [], [f"nudged_{k}_by"], value=by),
                      onnx.helper.make_node("Mul", [node.input[0], f"nudged_{k}_by"], [f"nudged_{k}"])]
            node.input[0] = f"nudged_{k}"
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    try:
        return proto.SerializeToString()
    except ValueError as e:
        raise OrtError(f"cannot serialize {graph.name or 'the model'} again: {_first_line(e)}") from None


def _read(path: str):
    """The onnx ``ModelProto`` at ``path``; :class:`OrtError` where onnx cannot read it."""
    import onnx

    try:
        return onnx.load(path)
    except Exception as e:  # noqa: BLE001 - onnx's own error types; keep the message
        raise OrtError(f"cannot read {path}: {_first_line(e)}") from None


def _float32(inits: dict, name: str) -> bool:
    """Whether ``name`` is a float32 initializer (a quantize's scale is of its input's type)."""
    return name in inits and inits[name].data_type == 1  # onnx.TensorProto.FLOAT


def _scale_inputs(node) -> list[str]:
    """The inputs of ``node`` that may be quantization scales."""
    if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
        return list(node.input[1:2])
    return list(node.input) if node.domain == "com.microsoft" and node.op_type.startswith(_SCALED) else []


def _name(model: str | bytes) -> str:
    return model if isinstance(model, str) else "the nudged model"


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [""])[0]


def tolerance(ref: list[np.ndarray]) -> float:
    """:data:`RTOL` of the reference's largest output (at least 1)."""
    return RTOL * max([float(np.max(np.abs(r))) for r in ref if r.size] + [1.0])


def max_abs_err(outs: list[np.ndarray], ref: list[np.ndarray]) -> tuple[float, float]:
    """``(largest |out - ref|, tolerance of ref)`` over the outputs; inf where they do not pair up
    and where any difference is not a number (a NaN never passes)."""
    if len(outs) != len(ref) or any(np.shape(o) != np.shape(r) for o, r in zip(outs, ref)):
        return float("inf"), tolerance(ref)
    err = max([float(np.max(np.abs(np.asarray(o, np.float64) - r))) for o, r in zip(outs, ref) if r.size] + [0.0])
    return (err if np.isfinite(err) else float("inf")), tolerance(ref)


def mean_abs_err(outs: list[np.ndarray], ref: list[np.ndarray]) -> float | None:
    """The mean ``|out - ref|`` over every output element; None where they do not pair up."""
    if len(outs) != len(ref) or any(np.shape(o) != np.shape(r) for o, r in zip(outs, ref)):
        return None
    total = sum(float(np.sum(np.abs(np.asarray(o, np.float64) - r))) for o, r in zip(outs, ref))
    return total / max(sum(int(np.size(r)) for r in ref), 1)


def flipped_share(outs: list[np.ndarray], ref: list[np.ndarray], tol: float) -> float | None:
    """The share of output elements further than ``tol`` from ``ref``, where none is further than
    :data:`FLIPPED_RANGE` of its output's largest value; None where one is (or they do not pair)."""
    if len(outs) != len(ref) or any(np.shape(o) != np.shape(r) for o, r in zip(outs, ref)):
        return None
    beyond = total = 0
    for o, r in zip(outs, ref):
        d = np.abs(np.asarray(o, np.float64) - r)
        if d.size and not d.max() <= FLIPPED_RANGE * float(np.max(np.abs(r))):
            return None
        beyond, total = beyond + int(np.sum(d > tol)), total + d.size
    return beyond / max(total, 1)


@dataclasses.dataclass(frozen=True)
class Agreement:
    """A build's outputs against a reference's: the largest difference, the tolerance, and for a
    quantized model beyond it, the share of elements beyond it (None: one is far beyond, or the
    model is not quantized), their mean difference and onnxruntime's own (:func:`spread`; None
    where not measured)."""

    err: float
    tol: float
    share: float | None = None
    mean: float | None = None
    spread: float | None = None
    noise: float | None = None  # a float model's: onnxruntime's own difference (:func:`own_difference`)

    @property
    def ok(self) -> bool:
        return self.err <= self.tol or self.within_noise or (
            self.share is not None and (self.share <= FLIPPED_SHARE or self.within_spread))

    @property
    def within_noise(self) -> bool:
        """Whether a float model's difference is within :data:`NOISE_FACTOR` of onnxruntime's own."""
        return self.noise is not None and self.err <= NOISE_FACTOR * self.noise

    @property
    def within_spread(self) -> bool:
        """Whether the mean difference is within :data:`SPREAD_FACTOR` of onnxruntime's own."""
        return self.spread is not None and self.mean is not None and self.mean <= SPREAD_FACTOR * self.spread

    def note(self) -> str | None:
        """What a quantized model's flipped roundings came to, where some did; for a float model
        beyond the tolerance, onnxruntime's own difference it was held to."""
        if self.err <= self.tol:
            return None
        if self.noise is not None:
            return (f"noise_onnxruntime={self.noise:.3g} (beyond the tolerance, {self.tol:.3g}: a float model held "
                    f"to {NOISE_FACTOR:g}x onnxruntime's own difference between its outputs with its graph "
                    f"optimizations and without)")
        if self.share is None:
            return None
        flips = (f"beyond_tolerance={self.share:.2%} of the elements (a quantized model: roundings that flip "
                 f"where sums differ in order; at most {FLIPPED_SHARE:.0%}, each within {FLIPPED_RANGE:.0%} of the range")
        if self.share <= FLIPPED_SHARE or self.spread is None:
            return flips + ")"
        return (f"{flips}, or a mean difference within {SPREAD_FACTOR:g}x onnxruntime's with its graph optimizations "
                f"and without, or with its scales a few units in the last place off, or (--check) the third pair's "
                f"distance: mean_abs_err={self.mean:.3g}, "
                f"spread_onnxruntime={self.spread:.3g})")


def agreement(outs: list[np.ndarray], ref: list[np.ndarray], quantized: bool,
              spread: float | Callable[[], float | None] | None = None,
              noise: float | Callable[[], float | None] | None = None) -> Agreement:
    """:class:`Agreement` of ``outs`` with ``ref``; a ``quantized`` model's flips counted, and its
    mean difference set against onnxruntime's own ``spread`` where given: a value, or a function
    measuring it (:func:`spread`: two onnxruntime runs), called only where more than
    :data:`FLIPPED_SHARE` of the elements flipped; a float model beyond the tolerance held to
    onnxruntime's own ``noise`` where given (a value, or a function measuring it:
    :func:`own_difference`, called only there)."""
    err, tol = max_abs_err(outs, ref)
    if err <= tol:
        return Agreement(err, tol)
    if not quantized:
        return Agreement(err, tol, noise=noise() if callable(noise) else noise)
    share = flipped_share(outs, ref, tol)
    if callable(spread):
        spread = spread() if share is not None and share > FLIPPED_SHARE else None
    return Agreement(err, tol, share, mean_abs_err(outs, ref), spread)
