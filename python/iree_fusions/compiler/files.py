"""Inputs read once, outputs written atomically: the one place every tool reads and writes.

Outputs. `OutputSet` stages each output in a temporary file next to its target and renames
them all over their targets only when the whole command succeeded (`commit`); on failure or
interruption it removes the temporary files (`discard`). A temporary is named
`.iree-fusions-<hash of the target's name>-<pid>-<random>.tmp`, short whatever the target's
name (every name the file system takes is an output name); one that a killed process left
(SIGKILL) is removed by the next write of the same output. A file that was there before is
therefore either left exactly as it was or replaced whole, never truncated or emptied, also
when the output is the input (editing in place). A target that cannot be renamed over (a
device such as /dev/null or /dev/full, a FIFO) is written directly; `-` is stdout. Every
failure is an `OutputError` with a one-line message.

Inputs. `read_input` reads a file once, whatever it is (a regular file, a FIFO, a pipe from
process substitution, a device, stdin), so that no tool sniffs a stream and reopens it, with an
optional size bound for what is held in memory. Failures are `InputError`s.

`split_input` splits `--split-input-file` text at `// -----` lines, on bytes (any encoding),
keeping each chunk's first line number so that diagnostics cite the file's lines.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
import tempfile

SPLIT_MARKER = b"// -----"
# The most --split-input-file input held in memory (split input is test-sized text).
SPLIT_INPUT_LIMIT = 256 << 20
_CHUNK = 1 << 20


class UserError(Exception):
    """A mistake of the user's (a bad flag, input, output or file): one line, no traceback.
    The tools print `prog: error: <message>` and exit non-zero."""


class InputError(UserError):
    """An input that cannot be read: missing, a directory, empty, or larger than allowed."""


class OutputError(UserError):
    """An output that cannot be written (its folder is missing, a directory, a full disk,
    stdout closed)."""


# ---------------------------------------------------------------- inputs


def describe_size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.0f} {unit}"
        n /= 1024
    return str(n)


def is_regular_file(path: str) -> bool:
    """True for a regular file (or a link to one): IREE may map it by path. Streams (FIFOs,
    pipes such as `<(cmd)`, devices, stdin) are read once, into memory."""
    if path == "-":
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def check_input(path: str, what: str = "input file") -> int:
    """Checks that a regular file is readable and not empty without reading it; its size."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not os.access(path, os.R_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as e:
        raise InputError(f"cannot read {what} '{path}': {e.strerror}") from None
    if st.st_size == 0:
        raise InputError(f"{what} '{path}' is empty")
    return st.st_size


def read_input(path: str, *, limit: int | None = None, what: str = "input file",
               allow_empty: bool = False) -> bytes:
    """The bytes of `path` (`-`: stdin), read once. `limit`: the most bytes accepted (an
    endless stream such as /dev/zero is refused after `limit` bytes, not read to exhaustion)."""
    name = "stdin" if path == "-" else f"'{path}'"
    try:
        if path == "-":
            data = _read_stream(sys.stdin.buffer if sys.stdin else None, limit)
        else:
            if limit is not None and is_regular_file(path) and os.path.getsize(path) > limit:
                raise _TooLarge
            with open(path, "rb") as f:
                data = _read_stream(f, limit)
    except _TooLarge:
        raise InputError(f"{what} {name} is larger than {describe_size(limit)}, the most this "
                         "reads into memory") from None
    except OSError as e:
        raise InputError(f"cannot read {what} {name}: {e.strerror}") from None
    if not allow_empty and not data.strip():
        raise InputError(f"{what} {name} is empty" if path != "-" else "the input (stdin) is "
                         "empty")
    return data


class _TooLarge(Exception):
    pass


def _read_stream(f, limit: int | None) -> bytes:
    if f is None:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))
    if limit is None:
        return f.read()
    buf = bytearray()
    while chunk := f.read(min(_CHUNK, limit + 1 - len(buf))):
        buf += chunk
        if len(buf) > limit:
            raise _TooLarge
    return bytes(buf)


def is_bytecode(data: bytes) -> bool:
    return data[:4] == b"ML\xefR"


def split_input(data: bytes) -> list[tuple[int, bytes]]:
    """`--split-input-file`: (number of lines before the chunk, chunk) per `// -----`
    separated chunk. Works on bytes, so any encoding splits; bytecode is never split."""
    if is_bytecode(data):
        return [(0, data)]
    out, start, current = [], 0, []
    for i, line in enumerate(data.splitlines(keepends=True)):
        if line.strip() == SPLIT_MARKER:
            out.append((start, b"".join(current)))
            start, current = i + 1, []
        else:
            current.append(line)
    out.append((start, b"".join(current)))
    return out


def at_file_line(offset: int, chunk: bytes) -> bytes:
    """A chunk padded with `offset` newlines, so that its diagnostics carry the lines of the
    file it was split from."""
    return chunk if is_bytecode(chunk) else b"\n" * offset + chunk


# ---------------------------------------------------------------- outputs


def _umask() -> int:
    """The process umask, read without changing it (other threads may create files)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class _Staged:
    """One output: a temporary file next to the target, or the target itself when it cannot
    be renamed over (a device, a FIFO)."""

    def __init__(self, path: str):
        self.path = path
        real = os.path.realpath(path)  # a link is followed: its target gets replaced
        try:
            st = os.stat(real)
        except FileNotFoundError:
            st = None
        except OSError as e:
            raise _error(path, e) from None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise OutputError(f"cannot open output file '{path}': Is a directory")
        self.direct = st is not None and not stat.S_ISREG(st.st_mode)
        self.real = real
        if self.direct:
            self.temp = path
            return
        folder, base = os.path.split(real)
        folder, prefix = folder or ".", _temp_prefix(base)
        _remove_stale_temps(folder, prefix)
        try:
            fd, self.temp = tempfile.mkstemp(dir=folder, prefix=f"{prefix}{os.getpid()}-",
                                             suffix=".tmp")
            os.fchmod(fd, (st.st_mode & 0o7777) if st is not None else 0o666 & ~_umask())
            os.close(fd)
        except OSError as e:
            raise _error(path, e) from None

    def commit(self) -> None:
        if not self.direct:
            try:
                os.replace(self.temp, self.real)
            except OSError as e:
                self.discard()
                raise _error(self.path, e) from None

    def discard(self) -> None:
        if not self.direct:
            try:
                os.unlink(self.temp)
            except OSError:
                pass


def _temp_prefix(base: str) -> str:
    """How the temporary files of output `base` (a file name) start: hidden, named by a hash
    of `base` rather than `base` itself, so that the whole name `<prefix><pid>-<random>.tmp`
    stays under 60 characters and fits wherever `base` fits (a 255-character `base` too)."""
    return f".iree-fusions-{hashlib.sha256(os.fsencode(base)).hexdigest()[:16]}-"


def _remove_stale_temps(folder: str, prefix: str) -> None:
    """Removes the temporary files of one output (`prefix`: `_temp_prefix`) that a killed
    process (SIGKILL: no cleanup possible) left behind: those whose pid no longer runs."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):].partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _error(path: str, e: OSError) -> OutputError:
    return OutputError(f"cannot open output file '{path}': {e.strerror or e}")


class OutputSet:
    """The outputs of one command, committed together when it succeeds.

        with OutputSet() as outputs:
            tmp = outputs.stage("m.vmfb")           # a tool writes this path
            outputs.write("report.json", data)      # or the data is given here
        # left without an exception: every output renamed into place; else all removed

    `stage` creates the temporary file at once, so an unwritable output is an error before
    any work is done."""

    def __init__(self):
        self._staged: dict[str, _Staged] = {}

    def stage(self, path: str) -> str:
        """The path to write `path`'s content to (`-`: none, use `write`)."""
        if path not in self._staged:
            self._staged[path] = _Staged(path)
        return self._staged[path].temp

    def write(self, path: str, data: bytes | str) -> None:
        """Writes the whole content of output `path` (`-`: stdout, written at once)."""
        if isinstance(data, str):
            data = data.encode()
        if path == "-":
            write_stdout(data)
            return
        target = self.stage(path)
        try:
            with open(target, "wb") as f:
                f.write(data)
        except OSError as e:
            raise OutputError(f"cannot write output file '{path}': {e.strerror or e}") from None

    def commit(self) -> None:
        staged, self._staged = self._staged, {}
        try:
            for s in staged.values():
                s.commit()
        finally:
            for s in staged.values():
                s.discard()

    def discard(self) -> None:
        staged, self._staged = self._staged, {}
        for s in staged.values():
            s.discard()

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def write_file(path: str, data: bytes | str) -> None:
    """Writes one output atomically (`-`: stdout)."""
    with OutputSet() as outputs:
        outputs.write(path, data)


def write_stdout(data: bytes) -> None:
    """Writes to stdout; a closed, full or broken stdout is an OutputError (and later writes
    go nowhere, so that Python's exit does not complain again)."""
    if 1 in _CLOSED:
        raise OutputError("cannot write to stdout: it is closed")
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]
    except OSError as e:
        _silence_stdout()
        raise OutputError(f"cannot write to stdout: {e.strerror or e}") from None


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


# Standard fds found closed at start (claim_std_streams): stdout among them is an error to
# write to, not /dev/null.
_CLOSED: set[int] = set()


def claim_std_streams() -> None:
    """Opens /dev/null on stdin/stdout/stderr where they are closed, so that no pipe or file
    the tool opens lands on fd 0-2 and gets written as if it were stdout; writing to a stdout
    that was closed stays an error (write_stdout, check_output)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            _CLOSED.add(fd)
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def check_output(path: str) -> None:
    """Fails early (before hours of work) when `path` cannot be written."""
    if path == "-":
        if 1 in _CLOSED:
            raise OutputError("cannot write to stdout: it is closed")
        return
    _Staged(path).discard()
