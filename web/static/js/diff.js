// Diff: summary deltas, overlaid timelines and the changed pods of two runs.
"use strict";

K.start(async ({a, b}) => {
  const {el} = K;
  if (!a || !b) return;
  const kind = document.getElementById("change-kind");
  async function load(offset) {
    const report = await K.api(`/api/v1/diff${K.query({a, b, offset, limit: 100, change: kind.value})}`);
    document.getElementById("result").hidden = false;
    const c = report.counts;
    K.fill("headline", `${report.a} → ${report.b}: ${K.num(report.compared)} pods compared; ${c.same} unchanged, ${c.unscheduledInBoth} scheduled in neither, ` +
      `${c.moved} moved, ${c.tieFlips} tie flips, ${c.tieConsequences} consequences of tie flips, ` +
      `${c.scheduledOnlyInA} scheduled only in A, ${c.scheduledOnlyInB} only in B, ` +
      `${c.preemptedOnlyInA} preempted only in A, ${c.preemptedOnlyInB} only in B, ` +
      `${c.pendingTimeChanged} pending longer or shorter, ${c.samplingArtifacts} sampling artifacts.` +
      (report.sameConfiguration ? " Both runs used the same configuration: every difference comes from tie-breaks." : ""));
    K.fill("aggregates", K.table([
      {label: "", value: (r) => r.label},
      {label: report.a, value: (r) => r.aText, class: "num"},
      {label: report.b, value: (r) => r.bText, class: "num"},
      {label: "Change", value: (r) => r.deltaText, class: "num"},
    ], report.rows, {id: "aggregates-table"}));
    K.fill("causes", report.causes.length ? K.table([
      {label: "Pods", value: (g) => g.count, class: "num"},
      {label: "Cause", value: (g) => g.cause},
      {label: "For example", value: (g) => g.pods.slice(0, 3).join(", ") + (g.count > 3 ? ` and ${g.count - 3} more` : "")},
    ], report.causes, {id: "causes-table"}) : el("p", {class: "note", text: "No pod changed."}));
    const lines = [];
    const alloclines = [];
    const nodelines = [];
    const dash = {a: "solid", b: "dot"};
    for (const [side, name] of [["a", report.a], ["b", report.b]]) {
      const series = report.timelines[side];
      if (!series) continue;
      const step = (label, x, y, color) => ({type: "scatter", mode: "lines", line: {shape: "hv", dash: dash[side], color}, name: label, x, y});
      lines.push(step(name, series.t, series.pending));
      alloclines.push(step(`${name}: cpu`, series.t, series.allocation.cpu || [], "#2e86c1"));
      alloclines.push(step(`${name}: memory`, series.t, series.allocation.memory || [], "#8e44ad"));
      nodelines.push(step(name, series.nodesInUse.t, series.nodesInUse.nodes));
    }
    const time = {title: {text: "seconds since the run started"}};
    K.plot("chart-pending", lines, {xaxis: time, yaxis: {title: {text: "pending pods"}}, showlegend: true});
    K.plot("chart-allocation", alloclines, {xaxis: time, yaxis: {title: {text: "requested ÷ allocatable"}, tickformat: ".0%", rangemode: "tozero"}, showlegend: true});
    K.plot("chart-nodes", nodelines, {xaxis: time, yaxis: {title: {text: "nodes holding kaudit's pods"}, rangemode: "tozero"}, showlegend: true});
    const changes = report.changes;
    K.fill("changes", changes.total ? K.table([
      {label: "Pod", value: (ch) => (ch.pod.includes(" ≈ ") ? ch.pod :
        el("a", {href: `/diff/pods/${K.podPath(ch.pod)}${K.query({a, b})}`, text: ch.pod}))},
      {label: "Change", value: (ch) => ch.change},
      {label: `Node in ${report.a}`, value: (ch) => ch.a.node || "–"},
      {label: `Node in ${report.b}`, value: (ch) => ch.b.node || "–"},
      {label: "Pending (s)", value: (ch) => `${K.num(ch.a.pendingSeconds, 3)} → ${K.num(ch.b.pendingSeconds, 3)}`, class: "num"},
      {label: "Why", value: (ch) => ch.reason, class: "message"},
    ], changes.items, {id: "changes-table"}) : el("p", {class: "note", text: "No pods of this kind."}));
    K.pager("changes-pager", changes, (next) => load(next).catch((err) => K.showError(err.message)));
  }
  kind.addEventListener("change", () => load(0).catch((err) => K.showError(err.message)));
  await load(0);
});
