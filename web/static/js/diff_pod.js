// One pod in two runs, side by side: where each run put it and why.
"use strict";

K.start(async ({a, b, pod}) => {
  const {el} = K;
  async function side(run) {
    if (run === "recorded") {
      return el("div", {class: "side"}, el("h2", {text: "recorded"}),
        el("p", {class: "note", text: "The trace's own placement: see the recorded node on either run's pod page."}));
    }
    const base = `${K.apiRun(run)}/pods/${K.podPath(pod)}`;
    let story;
    try {
      story = await K.api(base);
    } catch (err) {
      return el("div", {class: "side"}, el("h2", {text: run}), el("p", {class: "note", text: err.message}));
    }
    const shown = story.verdict.decisiveAttempt ?? story.attempts.length - 1;
    const detail = shown >= 0 ? await K.api(`${base}/attempts/${shown}`) : null;
    const decision = detail && detail.decision;
    // Plugin names break at their capitals so that seven score columns fit half a screen.
    const wrap = (name) => name.replace(/([a-z])([A-Z])/g, "$1\u200b$2");
    return el("div", {class: "side"},
      el("h2", {}, el("a", {href: K.podUrl(run, pod), text: run})),
      el("p", {class: `verdict ${story.verdict.state}`, text: story.verdict.headline}),
      el("p", {class: "lead"}, story.boundNode ? `bound to ${story.boundNode} at ${story.boundTime}` : "never bound"),
      el("p", {text: `${story.attempts.length} attempt(s); recorded cluster: ${story.recordedNode || "–"}`}),
      detail && !detail.selectedNode ? el("p", {class: "message", text: detail.message}) : null,
      decision ? el("p", {class: "message", text: decision.summary}) : null,
      detail && detail.scores.nodes.length ? el("div", {class: "scroll"}, K.table([
        {label: "Node", value: (i) => detail.scores.nodes[i], class: "node"},
        {label: "Total", value: (i) => detail.scores.total[i], class: "num"},
        ...detail.scores.plugins.map((p, j) => ({label: wrap(p), value: (i) => detail.scores.weighted[i][j], class: "num"})),
        {label: "Free cpu", value: (i) => K.cpu(detail.scores.freeCpu[i]), class: "num"},
      ], [...Array(Math.min(8, detail.scores.nodes.length)).keys()], {class: "data compact"})) : null);
  }
  const [left, right] = await Promise.all([side(a), side(b)]);
  K.fill("side-a", left);
  K.fill("side-b", right);
});
