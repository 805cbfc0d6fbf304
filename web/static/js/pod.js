// Pod: lifecycle, attempts, and one attempt in full (filter matrix, scores, decision).
"use strict";

K.start(async ({run, pod}) => {
  const {el} = K;
  const base = `${K.apiRun(run)}/pods/${K.podPath(pod)}`;
  const story = await K.api(base);
  const verdict = story.verdict;
  // Every sentence comes from the API (kaudit.queries.verdict_text), as kaudit explain prints it;
  // the verdict block, the pod's inputs, the cards and the other events are rendered by the
  // server.
  const causeRows = (causes) => K.table([
    {label: "Nodes", value: (c) => c.count, class: "num"},
    {label: "Cause", value: (c) => c.cause},
    {label: "Detail", value: (c) => c.detail},
    {label: "For example", value: (c) => c.examples},
  ], causes, {class: "data causes"});
  const colors = {active: "#2e86c1", backoff: "#f39c12", unschedulable: "#c0392b", gated: "#7f8c8d",
    "in-flight": "#8e44ad", bound: "#27ae60"};
  const states = [...new Set(story.lifecycle.map((s) => s.state))];
  K.plot("chart-lifecycle", states.map((state) => {
    const spans = story.lifecycle.filter((s) => s.state === state);
    return {type: "bar", orientation: "h", name: state, y: spans.map(() => state),
      base: spans.map((s) => s.start), x: spans.map((s) => (s.end ?? story.span.seconds) - s.start),
      marker: {color: colors[state] || "#555"},
      hovertext: spans.map((s) => `${state}${s.node ? ` on ${s.node}` : ""}: ${K.num(s.start, 3)}–${s.end === null ? "end" : K.num(s.end, 3)} s`),
      hoverinfo: "text"};
  }), {hovermode: "closest", barmode: "overlay", showlegend: false,
    xaxis: {title: {text: "seconds since the run started"}}, margin: {l: 100, r: 15, t: 10, b: 45}});

  // A pod kaudit never tried has no attempt sections (the page says why instead).
  if (!story.attempts.length) return;
  // Attempts are numbered from 1, as the records and kaudit explain number them.
  let chosen = verdict.decisiveAttempt ?? story.attempts.length;
  function drawAttempts() {
    K.fill("attempts", K.table([
      {label: "#", value: (a) => el("a", {href: "#attempt", text: a.attempt === verdict.decisiveAttempt ? `${a.attempt} (decisive)` : a.attempt, onclick: () => select(a.attempt)}), class: "num"},
      {label: "t (s)", value: (a) => K.num(a.t, 3), class: "num"},
      {label: "Cycle", value: (a) => a.cycle, class: "num"},
      {label: "Result", value: (a) => a.result, class: (a) => a.result},
      {label: "Node", value: (a) => a.selectedNode || a.nominatedNode && `nominated ${a.nominatedNode}`},
      {label: "Evaluated", value: (a) => a.evaluatedNodes, class: "num"},
      {label: "Feasible", value: (a) => a.feasibleNodes, class: "num"},
      {label: "Message", value: (a) => a.message, class: "message"},
    ], story.attempts, {id: "attempts-table"}));
    document.querySelectorAll("#attempts-table tbody tr").forEach((tr, i) => tr.classList.toggle("chosen", i + 1 === chosen));
  }

  let filterOffset = 0;
  let detail = null;
  function drawFilters() {
    const matrix = detail.filter;
    const rows = matrix.nodes.map((node, i) => ({node, verdicts: matrix.verdicts[i], reasons: matrix.reasons[i], cause: matrix.cause[i]}));
    rows.sort((a, b) => (a.cause < 0 ? 1e9 : a.cause) - (b.cause < 0 ? 1e9 : b.cause));
    const page = rows.slice(filterOffset, filterOffset + 50);
    K.fill("filters", K.table([
      {label: "Node", value: (r) => r.node, class: "node"},
      {label: "Cause", value: (r) => (r.cause < 0 ? "fits" : detail.causes[r.cause].cause)},
      ...matrix.plugins.map((plugin, p) => ({label: plugin, class: (r) => `verdict v${r.verdicts[p]}`, value: (r) => {
        const code = r.verdicts[p];
        if (code < 0) return "";
        if (code === 0) return "✓";
        return (r.reasons[String(p)] || [matrix.codes[code]]).join("; ");
      }})),
    ], page, {id: "filter-table"}));
    K.pager("filters-pager", {total: rows.length, offset: filterOffset, limit: 50}, (offset) => { filterOffset = offset; drawFilters(); });
  }

  // DynamicResources' notes: the pod's claims, the devices it got or each request's supply.
  function deviceNotes(notes, lines) {
    const parts = [el("h3", {text: "Devices (dynamic resource allocation)"}),
      ...lines.map((line) => el("p", {class: "note device-line", text: line}))];
    if (notes.devices && notes.devices.length) {
      parts.push(K.table([
        {label: "Claim", value: (d) => d.claim}, {label: "Request", value: (d) => d.request},
        {label: "Driver", value: (d) => d.driver}, {label: "Pool", value: (d) => d.pool},
        {label: "Device", value: (d) => d.device},
      ], notes.devices, {id: "devices-table"}));
    }
    if (notes.requests && notes.requests.length) {
      parts.push(K.table([
        {label: "Claim", value: (r) => r.claim}, {label: "Request", value: (r) => r.request},
        {label: "Class", value: (r) => r.deviceClass}, {label: "Wants", value: (r) => r.count, class: "num"},
        {label: "Matching devices", value: (r) => r.error || r.matching, class: "num"},
        {label: "Free", value: (r) => (r.error ? "" : r.free), class: "num"},
      ], notes.requests, {id: "device-supply-table"}));
    }
    return parts;
  }

  // An audit run: the audit's verdict on the recorded decision this attempt evaluated.
  document.querySelectorAll("a.audit-attempt").forEach((link) => link.addEventListener("click",
    () => select(Number(link.dataset.attempt)).catch((err) => K.showError(err.message))));
  let recordedNode = "";
  function showAudit(number) {
    recordedNode = "";
    document.querySelectorAll(".audit-verdict").forEach((p) => {
      p.hidden = Number(p.dataset.attempt) !== number;
      if (!p.hidden) recordedNode = p.dataset.recordedNode;
    });
    document.querySelectorAll("#audit-table tbody tr").forEach((tr) => tr.classList.toggle("chosen", Number(tr.dataset.attempt) === number));
  }

  async function select(number) {
    chosen = number;
    drawAttempts();
    showAudit(number);
    if (number < 1) return;
    detail = await K.api(`${base}/attempts/${number}`);
    K.fill("attempt-title", `${number} at ${detail.momentText}: ${detail.countsText}`);
    K.fill("attempt-message", detail.outcomeText);
    const devices = (detail.pluginNotes || {}).DynamicResources;
    K.fill("attempt-devices", ...(devices ? deviceNotes(devices, detail.deviceLines) : []));
    const decision = detail.decision;
    if (decision) {
      const plugins = detail.scores.plugins;
      const w = detail.scores.nodes.indexOf(decision.winner);
      const r = detail.scores.nodes.indexOf(decision.runnerUp);
      K.fill("decision", el("p", {class: "lead", text: decision.summary}), K.table([
        {label: "Plugin", value: (p) => p},
        {label: `${decision.winner} (winner)`, value: (p) => detail.scores.weighted[w][plugins.indexOf(p)], class: "num"},
        {label: `${decision.runnerUp} (runner-up)`, value: (p) => detail.scores.weighted[r][plugins.indexOf(p)], class: "num"},
        {label: "Difference", value: (p) => (decision.deltas[p] ? `${decision.deltas[p] > 0 ? "+" : ""}${decision.deltas[p]}` : "0"),
          class: (p) => `num ${(decision.deltas[p] || 0) > 0 ? "decided" : ""}`},
      ], [...plugins, "total"].filter((p) => p !== "total"), {id: "decision-table"}),
      el("p", {class: "note", text: decision.note}));
    } else if (detail.preemptionText) {
      K.fill("decision", el("p", {class: "lead", text: detail.preemptionText}));
    } else {
      K.fill("decision");
    }
    K.fill("attempt-causes", detail.causes.length ? causeRows(detail.causes)
      : el("p", {class: "note", text: detail.causesNote}));
    const scores = detail.scores;
    const top = Math.min(scores.nodes.length, 15);
    const scoreChart = document.getElementById("chart-scores");
    if (!scores.nodes.length) {
      if (scoreChart.data) Plotly.purge(scoreChart);
      K.fill(scoreChart, el("p", {class: "note", text: detail.scoresNote}));
    } else {
      scoreChart.querySelectorAll("p.note").forEach((note) => note.remove());
      K.plot("chart-scores", scores.plugins.map((plugin, p) => ({type: "bar", name: plugin,
      x: scores.nodes.slice(0, top), y: scores.weighted.slice(0, top).map((row) => row[p])})),
    {barmode: "stack", hovermode: "x unified", xaxis: {type: "category", tickangle: -30}, yaxis: {title: {text: "weighted score"}},
      margin: {l: 55, r: 15, t: 30, b: 90}});
    }
    const matrix = detail.filter;
    if (matrix.nodes.length > 100) {
      // Past a hundred nodes a node-by-plugin heatmap is unreadable: count nodes per cause.
      const causes = detail.causes;
      K.plot("chart-filters", [{type: "bar", orientation: "h", y: causes.map((c) => c.cause).reverse(),
        x: causes.map((c) => c.count).reverse(), marker: {color: "#c0392b"}, name: "rejected nodes",
        hovertext: causes.map((c) => c.detail).reverse()},
      {type: "bar", orientation: "h", y: ["fits"], x: [detail.feasible.length], marker: {color: "#27ae60"}, name: "feasible nodes"}],
      {hovermode: "closest", showlegend: true, xaxis: {title: {text: "nodes"}}, yaxis: {automargin: true}, margin: {l: 10, r: 15, t: 30, b: 45}});
    } else K.plot("chart-filters", [{type: "heatmap", x: matrix.nodes, y: matrix.plugins,
      z: matrix.plugins.map((_, p) => matrix.verdicts.map((v) => v[p])), zmin: -1, zmax: 3,
      text: matrix.plugins.map((_, p) => matrix.verdicts.map((v, n) => (v[p] < 0 ? "not run" : (matrix.reasons[n][String(p)] || [matrix.codes[v[p]]]).join("; ")))),
      hoverinfo: "x+y+text", showscale: false,
      colorscale: [[0, "#eeeeee"], [0.25, "#eeeeee"], [0.25, "#27ae60"], [0.5, "#27ae60"], [0.5, "#8e44ad"], [0.75, "#e67e22"], [1, "#c0392b"]]},
    // A heat map has no legend of its own: one empty trace per colour names the verdicts.
    ...[["passed", "#27ae60"], ["Unschedulable", "#e67e22"], ["UnschedulableAndUnresolvable", "#c0392b"],
      ["Error", "#8e44ad"], ["not run", "#cccccc"]].map(([name, color]) => ({type: "scatter", mode: "markers",
      x: [null], y: [null], name, hoverinfo: "skip", marker: {color, symbol: "square", size: 11}}))],
    {hovermode: "closest", showlegend: true, xaxis: {showticklabels: matrix.nodes.length <= 40, type: "category"}, margin: {l: 170, r: 15, t: 30, b: 60}});
    // The audited recorded node keeps its row beyond the top 20, marked.
    const shown = [...Array(Math.min(scores.nodes.length, 20)).keys()];
    const recordedAt = recordedNode ? scores.nodes.indexOf(recordedNode) : -1;
    if (recordedAt >= shown.length) shown.push(recordedAt);
    K.fill("scores", !scores.nodes.length ? el("p", {class: "note", text: detail.scoresNote}) : K.table([
      {label: "Node", value: (i) => (i === recordedAt ? `${scores.nodes[i]} (recorded)` : scores.nodes[i]), class: "node"},
      {label: "Total", value: (i) => scores.total[i], class: "num total"},
      ...scores.plugins.map((plugin, p) => ({label: `${plugin} ×${scores.weights[plugin]}`,
        value: (i) => `${scores.weighted[i][p]} (${scores.raw[i][p]})`, class: "num"})),
      {label: "Free cpu", value: (i) => scores.freeCpuText[i], class: "num"},
      {label: "Free memory", value: (i) => scores.freeMemoryText[i], class: "num"},
    ], shown, {id: "score-table"}));
    filterOffset = 0;
    drawFilters();
  }

  drawAttempts();
  await select(chosen);
});
