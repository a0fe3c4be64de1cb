"""The findings page of ``playground-report site`` (``findings=``): ``findings.html``, every
finding cell of a findings file read from the site's runs (``findings.evaluate``, the numbers of
``playground-report findings``), grouped by the paper's result, each side linked to the page of
its runs' panel, under the forest figure. ``site.build`` wraps it in a page and writes it
(docs/site.md)."""

from __future__ import annotations

import html

import pandas as pd

from playground.report import findings as fnd

UNTESTED_COLOUR = "#999999"  # a verdict's colour: findings.VERDICT_COLOURS, else this


def counts_text(table: pd.DataFrame) -> str:
    """``73 finding cells: 23 inconclusive, 18 holds, …`` (the page's and the index's line)."""
    return f"{len(table)} finding cells: {fnd.verdict_counts(table)}"


def findings_body(table: pd.DataFrame, findings: list, href) -> str:
    """The findings page's body: per paper result a table of its finding cells (claim, cell, each
    side's mean, seeds and values, the margin B − A with its 95 % interval, chance, the verdict
    and the family-wise reading), a side's name linking to ``href(side, panel)`` where that is
    not None (the page of its runs' panel), under the forest figure
    (``img/findings_forest.svg``)."""
    by_id = {f.id: f for f in findings}
    body = ['<header><a href="index.html">&larr; all panels</a><h1>Findings</h1>'
            f"<p>{html.escape(counts_text(table))}. Family-wise: "
            f"{html.escape(fnd.family_text(table))}; ° where that reading is inconclusive. "
            "A verdict of holds or reversed needs ≥ 3 seeds a side and a 95 % interval "
            "excluding 0 (docs/findings.md).</p></header>",
            '<img class="forest" src="img/findings_forest.svg" '
            'alt="every finding cell: its margin and 95 % interval, by verdict">']
    head = ("<tr><th>claim</th><th>cell</th><th>A</th><th>B</th>"
            "<th>B − A [95 % CI]</th><th>chance</th><th>verdict</th><th>family-wise</th></tr>")
    for result, block in table.groupby("result", sort=False):
        body.append(f'<section><h2>Result {html.escape(str(result))}</h2>'
                    f'<table class="findings"><thead>{head}</thead><tbody>')
        for _, r in block.iterrows():
            finding, texts = by_id[r["id"]], fnd.row_texts(r)
            sides = []
            for key, side in zip(("a", "b"), finding.sides):
                link = href(side, r["panel"])
                name = html.escape(str(r[f"label_{key}"] or r[key]))
                name = f'<a href="{link}">{name}</a>' if link else name
                sides.append(f"<td>{name}<br>{html.escape(texts[key])}"
                             f'<br><span class="values">{html.escape(texts[f"values_{key}"])}'
                             "</span></td>")
            cell = f"{r['panel']} {r['row']} {r['size']}"
            mark = "°" if fnd.not_kept(r) else ""
            missing = (f'<br><span class="values">to run: {html.escape(r["missing"])}</span>'
                       if r["missing"] else "")
            if r["verdict"] == "inconclusive":  # seeds a side at which it would decide
                missing += (f'<br><span class="values">decides at (projected): '
                            f'{html.escape(fnd.projection_text(r))}</span>')
            body.append(
                f'<tr><td>{html.escape(r["claim"])} '
                f'<span class="values">({html.escape(r["id"])})</span></td>'
                f"<td>{html.escape(cell)}"
                f'<br><span class="values">{html.escape(r["metric"])}</span></td>'
                + "".join(sides)
                + f'<td>{html.escape(texts["margin"])}</td><td>{html.escape(texts["chance"])}</td>'
                f'<td><span class="verdict" style="color: '
                f'{fnd.VERDICT_COLOURS.get(r["verdict"], UNTESTED_COLOUR)}">'
                f'{html.escape(r["verdict"])}</span>{mark}{missing}</td>'
                f'<td>{html.escape(texts["family"])}</td></tr>')
        body.append("</tbody></table>")
        notes = [f for f in findings if f.result == result and f.note]
        body += [f'<p class="hint">{html.escape(f.id)}: {html.escape(f.note)}</p>' for f in notes]
        body.append("</section>")
    return "\n".join(body)
