"""The smooth ECE of Błasiok and Nakkiran: kernel-smoothed residuals, automatic bandwidth.

The arithmetic is that of the reference implementation, ``relplot`` 1.0.3
(``relplot.metrics.smECE`` with its default ``ReflectedGaussianKernel``), step for step, in
numpy and scipy only, with sample weights added where ``relplot`` has a count of one per row:

1. each row's value is split between the two nearest of ``m`` grid points on ``[0, 1]``
   in proportion to its distance to them (``smooth_round_to_grid``);
2. the grid is mirrored at 0 and at 1 and convolved with a Gaussian of width ``sigma``
   sampled on the same grid (``ReflectedGaussianKernel.convolve``);
3. the smoothed grid is read at the evaluation points by linear interpolation.

Every step is linear in the rows, so a weight ``k`` is exactly the row repeated ``k`` times.
The convolution is done by FFT where ``relplot`` calls ``np.convolve``: the same sums in
another order, equal to about 1e-15.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike
from scipy.fft import irfftn, next_fast_len, rfftn

from ._inputs import PosLabel, _check_inputs, _Checked

__all__ = ["smooth_calibration_curve", "smooth_calibration_error"]

#: relplot's ``config.smECE_mesh_pts``: fewest evaluation points of the smooth ECE
_MESH_POINTS = 200
#: added to the smoothed weight density before dividing by it (``BaseKernelMixin.smooth``);
#: in units of weight, as relplot's is in rows
_DENSITY_EPS = 1e-4
#: the bandwidth search stops below this width (relplot's ``smECE(eps=0.001)``)
_MIN_BANDWIDTH = 1e-3
#: halvings of the bandwidth search (relplot's ``search_param(refine=10)``)
_REFINE = 10
#: the picture's bandwidth (``bandwidth="cv"``): folds, candidates, widest candidate, the
#: floor's factor on ``n_eff ** -0.2`` and the clip of a held-out rate
_CV_FOLDS = 5
_CV_CANDIDATES = 16
_CV_CEILING = 0.5
_CV_FLOOR = 0.3
_CV_CLIP = 1e-4


class _Grid:
    """The rows split onto the grids of the kernel smoother, cached per grid size."""

    def __init__(self, p: np.ndarray, values: np.ndarray):
        self.p = p
        self.values = values  # (n_rows, n_series): each column is smoothed separately
        self._sums: dict[int, np.ndarray] = {}
        self._spectra: dict[int, tuple[int, np.ndarray]] = {}

    def sums(self, m: int) -> np.ndarray:
        if m not in self._sums:
            pos = self.p * (m - 1)
            lower = pos.astype(np.int64).clip(0, m - 2)
            frac = pos - lower
            grid = np.empty((m, self.values.shape[1]))
            for k, v in enumerate(self.values.T):
                grid[:, k] = np.bincount(lower, (1.0 - frac) * v, minlength=m)
                grid[:, k] += np.bincount(lower + 1, frac * v, minlength=m)
            self._sums[m] = grid
        return self._sums[m]

    def spectrum(self, m: int) -> tuple[int, np.ndarray]:
        """(FFT length, real FFT of the mirrored grid): the kernel's half of the
        convolution, which changes with ``sigma``, is all that a bandwidth search redoes."""
        if m not in self._spectra:
            grid = self.sums(m)
            # mirror images at both ends, so no mass leaks out of [0, 1]
            extended = np.concatenate([grid[::-1][:-1], grid, grid[::-1][1:]])
            # scipy.signal.fftconvolve's length: the full convolution, made FFT-friendly
            length = next_fast_len(extended.shape[0] + m - 1, True)
            self._spectra[m] = length, rfftn(extended, [length], axes=[0])
        return self._spectra[m]

    def smooth(self, sigma: float, x: np.ndarray) -> np.ndarray:
        """The reflected Gaussian smoothing of every column, read at ``x``."""
        # relplot's GaussianKernel.apply: the grid is finer for narrower kernels
        m = max(2000, round(20 / sigma)) // 2 + 1
        t = np.linspace(0.0, 1.0, m)
        kernel = np.exp(-(t - 0.5) * (t - 0.5) / (2 * sigma**2)) / (np.sqrt(2 * np.pi) * sigma)
        # scipy.signal.fftconvolve(extended, kernel[:, None], mode="valid", axes=0), the
        # same FFTs in the same order, with the mirrored grid's transform kept per m: the
        # "valid" part starts at row m - 1 of the full convolution
        length, spectrum = self.spectrum(m)
        kernel_spectrum = rfftn(kernel[:, None], [length], axes=[0])
        full = irfftn(spectrum * kernel_spectrum, [length], axes=[0])
        smoothed = full[m - 1 + m // 2 : m - 1 + m // 2 + m]
        # linear interpolation between grid points (relplot.kernels.interpolate)
        index = (x * (m - 1)).astype(np.int64).clip(0, m - 2)
        residual = (x - index / (m - 1)) * (m - 1)
        return smoothed[index] * (1 - residual[:, None]) + smoothed[index + 1] * residual[:, None]


def _smooth_ece_at(grid: _Grid, sigma: float) -> float:
    """smECE at a fixed bandwidth; ``grid`` holds the columns ``w (p - y)`` and ``w``."""
    x = np.linspace(0.0, 1.0, max(round(10 / sigma), _MESH_POINTS))
    smoothed = grid.smooth(sigma, x)
    density = smoothed[:, 1] + _DENSITY_EPS
    residual = smoothed[:, 0] / density
    return float(np.sum(np.abs(residual) * density) / np.sum(density))


def _bandwidth(grid: _Grid) -> float:
    """relplot's ``search_param``: bisection for the fixed point ``sigma = smECE_sigma``.

    The returned width is the last tried one that is at least its own smooth ECE (1 when
    1 is), so the error is measured at a scale no finer than itself.
    """

    def too_narrow(sigma: float) -> bool:
        return sigma < _MIN_BANDWIDTH or sigma < _smooth_ece_at(grid, sigma)

    if too_narrow(1.0):
        return 1.0
    wide, narrow = 1.0, 0.0
    for _ in range(_REFINE):
        middle = (wide + narrow) / 2
        if too_narrow(middle):
            narrow = middle
        else:
            wide = middle
    return wide


def _cv_bandwidth(c: _Checked) -> float:
    """The curve's bandwidth for a picture: the most likely under cross-validation.

    Rows go to ``_CV_FOLDS`` folds by position; for each candidate width, each fold's
    labels are scored (Bernoulli log-likelihood, weighted) under the rate the other folds'
    rows give at its predictions (the prediction minus their smoothed residual, the curve
    ``bandwidth="cv"`` draws), and the candidate with the highest total wins. The
    candidates run geometrically from the floor ``_CV_FLOOR * n_eff ** -0.2`` to 0.5
    (``n_eff = (sum w)^2 / sum w^2``, the rows the weights are worth; ``n^-1/5`` is the
    rate of a kernel regression's best width), so a few thousand rows never get a curve
    narrower than the noise allows to show.
    """
    w = c.w
    n_eff = w.sum() ** 2 / np.sum(w * w)
    floor = min(_CV_FLOOR * n_eff**-0.2, _CV_CEILING)
    candidates = np.geomspace(floor, _CV_CEILING, _CV_CANDIDATES)
    fold = np.arange(c.p.shape[0]) % _CV_FOLDS
    scores = np.zeros(candidates.size)
    y = c.y.astype(np.float64)
    for f in range(_CV_FOLDS):
        train, test = fold != f, (fold == f) & (w > 0)
        grid = _residual_grid(c._replace(p=c.p[train], y=c.y[train], w=w[train]))
        for j, sigma in enumerate(candidates):
            smoothed = grid.smooth(sigma, c.p[test])
            rate = c.p[test] - smoothed[:, 0] / (smoothed[:, 1] + _DENSITY_EPS)
            # a rate of exactly 0 or 1 where a label says otherwise costs a lot, not inf
            rate = np.clip(rate, _CV_CLIP, 1.0 - _CV_CLIP)
            ll = y[test] * np.log(rate) + (1.0 - y[test]) * np.log1p(-rate)
            scores[j] += np.sum(w[test] * ll)
    return float(candidates[int(np.argmax(scores))])


def _check_bandwidth(bandwidth, names: tuple[str, ...] = ("auto",)) -> None:
    expected = " or ".join(repr(name) for name in names) + " or a float in (0, 1]"
    if isinstance(bandwidth, str):
        if bandwidth not in names:
            raise ValueError(f"bandwidth must be {expected}, got {bandwidth!r}.")
    elif (
        not isinstance(bandwidth, numbers.Real)
        or isinstance(bandwidth, bool)
        or not 0 < bandwidth <= 1
    ):
        raise ValueError(f"bandwidth must be {expected}, got {bandwidth!r}.")


def _residual_grid(c: _Checked) -> _Grid:
    return _Grid(c.p, np.column_stack([c.w * (c.p - c.y), c.w]))


def _smooth_ece(c: _Checked, bandwidth="auto") -> tuple[float, float]:
    """(smooth ECE, bandwidth) of validated inputs."""
    grid = _residual_grid(c)
    sigma = _bandwidth(grid) if bandwidth == "auto" else float(bandwidth)
    return _smooth_ece_at(grid, sigma), sigma


def smooth_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
    bandwidth: float | str = "auto",
) -> float:
    """Smooth ECE: the mean absolute kernel-smoothed residual, at an automatic bandwidth.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, two distinct values at most.
    y_prob : array-like of shape (n_samples,) or (n_samples, 1)
        Predicted probabilities of the positive class, in ``[0, 1]``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights; a weight ``k`` is exactly the row repeated ``k`` times.
    pos_label : int, float, bool or str, default=None
        The positive label, see :func:`reliability_table`.
    bandwidth : "auto" or float, default="auto"
        Width ``sigma`` of the Gaussian kernel. ``"auto"`` is the reference
        implementation's choice: bisection on ``(0, 1]`` for the fixed point
        ``sigma = smECE_sigma``, ten halvings.

    Returns
    -------
    error : float
        In ``[0, 1]``; near 0 for calibrated predictions.

    Notes
    -----
    With the residuals ``r_i = p_i - y_i``, the reflected Gaussian kernel ``K_sigma`` on
    ``[0, 1]`` (the Gaussian plus its mirror images at 0 and 1) and ``delta = 1e-4``::

        d(t)    = sum_i w_i K_sigma(t, p_i) + delta
        rhat(t) = sum_i w_i r_i K_sigma(t, p_i) / d(t)
        smECE_sigma = sum_t |rhat(t)| d(t) / sum_t d(t)

    the sums over ``t`` running over ``max(200, round(10 / sigma))`` equally spaced points of
    ``[0, 1]``. ``smECE`` is ``smECE_sigma`` at the automatic ``sigma`` (see ``bandwidth``),
    for which Błasiok and Nakkiran show it is a consistent calibration measure: within
    constant factors of the distance to the nearest perfectly calibrated predictor.

    The arithmetic follows ``relplot.smECE`` (``relplot`` 1.0.3, Apple's ml-calibration)
    exactly, including its discretisation (rows split linearly onto a grid of
    ``max(2000, round(20 / sigma)) // 2 + 1`` points) and its ``delta``; this function
    equals it to 1e-6 on unweighted data, and adds weights. ``delta`` is in units of
    weight, so rescaling every weight by the same factor can move the result by about
    ``delta`` over the density, not more.

    References
    ----------
    J. Błasiok and P. Nakkiran (2024). Smooth ECE: Principled Reliability Diagrams via
    Kernel Smoothing. ICLR 2024. https://github.com/apple/ml-calibration

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx.metrics import smooth_calibration_error
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=5000)
    >>> round(smooth_calibration_error(rng.uniform(size=5000) < p, p), 3)
    0.016
    >>> round(smooth_calibration_error(rng.uniform(size=5000) < p**2, p), 3)
    0.177
    """
    _check_bandwidth(bandwidth)
    c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    return _smooth_ece(c, bandwidth)[0]


def _curve(
    c: _Checked, sigma: float, x: np.ndarray, residual: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(smoothed positive rate, smoothed weight density) at ``x``: the smoothed labels, or
    with ``residual`` the diagonal minus the smoothed residual ``p - y`` (in [0, 1])."""
    if residual:
        smoothed = _residual_grid(c).smooth(sigma, x)
        density = smoothed[:, 1] + _DENSITY_EPS
        return np.clip(x - smoothed[:, 0] / density, 0.0, 1.0), density
    smoothed = _Grid(c.p, np.column_stack([c.w * c.y, c.w])).smooth(sigma, x)
    density = smoothed[:, 1] + _DENSITY_EPS
    return smoothed[:, 0] / density, density


def smooth_calibration_curve(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    pos_label: PosLabel = None,
    bandwidth: float | str = "auto",
    n_points: int = 200,
    confidence: float | None = 0.9,
    n_resamples: int = 200,
    random_state=None,
) -> dict[str, np.ndarray | float]:
    """The kernel-smoothed positive rate against the prediction, with a bootstrap band.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`smooth_calibration_error`.
    bandwidth : "auto", "cv" or float, default="auto"
        Width of the curve's kernel. ``"auto"``: the smooth ECE's own (the curve
        ``relplot`` draws); it is chosen to measure the error, and on a few thousand
        well-calibrated rows it is narrow enough (about 0.013 on 6,000) for the curve to
        wiggle with the noise. ``"cv"``: the curve a picture needs: the diagonal minus
        the smoothed residual, at a width chosen by cross-validated likelihood with a
        floor that grows as the rows get fewer (see Notes); the plots use it. A float:
        that width. ``smooth_ece`` is always
        computed at its own width (``"auto"``) unless a float is given.
    n_points : int, default=200
        Number of equally spaced points of ``[0, 1]`` where the curve is evaluated.
    confidence : float or None, default=0.9
        Level of the pointwise percentile bootstrap band; None draws no band.
    n_resamples : int, default=200
        Bootstrap resamples of the rows (each keeps its weight), at the full data's
        bandwidth.
    random_state : int, numpy Generator or None, default=None
        Seed of the resampling.

    Returns
    -------
    curve : dict
        ``mesh`` (the points), ``fraction_positive`` (the smoothed positive rate there),
        ``density`` (the smoothed weight, normalised to mean 1 over the mesh),
        ``lower`` and ``upper`` (the band; absent when ``confidence`` is None),
        ``bandwidth`` (the curve's), ``smooth_ece`` (:func:`smooth_calibration_error`),
        ``support`` (the smallest and largest prediction of positive weight), and
        ``smooth_ece_ci``, its bootstrap interval from the same resamples (the hull of
        the basic and percentile intervals, as in :func:`calibration_report`)
        (each with its own bandwidth search, as in :func:`calibration_report`).

    Notes
    -----
    ``fraction_positive(t) = sum_i w_i y_i K_sigma(t, p_i) / d(t)``, the curve
    ``relplot.prepare_rel_diagram`` draws (``relplot`` draws the mean of its bootstrap
    curves; this is the curve of the data themselves).

    ``bandwidth="cv"`` draws ``fraction_positive(t) = t - rhat(t)`` (clipped to
    ``[0, 1]``) with the smooth ECE's smoothed residual ``rhat`` (see
    :func:`smooth_calibration_error`): the curve whose distance to the diagonal the
    smooth ECE averages. Smoothing the labels themselves flattens a steep curve where
    the predictions' density changes fast (a kernel average's bias grows with the slope
    times the density's log-derivative), so wide kernels bend a calibrated model's
    curve; smoothing the residual keeps a calibrated model on the diagonal at any width.
    Its width: rows go to 5 folds by position; each candidate width (16,
    geometric from ``0.3 n_eff^(-1/5)`` to 0.5, with ``n_eff = (sum w)^2 / sum w^2``)
    scores every fold's labels by their Bernoulli log-likelihood under the positive rate
    the other folds give at their predictions; the most likely width wins. ``n^(-1/5)``
    is the order of a kernel regression's best width, so the floor keeps a few thousand
    rows from drawing their noise (0.053 on 6,000 rows) and lets a million show detail
    (0.019).

    Examples
    --------
    >>> import numpy as np
    >>> from bernonnx.metrics import smooth_calibration_curve
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> curve = smooth_calibration_curve(rng.uniform(size=2000) < p**2, p, random_state=0)
    >>> round(float(curve["fraction_positive"][100]), 2), round(curve["bandwidth"], 3)
    (0.27, 0.169)
    >>> bool(np.all(curve["lower"] <= curve["upper"]))
    True
    """
    from bernonnx._validation import check_int

    from .bootstrap import _check_confidence, _interval, _resample_weights

    _check_bandwidth(bandwidth, ("auto", "cv"))
    check_int(n_points, "n_points", 2)
    c = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    ece_bandwidth = "auto" if bandwidth == "cv" else bandwidth
    error, sigma = _smooth_ece(c, ece_bandwidth)
    if bandwidth == "cv":
        sigma = _cv_bandwidth(c)
    mesh = np.linspace(0.0, 1.0, n_points)
    residual = bandwidth == "cv"
    rate, density = _curve(c, sigma, mesh, residual)
    out = {
        "mesh": mesh,
        "fraction_positive": rate,
        "density": density / density.mean(),
        "bandwidth": sigma,
        "smooth_ece": error,
        "support": (float(c.p[c.w > 0].min()), float(c.p[c.w > 0].max())),
    }
    if confidence is None:
        return out
    _check_confidence(confidence)
    curves, errors = [], []
    for w in _resample_weights(c.w, n_resamples, random_state):
        resampled = c._replace(w=w)
        curves.append(_curve(resampled, sigma, mesh, residual)[0])
        errors.append(_smooth_ece(resampled, ece_bandwidth)[0])
    alpha = (1.0 - confidence) / 2
    out["lower"], out["upper"] = np.quantile(np.array(curves), [alpha, 1.0 - alpha], axis=0)
    out["smooth_ece_ci"] = _interval(error, errors, confidence)
    return out
