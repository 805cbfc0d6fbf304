// Run: timelines over virtual time and the attempts table.
"use strict";

K.start(async ({run}) => {
  const {el} = K;
  const base = K.apiRun(run);
  const [info, timeline] = await Promise.all([K.api(base), K.api(`${base}/timeline`)]);
  const s = info.run.summary || {};
  K.fill("summary",
    K.card("pods scheduled", K.num(s.podsScheduled)),
    K.card("pending at end", K.num(K.pendingAtEnd(s))),
    K.card("never scheduled", K.num(s.podsNeverScheduled)),
    K.card("preempted", K.num(s.podsPreempted)),
    K.card("attempts", K.num(s.attempts)),
    K.card("virtual time", info.spanText),
    K.card("replayed in", info.wallText),
    K.card("CPU allocated (mean)", K.pct(((s.allocation || {}).cpu || {}).mean)));
  document.getElementById("no-timeline").hidden = timeline.timeline;
  const series = timeline.series;
  const step = (name, y) => ({type: "scatter", mode: "lines", line: {shape: "hv"}, name, x: series.t, y});
  const time = {title: {text: "seconds since the run started"}};
  K.plot("chart-pending", [
    step("active", series.active), step("backoff", series.backoff),
    step("unschedulable", series.unschedulable), step("gated", series.gated),
  ], {xaxis: time, yaxis: {title: {text: "pods"}}});
  const h = timeline.histograms;
  K.plot("chart-attempts", [
    {type: "bar", name: "scheduled", x: h.t, y: h.scheduled},
    {type: "bar", name: "failed", x: h.t, y: h.failed},
  ], {barmode: "stack", xaxis: time, yaxis: {title: {text: `attempts per ${h.bucketSeconds} s`}}});
  K.plot("chart-allocation", Object.entries(series.allocation).map(([resource, values]) => step(resource, values)),
    {xaxis: time, yaxis: {title: {text: "requested ÷ allocatable"}, tickformat: ".0%", rangemode: "tozero"}});
  K.plot("chart-preemptions", [{type: "bar", name: "preemptions", x: h.t, y: h.preemptions, marker: {color: "#c0392b"}}],
    {xaxis: time, yaxis: {title: {text: `victims per ${h.bucketSeconds} s`}}});

  const form = document.getElementById("attempt-filter");
  async function load(offset) {
    const data = new FormData(form);
    const result = await K.api(`${base}/events${K.query({kind: "attempt", offset, limit: 50,
      pod: data.get("pod"), node: data.get("node"), plugin: data.get("plugin")})}`);
    K.fill("attempts", K.table([
      {label: "t (s)", value: (e) => K.num(e.t, 3), class: "num"},
      {label: "Pod", value: (e) => K.podLink(run, e.pod)},
      {label: "Result", value: (e) => e.data.result, class: (e) => e.data.result},
      {label: "Node", value: (e) => K.nodeLink(run, e.node, e.t)},
      {label: "Evaluated", value: (e) => e.data.evaluatedNodes, class: "num"},
      {label: "Feasible", value: (e) => e.data.feasibleNodes, class: "num"},
      {label: "Message", value: (e) => (e.node ? "" : e.data.message), class: "message"},
    ], result.items, {id: "attempts-table"}));
    K.pager("attempts-pager", result, load);
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    load(0).catch((err) => K.showError(err.message));
  });
  await load(0);
});
