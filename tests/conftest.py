"""Shared fixtures: configs composed exactly as the CLI composes them, with CPU-test defaults."""

from __future__ import annotations

import pytest

from playground.config import compose, to_objects

TEST_DEFAULTS = ["wandb.mode=disabled", "train.progress=false", "train.device=cpu"]


@pytest.fixture
def make_cfg(tmp_path):
    """make_cfg(*overrides, run="run") -> composed DictConfig writing into tmp_path/<run>."""

    def make(*overrides: str, run: str = "run"):
        return compose([*TEST_DEFAULTS, f"out_dir={tmp_path / run}", *overrides])

    return make


def task_from(*overrides: str):
    """A task object built from config overrides, e.g. task_from("task=depo1", "task.N=20")."""
    from playground.tasks import build_task

    return build_task(to_objects(compose(list(overrides))).task)
