// The results browser of `playground-report site`: draws a page from the JSON that the
// builder (playground/report/site.py) put into it. No framework, no network: plain DOM and SVG.
// Numbers are formatted by the builder; null (a NaN or a missing value) is shown as "—".
"use strict";

const DATA = JSON.parse(document.getElementById("site-data").textContent);
const SVGNS = "http://www.w3.org/2000/svg";
const COLORS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"];
const state = { metric: "", cell: null, run: null, evalSeries: "" };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "onclick") node.addEventListener("click", v);
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

function fmt(x, digits) {
  return x === null || x === undefined ? "—" : Number(x).toPrecision(digits || 3);
}

function duration(s) {
  if (s === null || s === undefined) return "—";
  return s < 120 ? `${fmt(s)} s` : s < 7200 ? `${(s / 60).toFixed(1)} min` : `${(s / 3600).toFixed(1)} h`;
}

// white (0) -> deep green (1), the palette of the report's PNG heatmaps
function shade(s) {
  if (s === null || s === undefined) return "";
  const stops = [[255, 255, 255], [199, 233, 192], [65, 171, 93], [0, 90, 50]];
  const x = Math.min(Math.max(s, 0), 1) * (stops.length - 1), i = Math.min(Math.floor(x), stops.length - 2);
  const t = x - i, c = stops[i].map((v, k) => Math.round(v + t * (stops[i + 1][k] - v)));
  return `rgb(${c.join(",")})`;
}

// -- filters (index and panel pages) ---------------------------------------------------------

function indexPage() {
  const selects = document.querySelectorAll("select[data-filter]");
  const apply = () => {
    document.querySelectorAll(".card").forEach(card => {
      const ok = [...selects].every(s => !s.value || card.dataset[s.dataset.filter].split(",").includes(s.value));
      card.hidden = !ok;
    });
  };
  selects.forEach(s => s.addEventListener("change", apply));
}

// -- heatmaps --------------------------------------------------------------------------------

function metricInfo() {
  return DATA.metrics.find(m => m.name === state.metric) || DATA.metrics[0];
}

function cellsOf(variant) {
  return DATA.cells[state.metric].filter(c => c.variant === variant);
}

function grid(title, rows, sizes, lookup, clickable) {
  const table = el("table", { class: "heatmap" });
  table.append(el("caption", { text: title }));
  table.append(el("tr", {}, el("th"), ...sizes.map(s => el("th", { text: s }))));
  rows.forEach(row => {
    const tr = el("tr", {}, el("th", { text: row }));
    sizes.forEach(size => {
      const c = lookup(row, size);
      const td = el("td", { text: c ? c.text : "—", class: c ? `cell ${c.status}` : "cell missing" });
      if (c && c.color) td.style.background = c.color;
      else if (c && c.shade !== null && c.shade !== undefined) {
        td.style.background = shade(c.shade);
        if (c.shade > 0.6) td.style.color = "white";
      }
      if (c && clickable) {
        td.dataset.row = row;
        td.dataset.size = size;
        td.addEventListener("click", () => clickable(c, row, size));
      }
      tr.append(td);
    });
    table.append(tr);
  });
  return table;
}

function visibleVariants() {
  const b = document.getElementById("f-backbone").value, c = document.getElementById("f-canon").value;
  return DATA.variants.filter(v => (!b || v.architecture === b) && (!c || v.canon === c));
}

function drawHeatmaps() {
  const box = document.getElementById("heatmaps");
  box.replaceChildren();
  const info = metricInfo();
  visibleVariants().forEach(v => {
    const cells = cellsOf(v.id);
    const find = (row, size) => cells.find(c => c.row === row && c.size === size);
    box.append(grid(`${v.label}`, DATA.rows, DATA.sizes, find, (c, row, size) => selectCell(v, row, size)));
  });
  box.append(el("p", { class: "hint", text: `${info.label}: ${info.lower ? "lower" : "higher"} is better` }));
  drawPaper();
  drawCompare();
}

// -- ours vs the paper -----------------------------------------------------------------------

function drawPaper() {
  const box = document.getElementById("paper");
  box.replaceChildren();
  const shown = new Set(visibleVariants().map(v => v.id));
  const entries = DATA.paper.filter(p => shown.has(p.variant));
  document.getElementById("paper-section").hidden = !DATA.paper.length;
  const figures = [...new Set(entries.map(p => p.figure))];
  figures.forEach(fig => {
    DATA.variants.filter(v => shown.has(v.id)).forEach(v => {
      const part = entries.filter(p => p.figure === fig && p.variant === v.id);
      if (!part.length) return;
      const rows = [...new Set(part.sort((a, b) => a.row_index - b.row_index).map(p => p.row_paper))];
      const sizes = DATA.sizes.filter(s => part.some(p => p.size === s));
      const at = key => (row, size) => {
        const p = part.find(q => q.row_paper === row && q.size === size);
        if (!p) return null;
        if (key === "diff") return { text: p.diff === null ? "—" : p.diff, status: "diff", shade: null };
        const value = key === "ours" ? p.ours_value : p.paper_value;
        return { text: p[key], status: key === "ours" ? p.status : "finished", shade: value };
      };
      const row = el("div", { class: "triple" });
      row.append(grid(`ours: ${v.label}`, rows, sizes, at("ours")),
                 grid(`paper, Figure ${fig}`, rows, sizes, at("paper")),
                 grid("ours − paper (pp)", rows, sizes, at("diff")));
      const ours = [...new Set(part.map(p => p.row).filter(r => r))];
      box.append(row, el("p", { class: "hint", text: `Rows matched by position; ours are ${ours.join(", ") || "—"} ` +
                                                       `(mini scale), the paper's ${rows.join(", ")}.` }));
    });
  });
  if (!figures.length && DATA.paper.length) box.append(el("p", { class: "hint", text: "No shown variant is in the paper." }));
}

// -- compare two variants --------------------------------------------------------------------

function drawCompare() {
  const a = document.getElementById("cmp-a").value, b = document.getElementById("cmp-b").value;
  const box = document.getElementById("compare");
  box.replaceChildren();
  if (!a || !b || a === b) {
    box.append(el("p", { class: "hint", text: "Pick two different variants." }));
    return;
  }
  const info = metricInfo(), scale = info.percent ? 100 : 1, unit = info.percent ? " pp" : "";
  const ca = cellsOf(a), cb = cellsOf(b);
  const find = (row, size) => {
    const x = ca.find(c => c.row === row && c.size === size), y = cb.find(c => c.row === row && c.size === size);
    if (!x || !y) return null;
    if (x.value === null || y.value === null) return { text: `${x.status} / ${y.status}`, status: "missing", shade: null };
    const d = (x.value - y.value) * scale;
    const sp = [x, y].map(c => (c.seeds > 1 && c.spread !== null ? `±${fmt(c.spread * scale, 2)}` : "1 seed"));
    const better = (info.lower ? -d : d) / scale, alpha = Math.min(1, Math.abs(better) * 2) * 0.6;
    return { text: `${d >= 0 ? "+" : ""}${fmt(d)}${unit} (${sp.join(" / ")})`, status: "finished", shade: null,
             color: better >= 0 ? `rgba(0,150,60,${alpha})` : `rgba(200,30,30,${alpha})` };
  };
  const label = id => DATA.variants.find(v => v.id === id).label;
  box.append(grid(`${label(a)} − ${label(b)} (${info.label}; seed spread A / B)`, DATA.rows, DATA.sizes, find));
}

// -- a cell and its runs ---------------------------------------------------------------------

function selectCell(variant, row, size) {
  state.cell = { variant, row, size };
  const runs = DATA.members[`${variant.id}|${row}|${size}`] || [];
  const cell = cellsOf(variant.id).find(c => c.row === row && c.size === size);
  state.run = (cell && cell.best_run) || runs[0] || null;
  drawCell();
}

function drawCell() {
  const box = document.getElementById("cell");
  const { variant, row, size } = state.cell;
  const runs = DATA.members[`${variant.id}|${row}|${size}`] || [];
  const cell = cellsOf(variant.id).find(c => c.row === row && c.size === size);
  box.replaceChildren(el("h2", { text: `${variant.label}, ${row}, ${size}` }));
  if (cell) {
    const parts = [`cell: ${cell.text}`, `status ${cell.status}`, `${cell.n_runs} run(s)`];
    if (cell.lr !== null) parts.push(`best lr ${fmt(cell.lr)}`);
    if (cell.seeds > 1) parts.push(`spread over ${cell.seeds} seeds ±${fmt(cell.spread)}`);
    if (cell.failures) parts.push(`failures: ${cell.failures}`);
    box.append(el("p", { text: parts.join(" · ") }));
  }
  const table = el("table", { class: "runs" });
  table.append(el("tr", {}, ...["run", "status", "lr", "seed", "value", "steps", "wall time", "tokens/s"]
    .map(h => el("th", { text: h }))));
  runs.forEach(name => {
    const r = DATA.runs[name];
    const tr = el("tr", { class: `run ${r.status}${name === state.run ? " selected" : ""}`,
                          onclick: () => { state.run = name; drawCell(); } },
      el("td", { text: name }), el("td", { text: r.status }), el("td", { text: fmt(r.lr) }),
      el("td", { text: r.seed === null ? "—" : String(r.seed) }), el("td", { text: fmt(r.value) }),
      el("td", { text: `${r.step === null ? "—" : r.step}/${r.steps === null ? "—" : r.steps}` }),
      el("td", { text: duration(r.wall_time_s) }),
      el("td", { text: r.tokens_per_s === null ? "—" : Math.round(r.tokens_per_s).toLocaleString("en") }));
    table.append(tr);
  });
  box.append(table);
  if (state.run) box.append(runDetail(DATA.runs[state.run]));
  box.scrollIntoView({ block: "start" });
}

function runDetail(r) {
  const box = el("div", { class: "run-detail", id: "run-detail" });
  box.append(el("h3", { text: r.run }));
  const facts = [`status: ${r.status}`];
  if (r.error) facts.push(`reason: ${r.error}`);
  if (r.params !== null) facts.push(`parameters: ${r.params.toLocaleString("en")}`);
  box.append(el("p", { class: `status ${r.status}`, text: facts.join(" · ") }));
  const names = Object.keys(r.eval);
  const options = (r.depth_family.length ? ["per depth"] : []).concat(names);
  if (!options.includes(state.evalSeries)) state.evalSeries = options[0] || "";
  const charts = el("div", { class: "charts" });
  charts.append(chart("training loss", { loss: r.loss }, "loss-curve"));
  const series = state.evalSeries === "per depth"
    ? Object.fromEntries(r.depth_family.map(n => [n, r.eval[n]])) : { [state.evalSeries]: r.eval[state.evalSeries] || [] };
  const pick = el("select", { id: "eval-metric" }, ...options.map(o => el("option", { value: o, text: o })));
  pick.value = state.evalSeries;
  pick.addEventListener("change", () => { state.evalSeries = pick.value; drawCell(); });
  const evalBox = el("div", {}, el("label", { text: "eval " }, pick));
  evalBox.append(options.length ? chart("eval", series, "eval-curve") : el("p", { class: "hint", text: "no eval rows" }));
  charts.append(evalBox);
  box.append(charts);
  const finals = Object.entries(r.metrics).map(([k, v]) => `${k} ${fmt(v)}`).join(" · ");
  if (finals) box.append(el("p", { class: "metrics", text: `final: ${finals}` }));
  box.append(el("details", { open: "" }, el("summary", { text: "config.yaml" }),
                el("pre", { class: "config", text: r.config })));
  return box;
}

// A line chart of {name: [[step, value], ...]} as SVG, with min/max ticks and a legend.
function chart(title, series, id) {
  const W = 420, H = 230, L = 52, R = 10, T = 22, B = 30;
  const pts = Object.values(series).flat().filter(p => p[0] !== null && p[1] !== null);
  const svg = document.createElementNS(SVGNS, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "chart");
  svg.id = id;
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.append(n);
    return n;
  };
  add("text", { x: L, y: 14, class: "title" }, title);
  if (!pts.length) {
    add("text", { x: L, y: H / 2 }, "no data");
    return svg;
  }
  const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
  let [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y0 -= 0.5; y1 += 0.5; }
  const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R), sy = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  add("rect", { x: L, y: T, width: W - L - R, height: H - T - B, class: "frame" });
  [[y0, sy(y0)], [y1, sy(y1)]].forEach(([v, y]) => add("text", { x: L - 4, y: y + 4, class: "tick", "text-anchor": "end" }, fmt(v)));
  [[x0, sx(x0), "start"], [x1, sx(x1), "end"]].forEach(([v, x, anchor]) =>
    add("text", { x, y: H - B + 14, class: "tick", "text-anchor": anchor }, String(v)));
  add("text", { x: (L + W) / 2, y: H - 4, class: "tick", "text-anchor": "middle" }, "step");
  Object.entries(series).forEach(([name, data], i) => {
    const color = COLORS[i % COLORS.length];
    const line = data.filter(p => p[0] !== null && p[1] !== null).map(p => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`);
    add("polyline", { points: line.join(" "), fill: "none", stroke: color, "stroke-width": 1.5, class: "series" });
    if (line.length < 40) line.forEach(p => { const [x, y] = p.split(","); add("circle", { cx: x, cy: y, r: 2.5, fill: color }); });
    add("text", { x: L + 6 + 70 * (i % 5), y: T + 12 + 12 * Math.floor(i / 5), fill: color, class: "legend" }, name);
  });
  return svg;
}

// -- the panel page --------------------------------------------------------------------------

function panelPage() {
  const metric = document.getElementById("metric");
  DATA.metrics.forEach(m => metric.append(el("option", { value: m.name, text: m.label })));
  metric.addEventListener("change", () => {
    state.metric = metric.value;
    drawHeatmaps();
    if (state.cell) drawCell();
  });
  for (const [id, key] of [["f-backbone", "architecture"], ["f-canon", "canon"]]) {
    const select = document.getElementById(id);
    [...new Set(DATA.variants.map(v => v[key]))].forEach(v => select.append(el("option", { value: v, text: v })));
    select.addEventListener("change", drawHeatmaps);
  }
  ["cmp-a", "cmp-b"].forEach((id, i) => {
    const select = document.getElementById(id);
    DATA.variants.forEach(v => select.append(el("option", { value: v.id, text: v.label })));
    select.value = (DATA.variants[Math.min(i, DATA.variants.length - 1)] || {}).id || "";
    select.addEventListener("change", drawCompare);
  });
  drawHeatmaps();
}

if (DATA.page === "index") indexPage();
else if (DATA.page === "panel") panelPage();
