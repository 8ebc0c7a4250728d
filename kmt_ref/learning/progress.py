"""A one-line progress bar on stderr: step, loss, validation ratio, ETA."""

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
    stream : file, optional
        Defaults to ``sys.stderr``.
    """

    def __init__(self, total, start=0, stream=None, width=24):
        self.total, self.start, self.width = total, start, width
        self.stream = sys.stderr if stream is None else stream
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.t0 = time.perf_counter()

    def line(self, step, loss, val_ratio, lr):
        done = step - self.start
        rate = (time.perf_counter() - self.t0) / done if done > 0 else float("nan")
        eta = _clock(rate * (self.total - step)) if done > 0 else "?"
        filled = int(self.width * step / max(1, self.total))
        bar = "#" * filled + "." * (self.width - filled)
        return (
            f"[{bar}] {step}/{self.total} loss {loss:.4g} val/Lloyd {val_ratio:.4f} "
            f"lr {lr:.3g} {rate:.3f} s/step ETA {eta}"
        )

    def update(self, step, loss, val_ratio, lr, validated=False):
        if self.tty:
            self.stream.write("\r" + self.line(step, loss, val_ratio, lr) + " ")
        elif validated or step == self.total:
            self.stream.write(self.line(step, loss, val_ratio, lr) + "\n")
        self.stream.flush()

    def close(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
