"""``playground-bench table``: the performance table's cells, ratios, resume and bad input (CPU,
tiny models; the real table is measured on a GPU, docs/PERFORMANCE.md)."""

from __future__ import annotations

import json

import pytest

from playground.bench import measure
from playground.bench.cli import main
from playground.errors import ConfigError

TINY = "task=depo_tiny size=2L64D train.batch_size=2"


@pytest.fixture
def tiny_column(monkeypatch):
    monkeypatch.setitem(measure.TABLE_COLUMNS, "tiny", TINY)


@pytest.mark.slow
def test_table_measures_each_cell_with_its_ratios_and_resumes(tiny_column, tmp_path,
                                                              monkeypatch, capsys):
    """Each cell in a process of its own (the cell's overrides carry the tiny column there)."""
    path, md = tmp_path / "table.json", tmp_path / "table.md"
    main(["table", "rows=llama,llama_canon", "cols=tiny", "steps=1", "warmup=0", f"json={path}",
          f"md={md}", "train.compile=false"])
    cells = {c["row"]: c for c in json.loads(path.read_text())}
    assert set(cells) == {"llama", "llama_canon"} and all(c["column"] == "tiny"
                                                          for c in cells.values())
    llama, canon = cells["llama"], cells["llama_canon"]
    assert llama["x_llama"] == 1 and llama["x_twin"] is None
    assert (canon["x_twin"] == pytest.approx(canon["step_s"] / llama["step_s"])
            == pytest.approx(canon["x_llama"]))
    assert canon["params"] > llama["params"] and "canon=ABCD" in canon["overrides"]
    lines = md.read_text().splitlines()
    assert (lines[2].startswith("| tiny | Llama (RoPE), eager | ")
            and lines[3].startswith("| tiny | Llama + Canon-ABCD, eager"))

    def broken(*_args, **_kwargs):
        raise RuntimeError("CUDA out of memory (pretend)")

    monkeypatch.setattr(measure, "shared_train_speed", broken)
    before = path.read_text()
    main(["table", "rows=llama,llama_canon", "cols=tiny", f"json={path}", "train.compile=false"])
    assert path.read_text() == before  # both cells were there: nothing measured again
    main(["table", "rows=llama,gla", "cols=tiny", f"json={path}", f"md={md}", "train.compile=false",
          "train.compile_mode=default"])  # the GLA row's CUDA graphs need the compiler
    cells = {c["row"]: c for c in json.loads(path.read_text())}
    assert (cells["gla"]["error"] == "RuntimeError: CUDA out of memory (pretend)"
            and "step_s" in cells["llama"])
    assert "| tiny | GLA | failed: RuntimeError: CUDA out of memory (pretend) |" in md.read_text()
    graphed = dict(cells["llama"], overrides=["train.compile_mode=reduce-overhead"], compile=True)
    assert "| tiny | Llama (RoPE), compiled, CUDA graphs | " in measure.table_markdown([graphed])
    capsys.readouterr()


def test_table_lists_cells_in_its_own_order_whatever_order_they_were_measured_in(
        tiny_column, tmp_path, monkeypatch):
    fake = {"step_s": 1.0, "tokens_per_s": 1.0, "mfu": None, "peak_memory_gib": None,
            "compile": False}
    monkeypatch.setattr(measure, "shared_train_speed",
                        lambda overrides, *a, **k: dict(fake, step_s=len(overrides)))
    path = tmp_path / "table.json"
    measure.bench_table(["gla", "llama_canon"], ["tiny"], [], 1, 0, path)
    cells = measure.bench_table(["llama"], ["tiny"], [], 1, 0, path)
    assert [c["row"] for c in cells] == ["llama", "llama_canon", "gla"]
    assert [c["row"] for c in json.loads(path.read_text())] == ["llama", "llama_canon", "gla"]


@pytest.mark.parametrize("rows,cols,extra,key",
                         [(["llama", "transformer"], ["tiny"], [], "rows='transformer'"),
                          (["llama"], ["tiny", "huge"], [], "cols='huge'"),
                          (["llama"], ["tiny"], ["train.lr=fast"], "train.lr")])
def test_table_refuses_bad_input_before_measuring(tiny_column, monkeypatch, capsys, rows, cols,
                                                  extra, key):
    monkeypatch.setattr(measure, "shared_train_speed",
                        lambda *a, **k: pytest.fail("measured before checking"))
    with pytest.raises(ConfigError, match=key):
        measure.bench_table(rows, cols, extra, steps=1, warmup=0)
    with pytest.raises(SystemExit):  # the command line says the same, on stderr
        main(["table", f"rows={','.join(rows)}", f"cols={','.join(cols)}", *extra])
    assert key in capsys.readouterr().err


@pytest.mark.slow
def test_copies_train_together_and_their_throughputs_add_up(tmp_path):
    """``playground-bench train copies=1,2``: the config alone, then two processes training it at
    once (spawned, timed from a shared barrier); the second figure is the copies' total. With the
    loader's own worker processes, as a run has them on a GPU. Alone, the step time is the fastest
    of the blocks of timed steps; the copies time all their steps in one block."""
    path = tmp_path / "share.json"
    main(["train", *TINY.split(), "steps=2", "warmup=1", "blocks=3", "copies=1,2", "data=real",
          "data.num_workers=1", f"json={path}"])
    alone, shared = json.loads(path.read_text())
    assert (alone["copies"], shared["copies"]) == (1, 2)
    assert len(alone["block_step_s"]) == 3 and alone["step_s"] == min(alone["block_step_s"])
    # TINY: batch 2, context 256
    assert alone["tokens_per_s"] == pytest.approx(2 * 256 / alone["step_s"])
    assert len(shared["block_step_s"]) == 1
    assert len(shared["per_copy_tokens_per_s"]) == 2
    assert shared["tokens_per_s"] == pytest.approx(sum(shared["per_copy_tokens_per_s"]))
    assert (shared["tokens_vs_first"]
            == pytest.approx(shared["tokens_per_s"] / alone["tokens_per_s"]))
    assert 0 < shared["overlap"] <= 1  # the copies' timed steps ran at the same time
    for a, b in (alone["timed_window"], shared["timed_window"]):
        assert a < b


@pytest.mark.parametrize("extra,key", [(["copies=0"], "copies='0'"),
                                       (["copies=1,x"], "copies='1,x'"), (["blocks=0"], "blocks=0"),
                                       (["copies=2", "train.no_such_key=1"], "no_such_key")])
def test_copies_check_their_input_before_starting(monkeypatch, capsys, extra, key):
    monkeypatch.setattr(measure, "train_speed",
                        lambda *a, **k: pytest.fail("measured before checking"))
    with pytest.raises(SystemExit):
        main(["train", *TINY.split(), *extra])
    assert key in capsys.readouterr().err
