"""A one-line progress bar on stderr: step, loss, validation ratio, ETA."""

import collections
import sys
import time

__all__ = ["Progress"]


def _clock(seconds):
    seconds = int(max(0, seconds))
    h, rem = divmod(seconds, 3600)
    return f"{h}h{rem // 60:02d}m" if h else f"{rem // 60}m{rem % 60:02d}s"


class Progress:
    """Report training progress.

    On a terminal the line is redrawn in place after every step; otherwise
    (``nohup``, logs) one line is written per validation, so logs stay short.

    Parameters
    ----------
    total : int
        Final step.
    start : int
        Step the run (re)starts from; the ETA uses only steps timed here.
    window : int
        The ETA and the seconds per step are those of the last ``window`` steps
        (the machine's load, and a step's cost, change during a run).
    stream : file, optional
        Defaults to ``sys.stderr``.
    """

    def __init__(self, total, start=0, stream=None, width=24, window=200):
        self.total, self.start, self.width = total, start, width
        self.stream = sys.stderr if stream is None else stream
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.window = window
        self.times = collections.deque([(start, time.perf_counter())])

    def line(self, step, loss, val_ratio, lr):
        """The progress line at ``step``: bar, loss, validation ratio, learning rate, speed and ETA."""
        if step > self.times[-1][0]:
            self.times.append((step, time.perf_counter()))
        while len(self.times) > 2 and self.times[1][0] <= step - self.window:
            self.times.popleft()
        (first, t_first), (last, t_last) = self.times[0], self.times[-1]
        done = last - first
        rate = (t_last - t_first) / done if done > 0 else float("nan")
        eta = _clock(rate * (self.total - step)) if done > 0 else "?"
        filled = int(self.width * step / max(1, self.total))
        bar = "#" * filled + "." * (self.width - filled)
        return (
            f"[{bar}] {step}/{self.total} loss {loss:.4g} val/Lloyd {val_ratio:.4f} "
            f"lr {lr:.3g} {rate:.3f} s/step ETA {eta}"
        )

    def update(self, step, loss, val_ratio, lr, validated=False):
        """Redraw the line (a terminal), or print it at each validation and at the end (a log)."""
        if self.tty:
            self.stream.write("\r" + self.line(step, loss, val_ratio, lr) + " ")
        elif validated or step == self.total:
            self.stream.write(self.line(step, loss, val_ratio, lr) + "\n")
        self.stream.flush()

    def close(self):
        """End the line on a terminal."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
