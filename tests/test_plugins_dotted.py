"""A task or mixer in the checkout, named by a dotted path instead of an entry point (so with no
reinstall): ``model.mixer.name=my_pkg.my_mixer:MyMixer``, ``task=my_pkg.my_task:MyTask``
(docs/adding_a_task.md). The path is the name a run records, so resuming and ``playground-eval``
find the class again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from playground.config import compose, is_path, to_objects
from playground.errors import ConfigError
from playground.model import build_model
from playground.run import rundir as runs
from playground.tasks import build_task

MIXER = '''
from dataclasses import dataclass

from playground.mixers.attention import Attention, AttentionConfig


@dataclass
class HalfRopeConfig(AttentionConfig):
    name: str = "halfrope"
    rope_fraction: float = 0.5
    scale: float = 1.0  # a field of its own


class HalfRope(Attention):
    Config = HalfRopeConfig
'''

TASK = '''
from dataclasses import dataclass

from playground.tasks.depo import Depo, DepoConfig


@dataclass
class ShortDepoConfig(DepoConfig):
    name: str = "shortdepo"
    preset: str = "shortdepo"
    N: int = 8
    K: int = 2
    V: int = 8
    context: int = 96
    eval_size: int = 16


class ShortDepo(Depo):
    Config = ShortDepoConfig


class NotATask:
    pass
'''

TINY = ["wandb.mode=disabled", "train.progress=false", "train.device=cpu", "size=2L64D",
        "train.batch_size=8", "train.warmup_steps=2", "train.steps=4", "train.eval_every=0",
        "train.ckpt_every=2"]


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A folder holding the package ``my_pkg`` (a mixer and a task), installed nowhere."""
    pkg = tmp_path / "my_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "my_mixer.py").write_text(MIXER)
    (pkg / "my_task.py").write_text(TASK)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("name,path", [("rope", False), ("mamba2", False), ("my_pkg.mod:Cls", True),
                                       ("my_pkg.mod.Cls", True), ("depo1_K4", False),
                                       ("a:b:c", False)])
def test_is_path(name, path):
    assert is_path(name) is path


@pytest.mark.parametrize("override", ["model.mixer.name=my_pkg.my_mixer:HalfRope",
                                      "mixer=my_pkg.my_mixer:HalfRope",
                                      "model.mixer.name=my_pkg.my_mixer.HalfRope"])
def test_a_mixer_by_its_dotted_path(checkout, override):
    path = override.partition("=")[2]
    cfg = to_objects(compose([override, "model.mixer.scale=2.0", "size=2L64D"]))
    assert type(cfg.model.mixer).__name__ == "HalfRopeConfig"
    assert ((cfg.model.mixer.name, cfg.model.mixer.scale, cfg.model.mixer.rope_fraction)
            == (path, 2.0, 0.5))
    assert type(build_model(cfg.model, 16).blocks[0].mixer).__name__ == "HalfRope"


@pytest.mark.parametrize("override",
                         ["task=my_pkg.my_task:ShortDepo", "task.name=my_pkg.my_task:ShortDepo"])
def test_a_task_by_its_dotted_path(checkout, override):
    cfg = to_objects(compose([override, "task.N=6"]))
    assert ((cfg.task.name, cfg.task.N, cfg.task.preset)
            == ("my_pkg.my_task:ShortDepo", 6, "shortdepo"))
    assert type(build_task(cfg.task)).__name__ == "ShortDepo"


@pytest.mark.parametrize("override,message", [
    ("model.mixer.name=my_pkg.nowhere:HalfRope", "module 'my_pkg.nowhere' does not import"),
    ("model.mixer.name=my_pkg.my_mixer:Missing", "a class with a dataclass Config"),
    ("task=my_pkg.my_task:NotATask", "a class with a dataclass Config"),
])
def test_a_bad_path_names_the_key(checkout, override, message):
    key = "task.name" if override.startswith("task") else "model.mixer.name"
    with pytest.raises(ConfigError, match=message) as err:
        compose([override])
    assert str(err.value).startswith(f"{key}='{override.partition('=')[2]}' is invalid")


def console_script() -> list[str]:
    """``playground-train`` as installed (its folder, not the working directory, is on sys.path),
    else the module."""
    script = Path(sys.executable).parent / "playground-train"
    return [str(script)] if script.exists() else [sys.executable, "-m", "playground.run.train"]


@pytest.mark.slow
def test_trains_resumes_and_evaluates_from_the_checkout(checkout):
    out = checkout / "run"
    args = [*console_script(), "task=my_pkg.my_task:ShortDepo",
            "model.mixer.name=my_pkg.my_mixer:HalfRope", *TINY, f"out_dir={out}"]
    first = subprocess.run(args, cwd=checkout, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    summary = runs.read_json(out / "summary.json")
    assert summary["record"]["task"]["family"] == "my_pkg.my_task:ShortDepo"
    assert summary["record"]["arch"]["mixer"] == "my_pkg.my_mixer:HalfRope"
    assert summary["record"]["arch"]["scale"] == 1.0
    again = subprocess.run(args, cwd=checkout, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "already finished" in again.stdout, again.stdout + again.stderr
    evaluate = subprocess.run([sys.executable, "-m", "playground.run.evaluate", str(out),
                               "device=cpu"],
                              cwd=checkout, capture_output=True, text=True, timeout=300)
    assert evaluate.returncode == 0, evaluate.stderr[-3000:]
    assert runs.read_json(out / "eval.json")["metrics"] == summary["metrics"]
