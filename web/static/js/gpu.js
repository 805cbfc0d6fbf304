// GPU sharing: the FGD paper's curves for the chosen runs, one line per run.
"use strict";

K.start(async ({runs}) => {
  if (!runs) return;
  const report = await K.api(`/api/v1/gpu-sharing${K.query({run: runs})}`);
  document.getElementById("result").hidden = false;
  const label = (r) => (r.policy ? `${r.run} (${r.policy})` : r.run);
  const line = (r, key) => ({type: "scatter", mode: "lines", connectgaps: true, name: label(r), x: r.curves.arrived, y: r.curves[key]});
  const arrived = {title: {text: "arrived workload (% of GPUs)"}, range: [0, 130]};
  const ideal = {type: "scatter", mode: "lines", name: "ideal", line: {dash: "dash", color: "#888"},
    x: [0, 100], y: [100, 0]};
  K.plot("chart-unallocated", [...report.runs.map((r) => line(r, "unallocated")), ideal],
    {xaxis: arrived, yaxis: {title: {text: "unallocated GPU (%)"}, rangemode: "tozero"}});
  K.plot("chart-frag", report.runs.map((r) => line(r, "fragAmount")),
    {xaxis: arrived, yaxis: {title: {text: "fragmented GPU (% of all GPUs)"}, rangemode: "tozero"}});
  K.plot("chart-rate", report.runs.map((r) => line(r, "fragRate")),
    {xaxis: arrived, yaxis: {title: {text: "fragmented ÷ idle GPU (%)"}, rangemode: "tozero"}});
  K.plot("chart-bars", [{type: "bar", name: "unallocated at 100 % arrived",
    x: report.runs.map(label), y: report.runs.map((r) => r.at["100"].unallocated),
    text: report.runs.map((r) => K.num(r.at["100"].unallocated, 2)), textposition: "outside"}],
    {yaxis: {title: {text: "unallocated GPU (%)"}, rangemode: "tozero"}, hovermode: "closest"});
  const percents = ["50", "80", "90", "100", "110", "120", "130"];
  K.fill("values", K.table([
    {label: "Run", value: (r) => K.el("a", {href: `/runs/${encodeURIComponent(r.run)}`, text: r.run})},
    {label: "Policy", value: (r) => r.policy},
    ...percents.map((p) => ({label: `unallocated @${p}%`, value: (r) => K.num(r.at[p].unallocated, 2), class: "num"})),
    {label: "frag @100%", value: (r) => K.num(r.at["100"].fragAmount, 2), class: "num"},
    {label: "frag rate @100%", value: (r) => K.num(r.at["100"].fragRate, 2), class: "num"},
  ], report.runs, {id: "values-table"}));
});
