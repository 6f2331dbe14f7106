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

__all__ = [
    "PRIOR_SUM_TOLERANCE",
    "adapt_proba",
    "check_priors",
    "class_prior",
    "em_priors",
    "prior_covariance",
    "shrink_priors",
]

#: How far from 1 a user's priors may sum (float rounding of typed-in decimals).
PRIOR_SUM_TOLERANCE = 1e-6


def check_priors(priors, n_classes: int, name: str) -> np.ndarray:
    """``priors`` as a float64 (n_classes,) array of positive values summing to 1.

    Raises a ``ValueError`` naming ``name``, what was expected and what came: the wrong
    length, a value that is not finite or not positive (a zero prior makes its class
    impossible forever: no reweighting brings it back), or a sum off 1 by more than
    :data:`PRIOR_SUM_TOLERANCE` (never renormalised silently: a sum of 1.1 is a typo).
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


def _em_step(proba, train_prior, prior, weights_t, total, min_prior):
    """One EM step for every row of ``prior`` (B, K) at once; ``weights_t`` (N, B)."""
    ratio = prior / train_prior  # (B, K)
    denom = proba @ ratio.T  # (N, B): sum_j p(j|x) w_j
    share = np.divide(weights_t, denom, out=np.zeros_like(denom), where=denom > 0)
    new = (share.T @ proba) * ratio / total[:, None]
    new = np.maximum(new, min_prior)
    return new / new.sum(axis=1, keepdims=True)


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
        Stop when no prior moves by more than ``tol`` in one step.
    max_iter : int
        Iteration cap.
    min_prior : float
        Floor on every prior, applied after each step and followed by renormalising:
        a class absent from the target rows cannot make a ratio ``0 / pi`` that no
        later step can move.
    accelerate : bool, default=True
        SQUAREM (Varadhan & Roland 2008): every third EM step starts from a jump
        along the direction of the two before, which reaches EM's fixed point in far
        fewer steps where EM crawls (overlapping classes, a prior near the floor). The
        fixed point, and the stopping rule (an EM step moving no prior by ``tol``),
        are EM's.

    Returns
    -------
    prior : ndarray of shape (K,) or (B, K)
    n_iter : int
        EM steps taken (evaluations of the EM map).
    change : float
        The largest move in the last step (below ``tol`` when converged).
    """
    proba = np.asarray(proba, dtype=np.float64)
    train_prior = np.asarray(train_prior, dtype=np.float64)
    n = proba.shape[0]
    single = weights is None or np.ndim(weights) == 1
    weights = np.ones((1, n)) if weights is None else np.atleast_2d(weights).astype(np.float64)
    total = weights.sum(axis=1)
    weights_t = np.ascontiguousarray(weights.T)  # (N, B): the layout the step reads
    prior = train_prior if start is None else np.asarray(start, dtype=np.float64)
    prior = np.broadcast_to(prior, (weights.shape[0], proba.shape[1])).copy()

    def step(theta):
        return _em_step(proba, train_prior, theta, weights_t, total, min_prior)

    change, n_iter = np.inf, 0
    while n_iter < max_iter:
        if accelerate and n_iter + 3 <= max_iter:
            # SQUAREM: two EM steps give the direction and the step length of a jump
            # along the EM path; one more EM step from the jump keeps it stable
            one = step(prior)
            two = step(one)
            r, v = one - prior, two - 2.0 * one + prior
            norm_v = np.linalg.norm(v, axis=1, keepdims=True)
            alpha = -np.linalg.norm(r, axis=1, keepdims=True) / np.where(norm_v > 0, norm_v, 1.0)
            alpha = np.where(norm_v > 0, np.minimum(alpha, -1.0), -1.0)
            jump = prior - 2.0 * alpha * r + alpha**2 * v
            jump = np.maximum(jump, min_prior)
            jump = jump / jump.sum(axis=1, keepdims=True)
            new = step(jump)
            change = float(np.max(np.abs(new - jump)))
            n_iter += 3
        else:
            new = step(prior)
            change = float(np.max(np.abs(new - prior)))
            n_iter += 1
        prior = new
        if change < tol:
            break
    return (prior[0] if single else prior), n_iter, change


def prior_covariance(proba, train_prior, prior, weights=None) -> np.ndarray:
    """Asymptotic covariance of the maximum-likelihood priors ``prior`` (K, K).

    The inverse of the observed Fisher information of the mixture log likelihood
    ``sum_i w_i log sum_k p(k | x_i) prior_k / train_prior_k``, taken on the simplex
    (directions summing to 0), as in the asymptotics of the EM estimate (Saerens,
    Latinne & Decaestecker 2002; Alexandari, Kundaje & Shrikumar 2020).
    """
    proba = np.asarray(proba, dtype=np.float64)
    scaled = proba / np.asarray(train_prior, dtype=np.float64)  # (N, K)
    mix = scaled @ np.asarray(prior, dtype=np.float64)
    grad = np.divide(scaled, mix[:, None], out=np.zeros_like(scaled), where=mix[:, None] > 0)
    w = np.ones(len(proba)) if weights is None else np.asarray(weights, dtype=np.float64)
    info = (grad * w[:, None]).T @ grad  # (K, K)
    k = proba.shape[1]
    basis = np.eye(k)[:, :-1] - np.eye(k)[:, -1:]  # (K, K-1): directions summing to 0
    reduced = basis.T @ info @ basis
    return basis @ np.linalg.pinv(reduced) @ basis.T


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
