"""Model sources: ONNX files (operators TVM's importer lacks and ONNX defines as functions written
out, :mod:`.onnx_functions`, their small constant computations evaluated, :mod:`.onnx_fold`, their
loops of a known trip count written out, :mod:`.onnx_loop`, and their LSTM, GRU and RNN nodes
unrolled, :mod:`.onnx_rnn`, before TVM's importer reads them),
PyTorch exported programs, Relax IRModules and the built-in zoo.

Every source yields a :class:`Model`: a Relax module whose ``main`` takes the data inputs first
(``num_input`` of them) and the weights after, the weights as numpy arrays, and seeded example
inputs. Constants are lifted into weights, so every tensor a device needs reaches it through
``main_transform_params`` once at load time; a batch norm after a convolution is folded into its
weights, any other decomposed for inference, dropout removed, grouped convolutions of wide
groups taken apart and output channels padded to whole vectors (:mod:`.inference`).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import tvm
from tvm import relax

from . import zoo
from ..devices import meminfo_bytes
from ..errors import TvmPartitionError
from ..inputs import random_input
from .model import Model
from . import onnx_shapes
from .onnx_fold import fold_constants
from .onnx_pads import empty_pads_as_identity, pads_into_convs, same_pads_explicit
from .onnx_functions import inline_unconverted_functions
from .onnx_graph import Lookup, index_bounds
from .onnx_quant import QuantError, quantized_as_float
from .onnx_loop import unroll_loops
from .onnx_branches import data_branches, inline_constant_branches, select_branches
from .onnx_decompose import decompose
from .onnx_resize import ResizeError, resize
from .onnx_spec import conform
from .onnx_rnn import RecurrentError, unroll_recurrent
from ..ir.relax_utils import Constant, compile_time_constants, rebuilt
from .conv3d import conv3d_as_conv2d
from .conv_sums import merge_conv_sums
from .dead_taps import drop_dead_taps
from .einsum import einsum_as_matmul, einsums_as_matmuls
from .extrema import extrema_as_operators
from .matmul_rows import flatten_matmul_rows
from .inference import (clip_takes, conv1d_as_conv2d, fold_batch_norms, pad_matmuls, pad_output_channels, remove_dropout,
                        roots_for_powers, ungroup_convolutions)


class ModelError(TvmPartitionError, ValueError):
    """The model cannot be loaded; the message names the file or name and what is wrong."""


def check_source(source: str) -> None:
    """Raise :class:`ModelError` unless ``source`` is a zoo name or an existing ``.onnx`` file: what a
    command checks of every model it is given before it starts long work on the first."""
    if source in zoo.NAMES or (source.endswith(".onnx") and os.path.exists(source)):
        return
    if source.endswith(".onnx"):
        raise ModelError(f"{source}: no such file")
    if os.path.exists(source):
        raise ModelError(f"{source}: not an .onnx file (give an ONNX model or a zoo name)")
    raise ModelError(f"unknown model {source!r}: give an .onnx file or one of {', '.join(zoo.NAMES)}")


def load(source, *, batch: int | None = None, seq_len: int | None = None, layers: int | None = None,
         image_size: int | None = None, dims: dict[str, int] | None = None, seed: int = 0, params=None,
         inputs=None) -> Model:
    """Load a model from a zoo name, an ``.onnx`` path, an IRModule or a torch ExportedProgram.
    ``dims``: an ONNX model's free dimensions bound by name (``--dim``, :mod:`.onnx_shapes`), a
    ``{name: size}`` or its text ``NAME=N,...``."""
    if isinstance(source, tvm.IRModule):
        model = _from_irmodule(source, params, inputs, seed)
    elif isinstance(source, str | os.PathLike) and str(source).endswith(".onnx"):
        if layers is not None:
            raise ModelError(f"{source}: --layers applies to the zoo's lstm, gru and bert only")
        model = _from_onnx(str(source), {"batch": batch, "seq_len": seq_len, "image_size": image_size,
                                         "dims": onnx_shapes.dims_of(dims)}, seed)
    elif isinstance(source, str) and source in zoo.NAMES:
        if dims:
            raise ModelError(f"{source}: --dim binds an ONNX model's free dimensions by name; a zoo model has none")
        try:
            model = zoo.build(source, batch=batch, seq_len=seq_len, layers=layers, image_size=image_size, seed=seed)
        except ValueError as e:
            raise ModelError(str(e)) from None
    elif isinstance(source, str):
        check_source(source)
    elif type(source).__name__ == "ExportedProgram":
        model = _from_torch(source, seed)
    else:
        raise ModelError(f"cannot load a model from {type(source).__name__}")
    return normalize(model)


#: The settings a model is loaded at (the keyword arguments of :func:`load`, the flags of
#: :func:`tvm_partition.flags.add_model_args`, the keys of ``Model.config`` that say them); all
#: integers but ``dims``, ``{name: size}`` or that as ``Model.config`` keeps it, ``NAME=N,...``.
MODEL_OPTIONS = ("batch", "seq_len", "layers", "image_size", "dims")


def model_options(source: str) -> tuple[str, ...]:
    """The options of :data:`MODEL_OPTIONS` that apply to a zoo name or an ``.onnx`` file (those
    that bind a free dimension of its inputs, :mod:`.onnx_shapes`, and the batch)."""
    return model_shapes(source)[0]


def model_shapes(source: str) -> tuple[tuple[str, ...], list[str]]:
    """``(`` :func:`model_options` ``, the names of the file's free input dimensions)`` (what
    ``--dim`` binds; none for a zoo name or an unreadable file), from one read of the file: an
    export of GPT-2 is 500 MB of protobuf to parse."""
    if source in zoo.NAMES:
        return zoo.options(source), []
    inputs = _onnx_inputs(source)
    if inputs is None:
        return ("batch",), []
    return onnx_shapes.free_options(inputs), onnx_shapes.free_names(inputs)


def _onnx_inputs(source: str) -> list | None:
    import onnx

    try:
        graph = onnx.load(source, load_external_data=False).graph
    except Exception:  # unreadable: load() says why when the model's turn comes
        return None
    return onnx_shapes.data_inputs(graph)


def load_from_args(source, args, seed: int = 0) -> Model:
    """:func:`load` with the flags of :func:`tvm_partition.flags.add_model_args`; says on stderr when a free ONNX batch
    was bound to 1 because ``--batch`` was not given (the artifact then serves batch 1 only)."""
    model = load(source, seed=seed, **{k: getattr(args, k, None) for k in MODEL_OPTIONS})
    unbound = model.config.get("batch_defaulted")
    if unbound:  # a decoder with a cache has 26 such inputs (GPT-2): name 3
        more = f" and {len(unbound) - 3} more" if len(unbound) > 3 else ""
        print(f"note: {model.name}: free batch {', '.join(unbound[:3])}{more} bound to 1; "
              "give --batch N for another batch size", file=sys.stderr)
    return model


def _from_irmodule(mod, params, inputs, seed) -> Model:
    mod = _inline_calls(mod)
    funcs = [gv.name_hint for gv, f in mod.functions_items() if isinstance(f, relax.Function)]
    if "main" not in funcs:
        if len(funcs) != 1:
            raise ModelError(f"IRModule has relax functions {funcs}: name the model's entry 'main'")
        mod = _rename_main(mod, funcs[0])
    main = mod["main"]
    num_input = int(main.attrs["num_input"]) if main.attrs and "num_input" in main.attrs else len(main.params)
    rng = np.random.default_rng(seed)
    if params is None:
        params = [random_input(_static_shape(p), p.ty.dtype, rng) for p in main.params[num_input:]]
    params = [np.asarray(p.numpy() if hasattr(p, "numpy") else p) for p in params]
    if inputs is None:
        inputs = {p.name: random_input(_static_shape(p), p.ty.dtype, rng) for p in main.params[:num_input]}
    return Model("irmodule", mod, params, dict(inputs))


def _inline_calls(mod):
    """``mod`` with every Relax function another one calls inlined into its callers (TVM's
    ``InlinePrivateFunctions``, each callee made private first). Why: the graph, the planners and
    the build see one function, ``main``. A module of Relax's ``nn.SubroutineMixin`` (a function a
    layer, called from ``forward``) was refused for its several functions, and one whose ``main``
    called a subroutine stopped in the graph's fusion walk with a ``NameError`` (2026-12-03). A
    function that calls itself, directly or not, cannot be inlined: :class:`ModelError`."""
    import networkx as nx

    calls = nx.DiGraph()
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            calls.add_node(gv)
            relax.analysis.post_order_visit(func.body, lambda e, gv=gv: _add_call(calls, mod, gv, e))
    called = {gv for gv in calls if calls.in_degree(gv)}
    if not called:
        return mod
    cycle = next(nx.simple_cycles(calls), None)
    if cycle is not None:
        through = "".join(f" through {gv.name_hint!r}" for gv in cycle[1:])
        raise ModelError(f"relax function {cycle[0].name_hint!r} calls itself{through}: a model is one "
                         "function, and a recursive one cannot be inlined into it")
    out = tvm.IRModule({gv: f.without_attr("global_symbol") if gv in called else f for gv, f in mod.functions_items()},
                       attrs=mod.attrs, global_infos=mod.global_infos)
    return relax.transform.InlinePrivateFunctions()(out)


def _add_call(calls, mod, caller, expr) -> None:
    """An edge of ``calls`` where ``expr`` calls a Relax function of ``mod``."""
    if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.GlobalVar) and isinstance(mod[expr.op], relax.Function):
        calls.add_edge(caller, expr.op)


def _rename_main(mod, name):
    out = tvm.IRModule({}, attrs=mod.attrs, global_infos=mod.global_infos)
    for gv, f in mod.functions_items():
        if gv.name_hint == name:
            out["main"] = f.with_attr("global_symbol", "main")
        else:
            out[gv] = f
    return out


def _static_shape(var) -> list[int]:
    try:
        return [int(v) for v in var.ty.shape.values]
    except (TypeError, ValueError, AttributeError):
        raise ModelError(f"input {var.name!r} has a dynamic shape {var.ty}: give a static shape (e.g. --batch)") from None


def _pairwise_sums(proto) -> None:
    """Rewrite every ONNX ``Sum`` as a chain of ``Add`` (the same multidirectional broadcasting).
    TVM's importer stacks a Sum's inputs and reduces the stack: a copy and a reduction kernel,
    left on TVM's default schedule, where an add fuses into the producer's kernel. ResNet-50 of the
    onnx package adds its residuals with Sum: 16 such kernels, 7 ms of a 196 ms CPU build
    (``run --kernels``, 2026-11-23)."""
    import onnx

    nodes = []
    for node in proto.graph.node:
        if node.op_type != "Sum" or len(node.input) < 2:
            nodes.append(node)
            continue
        acc = node.input[0]
        for i, term in enumerate(node.input[1:], 1):
            out = node.output[0] if i == len(node.input) - 1 else f"{node.output[0]}__sum{i}"
            nodes.append(onnx.helper.make_node("Add", [acc, term], [out], name=f"{node.name}__add{i}"))
            acc = out
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux ``MemAvailable``); None where unknown."""
    return meminfo_bytes("MemAvailable")


def _from_onnx(path: str, shapes: dict[str, int | None], seed: int) -> Model:
    """``shapes``: the options of :data:`onnx_shapes.FLAGS` that bind the graph's free dimensions."""
    import onnx
    from tvm.relax.frontend import detach_params
    from tvm.relax.frontend.onnx import from_onnx

    if not os.path.exists(path):
        raise ModelError(f"{path}: no such file")
    size, free = os.path.getsize(path), available_memory()
    if free is not None and size > free:
        # onnx.load alone holds the whole file; past the available memory the kernel's OOM killer
        # ends the process without a word, so refuse it here with the numbers
        raise ModelError(f"{path}: the model ({size / 2**30:.1f} GiB) does not fit in this machine's "
                         f"available memory ({free / 2**30:.1f} GiB)")
    try:
        proto = onnx.load(path)
    except Exception as e:  # onnx raises DecodeError and friends
        raise ModelError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    graph_inputs = onnx_shapes.data_inputs(proto.graph)
    if not graph_inputs:
        raise ModelError(f"{path}: the graph has no input that is not an initializer")
    # Older exporters also list initializers as graph inputs; TVM's importer then adds those
    # weights twice to main's signature. Keep only the real inputs.
    del proto.graph.input[:]
    proto.graph.input.extend(graph_inputs)
    _pairwise_sums(proto)
    try:
        shape_dict, unbound = onnx_shapes.bind(graph_inputs, shapes)
    except onnx_shapes.ShapeError as e:
        raise ModelError(f"{path}: {e}") from None
    dtype_dict = {gi.name: onnx.helper.tensor_dtype_to_np_dtype(gi.type.tensor_type.elem_type).name
                  for gi in graph_inputs}
    inline_unconverted_functions(proto)
    try:
        quantized_as_float(proto)
    except QuantError as e:
        raise ModelError(f"{path}: {e}") from None
    fold_constants(proto, shape_dict)
    empty_pads_as_identity(proto)
    same_pads_explicit(proto, shape_dict)
    pads_into_convs(proto)
    inline_constant_branches(proto, shape_dict)
    decompose(proto, shape_dict)
    conform(proto, shape_dict)
    unroll_loops(proto, shape_dict)
    select_branches(proto, shape_dict)
    lookup = Lookup.of(proto.graph)
    if all(lookup.array(o.name) is not None for o in proto.graph.output):
        # TVM's LiftTransformParams drops a weight main returns with no computation on the inputs
        # beside it, and the VM's code generator then stops at "Var gv is not defined"
        raise ModelError(f"{path}: every output is a constant once the inputs' shapes are bound "
                         "(a Shape or Size of an input, a constant): nothing to compile")
    left = data_branches(proto)
    if left:
        raise ModelError(f"{path}: If {left[0]!r} branches on the data to outputs of different "
                         "shapes (the model's shapes depend on its data): not supported")
    try:
        resize(proto, shape_dict)
    except ResizeError as e:
        raise ModelError(f"{path}: {e}") from None
    einsums_as_matmuls(proto, shape_dict)
    try:
        unroll_recurrent(proto, shape_dict)
    except RecurrentError as e:
        raise ModelError(f"{path}: {e}") from None
    try:
        mod = from_onnx(proto, shape_dict=shape_dict, dtype_dict=dtype_dict, keep_params_in_input=True)
    except Exception as e:  # the importer raises many types for unsupported ops
        raise ModelError(f"{path}: TVM's ONNX importer failed: {type(e).__name__}: {e}") from None
    mod, pdict = detach_params(mod)
    params = [p.numpy() for p in pdict.get("main", [])]
    main = mod["main"]
    num_input = int(main.attrs["num_input"]) if main.attrs and "num_input" in main.attrs else len(graph_inputs)
    rng = np.random.default_rng(seed)
    # keyed by the graph's own input names, which a user's input file carries: TVM's importer
    # renames some ("input.1", PyTorch's default, is main's parameter input_1) and keeps their order
    data = main.params[:num_input]
    names = [gi.name for gi in graph_inputs] if len(graph_inputs) == len(data) else [p.name for p in data]
    bounds = index_bounds(proto.graph)  # token ids over their embedding's rows, not 0 and 1
    inputs = {n: random_input(_static_shape(p), p.ty.dtype, rng, bounds.get(n, 2)) for n, p in zip(names, data)}
    name = os.path.splitext(os.path.basename(path))[0]
    if name == "model":  # model zoos ship <name>/model.onnx
        name = os.path.basename(os.path.dirname(os.path.abspath(path))) or name
    first = shape_dict[graph_inputs[0].name]
    config = {"source": path, "batch": first[0] if first else 1,  # a scalar first input: no batch
              **{k: v for k, v in shapes.items() if k not in ("batch", "dims") and v}}
    if shapes.get("dims"):  # as text, like every other setting in a key or a table: NAME=N,...
        config["dims"] = onnx_shapes.dims_text(shapes["dims"])
    if unbound:  # a free batch nobody bound: 1, said by load_from_args
        config["batch_defaulted"] = unbound
    return Model(name, mod, params, inputs, config)


def _from_torch(ep, seed) -> Model:
    from tvm.relax.frontend import detach_params
    from tvm.relax.frontend.torch import from_exported_program

    mod = from_exported_program(ep, keep_params_as_input=True)
    mod, pdict = detach_params(mod)
    params = [p.numpy() for p in pdict.get("main", [])]
    model = _from_irmodule(mod, params, None, seed)
    model.name = "torch"
    return model


def normalize(model: Model) -> Model:
    """Inference form: one-dimensional convolutions as two-dimensional ones of one row,
    three-dimensional ones as two-dimensional ones over their frames (:mod:`.conv3d`), einsums
    that are batched matrix products as matmuls (:mod:`.einsum`), batch
    norms after convolutions folded into their weights, the others
    decomposed, dropout removed, grouped convolutions of wide groups one per group, window taps that
    read only padding dropped and dilated ones that read little of the map cut into bands
    (:mod:`.dead_taps`), output channels
    of convolutions padded to whole vectors, channels-last matmuls over a map as one matrix of rows
    (:mod:`.matmul_rows`), matmuls' rows and columns to whole register tiles and vectors, powers of whole quarters as roots,
    takes that clamp their indices (:mod:`.inference`), ``Clip``'s kernels as the operators they are
    (:mod:`.extrema`,
    which sees one-element weights as constants: :func:`bind_scalar_weights`), constants lifted
    into weights, static shapes only."""
    model.mod, model.params = bind_scalar_weights(model.mod, model.params)
    inputs = len(model.mod["main"].params) - len(model.params)
    mod = tvm.transform.Sequential(
        [
            extrema_as_operators,
            conv1d_as_conv2d,  # first (but the extrema): what follows knows conv2d only
            conv3d_as_conv2d,
            einsum_as_matmul,  # before the matmul passes: they see its matmuls
            fold_batch_norms,
            merge_conv_sums(inputs),  # after: a branch's batch norm is its bias; before: an input's is one op
            relax.transform.DecomposeOpsForInference(),
            remove_dropout,
            ungroup_convolutions,
            drop_dead_taps,
            pad_output_channels,
            flatten_matmul_rows,
            pad_matmuls,
            roots_for_powers,
            clip_takes,
            relax.transform.CanonicalizeBindings(),
            relax.transform.DeadCodeElimination(["main"]),
        ]
    )(model.mod)
    mod, extra = lift_constants(mod)
    model.mod = mod
    model.params = list(model.params) + extra
    main = mod["main"]
    for p in main.params:
        if isinstance(p.ty, relax.TensorType):
            _static_shape(p)
    num_input = int(main.attrs["num_input"]) if main.attrs and "num_input" in main.attrs else len(model.inputs)
    if len(main.params) - num_input != len(model.params):
        raise ModelError(f"model {model.name}: main takes {len(main.params) - num_input} weights, got {len(model.params)}")
    return model


def bind_scalar_weights(mod: tvm.IRModule, params: list, func_name: str = "main") -> tuple[tvm.IRModule, list]:
    """``main`` with its one-element weights bound as constants, and the other weights: a rewrite
    reads a constant's value (an ONNX ``Pow``'s exponent is an initializer, a weight of ``main``);
    :func:`lift_constants` makes weights again of those still there after the rewrites."""
    func = mod[func_name]
    weights = list(func.params)[len(func.params) - len(params):]
    bound = {w: tvm.runtime.tensor(np.asarray(v)) for w, v in zip(weights, params) if np.size(v) == 1}
    if not bound:
        return mod, list(params)
    mod = relax.transform.BindParams(func_name, bound)(mod)
    return mod, [v for w, v in zip(weights, params) if w not in bound]


def lift_constants(mod: tvm.IRModule, func_name: str = "main"):
    """Turn every tensor constant of ``main`` into a trailing weight parameter, but those an op
    reads at compile time (:func:`~tvm_partition.ir.relax_utils.compile_time_constants`).

    A constant has no device: a GPU kernel reading it would read host memory. As a weight it is
    copied to its device once by ``main_transform_params``.
    """
    func = mod[func_name]
    consts: list = []
    index: dict = {}
    kept = compile_time_constants(func)

    def visit(e):
        if isinstance(e, Constant) and e not in index and e not in kept:
            index[e] = len(consts)
            consts.append(e)

    relax.analysis.post_order_visit(func.body, visit)
    if not consts:
        return mod, []
    new_params = [relax.Var(f"const{i}", c.ty) for i, c in enumerate(consts)]
    new = rebuilt(mod, func_name, params=list(func.params) + new_params,
                  outer=lambda e: new_params[index[e]] if isinstance(e, Constant) and e in index else e)
    return new, [c.value.numpy() for c in consts]

