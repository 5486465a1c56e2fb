"""Progress on stderr: one bar line that redraws itself on a terminal, timestamped lines
otherwise (logs, pipes, CI). Messages that must stay (warnings) are printed above the bar.

    progress = Progress(total=3)
    progress.step("dlrm-b8")              # item 1 of 3 starts
    progress.note("dlrm-b8: compiling")   # what it is doing now
    progress.message("dlrm-b8: warning: ...")
    progress.close()
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TextIO


class Progress:
    """Where a run of `total` items is, on `stream` (default: stderr)."""

    def __init__(self, total: int, stream: TextIO | None = None, bar: bool | None = None):
        self.total = max(total, 1)
        self.stream = stream or sys.stderr
        if bar is None:
            isatty = getattr(self.stream, "isatty", lambda: False)()
            bar = isatty and os.environ.get("TERM") != "dumb"
        self.bar = bar
        self.done = 0
        self.started = time.monotonic()
        self._status = ""
        self._drawn = False

    def step(self, name: str) -> None:
        """The next item starts (the previous one is done)."""
        if self._status:
            self.done = min(self.done + 1, self.total)
        self.note(f"({self.done + 1}/{self.total}) {name}")

    def note(self, status: str) -> None:
        """What the current item is doing."""
        self._status = status or " "
        if self.bar:
            self._draw()
        else:
            self._line(status)

    def message(self, text: str) -> None:
        """A line that stays visible (e.g. a warning), above the bar."""
        if self.bar:
            self._clear()
            print(text, file=self.stream, flush=True)
            self._draw()
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        """Removes the bar (the table follows on stdout)."""
        if self.bar:
            self._clear()

    def _line(self, text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=self.stream, flush=True)

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = False

    def _draw(self) -> None:
        width = shutil.get_terminal_size((100, 20)).columns
        elapsed = int(time.monotonic() - self.started)
        filled = round(20 * self.done / self.total)
        head = f"[{'#' * filled}{'.' * (20 - filled)}] {elapsed // 60}:{elapsed % 60:02d} "
        text = (head + self._status)[: max(width - 1, 10)]
        self.stream.write("\r\033[K" + text)
        self.stream.flush()
        self._drawn = True
