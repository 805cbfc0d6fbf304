// Event log: filters and server-side pagination.
"use strict";

K.start(async ({run}) => {
  const form = document.getElementById("filter");
  const params = new URLSearchParams(location.search);
  for (const [key, value] of params) if (form.elements[key]) form.elements[key].value = value;

  async function load(offset) {
    const data = new FormData(form);
    const filters = Object.fromEntries([...data.entries()].filter(([, v]) => v !== ""));
    const result = await K.api(`${K.apiRun(run)}/events${K.query({...filters, offset, limit: 100})}`);
    K.fill("count", `${K.num(result.total)} records match`);
    K.fill("events", K.table([
      {label: "Seq", value: (e) => e.seq, class: "num"},
      {label: "t (s)", value: (e) => K.num(e.t, 3), class: "num"},
      {label: "Time", value: (e) => e.time},
      {label: "Kind", value: (e) => e.kind},
      {label: "Pod", value: (e) => K.podLink(run, e.pod)},
      {label: "Node", value: (e) => (e.node ? K.nodeLink(run, e.node, e.t) : "")},
      {label: "Detail", value: (e) => e.text, class: "message"},
    ], result.items, {id: "events-table"}));
    K.pager("pager", result, (next) => load(next).catch((err) => K.showError(err.message)));
    const url = new URL(location.href);
    url.search = K.query({...filters, offset: offset || ""});
    history.replaceState(null, "", url);
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    document.getElementById("error").hidden = true;
    load(0).catch((err) => K.showError(err.message));
  });
  await load(Number(params.get("offset")) || 0);
});
