"""``playground-bench profile``: where a training step's time goes (CPU here: operators; on a GPU
the same command lists kernels, docs/PERFORMANCE.md)."""

from __future__ import annotations

import json

import pytest

from playground.bench import measure
from playground.bench.cli import main
from playground.config import compose, to_objects

TINY = ["task=depo_tiny", "size=2L64D", "train.batch_size=2", "steps=2", "warmup=1"]
CONTEXT = to_objects(compose(["task=depo_tiny"])).task.context


def _profile(tmp_path, *extra: str) -> dict:
    path = tmp_path / "prof.json"
    main(["profile", *TINY, *extra, f"json={path}"])
    return json.loads(path.read_text())


def test_profile_lists_the_steps_operators_by_their_own_time(tmp_path, capsys):
    canon = _profile(tmp_path, "canon=ABCD", "top=60")
    plain = _profile(tmp_path, "canon=none", "top=60")
    for r in (canon, plain):
        assert r["entries"] == "CPU operators" and r["busy"] is None and r["device"] == "cpu"
        times = [e["ms_per_step"] for e in r["top"]]
        assert times == sorted(times, reverse=True) and times[-1] >= 0 and times[0] > 0
        assert all(e["calls_per_step"] > 0 for e in r["top"])
        assert 0 < sum(e["share"] for e in r["top"]) <= 1 + 1e-9
        # batch 2 of the task's context
        assert r["tokens_per_s"] * r["step_s"] == pytest.approx(2 * CONTEXT)
        # the projections
        assert any(e["name"] in ("aten::mm", "aten::addmm", "aten::bmm") for e in r["top"])
    # the profile is of the config asked for: Canon's depthwise convolutions, forward and backward,
    # appear with Canon only
    conv = [e["name"] for e in canon["top"] if "convolution" in e["name"]]
    assert conv and not [e for e in plain["top"] if "convolution" in e["name"]]
    assert any("backward" in n for n in conv)
    assert "ms/step" in capsys.readouterr().out


def test_profile_top_bounds_the_list(tmp_path, capsys):
    assert len(_profile(tmp_path, "top=3")["top"]) == 3
    capsys.readouterr()


@pytest.mark.parametrize("extra,key", [(["top=0"], "top=0"), (["steps=x"], "steps='x'"),
                                       (["data=disk"], "data"),
                                       (["train.no_such_key=1"], "no_such_key")])
def test_profile_refuses_bad_input_before_measuring(monkeypatch, capsys, extra, key):
    monkeypatch.setattr(measure, "build_task", lambda *a, **k: pytest.fail("built before checking"))
    with pytest.raises(SystemExit):
        main(["profile", *TINY, *extra])
    assert key in capsys.readouterr().err
