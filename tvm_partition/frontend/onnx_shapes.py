"""The static input shapes an ONNX model is compiled for: its free dimensions bound by the flags
that name them.

TVM builds a Relax VM for static shapes only (the templates and the cost model see whole
extents), so every free dimension (``dim_param``, or no value) of a graph input needs a number.
Exporters leave three kinds free, by position, and each has a flag the zoo models already take:

- dimension 0 of any input, the batch: ``--batch`` (1 when not given, said by
  :func:`tvm_partition.frontend.load_from_args`); ``--batch`` also replaces a static batch;
- dimension 1 of a 2-D or 3-D input, a sequence (``input_ids``, ``attention_mask``: Hugging Face
  exports ``[batch_size, sequence_length]``; a series ``[batch, time, features]``): ``--seq-len``;
- dimensions 2 and 3 of a 4-D input, an image's height and width (NCHW): ``--image-size``.

Before this, any free dimension but the batch was refused, so no Hugging Face text export loaded
at all (DistilBERT, BERT: ``sequence_length``, 2026-12-02).

By position cannot tell two free dimensions of one kind apart: a decoder step with a cache takes
``input_ids`` of ``[batch_size, sequence_length]`` (1 token), an ``attention_mask`` of
``[batch_size, total_sequence_length]`` and ``past_key_values.*`` of ``[batch_size, heads,
past_sequence_length, head_size]`` (GPT-2, Hugging Face's exports); a T5 or Whisper decoder, a
decoder and an encoder sequence. So ``--dim NAME=N`` binds a free dimension by its name
(``dim_param``), as onnxruntime does (``add_free_dimension_override_by_name``), before the
position rules; a name no input has is one error line listing the names there are.
"""

from __future__ import annotations

from ..errors import TvmPartitionError

FLAGS = {"batch": "--batch", "seq_len": "--seq-len", "image_size": "--image-size"}
WHAT = {"seq_len": "a free sequence (dimension 1 of a 2-D or 3-D input)",
        "image_size": "a free height or width (dimension 2 or 3 of a 4-D input)"}


class ShapeError(TvmPartitionError, ValueError):
    """A free dimension no flag binds, a binding flag missing, or one given that binds nothing."""


def data_inputs(graph) -> list:
    """The graph's inputs that are not initializers (older exporters list the weights as inputs too)."""
    inits = {i.name for i in graph.initializer}
    return [i for i in graph.input if i.name not in inits]


def option_of(rank: int, axis: int) -> str | None:
    """The model option (a key of :data:`FLAGS`) that binds dimension ``axis`` of an input of
    ``rank`` dimensions, or None."""
    if axis == 0:
        return "batch"
    if axis == 1 and rank in (2, 3):
        return "seq_len"
    if axis in (2, 3) and rank == 4:
        return "image_size"
    return None


def _dims(value_info) -> list[tuple[int | None, str]]:
    """``(size or None when free, its name)`` of each dimension of a graph input."""
    out = []
    for d in value_info.type.tensor_type.shape.dim:
        free = not (d.HasField("dim_value") and d.dim_value > 0)
        out.append((None if free else int(d.dim_value), d.dim_param or "?"))
    return out


def free_options(graph_inputs) -> tuple[str, ...]:
    """The options that bind some free dimension of these inputs, ``"batch"`` always (it also
    replaces a static batch), in :data:`FLAGS` order, then ``"dims"`` where a free dimension has a
    name: what a sweep over the model may vary, and which flags apply to it."""
    found = {"batch"}
    for gi in graph_inputs:
        dims = _dims(gi)
        found.update(option_of(len(dims), k) for k, (size, _) in enumerate(dims) if size is None)
    return tuple(k for k in FLAGS if k in found) + (("dims",) if free_names(graph_inputs) else ())


def free_names(graph_inputs) -> list[str]:
    """The names of the free dimensions of these inputs, each once, in order: what ``--dim`` binds."""
    names = [name for gi in graph_inputs for size, name in _dims(gi) if size is None and name != "?"]
    return list(dict.fromkeys(names))


def bind(graph_inputs, options: dict[str, int | None]) -> tuple[dict[str, list[int]], list[str]]:
    """``({input name: static shape}, [the free batches bound to 1 because --batch was not given])``.
    ``options["dims"]``: ``{name: size}``, free dimensions bound by name first (``--dim``).

    Raises :class:`ShapeError` for a free dimension no option binds, one whose option was not
    given (but the batch, which defaults to 1), and an option or a name given that binds no
    dimension."""
    named = _known(dict(options.get("dims") or {}), graph_inputs)
    shapes, defaulted, used = {}, [], set()
    for gi in graph_inputs:
        dims = _dims(gi)
        shape = []
        for k, (size, name) in enumerate(dims):
            if size is None and name in named:
                shape.append(int(named[name]))
                continue
            option = option_of(len(dims), k)
            value = options.get(option) if option else None
            if option == "batch" and value:  # --batch also replaces a static batch
                size = None
            if size is not None:
                shape.append(size)
                continue
            if option is None:
                raise ShapeError(f"input {gi.name!r} has a free dimension {k} ({name}) of {len(dims)}: "
                                 f"{_by_name(name)}the batch (dimension 0, --batch), a sequence (dimension 1 "
                                 "of a 2-D or 3-D input, --seq-len) and an image's height and width (dimensions "
                                 "2 and 3 of a 4-D input, --image-size) are bound by position")
            if value is None and option != "batch":
                raise ShapeError(f"input {gi.name!r} has a free dimension {k} ({name}): give {FLAGS[option]} N"
                                 + (f" or --dim {name}=N" if name != "?" else ""))
            if value is None:
                defaulted.append(f"{gi.name}[0] ({name})")
            used.add(option)
            shape.append(int(value or 1))
        shapes[gi.name] = shape
    unused = [o for o, v in options.items() if v is not None and o not in used and o not in ("batch", "dims")]
    if unused:
        raise ShapeError(f"{FLAGS[unused[0]]} binds {WHAT[unused[0]]}, and no input has one "
                         f"(inputs: {', '.join(f'{n} {_text(s)}' for n, s in shapes.items())})")
    return shapes, defaulted


def _known(named: dict[str, int], graph_inputs) -> dict[str, int]:
    """``named``, checked before anything else binds (a misspelt name, not the dimension it left
    free, is the error): :class:`ShapeError` for a name no input's free dimension has."""
    there = free_names(graph_inputs)
    unknown = [n for n in named if n not in there]
    if unknown:
        raise ShapeError(f"--dim {unknown[0]}: no input has a free dimension of that name ("
                         + (f"the free ones: {', '.join(there)})" if there else "none has a named free dimension)"))
    return named


def dims_text(dims: dict[str, int]) -> str:
    """``{name: size}`` as ``Model.config`` keeps it: ``NAME=N,...``, sorted by name."""
    return ",".join(f"{k}={v}" for k, v in sorted(dims.items()))


def dims_of(dims) -> dict[str, int]:
    """:func:`dims_text`'s text (or a ``{name: size}``, or None) as ``{name: size}``."""
    if isinstance(dims, str):
        return {k: int(v) for k, _, v in (item.rpartition("=") for item in dims.split(",") if item)}
    return dict(dims or {})


def _by_name(name: str) -> str:
    return f"give --dim {name}=N; " if name != "?" else "it has no name for --dim; "


def _text(shape) -> str:
    return "x".join(str(d) for d in shape) or "scalar"
