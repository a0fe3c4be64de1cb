"""``train.log``: what a run prints, kept in its run directory.

:class:`RunLog` tees ``sys.stdout``, ``sys.stderr`` and the root logger (so ``print``,
``tqdm.write``, warnings, log records and the messages of a failed run) for the life of one
Hydra job, and leaves what the terminal shows unchanged. The run directory is known, and safe to
write, only once the job holds its lock: until :meth:`RunLog.attach` names the file, the text is
kept in memory; a job that never attaches (refused, or a torchrun rank other than 0:
:meth:`RunLog.discard`) writes nothing. The file holds the text as a terminal shows it: a
progress bar's redraws (carriage returns) leave their last state alone on its line. An exception
that leaves the job (printed by Hydra after it) is written to the file as its traceback.

Also what a run prints about itself (rank 0, ``playground.run.loop``): the :func:`banner` before
its first step, and :class:`EvalProgress`, the progress of an evaluation's generation.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import IO

import torch
from tqdm import tqdm

from playground.config import Config, uses_bf16
from playground.run.budget import cost, duration_text, size_text

NAME = "train.log"


def visible(text: str) -> str:
    """The part of a line a terminal shows after its carriage returns: the last part that is
    not blank (a progress bar's last redraw)."""
    return next((part for part in reversed(text.split("\r")) if part.strip()), "")


class _Sink:
    """Complete lines of the teed text, each as :func:`visible` shows it, written to the file
    once attached (held until then)."""

    def __init__(self):
        self.partial, self.held, self.file = "", [], None
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            *lines, rest = (self.partial + text).split("\n")
            self.partial = visible(rest) + ("\r" if rest.endswith("\r") else "")
            self._emit("".join(visible(line) + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        pass

    def _emit(self, text: str) -> None:
        if self.file is not None:
            try:
                self.file.write(text)
                self.file.flush()
            except OSError:  # a full disk: the run's own record says so; the log stops quietly
                self.file = None
        elif self.held is not None:
            self.held.append(text)

    def attach(self, path: Path, mode: str) -> None:
        with self.lock:
            self.file = open(path, mode, encoding="utf-8")  # noqa: SIM115 - closed by close()
            self.file.write("".join(self.held or []))
            self.file.flush()
            self.held = None

    def close(self) -> None:
        with self.lock:
            try:
                if (tail := visible(self.partial)) and self.file is not None:
                    self.file.write(tail + "\n")
                if self.file is not None:
                    self.file.close()
            except OSError:  # a full disk, as in _emit
                pass
            self.file, self.held = None, None


class _Tee:
    """A text stream that writes to ``stream`` and to the sink; everything else (``isatty``,
    ``fileno``, ``encoding``) is ``stream``'s own."""

    def __init__(self, stream: IO[str], sink: _Sink):
        self._stream, self._sink = stream, sink

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        self._sink.write(text)
        return written

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class RunLog:
    """``with RunLog() as log:`` tees what the block prints; ``log.attach(path)`` starts the
    file."""

    def __init__(self):
        self._sink = _Sink()

    def __enter__(self) -> RunLog:
        self._streams = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Tee(sys.stdout, self._sink), _Tee(sys.stderr, self._sink)
        root = logging.getLogger()
        self._handler = logging.StreamHandler(self._sink)  # type: ignore[arg-type]
        self._handler.setFormatter(next((h.formatter for h in root.handlers if h.formatter), None))
        root.addHandler(self._handler)
        return self

    def attach(self, path: Path, fresh: bool = False) -> None:
        """Write the log to ``path`` from now on, beginning with what was held: appended to a
        log already there (a resumed run's continues), or, ``fresh``, replacing it."""
        self._sink.attach(path, "w" if fresh else "a")

    def discard(self) -> None:
        """Keep nothing (a process that does not write the run directory)."""
        self._sink.held = None

    def __exit__(self, kind, err, tb) -> None:
        if err is not None and not isinstance(err, SystemExit):  # Hydra prints it, after this
            self._sink.write("".join(traceback.format_exception(kind, err, tb)))
        logging.getLogger().removeHandler(self._handler)
        sys.stdout, sys.stderr = self._streams
        self._sink.close()


# -- what a run prints about itself -----------------------------------------------------------


def count_text(n: float) -> str:
    """A count as ``950``, ``12.3k``, ``2.46M`` or ``1.5G``."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


def banner(cfg: Config, counts: dict[str, int], device: torch.device, world_size: int) -> str:
    """What a run says before its first step: where it writes, what it trains (``counts``:
    ``LM.param_counts``) on what, and how much."""
    t, m, task = cfg.train, cfg.model, cfg.task
    difficulty = " ".join(f"{k}={v}" for k, v in task.difficulty().items())
    precision = "bf16 autocast" if uses_bf16(device, t.dtype) else "fp32"
    how = f"compile {t.compile_scope}/{t.compile_mode}" if t.compile else "no compile"
    tokens = t.steps * t.batch_size * task.context
    checkpoint = cost(cfg, counts["total"], device).checkpoint
    return "\n".join([
        f"run {cfg.out_dir}",
        f"  task {task.name} ({task.preset}: {difficulty}), context {task.context}",
        f"  model {m.size} {m.mixer.tag()} canon {m.canon.tag()}: {counts['non_embedding']:,} "
        f"parameters without the embeddings, {counts['total']:,} in all",
        f"  device {device} (world size {world_size}), {precision}, {how}",
        f"  {t.steps:,} steps × {t.batch_size} × {task.context} tokens = {count_text(tokens)} "
        f"tokens; checkpoints of {size_text(checkpoint)} each"])


class EvalProgress:
    """The progress of each generation of an evaluation (``model.generation_progress``): a tqdm
    bar on a terminal, else a line at each tenth done; both only once it has run ``quiet_s``
    seconds (a quick one shows nothing)."""

    def __init__(self, label: str, quiet_s: float = 5.0, clock=time.perf_counter):
        self.label, self.quiet_s, self.clock = label, quiet_s, clock

    def __call__(self, total: int):
        """Start one generation of ``total`` decoding steps; returns what it tells its steps to."""
        if sys.stdout.isatty():
            bar = tqdm(total=total, desc=f"{self.label} generating", unit="step", leave=False,
                       delay=self.quiet_s, file=sys.stdout, dynamic_ncols=True)

            def show(done: int) -> None:
                bar.update(done - bar.n)
                if done >= total:
                    bar.close()
            return show
        start, shown = self.clock(), [0]

        def line(done: int) -> None:
            tenth, elapsed = done * 10 // max(total, 1), self.clock() - start
            if tenth > shown[0] and elapsed >= self.quiet_s:
                shown[0] = tenth
                eta = elapsed * (total - done) / max(done, 1)
                print(f"[{self.label}] generating: {done * 100 // max(total, 1)}% ({done:,}/"
                      f"{total:,} decoding steps), elapsed {duration_text(elapsed)}, eta "
                      f"{duration_text(eta)}", flush=True)
        return line
