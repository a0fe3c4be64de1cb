"""docs/reproducing_figures.md agrees with sweeps/: every ``playground-sweep`` command it shows
(in code blocks and in backticks) parses as the command parses it and loads (its sweep, scale,
panels and variants exist; a ``# N runs`` comment is the run count), every
``results/<name>_<scale>`` folder it names belongs to a sweep and scale, and every sweep file,
variant and panel named in its tables exists in the sweep files. A sweep file that the page defines
itself (a ``yaml`` block whose first line is ``# <file>.yaml``) is loaded from a copy. The negative
controls add a wrong name to a copy of the page and check that it is caught."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
import yaml

from playground.cli import parse
from playground.errors import ConfigError
from playground.sweep.cli import COMMAND
from playground.sweep.launch import LAUNCHERS
from playground.sweep.spec import SWEEPS_DIR, find_sweep_file, load_sweep

DOC = Path(__file__).resolve().parent.parent / "docs" / "reproducing_figures.md"
PROG = "playground-sweep"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`([^`]+)`")
IDENT = re.compile(r"^[A-Za-z0-9_]+$")
RESULTS = re.compile(r"results/([a-z0-9_]+?)_(paper|mini|cpu)\b")
# names that look like a figure sweep or a Depo/Brevo panel, wherever they stand in backticks
SWEEP_SHAPED, PANEL_SHAPED = re.compile(r"^fig\d+$"), re.compile(r"^(depo\d+(_K\d+)?|brevo\d+)$")


@functools.cache
def read(text: str) -> dict:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}


def shipped() -> dict[str, dict]:
    return {p.stem: read(p.read_text()) for p in sorted(SWEEPS_DIR.glob("*.yaml"))}


def panels_of(spec: dict, scale: str | None = None) -> set[str]:
    scales = spec.get("scales") or {}
    return {row.get("panel", "") for name, sc in scales.items() if scale in (None, name)
            for row in (sc or {}).get("rows") or []}


def split(text: str) -> tuple[list[tuple[str, str]], str]:
    """The code blocks (language, body) and the prose with the code blocks removed."""
    return [(m[1], m[2]) for m in FENCE.finditer(text)], FENCE.sub("", text)


def own_sweeps(text: str, folder: Path) -> dict[str, Path]:
    """The sweep files the page defines (``yaml`` block starting ``# name.yaml``), written to
    ``folder``: {file name: path, sweep name: path}."""
    found = {}
    for lang, body in split(text)[0]:
        first = body.splitlines()[0] if body.strip() else ""
        if lang == "yaml" and (m := re.match(r"#\s*(\S+\.ya?ml)\s*$", first)):
            path = folder / m[1]
            path.write_text(body)
            found[m[1]] = path
            found[str(read(body).get("name", path.stem))] = path
    return found


def commands(text: str) -> list[tuple[str, str]]:
    """Every ``playground-sweep`` command of the page: (the command, its trailing comment)."""
    blocks, prose = split(text)
    out = []
    for _, body in blocks:
        for line in body.splitlines():
            cmd, _, comment = line.partition("#")
            if PROG in cmd.split():
                out.append((cmd, comment))
    out += [(span, "") for span in INLINE.findall(prose) if PROG in span.split()]
    return out


def is_placeholder(token: str) -> bool:
    """``…``, ``<name>``, or (for the sweep's name) ``FIG`` / ``NAME``."""
    return token in ("…", "...") or "<" in token or ("=" not in token and token.isupper())


def check_command(cmd: str, comment: str, own: dict[str, Path]) -> list[str]:
    tokens = " ".join(cmd.split()).split(" ")
    tokens = tokens[tokens.index(PROG) + 1:]
    where = f"`{PROG} {' '.join(tokens)}`"
    optional = [t for t in tokens if t.startswith("[") or t.endswith("]")]  # a template's [key=...]
    tokens = [t for t in tokens if t not in optional]
    problems = [f"{where}: {t} is not an option of {PROG}" for t in optional
                if "=" in t and t.strip("[]").split("=", 1)[0] not in COMMAND.options]
    names = [t for t in tokens if "=" not in t and not is_placeholder(t)]
    pairs = [t for t in tokens if "=" in t and not is_placeholder(t)]
    try:
        args = parse(PROG, COMMAND, [names[0] if names else "NAME", *pairs])
        (args.choice("launcher", LAUNCHERS), args.int("gpus"), args.int("per_gpu", minimum=1),
         args.flag("dry_run"))
    except ConfigError as err:
        return [*problems, f"{where}: {err}"]
    if not names:  # a template: FIG, NAME or … in place of the sweep
        return problems
    try:
        path = own.get(names[0]) or find_sweep_file(names[0])
    except ConfigError as err:
        return [*problems, f"{where}: {err}"]
    spec, scale = read(path.read_text()), args["scale"]
    if "findings" in spec:  # a findings file: its runs come from the findings, not from scales
        return problems
    if scale not in (spec.get("scales") or {}):
        return [*problems, f"{where}: {path.name} has no scale {scale!r}"]
    problems += [f"{where}: {path.name} has no panel {p!r} at scale={scale}"
                 for p in filter(None, args["panels"].split(","))
                 if p not in panels_of(spec, scale)]
    problems += [f"{where}: {path.name} has no variant {v!r}"
                 for v in filter(None, args["variants"].split(","))
                 if v not in (spec.get("variants") or {})]
    try:
        runs = load_sweep(path, scale, args["panels"], args.overrides, args["variants"]).runs()
    except ConfigError as err:
        return [*problems, f"{where}: {err}"]
    if (m := re.search(r"\b(\d+) runs\b", comment)) and int(m[1]) != len(runs):
        problems.append(f"{where}: the comment says {m[1]} runs, the sweep has {len(runs)}")
    return problems


def tables(prose: str) -> list[list[list[str]]]:
    """Markdown tables as rows of cells (the header first, the separator dropped)."""
    out, current = [], []
    for line in [*prose.splitlines(), ""]:
        if line.startswith("|"):
            if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line.strip()):
                current.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif current:
            out.append(current)
            current = []
    return out


def check_tables(prose: str, sweeps: dict[str, dict]) -> list[str]:
    problems = []
    for table in tables(prose):
        head = [h.split()[0].lower() if h else "" for h in table[0]]
        if head[:1] == ["scale"]:  # the scales table: each scale is some sweep's
            known = {s for spec in sweeps.values() for s in spec.get("scales") or {}}
            problems += [f"scales table: no sweep has a scale {s!r}" for row in table[1:]
                         for s in INLINE.findall(row[0]) if s not in known]
        if head[:1] != ["file"]:
            continue
        variants_col, panels_col = head.index("variants"), head.index("panels")
        for row in table[1:]:
            files = INLINE.findall(row[0])
            missing = [f for f in files if Path(f).stem not in sweeps]
            problems += [f"figures table: no sweep file sweeps/{f}" for f in missing]
            specs = [sweeps[Path(f).stem] for f in files if f not in missing]
            variants = {v for spec in specs for v in spec.get("variants") or {}}
            panels = set().union(*(panels_of(spec) for spec in specs))
            problems += [f"figures table, {row[0]}: no variant {v!r} in {files}"
                         for v in INLINE.findall(row[variants_col])
                         if IDENT.match(v) and v not in variants]
            problems += [f"figures table, {row[0]}: no panel {p!r} in {files}"
                         for p in INLINE.findall(row[panels_col])
                         if IDENT.match(p) and p not in panels]
    return problems


def problems_of(text: str, folder: Path) -> list[str]:
    sweeps, own = shipped(), own_sweeps(text, folder)
    prose = split(text)[1]
    problems = [p for cmd, comment in commands(text) for p in check_command(cmd, comment, own)]
    problems += check_tables(prose, sweeps)
    own_specs = {name: read(path.read_text()) for name, path in own.items()
                 if not name.endswith((".yaml", ".yml"))}
    for name, scale in RESULTS.findall(text):
        spec = sweeps.get(name) or own_specs.get(name)
        if spec is None or scale not in (spec.get("scales") or {}):
            problems.append(f"results/{name}_{scale}: no sweep {name!r} with a scale {scale!r}")
    all_panels = set().union(*(panels_of(spec) for spec in sweeps.values()))
    for span in INLINE.findall(prose):
        if SWEEP_SHAPED.match(span) and span not in sweeps:
            problems.append(f"`{span}`: no such sweep")
        if PANEL_SHAPED.match(span) and span not in all_panels:
            problems.append(f"`{span}`: no sweep has this panel")
    return problems


def test_the_page_names_only_sweeps_scales_panels_and_variants_that_exist(tmp_path):
    text = DOC.read_text()
    # the extraction finds them
    assert len(commands(text)) >= 5 and len(tables(split(text)[1])) >= 2
    assert problems_of(text, tmp_path) == []


def test_every_shipped_sweep_file_is_found_by_name():
    for name in shipped():
        assert find_sweep_file(name).stem == name


def _insert_row(text: str, row: str) -> str:
    """``row`` as the first row of the figures table."""
    head = text.index("| file |")
    separator = text.index("\n", text.index("\n", head) + 1) + 1
    return text[:separator] + row + "\n" + text[separator:]


@pytest.mark.parametrize("edit, wrong", [
    (lambda t: _insert_row(t, "| `fig4.yaml` | 4 | `llama_rope` | `depo1_K4`, `depo3_K4` | x |"),
     "depo3_K4"),
    (lambda t: _insert_row(t, "| `fig4.yaml` | 4 | `llama_nope_canon` | `mano` | x |"),
     "llama_nope_canon"),
    (lambda t: _insert_row(t, "| `fig11.yaml` | 11 | `none` | `mano` | x |"), "fig11"),
    (lambda t: t + "\n```bash\nplayground-sweep fig7 scale=mini panels=depo1_K8 dry_run=true\n"
                   "```\n", "depo1_K8"),
    (lambda t: t + "\n`playground-sweep fig4 scale=cpu panels=lano`\n", "lano"),
    (lambda t: t + "\n`playground-sweep nope scale=cpu variants=rope`\n", "rope"),
    (lambda t: t + "\n`playground-sweep gdn scale=paper`\n", "paper"),
    (lambda t: t + "\n`playground-sweep nope scale=mini launcher=remote`\n", "remote"),
    (lambda t: t + "\nThe `depo2_K8` panel.\n", "depo2_K8"),
    (lambda t: t + "\nThe runs land in `results/fig9_mini/`.\n", "fig9"),
])
def test_a_wrong_name_in_a_copy_of_the_page_is_caught(tmp_path, edit, wrong):
    text = DOC.read_text()
    assert problems_of(text, tmp_path) == []
    found = problems_of(edit(text), tmp_path)
    assert found and all(wrong in p for p in found), found
