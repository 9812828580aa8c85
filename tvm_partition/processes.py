"""No orphans: every process a command starts dies with it, even when the command is killed with SIGKILL.

A command's workers are not all ours to configure: MetaSchedule's builders and runners are TVM
``popen_worker`` processes (``tvm.support.popen_pool``), which exit when the parent closes their
pipe but only between jobs, so one in a long job outlives a killed parent; the benchmark's
measuring processes (:mod:`tvm_partition.bench.runtime`) and its busy neighbours
(:mod:`tvm_partition.bench.load`) would run to their own end. A SIGKILLed process cannot clean up,
and its children are re-parented to init, so nothing can find them by the process tree afterwards.

So a command run from the command line (:func:`reap_on_exit`, called by the dispatcher and by each
command's ``main`` when given no argv) marks itself with a token in :data:`ENV`, which every process
it starts inherits (environments are copied on exec: TVM's ``subprocess.Popen`` and ours alike),
and starts a reaper: a small process in its own session (a Ctrl-C to the command's process group
does not reach it) that blocks reading a pipe only the command holds (``os.pipe`` file descriptors
are not inherited by exec'd children). When the command exits, however it exits, the pipe reads
end-of-file and the reaper SIGKILLs every process whose environment (``/proc/PID/environ``, fixed
at exec) carries the token. Commands nest (a benchmark's measuring process is itself a command):
tokens accumulate in :data:`ENV`, so the outermost reaper reaches every descendant.
Linux only (``/proc``); elsewhere a no-op.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

#: The environment variable that carries the tokens of every command a process descends from.
ENV = "TVM_PARTITION_REAPER"

_token: str | None = None


def reap_on_exit() -> str | None:
    """Start this process's reaper (once); returns its token (None where there is no ``/proc``)."""
    global _token
    if _token is not None or not os.path.isdir("/proc/self"):
        return _token
    token = uuid.uuid4().hex
    read, write = os.pipe()  # not inheritable: only this process holds the write end
    env = {k: v for k, v in os.environ.items() if k != ENV}  # the reaper is no target of any reaper
    try:
        subprocess.Popen([sys.executable, "-m", __name__, token], stdin=read, env=env, start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:  # no reaper is no reason to refuse the command
        os.close(write)
        return None
    finally:
        os.close(read)
    _keep.append(write)
    os.environ[ENV] = " ".join(filter(None, (os.environ.get(ENV), token)))
    _token = token
    return token


_keep: list[int] = []  # the pipe's write end: open until this process ends


def running_as_command() -> bool:
    """Whether this process is a command run from the command line (it has started its reaper),
    not a test or a program calling a command's ``main``."""
    return _token is not None


def seconds_since_start() -> float:
    """How long this process has existed (interpreter start and imports included): what a time
    limit on a whole command counts. 0 where ``/proc`` cannot tell."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19])  # starttime: field 22 of proc(5)
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime - started / os.sysconf("SC_CLK_TCK"))


def marked(token: str) -> list[int]:
    """Pids of the processes whose environment carries ``token`` in :data:`ENV`."""
    entry = ENV.encode() + b"="
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        if any(v.startswith(entry) and token.encode() in v[len(entry):].split() for v in env):
            found.append(int(name))
    return found


def reap(token: str, rounds: int = 5) -> int:
    """SIGKILL every process marked with ``token``, sweeping again while new ones appear (a
    worker may be starting one as we kill it); returns how many were killed."""
    killed = 0
    for _ in range(rounds):
        pids = [p for p in marked(token) if p != os.getpid()]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(0.05)
    return killed


def main(argv: list[str]) -> int:
    """The reaper: wait for end-of-file on stdin (the command has exited), then :func:`reap`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # outlive the Ctrl-C that may end the command
    while sys.stdin.buffer.read(65536):
        pass
    reap(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
