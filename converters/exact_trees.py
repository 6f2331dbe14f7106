"""Exact scores of tree ensembles (part of ``converters/exact.py``, see there)::

    DecisionTree, RandomForest, ExtraTrees, GradientBoosting, HistGradientBoosting
        TreeEnsembleRegressor whose target t is the leaf id reached in tree t
        (exact in float32 below 2^24 nodes) -> Transpose (trees first) -> Cast
        -> Add(offsets) -> Gather(float64 leaf values, init in tree 0's)
        -> CumSum over the trees, last slice -> [Div(n_trees)]

Tree thresholds: scikit-learn compares ``x <= t`` with ``t`` float64. For the
float32 ``x`` that RandomForest, ExtraTrees, DecisionTree and GradientBoosting
compare (they cast X to float32), ``x <= t`` exactly when ``x <= t'`` with
``t'`` the largest float32 not above ``t``: the float attribute holds ``t'``.
HistGradientBoosting compares float64 ``x``; in float64 graphs its thresholds
travel as ``nodes_values_as_tensor`` (float64), which onnxruntime compares in
double. Leaf values are float64 and summed in float64 in scikit-learn's order:
one tree after the other, from the boosting models' start value (their
``_raw_predict`` adds each tree to the initial raw prediction) or from the first
tree (a forest adds each tree's values to zeros, then divides).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, numpy_helper
from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier
from sklearn.tree import DecisionTreeClassifier

from bernonnx.converters._graph import DOUBLE, FLOAT, GraphWriter
from bernonnx.converters.exact_models import cast_to

INT64 = TensorProto.INT64


def _tree_arrays(model):
    """Every tree as (left, right, feature, threshold, missing_left, values (n, K),
    column), plus what scikit-learn does after summing the trees."""
    trees, post = [], None
    if isinstance(model, HistGradientBoostingClassifier):
        k_cols = model.n_trees_per_iteration_
        for predictors in model._predictors:
            for k, predictor in enumerate(predictors):
                nodes = predictor.nodes
                if nodes["is_categorical"].any():
                    raise NotImplementedError("categorical splits of HistGradientBoosting")
                leaf = nodes["is_leaf"].astype(bool)
                values = np.zeros((len(nodes), k_cols))
                values[leaf, k] = nodes["value"][leaf]
                trees.append(
                    (
                        np.where(leaf, -1, nodes["left"].astype(np.int64)),
                        np.where(leaf, -1, nodes["right"].astype(np.int64)),
                        nodes["feature_idx"].astype(np.int64),
                        nodes["num_threshold"].astype(np.float64),
                        nodes["missing_go_to_left"].astype(np.int64),
                        values,
                    )
                )
        post = ("add", np.asarray(model._baseline_prediction, dtype=np.float64).reshape(1, -1))
        return trees, post, np.float64
    if isinstance(model, GradientBoostingClassifier):
        k_cols = model.estimators_.shape[1]
        for stage in model.estimators_:
            for k, reg in enumerate(stage):
                t = reg.tree_
                values = np.zeros((t.node_count, k_cols))
                values[:, k] = model.learning_rate * t.value[:, 0, 0]
                trees.append(_sklearn_tree(t, values))
        zero = np.zeros((1, model.n_features_in_), dtype=np.float32)
        post = ("add", np.asarray(model._raw_predict_init(zero), dtype=np.float64))
        return trees, post, np.float32
    estimators = [model] if isinstance(model, DecisionTreeClassifier) else model.estimators_
    n_classes = len(model.classes_)
    for est in estimators:
        t = est.tree_
        trees.append(_sklearn_tree(t, np.asarray(t.value[:, 0, :n_classes], dtype=np.float64)))
    if not isinstance(model, DecisionTreeClassifier):
        post = ("div", float(len(estimators)))
    return trees, post, np.float32


def _sklearn_tree(t, values):
    missing = getattr(t, "missing_go_to_left", None)
    missing = np.zeros(t.node_count, np.int64) if missing is None else missing.astype(np.int64)
    return (
        t.children_left.astype(np.int64),
        t.children_right.astype(np.int64),
        t.feature.astype(np.int64),
        t.threshold.astype(np.float64),
        missing,
        values,
    )


def round_down_float32(t: np.ndarray) -> np.ndarray:
    """The largest float32 not above each float64 ``t``: for float32 ``x``,
    ``x <= t`` exactly when ``x <= round_down_float32(t)``.

    Examples
    --------
    0.1 rounds up to the float32 0.100000001, so the threshold steps down one float32;
    1.0 is a float32 already, and past float32's range the largest float32 stands in:

    >>> round_down_float32([0.1, 1.0, 1e300])
    array([9.9999994e-02, 1.0000000e+00, 3.4028235e+38], dtype=float32)
    """
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):
        r = t.astype(np.float32)
    above = r.astype(np.float64) > t
    r[above] = np.nextafter(r[above], np.float32(-np.inf))
    return r


def tree_ensemble(g: GraphWriter, x: str, model, elem: int) -> str:
    """Sum of leaf values over the trees, in float64 and in scikit-learn's order,
    plus the model's post step: (N, K)."""
    trees, post, x_dtype = _tree_arrays(model)
    index = leaf_index(g, x, [tree[:5] for tree in trees], elem, x_dtype, trees_first=True)
    values = [np.asarray(tree[5], dtype=np.float64) for tree in trees]
    if post is not None and post[0] == "add":
        # the start value goes into the first tree's leaves: init + v rounds in numpy
        # as the sum scikit-learn starts with (other classes' zeros add exactly)
        values[0] = post[1] + values[0]
    total = sum_in_tree_order(g, index, values)
    if post is not None and post[0] == "div":
        return g.node("Div", [total, g.const("n_trees", post[1])])
    return total


def sum_in_tree_order(g: GraphWriter, index: str, values: list, elem: int = DOUBLE) -> str:
    """(N, K): each row's leaf values (``values[t]`` of tree t, (leaves, K); ``index`` the
    trees-first leaf ids of :func:`leaf_index`) added one tree after the other, in
    ``elem``.

    ``Gather`` gives (T, N, K), trees first; ``CumSum`` adds one tree's (N, K) block after
    the other (onnxruntime's cumsum.cc: out[t] = out[t-1] + in[t]), and its last block is
    the sum in the libraries' order. A ``ReduceSum`` over the trees' axis sums in its own
    order (onnxruntime runs it as a product with ones, one per row), at half the speed.
    """
    table = g.const("leaf_values", np.concatenate(values), elem)
    leaves = g.node("Gather", [table, index], axis=0)
    if len(values) > 1:
        leaves = g.node("CumSum", [leaves, g.const("trees_axis", 0, INT64, [])])
        last = (("last", -1), ("end", 2**62), ("axis0", 0))
        leaves = g.node("Slice", [leaves, *(g.const(k, [v], INT64) for k, v in last)])
    return g.node("Squeeze", [leaves, g.const("trees_axis", [0], INT64)])


def leaf_index(
    g: GraphWriter,
    x: str,
    trees: list,
    elem: int,
    x_dtype,
    mode: str = "BRANCH_LEQ",
    trees_first: bool = False,
) -> str:
    """(N, T) int64: for each row, the node reached in tree t, counted across the
    trees (tree t's nodes follow tree t-1's), so it indexes the concatenated leaves.
    ``trees_first``: (T, N) instead.

    ``trees`` holds (left, right, feature, threshold, missing_left) per tree, leaves
    marked by ``left < 0``. ``x_dtype`` is the float type the library compares in:
    float32 compares float32 ``x`` against thresholds rounded down to float32 (exact
    for float32 thresholds), float64 compares double ``x`` in double (float32 graphs
    still compare float32 ``x``, rounded down alike).
    """
    attrs = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "true", "false", "miss")}
    thresholds, target = [], {"treeids": [], "nodeids": [], "ids": [], "weights": []}
    offsets, n_nodes = [], 0
    for tree_id, (left, right, feature, threshold, missing) in enumerate(trees):
        n = len(left)
        if n >= 2**24:
            raise NotImplementedError("trees of 2^24 nodes or more")
        leaf = left < 0
        attrs["treeids"] += [tree_id] * n
        attrs["nodeids"] += list(range(n))
        attrs["featureids"] += np.where(leaf, 0, feature).tolist()
        attrs["modes"] += ["LEAF" if is_leaf else mode for is_leaf in leaf]
        attrs["true"] += np.where(leaf, 0, left).tolist()
        attrs["false"] += np.where(leaf, 0, right).tolist()
        attrs["miss"] += np.where(leaf, 0, missing).tolist()
        thresholds.append(np.where(leaf, 0.0, threshold))
        ids = np.flatnonzero(leaf)
        target["treeids"] += [tree_id] * len(ids)
        target["nodeids"] += ids.tolist()
        target["ids"] += [tree_id] * len(ids)
        target["weights"] += ids.astype(np.float64).tolist()
        offsets.append(n_nodes)
        n_nodes += n
    thresholds = np.concatenate(thresholds)
    common = dict(
        nodes_treeids=attrs["treeids"],
        nodes_nodeids=attrs["nodeids"],
        nodes_featureids=attrs["featureids"],
        nodes_modes=attrs["modes"],
        nodes_truenodeids=attrs["true"],
        nodes_falsenodeids=attrs["false"],
        nodes_missing_value_tracks_true=attrs["miss"],
        target_treeids=target["treeids"],
        target_nodeids=target["nodeids"],
        target_ids=target["ids"],
        target_weights=target["weights"],
        n_targets=len(trees),
        aggregate_function="SUM",
        post_transform="NONE",
    )
    if x_dtype == np.float32 or elem == FLOAT:
        # scikit-learn compares float32 x (forests cast X to float32; float32 data stay exact)
        x = cast_to(g, x, FLOAT, elem)
        common["nodes_values"] = round_down_float32(thresholds).astype(np.float64).tolist()
    else:
        common["nodes_values_as_tensor"] = numpy_helper.from_array(thresholds, "thresholds")
    leaf_ids = g.scope.get_unique_variable_name(f"{g.prefix}_leaf_ids")
    g.container.add_node(
        "TreeEnsembleRegressor",
        [x],
        leaf_ids,
        op_domain="ai.onnx.ml",
        op_version=3,
        name=g.scope.get_unique_operator_name(f"{g.prefix}_TreeEnsembleRegressor"),
        **common,
    )
    offsets = np.asarray([offsets], dtype=np.int64)
    if trees_first:
        leaf_ids = g.node("Transpose", [leaf_ids], perm=[1, 0])
        offsets = offsets.T
    return g.node(
        "Add", [g.node("Cast", [leaf_ids], to=INT64), g.const("offsets", offsets, INT64)]
    )
