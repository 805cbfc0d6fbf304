"""Selectors over the cluster's label columns agree with the one-node form, Gt/Lt included:
a label value is a number only as ``strconv.ParseInt(v, 10, 64)`` reads it."""

from __future__ import annotations

import numpy as np

from kaudit.cluster.matching import requirement_mask
from kaudit.cluster.state import ClusterState
from kaudit.model.selectors import parse_term
from kaudit.tracegen.builders import make_node

LABELS = ["6", "5", "-7", "+9", "1_0", " 7", "٣", "9223372036854775808", "0x10", "x"]


def test_gt_and_lt_over_columns_read_labels_as_parse_int() -> None:
    cluster = ClusterState()
    for i, value in enumerate(LABELS):
        cluster.add_node(make_node(f"n{i}").label("k", value).obj())
    slots = np.asarray([cluster.slot_of[f"n{i}"] for i in range(len(LABELS))])
    for operator in ("Gt", "Lt"):
        term = parse_term({"matchExpressions": [
            {"key": "k", "operator": operator, "values": ["5"]}]}, "t")
        mask = requirement_mask(cluster, slots, term.expressions[0])
        one_by_one = [term.matches({"k": value}, f"n{i}") for i, value in enumerate(LABELS)]
        assert mask.tolist() == one_by_one, operator
    gt = parse_term({"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["5"]}]}, "t")
    assert requirement_mask(cluster, slots, gt.expressions[0]).tolist() == \
        [True, False, False, True, False, False, False, False, False, False]
