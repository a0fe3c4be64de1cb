"""Synthetic tasks. ``TASKS`` maps a task family name (``task.name``) to its class.

Every module of this package (other than ``base``) that defines a ``Task`` subclass contributes
it under its config's ``name``: adding a task is one new module plus its ``conf/task`` presets,
with no list to edit here (docs/adding_a_task.md).
"""

from __future__ import annotations

import importlib
import pkgutil

from playground.tasks.base import Example, Task, TaskConfig, Vocab


def _discover() -> dict[str, type[Task]]:
    found: dict[str, type[Task]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name == "base" or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Task) and obj.__module__ == module.__name__:
                name = obj.Config.name
                if name in found:
                    raise RuntimeError(f"two tasks are named {name!r}: {found[name]} and {obj}")
                found[name] = obj
    return found


TASKS: dict[str, type[Task]] = _discover()


def build_task(cfg: TaskConfig) -> Task:
    """The task for a resolved task config (a dataclass instance of the task's ``Config``)."""
    try:
        cls = TASKS[cfg.name]
    except KeyError:
        raise KeyError(f"task.name={cfg.name!r} is unknown: expected one of {sorted(TASKS)}") from None
    return cls(cfg)


__all__ = ["TASKS", "Example", "Task", "TaskConfig", "Vocab", "build_task"]
