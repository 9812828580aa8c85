"""Small helpers over Relax expressions shared by the frontend and the passes."""

from __future__ import annotations

import tvm
from tvm import relax

#: Relax constants (``relax.const``) are ``tvm.ir.expr.GenericConst`` objects in TVM 0.27.
Constant = tvm.ir.expr.GenericConst


def substitute(expr, fn):
    """``expr`` with every Var and Constant leaf ``x`` replaced by ``fn(x)``."""
    if isinstance(expr, relax.Var | Constant):
        return fn(expr)
    if isinstance(expr, relax.Call):
        return relax.Call(expr.op, [substitute(a, fn) for a in expr.args], expr.attrs, expr.ty_args)
    if isinstance(expr, relax.Tuple):
        return relax.Tuple([substitute(f, fn) for f in expr.fields])
    if isinstance(expr, relax.TupleGetItem):
        return relax.TupleGetItem(substitute(expr.tuple_value, fn), expr.index)
    return expr
