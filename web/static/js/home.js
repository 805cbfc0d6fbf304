// Home: traces and runs with their summaries.
"use strict";

K.start(async () => {
  const [{traces}, {runs}] = await Promise.all([K.api("/api/v1/traces"), K.api("/api/v1/runs")]);
  const {el} = K;
  if (!runs.length) {
    K.fill("runs", el("p", {class: "note", text: "No runs yet: `kaudit replay TRACE` makes one (`kaudit demo` makes two)."}));
  } else {
    K.fill("runs", K.table([
      {label: "Run", value: (r) => el("a", {href: K.runUrl(r.name), text: r.name})},
      {label: "Trace", value: (r) => r.trace},
      {label: "Status", value: (r) => r.status},
      {label: "Config", value: (r) => r.config || "(defaults)"},
      {label: "Seed", value: (r) => r.seed, class: "num"},
      {label: "Scheduled", value: (r) => K.num((r.summary || {}).podsScheduled), class: "num"},
      {label: "Pending at end", value: (r) => K.num(K.pendingAtEnd(r.summary)), class: "num"},
      {label: "Never scheduled", value: (r) => K.num((r.summary || {}).podsNeverScheduled), class: "num"},
      {label: "Preempted", value: (r) => K.num((r.summary || {}).podsPreempted), class: "num"},
      {label: "Attempts", value: (r) => K.num((r.summary || {}).attempts), class: "num"},
      {label: "CPU mean", value: (r) => K.pct((((r.summary || {}).allocation || {}).cpu || {}).mean), class: "num"},
      {label: "", value: (r) => el("span", {}, el("a", {href: `${K.runUrl(r.name)}/history`, text: "history"}), " · ",
        el("a", {href: `${K.runUrl(r.name)}/events`, text: "events"}))},
    ], runs, {id: "runs-table"}));
    const names = runs.map((r) => r.name);
    const s = (key) => runs.map((r) => (r.summary || {})[key] || 0);
    K.plot("runs-chart", [
      {type: "bar", name: "scheduled", x: names, y: s("podsScheduled")},
      {type: "bar", name: "pending at end", x: names, y: runs.map((r) => K.pendingAtEnd(r.summary) || 0)},
      {type: "bar", name: "preempted", x: names, y: s("podsPreempted")},
    ], {barmode: "group", hovermode: "closest", xaxis: {type: "category"}});
  }
  K.fill("traces", traces.length ? K.table([
    {label: "Trace", value: (t) => t.name},
    {label: "Events", value: (t) => K.num(t.events), class: "num"},
    {label: "Kinds", value: (t) => Object.entries(t.kinds).map(([k, n]) => `${k} ${n}`).join(", ")},
    {label: "Start", value: (t) => t.start},
    {label: "Span", value: (t) => K.secs(t.spanSeconds), class: "num"},
    {label: "Rejected lines", value: (t) => t.rejected, class: "num"},
    {label: "Ingested", value: (t) => t.ingestedAt},
  ], traces, {id: "traces-table"}) : el("p", {class: "note", text: "No traces yet: `kaudit ingest FILE` stores one."}));
});
