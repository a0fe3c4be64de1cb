"""The run directory, the only source of truth for results.

``results/<sweep>/<run>/`` holds ``config.yaml`` (resolved), ``metrics.jsonl`` (one JSON object
per log/eval step), ``summary.json`` (final metrics, parameter counts, git SHA, wall time,
status) and ``checkpoints/``. Every file is written atomically (temp file, then rename) so a
killed run never leaves a half-written result behind.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import tempfile
from pathlib import Path

import torch

CKPT_RE = re.compile(r"step_(\d+)\.pt$")


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _json_safe(obj):
    """NaN/inf are not JSON; write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def write_json(path: Path, obj) -> None:
    atomic_write(path, (json.dumps(_json_safe(obj), indent=2, sort_keys=True) + "\n").encode())


def read_json(path: Path):
    return json.loads(Path(path).read_text())


class MetricsLog:
    """Append-only ``metrics.jsonl``; on resume, records after the checkpoint step are dropped so
    the file reads as if the run had never been interrupted."""

    def __init__(self, path: Path):
        self.path = path

    def append(self, record: dict) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(_json_safe(record), sort_keys=True) + "\n")

    def records(self) -> list[dict]:
        if not self.path.exists():
            return []
        lines = self.path.read_text().splitlines()
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a kill: drop it
                continue
        return out

    def truncate_after(self, step: int) -> None:
        kept = [r for r in self.records() if r["step"] <= step]
        atomic_write(self.path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in kept).encode())


def checkpoint_paths(ckpt_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    if not ckpt_dir.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in ckpt_dir.iterdir() if (m := CKPT_RE.search(p.name))]
    return [p for _, p in sorted(found)]


def save_checkpoint(ckpt_dir: Path, step: int, state: dict, keep: int) -> Path:
    path = ckpt_dir / f"step_{step:08d}.pt"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=ckpt_dir, prefix=".tmp_", suffix=".part")
    os.close(fd)
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    for old in checkpoint_paths(ckpt_dir)[:-keep]:
        old.unlink()
    return path


def load_checkpoint(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=False)


def git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None
