"""``playground-report site``: the static results browser built from the report's test fixture
runs (CPU, no browser; tests/test_site_browser.py drives it in Chromium). Every file goes
through ``atomic_write``; failed, running and not-yet-started runs render as such; no NaN is
ever written as a number; bad input stops with a message naming it before anything is written."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest

from playground.errors import ConfigError
from playground.report import site
from playground.report.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "results" / "fig7_cpu"
NAN = re.compile(r"[:,\[>]\s*-?(NaN|nan|Infinity|inf)\b")  # written where a number goes


def page_data(path: Path) -> dict:
    """The JSON a page carries for app.js."""
    text = path.read_text()
    found = re.search(r'<script type="application/json" id="site-data">(.*?)</script>', text, re.S)
    assert found, path
    return json.loads(found.group(1),
                      parse_constant=lambda c: pytest.fail(f"{path}: {c} in the data"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    main(["site", str(FIXTURE), f"out={out}"])
    return out


def test_site_from_the_fixture(built):
    assert {"index.html", "app.js", "style.css"} <= {p.name for p in built.iterdir()}
    assert not (built / "findings.html").exists()  # only with findings=
    index = (built / "index.html").read_text()
    links = re.findall(r'(?:href|src)="([^"]+)"', index)
    # relative, published as is
    assert links and all(not re.match(r"[a-z]+:|/", link) for link in links)
    assert all((built / link).is_file() for link in links)
    (page,) = [built / link for link in links if link.endswith(".html")]
    data = page_data(page)
    assert data["panel"] == "depo_K2" and data["sizes"] == ["2L64D", "2L128D", "4L64D", "4L128D"]
    assert data["rows"] == ["N=8", "N=12", "N=16"] and len(data["variants"]) == 2
    assert {m["name"] for m in data["metrics"]} >= {"", "acc_k1", "acc_k2", "tok_acc", "final_loss"}
    for cells in data["cells"].values():
        assert len(cells) == 24 and all(c["status"] == "finished" and c["text"] for c in cells)
    assert len(data["runs"]) == 48 and sum(map(len, data["members"].values())) == 48
    run = data["runs"][data["cells"][""][0]["best_run"]]
    assert run["loss"] and run["eval"]["acc_k1"] and run["depth_family"] == ["acc_k1", "acc_k2"]
    assert "name: depo" in run["config"] and run["wall_time_s"] > 0 and run["tokens_per_s"] > 0
    assert ((built / "img" / Path(page).with_suffix(".svg").name).read_text().lstrip()
            .startswith("<?xml"))


@pytest.mark.slow
def test_every_file_is_written_atomically(tmp_path, monkeypatch):
    written = []
    real = site.atomic_write

    def spy(path, data):
        written.append(Path(path))
        real(path, data)

    monkeypatch.setattr(site, "atomic_write", spy)
    site.build([FIXTURE], tmp_path / "out")
    files = {p for p in (tmp_path / "out").rglob("*") if p.is_file()}
    assert files == set(written) and len(written) == len(set(written))
    assert not [p for p in files if p.name.startswith(".") or p.suffix == ".tmp"]


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_failed_and_pending_runs_render_as_such(tmp_path):
    results = tmp_path / "results"
    runs = sorted(FIXTURE.iterdir())  # 0, 1: one cell (lr 0.003, 0.01); 2, 3: another; 4: a third
    for run in runs[:5]:
        _copy(run, results / run.name)
    failed, finished, running, unstarted, alone = (results / run.name for run in runs[:5])
    for run in (failed, alone):
        summary = json.loads((run / "summary.json").read_text())
        summary.update(status="failed", error="RuntimeError: loss is NaN at step 12",
                       final_loss=math.nan, metrics={"acc_at_K": math.nan}, wall_time_s=math.nan)
        (run / "summary.json").write_text(json.dumps(summary))  # NaN as Python writes it
    summary = json.loads((running / "summary.json").read_text())
    summary.update(status="running", metrics={})
    (running / "summary.json").write_text(json.dumps(summary))
    (unstarted / "summary.json").unlink()
    (unstarted / "metrics.jsonl").unlink()
    site.build([results], tmp_path / "out")
    (page,) = [p for p in (tmp_path / "out").glob("*.html") if p.name != "index.html"]
    text = page.read_text()
    assert not NAN.search(text), NAN.search(text)
    data = page_data(page)
    status = {name.split("/", 1)[1]: r["status"] for name, r in data["runs"].items()}
    assert status[failed.name] == "failed" and status[running.name] == "running"
    assert status[unstarted.name] == "pending" and status[finished.name] == "finished"
    detail = data["runs"][f"results/{failed.name}"]
    assert detail["error"].startswith("RuntimeError") and detail["wall_time_s"] is None
    assert data["runs"][f"results/{unstarted.name}"]["loss"] == []
    cells = {c["best_run"] or c["status"]: c for c in data["cells"][""]}
    assert cells["failed"]["text"] == "failed" and cells["pending"]["text"] == "pending"
    assert cells[f"results/{finished.name}"]["failures"].startswith("failed: RuntimeError")
    for cells in data["cells"].values():
        assert all(c["value"] is None for c in cells if c["status"] != "finished")
    assert not NAN.search((tmp_path / "out" / "index.html").read_text())


def test_bad_input_names_it_before_writing(tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match="nowhere"):
        site.build([FIXTURE, tmp_path / "nowhere"], out)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="empty.*no run directory"):
        site.build([tmp_path / "empty"], out)
    assert not out.exists()
    with pytest.raises(SystemExit) as stop:
        main(["site", str(FIXTURE)])
    assert stop.value.code == 2 and "out= is required" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="out=.*file"):
        site.build([FIXTURE], tmp_path / "file")
