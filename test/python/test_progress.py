"""Progress on stderr: a bar on a terminal, plain timestamped lines in logs."""

import io
import re

from iree_fusions.tools.progress import Progress


def test_lines_when_not_a_terminal():
    out = io.StringIO()
    p = Progress(2, stream=out)
    assert not p.bar
    p.step("a")
    p.note("a: compiling")
    p.message("a: warning: kept")
    p.step("b")
    p.close()
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] \(1/2\) a", lines[0])
    assert lines[1].endswith("] a: compiling") and lines[2] == "a: warning: kept"
    assert lines[3].endswith("(2/2) b") and "\r" not in out.getvalue()


def test_bar_redraws_one_line_and_keeps_messages():
    out = io.StringIO()
    p = Progress(2, stream=out, bar=True)
    p.step("a")
    p.note("a: compiling")
    p.message("a: warning: kept")
    p.step("b")
    p.close()
    text = out.getvalue()
    assert "\r\033[K[" in text and "(1/2) a: compiling" in text
    assert "a: warning: kept\n" in text
    assert "[##########..........]" in text  # one of two done
    assert text.endswith("\r\033[K")  # the bar is gone before the table
