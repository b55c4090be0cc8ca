"""Progress of a long command on stderr: a bar on a terminal, one line per step elsewhere.

A command calls its :class:`Steps` with a message as each step starts, and tells it how many
steps are still to come as soon as it can (:meth:`Steps.expect`). When stderr is a terminal, that
is a Rich progress bar (the current step, steps done of the total, elapsed time); otherwise one
``[HH:MM:SS] message`` line per step, so a log or a pipe gets plain text. stdout is never
written: it holds the command's report, and JSON piped from it stays clean.

Only large inputs are shown (:func:`large_file`, or a frame of :data:`LARGE_INPUT_ROWS` rows
once read): a small one is done before anyone would look.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

LARGE_INPUT_ROWS = 100_000
LARGE_INPUT_BYTES = 64 << 20


def large_file(path: str | Path) -> bool:
    """Whether ``path`` is large enough to show progress; a file that cannot be read is left to
    the reader, which says why."""
    try:
        return Path(path).stat().st_size >= LARGE_INPUT_BYTES
    except OSError:
        return False


class Steps:
    """The steps of one command, reported on ``stream`` (stderr by default) while ``shown``,
    which a command may turn on once it knows its input is large."""

    def __init__(self, shown: bool, stream: TextIO | None = None):
        self.shown = shown
        self._stream = stream or sys.stderr
        self._bar: Progress | None = None
        self._started = 0  # steps started while shown
        self._total: int | None = None

    def expect(self, remaining: int) -> None:
        """``remaining`` more steps will start after those already started."""
        self._total = self._started + remaining
        if self._bar is not None:
            self._bar.update(self._task, total=self._total)

    def __call__(self, message: str) -> None:
        """A step starts: the one before it is done."""
        if not self.shown:
            return
        if not self._stream.isatty():
            self.note(message)
            return
        if self._bar is None:
            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=self._stream),
            )
            self._task = self._bar.add_task(message, total=self._total)
            self._bar.start()
        # Drawn now, not at the next tick: a short step is seen too.
        self._bar.update(self._task, description=message, completed=self._started, refresh=True)
        self._started += 1

    def note(self, message: str) -> None:
        """A line that starts no step: above the bar on a terminal."""
        if not self.shown:
            return
        if self._bar is not None:
            self._bar.console.print(message, highlight=False, markup=False)
        else:
            print(f"[{time.strftime('%H:%M:%S')}] {message}", file=self._stream, flush=True)

    def close(self, done: bool = True) -> None:
        """Stop the bar, full when the command is ``done`` (a search that stopped early skipped
        steps it no longer needed)."""
        if self._bar is None:
            return
        if done:
            total = max(self._total or 0, self._started)
            self._bar.update(self._task, description="done", total=total, completed=total)
        self._bar.stop()
        self._bar = None

    def __enter__(self) -> Steps:
        return self

    def __exit__(self, error_type, error, traceback) -> None:
        self.close(done=error_type is None)
