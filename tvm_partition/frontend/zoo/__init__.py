"""Built-in model zoo: the evaluation models of the EOP paper as Relax IRModules.

Every model is written with :mod:`tvm.relax.frontend.nn`, exported with ``export_tvm`` and
renamed so that the module holds exactly one Relax function, ``main``::

    main(<data inputs...>, <weights...>)      # attr num_input = number of data inputs

The weights are *parameters* of ``main`` (not constants), so one compiled module can be fed
with any weights; :attr:`ZooModel.params` holds seeded random values for them in the order of
``main``'s parameters.

Models (see the submodules for the architecture details and defaults):

* ``lstm``, ``gru`` -- :mod:`tvm_partition.frontend.zoo.rnn`; options: batch, seq_len, layers
* ``bert``, ``bert-tiny`` -- :mod:`tvm_partition.frontend.zoo.bert`; options: batch, seq_len, layers
* ``mobilenetv2``, ``resnet18``, ``resnet50``, ``inception_v3`` -- :mod:`tvm_partition.frontend.zoo.cnn`;
  options: batch, image_size

Op vocabulary.  A graph-rewriting pass downstream splits operators, so every model only uses
operators that produce a single tensor: ``matmul``, ``nn.conv2d`` (NCHW/OIHW, depthwise via
``groups``), ``add``, ``subtract``, ``multiply``, ``divide``, ``tanh``, ``sigmoid``,
``nn.relu``, ``clip`` (ReLU6), ``nn.gelu``, ``nn.softmax``, ``nn.layer_norm``, ``nn.max_pool2d``,
``nn.avg_pool2d``, ``mean``, ``reshape``, ``permute_dims``, ``concat``, ``take`` and
``strided_slice`` (see :data:`OPS` and :func:`relax_ops`).  No tuple-valued operators
(split/chunk), no ``call_tir``/``call_dps_packed`` (tensor_expr_op, tensor_ir_op, extern).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence

import numpy as np
import tvm
from tvm import relax
from tvm.relax.frontend import nn

from ..model import Model
from ...flags import ZOO_MODELS
from ...inputs import draw_weights

__all__ = ["NAMES", "OPS", "ZooModel", "build", "options", "relax_ops"]

#: The command line lists them without importing TVM (``flags.ZOO_MODELS``): one tuple, held to the
#: registry below.
NAMES = ZOO_MODELS

#: Every Relax operator that may appear in a zoo model's ``main``.
OPS = frozenset(
    "relax." + op
    for op in (
        "matmul",
        "nn.conv2d",
        "add",
        "subtract",
        "multiply",
        "divide",
        "tanh",
        "sigmoid",
        "nn.relu",
        "clip",  # relu6 is emitted as clip(x, 0, 6)
        "nn.gelu",
        "nn.softmax",
        "nn.layer_norm",
        "nn.max_pool2d",
        "nn.avg_pool2d",
        "mean",
        "reshape",
        "permute_dims",
        "concat",
        "take",
        "strided_slice",
    )
)

# name -> (submodule, builder function, options that apply)
_REGISTRY: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "lstm": ("rnn", "build_lstm", ("batch", "seq_len", "layers")),
    "gru": ("rnn", "build_gru", ("batch", "seq_len", "layers")),
    "bert": ("bert", "build_bert", ("batch", "seq_len", "layers")),
    "bert-tiny": ("bert", "build_bert_tiny", ("batch", "seq_len", "layers")),
    "mobilenetv2": ("cnn", "build_mobilenetv2", ("batch", "image_size")),
    "resnet18": ("cnn", "build_resnet18", ("batch", "image_size")),
    "resnet50": ("cnn", "build_resnet50", ("batch", "image_size")),
    "inception_v3": ("cnn", "build_inception_v3", ("batch", "image_size")),
}
assert tuple(_REGISTRY) == NAMES


#: Zoo models are plain :class:`tvm_partition.frontend.model.Model` objects.
ZooModel = Model


def build(
    name: str,
    *,
    batch: int | None = None,
    seq_len: int | None = None,
    layers: int | None = None,
    image_size: int | None = None,
    seed: int = 0,
) -> ZooModel:
    """Build zoo model ``name`` (one of :data:`NAMES`).

    ``None`` keeps a model's default.  Weights depend only on ``seed`` and the architecture
    (``layers``), not on ``batch``/``seq_len``/``image_size``; inputs are drawn from a separate
    seeded stream.

    Raises
    ------
    ValueError
        Unknown ``name`` (the message lists the known names); an override that does not apply
        to the model, e.g. ``seq_len`` for ``resnet18`` (the message lists the options that
        apply); an override that is not a positive int or is out of the model's range.
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown zoo model {name!r}; known models: {', '.join(NAMES)}")
    submodule, builder, applicable = _REGISTRY[name]
    given = {
        key: value
        for key, value in (
            ("batch", batch),
            ("seq_len", seq_len),
            ("layers", layers),
            ("image_size", image_size),
        )
        if value is not None
    }
    bad = [key for key in given if key not in applicable]
    if bad:
        raise ValueError(
            f"option(s) {', '.join(bad)} do not apply to zoo model {name!r}; "
            f"options that apply: {', '.join(applicable)}"
        )
    for key, value in given.items():
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{key} must be a positive int, got {value!r}")
        given[key] = int(value)
    module = importlib.import_module(f".{submodule}", __name__)
    return getattr(module, builder)(name, seed=int(seed), **given)


def options(name: str) -> tuple[str, ...]:
    """The options (of batch, seq_len, layers, image_size) that apply to zoo model ``name``."""
    return _REGISTRY[name][2]


def relax_ops(mod: tvm.IRModule | relax.Function) -> set[str]:
    """Names of the Relax operators called in ``mod["main"]`` (or in a function)."""
    func = mod["main"] if isinstance(mod, tvm.IRModule) else mod
    names: set[str] = set()

    def visit(expr):
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            names.add(expr.op.name)

    relax.analysis.post_order_visit(func.body, visit)
    return names


# --------------------------------------------------------------------------------------------
# Helpers shared by the model files (private to the zoo).
# --------------------------------------------------------------------------------------------


def param(shape: Sequence[int], *, std: float, mean: float = 0.0) -> nn.Parameter:
    """A float32 parameter initialised as ``mean + std * N(0, 1)`` by :func:`export_model`."""
    p = nn.Parameter(list(shape), dtype="float32")
    p.attrs["zoo_init"] = (float(mean), float(std))
    return p


def weight(shape: Sequence[int], fan_in: int, gain: float = 1.0) -> nn.Parameter:
    """A weight with std ``gain / sqrt(fan_in)`` (activations keep their scale)."""
    return param(shape, std=gain / math.sqrt(fan_in))


def bias(size: int, std: float = 0.02) -> nn.Parameter:
    """A small random bias vector."""
    return param([size], std=std)


def slice_axis(x: nn.Tensor, axis: int, begin: int, end: int, name: str = "slice") -> nn.Tensor:
    """``x[..., begin:end, ...]`` along ``axis`` as one ``relax.strided_slice``."""
    return nn.op.wrap_nested(
        relax.op.strided_slice(x._expr, axes=[axis], begin=[begin], end=[end]), name=name
    )


class Dense(nn.Module):
    """``y = x @ W + b`` with ``W`` stored as ``[in_features, out_features]``.

    Storing the weight pre-transposed keeps ``main`` free of weight ``permute_dims``:
    the layer is exactly one ``relax.matmul`` plus one ``relax.add``.
    """

    def __init__(self, in_features: int, out_features: int, gain: float = 1.0):
        self.weight = weight([in_features, out_features], fan_in=in_features, gain=gain)
        self.bias = bias(out_features)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return nn.op.add(nn.op.matmul(x, self.weight), self.bias)


def export_model(
    name: str,
    model: nn.Module,
    input_specs: dict[str, tuple[Sequence[int], str]],
    make_inputs: Callable[[np.random.Generator], dict[str, np.ndarray]],
    config: dict,
    seed: int,
) -> ZooModel:
    """Export ``model.forward`` as ``main`` and draw its weights and example inputs.

    ``input_specs`` maps each data input name to ``(shape, dtype)``; ``make_inputs`` draws
    example inputs with the same names/shapes/dtypes from the generator it is given.
    Weights come from ``seed``'s first child stream (:func:`tvm_partition.inputs.draw_weights`, whose
    recipe the model keeps as ``weights``), inputs from its second.
    """
    spec = {key: nn.spec.Tensor(list(shape), dtype) for key, (shape, dtype) in input_specs.items()}
    exported, named_params = model.export_tvm(spec={"forward": spec})
    mod = _rename_to_main(exported)
    main = mod["main"]

    num_input = int(main.attrs["num_input"])
    input_names = [v.name for v in main.params[:num_input]]
    param_names = [v.name for v in main.params[num_input:]]
    assert input_names == list(input_specs), (input_names, list(input_specs))
    assert param_names == [n for n, _ in named_params], "weight order mismatch"

    assert all(p.dtype == "float32" for _, p in named_params), "zoo weights are float32"
    recipe = {"seed": int(seed), "specs": [[[int(d) for d in p.shape], *map(float, p.attrs["zoo_init"])]
                                           for _, p in named_params]}
    params = draw_weights(recipe)
    _, input_ss = np.random.SeedSequence(seed).spawn(2)
    inputs = make_inputs(np.random.default_rng(input_ss))
    assert list(inputs) == input_names
    for key, (shape, dtype) in input_specs.items():
        assert inputs[key].shape == tuple(shape) and inputs[key].dtype == np.dtype(dtype), key
    return ZooModel(name=name, mod=mod, params=params, inputs=inputs, config=dict(config), weights=recipe)


def _rename_to_main(mod: tvm.IRModule) -> tvm.IRModule:
    """Return a module whose only function is ``mod["forward"]`` renamed to ``main``."""
    names = [gv.name_hint for gv in mod.get_global_vars()]
    assert names == ["forward"], names
    func = mod["forward"].with_attr("global_symbol", "main")
    return tvm.IRModule({"main": func}, attrs=mod.attrs, global_infos=mod.global_infos)
