"""Synthetic tasks. ``TASKS`` maps a task family name (``task.name``) to its class.

Tasks are plug-ins: each is registered under the entry-point group ``playground.tasks`` (ours in
``pyproject.toml``; a researcher's task in their own package's, docs/adding_a_task.md), by the
name its ``Config.name`` carries. Adding a task is one module, one entry point and, optionally,
presets under ``conf/task``. A task in the checkout needs no entry point (nor a reinstall): a
dotted path names it, ``task=my_pkg.my_task:MyTask`` (``playground.config.import_plugin``).
"""

from __future__ import annotations

from playground.config import plugin, plugins
from playground.errors import ConfigError
from playground.tasks.base import Example, Task, TaskConfig, Vocab

# at import; build_task looks again
TASKS: dict[str, type[Task]] = plugins("playground.tasks", Task)


def build_task(cfg: TaskConfig) -> Task:
    """The task for a resolved task config (a dataclass instance of the task's ``Config``): its
    entry point's class, or the class its dotted path names; ConfigError naming task.name."""
    cls = plugin("playground.tasks", cfg.name, "task.name")
    if not issubclass(cls, Task):
        raise ConfigError(f"task.name={cfg.name!r} is invalid: expected a Task subclass, not {cls}")
    return cls(cfg)


__all__ = ["TASKS", "Example", "Task", "TaskConfig", "Vocab", "build_task"]
