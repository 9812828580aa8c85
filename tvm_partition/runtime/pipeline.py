"""Run a multi-server pipeline (written by ``tvm-partition stages``) over TVM RPC.

One RPC session per server, each holding its stage(s) (or its part of the batch) loaded once.
``stages``: stage i runs on server i, or, for stages made from a placement plan, on the server
of its plan device (``stage_servers`` in pipeline.json; the servers are given in plan-device
order, and a server may hold several stages, e.g. A, B, A, in its one session); the tensors a
stage hands on come back here and go to the servers of the stages that need them
(``stage_io``). ``split``: every server runs the same part artifact on its slice of the batch at the
same time (one thread per session), the outputs are concatenated. With ``--repeat N`` it prints
one ``stage<i>_median_us=`` (or ``part<i>_median_us=``) line per server, each as seen from here
(transfers included), then ``median_us= p90_us=`` of the whole pipeline. Only the TVM runtime
is used.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import artifact
from .. import flags
from .remote import Endpoint, RemoteError, RemoteRunner, connect
from .runner import latency_line, read_inputs, write_outputs

PIPELINE = "pipeline.json"


def read_spec(path: str) -> dict:
    file = os.path.join(path, PIPELINE)
    try:
        with open(file, encoding="utf-8") as f:
            spec = json.load(f)
    except FileNotFoundError:
        raise artifact.ArtifactError(f"{path}: no {PIPELINE} (write one with tvm-partition stages)") from None
    except (OSError, json.JSONDecodeError) as e:
        raise artifact.ArtifactError(f"{file}: unreadable ({e})") from None
    if not isinstance(spec, dict) or spec.get("format_version") != 1 or spec.get("mode") not in ("stages", "split"):
        raise artifact.ArtifactError(f"{file}: not a pipeline this version understands")
    return spec


class Pipeline:
    """The stages (or parts) of ``path``, each loaded on its own server."""

    def __init__(self, path: str, endpoints: list[Endpoint]):
        self.spec = read_spec(path)
        n = int(self.spec["servers"])
        if len(endpoints) != n:
            raise RemoteError(f"{path} is a {n}-server {self.spec['mode']} pipeline: give {n} servers "
                              f"(--rpc A,B,... or a tracker with {n} free servers), got {len(endpoints)}")
        arts = self.spec["artifacts"] * (n if self.spec["mode"] == "split" else 1)
        self.servers = stage_servers(self.spec, path) if self.spec["mode"] == "stages" else list(range(n))
        for a in set(arts):  # refuse a tampered artifact before anything is uploaded
            artifact.verify(os.path.join(path, a), artifact.read_manifest(os.path.join(path, a)))
        # one after the other: concurrent tvm.rpc.connect calls were seen to hang (TVM 0.27); one
        # session per server, shared by its stages (a TVM RPC server serves one session at a time)
        sessions: dict = {}
        self.runners = []
        for a, s in zip(arts, self.servers):
            if s not in sessions:
                sessions[s] = connect(endpoints[s])
            self.runners.append(RemoteRunner(os.path.join(path, a), endpoints[s], session=sessions[s]))
        self.label = "stage" if self.spec["mode"] == "stages" else "part"
        self.pool = ThreadPoolExecutor(n)

    def close(self) -> None:
        self.pool.shutdown()
        for r in self.runners:
            r.close()

    def run(self, inputs: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[float]]:
        """Outputs and the microseconds each stage / part took as seen from here."""
        if self.spec["mode"] == "split":
            return self._split(inputs)
        if "stage_io" in self.spec:
            return self._stages_by_key(inputs)
        times, values, outs = [], inputs, []
        for i, runner in enumerate(self.runners):
            t0 = time.perf_counter()
            outs = self._run_stage(i, values)
            times.append((time.perf_counter() - t0) * 1e6)
            if i + 1 < len(self.runners):  # the next stage's inputs, in order
                values = dict(zip([x["name"] for x in self.runners[i + 1].input_info], outs))
        return outs, times

    def _stages_by_key(self, inputs: dict[str, np.ndarray]):
        """Stages that take tensors from any earlier stage: every handed-on tensor is kept here
        under its key (``stage_io``) until the last stage that needs it has run."""
        env, times, outs = dict(inputs), [], []
        for i, io in enumerate(self.spec["stage_io"]):
            missing = [k for k in io["inputs"] if k not in env]
            if missing:
                raise ValueError(f"stage {i} needs {missing[0]!r}, which no input or earlier stage gives")
            names = [x["name"] for x in self.runners[i].input_info]
            t0 = time.perf_counter()
            outs = self._run_stage(i, dict(zip(names, (env[k] for k in io["inputs"]))))
            times.append((time.perf_counter() - t0) * 1e6)
            env.update(zip(io["outputs"] or [], outs))
        return outs, times

    def _run_stage(self, i: int, values: dict) -> list:
        """Run stage ``i``; if its runner had to reconnect, the other stages of that server move to
        the new session (the server serves one session at a time: the old one is gone)."""
        runner = self.runners[i]
        before = runner.sess
        outs = runner.run(values)
        if runner.sess is not before:
            for other in self.runners:
                if other is not runner and other.sess is before:
                    other.sess = runner.sess
                    other._load()
        return outs

    def _split(self, inputs: dict[str, np.ndarray]):
        n, axis = len(self.runners), int(self.spec.get("axis", 0))
        for info in self.spec["inputs"]:
            if info["name"] not in inputs:
                raise ValueError(f"input {info['name']!r} is missing (have {sorted(inputs)})")
        parts = [{k: np.array_split(np.asarray(v), n, axis=axis)[i] for k, v in inputs.items()} for i in range(n)]

        def one(i):
            t0 = time.perf_counter()
            outs = self.runners[i].run(parts[i])
            return outs, (time.perf_counter() - t0) * 1e6

        results = list(self.pool.map(one, range(n)))
        outs = [np.concatenate([r[0][j] for r in results], axis=axis) for j in range(len(results[0][0]))]
        return outs, [r[1] for r in results]

    def example_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        from ..inputs import random_input

        rng = np.random.default_rng(seed)
        return {i["name"]: random_input(i["shape"], i["dtype"], rng) for i in self.spec["inputs"]}


def stage_servers(spec: dict, path: str) -> list[int]:
    """The server index of each stage: ``stage_servers`` of a placement pipeline, else i."""
    n, count = int(spec["servers"]), len(spec["artifacts"])
    servers = spec.get("stage_servers", list(range(count)))
    if (not isinstance(servers, list) or len(servers) != count
            or not all(isinstance(s, int) and 0 <= s < n for s in servers)):
        raise artifact.ArtifactError(f"{os.path.join(path, PIPELINE)}: stage_servers must give a server "
                                     f"index below {n} for each of the {count} stages")
    return servers


def endpoints_of(args) -> list[Endpoint]:
    """One endpoint per server: the --rpc list, or the tracker once per server the pipeline needs
    (the tracker hands each request a different free server)."""
    if args.rpc and not args.tracker:
        return [Endpoint(rpc=a.strip()) for a in args.rpc.split(",") if a.strip()]
    if not args.tracker:
        raise RemoteError("give the servers: --rpc HOST:PORT,HOST:PORT,... or --tracker HOST:PORT --key KEY")
    return [Endpoint(tracker=args.tracker, key=args.key)] * int(read_spec(args.pipeline)["servers"])


def _device_note(pipe: Pipeline, i: int) -> str:
    """`` device=NAME`` for a stage of a placement pipeline (the plan device its server stands for)."""
    names = pipe.spec.get("server_devices")
    return f" device={names[pipe.servers[i]]}" if pipe.label == "stage" and names else ""


def parser():
    ap = flags.parser("pipeline", __doc__)
    ap.add_argument("pipeline", help="directory written by `tvm-partition stages --out`")
    ap.add_argument("--rpc", metavar="HOST:PORT,...",
                    help="the RPC servers, one per stage / part in order (placement stages: one per plan device)")
    ap.add_argument("--tracker", metavar="HOST:PORT", help="request the servers from this TVM RPC tracker")
    ap.add_argument("--key", help="device key of the servers at the tracker")
    flags.add_io(ap)
    flags.add_repeat(ap, "time N runs: per-stage and total median_us / p90_us")
    return ap


@flags.command
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    pipe = None
    try:
        pipe = Pipeline(args.pipeline, endpoints_of(args))
        inputs = read_inputs(args.input) if args.input else pipe.example_inputs(args.seed)
        outs, _ = pipe.run(inputs)
        write_outputs(args.output, outs)
        if args.repeat > 0:
            for _ in range(3):
                pipe.run(inputs)
            total, per = [], []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                per.append(pipe.run(inputs)[1])
                total.append((time.perf_counter() - t0) * 1e6)
            for i, col in enumerate(zip(*per)):
                print(f"{pipe.label}{i}_median_us={np.median(col):.1f} server={pipe.runners[i].endpoint}"
                      + _device_note(pipe, i))
            print(latency_line(total))
    except ValueError as e:  # an unreadable --input file (numpy's), a shape it does not fit
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if pipe is not None:
            pipe.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
