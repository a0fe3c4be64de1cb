"""The wandb mirror's mode: an explicit ``wandb.mode`` wins, else the environment (``WANDB_MODE``,
``WANDB_DISABLED``) decides, else offline (``WandbConfig.resolved_mode``, used by
``playground.run.train.Mirror``). The mode is volatile: it never changes a run's identity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from playground.config import WandbConfig, compose, to_objects
from playground.errors import ConfigError
from playground.run import rundir as runs

# tests/test_reliability.py's TINY without its wandb.mode=disabled (copied: no test imports another)
TINY = ["train.progress=false", "train.device=cpu", "task.N=8", "task.V=8", "task.context=96",
        "task.eval_size=16", "size=2L64D", "train.batch_size=8", "train.log_every=1",
        "train.warmup_steps=2",
        "train.ckpt_every=3", "train.eval_every=10", "train.keep_checkpoints=2"]
FIXTURES = Path(__file__).parent / "fixtures" / "results" / "mixed_cpu"


@pytest.mark.parametrize("mode,env,want", [
    ("", {}, "offline"),  # today's default behaviour
    ("", {"WANDB_MODE": "disabled"}, "disabled"),
    ("", {"WANDB_MODE": "offline"}, "offline"),
    ("", {"WANDB_MODE": "Online "}, "online"),
    ("", {"WANDB_MODE": "dryrun"}, "offline"),  # wandb's old names
    ("", {"WANDB_MODE": "run"}, "online"),
    ("", {"WANDB_MODE": ""}, "offline"),  # set but empty = unset
    ("", {"WANDB_DISABLED": "true"}, "disabled"),
    ("", {"WANDB_DISABLED": "TRUE"}, "disabled"),
    ("", {"WANDB_DISABLED": "1"}, "disabled"),
    ("", {"WANDB_DISABLED": "yes"}, "disabled"),
    ("", {"WANDB_DISABLED": "false"}, "offline"),
    ("", {"WANDB_DISABLED": "0"}, "offline"),
    ("", {"WANDB_DISABLED": ""}, "offline"),
    ("", {"WANDB_MODE": "offline", "WANDB_DISABLED": "true"}, "offline"),  # WANDB_MODE first
    ("disabled", {"WANDB_MODE": "offline"}, "disabled"),  # explicit wins
    ("offline", {"WANDB_MODE": "disabled"}, "offline"),
    ("offline", {"WANDB_DISABLED": "true"}, "offline"),
    ("online", {"WANDB_MODE": "offline"}, "online"),
    ("disabled", {}, "disabled"),
])
def test_resolved_mode(mode, env, want):
    assert WandbConfig(mode=mode).resolved_mode(env) == want


def test_resolved_mode_reads_os_environ_by_default(monkeypatch):
    monkeypatch.delenv("WANDB_DISABLED", raising=False)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert WandbConfig().resolved_mode() == "disabled"
    monkeypatch.delenv("WANDB_MODE")
    assert WandbConfig().resolved_mode() == "offline"
    monkeypatch.setenv("WANDB_DISABLED", "yes")
    assert WandbConfig().resolved_mode() == "disabled"


def test_a_bad_wandb_mode_in_the_environment_names_the_variable():
    with pytest.raises(ConfigError, match="WANDB_MODE='cloud'"):
        WandbConfig().resolved_mode({"WANDB_MODE": "cloud"})
    # not consulted
    assert WandbConfig(mode="offline").resolved_mode({"WANDB_MODE": "cloud"}) == "offline"


def test_the_default_mode_is_unset_and_explicit_modes_stay_valid():
    assert to_objects(compose([])).wandb.mode == ""
    assert to_objects(compose(["wandb.mode="])).wandb.mode == ""
    for mode in ("online", "offline", "disabled"):
        assert to_objects(compose([f"wandb.mode={mode}"])).wandb.mode == mode
    with pytest.raises(ConfigError, match="wandb.mode"):
        to_objects(compose(["wandb.mode=cloud"]))


def test_the_mode_is_not_part_of_a_run_s_identity():
    """``wandb`` is volatile: a run's config hash is the same whatever its mode (explicit or
    unset), a run recorded before the default changed keeps its hash, and resumes under the new
    default without a config difference."""
    assert "wandb" in runs.VOLATILE
    hashes = {runs.config_hash(OmegaConf.to_container(compose([f"wandb.mode={m}"]), resolve=True))
              for m in ("", "offline", "online", "disabled")}
    assert len(hashes) == 1
    run = FIXTURES / "brevo_tiny_N8_2L64D_rope_canon-none_lr0.003_s0"
    old = OmegaConf.to_container(OmegaConf.load(run / "config.yaml"))
    recorded = json.loads((run / "summary.json").read_text())["config_hash"]
    assert runs.config_hash(old) == recorded
    for mode in ("", "offline", "online"):
        new = {**old, "wandb": {**old["wandb"], "mode": mode}}
        assert runs.config_hash(new) == recorded
        assert runs.config_differences(old, new) == []


class FakeWandb(types.ModuleType):
    def __init__(self):
        super().__init__("wandb")
        self.inits: list[dict] = []

    def init(self, **kwargs):
        self.inits.append(kwargs)
        return types.SimpleNamespace(log=lambda *a, **k: None, finish=lambda: None)


@pytest.mark.parametrize("mode,env,want", [
    ("", {"WANDB_MODE": "disabled"}, None),
    ("", {"WANDB_DISABLED": "true"}, None),
    ("disabled", {"WANDB_MODE": "offline"}, None),
    ("", {}, "offline"),
    ("", {"WANDB_MODE": "online"}, "online"),
    # passed to wandb.init, whose mode= beats the env
    ("offline", {"WANDB_MODE": "disabled"}, "offline"),
])
def test_mirror_inits_wandb_in_the_resolved_mode_and_never_when_disabled(monkeypatch, tmp_path,
                                                                         mode, env, want):
    from playground.run.train import Mirror

    for key in ("WANDB_MODE", "WANDB_DISABLED"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    cfg = types.SimpleNamespace(wandb=WandbConfig(mode=mode), run_name="r", out_dir=str(tmp_path))
    mirror = Mirror(cfg, {})
    assert [i["mode"] for i in fake.inits] == ([] if want is None else [want])
    assert (mirror.run is None) is (want is None)


def train(out: Path, env: dict[str, str], *extra: str) -> None:
    """A 3-step CPU run in a subprocess whose only wandb variables are ``env`` (wandb's own files
    kept under the test's folder)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    home = out.parent / f"{out.name}_wandb_home"
    base.update(WANDB_CONFIG_DIR=str(home / "config"), WANDB_CACHE_DIR=str(home / "cache"),
                WANDB_DATA_DIR=str(home / "data"), WANDB_SILENT="true")
    proc = subprocess.run([sys.executable, "-m", "playground.run.train", *TINY, "train.steps=3",
                           f"out_dir={out}", *extra], env={**base, **env}, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert runs.read_json(out / "summary.json")["status"] == "finished"


@pytest.mark.slow
@pytest.mark.parametrize("env,extra,mirrored", [
    ({"WANDB_MODE": "disabled"}, [], False),  # (a)
    ({"WANDB_MODE": "offline"}, [], True),  # (b)
    ({"WANDB_MODE": "offline"}, ["wandb.mode=disabled"], False),  # (c) the command line wins
    ({"WANDB_DISABLED": "true"}, [], False),  # (d)
], ids=["WANDB_MODE=disabled", "WANDB_MODE=offline", "override-beats-env", "WANDB_DISABLED=true"])
def test_the_environment_decides_the_mirror_unless_the_config_does(tmp_path, env, extra, mirrored):
    out = tmp_path / "run"
    train(out, env, *extra)
    assert (out / "wandb").is_dir() is mirrored
