"""The recalibration maps behind :func:`bernonnx.metrics.log_loss_decomposition`.

Each takes the clipped log-probabilities ``z`` (n, K) of the predictions (binary:
``(log(1 - p), log p)``), the class index of each row and the row weights, and returns the
log loss after the map and the map's fitted parameters.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax

from bernonnx.calibrators.temperature import _fit_inverse_temperature

#: the maps ``log_loss_decomposition`` offers, in the order its docstring gives them
METHODS = ("affine", "temperature", "monotone")
#: folds of the out-of-fold monotone map
N_FOLDS = 5


def _loss_of(logq: np.ndarray, target: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean of ``-log q_{i, y_i}`` for the log-probabilities ``logq``."""
    return float(-np.sum(w * logq[np.arange(logq.shape[0]), target]) / w.sum())


def temperature(z: np.ndarray, target: np.ndarray, w: np.ndarray) -> tuple[float, dict]:
    """``softmax(beta z)`` at the best ``beta >= 0``, fitted on the rows it is scored on."""
    beta = _fit_inverse_temperature(z, target, w)
    loss = _loss_of(log_softmax(beta * z, axis=1), target, w)
    return loss, {"temperature": float("inf") if beta == 0.0 else 1.0 / beta}


def _affine_objective(theta: np.ndarray, z: np.ndarray, onehot: np.ndarray, w: np.ndarray):
    """Loss, gradient and Hessian of ``softmax(beta z + b)`` in ``theta = (beta, b_1..)``.

    ``b_0 = 0``: adding a constant to every class's bias changes nothing, so it is fixed.
    The derivatives are those of a multinomial logistic regression whose features are
    ``z_k`` for ``beta`` and the indicator of class ``k`` for ``b_k``.
    """
    s = theta[0] * z
    s[:, 1:] += theta[1:]
    logq = log_softmax(s, axis=1)
    q = np.exp(logq)
    total = w.sum()
    loss = -np.sum(w[:, None] * onehot * logq) / total
    qz = np.sum(q * z, axis=1)  # E_q[z], the mean feature of beta
    grad = np.empty_like(theta)
    grad[0] = np.sum(w * (qz - np.sum(onehot * z, axis=1))) / total
    grad[1:] = w @ (q[:, 1:] - onehot[:, 1:]) / total
    hess = np.empty((theta.size, theta.size))
    hess[0, 0] = np.sum(w * (np.sum(q * z * z, axis=1) - qz * qz)) / total
    hess[0, 1:] = hess[1:, 0] = w @ (q[:, 1:] * (z[:, 1:] - qz[:, None])) / total
    qw = q[:, 1:] * w[:, None]
    hess[1:, 1:] = (np.diag(qw.sum(axis=0)) - q[:, 1:].T @ qw) / total
    return loss, grad, hess


def affine(z: np.ndarray, target: np.ndarray, w: np.ndarray) -> tuple[float, dict]:
    """``softmax(beta z + b)`` at the best ``beta`` and class biases ``b``, in sample.

    Binary, this is Platt scaling on the logit (``sigmoid(beta logit(p) + b)``); with more
    classes, temperature scaling plus one bias per class, which moves every class's base
    rate (a shift the temperature alone cannot see). The loss is convex in
    ``(beta, b)``; Newton's method with a trust region (scipy's ``trust-exact``) from the
    predictions themselves (``beta = 1``, ``b = 0``).
    """
    k = z.shape[1]
    onehot = np.eye(k)[target]
    cache: dict = {}

    def parts(theta):
        key = theta.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = _affine_objective(theta, z, onehot, w)
        return cache[key]

    start = np.zeros(k)
    start[0] = 1.0
    result = minimize(
        lambda t: parts(t)[0],
        start,
        jac=lambda t: parts(t)[1],
        hess=lambda t: parts(t)[2],
        method="trust-exact",
        options={"gtol": 1e-10, "maxiter": 200},
    )
    theta = result.x
    s = theta[0] * z
    s[:, 1:] += theta[1:]
    # the starting point is the predictions themselves: never report a worse map than them
    loss = min(_loss_of(log_softmax(s, axis=1), target, w), _loss_of(z, target, w))
    beta = float(theta[0])
    bias = theta[1:] if k > 2 else float(theta[1])
    return loss, {"temperature": float("inf") if beta == 0.0 else 1.0 / beta, "bias": bias}


def monotone(z: np.ndarray, target: np.ndarray, w: np.ndarray) -> tuple[float, dict]:
    """A flexible monotone map, each row scored by the map fitted on the other folds.

    Binary: :class:`bernonnx.BernsteinCalibrator` on the logit; more classes:
    :class:`bernonnx.TemperatureBernsteinCalibrator` on the log-probabilities. Rows go to
    ``N_FOLDS`` folds by position (row ``i`` to fold ``i mod N_FOLDS``), so the split is
    deterministic; out of fold, the loss after the map is not optimistic, and can exceed
    the predictions' own.
    """
    from bernonnx.calibrators.bernstein import BernsteinCalibrator
    from bernonnx.calibrators.temperature_bernstein import TemperatureBernsteinCalibrator

    n, k = z.shape
    fold = np.arange(n) % N_FOLDS
    scores = z[:, 1] - z[:, 0] if k == 2 else z
    logq = np.empty_like(z)
    for f in range(N_FOLDS):
        train, test = fold != f, fold == f
        if k == 2:
            cal = BernsteinCalibrator()
        else:
            cal = TemperatureBernsteinCalibrator(input="logits")
        cal.fit(scores[train], target[train], sample_weight=w[train])
        proba = cal.predict_proba(scores[test])
        tiny = float(np.finfo(np.float64).tiny)
        logq[test] = np.log(np.clip(proba, tiny, 1.0))
    return _loss_of(logq, target, w), {"n_folds": N_FOLDS}


def fit_map(method: str, z: np.ndarray, target: np.ndarray, w: np.ndarray):
    """The log loss after the recalibration map ``method``, and the map's parameters."""
    return {"affine": affine, "temperature": temperature, "monotone": monotone}[method](
        z, target, w
    )
