"""Progress on stderr: one bar line that redraws itself on a terminal (the clock ticks while a
long compile runs), timestamped lines otherwise (logs, pipes, CI). Messages that must stay
(warnings) are printed above the bar.

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
import threading
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
        self._item = 0  # 1-based index of the current item, 0 before the first
        self._status = ""
        self._drawn = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def step(self, name: str) -> None:
        """The next item starts (the previous one is done)."""
        if self._item:
            self.done = min(self.done + 1, self.total)
        self._item += 1
        self.note(name, item=True)

    def note(self, status: str, item: bool = False) -> None:
        """What the current item is doing (`item`: `status` is the item's name)."""
        counted = f"({self._item}/{self.total}) {status}"
        if self.bar:
            with self._lock:
                self._status = counted
                self._draw()
            self._start_ticker()
        else:
            self._line(counted if item else status)

    def message(self, text: str) -> None:
        """A line that stays visible (e.g. a warning), above the bar."""
        with self._lock:
            self._clear()
            print(text, file=self.stream, flush=True)
            if self.bar and self._status:
                self._draw()

    def close(self) -> None:
        """Removes the bar (the table follows on stdout)."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            self._clear()

    def _line(self, text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=self.stream, flush=True)

    def _start_ticker(self) -> None:
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            with self._lock:
                if self._drawn:
                    self._draw()

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
