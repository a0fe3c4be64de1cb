"""Shared helpers of the small ``key=value`` command-line tools (playground-data, -eval)."""

from __future__ import annotations

import sys


def parse_args(argv: list[str], known: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Split ``key=value`` arguments into the tool's own keys (``known``, with defaults) and the
    rest, which are Hydra overrides (``task=depo1``, ``task.N=50``, …)."""
    own, overrides = dict(known), []
    for arg in argv:
        if "=" not in arg:
            raise SystemExit(f"argument {arg!r} is not of the form key=value")
        key = arg.split("=", 1)[0]
        if key in known:
            own[key] = arg.split("=", 1)[1]
        else:
            overrides.append(arg)
    return own, overrides


def int_arg(args: dict[str, str], key: str, minimum: int = 0) -> int:
    try:
        value = int(args[key])
    except ValueError:
        raise SystemExit(f"{key}={args[key]!r} is invalid: expected an integer") from None
    if value < minimum:
        raise SystemExit(f"{key}={value} is invalid: expected an integer >= {minimum}")
    return value


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)
