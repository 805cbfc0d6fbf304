// kaudit dashboard: helpers shared by every page.
// Every value that comes from a trace is put in the page with textContent (never innerHTML),
// so pod names, labels and annotations holding HTML are shown as text.
"use strict";

const K = (() => {
  const page = document.getElementById("page");

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function showError(message) {
    const box = document.getElementById("error");
    box.textContent = message;
    box.hidden = false;
    document.body.dataset.ready = "error";
  }

  async function api(url) {
    const response = await fetch(url, {headers: {Accept: "application/json"}});
    let body;
    try {
      body = await response.json();
    } catch (err) {
      throw new Error(`${url}: the server answered ${response.status} without JSON`);
    }
    if (!response.ok) throw new Error(body.error || `${url}: ${response.status}`);
    return body;
  }

  function query(params) {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(params)) {
      if (value !== null && value !== undefined && value !== "") search.set(key, value);
    }
    const text = search.toString();
    return text ? `?${text}` : "";
  }

  const enc = encodeURIComponent;
  const runUrl = (run) => `/runs/${enc(run)}`;
  const apiRun = (run) => `/api/v1/runs/${enc(run)}`;
  function podPath(pod) {
    const slash = pod.indexOf("/");
    return `${enc(pod.slice(0, slash))}/${enc(pod.slice(slash + 1))}`;
  }
  const podUrl = (run, pod) => `${runUrl(run)}/pods/${podPath(pod)}`;

  function podLink(run, pod) {
    if (!pod) return "";
    if (pod.includes(" ≈ ")) return pod;
    return el("a", {href: podUrl(run, pod), text: pod});
  }

  function nodeLink(run, node, t) {
    if (!node) return "";
    return el("a", {href: `${runUrl(run)}/history${query({t, node})}`, text: node});
  }

  // A table from column specs {label, value(row) -> string|Node, class}; a class may be a
  // function of the row, then headClass is the header's.
  function table(columns, rows, attrs) {
    const head = el("thead", {}, el("tr", {}, columns.map((c) => el("th", {
      class: typeof c.class === "function" ? c.headClass : c.class, text: c.label}))));
    const body = el("tbody", {}, rows.map((row) => el("tr", {}, columns.map((c) => {
      const value = c.value(row);
      const cls = typeof c.class === "function" ? c.class(row) : c.class;
      return el("td", {class: cls}, value === null || value === undefined ? "" : value);
    }))));
    return el("table", Object.assign({class: "data"}, attrs || {}), head, body);
  }

  function fill(id, ...children) {
    const box = typeof id === "string" ? document.getElementById(id) : id;
    box.replaceChildren(...children.flat().filter((child) => child !== null && child !== undefined));
    return box;
  }

  function pager(id, result, go) {
    const {total, offset, limit} = result;
    const pages = Math.max(1, Math.ceil(total / limit));
    const current = Math.floor(offset / limit) + 1;
    fill(id,
      el("button", {type: "button", disabled: offset === 0, onclick: () => go(Math.max(0, offset - limit))}, "‹ Previous"),
      el("span", {class: "pages", text: `page ${current} of ${pages} (${total} rows)`}),
      el("button", {type: "button", disabled: offset + limit >= total, onclick: () => go(offset + limit)}, "Next ›"));
  }

  function card(label, value, cls) {
    return el("div", {class: `card ${cls || ""}`}, el("div", {class: "value", text: value}), el("div", {class: "label", text: label}));
  }

  const num = (n, digits) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US", {maximumFractionDigits: digits === undefined ? 2 : digits}));
  const pct = (f) => (f === null || f === undefined ? "–" : `${(100 * f).toFixed(1)}%`);
  function bytes(n) {
    if (n === null || n === undefined) return "–";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    let v = n;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return `${v.toFixed(v < 10 && i ? 1 : 0)} ${units[i]}`;
  }
  const cpu = (milli) => (milli === null || milli === undefined ? "–" : `${num(milli / 1000, 3)} cores`);
  // One resource's amount in the unit people use for it (cores, GiB), as kaudit's CLI prints it.
  const amount = (resource, v) => (resource === "cpu" ? cpu(v)
    : resource === "memory" || resource === "ephemeral-storage" || resource.startsWith("hugepages-") ? bytes(v) : num(v));
  // Runs stored before "pending at end" was named hold it as podsUnschedulable.
  const pendingAtEnd = (summary) => ((summary || {}).podsPendingAtEnd ?? (summary || {}).podsUnschedulable);
  const secs = (s) => (s === null || s === undefined ? "–" : `${num(s, 3)} s`);

  const plotConfig = {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"]};
  const baseLayout = {
    margin: {l: 55, r: 15, t: 30, b: 45}, font: {family: "system-ui, sans-serif", size: 12},
    // A legend on every chart, even of one series: it says what the marks are.
    showlegend: true, legend: {orientation: "h", x: 0, y: 1.02, yanchor: "bottom"}, hovermode: "x unified", paper_bgcolor: "#fff", plot_bgcolor: "#fff",
  };
  function plot(id, traces, layout) {
    const div = document.getElementById(id);
    return Plotly.react(div, traces, Object.assign({}, baseLayout, layout || {}), plotConfig);
  }

  // Run a page's main function once the DOM and scripts are there; mark the body ready.
  function start(main) {
    const run = async () => {
      try {
        await main(page.dataset);
        document.body.dataset.ready = "1";
      } catch (err) {
        showError(err.message || String(err));
      }
    };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
    else run();
  }

  return {el, api, query, fill, table, pager, card, plot, start, showError, podLink, nodeLink, podUrl,
    runUrl, apiRun, podPath, enc, num, pct, bytes, cpu, secs, pendingAtEnd, amount};
})();
