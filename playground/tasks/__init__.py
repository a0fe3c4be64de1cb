"""Synthetic tasks. ``TASKS`` maps a task family name (``task.name``) to its class.

Tasks are plug-ins: each is registered under the entry-point group ``playground.tasks`` (ours in
``pyproject.toml``; a researcher's task in their own package's, docs/adding_a_task.md), by the
name its ``Config.name`` carries. Adding a task is one module, one entry point and, optionally,
presets under ``conf/task``.
"""

from __future__ import annotations

from playground.config import plugins
from playground.tasks.base import Example, Task, TaskConfig, Vocab

TASKS: dict[str, type[Task]] = plugins("playground.tasks", Task)  # at import; build_task looks again


def build_task(cfg: TaskConfig) -> Task:
    """The task for a resolved task config (a dataclass instance of the task's ``Config``)."""
    tasks = plugins("playground.tasks", Task)
    if cfg.name not in tasks:
        raise KeyError(f"task.name={cfg.name!r} is unknown: expected one of {sorted(tasks)}")
    return tasks[cfg.name](cfg)


__all__ = ["TASKS", "Example", "Task", "TaskConfig", "Vocab", "build_task"]
