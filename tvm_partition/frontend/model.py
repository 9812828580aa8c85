"""The model every source yields (see :mod:`tvm_partition.frontend`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import tvm
from tvm import relax

from ..ir.relax_utils import tensor_dims


@dataclasses.dataclass
class Model:
    """A loaded model: ``main`` (data inputs first, ``num_input`` of them, then weights), the
    weights in that order, seeded example inputs keyed by input name, and its settings."""

    name: str
    mod: tvm.IRModule
    params: list[np.ndarray]
    inputs: dict[str, np.ndarray]
    config: dict = dataclasses.field(default_factory=dict)
    #: how the first weights were drawn (a zoo model: :func:`tvm_partition.inputs.draw_weights`'s
    #: recipe); None where they were read or made otherwise
    weights: dict | None = None

    @property
    def input_names(self) -> list[str]:
        return list(self.inputs)

    def output_info(self) -> list[dict]:
        """Name, shape and dtype of each output; a dimension known only at run time (the count a
        ``NonZero`` finds) is None."""
        ty = self.mod["main"].body.body.ty  # the result's own type: main's declared one drops such dimensions
        types = list(ty.fields) if isinstance(ty, relax.TupleType) else [ty]
        return [{"name": f"output{i}", "shape": _dims(t), "dtype": str(t.dtype)} for i, t in enumerate(types)]

    def input_info(self) -> list[dict]:
        return [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)} for k, v in self.inputs.items()]


def _dims(ty) -> list[int | None]:
    """The dimensions of a tensor type, None for each one known only at run time."""
    dims = tensor_dims(ty)
    return [None] * ty.ndim if dims is None else dims
