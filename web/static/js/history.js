// History replay: the cluster at time t, with a scrubber that plays and steps through events.
"use strict";

K.start(async ({run, seconds, t}) => {
  const {el} = K;
  const base = K.apiRun(run);
  const total = Number(seconds);
  const slider = document.getElementById("time");
  const resource = document.getElementById("resource");
  const params = new URLSearchParams(location.search);
  let current = Number(t) || 0;
  let state = null;
  let selectedNode = params.get("node");
  let playing = null;
  let loading = null;

  function utilisation(nodes, name) {
    if (name === "cpu") return [nodes.cpuRequested, nodes.cpuAllocatable];
    if (name === "memory") return [nodes.memoryRequested, nodes.memoryAllocatable];
    if (name === "pods") return [nodes.pods, nodes.podsAllocatable];
    const ext = nodes.extended[name];
    return [ext.requested, ext.allocatable];
  }

  function drawNodes() {
    const nodes = state.nodes;
    const name = resource.value || "cpu";
    const [requested, allocatable] = utilisation(nodes, name);
    const share = requested.map((r, i) => (allocatable[i] ? r / allocatable[i] : 0));
    const hover = nodes.name.map((n, i) => `${n} (zone ${nodes.zone[i] || "–"})<br>` +
      `${name}: ${K.amount(name, requested[i])} of ${K.amount(name, allocatable[i])} ` +
      `(${K.pct(allocatable[i] ? requested[i] / allocatable[i] : null)})<br>pods: ${nodes.pods[i]}`);
    let traces;
    let layout;
    if (nodes.name.length <= 300) {
      const x = [nodes.zone.map((z) => z || "(no zone)"), nodes.name];
      traces = [{type: "bar", x, y: share, customdata: nodes.name, hovertext: hover, hoverinfo: "text",
        name: `${name} requested ÷ allocatable`, marker: {color: share.map((v) => (v > 0.9 ? "#c0392b" : "#2e86c1"))}}];
      layout = {hovermode: "closest", yaxis: {tickformat: ".0%", range: [0, Math.max(1, ...share)]},
        xaxis: {type: "multicategory", tickangle: -45}, margin: {l: 55, r: 15, t: 30, b: 110}};
    } else {
      // Large clusters: a heat map, each zone a block of rows of at most 100 nodes.
      const perRow = 100;
      const zones = [...new Set(nodes.zone)];
      const rows = [];
      zones.forEach((zone) => {
        const members = nodes.name.map((_, i) => i).filter((i) => nodes.zone[i] === zone);
        for (let first = 0; first < members.length; first += perRow) {
          const chunk = members.slice(first, first + perRow);
          rows.push({label: `${zone || "(no zone)"} ${first + 1}–${first + chunk.length}`, chunk});
        }
      });
      const pad = (values, fill) => values.concat(new Array(perRow - values.length).fill(fill));
      traces = [{type: "heatmap", zmin: 0, zmax: 1, hoverinfo: "text", hoverongaps: false,
        y: rows.map((r) => r.label), z: rows.map((r) => pad(r.chunk.map((i) => share[i]), null)),
        text: rows.map((r) => pad(r.chunk.map((i) => hover[i]), "")),
        customdata: rows.map((r) => pad(r.chunk.map((i) => nodes.name[i]), "")),
        colorscale: "YlOrRd", reversescale: true, xgap: 1, ygap: 1, colorbar: {tickformat: ".0%"}}];
      layout = {hovermode: "closest", xaxis: {title: {text: "node within the row"}, showgrid: false},
        yaxis: {autorange: "reversed", showgrid: false, type: "category"}, margin: {l: 150, r: 15, t: 10, b: 45}};
    }
    K.plot("chart-nodes", traces, layout);
  }

  function drawQueues() {
    const boxes = Object.entries(state.queues).map(([queue, {count, pods}]) => el("div", {class: "queue"},
      el("h3", {}, `${queue} `, el("span", {class: "count", text: count})),
      el("ul", {}, pods.map((p) => el("li", {}, K.podLink(run, p.pod), ` since ${K.num(p.since, 3)} s`))),
      count > pods.length ? el("p", {class: "note", text: `… and ${count - pods.length} more`}) : null));
    K.fill("queues", boxes);
  }

  function drawEvents() {
    K.fill("events", K.table([
      {label: "t (s)", value: (e) => el("a", {href: "#", text: K.num(e.t, 3), onclick: (ev) => { ev.preventDefault(); go(e.t); }}), class: "num"},
      {label: "Kind", value: (e) => e.kind},
      {label: "Pod", value: (e) => K.podLink(run, e.pod)},
      {label: "Node", value: (e) => e.node},
      {label: "Detail", value: (e) => e.text, class: "message"},
    ], state.events, {id: "events-table"}));
    document.querySelectorAll("#events-table tbody tr").forEach((tr, i) => {
      if (!state.events[i].current) tr.classList.add("future");
    });
  }

  async function drawNode() {
    if (!selectedNode) return;
    const node = await K.api(`${base}/nodes/${K.enc(selectedNode)}${K.query({t: current})}`);
    K.fill("node-name", node.node);
    const labels = Object.entries(node.labels).map(([k, v]) => el("li", {}, el("code", {text: `${k}=${v}`})));
    K.fill("node-detail",
      el("p", {text: `zone ${node.zone || "–"}; ${node.present ? "present" : "gone"}; allocatable ` +
        `${K.cpu(node.allocatable.cpu)}, ${K.bytes(node.allocatable.memory)}, ${node.allocatable.pods} pods` +
        `${node.unschedulable ? "; cordoned" : ""}${node.taints ? `; ${node.taints} taint(s)` : ""}`}),
      K.table([
        {label: "Pod", value: (p) => K.podLink(run, p.pod)},
        {label: "Since (s)", value: (p) => K.num(p.since, 3), class: "num"},
        {label: "By", value: (p) => p.by},
        {label: "Priority", value: (p) => p.priority, class: "num"},
        {label: "CPU", value: (p) => K.cpu(p.cpu), class: "num"},
        {label: "Memory", value: (p) => K.bytes(p.memory), class: "num"},
        ...(node.pods.some((p) => p.extended["nvidia.com/gpu"]) ? [{label: "GPUs",
          value: (p) => K.num(p.extended["nvidia.com/gpu"] || 0), class: "num"}] : []),
      ], node.pods, {id: "node-pods"}),
      node.gpus.length ? K.table([
        {label: "GPU", value: (g) => g.device, class: "num"},
        {label: "Held (milli)", value: (g) => K.num(g.heldMilli), class: "num"},
        {label: "Free (milli)", value: (g) => K.num(g.freeMilli), class: "num"},
        {label: "Use", value: (g) => el("meter", {min: "0", max: "1000", value: String(g.heldMilli), title: `${g.heldMilli} of 1000`})},
        {label: "Pods", value: (g) => g.pods.map((p) => `${p.pod} (${p.milli})${p.deviceAssumed ? " *" : ""}`).join(", ") || "–", class: "message"},
      ], node.gpus, {id: "node-gpus"}) : null,
      node.gpus.some((g) => g.pods.some((p) => p.deviceAssumed)) ? el("p", {class: "note", id: "node-gpus-assumed",
        text: "* whole GPUs requested as nvidia.com/gpu: kube-scheduler counts them, the kubelet's device plugin picks the devices; shown on the lowest free ones."}) : null,
      el("details", {}, el("summary", {text: `labels (${labels.length})`}), el("ul", {class: "labels"}, labels)));
  }

  async function go(t) {
    current = Math.max(0, Math.min(total, t));
    slider.value = current;
    const request = K.api(`${base}/state${K.query({t: current})}`);
    loading = request;
    const answer = await request;
    if (loading !== request) return;  // a newer moment was asked for meanwhile
    state = answer;
    document.getElementById("clock").textContent = `t = ${K.num(state.t, 3)} s · ${state.time}`;
    const tot = state.totals;
    K.fill("totals",
      K.card("nodes", K.num(tot.nodes)), K.card("pods placed", K.num(tot.pods)),
      K.card("CPU requested", K.pct(tot.cpuAllocatable ? tot.cpuRequested / tot.cpuAllocatable : null)),
      K.card("memory requested", K.pct(tot.memoryAllocatable ? tot.memoryRequested / tot.memoryAllocatable : null)),
      ...Object.entries(state.queues).map(([q, v]) => K.card(q, K.num(v.count))));
    const names = ["cpu", "memory", "pods", ...Object.keys(state.nodes.extended)];
    if (resource.options.length !== names.length) {
      const chosen = resource.value;
      resource.replaceChildren(...names.map((n) => el("option", {value: n, text: n})));
      resource.value = names.includes(chosen) ? chosen : "cpu";
    }
    drawNodes();
    drawQueues();
    drawEvents();
    await drawNode();
    const url = new URL(location.href);
    url.searchParams.set("t", String(current));
    if (selectedNode) url.searchParams.set("node", selectedNode);
    history.replaceState(null, "", url);
  }

  function nextEvent(direction) {
    const times = state.events.map((e) => e.t);
    const later = times.filter((x) => x > current + 1e-9);
    const earlier = times.filter((x) => x < current - 1e-9);
    if (direction > 0) return later.length ? Math.min(...later) : Math.min(total, current + total / 100);
    return earlier.length ? Math.max(...earlier) : Math.max(0, current - total / 100);
  }

  slider.addEventListener("input", () => go(Number(slider.value)).catch((e) => K.showError(e.message)));
  resource.addEventListener("change", drawNodes);
  document.getElementById("step").addEventListener("click", () => go(nextEvent(1)).catch((e) => K.showError(e.message)));
  document.getElementById("step-back").addEventListener("click", () => go(nextEvent(-1)).catch((e) => K.showError(e.message)));
  const play = document.getElementById("play");
  play.addEventListener("click", () => {
    if (playing) {
      clearTimeout(playing);
      playing = null;
      play.textContent = "Play";
      return;
    }
    play.textContent = "Pause";
    const tick = async () => {
      if (current >= total) { playing = null; play.textContent = "Play"; return; }
      await go(current + Math.max(total / 120, 0.001)).catch((e) => K.showError(e.message));
      if (playing) playing = setTimeout(tick, 250);
    };
    playing = setTimeout(tick, 0);
  });
  // What-if: the pasted or uploaded manifest evaluated at the scrubber's moment.
  const manifest = document.getElementById("whatif-manifest");
  document.getElementById("whatif-file").addEventListener("change", async (event) => {
    const file = event.target.files[0];
    if (file) manifest.value = await file.text();
  });
  document.getElementById("whatif-run").addEventListener("click", () => evaluate().catch((e) => K.showError(e.message)));
  async function evaluate() {
    const box = document.getElementById("whatif-result");
    K.fill(box, el("p", {class: "note", text: `evaluating at t = ${K.num(current, 3)} s…`}));
    const release = document.getElementById("whatif-version").value;
    const response = await fetch(`${base}/whatif${K.query({t: current, kubernetesVersion: release || null})}`, {
      method: "POST", body: manifest.value, headers: {"Content-Type": "text/plain", Accept: "application/json"}});
    const answer = await response.json();
    if (!response.ok) {
      K.fill(box, el("p", {class: "error", id: "whatif-error", text: answer.error}));
      return;
    }
    // Every sentence and cause group comes worded from the API, as `kaudit whatif` prints it.
    const ev = answer.evaluation;
    const said = answer.sentences;
    const scored = Object.entries(ev.nodes).filter(([, v]) => "total" in v)
      .sort((a, b) => (b[0] === ev.selectedNode) - (a[0] === ev.selectedNode) || b[1].total - a[1].total || a[0].localeCompare(b[0]));
    const plugins = scored.length ? Object.keys(scored[0][1].score) : [];
    K.fill(box,
      el("p", {class: "note", id: "whatif-moment", text: `At t = ${K.num(answer.t, 3)} s (${answer.time}), Kubernetes ${answer.kubernetesVersion}:`}),
      ...(answer.notices || []).map((notice) => el("p", {class: "note whatif-notice", text: notice})),
      el("p", {class: `verdict ${ev.selectedNode ? "bound" : "pending"}`, id: "whatif-verdict", text: said.headline}),
      said.preemption ? el("p", {id: "whatif-preemption", text: said.preemption}) : null,
      el("p", {id: "whatif-counts", text: said.nodeCounts}),
      answer.causes.length ? el("h4", {text: said.causesTitle}) : null,
      answer.causes.length ? K.table([
        {label: "Nodes", value: (c) => c.count, class: "num"},
        {label: "Cause", value: (c) => c.cause},
        {label: "Detail", value: (c) => c.detail},
        {label: "For example", value: (c) => c.examples},
      ], answer.causes, {id: "whatif-rejected"}) : (said.causesNote ? el("p", {class: "note", text: said.causesNote}) : null),
      scored.length ? el("div", {class: "scroll"}, K.table([
        {label: "Node", value: ([name]) => name, class: "node"},
        {label: "Total", value: ([, v]) => v.total, class: "num"},
        ...plugins.map((p) => ({label: p.replace(/([a-z])([A-Z])/g, "$1\u200b$2"), value: ([, v]) => v.score[p].weighted, class: "num"})),
      ], scored.slice(0, 8), {id: "whatif-scores", class: "data compact"})) : null);
  }
  await go(current);
  document.getElementById("chart-nodes").on("plotly_click", (event) => {
    const point = event.points[0];
    selectedNode = point.customdata;
    if (Array.isArray(selectedNode)) selectedNode = selectedNode[0];
    if (selectedNode) drawNode().catch((e) => K.showError(e.message));
  });
});
