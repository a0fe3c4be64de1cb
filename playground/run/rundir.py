"""The run directory, the only source of truth for results, and what a run records of itself.

``results/<sweep>/<run>/`` holds ``config.yaml`` (resolved), ``metrics.jsonl`` (one JSON object
per log/eval step; a finished run's may be kept packed, ``metrics.jsonl.gz``: :class:`MetricsLog`),
``summary.json`` (final metrics, parameter counts, git SHA, wall time,
status, the command line), ``train.log`` (what the run printed: ``playground.run.runlog``),
with ``train.save_samples`` ``eval_samples.jsonl`` (the last evaluation's per-question records,
``Task.eval_records``) and ``checkpoints/`` (each with the resolved config inside, so one file
loads alone). Every file but the log is written atomically (temp file, then rename) so a killed
run never leaves a half-written result behind, and every file is mode 0644 (``SHARED_MODE``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import gzip
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import torch
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from playground.cli import SHARED_MODE, atomic_write, json_safe, read_json, write_json  # noqa: F401
from playground.config import Config, canon_details, check_names, from_container, plugin
from playground.data.packing import resolve_packing
from playground.errors import ConfigError, raised_from

CKPT_RE = re.compile(r"step_(\d+)\.pt$")


WRITER = ".writer.json"  # who holds a run directory's lock (removed when it lets go)


class RunLocked(RuntimeError):
    """Another process is writing this run directory."""


@contextlib.contextmanager
def writer_lock(out: Path):
    """Hold an exclusive lock on the run directory ``out`` (``flock`` on the directory itself,
    released by the kernel if the process dies) for the life of the block, with ``.writer.json``
    naming the holder; a second writer gets :class:`RunLocked` at once, naming the first."""
    fd = os.open(out, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = read_json(out / WRITER)
                who = (f"pid {holder.get('pid')} on {holder.get('host')}, "
                       f"since {holder.get('since')}")
            except (OSError, ValueError):
                who = "a process that has not yet said who it is"
            raise RunLocked(f"{out} is being written by another process ({who}); wait for it to "
                            "end or stop it, then run the same command again") from None
        write_json(out / WRITER, {"pid": os.getpid(), "host": socket.gethostname(),
                                  "since": datetime.now(timezone.utc).isoformat()})
        try:
            with _heartbeat(out / WRITER):
                yield
        finally:
            (out / WRITER).unlink(missing_ok=True)
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


HEARTBEAT_S = 60.0  # a writer touches its .writer.json this often (see writer_gone)


@contextlib.contextmanager
def _heartbeat(path: Path):
    """Touch ``path`` every HEARTBEAT_S seconds for the life of the block (a daemon thread)."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            with contextlib.suppress(OSError):
                os.utime(path)

    thread = threading.Thread(target=beat, name="run-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def writer_gone(out: Path) -> bool:
    """Whether no process writes run directory ``out`` now. On this host a free lock is proof (the
    kernel frees a writer's lock when its process dies); a ``.writer.json`` naming another host
    and touched within three heartbeats means a writer there (whose lock a shared file system may
    not show)."""
    if not out.is_dir():
        return True
    fd = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    try:
        holder, age = read_json(out / WRITER), time.time() - (out / WRITER).stat().st_mtime
    except (OSError, ValueError):
        return True
    return holder.get("host") == socket.gethostname() or age > 3 * HEARTBEAT_S


def exit_text(code: int) -> str:
    """A process's exit status as words: ``exit status 1``, ``killed by SIGKILL``."""
    if code >= 0:
        return f"exit status {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def record_end(out: Path, code: int, log: Path | None = None) -> str | None:
    """What a launcher records once the process that ran ``out`` ended with exit status ``code``
    (negative: killed by that signal), where the run could not: ``interrupted`` where summary.json
    still says ``running`` (the process died mid-run) or, killed by a signal, where there is none;
    ``failed`` where there is none and ``code`` is an error (it ended before recording anything).
    Nothing while a writer holds the run (:func:`writer_gone`) or where summary.json is damaged.
    Returns the status recorded, or None."""
    path = out / "summary.json"
    if not writer_gone(out) or not (out.is_dir() or code):
        return None
    how = exit_text(code) + (f"; its output: {log}" if log else "")
    out.mkdir(parents=True, exist_ok=True)
    try:
        with writer_lock(out):
            (out / RESERVE).unlink(missing_ok=True)  # a dead writer's
            try:
                summary = read_json(path) if path.exists() else None
            except (ValueError, UnicodeDecodeError):
                return None
            now = datetime.now(timezone.utc).isoformat()
            if isinstance(summary, dict) and summary.get("status") == "running":
                error = (f"its process ended without recording an outcome ({how}); run it again "
                         "to resume from its newest checkpoint")
                write_json(path, {**summary, "status": "interrupted", "finished": now,
                                  "error": error})
                return "interrupted"
            if summary is None and code:
                status = "interrupted" if code < 0 else "failed"
                write_json(path, {"status": status, "finished": now,
                                  "error": f"its process ended before recording anything ({how})"})
                return status
    except RunLocked:
        return None
    return None


# -- a full disk -------------------------------------------------------------------------------

NO_SPACE = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded"}
RESERVE = ".reserve"  # disk space a writer holds for recording its outcome on a full disk
RESERVE_BYTES = 256 * 1024


def disk_full(err: BaseException | None) -> OSError | None:
    """The OSError of a full disk (ENOSPC, EDQUOT) that ``err`` is or was raised from, or None."""
    return raised_from(err, lambda e: isinstance(e, OSError) and e.errno in NO_SPACE)


def disk_full_text(err: BaseException) -> str | None:
    """``no space left on device (writing PATH)`` for a full disk behind ``err``, else None."""
    if (full := disk_full(err)) is None:
        return None
    return NO_SPACE[full.errno] + (f" (writing {full.filename})" if full.filename else "")


@contextlib.contextmanager
def reserved_space(out: Path):
    """Hold RESERVE_BYTES of disk in ``out`` (``.reserve``, allocated) for the life of the block,
    for :func:`write_summary` to free on a full disk; removed at the end."""
    path = out / RESERVE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, SHARED_MODE)
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError as err:
            if err.errno in NO_SPACE:
                raise OSError(err.errno, err.strerror, str(path)) from None
            os.write(fd, bytes(RESERVE_BYTES))  # a file system without fallocate
        finally:
            os.close(fd)
        yield
    finally:
        path.unlink(missing_ok=True)


def write_summary(out: Path, summary: dict) -> None:
    """``out/summary.json``, atomically. On a full disk (:func:`disk_full`) the space that
    :func:`reserved_space` holds is freed and the write tried again. Failing that, a short record
    is written over the old file in place (into blocks it already has): the summary's own
    ``status`` and ``error`` where it records how a run ended; for ``running`` or ``finished``
    (which need the whole record) ``failed`` with the full disk as the error, which is then
    raised."""
    path = out / "summary.json"
    if _written(path, summary):
        return
    (out / RESERVE).unlink(missing_ok=True)
    if _written(path, summary):
        return
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    ended = summary.get("status") not in ("running", "finished")
    short = {"status": summary.get("status"), "error": summary.get("error")} if ended else \
        {"status": "failed", "error": disk_full_text(full)}
    with open(path, "r+b" if path.exists() else "wb") as f:
        f.write((json.dumps(short, sort_keys=True) + "\n").encode())
        f.truncate()
        f.flush()
        os.fsync(f.fileno())
    if not ended:
        raise full


def _written(path: Path, obj: dict) -> bool:
    """Write ``obj`` as JSON to ``path`` atomically; False (nothing written) on a full disk."""
    try:
        write_json(path, obj)
    except OSError as err:
        if disk_full(err) is None:
            raise
        return False
    return True


def locate(dcfg: DictConfig) -> Path:
    """The run directory (``out_dir``) of a composed config, its names checked
    (``config.check_names``); a ConfigError naming the key when it cannot be formed (e.g.
    ``task.name=``: no run name)."""
    try:
        names = str(dcfg.sweep), str(dcfg.run_name), str(dcfg.out_dir)
    except OmegaConfBaseException as err:  # wraps what the run-name resolver raised
        cause = raised_from(err, lambda e: isinstance(e, ConfigError))
        formed = ConfigError(f"out_dir cannot be formed: {err}".replace("\n", " "))
        raise (cause or formed) from None
    check_names(*names)
    return Path(names[2])


class MetricsLog:
    """Append-only ``metrics.jsonl``; on resume, records after the checkpoint step are dropped so
    the file reads as if the run had never been interrupted. A finished run's log may be kept
    packed, ``metrics.jsonl.gz`` in its place (:meth:`pack`, ``playground-report pack``: about a
    quarter of the bytes): it reads the same, and a write unpacks it first."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.packed = self.path.with_name(self.path.name + ".gz")

    def append(self, record: dict) -> None:
        self._unpack()
        with open(self.path, "a") as f:
            f.write(json.dumps(json_safe(record), sort_keys=True) + "\n")

    def clear(self) -> None:
        """Remove the log, plain or packed (a run that starts from step 0)."""
        self.path.unlink(missing_ok=True)
        self.packed.unlink(missing_ok=True)

    def _is_packed(self) -> bool:
        """Whether the log is the packed file; the plain one there too is an error naming both."""
        if not self.packed.exists():
            return False
        if self.path.exists():
            raise ConfigError(f"{self.path} and {self.packed.name} are both there, one log "
                              "twice: keep the run's own (the plain one, if it was written "
                              "after the packing) and delete the other")
        return True

    def _text(self) -> str | None:
        """The log's text, from whichever of the plain and the packed file is there (None if
        neither)."""
        if self._is_packed():
            try:
                return gzip.decompress(self.packed.read_bytes()).decode()
            except (OSError, EOFError, UnicodeDecodeError) as err:
                raise ConfigError(f"{self.packed} cannot be unpacked ({err}): the file was "
                                  "damaged; restore it from the run's copy") from None
        return self.path.read_text() if self.path.exists() else None

    def _unpack(self) -> None:
        if self.packed.exists():
            atomic_write(self.path, self._text().encode())
            self.packed.unlink()

    def records(self) -> list[dict]:
        """Every record. A last line without its newline (cut by a kill during the append) is
        dropped; any other line that is not a JSON record is an error naming the file and line."""
        text = self._text()
        if text is None:
            return []
        lines = text.splitlines()
        out = []
        for number, line in enumerate(lines, 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = None
            if isinstance(record, dict):
                out.append(record)
            elif not (number == len(lines) and not text.endswith("\n")):
                where = self.path if self.path.exists() else self.packed
                raise ConfigError(f"{where}, line {number}, is not a JSON record "
                                  f"({line[:60]!r}): the file was damaged; delete or repair that "
                                  "line, then run again")
        return out

    def truncate_after(self, step: int) -> None:
        kept = [r for r in self.records() if r["step"] <= step]
        atomic_write(self.path,
                     "".join(json.dumps(r, sort_keys=True) + "\n" for r in kept).encode())
        self.packed.unlink(missing_ok=True)

    def pack(self) -> tuple[int, int] | None:
        """Replace the plain log by ``metrics.jsonl.gz``, the same bytes compressed (the same
        packed bytes for the same log: no time or name in its header); (bytes before, after), or
        None where there is no plain log (never written, or packed already)."""
        if not self.path.exists() or self._is_packed():  # both there: an error naming them
            return None
        raw = self.path.read_bytes()
        packed = gzip.compress(raw, compresslevel=9, mtime=0)
        if gzip.decompress(packed) != raw:  # not expected; the plain log stays where it is
            raise ConfigError(f"{self.path}: its packed copy does not read back the same; "
                              "left unpacked")
        atomic_write(self.packed, packed)
        self.path.unlink()
        return len(raw), len(packed)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def checkpoint_paths(ckpt_dir: Path) -> list[Path]:
    """Complete checkpoints (a ``.sha256`` sidecar is written last, after the rename), oldest
    first."""
    if not ckpt_dir.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in ckpt_dir.iterdir()
             if (m := CKPT_RE.search(p.name)) and _sidecar(p).exists()]
    return [p for _, p in sorted(found)]


def clean_stale(out: Path) -> list[Path]:
    """Remove what a killed writer of run directory ``out`` can leave behind, and return it:
    temp files of atomic writes (``.<name>.*.tmp``), a checkpoint's temp file (``.tmp_*``) and a
    checkpoint without its ``.sha256`` sidecar (killed between its rename and the sidecar's
    write; it never counts, see :func:`checkpoint_paths`). Call it only holding the run's lock."""
    ckpt_dir = out / "checkpoints"
    stale = [*out.glob(".*.tmp"), *ckpt_dir.glob(".*.tmp"), *ckpt_dir.glob(".tmp_*")]
    stale += [p for p in ckpt_dir.glob("step_*.pt")
              if CKPT_RE.search(p.name) and not _sidecar(p).exists()]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def save_checkpoint(ckpt_dir: Path, step: int, state: dict, keep: int) -> Path:
    """Write ``step_<step>.pt`` atomically with its checksum; keep the newest ``keep``."""
    path = ckpt_dir / f"step_{step:08d}.pt"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=ckpt_dir, prefix=".tmp_", suffix=".part")
    os.close(fd)
    os.chmod(tmp, SHARED_MODE)  # as its .sha256 and every other result
    try:
        with open(tmp, "wb") as f:  # through Python's file: a full disk raises OSError(ENOSPC)
            torch.save(state, f)
        digest = _sha256(Path(tmp))
        os.replace(tmp, path)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        if (full := disk_full(err)) is not None:  # named by the checkpoint it was writing
            raise OSError(full.errno, os.strerror(full.errno), str(path)) from err
        raise
    atomic_write(_sidecar(path), (digest + "\n").encode())
    for old in checkpoint_paths(ckpt_dir)[:-keep]:
        _sidecar(old).unlink(missing_ok=True)
        old.unlink(missing_ok=True)
    return path


def load_checkpoint(path: Path) -> dict:
    """Load a checkpoint after verifying its checksum (ValueError if it does not match); a file
    copied without its ``.sha256`` loads unverified (its ``config`` makes it whole alone)."""
    if _sidecar(path).exists() and _sha256(path) != _sidecar(path).read_text().strip():
        raise ValueError(f"checkpoint {path} does not match its checksum (truncated or corrupt)")
    return torch.load(path, map_location="cpu", weights_only=False)


def load_latest_checkpoint(ckpt_dir: Path) -> tuple[Path, dict] | None:
    """The newest checkpoint that verifies; a corrupt one is skipped with a warning."""
    for path in reversed(checkpoint_paths(ckpt_dir)):
        try:
            return path, load_checkpoint(path)
        except Exception as err:  # noqa: BLE001 - any unreadable checkpoint falls back
            warnings.warn(f"skipping checkpoint {path.name}: {err}", stacklevel=2)
    return None


# Keys that may differ between a run and its resumption: they do not change what is computed
# (the device, train.deterministic, train.compile_scope, train.compile_mode,
# train.ddp_bucket_graphs and train.grad_sync change how, so the last bits may differ;
# train.eval_graphs, how evaluations decode).
VOLATILE = ("hydra", "out_dir", "run_name", "sweep", "panel", "variant", "wandb", "train.progress",
            "train.resume", "train.device", "train.deterministic", "train.compile_scope",
            "train.compile_mode", "train.ddp_bucket_graphs", "train.grad_sync",
            "train.eval_batch_size", "train.eval_graphs", "train.save_samples",
            "data.num_workers", "data.prefetch", "data.stall_s",
            "train.length_scales")  # the last: an extra evaluation after training


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def identity(config: dict) -> dict:
    """The flattened config without VOLATILE keys: what determines a run's numbers."""
    return {k: v for k, v in _flatten(config).items() if not k.startswith(VOLATILE)}


def config_hash(config: dict) -> str:
    """sha256 of the run's identity (sorted JSON), recorded in summary.json."""
    return hashlib.sha256(json.dumps(identity(config), sort_keys=True).encode()).hexdigest()


def hash_mismatch(summary: dict, config: dict) -> bool:
    """Whether ``config`` (a run's config.yaml) is not the config its summary recorded by hash
    (edited after the run); a summary without a hash matches."""
    return summary.get("config_hash") not in (None, config_hash(config))


def config_differences(old: dict, new: dict) -> list[str]:
    """Keys whose values differ between two resolved configs, ignoring VOLATILE keys."""
    a, b = identity(old), identity(new)
    return [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k)]


# Packages whose kernels a run may take (Triton's compiler, GLA's and GDN's fla kernels, Mamba2's
# mamba_ssm and causal-conv1d): their versions are recorded where installed.
KERNEL_PACKAGES = ("triton", "fla-core", "mamba_ssm", "causal_conv1d")


def versions() -> dict[str, str]:
    """Versions of the packages that determine the numbers: always Python, torch (and its CUDA),
    numpy and omegaconf; those of :data:`KERNEL_PACKAGES` that are installed."""
    import platform
    from importlib import metadata

    import numpy
    import omegaconf

    found = {"python": platform.python_version(), "torch": torch.__version__,
             "numpy": numpy.__version__, "omegaconf": omegaconf.__version__,
             "cuda": torch.version.cuda or "none"}
    for name in KERNEL_PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def placement(device: torch.device) -> dict[str, str | None]:
    """Where a run computes, for its summary: ``device_name``, the GPU's name (``NVIDIA H200``)
    for a CUDA device, else its type; ``host``; ``cuda_visible_devices``, the GPUs the process
    was given (a local launch gives each run one), None where unset. Runs of one host and one
    GPU whose times overlap shared that GPU (``playground.sweep.measured``)."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    return {"device_name": name, "host": socket.gethostname(),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_sha() -> str | None:
    return _git("rev-parse", "HEAD") or None


def git_dirty() -> bool | None:
    """Whether the code's tracked files differ from that commit (then ``git_sha`` alone does not
    say what ran), or None outside a git checkout."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return None if status is None else bool(status)


# -- what a run is ---------------------------------------------------------------------------

# mixer fields that choose how, not what, to compute
HOW = ("name", "backend", "autotune", "chunk")
CANON_FIELDS = ("positions", "residual", "kernel", "activation", "bias", "init", "init_scale",
                "init_current", "dynamic", "rank", "group", "after_every_linear")


def run_record(cfg: Config) -> dict:
    """What a run *is*, as fields: ``summary.json``'s ``record``, which the report reads (never
    the run's name). Its task (family, preset, difficulty, the heatmap panel and row it is a
    cell of, the metrics its task states, and how its examples were packed: ``data.packing``
    resolved), architecture, Canon, size, sweep and seed."""
    t, m = cfg.task, cfg.model
    task_cls = plugin("playground.tasks", t.name, "task.name")
    row, row_order = t.row()
    mixer = {k: v for k, v in dataclasses.asdict(m.mixer).items() if k not in HOW}
    return {
        "task": {"family": t.name, "preset": t.preset, "difficulty": t.difficulty(),
                 "context": t.context, "data_seed": t.seed, "panel": cfg.panel or t.panel(),
                 "row": row, "row_order": row_order, "heatmap": task_cls.heatmap,
                 "metric": task_cls.primary_metric, "metric2": task_cls.secondary_metric,
                 "depth_metric": task_cls.depth_metric,
                 "packing": resolve_packing(task_cls, cfg.data.packing)},
        "arch": {"mixer": m.mixer.name, "label": m.mixer.tag(), "mlp": m.mlp,
                 "position": m.mixer.position() if hasattr(m.mixer, "position") else "none",
                 **mixer},
        "canon": {"label": m.canon.tag(), "details": canon_details(m.canon),
                  **{k: getattr(m.canon, k) for k in CANON_FIELDS}},
        "size": {"label": m.size, "layers": m.n_layers, "blocks": m.n_layers * m.depth_multiplier,
                 "width": m.d_model, "heads": m.d_model // m.head_dim, "head_dim": m.head_dim},
        "sweep": {"name": cfg.sweep, "variant": cfg.variant},
        "lr": cfg.train.lr, "seed": cfg.seed,
    }


def record_of(summary: dict, config: dict | None) -> dict | None:
    """A run's record: from its summary, or for a run written before records existed, from its
    resolved config (``config.yaml``, of any version: ``config.upgrade``); None when neither can
    say."""
    if "record" in summary:
        return summary["record"]
    return None if config is None else run_record(from_container(config))
