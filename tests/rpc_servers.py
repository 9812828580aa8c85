"""Loopback TVM RPC servers and trackers the tests start and always stop themselves."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Proc:
    """A process in its own session, so that stopping it also stops the workers it forked."""

    def __init__(self, args: list[str], env: dict | None = None, cwd: str | None = None):
        self.log = open(os.devnull, "w") if cwd is None else open(os.path.join(cwd, "server.log"), "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env=env or dict(os.environ), cwd=cwd or REPO)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=30)
        self.log.close()


def wait_port(port: int, proc: Proc, timeout: float = 60) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if proc.proc.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {proc.proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on port {port} after {timeout}s")


def rpc_server(port: int, *extra: str, python: list[str] | None = None, env=None, cwd=None) -> Proc:
    """``python -m tvm.exec.rpc_server`` on 127.0.0.1:``port`` (``python``: another launcher)."""
    args = (python or [sys.executable, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1"])
    proc = Proc([*args, "--port", str(port), "--port-end", str(port + 1), *extra], env=env, cwd=cwd)
    return proc


def wait_tracker(tracker_port: int, key: str, count: int, timeout: float = 60) -> None:
    from tvm import rpc

    end = time.time() + timeout
    while time.time() < end:
        try:
            info = rpc.connect_tracker("127.0.0.1", tracker_port).summary()
            if info["queue_info"].get(key, {}).get("free", 0) >= count:
                return
        except (OSError, RuntimeError):
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{count} servers with key {key!r} did not register at the tracker")
