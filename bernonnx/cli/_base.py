"""Exit statuses, the bad-input error and the progress lines of the command line."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator

EXIT_OK = 0
#: an unexpected failure: a bug, or a library error the command line did not foresee
EXIT_FAILURE = 1
#: bad usage or bad input, the exit status argparse uses for usage errors
EXIT_USAGE = 2
#: the ONNX graph's outputs differ from Python's beyond the parity tolerance
EXIT_PARITY = 3

_EXIT_HELP = """\
exit status:
  0  success
  1  unexpected failure (add --traceback before the command to see where)
  2  bad usage or bad input: unknown option or method, unreadable or missing file,
     missing column, non-binary labels, non-numeric or non-finite scores, too few
     rows to fit, an output path that is an input or cannot be written (a folder,
     a read-only place); nothing new is left on disk
  3  the ONNX graph does not reproduce Python within the parity tolerance (export,
     demo): the report is printed, the .onnx file is written for inspection, the
     Triton repository and ORT files are not (nothing is written when to_onnx's own
     check on the file's rows finds the difference)
"""


class InputError(ValueError):
    """Bad command-line usage or bad input data: reported in one line, exit status 2."""


class _Progress:
    """One stderr line per step with its elapsed seconds; silent when ``quiet``.

    On a terminal the step name is printed first and the time appended when the step
    ends, so a slow step shows what is running; elsewhere (logs, CI) one whole line is
    written when the step ends.
    """

    def __init__(self, quiet: bool = False, stream=None):
        self.quiet = quiet
        self.stream = sys.stderr if stream is None else stream
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def note(self, text: str, *, always: bool = False) -> None:
        if always or not self.quiet:
            print(f"bernonnx: {text}", file=self.stream, flush=True)

    @contextlib.contextmanager
    def step(self, text: str) -> Iterator[None]:
        if self.quiet:
            yield
            return
        if self.tty:
            print(f"bernonnx: {text} ...", end="", file=self.stream, flush=True)
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            if self.tty:
                print(" failed", file=self.stream, flush=True)
            raise
        seconds = time.perf_counter() - start
        if self.tty:
            print(f" {seconds:.1f} s", file=self.stream, flush=True)
        else:
            print(f"bernonnx: {text} ... {seconds:.1f} s", file=self.stream, flush=True)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1), got {value}")
    return value
