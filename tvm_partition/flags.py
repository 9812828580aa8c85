"""The command line's shared parts: one parser class, and every flag two commands share, defined once.

Each command (:mod:`tvm_partition.cli`) builds its parser with :func:`parser` and takes the flags
it has in common with others from here, so ``--devices``, ``--tuning-logs``, ``--repeat``... mean
and check the same thing everywhere. A bad value is one line, ``error: ...``, and exit status 2,
like every other bad input (:class:`tvm_partition.errors.TvmPartitionError`), never argparse's
usage block. Imports nothing of the compiler: the runtime-only commands (run, pipeline) use it on
servers that have only the TVM runtime.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys

from .devices import DEFAULT_GPU_ARCH
from .errors import TvmPartitionError
from .processes import reap_on_exit

#: The console script's name (setup.py); every usage line starts with it.
PROG = "tvm-partition"

#: The zoo's models (``frontend.zoo.NAMES`` is this tuple, checked against the zoo's registry) and
#: the strategies ``compile --strategy`` takes, here for the parsers: ``frontend.zoo`` and
#: ``planners.NAMES`` import TVM (``compile --help`` took 2.0 s, 1.9 of them importing it for these
#: two lists, 2026-11-28). ``tests/test_commands.py`` holds ``STRATEGIES`` equal to ``planners.NAMES``
#: and ``PLACEMENT_STRATEGIES`` to ``planners.placement.STRATEGY_NAMES`` (``stages --help`` took
#: 3.4 s importing OR-Tools and TVM for that list).
ZOO_MODELS = ("lstm", "gru", "bert", "bert-tiny", "mobilenetv2", "resnet18", "resnet50", "inception_v3")
STRATEGIES = ("cpu", "gpu", "equal", "fixed", "eop", "milp", "dominators", "dp", "heft", "metf", "msct", "auto")
PLACEMENT_STRATEGIES = ("milp", "dominators", "dp", "heft", "metf", "msct")
ZOO_EPILOG = f"zoo models: {', '.join(ZOO_MODELS)}"


class UsageError(TvmPartitionError, ValueError):
    """A flag the parser refuses (unknown, missing, out of range)."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors raise :class:`UsageError` (so :func:`command` prints them
    as one line and returns 2) instead of printing the usage block and exiting."""

    def error(self, message: str):
        message = re.sub(r"^argument ([^:]+): ", r"\1 ", message)  # "--batch must be >= 1", as a user says it
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


def command(main):
    """Decorate a command's ``main(argv) -> int``: a :class:`TvmPartitionError` (bad flags included)
    becomes the one line ``error: ...`` on stderr and status 2. Run from the command line (no
    ``argv``), the processes it starts die with it (:func:`tvm_partition.processes.reap_on_exit`)."""

    @functools.wraps(main)
    def run(argv=None) -> int:
        if argv is None:
            reap_on_exit()
        try:
            return main(argv)
        except TvmPartitionError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2

    return run


def parser(command: str, doc: str | None, epilog: str | None = None) -> Parser:
    """The parser of ``tvm-partition COMMAND``; its description is the first paragraph of ``doc``."""
    return Parser(prog=f"{PROG} {command}", description=(doc or "").strip().split("\n\n")[0], epilog=epilog)


def _number(text: str, kind):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a{'n integer' if kind is int else ' number'}") from None


def at_least(minimum: float, kind=int):
    """An argparse type: a ``kind`` (int or float) no smaller than ``minimum``."""

    def convert(text: str):
        value = _number(text, kind)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {text}")
        return value

    convert.__name__ = kind.__name__  # argparse names the type in its messages
    return convert


def positive(kind=float):
    """An argparse type: a ``kind`` greater than zero."""

    def convert(text: str):
        value = _number(text, kind)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    convert.__name__ = kind.__name__
    return convert


def dim_bindings(text: str) -> dict[str, int]:
    """``NAME=N[,NAME=N...]`` as ``{NAME: N}``: free ONNX dimensions bound by name
    (:mod:`tvm_partition.frontend.onnx_shapes`), N >= 1."""
    out = {}
    for item in (x.strip() for x in text.split(",")):
        name, eq, value = item.rpartition("=")
        if not eq or not name.strip():
            raise argparse.ArgumentTypeError(f"takes NAME=N, got {item!r}")
        try:
            out[name.strip()] = at_least(1)(value.strip())
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"{name.strip()}: {e}") from None
    return out


class _DimAction(argparse.Action):
    """``--dim`` given several times: one dict, later bindings of a name winning."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            found = dim_bindings(values)
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentError(self, str(e)) from None
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest) or {}), **found})


def add_devices(ap, default: str, help: str) -> None:
    ap.add_argument("--devices", default=default, metavar="D,D", help=help)


def add_tuning_logs(ap, help: str = "tuning logs folder: tuning database and profile (default: the shipped "
                                    "tuning_logs/, the folder matching this machine)") -> None:
    ap.add_argument("--tuning-logs", metavar="DIR", help=help)


def add_targets(ap, cpu_help: str = "LLVM -mcpu of the target CPU (default: this machine's)") -> None:
    ap.add_argument("--target-cpu", metavar="MCPU", help=cpu_help)
    ap.add_argument("--gpu-arch", default=DEFAULT_GPU_ARCH, metavar="SM",
                    help=f"CUDA arch to cross-compile for (default {DEFAULT_GPU_ARCH})")


def add_threads(ap, help: str = "CPU threads the runner uses (default: every CPU this process may use here: "
                                "affinity and cgroup quota)") -> None:
    ap.add_argument("--threads", type=at_least(1), metavar="N", help=help)


def add_time_limit(ap, help: str = "placement: solver seconds (default 10)") -> None:
    ap.add_argument("--time-limit", type=positive(float), default=10.0, metavar="S", help=help)


def add_repeat(ap, help: str, default: int | None = 0) -> None:
    ap.add_argument("--repeat", type=at_least(0), default=default, metavar="N", help=help)


def add_out(ap, help: str, required: bool = False) -> None:
    ap.add_argument("--out", required=required, metavar="DIR", help=help)


def add_rpc(ap, what: str = "run") -> None:
    """``--rpc`` / ``--tracker`` / ``--key``: where a TVM RPC server is (:mod:`tvm_partition.runtime.remote`)."""
    ap.add_argument("--rpc", metavar="HOST:PORT", help=f"{what} on this TVM RPC server (python -m tvm.exec.rpc_server)")
    ap.add_argument("--tracker", metavar="HOST:PORT", help="ask this TVM RPC tracker for a server (with --key)")
    ap.add_argument("--key", help="device key the RPC servers registered with at the tracker")


def add_io(ap) -> None:
    """``--input`` / ``--output`` / ``--seed``: a run's inputs and outputs as npz files."""
    ap.add_argument("--input", metavar="FILE", help="npz file keyed by input name (default: seeded random inputs)")
    ap.add_argument("--output", metavar="FILE", help="write the outputs to this npz file")
    ap.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the random inputs")


def add_model_args(ap) -> None:
    """The model-shape flags of every command that loads a model (:func:`tvm_partition.frontend.load`)."""
    ap.add_argument("--batch", type=at_least(1), metavar="N", help="batch size (zoo models and ONNX models with a free batch)")
    ap.add_argument("--seq-len", type=at_least(1), metavar="N",
                    help="sequence length (lstm, gru, bert; an ONNX model's free dimension 1 of a 2-D or 3-D input)")
    ap.add_argument("--layers", type=at_least(1), metavar="N", help="number of layers (lstm, gru, bert)")
    ap.add_argument("--image-size", type=at_least(1), metavar="N",
                    help="input height/width (image models; an ONNX model's free dimensions 2 and 3 of a 4-D input)")
    ap.add_argument("--dim", dest="dims", action=_DimAction, metavar="NAME=N[,NAME=N]",
                    help="an ONNX model's free dimension of this name (its dim_param, e.g. past_sequence_length) "
                         "bound to N, before the flags above bind by position; repeatable")
