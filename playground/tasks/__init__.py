"""Synthetic tasks. ``TASKS`` maps a task family name (``task.name``) to its class."""

from __future__ import annotations

from playground.tasks.base import Example, Task, TaskConfig, Vocab
from playground.tasks.depo import Depo

TASKS: dict[str, type[Task]] = {
    "depo": Depo,
}


def build_task(cfg: TaskConfig) -> Task:
    """The task for a resolved task config (a dataclass instance of the task's ``Config``)."""
    try:
        cls = TASKS[cfg.name]
    except KeyError:
        raise KeyError(f"task.name={cfg.name!r} is unknown: expected one of {sorted(TASKS)}") from None
    return cls(cfg)


__all__ = ["TASKS", "Example", "Task", "TaskConfig", "Vocab", "build_task"]
