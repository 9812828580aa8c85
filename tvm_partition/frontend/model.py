"""The model every source yields (see :mod:`tvm_partition.frontend`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import tvm
from tvm import relax


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
        ty = self.mod["main"].ret_ty if hasattr(self.mod["main"], "ret_ty") else self.mod["main"].body.body.ty
        types = list(ty.fields) if isinstance(ty, relax.TupleType) else [ty]
        return [
            {"name": f"output{i}", "shape": [int(v) for v in t.shape.values], "dtype": str(t.dtype)}
            for i, t in enumerate(types)
        ]

    def input_info(self) -> list[dict]:
        return [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)} for k, v in self.inputs.items()]
