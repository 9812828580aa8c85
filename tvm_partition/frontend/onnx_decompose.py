"""ONNX operators TVM's importer has no converter for, and ONNX defines no function of, written as
operators it converts, before it reads the graph.

TVM 0.27's Relax importer refuses ``DFT``, ``STFT``, ``LpNormalization``, ``ReverseSequence`` and
``CumProd`` (``OpNotImplemented``; ONNX's own test cases of them, ``benchmarks/onnx_node_cases.py``),
``Col2Im``, ``TensorScatter``, a ``MaxPool``'s second output, ``Indices`` ("Missing outputs
during conversion"), and a ``MaxUnpool``'s ``output_shape``;
:mod:`.onnx_functions` writes out only operators the standard defines as functions, and these it
does not. With the inputs' shapes bound (this tool builds static shapes only):

* ``DFT`` and ``STFT`` are linear maps of their input along one axis: a ``MatMul`` by a constant
  matrix. The matrix is the operator itself applied to the unit vectors by ONNX's reference
  implementation (``onnx.reference``), so every variant the standard has (complex or real input,
  ``onesided``, ``inverse``, a ``dft_length`` that pads or truncates, the inverse of a one-sided
  transform) means here what it means there; ``STFT``'s frames are one ``Gather`` of constant
  indices, a constant window folded into the matrix (a speech model's front end: frames of 400
  samples, 201 bins, a matrix of 400 x 402), one computed at run time multiplying the frames. A
  transform longer than :data:`MAX_MATRIX_ELEMENTS` allows is left to TVM's importer, which names
  it.
* ``LpNormalization`` divides by the norm along its axis (``ReduceSum`` of the absolute values or
  the squares, ``Sqrt``); a zero norm gives zeros, as ONNX's reference implementation does.
* ``ReverseSequence`` gathers along the time axis at ``len - 1 - t`` where ``t < len`` and ``t``
  elsewhere (``GatherElements``), its lengths read at run time.
* ``CumProd`` multiplies, for each position, the elements up to it: a ``ReduceProd`` over a
  triangular ``Where`` of its axis against itself (``n x n`` per row, :data:`MAX_SCAN` at most).
* ``MaxPool`` whose ``Indices`` are read (SegNet's and ENet's decoders unpool at them; PyTorch
  writes them for every ``MaxPool2d(return_indices=True)``, beside a 1x1 ``MaxPool`` whose indices
  it subtracts to make them per plane): the values stay TVM's pooling; the index is that of the
  first tap of the window (row-major) whose element equals the maximum, as ONNX's reference
  implementation and onnxruntime choose among equal maxima: each tap a strided ``Slice`` of the
  input (padded where windows reach past it), compared (``Equal``) and selected (``Where``) from
  the last tap back. Padding is never chosen (constant masks of the taps inside the input, so a
  window whose elements are all ``-inf`` points at its first); the index is into the unpadded
  input, ``(n * C + c) * H * W + h * W + w`` (``h + w * H`` for ``storage_order`` 1). A one-tap
  window's indices are constants. Windows of at most :data:`MAX_POOL_TAPS` taps, opset 11 on (a
  ``Slice``'s steps, ``Pad``'s inputs).
* ``MaxUnpool`` with an ``output_shape`` (TVM's converter fails on it: "'GenericConst' object has
  no attribute 'tolist'") is its input scattered at its indices (``ScatterElements``) into zeros of
  that shape, flattened: the indices are read as a ``MaxPool`` of an input of that shape wrote
  them, as onnxruntime and PyTorch's ``max_unpool2d(output_size=...)`` read them. ONNX's reference
  implementation (and so its one case of it) reads them in the shape the attributes infer and pads
  that to ``output_shape`` after: the two differ where the shapes do (its 2 x 2 unpooled into
  5 x 5).
* ``Col2Im`` (PyTorch's ``nn.Fold``, the inverse of an unfolding into patches: T2T-ViT's soft
  split, video inpainting's patch embeddings) sums each patch's columns back into the image. Each
  output element is the sum, over the kernel's taps, of the one column entry (if any) whose block
  covers it at that tap: a ``Gather`` of constant indices (one per tap and output element, a zero
  appended to each channel's columns for a tap no block covers there) and a ``ReduceSum`` over the
  taps, which TVM fuses; any ``strides``, ``dilations``, ``pads`` and number of spatial axes.
* ``TensorScatter`` (opset 24: a key-value cache updated in place by a decoder step, at a write
  index per batch, ``linear`` or ``circular``) is the cache where no update lands and the update
  where one does: a position's offset from its batch's write index (``Sub``; modulo the cache's
  length in ``circular`` mode) says whether it receives an element and which (``GatherElements`` of
  the offset clipped to the update, ``Where``), one element-wise pass over the cache, the write
  indices read at run time.

Each needs its attributes' inputs (``dft_length``, ``axis``, ``frame_step``, the window) as
constants, which :mod:`.onnx_fold` has made them where a graph computes them from shapes.
"""

from __future__ import annotations

import numpy as np

from .onnx_graph import Emitter, Lookup, attrs, input_name, rewrite_typed, same_pads

#: Largest DFT or STFT matrix written (elements): 16 M floats, 64 MB of weights.
MAX_MATRIX_ELEMENTS = 1 << 24
#: Longest axis a ``CumProd`` is written out along (its triangular mask is n x n per row).
MAX_SCAN = 1024

def decompose(proto, input_shapes: dict[str, list[int]]) -> int:
    """Replace, in place, every node of ``proto``'s main graph of the operators above that its
    inputs' static shapes and constant inputs allow (module docstring). Returns how many."""
    return rewrite_typed(proto, _WRITERS, "decomposed", input_shapes)


def _attr(node, name: str, default):
    return attrs(node).get(name, default)


# --- DFT and STFT: a MatMul by the transform applied to the unit vectors ----------------------

def _reference(node, x_shape: list[int], constants: dict, dtype, drop=()) -> tuple[np.ndarray, tuple]:
    """``node`` (its attributes, its constant inputs ``constants`` by position) run by ONNX's
    reference implementation on the unit vectors of a signal of shape ``x_shape`` (each along a
    new first axis): the transform's matrix, one row per unit vector."""
    import onnx
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    size = int(np.prod(x_shape))
    basis = np.eye(size, dtype=np.float64).reshape([size, *x_shape])
    names = ["x"] + [f"c{k}" if k in constants else "" for k in range(1, max(constants) + 1)]
    inits = [numpy_helper.from_array(np.asarray(v), f"c{k}") for k, v in constants.items()]
    one = helper.make_node(node.op_type, names, ["y"], **{k: v for k, v in attrs(node).items() if k not in drop})
    g = helper.make_graph([one], "t", [helper.make_tensor_value_info("x", onnx.TensorProto.DOUBLE, None)],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, None)], inits)
    opset = max(17, onnx.defs.get_schema(node.op_type).since_version)
    (y,) = ReferenceEvaluator(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])).run(None, {"x": basis})
    return y.reshape(size, -1).astype(dtype), tuple(y.shape[1:])


def _float(types: dict, name: str):
    """``(numpy float dtype, dims)`` of ``name`` where its type and shape are static; else None."""
    from onnx import helper

    if name not in types:
        return None
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(types[name][0]))
    return (dtype, list(types[name][1])) if dtype.kind == "f" else None


def _write_dft(node, emit: Emitter, types: dict, lookup: Lookup) -> bool:
    x = node.input[0]
    typed = _float(types, x)
    length = lookup.constant(input_name(node, 1))
    axis_in = lookup.constant(input_name(node, 2))
    if typed is None or length is False or axis_in is False or len(typed[1]) < 3:
        return False
    dtype, shape = typed
    rank = len(shape)
    axis = int(axis_in) if axis_in is not None else _attr(node, "axis", 1 if emit.opset < 20 else -2)
    axis %= rank
    if axis in (0, rank - 1):
        return False
    signal = [shape[axis], shape[-1]]
    if np.prod(signal) * max(int(length) if length is not None else 0, shape[axis]) * 2 > MAX_MATRIX_ELEMENTS:
        return False
    # the unit vectors' signal axis is 1, after their batch; given as opset 20 takes it, an input
    constants = {2: np.asarray(1, np.int64)}
    if length is not None:
        constants[1] = np.asarray(length, np.int64).reshape(())
    matrix, out = _reference(node, signal, constants, dtype, drop=("axis",))
    # the axis just before the components, flattened with them; the map; the axis back
    perm = [d for d in range(rank - 1) if d != axis] + [axis, rank - 1]
    moved = emit.op("Transpose", [x], perm=perm)
    rest = [shape[d] for d in perm[:-2]]
    flat = emit.reshape(moved, rest + [signal[0] * signal[1]])
    mapped = emit.op("MatMul", [flat, emit.weight(matrix, "dft")])
    unflat = emit.reshape(mapped, rest + list(out))
    emit.op("Transpose", [unflat], node.output[0], perm=list(np.argsort(perm)))
    return True


def _write_stft(node, emit: Emitter, types: dict, lookup: Lookup) -> bool:
    x = node.input[0]
    typed = _float(types, x)
    step, window, frame = (lookup.constant(input_name(node, k)) for k in (1, 2, 3))
    if typed is None or len(typed[1]) != 3 or step is None or step is False or frame is False:
        return False
    dtype, shape = typed
    step = int(np.asarray(step).reshape(()))
    computed = window is False  # a window computed at run time multiplies the frames, not the matrix
    length = types.get(input_name(node, 2), (0, ()))[1] if computed else np.shape(window)
    if frame is not None:
        frame = int(np.asarray(frame).reshape(()))
    elif window is not None:
        frame = int(length[0]) if len(length) == 1 else 0
    else:
        frame = shape[1]
    if window is not None and tuple(length) != (frame,):
        return False
    frames = 1 + (shape[1] - frame) // step
    if frames < 1 or frame * shape[2] * (frame + 2) * 2 > MAX_MATRIX_ELEMENTS:
        return False
    constants = {1: np.asarray(1, np.int64), 3: np.asarray(frame, np.int64)}
    if window is not None and not computed:
        constants[2] = window.astype(np.float64)
    matrix, out = _reference(node, [frame, shape[2]], constants, dtype)  # out: [1, bins, 2]
    starts = np.arange(frames)[:, None] * step + np.arange(frame)[None]
    framed = emit.op("Gather", [x, emit.ints(starts)], axis=1)  # [batch, frames, frame, components]
    if computed:
        framed = emit.op("Mul", [framed, emit.reshape(node.input[2], [frame, 1])])
    flat = emit.reshape(framed, [shape[0], frames, frame * shape[2]])
    mapped = emit.op("MatMul", [flat, emit.weight(matrix, "stft")])
    emit.reshape(mapped, [shape[0], frames, *out[1:]], node.output[0])
    return True


# --- LpNormalization, ReverseSequence, CumProd --------------------------------------------------

def _reduce(emit: Emitter, op: str, x: str, axis: int, keepdims: int = 1) -> str:
    """``op`` (a ``Reduce*``) over one axis: ``axes`` an input from opset 13 (``ReduceSum``) or 18
    (the others), an attribute before."""
    since = 13 if op == "ReduceSum" else 18
    if emit.opset < since:
        return emit.op(op, [x], axes=[axis], keepdims=keepdims)
    return emit.op(op, [x, emit.ints([axis])], keepdims=keepdims)


def _write_lp_normalization(node, emit: Emitter, types: dict, lookup: Lookup) -> bool:
    p, axis = _attr(node, "p", 2), _attr(node, "axis", -1)
    if p not in (1, 2):
        return False
    x = node.input[0]
    typed = _float(types, x)
    if typed is None:
        return False
    powered = emit.op("Abs", [x]) if p == 1 else emit.op("Mul", [x, x])
    norm = _reduce(emit, "ReduceSum", powered, axis)
    if p == 2:
        norm = emit.op("Sqrt", [norm])
    zero = emit.op("Equal", [norm, emit.weight(np.zeros((), typed[0]), "zero")])
    safe = emit.op("Where", [zero, emit.weight(np.ones((), typed[0]), "one"), norm])
    emit.op("Div", [x, safe], node.output[0])  # x is 0 wherever its norm is: 0 / 1
    return True


def _write_reverse_sequence(node, emit: Emitter, types: dict, lookup: Lookup) -> bool:
    x, lengths = node.input[0], node.input[1]
    if x not in types:
        return False
    shape = list(types[x][1])
    batch_axis, time_axis = _attr(node, "batch_axis", 1), _attr(node, "time_axis", 0)
    along = [1] * len(shape)
    along[time_axis] = shape[time_axis]
    steps = emit.ints(np.arange(shape[time_axis]).reshape(along))
    per_batch = [1] * len(shape)
    per_batch[batch_axis] = shape[batch_axis]
    n = emit.reshape(emit.op("Cast", [lengths], to=7), per_batch)  # int64
    reversed_ = emit.op("Sub", [emit.op("Sub", [n, emit.ints(1)]), steps])
    index = emit.op("Where", [emit.op("Less", [steps, n]), reversed_, steps])
    full = emit.op("Expand", [index, emit.ints(shape)])
    emit.op("GatherElements", [x, full], node.output[0], axis=time_axis)
    return True


def _write_cumprod(node, emit: Emitter, types: dict, lookup: Lookup) -> bool:
    x = node.input[0]
    axis = lookup.array(input_name(node, 1))  # None: omitted or computed
    if x not in types or axis is None:
        return False
    shape = list(types[x][1])
    axis = int(np.asarray(axis).reshape(())) % len(shape)
    n = shape[axis]
    if n > MAX_SCAN:
        return False
    i, j = np.arange(n)[:, None], np.arange(n)[None]
    reverse, exclusive = _attr(node, "reverse", 0), _attr(node, "exclusive", 0)
    keep = (j >= i if reverse else j <= i) & ((j != i) if exclusive else True)  # [output i, input j]
    perm = [d for d in range(len(shape)) if d != axis] + [axis]
    moved = emit.op("Transpose", [x], perm=perm)
    rows = emit.op("Unsqueeze", [moved, emit.ints([-2])]) if emit.opset >= 13 else emit.op("Unsqueeze", [moved], axes=[-2])
    one = emit.op("CastLike", [emit.weight(np.ones((), np.float32), "one"), x])
    masked = emit.op("Where", [emit.weight(keep, "mask"), rows, one])  # [..., n outputs, n inputs]
    products = _reduce(emit, "ReduceProd", masked, -1, keepdims=0)
    emit.op("Transpose", [products], node.output[0], perm=list(np.argsort(perm)))
    return True


#: Most taps a ``MaxPool``'s window may have for its indices to be written out (each a strided
#: slice, an ``Equal`` and a ``Where``).
MAX_POOL_TAPS = 64


def _write_max_pool_indices(node, emit: Emitter, types: dict, lookup: Lookup) -> bool:
    """A ``MaxPool`` whose ``Indices`` output is read: the values TVM's pooling, the indices the
    first tap equal to them (module docstring); False where they are not read, or a shape is not
    static, or the window has more than :data:`MAX_POOL_TAPS` taps."""
    if (len(node.output) < 2 or not node.output[1] or emit.opset < 11 or node.input[0] not in types
            or node.output[0] not in types):
        return False
    x, x_shape = node.input[0], types[node.input[0]][1]
    out_shape = types[node.output[0]][1]
    a = attrs(node)
    kernel = list(a["kernel_shape"])
    n_sp = len(kernel)
    if len(x_shape) != n_sp + 2 or np.prod(kernel) > MAX_POOL_TAPS:
        return False
    spatial, outs = list(x_shape[2:]), list(out_shape[2:])
    strides, dilations = list(a.get("strides", [1] * n_sp)), list(a.get("dilations", [1] * n_sp))
    begin = _pool_begin_pads(a, spatial, kernel, strides, dilations)
    values = emit.op("MaxPool", [x], node.output[0], **{k: v for k, v in a.items() if k != "storage_order"})
    # the input padded so every tap's strided slice lies within it (the padding is never chosen)
    ends = [max(0, (o - 1) * s + (k - 1) * d + 1 - b - n) for o, s, k, d, b, n in
            zip(outs, strides, kernel, dilations, begin, spatial)]
    padded = emit.op("Pad", [x, emit.ints([0, 0] + begin + [0, 0] + ends)]) if any(begin) or any(ends) else x
    if a.get("storage_order", 0):
        place = np.cumprod([1] + spatial[:-1])  # column-major: the first spatial axis varies fastest
    else:
        place = np.cumprod(([1] + spatial[::-1])[:-1])[::-1]
    taps = [(tap, inside.reshape([1, 1] + outs), (at @ place).astype(np.int64).reshape([1, 1] + outs))
            for tap, at, inside in _window_reads(outs, kernel, strides, begin, dilations, spatial)]
    # from the last tap back to the first, so the first tap equal to the maximum is the one kept;
    # one chain of element-wise ops, which TVM fuses into one kernel with the taps' slices (a chain
    # that also carried the running maximum shared its comparisons with the values' chain, and
    # TVM's fusion then left each slice, comparison and select a kernel of its own)
    index = emit.ints(np.where(taps[0][1], taps[0][2], 0))
    for tap, valid, flat in reversed(taps if len(taps) > 1 else []):  # one tap (PyTorch's 1x1): constants
        value = _tap(emit, padded, [t * d for t, d in zip(tap, dilations)], outs, strides)
        hit = emit.op("Equal", [value, values])
        if not valid.all():
            hit = emit.op("And", [hit, emit.constant(valid)])
        index = emit.op("Where", [hit, emit.ints(flat), index])
    planes = (np.arange(x_shape[0] * x_shape[1]) * int(np.prod(spatial))).reshape([x_shape[0], x_shape[1]] + [1] * n_sp)
    emit.op("Add", [index, emit.ints(planes)], node.output[1])
    return True


def _window_reads(counts, kernel, strides, begin, dilations, extent):
    """For each tap of a window placed ``counts`` times along each axis (by ``strides``, from
    ``-begin``; taps ``dilations`` apart): ``(tap, the coordinates it reads [placements, axes],
    placements in row-major order, whether each lies inside ``extent``)``."""
    starts = np.stack(np.unravel_index(np.arange(int(np.prod(counts))), counts), 1) * strides - np.asarray(begin)
    for tap in np.ndindex(*kernel):
        at = starts + np.asarray(tap) * dilations
        yield tap, at, np.all((at >= 0) & (at < extent), 1)


def _pool_begin_pads(a: dict, spatial, kernel, strides, dilations) -> list[int]:
    """The padding before each spatial axis, as the specification's ``auto_pad`` derives it."""
    auto = a.get("auto_pad", b"NOTSET").decode()
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        return same_pads(auto, spatial, kernel, strides, dilations)[:len(kernel)]
    if auto == "VALID":
        return [0] * len(kernel)
    return list(a.get("pads", [0] * 2 * len(kernel))[:len(kernel)])


def _tap(emit: Emitter, x: str, offset: list[int], outs: list[int], strides: list[int]) -> str:
    """The elements of ``x`` (padded) one tap of the window reads at every output position: a
    slice from ``offset`` by ``strides`` along the spatial axes."""
    n_sp = len(offset)
    ends = [f + (o - 1) * s + 1 for f, o, s in zip(offset, outs, strides)]
    axes = list(range(2, 2 + n_sp))
    return emit.op("Slice", [x, emit.ints(offset), emit.ints(ends), emit.ints(axes), emit.ints(strides)])


def _write_max_unpool(node, emit: Emitter, types: dict, lookup: Lookup) -> bool:
    """A ``MaxUnpool`` given its ``output_shape``: its input scattered at its indices into zeros of
    that shape, flattened (the indices are into the whole tensor); without one, TVM's converter."""
    from onnx import helper

    shape = lookup.array(input_name(node, 2))  # None: omitted or computed
    if shape is None or node.input[0] not in types:
        return False
    shape = [int(d) for d in np.asarray(shape).reshape(-1)]
    zeros = emit.op("ConstantOfShape", [emit.ints([int(np.prod(shape))])],
                    value=helper.make_tensor("zero", types[node.input[0]][0], [1], [0]))
    flat = emit.op("ScatterElements", [zeros, emit.reshape(node.input[1], [-1]), emit.reshape(node.input[0], [-1])], axis=0)
    emit.reshape(flat, shape, node.output[0])
    return True


#: Largest ``Col2Im`` written out: its constant indices (one per kernel tap and output element).
MAX_COL2IM_INDICES = 1 << 24


def _write_col2im(node, emit: Emitter, types: dict, lookup: Lookup) -> bool:
    """``Col2Im`` (module docstring): each output element the sum, over the kernel's taps, of the
    one column entry of that tap whose block covers it (a constant index per tap and element; a
    zero appended to each channel's columns for a tap whose blocks miss it)."""
    image, block = lookup.array(input_name(node, 1)), lookup.array(input_name(node, 2))
    if image is None or block is None or node.input[0] not in types:
        return False
    image, block = [int(d) for d in np.ravel(image)], [int(d) for d in np.ravel(block)]
    n, rows, length = types[node.input[0]][1]
    a, dims, taps = attrs(node), len(image), int(np.prod(block))
    dilations, strides = a.get("dilations", [1] * dims), a.get("strides", [1] * dims)
    pads = a.get("pads", [0] * 2 * dims)
    blocks = [(i + pads[k] + pads[k + dims] - d * (b - 1) - 1) // s + 1
              for k, (i, b, d, s) in enumerate(zip(image, block, dilations, strides))]
    if rows % taps or int(np.prod(blocks)) != length or taps * int(np.prod(image)) > MAX_COL2IM_INDICES:
        return False
    channels, pixels = rows // taps, int(np.prod(image))
    index = np.full((taps, pixels), taps * length, np.int64)  # the appended zero
    for j, (_, at, inside) in enumerate(_window_reads(blocks, block, strides, pads[:dims], dilations, image)):
        index[j, np.ravel_multi_index(at[inside].T, image)] = j * length + np.flatnonzero(inside)
    columns = emit.reshape(node.input[0], [n, channels, taps * length])
    padded = emit.op("Pad", [columns, emit.ints([0, 0, 0, 0, 0, 1])])
    picked = emit.reshape(emit.op("Gather", [padded, emit.ints(index.reshape(-1))], axis=2), [n, channels, taps, pixels])
    emit.reshape(_reduce(emit, "ReduceSum", picked, 2, keepdims=0), [n, channels, *image], node.output[0])
    return True


def _write_tensor_scatter(node, emit: Emitter, types: dict, lookup: Lookup) -> bool:
    """``TensorScatter`` (module docstring): each cache position takes the update's element it
    receives (``GatherElements`` of the clipped offset from the batch's write index), where one
    does, else keeps the past cache's (``Where``)."""
    cache, update = node.input[0], node.input[1]
    if cache not in types or update not in types:
        return False
    shape, a = list(types[cache][1]), attrs(node)
    axis = a.get("axis", -2) % len(shape)
    length = types[update][1][axis]
    if axis == 0 or length < 1:  # the first axis is the batch the write indices are of
        return False
    circular = a.get("mode", b"linear").decode() == "circular"
    places = np.arange(shape[axis], dtype=np.int64).reshape([1] * axis + [-1] + [1] * (len(shape) - axis - 1))
    offset = emit.ints(places)
    if input_name(node, 2):  # offset = place - write index of the batch
        starts = emit.reshape(node.input[2], [shape[0]] + [1] * (len(shape) - 1))
        offset = emit.op("Sub", [offset, starts])
    if circular:  # from the write index round the end of the cache and back to its start
        offset = emit.op("Mod", [emit.op("Add", [offset, emit.ints(shape[axis])]), emit.ints(shape[axis])])
        hit = emit.op("Less", [offset, emit.ints(length)])
    else:
        hit = emit.op("And", [emit.op("GreaterOrEqual", [offset, emit.ints(0)]), emit.op("Less", [offset, emit.ints(length)])])
    clipped = emit.op("Min", [emit.op("Max", [offset, emit.ints(0)]), emit.ints(length - 1)])
    picked = emit.op("GatherElements", [update, emit.op("Expand", [clipped, emit.ints(shape)])], axis=axis)
    emit.op("Where", [hit, picked, cache], node.output[0])
    return True


_WRITERS = {"DFT": _write_dft, "STFT": _write_stft, "LpNormalization": _write_lp_normalization,
            "ReverseSequence": _write_reverse_sequence, "CumProd": _write_cumprod, "MaxPool": _write_max_pool_indices,
            "MaxUnpool": _write_max_unpool, "Col2Im": _write_col2im, "TensorScatter": _write_tensor_scatter}
