// Audit: the decisions by class as bars, and the decisions that do not agree over time (a
// click on a point opens the pod's page). The tables are rendered by the server from the same
// report.
"use strict";

K.start(async ({run}) => {
  const report = await K.api(`${K.apiRun(run)}/audit`);
  const agreeing = new Set(["agrees", "tie", "unschedulableSame", "preemptionSame"]);
  const disagreeing = new Set(["scoredLower", "infeasible", "unschedulableDifferent", "preemptionDifferent"]);
  // Pod names and reasons come from the trace: Plotly's hover text reads a few HTML tags.
  const text = (value) => String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const color = (name) => (agreeing.has(name) ? "#27ae60" : disagreeing.has(name) ? "#c0392b" : "#7f8c8d");
  const present = Object.keys(report.classes).filter((name) => report.classes[name] > 0);
  K.plot("chart-classes", [{type: "bar", orientation: "h", name: "decisions",
    y: present.slice().reverse(), x: present.map((name) => report.classes[name]).reverse(),
    marker: {color: present.map(color).reverse()},
    hovertemplate: "%{y}: %{x} decisions<extra></extra>"}],
  {hovermode: "closest", showlegend: false, xaxis: {title: {text: "decisions"}}, yaxis: {automargin: true},
    margin: {l: 10, r: 15, t: 10, b: 45}});

  // Every decision that does not agree: the disagreements (sampled included) and the ones not
  // judged, one trace per class.
  const others = [...report.disagreements, ...(report.sampled || []), ...report.notJudged];
  const classes = [...new Set(others.map((d) => d.class))];
  const chart = document.getElementById("chart-timeline");
  if (!others.length) {
    K.fill(chart, K.el("p", {class: "note", text: "Every decision agrees or ties: nothing to draw."}));
    return;
  }
  // Beyond a few thousand points SVG markers get slow; WebGL draws them.
  const type = others.length > 5000 ? "scattergl" : "scatter";
  await K.plot("chart-timeline", classes.map((name) => {
    const points = others.filter((d) => d.class === name);
    return {type, mode: "markers", name, x: points.map((d) => d.t), y: points.map(() => name),
      customdata: points.map((d) => d.pod), marker: {color: color(name), size: 9, opacity: 0.8},
      hovertext: points.map((d) => `${text(d.pod)} at ${K.num(d.t, 3)} s<br>${text(d.reason)}`), hoverinfo: "text"};
  }), {hovermode: "closest", xaxis: {title: {text: "seconds since the run started"}},
    yaxis: {type: "category", automargin: true}, margin: {l: 10, r: 15, t: 30, b: 45}});
  chart.on("plotly_click", (event) => {
    const pod = event.points && event.points[0] && event.points[0].customdata;
    if (pod) window.location.href = K.podUrl(run, pod);
  });
});
