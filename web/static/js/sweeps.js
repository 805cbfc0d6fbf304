// Sweeps: every sweep with its cells' states, linking to its report.
"use strict";

K.start(async () => {
  const {sweeps} = await K.api("/api/v1/sweeps");
  const {el} = K;
  const count = (list) => `${list.length}: ${list.join(", ")}`;
  K.fill("sweeps", sweeps.length ? K.table([
    {label: "Sweep", value: (s) => el("a", {href: `/sweeps/${K.enc(s.name)}`, text: s.name})},
    {label: "Description", value: (s) => s.description},
    {label: "Configurations", value: (s) => count(s.configs)},
    {label: "Baseline", value: (s) => s.baseline || s.configs[0] || "–"},
    {label: "Traces", value: (s) => count(s.traces)},
    {label: "Seeds", value: (s) => count(s.seeds)},
    {label: "Cells", value: (s) => K.num(s.cells), class: "num"},
    {label: "Complete", value: (s) => K.num(s.complete), class: "num"},
    {label: "Failed", value: (s) => K.num(s.failed), class: (s) => (s.failed ? "num failed" : "num"), headClass: "num"},
    {label: "Running", value: (s) => K.num(s.running), class: "num"},
    {label: "Abandoned", value: (s) => K.num(s.abandoned), class: "num"},
    {label: "Pending", value: (s) => K.num(s.pending), class: "num"},
    // Stored in UTC (SQLite keeps no offset): to the second.
    {label: "Updated (UTC)", value: (s) => s.updatedAt.slice(0, 19).replace("T", " ")},
  ], sweeps, {id: "sweeps-table"}) : el("p", {class: "note", text: "No sweeps yet: `kaudit sweep SPEC.yaml` runs one."}));
});
