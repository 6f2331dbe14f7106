"""Class priors: their checks, Bayes' rule for a change of priors, and the EM estimate.

A model calibrated where the classes have priors ``pi`` gives ``p(k | x)``. Where the
class-conditional densities ``p(x | k)`` stay the same and only the priors move to
``pi'`` (prior shift, label shift), Bayes' rule gives

    p'(k | x) = p(k | x) w_k / sum_j p(j | x) w_j,     w = pi' / pi,

and ``pi'`` itself is the maximum-likelihood mixture weight of unlabeled target rows,
found by the EM fixed point of Saerens, Latinne & Decaestecker (2002):

    pi'_(s+1) = mean_i p_s(k | x_i),   p_s the probabilities adapted to pi'_s.

:func:`adapt_proba` is the formula ``PriorShiftAdapter.predict_proba`` evaluates and the
ONNX converter (``converters/shift.py``) emits, node for node: ``w = target / train``,
``q = p * w``, ``q / sum(q)`` (uniform where the sum is 0).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

__all__ = [
    "PRIOR_SUM_TOLERANCE",
    "SMALLEST_DIVISOR_PRIOR",
    "adapt_proba",
    "add_pseudo_counts",
    "check_priors",
    "class_prior",
    "em_priors",
    "kkt_residual",
    "likelihood_ratios",
    "likelihood_slope",
    "posterior_mean_priors",
    "prior_covariance",
    "shrink_by_likelihood",
    "shrink_priors",
]

#: Rows per block in :func:`prior_covariance` and :func:`likelihood_slope`
_COVARIANCE_BLOCK = 65_536

#: How far from 1 a user's priors may sum (float rounding of typed-in decimals).
PRIOR_SUM_TOLERANCE = 1e-6

#: Least prior the probabilities may be divided by: the smallest normal float64, whose
#: reciprocal is finite (a subnormal train prior overflowed ``proba / train_prior``).
SMALLEST_DIVISOR_PRIOR = float(np.finfo(np.float64).tiny)


def check_priors(priors, n_classes: int, name: str, least: float = 0.0) -> np.ndarray:
    """``priors`` as a float64 (n_classes,) array of positive values summing to 1.

    Raises a ``ValueError`` naming ``name``, what was expected and what came: the wrong
    length, a value that is not finite or not positive (a zero prior makes its class
    impossible forever: no reweighting brings it back), one below ``least``, or a sum
    off 1 by more than :data:`PRIOR_SUM_TOLERANCE` (never renormalised silently: a sum
    of 1.1 is a typo). Priors the probabilities are divided by (a ``train_prior``) pass
    ``least=SMALLEST_DIVISOR_PRIOR``.
    """
    try:
        values = np.asarray(priors, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be an array of {n_classes} class priors, got {priors!r}"
        ) from None
    if values.shape != (n_classes,):
        raise ValueError(
            f"{name} must hold one prior per class ({n_classes} values, in the order of "
            f"classes_), got shape {values.shape}"
        )
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(
            f"{name} must be positive and finite (a zero prior rules its class out for "
            f"good), got {values.tolist()}"
        )
    if np.any(values < least):
        raise ValueError(
            f"{name} must be at least {least:.17g} (the probabilities are divided by it, "
            f"and 1 / prior must stay finite), got {values.tolist()}"
        )
    total = float(values.sum())
    if abs(total - 1.0) > PRIOR_SUM_TOLERANCE:
        raise ValueError(f"{name} must sum to 1, got {values.tolist()} (sum {total:.10g})")
    return values / total


def class_prior(y_enc, n_classes: int, sample_weight=None) -> np.ndarray:
    """Weighted class frequencies of encoded labels ``0..n_classes-1`` (weights
    equal repetition: a weight of 2 counts the row twice)."""
    weights = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    counts = np.bincount(np.asarray(y_enc), weights=weights, minlength=n_classes)
    return counts.astype(np.float64) / counts.sum()


def adapt_proba(proba, train_prior, target_prior) -> np.ndarray:
    """Probabilities ``proba`` (N, K) for the priors ``train_prior`` moved to
    ``target_prior`` ((K,), or (N, K): one target per row), by Bayes' rule.

    ``w = target / train``, ``q = proba * w``, each row ``q / sum(q)``; a row whose
    sum is 0 becomes uniform, as ``CalibratedClassifier`` does for one-vs-rest rows.
    The ONNX graph computes the same operations in the same order.
    """
    proba = np.asarray(proba, dtype=np.float64)
    w = np.asarray(target_prior, dtype=np.float64) / np.asarray(train_prior, dtype=np.float64)
    q = proba * w
    total = q.sum(axis=1, keepdims=True)
    uniform = np.full_like(q, 1.0 / q.shape[1])
    return np.divide(q, total, out=uniform, where=total > 0)


def _em_eval(scaled, prior, weights_t, total):
    """Mean log likelihood and gradient of every row of ``prior`` (B, K) at once.

    ``scaled`` is ``proba / train_prior`` (N, K), ``weights_t`` (N, B). The likelihood of
    row ``i`` is ``mix_i = sum_k scaled_ik prior_k``; returns ``loglik`` (B,), the weighted
    mean of ``log mix_i``, and ``grad`` (B, K), its gradient ``mean_i scaled_ik / mix_i``.
    The EM map is ``prior * grad`` (its rows sum to 1: ``sum_k prior_k grad_k = 1``).
    """
    mix = scaled @ prior.T  # (N, B)
    positive = mix > 0
    share = np.divide(weights_t, mix, out=np.zeros_like(mix), where=positive)
    grad = (share.T @ scaled) / total[:, None]
    # a row no class explains (all probabilities 0) adds nothing, as in the EM step
    logs = np.log(mix, out=np.zeros_like(mix), where=positive)
    loglik = np.einsum("nb,nb->b", weights_t, logs) / total
    return loglik, grad


def _em_map(prior, grad, min_prior):
    """The EM step from ``prior`` given its gradient: ``prior * grad``, floored at
    ``min_prior`` and renormalised (a class absent from the rows keeps a ratio later
    steps can move)."""
    new = np.maximum(prior * grad, min_prior)
    return new / new.sum(axis=1, keepdims=True)


def kkt_residual(prior, grad, min_prior) -> np.ndarray:
    """How far ``prior`` (B, K) is from a maximum of the likelihood on the floored
    simplex, from its gradient ``grad`` (B, K): the largest violation of the KKT
    conditions. A free class (above the floor) must have the gradient ``lam`` every
    free class shares; a class at the floor may have less, never more. ``lam`` is the
    free classes' prior-weighted mean gradient (1 when no class is at the floor).
    """
    # the floored EM map's fixed point puts a class at min_prior / S, S slightly above 1
    at_floor = prior <= 1.5 * min_prior
    free = ~at_floor
    mass = np.where(free, prior, 0.0)
    lam = (mass * grad).sum(axis=1, keepdims=True) / np.maximum(
        mass.sum(axis=1, keepdims=True), 1e-300
    )
    gap = grad - lam
    viol = np.where(free, np.abs(gap), np.maximum(gap, 0.0))
    return viol.max(axis=1)


def em_priors(
    proba,
    train_prior,
    *,
    weights=None,
    start=None,
    tol: float = 1e-8,
    max_iter: int = 1000,
    min_prior: float = 1e-6,
    accelerate: bool = True,
):
    """The EM estimate of the target priors (Saerens, Latinne & Decaestecker 2002).

    Parameters
    ----------
    proba : ndarray of shape (N, K)
        Calibrated probabilities of the target rows (calibrated for ``train_prior``).
    train_prior : ndarray of shape (K,)
    weights : ndarray of shape (N,) or (B, N), default=None
        Row weights; B rows of weights run B estimates side by side (the bootstrap).
    start : ndarray of shape (K,) or (B, K), default=None
        First iterate; ``train_prior`` if None.
    tol : float
        Stop when the likelihood's gradient satisfies the optimality (KKT) conditions on
        the floored simplex to ``tol`` (:func:`kkt_residual`): the free classes'
        gradients agree to ``tol`` and no class at the floor has a larger one. A step
        size can be small far from the maximum (a class near the floor moves by its
        prior times its gradient); the gradient cannot.
    max_iter : int
        Cap on the evaluations of the likelihood and its gradient (one per EM step).
    min_prior : float
        Floor on every prior, applied after each step and followed by renormalising:
        a class absent from the target rows cannot make a ratio ``0 / pi`` that no
        later step can move.
    accelerate : bool, default=True
        SQUAREM (Varadhan & Roland 2008) with a likelihood safeguard: two EM steps give
        the direction and length of a jump along the EM path, and the jump (followed by
        one EM step) is kept only where its likelihood is at least that of the two EM
        steps; elsewhere the plain EM step is taken. Every iterate's likelihood is
        therefore at least EM's own after as many steps, and the fixed point and the
        stopping rule are EM's.

    Returns
    -------
    prior : ndarray of shape (K,) or (B, K)
    n_iter : int
        Evaluations of the likelihood's gradient (one per EM step).
    residual : float
        The largest KKT residual at the returned priors (below ``tol`` when converged).
    """
    proba = np.asarray(proba, dtype=np.float64)
    train_prior = np.asarray(train_prior, dtype=np.float64)
    scaled = proba / train_prior
    n = proba.shape[0]
    single = weights is None or np.ndim(weights) == 1
    weights = np.ones((1, n)) if weights is None else np.atleast_2d(weights).astype(np.float64)
    total = weights.sum(axis=1)
    weights_t = np.ascontiguousarray(weights.T)  # (N, B): the layout the step reads
    prior = train_prior if start is None else np.asarray(start, dtype=np.float64)
    prior = np.broadcast_to(prior, (weights.shape[0], proba.shape[1])).copy()

    _, grad = _em_eval(scaled, prior, weights_t, total)
    residual = kkt_residual(prior, grad, min_prior)
    n_iter = 1
    while n_iter < max_iter:
        # only the rows (resamples) not yet at their maximum take further steps
        active = np.flatnonzero(residual >= tol)
        if not active.size:
            break
        every = active.size == len(prior)
        w_t = weights_t if every else weights_t[:, active]
        tot = total if every else total[active]
        theta, g = prior[active], grad[active]
        one = _em_map(theta, g, min_prior)
        if accelerate and n_iter + 3 <= max_iter:
            # SQUAREM: two EM steps give the direction and the step length of a jump
            _, grad_one = _em_eval(scaled, one, w_t, tot)
            two = _em_map(one, grad_one, min_prior)
            r, v = one - theta, two - 2.0 * one + theta
            norm_v = np.linalg.norm(v, axis=1, keepdims=True)
            alpha = -np.linalg.norm(r, axis=1, keepdims=True) / np.where(norm_v > 0, norm_v, 1.0)
            alpha = np.where(norm_v > 0, np.minimum(alpha, -1.0), -1.0)
            jump = np.maximum(theta - 2.0 * alpha * r + alpha**2 * v, min_prior)
            jump = jump / jump.sum(axis=1, keepdims=True)
            # the safeguard: a jump whose likelihood falls below two EM steps' is dropped
            loglik_two, grad_two = _em_eval(scaled, two, w_t, tot)
            loglik_jump, grad_jump = _em_eval(scaled, jump, w_t, tot)
            keep = (loglik_jump >= loglik_two)[:, None]
            base = np.where(keep, jump, two)
            theta = _em_map(base, np.where(keep, grad_jump, grad_two), min_prior)
            n_iter += 3
        else:
            theta = one
        _, g = _em_eval(scaled, theta, w_t, tot)
        prior[active], grad[active] = theta, g
        residual[active] = kkt_residual(theta, g, min_prior)
        n_iter += 1
    return (prior[0] if single else prior), n_iter, float(residual.max())


def _share_blocks(proba, train_prior, prior, weights=None):
    """``(share, w, explained)`` for blocks of at most ``_COVARIANCE_BLOCK`` rows, so
    that the temporaries stay bounded whatever the rows: ``share`` the (block, K)
    ``l_ik / l_i`` with ``l_ik = p(k | x_i) / train_prior_k`` and
    ``l_i = sum_k l_ik prior_k`` (0 in a row no class explains, ``l_i = 0``), ``w`` the
    block's weights (None without ``weights``), ``explained`` where ``l_i > 0``. The
    gradient of each row's log likelihood in the priors, which :func:`prior_covariance`
    and :func:`likelihood_slope` both sum."""
    proba = np.asarray(proba, dtype=np.float64)
    train_prior = np.asarray(train_prior, dtype=np.float64)
    prior = np.asarray(prior, dtype=np.float64)
    weights = None if weights is None else np.asarray(weights, dtype=np.float64)
    for start in range(0, len(proba), _COVARIANCE_BLOCK):
        rows = slice(start, start + _COVARIANCE_BLOCK)
        scaled = proba[rows] / train_prior  # (block, K)
        mix = scaled @ prior
        explained = mix > 0
        share = np.zeros_like(scaled)
        np.divide(scaled, mix[:, None], out=share, where=explained[:, None])
        yield share, None if weights is None else weights[rows], explained


def prior_covariance(proba, train_prior, prior, weights=None) -> np.ndarray:
    """Asymptotic covariance of the maximum-likelihood priors ``prior`` (K, K).

    The inverse of the observed Fisher information of the mixture log likelihood
    ``sum_i w_i log sum_k p(k | x_i) prior_k / train_prior_k``, taken on the simplex
    (directions summing to 0), as in the asymptotics of the EM estimate (Saerens,
    Latinne & Decaestecker 2002; Alexandari, Kundaje & Shrikumar 2020). A class a
    direction without information moves (its information 0 to rounding) gets an
    infinite variance on the diagonal.
    """
    k = np.shape(proba)[1]
    info = np.zeros((k, k))
    for grad, w, _ in _share_blocks(proba, train_prior, prior, weights):
        info += (grad if w is None else grad * w[:, None]).T @ grad
    basis = np.eye(k)[:, :-1] - np.eye(k)[:, -1:]  # (K, K-1): directions summing to 0
    values, vectors = np.linalg.eigh(basis.T @ info @ basis)
    # a direction the rows carry no information on (probabilities that cannot tell the
    # classes apart: a model predicting its calibration prior on every row) has an
    # infinite variance, not the 0 a pseudo-inverse gives it, which depended on the
    # classes' order and read as certainty
    null = values <= max(float(values.max(initial=0.0)), 0.0) * (k - 1) * np.finfo(float).eps
    inverse = np.divide(1.0, values, out=np.zeros_like(values), where=~null)
    spread = basis @ vectors  # (K, K-1): each direction in the classes' coordinates
    covariance = (spread * inverse) @ spread.T
    # the classes a null direction moves (unit vectors: rounding is ~1e-16)
    moved = (spread[:, null] ** 2).sum(axis=1) > 1e-12
    covariance[moved, moved] = np.inf
    return covariance


def shrink_priors(prior, train_prior, variance, strength: float = 2.0) -> np.ndarray:
    """The priors ``prior`` shrunk toward ``train_prior`` by their sampling noise.

    Each log ratio ``d_k = log(prior_k / train_prior_k)``, of variance ``v_k``
    (delta method: ``var(prior_k) / prior_k**2``), becomes ``lambda_k d_k`` with the
    positive-part empirical-Bayes factor ``lambda_k = max(0, 1 - strength v_k / d_k**2)``
    (James & Stein 1961; Efron & Morris 1973: the normal-normal posterior mean with
    the prior variance estimated by ``max(0, d_k**2 - v_k)``), then renormalised. A
    move within its noise is dropped, a move many standard errors away is kept;
    ``strength=0`` returns ``prior``.
    """
    prior = np.asarray(prior, dtype=np.float64)
    train_prior = np.asarray(train_prior, dtype=np.float64)
    if strength == 0:
        return prior
    d = np.log(prior / train_prior)
    v = np.asarray(variance, dtype=np.float64) / prior**2
    d2 = d * d
    lam = np.where(d2 > 0, np.maximum(0.0, 1.0 - strength * v / np.where(d2 > 0, d2, 1.0)), 0.0)
    out = train_prior * np.exp(lam * d)
    return out / out.sum()


def likelihood_ratios(proba, train_prior, prior, weights=None) -> np.ndarray:
    """Per class, the likelihood-ratio statistic of the move from ``train_prior`` to
    ``prior`` (K,): ``2 sum_i w_i [log l_i(prior) - log l_i(prior^(k))]``, where
    ``prior^(k)`` puts class ``k`` back at its training prior and rescales the others,
    and ``l_i(pi) = sum_j p(j | x_i) pi_j / train_prior_j`` (weights ``w`` count rows).

    Unlike a Fisher variance it stays right at the boundary: a class the target rows
    do not hold at all (EM at the floor) has a huge statistic, not a huge variance.
    """
    proba = np.asarray(proba, dtype=np.float64)
    train_prior = np.asarray(train_prior, dtype=np.float64)
    prior = np.asarray(prior, dtype=np.float64)
    k = len(prior)
    back = np.tile(prior, (k, 1))
    for j in range(k):
        rest = np.arange(k) != j
        back[j, rest] *= (1.0 - train_prior[j]) / (1.0 - prior[j])
        back[j, j] = train_prior[j]
    w = np.ones((1, len(proba))) if weights is None else np.atleast_2d(weights)
    w = np.ascontiguousarray(np.asarray(w, dtype=np.float64).T)
    total = w.sum(axis=0)
    at_prior, _ = _em_eval(proba / train_prior, prior[None], w, total)
    moved_back, _ = _em_eval(proba / train_prior, back, w[:, :1], total[:1])
    return np.maximum(2.0 * total[0] * (at_prior[0] - moved_back), 0.0)


def shrink_by_likelihood(prior, train_prior, ratios, strength: float = 2.0) -> np.ndarray:
    """The priors ``prior`` shrunk toward ``train_prior`` by their evidence.

    Each log ratio ``d_k = log(prior_k / train_prior_k)`` becomes ``lambda_k d_k`` with
    ``lambda_k = max(0, 1 - strength / LR_k)``, ``LR_k`` the class's likelihood-ratio
    statistic (:func:`likelihood_ratios`), then the priors are renormalised. Where the
    likelihood is quadratic ``LR_k = d_k**2 / v_k`` and this is the positive-part
    empirical-Bayes (James-Stein) factor of :func:`shrink_priors`; a move the data are
    sure of (``LR_k`` in the hundreds: a class absent from thousands of rows) is kept
    almost whole, down to the floor. ``strength=0`` returns ``prior``.
    """
    prior = np.asarray(prior, dtype=np.float64)
    train_prior = np.asarray(train_prior, dtype=np.float64)
    if strength == 0:
        return prior
    ratios = np.asarray(ratios, dtype=np.float64)
    lam = np.where(
        ratios > 0, np.maximum(0.0, 1.0 - strength / np.where(ratios > 0, ratios, 1.0)), 0.0
    )
    out = train_prior * np.exp(lam * np.log(prior / train_prior))
    return out / out.sum()


def add_pseudo_counts(prior, n_rows: float, pseudo_count: float = 1.0) -> np.ndarray:
    """The priors ``prior`` estimated from ``n_rows`` target rows, with ``pseudo_count``
    rows added to each class's expected count: ``(n_rows prior + a) / (n_rows + K a)``.

    The posterior mean of the priors under a symmetric Dirichlet(``a``) prior, given the
    expected counts ``n_rows prior`` (Laplace's rule of succession at ``a=1``, Jeffreys'
    prior at 0.5). It bounds every prior away from 0 by what ``n_rows`` rows can tell: a
    class EM sends to the floor keeps ``a / (n_rows + K a)``, not ``1e-6``, so the few
    target rows of a class EM missed cost a bounded log loss, while a class truly absent
    from thousands of rows still gets a prior below one row's share. ``pseudo_count=0``
    returns ``prior``.
    """
    prior = np.asarray(prior, dtype=np.float64)
    if pseudo_count == 0:
        return prior
    return (n_rows * prior + pseudo_count) / (n_rows + len(prior) * pseudo_count)


def likelihood_slope(proba, train_prior, prior, weights=None) -> np.ndarray:
    """Per class, the slope of the target rows' summed log likelihood at ``prior`` (K,)
    along the move of mass to that class from the others in proportion,
    ``sum_i w_i (l_ik / l_i - 1)`` with ``l_ik = p(k | x_i) / train_prior_k`` and
    ``l_i = sum_k l_ik prior_k``.

    At the maximum it is 0 for every class above the floor; for a class EM holds at
    the floor it is negative, and the steeper, the surer the rows are that the class
    is absent (it does not shrink with the rows' number as a standard error does).
    """
    out = np.zeros(np.shape(proba)[1])
    for share, w, explained in _share_blocks(proba, train_prior, prior, weights):
        # a row no class explains adds nothing, as in the EM step
        share -= explained[:, None]
        out += share.sum(axis=0) if w is None else w @ share
    return out


def posterior_mean_priors(prior, se, slope=None, target_variance=None) -> np.ndarray:
    """Each prior's posterior mean given its estimate ``prior`` (K,) and the estimate's
    standard error ``se`` (K,), under a flat prior on ``[0, 1]``, then renormalised.

    The target rows' log likelihood is taken quadratic about the estimate: with
    ``slope`` ``g_k`` (:func:`likelihood_slope`, 0 above the floor) and curvature
    ``1 / target_variance`` ``v_k``, its unconstrained maximum is
    ``mu_k = prior_k + g_k v_k`` (below 0 for a class held at the floor by a steep
    likelihood); the posterior of ``pi_k`` is then the normal of mean ``mu_k`` and
    standard deviation ``se_k`` (which may add other errors to ``sqrt(v_k)``: the
    calibration rows') truncated to ``[0, 1]``, whose mean is

        mu_k + se_k (phi(a) - phi(b)) / (Phi(b) - Phi(a)),
        a = -mu_k / se_k,  b = (1 - mu_k) / se_k.

    An estimate many standard errors inside ``(0, 1)`` is kept; one at the floor that
    the data cannot tell from an interior value (a class the probabilities barely
    separate: a large ``se``, a flat likelihood) moves inward by about ``0.8 se``, so
    the rows of a class EM wrongly put at 0 are not adapted to a near-zero
    probability; one at the floor the rows are sure of (a steep slope) stays near 0.
    ``se=0`` returns ``prior``.
    """
    prior = np.asarray(prior, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    center = prior
    if slope is not None:
        step = np.minimum(np.asarray(slope, dtype=np.float64), 0.0)
        variance = np.asarray(target_variance, dtype=np.float64)
        # a move below the floor of at most 1e300: far enough for the tail's mean of 0,
        # without an inf (or a NaN from a variance of 0) for a steep slope
        with np.errstate(over="ignore"):
            move = np.multiply(
                step, variance, out=np.zeros_like(center), where=(step < 0) & (variance > 0)
            )
        center = prior + np.maximum(move, -1e300)
    # an infinite standard error (calibration_rows far below 1) is a flat posterior:
    # its mean 1/2
    usable = (se > 0) & np.isfinite(se)
    safe = np.where(usable, se, 1.0)
    with np.errstate(over="ignore"):
        # a centre many standard errors out overflows a, b or their squares to inf: the
        # limits the formulas take (a density and a tail mean of 0)
        a, b = -center / safe, (1.0 - center) / safe
        # the truncated normal's mean, through the Mills ratio where a mass underflows
        density = (np.exp(-0.5 * a * a) - np.exp(-0.5 * b * b)) / np.sqrt(2.0 * np.pi)
    # from the nearer tail, so that a center far below 0 keeps its digits
    mass = np.where(a > 0, ndtr(-a) - ndtr(-b), ndtr(b) - ndtr(a))
    inside = mass > 1e-300
    tail = safe / np.maximum(a, 1.0)  # far below 0: mean about se**2 / |center|
    mean = np.where(inside, center + safe * density / np.where(inside, mass, 1.0), tail)
    out = np.where(usable, np.clip(mean, 0.0, 1.0), np.where(se > 0, 0.5, prior))
    total = out.sum()
    # every mean underflowed to 0 (subnormal standard errors about 0): the estimate
    return out / total if total > 0 else prior / prior.sum()
