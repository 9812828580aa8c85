"""Run or time a compiled artifact on the devices it was built for, here or on an RPC server.

    python -m tvm_partition.run ARTIFACT_DIR [--input FILE.npz] [--output FILE.npz] [--repeat N]
        [--rpc HOST:PORT | --tracker HOST:PORT --key KEY]

Inputs come from an npz keyed by input name (seeded random inputs when omitted); outputs are
written as an npz (``output0``, ``output1``, ...). With ``--repeat N`` it prints
``median_us=<v> p90_us=<v>`` over N timed runs after warm-up. Only the TVM runtime is used.
With ``--rpc`` / ``--tracker`` the artifact is checked here, its library uploaded to a plain
``python -m tvm.exec.rpc_server`` and run there; ``median_us`` is then the end-to-end time seen
here, and a second line gives ``device_median_us`` (TVM's time evaluator on the server) and
``rpc_overhead_us`` (the difference).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from . import artifact
from .devices import DeviceError
from .remote import Endpoint, RemoteError, RemoteRunner
from .runner import Runner, kernel_table, latency_line, read_inputs, write_outputs


def _runner(args) -> Runner:
    if not (args.rpc or args.tracker or args.key):
        return Runner(args.artifact)
    return RemoteRunner(args.artifact, Endpoint(args.rpc, args.tracker, args.key))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tvm_partition.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("artifact", help="directory written by `python -m tvm_partition.compile --out`")
    ap.add_argument("--input", help="npz file keyed by input name (default: seeded random inputs)")
    ap.add_argument("--output", help="write the outputs to this npz file")
    ap.add_argument("--repeat", type=int, default=0, help="time N runs and print median_us / p90_us")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    ap.add_argument("--kernels", action="store_true", help="time every kernel, copy and VM builtin a run calls "
                                                           "(over --repeat runs, default 10), heaviest first")
    ap.add_argument("--rpc", metavar="HOST:PORT", help="run on this TVM RPC server (python -m tvm.exec.rpc_server)")
    ap.add_argument("--tracker", metavar="HOST:PORT", help="ask this TVM RPC tracker for a server (with --key)")
    ap.add_argument("--key", help="device key the RPC servers registered with at the tracker")
    args = ap.parse_args(argv)
    if args.repeat < 0:
        print("error: --repeat must be >= 0", file=sys.stderr)
        return 2
    if args.kernels and (args.rpc or args.tracker or args.key):
        print("error: --kernels times the VM's calls on this machine, not over RPC", file=sys.stderr)
        return 2
    try:
        runner = _runner(args)
        inputs = read_inputs(args.input) if args.input else runner.example_inputs(args.seed)
        outs = runner.run(inputs)
        write_outputs(args.output, outs)
        times = None
        if args.repeat > 0:
            times = runner.time(inputs, args.repeat)
            print(latency_line(times))
            if hasattr(runner, "device_times"):
                device = float(np.median(runner.device_times(inputs, args.repeat)))
                print(f"device_median_us={device:.1f} rpc_overhead_us={np.median(times) - device:.1f}")
        if args.kernels:
            if times is None:
                times = runner.time(inputs, 10)
            print(kernel_table(*runner.kernel_times(inputs, args.repeat or 10), float(np.median(times))), end="")
    except (artifact.ArtifactError, DeviceError, ValueError, RemoteError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
