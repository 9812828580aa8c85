"""OpGraph: the DAG of the kernels TVM really launches, i.e. operator groups after TVM's own fusion.

The partition unit is TVM's fused group, so a split never breaks TVM's fusion. The graph is
read from the model's high-level Relax ``main``: TVM's ``LegalizeOps`` + ``AnnotateTIROpPattern``
+ ``FuseOps`` (the first steps of the ``zero`` pipeline) run on a copy, and every fused kernel is
mapped back to the high-level bindings it came from. Those bindings are what
:mod:`tvm_partition.passes` re-emits per device, with split rules from
:mod:`tvm_partition.ir.split_rules`.

Bindings that depend only on weights and constants (e.g. the transpose of a Linear weight) are
*static*: TVM's ``LiftTransformParams`` runs them once at load time, so they are not ops here.
Bindings that launch no kernel (tuple access, aliases) are *glue*. Sorts and scans (``sort``,
``argsort``, ``topk``, ``cumsum``) are legalized only by the build's ``DispatchSortScan``, which
picks their kernels by the device of their operand: here they are glue too, unpriced, and run on
the device their operand is on.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import math
from collections import defaultdict

import networkx as nx
import tvm
import tvm_ffi
from tvm import relax

from ..errors import TvmPartitionError
from .legalize import legalize_ops
from .relax_utils import ByStructure, Constant, rebuilt, static_tensor, tensor_dims
from .split_rules import (IllegalSplit, MisalignedCut, Region, is_tensor, shape_of, sliced_block, split_call,
                          tensor_operands, view_offset)

_ANCHOR_RANK = {
    "conv2d": 4, "conv1d": 4, "conv3d": 4, "conv2d_transpose": 4, "matmul": 4,
    "max_pool2d": 3, "avg_pool2d": 3, "adaptive_avg_pool2d": 3, "softmax": 3, "log_softmax": 3,
    "layer_norm": 3, "rms_norm": 3, "group_norm": 3, "sum": 3, "mean": 3, "max": 3, "min": 3,
    "concat": 2, "take": 2, "strided_slice": 2, "split": 2,
}
_VIEW_KINDS = {"reshape", "expand_dims", "squeeze", "flatten"}
#: Kinds of op that compute (convolutions, matmuls, pooling, normalisations, reductions): a kernel
#: whatever TVM or the passes make of the model, never a view (what moves data may become one).
COMPUTE_KINDS = frozenset(k for k, rank in _ANCHOR_RANK.items() if rank >= 3)
#: Kinds of op that read a part of an operand: an embedding lookup reads its rows, not the 15.6 MB
#: table BERT-tiny's ``take`` counts in its bytes.
GATHERS = frozenset({"take", "strided_slice"})


def make_op_id(index: int, fused_name: str, limit: int = 48) -> str:
    """``<index>_<TVM's fused name>``; names over ``limit`` characters (TVM joins every operator of
    a group) are cut and end with a short hash of the full name, so ids stay stable and unique."""
    if len(fused_name) > limit:
        digest = hashlib.sha1(fused_name.encode()).hexdigest()[:6]
        fused_name = f"{fused_name[: limit - 7]}_{digest}"
    return f"{index:03d}_{fused_name}"


def op_signature(op: "Op") -> str:
    """A stable name for an op's computation at its full shapes, the key of its samples
    (:attr:`Op.signature`).

    Two ops with the same fused kernel name, shapes, dtypes and FLOPs (an LSTM's repeated steps)
    share it, so their samples are shared too."""
    return op.signature


def graph_signature(graph) -> str:
    """A stable name for a whole graph's computation: the multiset of its kernels' op signatures
    (views launch nothing). The sequence-10 and sequence-100 LSTMs share every gate matmul's
    signature and differ here (86 kernels against 896), which is what the cost model keys a
    model's in-model factor by (:class:`tvm_partition.cost_models.profiled.Context`)."""
    sigs = sorted(op_signature(op) for op in graph.ops.values() if not op.is_view)
    return f"graph-{hashlib.sha1(chr(10).join(sigs).encode()).hexdigest()[:12]}"


class GraphError(TvmPartitionError, ValueError):
    """The module cannot be analysed (dynamic shapes, impure calls...); the message says why."""


@dataclasses.dataclass
class Op:
    """One fused kernel."""

    id: str
    kind: str  # the anchor operator, e.g. "matmul", "conv2d", "softmax"
    fused_name: str  # TVM's fused function (or PrimFunc) name
    members: list[int]  # indices of the high-level bindings of main it computes, in order
    inputs: list  # relax exprs the group reads (vars of other groups, params, constants)
    outputs: list  # member vars read outside the group or returned
    input_shapes: list[tuple[int, ...]]
    input_dtypes: list[str]
    output_shapes: list[tuple[int, ...]]
    output_dtypes: list[str]
    flops: float
    bytes: float
    split_dims: dict[int, str] = dataclasses.field(default_factory=dict)  # legal axis -> name
    refusals: dict[int, str] = dataclasses.field(default_factory=dict)  # axis -> reason
    granules: dict[int, int] = dataclasses.field(default_factory=dict)

    @property
    def primary(self):
        return self.outputs[-1]

    @functools.cached_property
    def signature(self) -> str:
        """:func:`op_signature`, made once: planning the README's LSTM (896 ops) asked for it 34,773
        times, 2 of its 15 s in ``repr`` of the shapes (2026-11-29)."""
        text = "|".join([self.kind, self.fused_name, repr(self.input_shapes), repr(self.input_dtypes),
                         repr(self.output_shapes), repr(self.output_dtypes), f"{self.flops:.0f}"])
        return f"{self.kind}-{hashlib.sha1(text.encode()).hexdigest()[:12]}"

    @property
    def is_view(self) -> bool:
        """A reshape-only group: TVM turns it into a view, no kernel runs."""
        return self.kind in _VIEW_KINDS

    def summary(self) -> dict:
        return {
            "id": self.id, "kind": self.kind, "fused": self.fused_name,
            "inputs": [list(s) for s in self.input_shapes], "outputs": [list(s) for s in self.output_shapes],
            "flops": self.flops, "bytes": self.bytes,
            "split_dims": {str(k): v for k, v in self.split_dims.items()},
        }


def _bindings(func: relax.Function) -> list:
    out = []
    for block in func.body.blocks:
        out.extend(block.bindings)
    return out


#: The name every high-level binding takes (with its index) in the copy :meth:`OpGraph._fuse_afresh`
#: legalizes.
_OWNER_PREFIX = "tvmp_binding"


def _legalized_owners(legal: list, count: int) -> list[int]:
    """The high-level binding (of ``count``, named ``_OWNER_PREFIX`` and their index) each legalized
    binding of ``main`` comes from. ``LegalizeOps`` emits a binding's legalization in its place: the
    bindings it adds come first (named as TVM names them), and the last keeps the high-level
    binding's name (an ONNX ``NonMaxSuppression``: the suppression, then the kernels and the
    ``match_cast`` that cut its rows to those it kept)."""
    owner, i = [], 0
    for b in legal:
        if i == count:
            break
        owner.append(i)
        if b.var.name == f"{_OWNER_PREFIX}{i}":
            i += 1
    if i != count or len(owner) != len(legal):
        raise GraphError("LegalizeOps changed the binding structure of main; cannot map fused kernels back")
    return owner


def _static_type(ty) -> bool:
    """Whether every tensor of ``ty`` has a shape of known integers."""
    if isinstance(ty, relax.TupleType):
        return all(_static_type(f) for f in ty.fields)
    return static_tensor(ty) if isinstance(ty, relax.TensorType) else True


def _merged(groups: list[tuple[str, list[int]]]) -> list[tuple[str, list[int]]]:
    """``groups`` with those that share a member joined, in the first one's place and name: a
    binding whose legalization FuseOps put in several kernels is one op."""
    out: list[tuple[str, list[int]]] = []
    home: dict[int, int] = {}
    for name, members in groups:
        hit = sorted({home[m] for m in members if m in home})
        if not hit:
            k = len(out)
            out.append((name, list(members)))
        else:
            k = hit[0]
            for other in reversed(hit[1:]):  # joined transitively
                out[k][1].extend(out[other][1])
                out[other] = (out[other][0], [])
            out[k][1].extend(members)
        for m in out[k][1]:
            home[m] = k
    return [(name, sorted(set(members))) for name, members in out if members]


def _first_field_shape(var) -> tuple[int, ...]:
    """Shape of a tensor var, or of the first field of a tuple var (R.split's parts)."""
    ty = var.ty
    while isinstance(ty, relax.TupleType):
        ty = ty.fields[0]
    return shape_of(relax.Var("_", ty))


def _op_name(value) -> str | None:
    if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op):
        return value.op.name.removeprefix("relax.").removeprefix("nn.")
    return None


def _dtype_bytes(dtype: str) -> int:
    return max(1, tvm.runtime.DataType(dtype).bits // 8)


#: The size an op's description gives a dimension known only at run time (a ``NonZero``'s count):
#: what the cost models price and the summaries show. Such ops run whole on a CPU
#: (:attr:`OpGraph.cpu_only`): no plan cuts them or moves them, whatever they are priced.
RUN_TIME_DIM = 1


def nominal_shape(expr) -> tuple[int, ...]:
    """The shape of a tensor-typed expr, each dimension known only at run time as
    :data:`RUN_TIME_DIM`."""
    dims = tensor_dims(expr.ty)
    if dims is None:
        return shape_of(expr)  # refuses it, naming it
    return tuple(RUN_TIME_DIM if d is None else d for d in dims)


def tensor_bytes(expr) -> int:
    """Bytes of a tensor-typed expr, or of every tensor of a tuple-typed one (ONNX's Dropout
    returns one: ApplyPlan copies it field by field)."""
    ty = expr.ty
    if isinstance(ty, relax.TupleType):
        return sum(tensor_bytes(relax.Var("_", f)) for f in ty.fields)
    return math.prod(nominal_shape(expr)) * _dtype_bytes(ty.dtype)


#: A product of bytes (:mod:`tvm_partition.build.vnni`) is priced as a float matmul of a third of
#: its multiply-adds: the VNNI template ran DistilBERT's matmul shapes 3.0-3.6x quicker than the
#: float one (``benchmarks/vnni_matmul.py``; ``vpdpbusd`` sums four byte products a lane where an FMA
#: sums one). Why: the cost model, which has seen float kernels only, priced DistilBERT's integer
#: build at 41.0 ms, measured 18.7 (a quarter of the work: 14.8; 2026-12-06, rocketlake-2c).
BYTE_PRODUCTS = 3
#: The same on AMX's tiles (:mod:`tvm_partition.build.amx`), a matmul whose extents are whole tiles
#: of the module's :data:`BYTE_TILES`: a sixth. Why: in DistilBERT's builds (``run --kernels``,
#: sequence 128) the float matmuls ran 5.3-9.6x the time of the AMX ones, 6.4x in all (43.2 ms
#: against 6.8); at VNNI's third the cost model priced the AMX builds of DistilBERT, BERT-base and
#: GPT-2 62-74% over their medians, at a sixth 12-16% (BENCHMARKS.md, "Byte matmuls priced by the
#: tiles they run in"; 2026-12-06, rocketlake-2c).
TILED_BYTE_PRODUCTS = 6
#: The IRModule attribute naming the tile (rows, columns, reduction) byte matmuls are summed in on
#: every device of the build (:func:`tvm_partition.frontend.integer_matmul.integer_matmuls` sets
#: it where they all have AMX); absent where none is.
BYTE_TILES = "tvm_partition.byte_tiles"
_BYTES = ("uint8", "int8")


def byte_tiles(mod: tvm.IRModule) -> tuple[int, ...] | None:
    """The tile ``mod``'s byte matmuls are summed in (:data:`BYTE_TILES`), None where none is."""
    tiles = mod.attrs.get(BYTE_TILES) if mod.attrs else None
    return tuple(int(v) for v in tiles) if tiles is not None else None


def _byte_products(a, b, tiles: tuple[int, ...] | None) -> int:
    """The float multiply-adds one byte product of ``a @ b`` is priced as (:data:`BYTE_PRODUCTS`,
    :data:`TILED_BYTE_PRODUCTS` where the module's ``tiles`` hold its extents whole)."""
    if tiles is None:
        return BYTE_PRODUCTS
    rows, reduction = nominal_shape(a)[-2:]
    columns = nominal_shape(b)[-1]
    return BYTE_PRODUCTS if rows % tiles[0] or columns % tiles[1] or reduction % tiles[2] else TILED_BYTE_PRODUCTS


def _member_flops(var, call, tiles: tuple[int, ...] | None = None) -> float:
    name = _op_name(call)
    try:
        out = math.prod(nominal_shape(var))
    except IllegalSplit:
        return 0.0
    if name == "matmul":
        a, b = tensor_operands(call)[:2]
        work = 2.0 * out * nominal_shape(a)[-1]
        return work / _byte_products(a, b, tiles) if a.ty.dtype in _BYTES and b.ty.dtype in _BYTES else work
    if name == "conv2d":
        w = tensor_operands(call)[1]
        ws = nominal_shape(w)
        return 2.0 * out * ws[1] * ws[2] * ws[3]
    if name in ("max_pool2d", "avg_pool2d"):
        return float(out * math.prod(int(k) for k in call.attrs.pool_size))
    if name in _VIEW_KINDS:
        return 0.0
    if name in ("softmax", "log_softmax", "layer_norm", "rms_norm", "mean", "sum", "adaptive_avg_pool2d"):
        return 5.0 * math.prod(nominal_shape(tensor_operands(call)[0]))
    return float(out)


#: :meth:`OpGraph._fused_groups`' answers, by module structure (and function names). Every
#: planner, pass and check of a build made an OpGraph of the same model, each running LegalizeOps
#: and FuseOps again: 0.3 of the 0.44 s an OpGraph of the sequence-10 LSTM took, 540 OpGraphs in
#: the suite (2026-11-29, cProfile).
_FUSED = ByStructure(kept=32)


class OpGraph:
    """Fused-kernel DAG of a Relax module's ``main`` (networkx ``DiGraph`` in :attr:`graph`).

    Node ids are the op ids of plans; each node carries ``op`` (an :class:`Op`); edges carry
    ``bytes`` (the tensor that flows) and ``var`` (its name).
    """

    def __init__(self, mod: tvm.IRModule, func_name: str = "main"):
        if func_name not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise GraphError(f"module has no function {func_name!r}")
        self.mod = mod
        #: the tile the module's byte matmuls are summed in (:func:`byte_tiles`), for their pricing
        self.byte_tiles = byte_tiles(mod)
        self.func = mod[func_name]
        self.func_name = func_name
        self.bindings = _bindings(self.func)
        num_input = self.func.attrs.get("num_input") if self.func.attrs else None
        self.num_input = int(num_input) if num_input is not None else len(self.func.params)
        self.data_params = list(self.func.params[: self.num_input])
        self.weight_params = list(self.func.params[self.num_input :])
        self.index_of = {b.var: i for i, b in enumerate(self.bindings)}
        #: vars each binding reads, and the bindings that read each var
        self.free = [list(relax.analysis.free_vars(b.value)) for b in self.bindings]
        self.users: dict = defaultdict(set)
        for i, vs in enumerate(self.free):
            for v in vs:
                self.users[v].add(i)
        self.returned = set(relax.analysis.free_vars(self.func.body.body))
        self.static = self._find_static()
        fused, self.data_dependent = self._fused_groups()
        groups = [(name, [m for m in members if m not in self.static]) for name, members in fused]
        groups = [(name, members) for name, members in groups if members]
        self._absorb_glue(groups)
        self.ops: dict[str, Op] = {}
        self.op_of_binding: dict[int, str] = {}
        for k, (fused_name, members) in enumerate(groups):
            op_id = make_op_id(k, fused_name)
            self.ops[op_id] = self._make_op(op_id, fused_name, members)
            for m in members:
                self.op_of_binding[m] = op_id
        self.graph = self._make_graph()
        for op in self.ops.values():
            self._legality(op)

    # ------------------------------------------------------------------ analysis
    def _find_static(self) -> set[int]:
        static_vars = set(self.weight_params)
        static = set()
        for i, b in enumerate(self.bindings):
            if all(v in static_vars for v in self.free[i]):
                static.add(i)
                static_vars.add(b.var)
        return static

    def _fused_groups(self) -> tuple[list[tuple[str, list[int]]], frozenset[int]]:
        """:meth:`_fuse_afresh`, or its answer for a module structurally equal to one it was asked
        before (:data:`_FUSED`)."""
        # the functions' names too: the fused kernels are named after them
        names = tuple(sorted(gv.name_hint for gv in self.mod.get_global_vars()))

        def fuse():
            groups, dynamic = self._fuse_afresh()
            return tuple((name, tuple(members)) for name, members in groups), frozenset(dynamic)

        groups, dynamic = _FUSED.get(self.mod, (self.func_name, names), fuse)
        return [(name, list(members)) for name, members in groups], dynamic  # the caller's to change

    def _fuse_afresh(self) -> tuple[list[tuple[str, list[int]]], set[int]]:
        """Run TVM's fusion on a copy and map each fused kernel to high-level binding indices;
        also the bindings whose legalized shape depends on the data (:attr:`data_dependent`).

        ``LegalizeOps`` turns almost every high-level binding into one ``call_tir`` binding at the
        same position, and some into several ending in one of the same name
        (:func:`_legalized_owners`); ``FuseOps`` then groups them into primitive functions. Both
        modules are walked with the same symbolic evaluation (a kernel call resolves to its
        legalized binding, tuple access and aliases are looked through), so every kernel inside a
        fused function is matched to the legalized binding with the same PrimFunc and the same
        resolved arguments; fused groups that share a high-level binding are one op.
        """
        # each binding named apart from any LegalizeOps makes ("lv", "lv1", ...): a legalization's
        # own bindings then never pass for a high-level one (_legalized_owners)
        order = {b.var: i for i, b in enumerate(self.bindings)}
        named = rebuilt(self.mod, self.func_name, name_of=lambda b: f"{_OWNER_PREFIX}{order[b.var]}")
        try:
            legal = tvm.transform.Sequential(
                [legalize_ops(), relax.transform.AnnotateTIROpPattern()]
            )(named)
            fused = relax.transform.FuseOps()(legal)
        except Exception as e:  # noqa: BLE001 - TVM's own failure on this model (any TVM error type)
            last = [ln for ln in str(e).strip().splitlines() if ln.strip()][-1:] or [type(e).__name__]
            raise GraphError(f"TVM cannot lower this model ({last[0].strip()})") from None
        lg = _bindings(legal[self.func_name])
        owner = _legalized_owners(lg, len(self.bindings))
        dynamic = {owner[j] for j, b in enumerate(lg) if not _static_type(b.var.ty)}
        call_tir = tvm.ir.Op.get("relax.call_tir")

        def is_kernel(v):
            return isinstance(v, relax.Call) and v.op.same_as(call_tir)

        def resolve(expr, env):
            if isinstance(expr, relax.Var):
                if expr in env:
                    return env[expr]
                if isinstance(expr.ty, tvm.ir.PrimType):  # a symbolic dimension a match_cast defines
                    return ("dim", expr.name)
                raise GraphError(f"unresolved var {expr.name}")
            if isinstance(expr, Constant):
                return ("const", tvm_ffi.structural_hash(expr))
            if isinstance(expr, relax.Tuple):
                return ("tuple", tuple(resolve(f, env) for f in expr.fields))
            if isinstance(expr, relax.TupleGetItem):
                t = resolve(expr.tuple_value, env)
                return t[1][expr.index] if isinstance(t, tuple) and t[0] == "tuple" else ("item", t, expr.index)
            return ("lit", tvm_ffi.structural_hash(expr))

        def key(call, env):
            return (call.args[0].name_hint, resolve(call.args[1], env))

        def walk(bindings, env, on_kernel):
            for b in bindings:
                v = b.value
                if is_kernel(v):
                    env[b.var] = on_kernel(b, env)
                elif isinstance(v, relax.Call) and isinstance(v.op, relax.GlobalVar):
                    inner = fused[v.op]
                    ienv = {p: resolve(a, env) for p, a in zip(inner.params, v.args)}
                    members = []

                    def on_inner(ib, e, members=members):
                        members.append(match(ib.value, e))
                        return members[-1]

                    walk(_bindings(inner), ienv, on_inner)
                    env[b.var] = resolve(inner.body.body, ienv)
                    groups.append((v.op.name_hint, sorted(members)))
                elif isinstance(v, relax.Call):  # an op TVM does not turn into a kernel
                    env[b.var] = ("opaque", b.var.name)
                else:
                    env[b.var] = resolve(v, env)

        index = defaultdict(list)
        groups: list[tuple[str, list[int]]] = []
        lg_env = {p: ("param", p.name) for p in legal[self.func_name].params}
        positions = {b.var: i for i, b in enumerate(lg)}

        def on_legal(b, env):
            index[key(b.value, env)].append(positions[b.var])
            return positions[b.var]

        walk(lg, lg_env, on_legal)

        def match(call, env, name: str | None = None) -> int:
            # calls alike in kernel and arguments are told apart by the binding's name where
            # FuseOps kept it (a kernel left alone keeps it; those inside a fused function do
            # not): two embeddings' ``take(shape_to_tensor(), index)`` of ONNX's Gather, which
            # FuseOps put in the other order, matched each other's and failed the graph
            # ("fused kernel call take not found")
            k = key(call, env)
            found = index.get(k)
            if not found:
                raise GraphError(f"fused kernel call {k[0]} not found in the legalized module")
            i = next((j for j in found if lg[j].var.name == name), None) if name else None
            if i is None:  # one inside a fused function: not one that a kernel left alone names
                i = next((j for j in found if lg[j].var.name not in alone), found[0])
            found.remove(i)
            return i

        def on_fused(b, env):
            i = match(b.value, env, b.var.name)
            groups.append((b.value.args[0].name_hint, [i]))
            return i

        alone = {b.var.name for b in _bindings(fused[self.func_name]) if is_kernel(b.value)}
        env = {p: ("param", p.name) for p in fused[self.func_name].params}
        walk(_bindings(fused[self.func_name]), env, on_fused)
        return _merged([(name, sorted({owner[j] for j in members})) for name, members in groups]), dynamic

    def _absorb_glue(self, groups: list[tuple[str, list[int]]]) -> None:
        """Tuple access between two kernels of one fused group belongs to that group.

        ``split -> t[0], t[1] -> multiply`` fuses into one kernel, but the tuple accesses are not
        kernels: left outside, they would sit between the group and itself.
        """
        group_of = {m: g for g, (_, members) in enumerate(groups) for m in members}
        changed = True
        while changed:
            changed = False
            for i, b in enumerate(self.bindings):
                if i in group_of or i in self.static or isinstance(b.value, relax.Call):
                    continue
                producers = {group_of.get(self.index_of.get(v)) for v in self.free[i] if self.index_of.get(v) is not None}
                users = {group_of.get(u) for u in self.users[b.var]}
                if len(producers) == 1 and None not in producers and producers <= users:
                    g = producers.pop()
                    groups[g][1].append(i)
                    groups[g][1].sort()
                    group_of[i] = g
                    changed = True

    def _make_op(self, op_id: str, fused_name: str, members: list[int]) -> Op:
        mset = set(members)
        member_vars = {self.bindings[m].var for m in members}
        inputs, seen = [], set()
        for m in members:
            value = self.bindings[m].value
            for operand in tensor_operands(value) if isinstance(value, relax.Call) else self.free[m]:
                if operand not in member_vars and operand not in seen:
                    seen.add(operand)
                    inputs.append(operand)
        outputs = [
            self.bindings[m].var
            for m in members
            if self.bindings[m].var in self.returned or self.users[self.bindings[m].var] - mset
        ]
        if not outputs:
            outputs = [self.bindings[members[-1]].var]
        kinds = [_op_name(self.bindings[m].value) or "call" for m in members]
        kind = max(kinds, key=lambda k: (_ANCHOR_RANK.get(k, 1 if k not in _VIEW_KINDS else 0)))
        data_inputs = [x for x in inputs if is_tensor(x)]
        flops = sum(_member_flops(self.bindings[m].var, self.bindings[m].value, self.byte_tiles) for m in members)
        io_bytes = sum(tensor_bytes(x) for x in data_inputs) + sum(tensor_bytes(o) for o in outputs if is_tensor(o))
        return Op(
            id=op_id, kind=kind, fused_name=fused_name, members=members, inputs=inputs, outputs=outputs,
            input_shapes=[nominal_shape(x) for x in data_inputs], input_dtypes=[x.ty.dtype for x in data_inputs],
            output_shapes=[nominal_shape(o) for o in outputs if is_tensor(o)],
            output_dtypes=[o.ty.dtype for o in outputs if is_tensor(o)],
            flops=float(flops), bytes=float(io_bytes),
        )

    @functools.cached_property
    def cpu_only(self) -> frozenset[str]:
        """The ops whose shape depends on the data (:attr:`data_dependent`: the boxes a
        non-maximum suppression keeps, and what reads them): they run on a CPU. Their kernels are
        TVM's hand-written TIR (``topi.vision``), which dlight's GPU rules cannot schedule ("TIR is
        ill-formed: buffer T_gather is used ... without a prior DeclBuffer"), and their sizes are
        known only once they ran, which the host reads to allocate what follows."""
        return frozenset(op_id for op_id, op in self.ops.items() if self.data_dependent & set(op.members))

    @functools.cached_property
    def weight_bytes(self) -> int:
        """The bytes of weights one run reads: every weight parameter of ``main`` but those only a
        gather reads (an embedding table, of which a run reads a few rows). Weights are read once
        a run, so where they outgrow the cache every run reads them from memory
        (:meth:`tvm_partition.cost_models.profiled.ProfiledCostModel.stream_floor`)."""
        def gathered_only(w) -> bool:
            readers = self.users.get(w, ())
            return bool(readers) and all(i in self.op_of_binding and self.ops[self.op_of_binding[i]].kind in GATHERS
                                         for i in readers)

        return sum(tensor_bytes(w) for w in self.weight_params if not gathered_only(w))

    @functools.cached_property
    def viewed_slices(self) -> frozenset[str]:
        """The ops that are a lone ``strided_slice`` of one aligned block of a tensor ``main``
        computes (no parameter, nothing moved to load time): on a CPU the link pipeline takes each
        as a view, no kernel (:func:`tvm_partition.passes.slices_as_views`, where the rule is
        measured), which the simulator prices as it does a split's views (``view_time``)."""
        out = set()
        for op_id, op in self.ops.items():
            call = self.bindings[op.members[0]].value if len(op.members) == 1 else None
            if _op_name(call) != "strided_slice":
                continue
            (x,) = tensor_operands(call)
            i = self.index_of.get(x) if isinstance(x, relax.Var) else None
            if i is None or i in self.static:
                continue
            try:
                region = sliced_block(call)
            except IllegalSplit:
                continue
            if region is not None and view_offset(shape_of(x), x.ty.dtype, region) is not None:
                out.add(op_id)
        return frozenset(out)

    @functools.cached_property
    def joined_in_place(self) -> frozenset[str]:
        """The ops that are a lone ``concatenate`` of two or more tensors, each the one output of
        another op's kernel (no concat's, no view's: joins of joins stay) read by nothing else, and
        each one aligned block of the result: on a CPU the link pipeline has each kernel write its
        output straight into the result, no concat kernel
        (:func:`tvm_partition.passes.write_joins_in_place`, whose rule this is), which the simulator
        prices as views. Why: SqueezeNet's eight fire modules' concats, priced at 476 us of its
        predicted 6.1 ms, launch no kernel in its build (``run --kernels``: 16 views, no concat;
        icelake-server, 2026-12-04)."""
        out = set()
        for op_id, op in self.ops.items():
            if len(op.members) != 1 or not op.fused_name.startswith("concatenate"):
                continue
            call = self.bindings[op.members[0]].value
            axis = int(call.attrs.axis) if _op_name(call) == "concat" and call.attrs.axis is not None else None
            xs = tensor_operands(call)
            if (axis is None or len(xs) < 2 or len({x.__chandle__() for x in xs}) < len(xs)
                    or not all(self._sole_kernel_output(x, op.members[0]) for x in xs)):
                continue
            # the operands' static shapes, in order (a lone call's inputs are its operands)
            shape, sizes = op.output_shapes[0], [s[axis] for s in op.input_shapes]
            starts = itertools.accumulate([0] + sizes[:-1])
            if all(view_offset(shape, op.output_dtypes[0], Region(axis % len(shape), lo, lo + n)) is not None
                   for lo, n in zip(starts, sizes)):
                out.add(op_id)
        return frozenset(out)

    @functools.cached_property
    def views_on_cpu(self) -> frozenset[str]:
        """The ops a CPU build launches no kernel for where they and their inputs are computed whole
        on CPUs: the model's view ops, :attr:`viewed_slices` and :attr:`joined_in_place`. EOP, which
        prices ops placed whole (its key operators, Eq. 3), prices these at nothing on a CPU, as the
        simulator does (its views cost the VM's ``view_time``, as a kernel's launch is not in an
        op's time either). Why: EOP ranked SqueezeNet's eight concats, 108-118 us each as kernels,
        among its key operators on the CPU, where its build writes them in place (icelake-server,
        2026-12-04)."""
        return frozenset(v for v, op in self.ops.items() if op.is_view) | self.viewed_slices | self.joined_in_place

    def _sole_kernel_output(self, x, reader: int) -> bool:
        """Whether ``x`` is the one output of an op's kernel (no concatenate's, no view's), computed
        in ``main`` and read by binding ``reader`` alone."""
        i = self.index_of.get(x) if isinstance(x, relax.Var) else None
        if i is None or i in self.static or i not in self.op_of_binding or x in self.returned:
            return False
        producer = self.ops[self.op_of_binding[i]]
        return (self.users[x] == {reader} and len(producer.outputs) == 1 and not producer.is_view
                and not producer.fused_name.startswith("concatenate"))

    def producers(self, expr) -> set[str]:
        """Every op whose output ``expr`` reads, looking through glue (a tuple of two ops' outputs
        reads both); params and constants make none."""
        seen, found, stack = set(), set(), [expr]
        while stack:
            e = stack.pop()
            if not isinstance(e, relax.Var) or e in seen:
                continue
            seen.add(e)
            i = self.index_of.get(e)
            if i is None or i in self.static:
                continue
            if i in self.op_of_binding:
                found.add(self.op_of_binding[i])
            else:
                stack.extend(self.free[i])
        return found

    @functools.cached_property
    def binding_reads(self) -> list[tuple[int, ...]]:
        """The bindings each binding reads (indices into :attr:`bindings`; parameters and constants
        left out): :attr:`free` as indices, for walks that run once per plan
        (:func:`tvm_partition.ir.emission.units`). Why: a lookup of a var in :attr:`index_of` with
        another Python object of the same node calls TVM's ``Expr.__eq__`` (1.4 us against 0.09 with
        the same object), and ``auto`` planning of the sequence-100 LSTM walked its 5,000 bindings
        once per plan it priced, 17 times."""
        return [tuple(j for j in (self.index_of.get(v) for v in vs) if j is not None) for vs in self.free]

    @functools.cached_property
    def input_sources(self) -> dict[str, tuple[tuple[bool, frozenset], ...]]:
        """Op id -> for each of its inputs: whether it is a parameter of ``main``, and the ops it
        reads (:meth:`producers`). Made once (the op graph's edges are made from it): see
        :attr:`binding_reads`."""
        params = self.data_params + self.weight_params
        return {op_id: tuple((self.index_of.get(x) is None and any(x.same_as(p) for p in params),
                              frozenset(self.producers(x))) for x in op.inputs)
                for op_id, op in self.ops.items()}

    def _make_graph(self) -> nx.DiGraph:
        g = nx.DiGraph()
        for op in self.ops.values():
            g.add_node(op.id, op=op)
        for op in self.ops.values():
            for x, (_, producers) in zip(op.inputs, self.input_sources[op.id]):
                for src in sorted(producers - {op.id}):
                    b = tensor_bytes(x) if is_tensor(x) else 0
                    if g.has_edge(src, op.id):
                        g[src][op.id]["bytes"] += b
                    else:
                        g.add_edge(src, op.id, bytes=b, var=getattr(x, "name", ""))
        if not nx.is_directed_acyclic_graph(g):
            raise GraphError("fused op graph has a cycle")
        return g

    # ------------------------------------------------------------------ splitting
    def propagate(self, op: Op, region: Region | None):
        """Regions every member and input of ``op`` needs to produce ``region`` of its outputs.

        Returns ``(needs, rebuilds, granule)``: ``needs`` maps each member var and input expr to
        its Region (None = whole), ``rebuilds`` maps member binding index to the rule's rebuild
        function (None = same op on the new operands).
        """
        if region is not None and len({shape_of(o) for o in op.outputs}) > 1:
            raise IllegalSplit("the fused group has outputs of different shapes")
        needs = {o: region for o in op.outputs}
        rebuilds, granule = {}, 1
        for m in reversed(op.members):
            b = self.bindings[m]
            r = needs.get(b.var)
            if not isinstance(b.value, relax.Call):  # tuple access inside the group
                if r is not None and not isinstance(b.value, relax.TupleGetItem):
                    raise IllegalSplit("the fused group builds a tuple")
                for v in self.free[m]:  # every field of a split tuple is cut the same way
                    if v in needs and needs[v] != r:
                        raise IllegalSplit(f"{v.name} would be needed as two different slices")
                    needs[v] = r
                rebuilds[m] = None
                continue
            res = split_call(b.value, _first_field_shape(b.var) if r is not None else None, r)
            for operand, oreg in zip(tensor_operands(b.value), res.operand_regions):
                if operand in needs and needs[operand] != oreg:
                    raise IllegalSplit(f"{getattr(operand, 'name', 'an operand')} would be needed as two different slices")
                needs[operand] = oreg
            rebuilds[m] = res.rebuild
            granule = math.lcm(granule, res.granule)
        return needs, rebuilds, granule

    def _legality(self, op: Op) -> None:
        try:
            out_shape = shape_of(op.primary)
        except IllegalSplit as e:
            op.refusals = {0: str(e)}
            return
        if op.is_view:
            for a in range(len(out_shape)):
                op.refusals[a] = "a reshape runs as a view: it follows its producer"
            return
        if op.id in self.cpu_only:
            for a in range(len(out_shape)):
                op.refusals[a] = "its shape depends on the data (at most the static shape given)"
            return
        for a, n in enumerate(out_shape):
            if n < 2:
                op.refusals[a] = f"axis {a} has size {n}"
                continue
            try:
                g = self._probe(op, a, n)
            except IllegalSplit as e:
                op.refusals[a] = str(e)
                continue
            op.split_dims[a] = self.dim_name(op, a)
            op.granules[a] = g

    def _probe(self, op: Op, axis: int, n: int) -> int:
        """Cut ``axis`` (size ``n``) in two near its middle and return the granule the cut needs.

        A cut inside an indivisible unit (a group of a grouped convolution: 6 channels in 3 groups
        cannot be cut at 3) moves to the nearest multiple of the unit the rule names and is tried
        again; only an axis with no legal cut at all is refused."""
        unit = 1
        while True:
            cut = max(unit, n // 2 // unit * unit)
            try:
                g = unit
                for lo, hi in ((0, cut), (cut, n)):
                    g = math.lcm(g, self.propagate(op, Region(axis, lo, hi))[2])
                return g
            except MisalignedCut as e:
                wider = math.lcm(unit, e.granule)
                if wider == unit or wider >= n:  # already aligned to it, or no cut inside the axis
                    raise
                unit = wider

    @staticmethod
    def dim_name(op: Op, axis: int) -> str:
        ndim = len(op.output_shapes[-1])
        if axis == 0:
            return "batch"
        if op.kind in ("conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d") and ndim == 4:
            return {1: "channel", 2: "H", 3: "W"}[axis]
        if op.kind == "matmul":
            return "N" if axis == ndim - 1 else "M" if axis == ndim - 2 else f"batch{axis}"
        return f"axis{axis}"

    def split_refusal(self, op_id: str, dim: int) -> str | None:
        op = self.ops[op_id]
        if dim in op.split_dims:
            return None
        return op.refusals.get(dim, f"{op.kind} output has no axis {dim}")

    # ------------------------------------------------------------------ views
    def topo_order(self) -> list[str]:
        return list(nx.lexicographical_topological_sort(self.graph))

    def summary(self) -> list[dict]:
        return [self.ops[i].summary() for i in self.topo_order()]

    def __len__(self) -> int:
        return len(self.ops)
