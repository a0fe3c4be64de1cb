"""The shape of the package (docs/architecture.md): imports flow downwards only, with no cycle;
conf/ and sweeps/ ship inside the wheel; every command reads key=value arguments the same way,
has a --help, and refuses an argument it does not use; a run records what it is."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import playground
from playground.config import from_container
from playground.errors import ConfigError

PACKAGE = Path(playground.__file__).resolve().parent
ROOT = PACKAGE.parent
# imports flow downwards only: a module may import its own level and those below
LEVELS = [("errors", "cli", "config", "kernels"), ("layers", "grammar", "mixers"),
          ("model", "tasks", "data"), ("run", "sweep", "report", "bench")]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports (at any depth of its
    code, so a function-level import counts too)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                          else node.module
                          for a in node.names}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def level(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    return next((i for i, names in enumerate(LEVELS) if top in names), -1)


def test_no_import_cycle():
    graph, done, path = imports(), set(), []

    def visit(node):
        if node in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(node):] + [node]))
        if node in done:
            return
        path.append(node)
        for child in sorted(graph[node]):
            visit(child)
        path.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)


def test_imports_flow_downwards():
    graph = imports()
    assert all(level(m) >= 0 for m in graph
               if m != "playground"), [m for m in graph if level(m) < 0]
    upward = [f"{m} -> {d}" for m, deps in graph.items() for d in deps if level(d) > level(m) >= 0]
    assert not upward, upward


def test_top_level_modules():
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "cli.py", "config.py",
                                                            "errors.py",
                                                           "model.py"]


def test_config_error_is_ours():
    from hydra.errors import HydraException

    assert not issubclass(ConfigError, HydraException)


def test_wheel_ships_conf_sweeps_and_every_module(tmp_path):
    """A regular install finds conf/ and sweeps/ inside the package (``config.shipped``)."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("canon_playground-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, pattern in (("conf", "**/*.yaml"), ("sweeps", "*.yaml")):
        files = {f"playground/{folder}/{p.relative_to(ROOT / folder)}"
                 for p in (ROOT / folder).glob(pattern)}
        assert files and files <= names, sorted(files - names)
    modules = {str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py")}
    data = {str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*")
            if p.suffix in (".json", ".txt", ".csv", ".js", ".css")}
    # the results browser
    assert {"playground/report/site/app.js", "playground/report/site/style.css"} <= data
    assert modules | data <= names, sorted((modules | data) - names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[playground.tasks]" in text and "[playground.mixers]" in text


@pytest.mark.slow
def test_commands_work_from_any_directory(tmp_path):
    out = subprocess.run(["playground-sweep", "mqar", "scale=cpu", "dry_run=true"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0 and "playground-train" in out.stdout, out.stderr


def tools() -> dict:
    """Every command's main (called in-process; playground-train is Hydra's, run as a process)."""
    from playground.bench.cli import main as bench
    from playground.data.cli import main as data
    from playground.grammar.cli import main as grammar
    from playground.report.cli import main as report
    from playground.run.evaluate import main as evaluate
    from playground.sweep.cli import main as sweep

    return {"playground-data": (data, ["show", "dump", "stats"]),
            "playground-report": (report, ["heatmap", "depth", "table", "site"]),
            "playground-bench": (bench, ["params", "train", "table", "canon", "data", "generate"]),
            "playground-grammar": (grammar, ["sample", "check", "random"]),
            "playground-sweep": (sweep, []), "playground-eval": (evaluate, [])}


@pytest.mark.parametrize("tool", ["playground-data", "playground-report", "playground-bench",
                                  "playground-grammar", "playground-sweep", "playground-eval"])
def test_every_command_has_help_with_its_subcommands_and_examples(tool, capsys):
    main, subcommands = tools()[tool]
    for argv in [["--help"]] + [[sub, "--help"] for sub in subcommands[:1]]:
        with pytest.raises(SystemExit) as done:
            main(argv)
        out = capsys.readouterr().out
        assert done.value.code == 0 and "examples:" in out and tool in out, out
        assert all(sub in out for sub in subcommands) if argv == ["--help"] else "options" in out


@pytest.mark.slow
def test_train_help_lists_groups_examples_and_seeds():
    out = subprocess.run(["playground-train", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "examples:" in out.stdout and "task.seed" in out.stdout
    assert all(f"{group}:" in out.stdout for group in ("task", "mixer", "canon", "size"))


@pytest.mark.parametrize("argv,key", [
    # the data seed is task.seed
    (["playground-data", "dump", "task=depo1", "seed=7", "out=x.jsonl"], "seed"),
    (["playground-data", "show", "train.lr=1"], "train.lr"),
    (["playground-report", "table", ".", "metric=kl"], "metric"),
    (["playground-bench", "params", "task=depo1"], "task"),
    (["playground-eval", ".", "batch=3"], "batch"),
    (["playground-grammar", "show", "cfg3f", "count=3"], "count"),
])
def test_an_argument_the_command_does_not_use_is_an_error(argv, key, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        tools()[argv[0]][0](argv[1:])
    err = capsys.readouterr().err
    assert done.value.code == 2 and f"{key} is not used by" in err and "Traceback" not in err
    assert "task.seed" in err if key == "seed" else True
    assert not (tmp_path / "x.jsonl").exists()


def test_a_run_records_what_it_is(make_cfg, tmp_path):
    from playground.run.train import run

    summary = run(make_cfg("task=depo_tiny", "mixer=rope_quarter", "canon=AC",
                           "model.canon.residual=false", "size=2L64D", "train.steps=2",
                           "train.warmup_steps=0", "train.eval_every=0",
                           "task.eval_size=8", "panel=mine", "variant=quarter_ac", "seed=3"))
    record = summary["record"]
    assert record["task"] | {"difficulty": None} == record["task"] | {
        "family": "depo", "preset": "depo_tiny", "panel": "mine", "row": "N=16",
        "metric": "acc_at_K",
        "metric2": "acc_at_K2", "depth_metric": "acc_k", "heatmap": True, "difficulty": None}
    assert record["task"]["difficulty"] == {"N": 16, "K": 2}
    assert record["arch"]["mixer"] == "attention" and record["arch"]["position"] == "rope0.25"
    assert record["arch"]["rope_fraction"] == 0.25 and record["arch"]["mlp"] == "swiglu"
    assert record["canon"]["positions"] == "AC" and record["canon"]["residual"] is False
    assert record["size"] == {"label": "2L64D", "layers": 2, "blocks": 2, "width": 64, "heads": 1,
                              "head_dim": 64}
    assert (record["sweep"]["variant"] == "quarter_ac" and record["seed"] == 3
            and record["lr"] == 3e-3)
    # the commit, and whether the tracked files differed from it (recomputed with git diff)
    import subprocess

    import playground
    repo = Path(playground.__file__).parent
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    if head.returncode == 0:
        diff = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=repo)
        assert (summary["git_sha"] == head.stdout.strip()
                and summary["git_dirty"] == (diff.returncode == 1))
    else:
        assert summary["git_sha"] is None and summary["git_dirty"] is None


def test_old_run_configs_upgrade_to_todays_schema():
    """A Mamba2 config with the legacy ``variant`` key (which chose Canon) reads in the current
    schema: conv and Canon positions (tests/fixtures/results/mixed_cpu holds such configs)."""
    from omegaconf import OmegaConf

    fixture = Path(__file__).parent / "fixtures" / "results" / "mixed_cpu"
    seen = {}
    for path in fixture.glob("*mamba2*/config.yaml"):
        cfg = from_container(OmegaConf.to_container(OmegaConf.load(path)))
        seen[path.parent.name.split("_2L64D_")[1]] = (
            cfg.model.mixer.conv, cfg.model.canon.positions, cfg.model.canon.residual)
    assert seen == {"mlpnone_mamba2_canon-none_lr0.003_s0": ("conv1d", "", True),
                    "mlpnone_mamba2-noconv1d_canon-none_lr0.003_s0": ("none", "", True),
                    "mlpnone_mamba2-canonAB-nores_canon-none_lr0.003_s0": ("none", "AB", False),
                    "mamba2-noconv1d_canon-ABCD-nores_lr0.003_s0": ("none", "ABCD", False)}


def test_old_run_configs_say_how_they_were_packed(tmp_path):
    """Configs without ``data.packing`` were packed aligned: they read as ``auto`` where that is
    the task's own (so they resume under the default) and as ``aligned`` for Lano, whose own is a
    stream (so resuming one under the default is refused, by key)."""
    from omegaconf import OmegaConf

    from playground.config import compose
    from playground.run.rundir import run_record
    from playground.run.train import check_same_run

    fixture = Path(__file__).parent / "fixtures" / "results" / "mixed_cpu"
    families = set()
    for path in fixture.glob("*/config.yaml"):
        raw = OmegaConf.to_container(OmegaConf.load(path))
        assert "packing" not in raw["data"]
        cfg = from_container(raw)
        families.add(raw["task"]["name"])
        assert cfg.data.packing == ("aligned" if raw["task"]["name"] == "lano" else "auto")
        assert run_record(cfg)["task"]["packing"] == "aligned"
    assert {"lano", "depo", "mano"} <= families
    for preset, refused in (("depo_tiny", False), ("cfg3f", True)):
        new = OmegaConf.to_container(compose([f"task={preset}", f"out_dir={tmp_path / preset}"]),
                                     resolve=True)
        old = {**new, "data": {k: v for k, v in new["data"].items() if k != "packing"}}
        (tmp_path / preset).mkdir()
        (tmp_path / preset / "config.yaml").write_text(OmegaConf.to_yaml(old))
        if refused:
            with pytest.raises(ConfigError, match="data.packing: 'aligned' -> 'auto'"):
                check_same_run(tmp_path / preset, new)
        else:
            check_same_run(tmp_path / preset, new)


@pytest.mark.parametrize("key,inert,changed", [("init_scale", 1.0, 4.0),
                                               ("init_current", 0.0, 1.0)])
def test_old_run_configs_read_a_key_added_since_at_its_inert_value(tmp_path, key, inert, changed):
    """A stored config without ``model.canon.init_scale`` or ``init_current`` (added to the
    schema later) reads as the default init it trained with, and its run resumes under today's
    config."""
    from omegaconf import OmegaConf

    from playground.config import ADDED, compose, upgrade
    from playground.run.train import check_same_run

    new = OmegaConf.to_container(compose(["task=depo_tiny", "canon=ABCD",
                                          f"out_dir={tmp_path}"]), resolve=True)
    old = {**new, "model": {**new["model"], "canon": {
        k: v for k, v in new["model"]["canon"].items() if k != key}}}
    assert set(ADDED) == {"model.canon.init_scale", "model.canon.init_current"}
    assert upgrade(old)["model"]["canon"][key] == inert and key not in (
        old["model"]["canon"])  # the stored dict is not changed
    assert getattr(from_container(old).model.canon, key) == inert
    no_model = {"task": {"name": "depo"}, "data": {"packing": "auto"}}
    assert upgrade(no_model) == no_model
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(old))
    check_same_run(tmp_path, new)
    other = {**new, "model": {**new["model"], "canon": {**new["model"]["canon"], key: changed}}}
    with pytest.raises(ConfigError, match=f"model.canon.{key}: {inert} -> {changed}"):
        check_same_run(tmp_path, other)


def test_old_run_configs_drop_the_removed_norm_backend(tmp_path):
    """``model.mixer.norm_backend`` (Mamba2's opt-in Triton gated norm) was removed: a stored
    config holding its default, ``torch``, reads as today's (also through the findings report's
    loader, and on resuming the run), like the committed records under results/ that hold it; one
    holding ``triton`` is refused, naming the key."""
    import pandas as pd
    from omegaconf import OmegaConf

    from playground.config import compose
    from playground.report.findings import _Counts
    from playground.run.train import check_same_run

    new = OmegaConf.to_container(compose(["task=depo_tiny", "model=mamba2", "mixer=mamba2",
                                          "canon=none", f"out_dir={tmp_path}"]), resolve=True)
    old = {**new, "model": {**new["model"], "mixer": {**new["model"]["mixer"],
                                                      "norm_backend": "torch"}}}
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(old))
    assert from_container(old) == from_container(new)
    check_same_run(tmp_path, new)  # not refused as a different config
    assert _Counts().task(pd.Series({"run_dir": str(tmp_path)})).cfg.name == "depo"
    committed = [p for p in (ROOT / "results").rglob("config.yaml")
                 if "norm_backend" in p.read_text()]
    for path in committed:
        assert from_container(OmegaConf.to_container(OmegaConf.load(path))).model.mixer
    old["model"]["mixer"]["norm_backend"] = "triton"
    with pytest.raises(ConfigError, match=r"model\.mixer\.norm_backend='triton' in a stored "
                                          r"config is invalid: the option was removed"):
        from_container(old)
