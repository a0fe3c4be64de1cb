"""Every preset under conf/ composes into a valid config, and the run name is unique per point."""

from __future__ import annotations

import re

import pytest
from omegaconf import OmegaConf

from playground.config import CONF_DIR, Composer, compose, from_container, to_objects
from playground.errors import ConfigError
from playground.model import build_model
from playground.tasks import build_task

GROUPS = ["task", "mixer", "canon", "size", "model", "train", "experiment"]
PRESETS = [(g, p.stem) for g in GROUPS for p in sorted((CONF_DIR / g).glob("*.yaml"))]


# presets that only make sense together with another group's choice
PAIRED = {("model", "mamba2"): ["mixer=mamba2", "canon=none"],
          ("model", "mamba2_mlp"): ["mixer=mamba2"]}


@pytest.mark.slow
@pytest.mark.parametrize("group,name", PRESETS)
def test_preset_composes(group, name):
    cfg = to_objects(compose([f"{group}={name}", *PAIRED.get((group, name), [])]))
    task = build_task(cfg.task)
    if group not in ("size", "experiment") or cfg.model.d_model <= 128:
        build_model(cfg.model, len(task.vocab))
    assert cfg.run_name and cfg.out_dir.endswith(cfg.run_name)


def test_run_names_differ_along_the_paper_axes():
    names = {to_objects(compose(ov)).run_name for ov in (
        [], ["canon=none"], ["mixer=nope"], ["size=4L128D"], ["train.lr=1e-3"], ["seed=1"],
        ["task.N=12"], ["task.K=1"], ["model.canon.residual=false"], ["mixer=rope_quarter"])}
    assert len(names) == 10


def test_from_container_round_trip():
    cfg = compose(["task=depo2", "canon=AC", "mixer=nope"])
    again = from_container(OmegaConf.to_container(cfg, resolve=True))
    assert again == to_objects(cfg)


def test_keys_no_schema_has_are_refused_with_the_nearest_key():
    """`+train.step=50` gets past Hydra's struct mode; the schema check refuses it (and any key
    no schema has), naming the nearest real key."""
    import pytest

    from playground.config import check_group_options, compose, to_objects
    from playground.errors import ConfigError

    with pytest.raises(ConfigError,
                       match=r"train\.step is not a config key; did you mean train\.steps\?"):
        to_objects(compose(["+train.step=50"]))
    with pytest.raises(ConfigError,
                       match=r"model\.canon\.kernal .* did you mean model\.canon\.kernel\?"):
        to_objects(compose(["+model.canon.kernal=3"]))
    with pytest.raises(ConfigError, match=r"task=depo_tny is not an option of task; "
                                          r"did you mean task=depo_tiny\?"):
        check_group_options(["task=depo_tny"])
    with pytest.raises(ConfigError, match=r"did you mean task=depo_tiny\?"):
        compose(["task=depo_tny"])
    check_group_options(["task=depo_tiny", "mixer=rope,nope", "train.lr=1e-3",
                         "size=8L512D", "size=mqar/w64", "size=capo/2-2"])  # fine: sub-folders too
    with pytest.raises(ConfigError, match=r"size=mqar/w65 is not an option of size; "
                                          r"did you mean size=mqar/w64\?"):
        check_group_options(["size=mqar/w65"])


def test_composer_is_compose_for_runs_that_differ_in_values(tmp_path):
    """A sweep's runs that differ only in plain values (a seed, task.N, a list, a bool, a key
    given twice, the run's out_dir with its interpolation) share one composition: each run's
    config, resolved, is what composing it whole gives (run name and out_dir included), and a
    copy of its own; other group choices compose anew; a value the composed config refuses gives
    compose's own error."""
    def run(seed, n, lr):
        return ["task=depo_tiny", f"seed={seed}", "size=2L64D", f"task.N={n}", "canon=ABCD",
                f"train.lr={lr}", "train.steps=7", "train.length_scales=[1,2]",
                "train.compile=false", "train.steps=9", f"out_dir={tmp_path}/${{run_name}}"]

    composer = Composer()
    runs = [run(2, 16, 1e-3), run(0, 12, 3e-3), run(7, 20, 1e-3)]
    configs = [composer(r) for r in runs]
    assert len(composer._shared) == 1
    for overrides, cfg in zip(runs, configs):
        mine = OmegaConf.to_container(cfg, resolve=True)
        assert mine == OmegaConf.to_container(compose(overrides), resolve=True)
        assert mine["train"]["steps"] == 9 and mine["out_dir"].endswith(f"_s{cfg.seed}")
    # copies: a later run leaves earlier ones alone
    assert [(c.seed, c.task.N) for c in configs] == [(2, 16), (0, 12), (7, 20)]
    other = ["task=depo_tiny", "seed=1", "size=2L128D", "canon=AB"]
    assert (OmegaConf.to_container(composer(other), resolve=True)
            == OmegaConf.to_container(compose(other), resolve=True))
    assert len(composer._shared) == 2
    for bad in ["train.stepz=5", "task.N=abc", "seed=1,2"]:
        with pytest.raises(ConfigError) as whole:
            compose([*runs[0], bad])
        with pytest.raises(ConfigError, match=re.escape(str(whole.value))):
            composer([*runs[0], bad])


@pytest.mark.parametrize("setting", ["model.canon.kernel=3", "model.canon.residual=false",
                                     "model.canon.activation=silu", "model.canon.backend=torch"])
def test_a_canon_setting_without_canon_layers_is_refused(setting):
    """With no Canon position (canon=none) a Canon setting would change nothing: refused, naming
    it; with Canon layers the same setting is taken."""
    with pytest.raises(ConfigError, match=f"{setting.split('=')[0]}=.*without Canon layers"):
        to_objects(compose(["canon=none", setting]))
    to_objects(compose(["canon=ABCD", setting]))
