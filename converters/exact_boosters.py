"""Exact raw margins of XGBoost and LightGBM classifiers (part of ``converters/exact.py``)::

    TreeEnsembleRegressor whose target t is the leaf id reached in tree t
    -> Transpose (trees first) -> Cast -> Add(offsets)
    -> Gather(leaf values, one column per class, the base margin in tree 0's)
    -> CumSum over the trees, last slice -> (N, K) -> Cast(double)

Each library sums the trees' leaf values one tree after the other: XGBoost in
float32, starting from the base margin (``-log(1 / base_score - 1)`` in float32 for
``binary:logistic``), LightGBM in float64 starting from 0 (its first trees hold
the initial score). A ``ReduceSum`` may add in any order, so the graph adds the
trees with a ``CumSum``, one tree after the other in the library's float type. Each
tree's leaves are non-zero in its class's column only; the zeros it adds to the
other columns are exact.

Splits: XGBoost casts X to float32 and sends ``x < t`` left, ``t`` float32,
NaN to the default child. LightGBM casts X to float64 and sends ``x <= t`` left,
``t`` float64; NaN goes to the default child when the split learnt missing
values (``missing_type`` NaN) and is compared as 0 otherwise.

Nothing here imports xgboost or lightgbm: the models are read through their
JSON dumps. Models are recognised by their class's module (``bernonnx._meta.booster_kind``).
"""

from __future__ import annotations

import json

import numpy as np
from onnx import TensorProto

from bernonnx._meta import booster_kind
from bernonnx.converters._graph import DOUBLE, FLOAT, GraphWriter
from bernonnx.converters.exact_models import cast_to
from bernonnx.converters.exact_trees import leaf_index, sum_in_tree_order

__all__ = ["booster_margins", "booster_supported"]

INT64 = TensorProto.INT64
#: XGBoost objectives of classifiers whose margin the graph reproduces, and how the
#: float32 base score becomes the base margin: ``-logf(1 / p - 1)`` in float32, as
#: XGBoost's ``ProbToMargin``. C's ``logf`` is correctly rounded: the float64 log
#: rounded to float32 (numpy's float32 log, or float64 arithmetic throughout, are
#: 1 ulp off for some scores, and every margin with them).
_XGB_OBJECTIVES = {
    "binary:logistic": lambda p: -np.log((np.float32(1) / p - np.float32(1)).astype(np.float64)),
    "binary:logitraw": lambda p: p,
    "multi:softprob": lambda p: p,
    "multi:softmax": lambda p: p,
}


def booster_supported(model, method: str) -> bool:
    """True when :func:`booster_margins` emits ``method``'s scores of ``model``: the raw
    margins (``decision_function``) of a tree booster without categorical splits."""
    kind = booster_kind(model)
    if kind is None or method != "decision_function":
        return False
    try:
        _xgboost_trees(model) if kind == "xgboost" else _lightgbm_trees(model)
    except NotImplementedError:
        return False
    return True


def _xgboost_trees(model):
    """Trees, per-class leaf values, base margin and iterations of an XGBClassifier."""
    booster = model.get_booster()
    config = json.loads(booster.save_config())["learner"]
    objective = config["objective"]["name"]
    if objective not in _XGB_OBJECTIVES:
        raise NotImplementedError(f"XGBoost objective {objective!r}")
    if config["gradient_booster"]["name"] != "gbtree":
        raise NotImplementedError(f"XGBoost booster {config['gradient_booster']['name']!r}")
    missing = getattr(model, "missing", np.nan)
    if missing is not None and not np.isnan(missing):
        raise NotImplementedError(f"XGBoost missing={missing!r} (only NaN is missing)")
    raw = json.loads(booster.save_raw("json"))["learner"]
    dump = raw["gradient_booster"]["model"]
    n_classes = max(int(raw["learner_model_param"]["num_class"]), 1)
    base = raw["learner_model_param"]["base_score"].strip("[]").split(",")
    base = _XGB_OBJECTIVES[objective](np.asarray(base, dtype=np.float32)).astype(np.float32)
    base = np.broadcast_to(base, (n_classes,)).astype(np.float32)
    indptr = np.asarray(dump.get("iteration_indptr") or [], dtype=np.int64)
    n_trees = len(dump["trees"])
    best = getattr(model, "best_iteration", None) if _early_stopped(model) else None
    if best is not None:  # XGBClassifier.predict stops at the best iteration
        n_trees = int(indptr[best + 1]) if len(indptr) else (best + 1) * n_classes
    if not len(indptr):
        indptr = np.arange(0, n_trees + 1, n_classes)
    trees, values = [], []
    for tree, group in zip(dump["trees"][:n_trees], dump["tree_info"][:n_trees], strict=True):
        if any(int(t) != 0 for t in tree["split_type"]):
            raise NotImplementedError("categorical splits of XGBoost")
        if int(tree["tree_param"].get("size_leaf_vector", 1)) > 1:
            raise NotImplementedError("XGBoost vector-leaf trees (multi_strategy)")
        left = np.asarray(tree["left_children"], dtype=np.int64)
        conditions = np.asarray(tree["split_conditions"], dtype=np.float32)
        trees.append(
            (
                left,
                np.asarray(tree["right_children"], dtype=np.int64),
                np.asarray(tree["split_indices"], dtype=np.int64),
                conditions.astype(np.float64),
                np.asarray(tree["default_left"], dtype=np.int64),
            )
        )
        column = np.zeros((len(left), n_classes), dtype=np.float32)
        column[left < 0, int(group)] = conditions[left < 0]  # leaves hold their value
        values.append(column)
    return trees, values, base, indptr[indptr <= n_trees]


def _early_stopped(model) -> bool:
    try:
        return model.best_iteration is not None
    except AttributeError:  # no early stopping: predict uses every tree
        return False


def _lightgbm_trees(model):
    """Trees, per-class leaf values, base margin (0) and iterations of an LGBMClassifier."""
    dump = model.booster_.dump_model()
    if dump.get("average_output"):
        raise NotImplementedError("LightGBM random forests (average_output)")
    per_iteration = int(dump["num_tree_per_iteration"])
    n_trees = len(dump["tree_info"])
    best = getattr(model, "best_iteration_", None) or 0
    if best > 0:  # LGBMClassifier.predict stops at the best iteration
        n_trees = best * per_iteration
    trees, values = [], []
    for k, info in enumerate(dump["tree_info"][:n_trees]):
        if info.get("is_linear"):
            raise NotImplementedError("LightGBM linear trees")
        tree, column = _lightgbm_tree(info["tree_structure"], k % per_iteration, per_iteration)
        trees.append(tree)
        values.append(column)
    base = np.zeros(per_iteration)
    return trees, values, base, np.arange(0, n_trees + 1, per_iteration)


def _lightgbm_tree(root: dict, group: int, n_classes: int):
    """One LightGBM tree as arrays (nodes numbered depth first) and its leaf values."""
    nodes = []

    def visit(node):
        index = len(nodes)
        nodes.append(None)
        if "leaf_coeff" in node:
            raise NotImplementedError("LightGBM linear trees")
        if "leaf_value" in node or "split_index" not in node:
            nodes[index] = (-1, -1, 0, 0.0, 0, float(node.get("leaf_value", 0.0)))
            return index
        if node["decision_type"] != "<=":
            raise NotImplementedError("categorical splits of LightGBM")
        threshold = float(node["threshold"])
        if node["missing_type"] == "NaN":
            missing_left = bool(node["default_left"])
        elif node["missing_type"] == "None":
            missing_left = 0.0 <= threshold  # LightGBM compares NaN as 0
        else:
            raise NotImplementedError("LightGBM zero_as_missing splits")
        left = visit(node["left_child"])
        right = visit(node["right_child"])
        nodes[index] = (left, right, int(node["split_feature"]), threshold, int(missing_left), 0.0)
        return index

    visit(root)
    columns = (np.asarray(a) for a in zip(*nodes, strict=True))
    left, right, feature, threshold, missing, leaf_value = columns
    column = np.zeros((len(nodes), n_classes))
    column[:, group] = np.where(left < 0, leaf_value, 0.0)
    tree = (
        left.astype(np.int64),
        right.astype(np.int64),
        feature.astype(np.int64),
        threshold.astype(np.float64),
        missing.astype(np.int64),
    )
    return tree, column


def booster_margins(g: GraphWriter, x: str, elem: int, model) -> str:
    """The raw margins of an XGBoost or LightGBM classifier, (N, K) float64 (K=1 binary),
    summed tree after tree in the library's float type."""
    if booster_kind(model) == "xgboost":
        trees, values, base, indptr = _xgboost_trees(model)
        work, x_dtype, mode = FLOAT, np.float32, "BRANCH_LT"
    else:
        trees, values, base, indptr = _lightgbm_trees(model)
        work, x_dtype, mode = DOUBLE, np.float64, "BRANCH_LEQ"
    n_classes = values[0].shape[1]
    per_iteration = np.diff(indptr)
    if len(set(per_iteration.tolist())) != 1 or per_iteration[0] != n_classes:
        raise NotImplementedError("boosters with several trees per class and iteration")
    if not trees:
        raise NotImplementedError(f"{type(model).__name__} without trees")
    # the base margin goes into the first tree's leaves, every class's column: its own
    # class's base + v rounds, in the work type, as the library's first addition, and
    # the other classes' base + 0 is their base, to which their first tree adds alike
    values = [(base + values[0]).astype(values[0].dtype), *values[1:]]
    index = leaf_index(g, x, trees, elem, x_dtype, mode, trees_first=True)
    # each tree's leaves are non-zero in its class's column only: the zeros it adds to
    # the other columns are exact
    total = sum_in_tree_order(g, index, values, work)
    return cast_to(g, total, DOUBLE, work)
