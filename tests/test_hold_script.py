"""docs/bench/hold.sh, the driver of a sweep on a lent machine, tried without a GPU: `--then`
launches each sweep when the one before has ended, with the deadline then left, and none with
less than MIN_LAUNCH_S left. Dry-run sweeps stand in for the launches (seconds each)."""
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

HOLD = Path(__file__).resolve().parents[1] / "docs" / "bench" / "hold.sh"
DRY = ["scale=mini", "panels=mano", "dry_run=true"]


def hold(tmp_path: Path, hold_left: int, *sweeps: list[str], tests: str = "") -> str:
    """``hold.sh start`` with the sweeps joined by ``--then``, in ``tmp_path`` (``tests``:
    ``HOLD_TESTS``); the launch log."""
    work = tmp_path / "repo"  # what travels: nothing is needed, the package is installed
    work.mkdir(exist_ok=True)
    args = [a for sweep in sweeps for a in ["--then", *sweep]][1:]
    env = {**os.environ, "HOLD_TMP": str(tmp_path), "HOLD_NO_INSTALL": "1",
           "OUT": str(tmp_path / "out"), "MIN_LAUNCH_S": "100", "HOLD_TESTS": tests,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    try:
        subprocess.run(["bash", str(HOLD), "start", "240", str(hold_left), *args], cwd=work,
                       env=env, capture_output=True, text=True, timeout=300, check=True)
    finally:
        packer = tmp_path / "hold" / "packer.pid"
        if packer.exists():
            os.kill(int(packer.read_text()), signal.SIGTERM)
    assert (tmp_path / "hold" / "done").exists()  # the queue ended before the call's 240 s
    return (tmp_path / "hold" / "report" / "launch.log").read_text()


@pytest.mark.slow
def test_then_launches_each_sweep_after_the_one_before_with_the_deadline_left(tmp_path):
    log = hold(tmp_path, 400, ["fig7", *DRY], ["probe", *DRY, "variants=llama_alibi"])
    starts = re.findall(r"launch at (\S+): playground-sweep (\w+) .* deadline=(\d+)$", log, re.M)
    assert [s[1] for s in starts] == ["fig7", "probe"]
    assert 300 <= int(starts[1][2]) <= int(starts[0][2]) <= 340  # 400 s less the margin, then less
    assert log.count("launch ended at") == 2 and log.count(", rc 0") == 2
    assert log.index("launch ended at") < log.index("playground-sweep probe")  # one after the other
    assert "90 of 90 runs to do" in log and "3 of 3 runs to do" in log  # each sweep's own runs
    assert "not launched" not in log


@pytest.mark.slow
def test_no_launch_with_less_than_min_launch_s_left(tmp_path):
    """And HOLD_TESTS runs its pytest selection beside the launch, quotes kept, its output and
    exit status in the report folder's gpu_tests.txt."""
    smoke = tmp_path / "t_smoke.py"
    smoke.write_text("def test_one():\n    pass\n\n\ndef test_two():\n    pass\n\n\n"
                     "def test_three():\n    assert False\n")
    log = hold(tmp_path, 150, ["fig7", *DRY],  # 150 s less the 60-s margin: under 100
               tests=f'{smoke} -k "one or two"')
    assert re.search(r"^not launched, \d+ s left: playground-sweep fig7 scale=mini", log, re.M)
    assert "launch at" not in log
    report = tmp_path / "hold" / "report" / "gpu_tests.txt"
    for _ in range(300):  # the tests run on after the (empty) launch
        if report.exists() and "pytest exit" in report.read_text():
            break
        time.sleep(0.1)
    text = report.read_text()
    assert "2 passed, 1 deselected" in text and text.rstrip().endswith("pytest exit 0"), text


@pytest.mark.slow
def test_a_run_finished_when_the_launch_ends_comes_back_with_the_call(tmp_path, monkeypatch):
    """The call packs once more when the launch is done, without waiting for the packer's round:
    here the packer never runs (PACK_S beyond the call), and runs.tgz in OUT still holds the
    finished record (its checkpoints left out) and logs.tgz the run's log."""
    run = tmp_path / "repo" / "results" / "x" / "run_a"
    (run / "checkpoints").mkdir(parents=True)
    (run / "summary.json").write_text('{"status": "finished"}')
    (run / "train.log").write_text("step 1\n")
    (run / "checkpoints" / "last.pt").write_text("weights")
    later = time.time() + 3600  # written after the call's start, as a run's record is
    for f in (run / "summary.json", run / "train.log"):
        os.utime(f, (later, later))
    monkeypatch.setenv("PACK_S", "1000")
    hold(tmp_path, 400, ["fig7", *DRY])
    with tarfile.open(tmp_path / "out" / "runs.tgz") as t:
        names = t.getnames()
    assert "results/x/run_a/summary.json" in names and not any("checkpoints/" in n for n in names)
    with tarfile.open(tmp_path / "out" / "logs.tgz") as t:
        assert "results/x/run_a/train.log" in t.getnames()
    assert not list((tmp_path / "hold" / "report").glob(".*.tgz"))  # no half-written archive left
