// Sweep: every configuration's mean over seeds with its 95 % interval, per trace; each
// configuration's paired difference against the baseline; every metric as a table; the
// published values beside kaudit's; the failed cells and the runs of the cells.
"use strict";

K.start(async ({sweep, baseline, metric}) => {
  const {el} = K;
  const ALL = "(all traces)";
  const metricSelect = document.getElementById("metric");
  const baselineSelect = document.getElementById("baseline");
  const verdictColors = {"better": "#1e8449", "worse": "#c0392b", "higher": "#1f618d", "lower": "#1f618d",
    "within noise": "#99a3a4", "one pair: no interval": "#d5dbdb", "not comparable": "#eaeded"};
  let report = null;

  // Values in the unit people read them in: ratios as percent, differences of ratios in points.
  const scale = (unit) => (unit === "ratio" ? 100 : 1);
  const axisUnit = {count: "", seconds: " (s)", ratio: " (%)", percent: " (%)"};
  const deltaUnit = {count: "", seconds: " (s)", ratio: " (pp)", percent: " (pp)"};
  function valueText(unit, v) {
    if (v === null || v === undefined) return "–";
    if (unit === "ratio") return `${(100 * v).toFixed(1)}%`;
    if (unit === "percent") return `${v.toFixed(2)} %`;
    if (unit === "seconds") return `${K.num(v, 2)} s`;
    return K.num(v, 1);
  }
  function spreadText(unit, v) {
    if (unit === "ratio") return `${(100 * v).toFixed(2)} pp`;
    if (unit === "seconds") return `${v.toFixed(2)} s`;
    return unit === "percent" ? v.toFixed(2) : K.num(v, 2);
  }
  // The tables show the texts the report sends (the CLI's, rounded half up there); these
  // compose only the charts' hover texts.
  function meanText(unit, s) {
    if (!s || s.mean === null) return "–";
    if (s.text !== undefined) return s.text;
    const text = valueText(unit, s.mean);
    if (s.low === null) return text;
    // An interval cut at what the metric can be (0 s, 100 %) is no longer symmetric.
    if (s.cut) return `${text} [${valueText(unit, s.low)} to ${valueText(unit, s.high)}]`;
    return `${text} ± ${spreadText(unit, (s.high - s.low) / 2)}`;
  }
  const signed = (v) => `${v >= 0 ? "+" : "−"}${Math.abs(v).toFixed(2)}`;
  function deltaText(unit, s) {
    if (!s || s.mean === null) return "–";
    if (s.text !== undefined) return s.text;
    const k = scale(unit);
    const suffix = unit === "ratio" ? " pp" : unit === "seconds" ? " s" : "";
    const text = `${signed(s.mean * k)}${suffix}`;
    return s.low === null ? text : `${text} [${signed(s.low * k)}, ${signed(s.high * k)}]`;
  }
  // Error bars: up to the interval's ends; none (NaN) where there is no interval.
  const up = (s, k) => (s.low === null || s.mean === null ? NaN : (s.high - s.mean) * k);
  const down = (s, k) => (s.low === null || s.mean === null ? NaN : (s.mean - s.low) * k);
  const errors = (stats, k) => ({type: "data", symmetric: false, visible: true, array: stats.map((s) => up(s, k)),
    arrayminus: stats.map((s) => down(s, k)), color: "#1c2833", thickness: 1.5, width: 8});
  const traceTitle = (trace) => (trace === ALL ? "All traces" : `Trace ${trace}`);
  const multi = () => report.traces.length > 1;
  const where = (row) => (multi() ? `${row.config} / ${row.trace === ALL ? "all" : row.trace}` : row.config);

  function chosenMetric(wanted) {
    const keys = report.metrics.map((m) => m.key);
    if (keys.includes(wanted)) return wanted;
    return keys.find((k) => k.startsWith("gpu")) || (keys.includes("pendingP95") ? "pendingP95" : keys[0]);
  }

  function drawMeans(m) {
    const k = scale(m.unit);
    const traces = [...report.traces, ALL].filter((t) => report.rows.some((r) => r.trace === t));
    if (!traces.length) {
      K.fill("charts-means", el("p", {class: "note", text: "No cell is complete yet."}));
      return;
    }
    K.fill("charts-means", traces.map((trace, i) => el("div", {},
      el("h3", {text: traceTitle(trace)}), el("div", {id: `chart-means-${i}`, class: "chart"}))));
    traces.forEach((trace, i) => {
      const rows = report.rows.filter((r) => r.trace === trace && r.values[m.key]);
      const stats = rows.map((r) => r.values[m.key]);
      K.plot(`chart-means-${i}`, [{
        type: "bar", name: "mean over seeds, 95 % interval", x: rows.map((r) => r.config),
        y: stats.map((s) => (s.mean === null ? null : s.mean * k)), error_y: errors(stats, k),
        marker: {color: "#5dade2", line: {color: "#1f618d", width: 1}},
        hovertext: rows.map((r, j) => `${r.config}${r.config === report.baseline ? " (baseline)" : ""}: ` +
          `${meanText(m.unit, stats[j])}<br>n = ${stats[j].n} seeds, sd ${stats[j].sd === null ? "–" : spreadText(m.unit, stats[j].sd)}` +
          `<br>min ${valueText(m.unit, stats[j].min)}, max ${valueText(m.unit, stats[j].max)}`),
        hoverinfo: "text",
      }], {hovermode: "closest", xaxis: {type: "category", tickvals: rows.map((r) => r.config),
        ticktext: rows.map((r) => (r.config === report.baseline ? `${r.config} (baseline)` : r.config))},
        yaxis: {title: {text: `${m.label}${axisUnit[m.unit] || ""}`}, zeroline: true}});
    });
  }

  function drawDifferences(m) {
    const k = scale(m.unit);
    const comparisons = report.comparisons.filter((c) => c.difference[m.key]);
    if (!comparisons.length) {
      K.fill("chart-differences", el("p", {class: "note",
        text: `No configuration to compare with the baseline ${report.baseline}: the sweep has one configuration, or none of the baseline's cells is complete.`}));
      return;
    }
    const label = (c) => `${where(c)} − ${report.baseline}`;
    const verdicts = [...new Set(comparisons.map((c) => c.difference[m.key].verdict))];
    const series = verdicts.map((verdict) => {
      const chosen = comparisons.filter((c) => c.difference[m.key].verdict === verdict);
      const stats = chosen.map((c) => c.difference[m.key]);
      return {type: "bar", name: verdict, x: chosen.map(label), y: stats.map((s) => (s.mean === null ? null : s.mean * k)),
        error_y: errors(stats, k), marker: {color: verdictColors[verdict] || "#1f618d"},
        hovertext: chosen.map((c, j) => `${label(c)}: ${deltaText(m.unit, stats[j])}, ${verdict}<br>${stats[j].n} pairs of seeds`),
        hoverinfo: "text"};
    });
    K.plot("chart-differences", series, {
      barmode: "overlay", hovermode: "closest",
      xaxis: {type: "category", categoryorder: "array", categoryarray: comparisons.map(label)},
      yaxis: {title: {text: `difference in ${m.label}${deltaUnit[m.unit] || ""}`}, zeroline: false},
      shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, yref: "y", y0: 0, y1: 0, line: {color: "#5d6d7e", width: 1.5, dash: "dash"}}],
    });
  }

  function draw(key) {
    const m = report.metrics.find((x) => x.key === key);
    document.querySelectorAll(".metric-label").forEach((node) => { node.textContent = m ? m.label : "–"; });
    if (m) {
      drawMeans(m);
      drawDifferences(m);
    } else {
      K.fill("charts-means", el("p", {class: "note", text: "No cell is complete yet."}));
      K.fill("chart-differences", el("p", {class: "note", text: "No cell is complete yet."}));
    }
    for (const row of document.querySelectorAll("#values-table tbody tr, #comparisons-table tbody tr")) {
      row.classList.toggle("chosen", row.dataset.metric === key);
    }
    document.getElementById("result").dataset.drawn = key || "";
  }

  function tables() {
    const units = Object.fromEntries(report.metrics.map((m) => [m.key, m.unit]));
    const marked = (table) => {
      table.querySelectorAll("tbody tr").forEach((tr, i) => { tr.dataset.metric = report.metrics[i].key; });
      return table;
    };
    K.fill("values", report.rows.length ? marked(K.table([
      {label: "Metric", value: (m) => m.label},
      ...report.rows.map((r) => ({label: `${where(r)} (n=${r.n})`, class: "num",
        value: (m) => meanText(units[m.key], r.values[m.key])})),
    ], report.metrics, {id: "values-table"})) : el("p", {class: "note", text: "No cell is complete yet."}));
    const verdictClass = (v) => (v === "better" ? "num better" : v === "worse" ? "num worse" : "num");
    K.fill("comparisons", report.comparisons.length ? marked(K.table([
      {label: "Metric", value: (m) => m.label},
      ...report.comparisons.map((c) => ({label: `${where(c)} − ${c.baseline} (${c.pairs} pair${c.pairs === 1 ? "" : "s"})`,
        class: (m) => verdictClass((c.difference[m.key] || {}).verdict), headClass: "num",
        value: (m) => (c.difference[m.key] ? `${deltaText(units[m.key], c.difference[m.key])} ${c.difference[m.key].verdict}` : "–")})),
    ], report.metrics, {id: "comparisons-table"})) : el("p", {class: "note", text: "Nothing to compare with the baseline."}));

    const reference = report.reference;
    document.getElementById("reference-section").hidden = !reference;
    if (reference) {
      K.fill("reference-title", `${reference.label}: kaudit beside the published values` +
        (reference.source ? ` (${reference.source})` : ""));
      K.fill("reference", reference.rows.length ? K.table([
        {label: "Configuration", value: (r) => where(r)},
        {label: "kaudit (mean ± 95 %)", value: (r) => meanText(reference.unit, r), class: "num"},
        {label: "sd", value: (r) => r.sdText, class: "num"},
        {label: "published", value: (r) => r.referenceText, class: "num"},
        {label: "kaudit − published", value: (r) => r.offsetText, class: "num"},
      ], reference.rows, {id: "reference-table"}) : el("p", {class: "note", text: "No complete configuration has a published value."}));
    }

    K.fill("failures", report.failures.length ? K.table([
      {label: "Configuration", value: (f) => f.config},
      {label: "Trace", value: (f) => f.trace},
      {label: "Seed", value: (f) => f.seed, class: "num"},
      {label: "Error", value: (f) => f.error || "–", class: "message failed"},
    ], report.failures, {id: "failures-table"}) : el("p", {class: "note", text: "No cell failed."}));

    const bySlot = new Map(report.runs.filter((r) => r.config === report.baseline && r.run)
      .map((r) => [`${r.trace}\u0000${r.seed}`, r.run]));
    K.fill("runs", K.table([
      {label: "Configuration", value: (r) => r.config},
      {label: "Trace", value: (r) => r.trace},
      {label: "Seed", value: (r) => r.seed, class: "num"},
      {label: "Status", value: (r) => r.status, class: (r) => (r.status === "failed" ? "failed" : null)},
      {label: "Run", value: (r) => (r.run ? el("a", {href: K.runUrl(r.run), text: r.run}) : "–")},
      {label: "Replay", value: (r) => K.secs(r.seconds), class: "num"},
      {label: "", value: (r) => {
        const base = bySlot.get(`${r.trace}\u0000${r.seed}`);
        return r.run && base && r.config !== report.baseline
          ? el("a", {href: `/diff${K.query({a: base, b: r.run})}`, text: `diff against ${report.baseline}`}) : "";
      }},
    ], report.runs, {id: "runs-table"}));
  }

  function remember() {
    const search = K.query({metric: metricSelect.value, baseline: baselineSelect.value});
    window.history.replaceState(null, "", `${window.location.pathname}${search}`);
  }

  async function load(chosenBaseline, wanted) {
    report = await K.api(`/api/v1/sweeps/${K.enc(sweep)}${K.query({baseline: chosenBaseline})}`);
    document.getElementById("result").hidden = false;
    const key = chosenMetric(wanted);
    K.fill(metricSelect, report.metrics.map((m) => el("option", {value: m.key, selected: m.key === key, text: m.label})));
    metricSelect.disabled = !report.metrics.length;
    baselineSelect.value = report.baseline;
    K.fill("about", `Baseline ${report.baseline}; traces ${report.traces.join(", ")}; seeds ${report.seeds.join(", ")}.`);
    tables();
    draw(key);
  }

  metricSelect.addEventListener("change", () => {
    draw(metricSelect.value);
    remember();
  });
  baselineSelect.addEventListener("change", () => {
    load(baselineSelect.value, metricSelect.value).then(remember).catch((err) => K.showError(err.message));
  });
  await load(baseline, metric);
});
