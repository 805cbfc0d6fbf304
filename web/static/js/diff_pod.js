// One pod in two runs, side by side: what changed, where each run put it and why, with the
// verdict each run gave the node the other one chose.
"use strict";

K.start(async ({a, b, pod}) => {
  const {el} = K;
  const diff = await K.api(`/api/v1/diff/pods/${K.podPath(pod)}${K.query({a, b})}`);
  const change = diff.change;
  K.fill("change", change
    ? [el("strong", {text: `${change.change}: `}), change.reason || change.cause]
    : "Unchanged: both runs bound it to the same node after the same wait.");

  const rejectionText = (r) => (r.cause.startsWith("rejected by ") ? r.cause : `rejected by ${r.plugin}: ${r.cause}`) +
    (r.detail ? ` (${r.detail})` : "");

  // `verdict`: the run's verdict on the node the other run chose, worded by the API as the
  // diff words it (a rejection with its exact amounts).
  async function side(run, otherNode, recorded, verdict) {
    if (run === "recorded") {
      return el("div", {class: "side"}, el("h2", {text: "recorded"}),
        el("p", {class: "lead", text: !change ? "The trace bound it where the other run did."
          : recorded.node ? `The trace bound it to ${recorded.node} after ${K.num(recorded.pendingSeconds, 3)} s pending.`
            : "The trace never bound it."}),
        el("p", {class: "note", text: "The recorded cluster's placement: the trace holds no scheduler attempts to show."}));
    }
    const base = `${K.apiRun(run)}/pods/${K.podPath(pod)}`;
    let story;
    try {
      story = await K.api(base);
    } catch (err) {
      return el("div", {class: "side"}, el("h2", {text: run}), el("p", {class: "note", text: err.message}));
    }
    // Attempts are numbered from 1, as explain and the pod page number them.
    const shown = story.verdict.decisiveAttempt ?? story.attempts.length;
    const detail = shown >= 1 ? await K.api(`${base}/attempts/${shown}`) : null;
    const decision = detail && detail.decision;
    const other = detail && otherNode && otherNode !== detail.selectedNode ? otherNode : null;
    // Plugin names break at their capitals so that seven score columns fit half a screen.
    const wrap = (name) => name.replace(/([a-z])([A-Z])/g, "$1\u200b$2");
    const rows = detail ? [...Array(Math.min(8, detail.scores.nodes.length)).keys()] : [];
    const otherRow = other ? detail.scores.nodes.indexOf(other) : -1;
    if (otherRow >= rows.length) rows.push(otherRow);  // the other run's node, however it ranked
    const table = rows.length ? K.table([
      {label: "Node", value: (i) => detail.scores.nodes[i], class: "node"},
      {label: "Total", value: (i) => detail.scores.total[i], class: "num"},
      ...detail.scores.plugins.map((p, j) => ({label: wrap(p), value: (i) => detail.scores.weighted[i][j], class: "num"})),
      {label: "Free cpu", value: (i) => K.cpu(detail.scores.freeCpu[i]), class: "num"},
    ], rows, {class: "data compact"}) : null;
    if (table && otherRow >= 0) table.querySelectorAll("tbody tr")[rows.indexOf(otherRow)].classList.add("chosen");
    if (table && other && otherRow < 0 && verdict) {
      // The other run's node has no score here (rejected or never evaluated): its row says why.
      const columns = table.querySelectorAll("thead th").length;
      table.querySelector("tbody").append(el("tr", {class: "chosen other-node-row"},
        el("td", {class: "node", text: other}),
        el("td", {class: "message", colspan: String(columns - 1),
          text: verdict.rejection ? rejectionText(verdict.rejection) : verdict.text})));
    }
    return el("div", {class: "side"},
      el("h2", {}, el("a", {href: K.podUrl(run, pod), text: run})),
      el("p", {class: `verdict ${story.verdict.state}`, text: story.verdict.headline}),
      el("p", {class: "lead"}, story.boundNode ? `bound to ${story.boundNode} at ${story.boundTime}` : "never bound"),
      el("p", {text: `${story.attempts.length} attempt(s); recorded cluster: ${story.recordedNode || "–"}`}),
      detail && !detail.selectedNode ? el("p", {class: "message", text: detail.message}) : null,
      decision ? el("p", {class: "message", text: decision.summary}) : null,
      other && verdict ? el("p", {class: "message other-node", text: verdict.text}) : null,
      table ? el("div", {class: "scroll"}, table) : null);
  }
  const nodes = change ? [change.a.node, change.b.node] : [null, null];
  const verdicts = diff.otherNode || {};
  const [left, right] = await Promise.all([side(a, nodes[1], change && change.a, verdicts.a),
    side(b, nodes[0], change && change.b, verdicts.b)]);
  K.fill("side-a", left);
  K.fill("side-b", right);
});
