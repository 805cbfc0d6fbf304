"""The views a lagging audit tries (kaudit/replay/audit_changes.py)."""

from __future__ import annotations

from kaudit.replay.audit_changes import Change, lagging_views, scheduling_state


def change(ts: int, kind: str, key: str) -> Change:
    return Change(ts, kind, key, None, {"kind": kind})


def test_the_last_changes_of_one_informer_may_be_unseen_alone() -> None:
    pod1, node, pod2 = change(1, "Pod", "a/p1"), change(2, "Node", "/n1"), change(3, "Pod", "a/p2")
    backs = [back for back, ahead in lagging_views([pod1, node, pod2], []) if not ahead]

    # The fewest changes unseen first: the last one, or the nodes' informer lagging by one;
    # then two (the last two recorded, or the pods' informer lagging alone), then all three.
    assert backs == [[pod2], [node], [node, pod2], [pod1, pod2], [pod1, node, pod2]]
    assert len(backs) == len({tuple(map(id, back)) for back in backs})


def test_a_cap_on_the_views_keeps_the_smallest_lags_of_every_family() -> None:
    # Many changes in the window: the first views tried move one or two of them, the pods'
    # and the nodes' informers lagging alone among them, before any suffix of ten.
    changes = [change(i, "Pod" if i % 2 else "Node", f"a/c{i}") for i in range(40)]
    views = lagging_views(changes, [("bind", "a/x", "n1")])
    sizes = [len(back) + len(ahead) for back, ahead in views]
    assert sizes == sorted(sizes)
    first = views[:8]
    assert ([changes[-2]], []) in first  # the nodes' informer one change behind
    assert ([], [("bind", "a/x", "n1")]) in first


def test_any_one_of_its_own_writes_may_have_been_made_first() -> None:
    writes = [("bind", "a/x", "n1"), ("bind", "a/y", "n2"), ("bind", "a/z", "n3")]
    aheads = [ahead for back, ahead in lagging_views([], writes) if not back]

    # One write made first (the first recorded, or any one alone), then the first two,
    # then all three.
    assert aheads == [writes[:1], [writes[1]], [writes[2]], writes[:2], writes]


def test_a_budgets_allowed_disruptions_are_what_the_scheduler_reads_of_it() -> None:
    budget = {"spec": {"maxUnavailable": 1}, "status": {"disruptionsAllowed": 1}}
    other = {"spec": {"maxUnavailable": 1}, "status": {"disruptionsAllowed": 0,
                                                        "currentHealthy": 3}}
    assert scheduling_state("PodDisruptionBudget", budget) != \
        scheduling_state("PodDisruptionBudget", other)
    assert scheduling_state("PodDisruptionBudget", other) == scheduling_state(
        "PodDisruptionBudget", {**other, "status": {"disruptionsAllowed": 0}})


def test_the_last_changes_but_its_own_bindings_may_be_unseen() -> None:
    # A deletion the scheduler had not seen, then bindings it had made (and assumed) itself.
    gone = Change(1, "Pod", "a/old", {"kind": "Pod"}, None, "DELETED")
    bound = Change(2, "Pod", "a/new", None, {"kind": "Pod"})
    backs = [back for back, ahead in lagging_views([gone, bound], []) if not ahead]

    assert [gone] in backs
    assert bound.is_binding and not gone.is_binding
