"""Each run of a compiled module in a process of its own, forked from a server that has
imported numpy and IREE's runtime and run nothing, so that no memory a module leaves unwritten
can hold what an earlier run in the caller's process computed.

IREE's runtime recycles the memory of freed result buffers for later results: in one process,
stock's module run first and then a plugin's module that leaves rows of its output unwritten
returns stock's values in those rows (a query-block loop one row short matched stock there).
A fresh process per run sees only its own inputs. The cost is a fork and the transfer of the
module, its inputs and its results, not an interpreter start: the server (`python -m
iree_fusions.harness.isolated`, started once per caller process) forks a child per run.

The protocol, on the server's stdin and stdout: length-prefixed pickles; a request is
(vmfb, inputs, function, device, parameters), a reply ("ok", results), ("error", exception)
or ("died", signal or exit status).
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np

from ..runtime.modules import host_arrays, load_vmfb

_HEADER = struct.Struct("<Q")


class RunCrashed(RuntimeError):
    """The process running the module died (a signal or an abort inside IREE's runtime)."""


def _send(stream: BinaryIO, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive_bytes(stream: BinaryIO) -> bytes | None:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    return data if len(data) == size else None


class _Server:
    """The caller's side: one server process, requests one at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen | None = None

    def _started(self) -> subprocess.Popen:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "iree_fusions.harness.isolated"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self.process

    def call(self, request: tuple) -> tuple:
        with self.lock:
            process = self._started()
            try:
                _send(process.stdin, request)
                reply = _receive_bytes(process.stdout)
            except BrokenPipeError:
                reply = None
            if reply is None:
                self.close()
                return ("died", "the run server itself")
            return pickle.loads(reply)

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait()
            self.process = None


_server = _Server()
atexit.register(_server.close)


def run_alone(vmfb: bytes, inputs: Sequence[np.ndarray], function: str = "main",
              device: str = "local-task", parameters=None) -> list[np.ndarray]:
    """Loads and calls one function in a new process (see the module docstring); returns its
    results. An error of the runtime is raised here as it was raised there."""
    reply = _server.call((bytes(vmfb), list(inputs), function, device,
                          parameters))
    if reply[0] == "ok":  # arrays of their own, not views of the reply's bytes
        return [np.array(r, copy=True) for r in reply[1]]
    if reply[0] == "error":
        raise reply[1]
    raise RunCrashed(f"the process running @{function} on {device} died ({reply[1]})")


def _run_request(request: tuple) -> tuple:
    vmfb, inputs, function, device, parameters = request
    try:
        _, module = load_vmfb(vmfb, device, parameters)
        return ("ok", host_arrays(module[function](*inputs)))  # (copies already)
    except Exception as e:  # noqa: BLE001 - handed to the caller, raised there
        try:
            pickle.dumps(e)
            return ("error", e)
        except Exception:  # noqa: BLE001
            return ("error", RuntimeError(f"{type(e).__name__}: {e}"))


def _serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Per request: fork, run it in the child, relay the child's reply (or how it died)."""
    while (data := _receive_bytes(stdin)) is not None:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            with os.fdopen(write_end, "wb") as out:
                _send(out, _run_request(pickle.loads(data)))
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as child:
            reply = _receive_bytes(child)
        _, status = os.waitpid(pid, 0)
        if reply is None:
            how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                   else f"exit status {os.waitstatus_to_exitcode(status)}")
            _send(stdout, ("died", how))
        else:
            stdout.write(_HEADER.pack(len(reply)) + reply)
            stdout.flush()


if __name__ == "__main__":
    import iree.runtime  # noqa: F401 - imported once, before any fork

    # The replies go to the stdout the caller reads; anything printed goes to stderr.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _serve(sys.stdin.buffer, replies)
