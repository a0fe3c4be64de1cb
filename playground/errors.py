"""The error type for bad configuration, with messages that name the offending key."""

from __future__ import annotations

from typing import Any

from hydra.errors import CompactHydraException


class ConfigError(ValueError, CompactHydraException):
    """A configuration value is invalid; the message names the key and what is allowed.
    (A CompactHydraException, so the command line shows the message without a traceback.)"""


def check(ok: bool, key: str, value: Any, allowed: str) -> None:
    """Raise a ConfigError naming the key, the bad value and what is allowed."""
    if not ok:
        raise ConfigError(f"{key}={value!r} is invalid: expected {allowed}")
