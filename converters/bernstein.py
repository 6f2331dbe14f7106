"""ONNX converter of :class:`bernonnx.BernsteinCalibrator` (mirrors
``bernonnx/calibrators/bernstein.py``).

Nodes emitted on the float64 score ``s`` (N, 1)::

    rescale  s  = Mul(Mul(s, 2^a), 2^b), a + b = score_exponent_   (only when it is not 0)
    affine   a  = [(s - shift) * scale, (s - shift) * scale_below]       (N, 2)
    logistic z  = ReduceMax(a)  (ReduceMin when scale < scale_below)
             uv = Max(Sigmoid(MatMul(z, [[1, -1]])), 1e-300)             [u, v]
    minmax   u  = Clip(a[:, :1], 0, 1)
    quantile u  = MatMul(Clip((s - knots[:-1]) / widths, 0, 1), diff(levels))
             uv = Max(Gemm(u, [[1, -1]], [0, 1]), 1e-300)                 [u, 1 - u]

    basis="exp" (default):  B = Exp(Gemm(Log(uv), [[k], [d - k]], log C(d, k)))
    basis="pow":            B = Pow(u, k) * Pow(v, d - k) * C(d, k)
    eta = Gemm(B, coef - coef[0], coef[0])
    logistic, basis="exp" (the default), as predict_proba evaluates it, on (N, 1) rows:
             D     = Clip(s - shift, -min(1e300, 1e100 / scale_below), min(1e300, 1e100 / scale))
             If N < SMALL_BATCH (few nodes; onnxruntime spends ~0.2 us a node on a row):
               [E, m] = Min(D * W[0], D * W[1])     W (2, d + 3): E_k = k x or (d - k) x
                        (x = -|z|), m = [min(D * -scale, 0), min(D * scale_below, 0)]
               [n, c] = MatMul(Exp(E), [a + coef[0] C(d, k), C(d, k)]),  eta = n / c
               eta    = Gemm(Log(1 - m), [[tail_slope_], [-tail_slope_]], eta)
             else (Horner, one exponential a row; on flattened (N,) rows):
               x     = Min(D * -scale, D * scale_below) (-|z|),  lower = D * -scale >= 0
               t     = Exp(x),  lead = (1 / (1 + t))^d           (repeated squaring: Mul nodes)
               eta   = Where(lower, h[0], h[1]) * lead + coef[0],  h = horner(A, t)
                       A = [a; reversed a] (2, d + 1), a_k = C(d, k) (coef[k] - coef[0]);
                       horner on the (2, N) pair: d Mul and d Add nodes
               eta   = eta + Log(1 - x) * Where(lower, -tail_slope_, tail_slope_)
             (each branch times [[-1, 1]] for the pair [-eta, eta]; the tail when
             tail_slope_ is not 0)
    other transforms: eta = eta + Log(1 - max(-|z|, -1e100)) * Where(z <= 0, -tail_slope_,
                                  tail_slope_)  (logistic, when tail_slope_ is not 0)
    p   = Sigmoid(eta) (loss="log")  |  Clip(eta, 0, 1) (loss="squared")

This is the formula ``BernsteinCalibrator.predict_proba`` evaluates (its
Notes): ``max(d*scale, d*scale_below)`` equals ``scale*max(d, 0) +
scale_below*min(d, 0)`` bit for bit when ``scale >= scale_below``.

``a`` is reached as numpy computes it: ``Sub`` the shift, ``Mul`` the slopes.
(A single ``Gemm(s, W, -shift * W)`` saved nodes while float32 graphs fed the
calibrator float32 base scores; since the base models' scores arrive exact,
its rounding would be the graph's largest error.)

With the logistic transform the default graph is ``predict_proba``'s own
evaluation (``bernonnx._core.basis.logistic_eta_blocks``) on batches of
:data:`SMALL_BATCH` rows or more: one ``Exp`` per score and ``2d`` products and
sums, where the ``exp`` basis takes ``d + 1`` exponentials per score (at batch
100,000 and degree 50: 15 ms against 52 ms in onnxruntime, one thread). On
smaller batches the ``2d`` nodes cost more than the exponentials (a single row:
about 0.3 us a node), and the polynomial's terms are summed at once instead, to
within 1e-13 of ``predict_proba`` at degree 100 (both branches are tested against
it at the float64 tolerance, 1e-12).

The ``exp`` basis is ``C u^k v^(d-k)`` in log space: it replaces two broadcast
``Pow`` nodes that took 60% of the stage at batch 100,000
(the documentation's results, "Serving cost"). The ``1e-300`` floor keeps ``Log`` finite
(onnxruntime's float64 Sigmoid returns exactly 0 below z = -37), so every
node is finite for any finite input and ``0 * log(0)`` never makes a NaN; it
moves a calibrated value by at most ``C(d, 1) |coef[1] - coef[0]| 2e-16``,
below 1e-12.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto
from scipy.special import comb, gammaln

from bernonnx._core.basis import _FLUSH_BELOW as FLUSH_BELOW
from bernonnx._core.basis import _rise_pair as rise_pair
from bernonnx._core.basis import binomial_row
from bernonnx._core.tail import TAIL_CAP
from bernonnx._core.transforms import _MAX_DIFF as MAX_DIFF
from bernonnx.converters._graph import GraphWriter, rescale_scores

TINY = 1e-300
BASES = ("exp", "pow")


def _affine(g: GraphWriter, s: str, shift, slopes):
    """``(s - shift) * slopes`` for (N, 1) ``s``; slopes of shape (m,) -> (N, m)."""
    slopes = np.atleast_1d(np.asarray(slopes, dtype=np.float64))
    shift = np.broadcast_to(np.asarray(shift, dtype=np.float64), slopes.shape)
    d = g.node("Sub", [s, g.const("shift", shift[None, :])])
    return g.node("Mul", [d, g.const("slopes", slopes[None, :])])


def _uv(g: GraphWriter, s: str, cal) -> tuple[str, str | None]:
    """``[u, v]`` (N, 2), floored at 1e-300, and the logistic transform's ``z`` (N, 1)."""
    tiny = g.const("tiny", TINY)
    # extreme scores: rescale first, exactly as Python does
    s = rescale_scores(g, s, int(getattr(cal, "score_exponent_", 0)))
    if cal.score_transform == "logistic":
        a = _affine(g, s, cal.shift_, [cal.scale_, cal.scale_below_])
        z = g.reduce("ReduceMax" if cal.scale_ >= cal.scale_below_ else "ReduceMin", a)
        uv = g.node("Sigmoid", [g.node("MatMul", [z, g.const("pm", [[1.0, -1.0]])])])
        return g.node("Max", [uv, tiny], "uv"), z
    zero, one = g.const("zero", 0.0), g.const("one", 1.0)
    if cal.score_transform == "minmax":
        a = _affine(g, s, cal.shift_, [cal.scale_])
        u = g.node("Clip", [a, zero, one], "u")
    else:
        knots, levels = np.asarray(cal.knots_), np.asarray(cal.levels_)
        k = knots.shape[0] - 1
        ramps = _affine(g, s, knots[:-1], 1.0 / np.diff(knots))
        ramps = g.node("Clip", [ramps, zero, one])
        u = g.node("MatMul", [ramps, g.const("dlevels", np.diff(levels).reshape(k, 1))], "u")
    uv = g.node("Gemm", [u, g.const("to_uv", [[1.0, -1.0]]), g.const("uv0", [0.0, 1.0])])
    return g.node("Max", [uv, tiny], "uv"), None


def _tail(g: GraphWriter, capped: str, lower: str, slope: float, shape=(1, 1)) -> str:
    """``tail_slope * sign(z) * log(1 + min(|z|, cap))`` from ``max(-|z|, -cap)`` and
    ``z <= 0``, as ``bernonnx._core.tail.log_tail_into`` computes it: ``log(1 -
    max(-|z|, -cap))`` times ``-slope`` where ``z <= 0``, ``slope`` elsewhere
    (constants of ``shape``: (1, 1) for (N, 1) tensors, () for flattened ones)."""
    log = g.node("Log", [g.node("Sub", [g.const("one", 1.0, shape=shape), capped])])
    factor = g.node(
        "Where",
        [lower, g.const("neg_slope", -slope, shape=shape), g.const("slope", slope, shape=shape)],
    )
    return g.node("Mul", [log, factor])


def log_binomial(n, k):
    """``log C(n, k)`` in float64 (no overflow at any degree).

    Examples
    --------
    >>> import numpy as np
    >>> float(np.exp(log_binomial(4, 2)))
    6.0
    >>> round(float(log_binomial(1000, 500)), 4)  # C(1000, 500) overflows float64
    689.4673
    """
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def pow_basis(g: GraphWriter, u: str, v: str, degree: int) -> str:
    """``C(d, k) u^k v^(d-k)`` (N, d + 1) from (N, 1) ``u`` and ``v`` by Pow and Mul."""
    k = np.arange(degree + 1, dtype=np.float64)[None, :]
    powers = g.node(
        "Mul",
        [
            g.node("Pow", [u, g.const("k", k)]),
            g.node("Pow", [v, g.const("dk", degree - k)]),
        ],
    )
    return g.node("Mul", [powers, g.const("binom", comb(degree, k))], "basis")


def _basis(g: GraphWriter, uv: str, degree: int, basis: str) -> str:
    if basis == "pow":
        return pow_basis(g, g.column(uv, 0), g.column(uv, 1), degree)
    k = np.arange(degree + 1, dtype=np.float64)
    exponent = g.node(
        "Gemm",
        [
            g.node("Log", [uv]),
            g.const("k", np.vstack([k, degree - k])),
            g.const("log_binom", log_binomial(degree, k)),
        ],
    )
    return g.node("Exp", [exponent], "basis")


def _square_and_multiply(g: GraphWriter, x: str, n: int) -> str:
    """``x ** n`` by the products of ``bernonnx._core.basis._int_power``, in its order."""
    out, base = None, x
    while n:
        if n & 1:
            out = base if out is None else g.node("Mul", [out, base])
        n >>= 1
        if n:
            base = g.node("Mul", [base, base])
    return g.node("Identity", [out]) if out is not None else g.const("one", 1.0)


def _exp_form(g: GraphWriter, d: str, cal, coef, signs, slope: float) -> str:
    """``eta`` with its tail term in few nodes, for small batches: the polynomial's
    terms at once; ``signs`` times it, (N, 1) or (N, 2) ``[-eta, eta]``.

    On the rows with ``z <= 0`` the basis is ``C(d, k) t^k / (1 + t)^d``, and
    ``(1 + t)^d`` is ``sum_k C(d, k) t^k``; on the others it is the same with ``t^(d
    - k)`` (the mirror image). So with ``T_k = exp(E_k)``, ``E_k = k x`` or ``(d -
    k) x`` (``x = -|z|``), ``eta = sum_k (a_k + c_0 C(d, k)) T_k / sum_k C(d, k)
    T_k``. ``E_k`` is the smaller of ``D (k scale_below)`` and ``D ((d - k)
    (-scale))`` (``D`` the clipped ``s - shift``: one product is ``>= 0``, the other
    ``<= 0``), so two ``Mul`` and one ``Min`` give every exponent without a ``Where``
    on ``z <= 0`` (on a single row a ``Where`` costs three times a product; a
    ``Mul`` into a (2, N, .) tensor and a ``ReduceMin`` were slower from 10 rows).
    The same three nodes give the tail's ``min(D * -scale, 0)`` and ``min(D *
    scale_below, 0)``: ``-|z|`` in one, 0 in the other.
    Then one ``Exp``, one ``MatMul`` for both sums (``signs`` times the numerator),
    one ``Div``, and the tail ``L = Log(1 - .)`` of those two, added by one
    ``Gemm(L, [[slope], [-slope]], eta)``: ``log(1 + |z|)`` times ``slope`` or
    ``-slope``, as Python computes it, plus a zero. 11 nodes where Horner takes
    ``2d``, but ``d + 1`` exponentials a score. The denominator is at least 1 (its
    ``t^0`` term); both sums add non-negative terms but the ``c_0 C(d, k)``, each off
    by a few roundings of itself, ``E_k`` is one rounding from ``k x`` and ``D`` is
    finite (the clip), so no product is ``0 * inf``: within 1e-13 of Python's
    ``eta`` up to degree 100 (measured).
    """
    degree = coef.shape[0] - 1
    k = np.arange(degree + 1, dtype=np.float64)
    scale, scale_below = float(cal.scale_), float(cal.scale_below_)
    slopes = [[*((degree - k) * -scale), -scale, 0.0], [*(k * scale_below), 0.0, scale_below]]
    width = degree + 3 if slope else degree + 1
    slopes = np.asarray(slopes)[:, None, :width]  # two (1, width) rows
    above, below = (
        g.node("Mul", [d, g.const(name, w)]) for name, w in zip("ab", slopes, strict=True)
    )
    exponent = g.node("Min", [above, below])
    if slope:
        parts = [g.scope.get_unique_variable_name(f"{g.prefix}_{v}") for v in ("e", "neg_abs")]
        g.node(
            "Split",
            [exponent, g.const("parts", [degree + 1, 2], TensorProto.INT64)],
            outputs=parts,
            axis=1,
        )
        exponent, tail = parts
    terms = g.node("Exp", [exponent])
    binom = binomial_row(degree)
    num = rise_pair(coef)[0] + coef[0] * binom
    sums = np.hstack([num[:, None] * np.asarray(signs, dtype=np.float64), binom[:, None]])
    both = g.node("MatMul", [terms, g.const("sums", sums)])
    num, den = (g.scope.get_unique_variable_name(f"{g.prefix}_{v}") for v in ("num", "den"))
    g.node(
        "Split",
        [both, g.const("halves", [len(signs), 1], TensorProto.INT64)],
        outputs=[num, den],
        axis=1,
    )
    eta = g.node("Div", [num, den])
    if not slope:
        return eta
    logs = g.node("Log", [g.node("Sub", [g.const("one", [[1.0]]), tail])])
    weights = np.array([[slope], [-slope]]) * np.asarray([signs])
    return g.node("Gemm", [logs, g.const("tail_slopes", weights), eta], "eta_tail")


def _horner_form(g: GraphWriter, d: str, cal, coef, signs, slope: float) -> str:
    """``eta`` with its tail term as ``bernonnx._core.basis.logistic_eta_blocks`` and
    ``bernonnx._core.tail.log_tail_into`` compute them, node for node; ``signs``
    times it, (N, 1) or (N, 2) ``[-eta, eta]``.

    ``-|z|`` and ``z <= 0`` as ``bernonnx._core.transforms.logistic_neg_abs_z_into``
    computes them, ``t = exp(-|z|)``, ``lead = (1 / (1 + t))^d`` by repeated
    squaring, ``t`` flushed below 1e-120, and ``sum_k a_k t^k`` by Horner, ``a`` the
    rises times ``C(d, k)`` for rows with ``z <= 0`` and the same reversed for the
    others, both sums in one (2, N) tensor (half the nodes of two chains). On
    flattened (N,) rows: on (N, 1) tensors onnxruntime broadcasts a (2, 1) constant
    as N spans of one element, up to 30 times slower per node (measured)."""
    flat = g.const("flat", [-1], TensorProto.INT64)
    d = g.node("Reshape", [d, flat])
    above = g.node("Mul", [d, g.const("neg_scale", -float(cal.scale_))])
    below = g.node("Mul", [d, g.const("scale_below", float(cal.scale_below_))])
    lower = g.node("GreaterOrEqual", [above, g.const("zero", 0.0)])
    x = g.node("Min", [above, below])
    t = g.node("Exp", [x], "t")
    big = g.node("Reciprocal", [g.node("Add", [t, g.const("one", 1.0)])])
    # below 1e-120 t contributes nothing visible, and Python flushes it to keep
    # Horner's products out of the subnormals
    flush = g.node("Less", [t, g.const("flush", FLUSH_BELOW)])
    t = g.node("Where", [flush, g.const("zero", 0.0), t])
    degree = coef.shape[0] - 1
    pair = rise_pair(coef)
    horner = g.node("Mul", [t, g.const("a_top", pair[:, degree : degree + 1])])
    for k in range(degree - 1, -1, -1):
        if k < degree - 1:
            horner = g.node("Mul", [horner, t])
        horner = g.node("Add", [horner, g.const("a", pair[:, k : k + 1])])
    rows = [g.node("Gather", [horner, g.const(f"row{i}", i, TensorProto.INT64)]) for i in (0, 1)]
    poly = g.node("Mul", [g.node("Where", [lower, *rows]), _square_and_multiply(g, big, degree)])
    # Sum, not Add: onnxruntime drops x + c for a c that float32 rounds to 0, and the
    # rewrites of GraphWriter.node do not reach into a subgraph
    eta = g.node("Sum", [poly, g.const("c0", coef[0])])
    if slope:
        eta = g.node("Add", [eta, _tail(g, x, lower, slope, shape=())], "eta_tail")
    eta = g.node("Reshape", [eta, g.const("column", [-1, 1], TensorProto.INT64)])
    if len(signs) == 1:
        return eta
    # [-eta, eta]: a product by 1 and -1 is exact; a MatMul over one column, since
    # onnxruntime's Mul broadcasts an (N, 1) by a (1, 2) row by row, 8 times slower
    # (measured at 100,000 rows)
    return g.node("MatMul", [eta, g.const("signs", [signs])])


#: Batches of fewer rows take :func:`_exp_form` (few nodes: onnxruntime spends about
#: 0.3 us a node on a single row), larger ones :func:`_horner_form` (``2d`` nodes, no
#: exponential per term: as fast from about 128 rows at degree 50, twice as fast
#: from 1,000; measured).
SMALL_BATCH = 100


def _logistic_eta(g: GraphWriter, s: str, cal, pair: bool = False) -> str:
    """``eta`` plus the tail term, (N, 1), or ``[-eta, eta]`` (N, 2) with ``pair``, of
    the logistic transform as ``predict_proba`` computes it.

    ``D`` = the clipped ``s - shift``, then the polynomial and the tail term, by
    :func:`_exp_form` on batches of fewer than :data:`SMALL_BATCH` rows and by
    :func:`_horner_form` on the others: an ``If`` on the row count, each branch
    reading ``D`` alone. The branch computes ``-|z|`` and the tail itself, so that
    the one a single row takes has no ``Where`` (on one row a ``Where`` costs three
    times a product) and the other works on flattened rows (on (N, 1) tensors
    onnxruntime broadcasts a scalar N spans of one element at a time, up to 80 times
    slower: measured).

    One shortcut: ``s - shift`` is clipped where ``|z|`` reaches the tail's cap
    (1e100) rather than at 1e300 and then ``-|z|`` at ``-1e100`` (one node fewer):
    ``t`` is 0 either way, and ``log(1 + |z|)`` moves by 2e-16 at most.
    """
    s = rescale_scores(g, s, int(getattr(cal, "score_exponent_", 0)))
    diff = g.node("Sub", [s, g.const("shift", [[float(cal.shift_)]])])
    scale, scale_below = float(cal.scale_), float(cal.scale_below_)
    with np.errstate(divide="ignore", over="ignore"):
        top = min(MAX_DIFF, TAIL_CAP / scale) if scale > 0 else MAX_DIFF
        bottom = min(MAX_DIFF, TAIL_CAP / scale_below) if scale_below > 0 else MAX_DIFF
    d = g.node("Clip", [diff, g.const("neg_max", -bottom), g.const("max", top)])
    coef = np.asarray(cal.coef_, dtype=np.float64)
    signs = [-1.0, 1.0] if pair else [1.0]
    # the row count of d, the deepest tensor the branches read: skl2onnx orders
    # nodes by their inputs' depth and cannot see what a subgraph reads
    rows = g.node("Size", [d])
    small = g.node("Less", [rows, g.const("small_batch", SMALL_BATCH, TensorProto.INT64)])
    slope = float(getattr(cal, "tail_slope_", 0.0))
    return g.if_else(
        small,
        lambda body: _exp_form(body, d, cal, coef, signs, slope),
        lambda body: _horner_form(body, d, cal, coef, signs, slope),
        shape=[None, len(signs)],
    )


def emit_bernstein(
    g: GraphWriter, scores: str, cal, *, pair: bool = False, basis: str = "exp"
) -> str:
    """Emit the calibrator on the (N, 1) float64 ``scores``.

    Returns the (N, 1) float64 probability of the positive class, or with
    ``pair=True`` the (N, 2) ``[1 - p, p]``, built in the same two nodes as
    ``p`` alone: ``Sigmoid(Gemm(B, [-rise, rise], [-c0, c0])) = [s(-eta), s(eta)]``
    (``Clip`` of ``[1 - eta, eta]`` for the squared loss). ``s(-eta)`` and
    ``1 - s(eta)`` differ by rounding only (< 3e-16).
    """
    if basis not in BASES:
        raise NotImplementedError(f"basis must be one of {BASES}, got {basis!r}")
    coef = np.asarray(cal.coef_, dtype=np.float64)
    degree = coef.shape[0] - 1
    rise = (coef - coef[0]).reshape(degree + 1, 1)
    c0 = np.array([coef[0]])
    if pair:
        # [-eta, eta] for the sigmoid; [1 - eta, eta] for the clip
        rise = np.hstack([-rise, rise])
        c0 = (
            np.array([-coef[0], coef[0]])
            if cal.loss == "log"
            else np.array([1 - coef[0], coef[0]])
        )
    if np.ptp(coef) == 0:
        # constant scores were fitted: the map is the constant coef[0]; the
        # transform has slope 0 and must not meet an infinite score (inf * 0)
        zero = g.const("zero", 0.0)
        eta = g.node("Add", [g.node("Clip", [scores, zero, zero]), g.const("c0", c0[None, :])])
    elif basis == "exp" and cal.score_transform == "logistic":
        # [-eta, eta] for the sigmoid; [1 - eta, eta] for the clip (negation is exact)
        eta = _logistic_eta(g, scores, cal, pair)
        if pair and cal.loss != "log":
            eta = g.node("Add", [eta, g.const("one_zero", [[1.0, 0.0]])])
    else:
        uv, z = _uv(g, scores, cal)
        b = _basis(g, uv, degree, basis)
        eta = g.node("Gemm", [b, g.const("rise", rise), g.const("c0", c0)], "eta")
        slope = float(getattr(cal, "tail_slope_", 0.0))
        if slope and z is not None:
            lower = g.node("LessOrEqual", [z, g.const("zero", 0.0)])
            neg_abs_z = g.node("Neg", [g.node("Abs", [z])])
            capped = g.node("Max", [neg_abs_z, g.const("neg_tail_cap", -TAIL_CAP)])
            tail = _tail(g, capped, lower, slope)
            if pair:
                tail = g.node("Mul", [tail, g.const("pm_tail", [[-1.0, 1.0]])])
            eta = g.node("Add", [eta, tail], "eta_tail")
    if cal.loss == "log":
        return g.node("Sigmoid", [eta], "p")
    return g.node("Clip", [eta, g.const("zero", 0.0), g.const("one", 1.0)], "p")
