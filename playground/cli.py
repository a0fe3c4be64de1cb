"""What every command shares: ``key=value`` arguments, ``--help``, errors, and atomic files.

Every command reads the same way::

    playground-<tool> [COMMAND] [POSITIONAL ...] [key=value ...] [--help]

A ``key=value`` argument is one of the command's own options (``out=DIR``, ``count=5``) or, for
commands that read a config, a Hydra override of it (``task=depo1``, ``task.N=50``,
``model.canon.residual=false``); a key that the command does not use is an error naming it,
never silently ignored. ``--help`` lists the commands, their options with defaults, and examples.
A bad value (:class:`playground.errors.ConfigError`) is printed without a traceback and the
command exits with status 2.

Files that commands write (run records, reports, dumps) are written atomically: to a temporary
file in the same folder, then renamed, so a killed command never leaves half a file.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from playground.errors import ConfigError

SEEDS = ("Seeds: seed=S sets the model's initialisation; task.seed=S sets the data (the content "
         "and order of the training examples, and the eval set), so runs that share task.seed see "
         "byte-identical data whatever their architecture.")
TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


@dataclass
class Command:
    """One (sub)command: its own options (``key: (default, help)``), its positional arguments
    (a last name ending in ``...`` takes one or more values),
    the config sections whose overrides it reads (``None``: none; ``()``: any key of the
    config), and examples for ``--help``."""

    name: str
    summary: str
    run: Callable[[Args], int | None]
    options: dict[str, tuple[str, str]] = field(default_factory=dict)
    positional: tuple[str, ...] = ()
    overrides: tuple[str, ...] | None = None
    examples: tuple[str, ...] = ()


@dataclass
class Args:
    """The parsed arguments of one call: positional values, own options (defaults filled in),
    and config overrides."""

    prog: str
    positional: list[str]
    options: dict[str, str]
    overrides: list[str]

    def __getitem__(self, key: str) -> str:
        return self.options[key]

    def int(self, key: str, minimum: int = 0, maximum: int | None = None, why: str = "") -> int:
        """The option as an integer in ``minimum..maximum``; ``why`` says why the bound (a message
        naming the key otherwise)."""
        try:
            value = int(self.options[key])
        except ValueError:
            raise ConfigError(f"{key}={self.options[key]!r} is invalid: "
                              "expected an integer") from None
        if value < minimum:
            raise ConfigError(f"{key}={value} is invalid: expected an integer >= {minimum}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{key}={value} is invalid: expected an integer in "
                              f"{minimum}..{maximum:,}" + (f" ({why})" if why else ""))
        return value

    def ints(self, key: str, minimum: int = 0) -> list[int]:
        """A comma-separated list of integers, each >= ``minimum`` (``copies=1,4``)."""
        try:
            values = [int(v) for v in self.list(key)]
        except ValueError:
            raise ConfigError(f"{key}={self.options[key]!r} is invalid: "
                              "expected integers separated by commas") from None
        if any(v < minimum for v in values):
            raise ConfigError(f"{key}={self.options[key]!r} is invalid: "
                              f"expected integers >= {minimum}")
        return values

    def float(self, key: str) -> float:
        try:
            return float(self.options[key])
        except ValueError:
            raise ConfigError(f"{key}={self.options[key]!r} is invalid: "
                              "expected a number") from None

    def flag(self, key: str) -> bool:
        value = self.options[key].lower()
        if value not in TRUE + FALSE:
            raise ConfigError(f"{key}={self.options[key]!r} is invalid: expected true or false")
        return value in TRUE

    def list(self, key: str, sep: str = ",") -> list[str]:
        return [v.strip() for v in self.options[key].split(sep) if v.strip()]

    def choice(self, key: str, allowed: Sequence[str]) -> str:
        if self.options[key] not in allowed:
            raise ConfigError(f"{key}={self.options[key]!r} is invalid: "
                              f"expected one of {list(allowed)}")
        return self.options[key]


def fail(prog: str, message: str) -> None:
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(prog: str, doc: str, commands: Sequence[Command],
         argv: Sequence[str] | None = None) -> None:
    """Parse ``argv`` for one of ``commands`` (a single command takes no command name) and run
    it: return when it succeeds, else exit with its own status, or 2 for bad arguments and
    invalid values (``--help`` exits 0)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    wants_help = any(a in ("-h", "--help") for a in argv)
    argv = [a for a in argv if a not in ("-h", "--help")]
    by_name = {c.name: c for c in commands}
    if len(commands) == 1:
        command = commands[0]
    elif argv and argv[0] in by_name:
        command = by_name[argv.pop(0)]
    else:
        print(usage(prog, doc, commands))
        if not wants_help and argv:
            fail(prog, f"unknown command {argv[0]!r}; expected one of {list(by_name)}")
        raise SystemExit(0 if wants_help else 2)
    if wants_help:
        print(usage(prog, doc, commands, command))
        raise SystemExit(0)
    try:
        args = parse(prog, command, argv)
        code = command.run(args)
    except ConfigError as err:
        fail(prog, str(err))
    if code:
        raise SystemExit(code)


def parse(prog: str, command: Command, argv: Sequence[str]) -> Args:
    """Split ``argv`` into positional values, own options and config overrides; ConfigError
    naming any argument the command does not use."""
    name = f"{prog} {command.name}".strip()
    positional = [a for a in argv if "=" not in a]
    variadic = bool(command.positional) and command.positional[-1].endswith("...")
    if (len(positional) != len(command.positional)
            and not (variadic and len(positional) >= len(command.positional))):
        want = " ".join(command.positional) or "no positional argument"
        raise ConfigError(f"{name} takes {want}; got {positional or 'none'} (see {name} --help)")
    options = {k: default for k, (default, _) in command.options.items()}
    overrides = []
    for arg in (a for a in argv if "=" in a):
        key = arg.split("=", 1)[0]
        if key in command.options:
            options[key] = arg.split("=", 1)[1]
        elif command.overrides is not None and _in_sections(key, command.overrides):
            overrides.append(arg)
        else:
            hint = (" (seed= sets the model's initialisation; the data seed is task.seed)"
                    if key == "seed" else "")
            raise ConfigError(f"{arg!r}: {key} is not used by {name}{hint}; " + _accepts(command))
    return Args(prog, positional, options, overrides)


def _in_sections(key: str, sections: tuple[str, ...]) -> bool:
    root = key.lstrip("+~").split(".", 1)[0]
    return not sections or root in sections


def _accepts(command: Command) -> str:
    own = f"its options are {sorted(command.options)}" if command.options else "it has no options"
    if command.overrides is None:
        return own
    sections = "any config key" if not command.overrides else \
        "overrides of " + ", ".join(f"{s}.*" for s in command.overrides)
    return f"{own}, and it takes {sections}"


def usage(prog: str, doc: str, commands: Sequence[Command], command: Command | None = None) -> str:
    """The ``--help`` text: the tool's commands, or one command's options and examples."""
    lines = [f"{prog}: {doc}", ""]
    if command is None:
        width = max(len(c.name) for c in commands)
        lines.append(f"usage: {prog} COMMAND ... [key=value ...]   "
                     f"({prog} COMMAND --help for its options)")
        lines += ["", "commands:"] + [f"  {c.name:<{width}}  {c.summary}" for c in commands]
        examples = [e for c in commands for e in c.examples[:1]]
    else:
        head = " ".join([prog, command.name, *command.positional]).replace("  ", " ")
        lines.append(f"usage: {head} [key=value ...]")
        lines += ["", command.summary]
        if command.options:
            lines += ["", "options (key=value, default in brackets):"]
            lines += [f"  {k}=  {h} [{d}]" for k, (d, h) in command.options.items()]
        if command.overrides is not None:
            lines += ["", "config overrides: "
                          + ("any key of the config (conf/, e.g. task=depo1 task.N=50)"
                             if not command.overrides else
                             ", ".join(f"{s}.*" for s in command.overrides)
                             + f" (e.g. {command.overrides[0]}=...)"), SEEDS]
        examples = list(command.examples)
    if examples:
        lines += ["", "examples:"] + [f"  {e}" for e in examples]
    return "\n".join(lines)


# -- atomic files ----------------------------------------------------------------------------


def check_writable(path: Path, key: str) -> None:
    """Refuse, before any compute, an output location where nothing can be written: a temp file
    is made and removed in ``path``'s nearest existing folder (permissions alone do not tell for
    root or read-only mounts); nothing is left behind."""
    folder = Path(path).absolute()
    while not folder.exists():
        folder = folder.parent
    try:
        if not folder.is_dir():
            raise NotADirectoryError(f"{folder} is a file")
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".playground-check.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as err:
        raise ConfigError(f"{key}={path} is invalid: nothing can be written there "
                          f"({err.strerror or err})") from None


SHARED_MODE = 0o644  # every file a run or report writes: mkstemp makes 0600; results are shared


def atomic_write(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.chmod(tmp, SHARED_MODE)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def json_safe(obj):
    """NaN/inf are not JSON; write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def write_json(path: Path, obj) -> None:
    atomic_write(path, (json.dumps(json_safe(obj), indent=2, sort_keys=True) + "\n").encode())


def read_json(path: Path):
    return json.loads(Path(path).read_text())
