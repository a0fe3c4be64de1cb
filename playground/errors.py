"""The error type for bad configuration, with messages that name the offending key.

``check`` raises at once, except inside ``collecting()``, where it records the problem and lets
validation go on, so that one pass reports every problem of a config (one line each).
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any

_problems: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "problems", default=None)


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the key and what is allowed. Every
    command prints it without a traceback and exits with status 2 (``playground.cli``)."""


def raised_from(err: BaseException | None, test) -> BaseException | None:
    """The first exception of ``err``'s chain (itself, then what it was raised from or while
    handling, in turn) for which ``test`` holds, or None."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if test(err):
            return err
        err = err.__cause__ or err.__context__
    return None


def check(ok: bool, key: str, value: Any, allowed: str) -> None:
    """Raise (or, while collecting, record) a problem naming the key, value and what is allowed."""
    if ok:
        return
    message = f"{key}={value!r} is invalid: expected {allowed}"
    problems = _problems.get()
    if problems is None:
        raise ConfigError(message)
    if message not in problems:
        problems.append(message)


@contextlib.contextmanager
def collecting():
    """Within the block ``check`` records problems; at exit one ConfigError lists them all."""
    problems: list[str] = []
    token = _problems.set(problems)
    try:
        yield problems
    finally:
        _problems.reset(token)
    if problems:
        raise ConfigError("\n".join(problems) if len(problems) == 1 else
                          f"{len(problems)} problems in the config:\n  " + "\n  ".join(problems))
