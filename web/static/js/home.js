// Home: traces and runs with their summaries.
"use strict";

K.start(async () => {
  const [{traces}, {runs}] = await Promise.all([K.api("/api/v1/traces"), K.api("/api/v1/runs")]);
  const {el} = K;
  // A file the user named (a configuration, a trace's source) by its name; the full path,
  // which kaudit stores absolute, in its title.
  const file = (path) => el("span", {class: "path", title: path, text: path.split(/[\\/]/).filter(Boolean).pop() || path});
  // A name may break only after a separator (- . _ / = : ,), never inside a word: big500 stays whole.
  const breakable = (name) => String(name).split(/(?<=[-._/=:,])/).flatMap((part, i) => (i ? [el("wbr"), part] : [part]));
  const files = (paths) => el("span", {}, paths.flatMap((path, i) => (i ? [", ", file(path)] : [file(path)])));
  // An RFC 3339 time as date and time to the second; the exact text in its title.
  const when = (time) => (time ? el("time", {datetime: time, title: time,
    text: time.replace("T", " ").replace(/(:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/, "$1$3").replace(/\+00:00$|Z$/, " UTC")}) : "–");
  if (!runs.length) {
    K.fill("runs", el("p", {class: "note", text: "No runs yet: `kaudit replay TRACE` makes one (`kaudit demo` makes two)."}));
  } else {
    K.fill("runs", el("div", {class: "scroll"}, K.table([
      {label: "Run", class: "name", value: (r) => el("span", {}, el("a", {href: K.runUrl(r.name)}, breakable(r.name)), el("br"),
        el("span", {class: "links"}, el("a", {href: `${K.runUrl(r.name)}/history`, text: "history"}), " · ",
          el("a", {href: `${K.runUrl(r.name)}/events`, text: "events"}),
          // An audit run (kaudit audit) links its verdicts.
          (r.summary || {}).audit ? [" · ", el("a", {class: "audit", href: `${K.runUrl(r.name)}/audit`, text: "audit"})] : null))},
      {label: "Trace", class: "name", value: (r) => el("span", {}, breakable(r.trace))},
      {label: "Status", value: (r) => r.status},
      // The configuration, and under it the Kubernetes release whose kube-scheduler ran it.
      {label: "Config", value: (r) => el("span", {}, r.config ? file(r.config) : "(defaults)", el("br"),
        el("span", {class: "release", text: `Kubernetes ${r.kubernetesVersion || "unknown"}`}))},
      {label: "Seed", value: (r) => r.seed, class: "num"},
      {label: "Scheduled", value: (r) => K.num((r.summary || {}).podsScheduled), class: "num"},
      {label: "Pending at end", value: (r) => K.num(K.pendingAtEnd(r.summary)), class: "num"},
      {label: "Never scheduled", value: (r) => K.num((r.summary || {}).podsNeverScheduled), class: "num"},
      {label: "Preempted", value: (r) => K.num((r.summary || {}).podsPreempted), class: "num"},
      {label: "Attempts", value: (r) => K.num((r.summary || {}).attempts), class: "num"},
      {label: "CPU mean", value: (r) => K.pct((((r.summary || {}).allocation || {}).cpu || {}).mean), class: "num"},
    ], runs, {id: "runs-table"})));
    const names = runs.map((r) => r.name);
    // Long run names (a sweep's cells) are cut on the axis, whole in the hover text.
    const short = names.map((n) => (n.length > 24 ? `${n.slice(0, 23)}…` : n));
    const s = (key) => runs.map((r) => (r.summary || {})[key] || 0);
    const bar = (name, y) => ({type: "bar", name, x: names, y, hovertemplate: `%{x}<br>${name}: %{y}<extra></extra>`});
    K.plot("runs-chart", [
      bar("scheduled", s("podsScheduled")),
      bar("pending at end", runs.map((r) => K.pendingAtEnd(r.summary) || 0)),
      bar("preempted", s("podsPreempted")),
    ], {barmode: "group", hovermode: "closest",
      xaxis: {type: "category", automargin: true, tickvals: names, ticktext: short}});
  }
  K.fill("traces", traces.length ? el("div", {class: "scroll"}, K.table([
    {label: "Trace", class: "name", value: (t) => el("span", {}, breakable(t.name))},
    // The files, and under them the Kubernetes release they say they were recorded from.
    {label: "Sources", value: (t) => el("span", {}, files((t.sources || []).map((source) => source.path)),
      t.kubernetesVersion ? [el("br"), el("span", {class: "release", text: `recorded from Kubernetes ${t.kubernetesVersion}`})] : null)},
    {label: "Events", value: (t) => K.num(t.events), class: "num"},
    {label: "Kinds", value: (t) => Object.entries(t.kinds).map(([k, n]) => `${k} ${n}`).join(", ")},
    {label: "Start", value: (t) => when(t.start), class: "time"},
    {label: "Span", value: (t) => t.spanText, class: "num"},
    {label: "Rejected lines", value: (t) => t.rejected, class: "num"},
    {label: "Ingested", value: (t) => when(t.ingestedAt), class: "time"},
  ], traces, {id: "traces-table"})) : el("p", {class: "note", text: "No traces yet: `kaudit ingest FILE` stores one."}));
});
