"""``ConformalClassifier``: split-conformal prediction sets around a fitted classifier.

The scores are ``lac``, ``aps`` and ``raps`` (one module each); the quantile and the
threshold's placement are ``quantile``. This module is the estimator: what it reads
from the wrapped model, its checks, the weights (sample weights, prior ratios under
class-prior shift) and the per-class thresholds the ONNX graph compares against.
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import StratifiedShuffleSplit
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from bernonnx._meta import clone_keeping_fitted, final_classifier
from bernonnx._validation import (
    HasMethods,
    Interval,
    IntInterval,
    StrOptions,
    _fit_context,
    _num_samples,
    _safe_indexing,
)
from bernonnx.shift import PriorShiftAdapter

from . import aps, lac, raps
from .quantile import TIE, finite_sample_quantile, place_threshold

__all__ = ["ConformalClassifier", "ConformalWarning"]


class ConformalWarning(UserWarning):
    """Too few conformalization rows for the confidence asked: some sets are every
    class (or every set holds some class) whatever the model says."""


class ConformalClassifier(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Prediction sets with guaranteed coverage around a fitted classifier.

    Split conformal prediction: on conformalization rows (labelled, not used to fit the
    model), each row's true class gets a conformity score, and a class enters a new
    row's set when its score is at most the ``ceil((n + 1) c)``-th smallest of them.
    The true class of a new row drawn like those rows is then in its set with
    probability at least ``c`` (and less than ``c + 1 / (n + 1)`` for continuous
    scores), whatever the model, however badly calibrated: calibration makes the sets
    small, the quantile makes them cover.

    Parameters
    ----------
    estimator : fitted classifier
        Used as it is (not refitted; :func:`sklearn.base.clone` keeps it fitted): a
        :class:`~bernonnx.CalibratedClassifier`, a Pipeline ending in one, a
        :class:`~bernonnx.PriorShiftAdapter`, a bernonnx calibrator, or any fitted
        classifier with ``predict_proba`` and ``classes_`` (which
        :func:`bernonnx.to_onnx` can export when it can export the model).
    confidence : float, default=0.9
        The coverage ``c`` asked for, in (0, 1).
    score : {"lac", "aps", "raps"}, default="lac"
        The conformity score: one minus the class's probability (LAC, the smallest
        sets on average); the mass of the classes ranked above it plus its own (APS,
        sets that adapt to how uncertain the row is); APS plus
        ``lam * max(0, rank - k_reg)`` (RAPS).
    class_conditional : bool, default=False
        One threshold per class from that class's rows (Mondrian conformal
        prediction): coverage ``c`` within every class, not only on average.
    randomized : bool, default=False
        APS and RAPS only. False: the score is the mass of the classes ranked above the
        class (``u = 1`` below), on the conformalization rows and on new rows alike, so
        a set keeps the class that crosses the threshold and is never empty;
        deterministic, coverage at least ``c``. True: the score is that mass plus
        ``(1 - u)`` times the class's own probability, ``u`` uniform per row (drawn
        from ``random_state`` on the conformalization rows; given to
        :meth:`predict_set`, or to the graph as its ``uniforms`` input), for coverage
        ``c`` on average and smaller sets (Romano et al.'s randomised sets).
    lam, k_reg : float and int, default=None
        RAPS's penalty and the rank it starts after; None chooses them on
        ``tuning_fraction`` of the conformalization rows (stratified, then left out
        of the quantile), as Angelopoulos et al. do.
    tuning_fraction : float, default=0.2
        The share of the conformalization rows that chooses RAPS's parameters.
    tie : float, default=1e-8
        Probabilities within ``tie`` of each other are tied for APS and RAPS, and the
        threshold keeps at least ``tie`` from every conformalization score (see
        Notes).
    random_state : int, RandomState instance or None, default=None
        The draws of the randomised scores and of RAPS's tuning split.

    Attributes
    ----------
    estimator_ : classifier
        ``estimator``, as given.
    classes_ : ndarray of shape (n_classes,)
    quantile_ : ndarray of shape (n_classes,)
        The conformal order statistic each class's score is compared with (the same
        for every class unless ``class_conditional`` or prior-shift weighting); inf
        where the rows are too few.
    threshold_ : ndarray of shape (n_classes,)
        The thresholds actually used: ``quantile_`` moved up by ``tie`` past any
        conformalization score closer than ``2 tie`` (:func:`place_threshold`).
    prior_ratio_ : ndarray of shape (n_classes,) or None
        Wrapping a ``PriorShiftAdapter``: each class's weight, the adapter's
        ``prior_`` over the class's share of the conformalization rows.
    lam_, k_reg_ : float and int, or None
        RAPS's parameters (None for the other scores).
    n_conformal_ : int
        Rows the quantile was computed from.

    Notes
    -----
    A class ``k`` is in a row's set when ``score_k(p) <= threshold_[k]``, ``p`` the
    wrapped model's float64 probabilities; the ONNX graph (:func:`bernonnx.to_onnx`)
    computes the same scores with the same operations and compares with the same
    thresholds. The conformalization rows' own scores sit exactly on the order
    statistic, so the threshold is placed ``tie`` above it (or above the run of scores
    within ``2 tie`` of it): every set on those rows is the same, coverage can only
    grow, and a graph whose probabilities differ from Python's in the last bit decides
    every row as Python does.

    **Weights.** A sample weight counts a row that many times. Wrapping a
    :class:`~bernonnx.PriorShiftAdapter`, the rows come from the source population and
    the sets are for the target one: row ``i`` weighs ``prior_[y_i] / share[y_i]``
    (``share`` the classes' weighted shares among these rows), and class ``k``'s
    threshold is the weighted quantile with the new row weighing ``prior_[k] /
    share[k]`` (Podkopaev & Ramdas 2021), so coverage holds on rows drawn at the
    target priors when the priors are right. Without the weighting the quantile is
    the source population's, and a class made more frequent at its low-coverage end
    loses coverage.

    **Too few rows.** When ``c (n + 1) > n`` (fewer than ``c / (1 - c)`` rows, 9 at
    ``c = 0.9``), no order statistic is high enough: the threshold is inf, every set
    holds every class, and a :class:`ConformalWarning` says so (per class with
    ``class_conditional``).

    References
    ----------
    V. Vovk, A. Gammerman and G. Shafer, "Algorithmic learning in a random world",
    Springer, 2005.

    J. Lei, M. G'Sell, A. Rinaldo, R. Tibshirani and L. Wasserman, "Distribution-free
    predictive inference for regression", JASA 113(523), 2018.

    R. Tibshirani, R. Foygel Barber, E. Candes and A. Ramdas, "Conformal prediction
    under covariate shift", NeurIPS 2019.

    A. Podkopaev and A. Ramdas, "Distribution-free uncertainty quantification for
    classification under label shift", UAI 2021.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from bernonnx import ConformalClassifier
    >>> X, y = make_classification(3000, n_classes=3, n_informative=4, random_state=0)
    >>> model = LogisticRegression().fit(X[:1000], y[:1000])
    >>> sets = ConformalClassifier(model, confidence=0.9).fit(X[1000:2000], y[1000:2000])
    >>> found = sets.predict_set(X[2000:])
    >>> found.shape, found.dtype
    ((1000, 3), dtype('bool'))
    >>> bool(abs(found[range(1000), y[2000:]].mean() - 0.9) < 0.03)
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["predict_proba"])],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "score": [StrOptions({"lac", "aps", "raps"})],
        "class_conditional": ["boolean"],
        "randomized": ["boolean"],
        "lam": [Interval(Real, 0, None, closed="left"), None],
        "k_reg": [IntInterval(0, None, closed="left"), None],
        "tuning_fraction": [Interval(Real, 0, 1, closed="neither")],
        "tie": [Interval(Real, 0, 0.01, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator,
        *,
        confidence=0.9,
        score="lac",
        class_conditional=False,
        randomized=False,
        lam=None,
        k_reg=None,
        tuning_fraction=0.2,
        tie=TIE,
        random_state=None,
    ):
        self.estimator = estimator
        self.confidence = confidence
        self.score = score
        self.class_conditional = class_conditional
        self.randomized = randomized
        self.lam = lam
        self.k_reg = k_reg
        self.tuning_fraction = tuning_fraction
        self.tie = tie
        self.random_state = random_state

    def __sklearn_clone__(self):
        # the wrapped model is fitted and used as it is: a clone refits the sets only
        return clone_keeping_fitted(self)

    def _check_estimator(self):
        try:
            check_is_fitted(self.estimator)
        except NotFittedError:
            raise ValueError(
                f"estimator must be a fitted classifier; {type(self.estimator).__name__} is "
                "not fitted (fit it on other rows than the conformalization rows first)"
            ) from None
        if self.randomized and self.score == "lac":
            raise ValueError(
                'randomized=True needs score="aps" or "raps": a LAC set has no class at '
                "its edge to draw for"
            )

    def _labels(self, y, n: int) -> np.ndarray:
        """Each label's index in ``classes_``; a ValueError naming unknown labels."""
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be {n} labels, one per row of X, got shape {y.shape}")
        index = {label: i for i, label in enumerate(self.classes_.tolist())}
        unknown = sorted({v for v in y.tolist() if v not in index}, key=str)
        if unknown:
            raise ValueError(
                f"y holds labels the wrapped model does not know: {unknown[:10]} (its "
                f"classes_ are {self.classes_.tolist()[:20]})"
            )
        return np.array([index[v] for v in y.tolist()], dtype=np.intp)

    def _weights(self, sample_weight, n: int) -> np.ndarray | None:
        if sample_weight is None:
            return None
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.shape != (n,) or not np.all(np.isfinite(w)) or (n and w.min() < 0):
            raise ValueError(
                f"sample_weight must be {n} finite non-negative weights, got shape {w.shape}"
            )
        if w.sum() <= 0:
            raise ValueError("sample_weight must have a positive total")
        return w

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Compute the thresholds from conformalization rows.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Labelled rows the wrapped model was not fitted on, as it takes them.
        y : array-like of shape (n_samples,)
            Their labels, each one of the wrapped model's ``classes_``.
        sample_weight : array-like of shape (n_samples,), default=None
            A weight of 2 counts a row twice.

        Returns
        -------
        self : ConformalClassifier
        """
        self._check_estimator()
        self.estimator_ = self.estimator
        self.classes_ = np.asarray(self.estimator.classes_)
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(self.estimator, name):
                setattr(self, name, getattr(self.estimator, name))
        n = _num_samples(X)
        y_index = self._labels(y, n)
        weights = self._weights(sample_weight, n)
        rng = check_random_state(self.random_state)
        self.lam_, self.k_reg_ = None, None
        if self.score == "raps":
            X, y_index, weights = self._tune_raps(X, y_index, weights, rng)
        proba = np.asarray(self.estimator_.predict_proba(X), dtype=np.float64)
        n = proba.shape[0]
        # randomised sets: one draw per row here too, as at prediction (Romano et al.)
        uniforms = rng.uniform(size=n) if self.randomized else None
        true = self._class_scores(proba, uniforms)[np.arange(n), y_index]
        self.prior_ratio_ = self._prior_ratio(y_index, weights)
        self.quantile_, self.threshold_ = self._thresholds(true, y_index, weights)
        self.n_conformal_ = n
        return self

    def _tune_raps(self, X, y_index, weights, rng):
        """Choose RAPS's missing parameters on a stratified share of the rows; the
        rows left for the quantile."""
        if self.lam is not None and self.k_reg is not None:
            self.lam_, self.k_reg_ = float(self.lam), int(self.k_reg)
            return X, y_index, weights
        split = StratifiedShuffleSplit(
            n_splits=1, test_size=self.tuning_fraction, random_state=rng.randint(2**31 - 1)
        )
        try:
            keep, tune = next(split.split(np.zeros(len(y_index)), y_index))
        except ValueError:  # a class of one row, or fewer tuning rows than classes
            order = rng.permutation(len(y_index))
            cut = int(round(len(y_index) * (1 - self.tuning_fraction)))
            keep, tune = order[:cut], order[cut:]
        tune_proba = self.estimator_.predict_proba(_safe_indexing(X, tune))
        self.lam_, self.k_reg_ = raps.choose(
            tune_proba,
            y_index[tune],
            self.confidence,
            rng.uniform(size=len(tune)) if self.randomized else None,
            lam=self.lam,
            k_reg=self.k_reg,
            tie=self.tie,
        )
        kept = None if weights is None else weights[keep]
        return _safe_indexing(X, keep), y_index[keep], kept

    def _class_scores(self, proba, uniforms=None):
        if self.score == "lac":
            return lac.class_scores(proba)
        if self.score == "aps":
            return aps.class_scores(proba, uniforms, self.tie)
        return raps.class_scores(proba, self.lam_, self.k_reg_, uniforms, self.tie)

    def _prior_ratio(self, y_index, weights):
        """Wrapping a PriorShiftAdapter: target prior over conformalization share."""
        final = final_classifier(self.estimator_)
        if not isinstance(final, PriorShiftAdapter):
            return None
        n_classes = len(self.classes_)
        w = np.ones(len(y_index)) if weights is None else weights
        share = np.bincount(y_index, weights=w, minlength=n_classes) / w.sum()
        with np.errstate(divide="ignore"):
            return np.asarray(final.prior_, dtype=np.float64) / share

    def _thresholds(self, true, y_index, weights):
        n_classes = len(self.classes_)
        quantiles = np.empty(n_classes)
        thresholds = np.empty(n_classes)
        ratio = self.prior_ratio_
        for k in range(n_classes):
            if self.class_conditional:
                rows = y_index == k
                if not rows.any():
                    raise ValueError(
                        f"class_conditional=True but class {self.classes_.tolist()[k]!r} has no "
                        "conformalization row: its threshold cannot be computed; give rows "
                        "of every class, or use class_conditional=False"
                    )
                pool, w, test = true[rows], None if weights is None else weights[rows], 1.0
            elif ratio is None:
                if k:  # one threshold for every class
                    quantiles[k], thresholds[k] = quantiles[0], thresholds[0]
                    continue
                pool, w, test = true, weights, 1.0
            else:
                base = np.ones(len(true)) if weights is None else weights
                pool, w, test = true, base * ratio[y_index], ratio[k]
            quantiles[k] = finite_sample_quantile(pool, self.confidence, w, test)
            # a row of weight 0 is no row: its score does not move the threshold either
            kept = pool if w is None else pool[w > 0]
            thresholds[k] = place_threshold(kept, quantiles[k], self.tie)
        labels = self.classes_.tolist()
        full = [labels[k] for k in range(n_classes) if not np.isfinite(thresholds[k])]
        if full:
            warnings.warn(
                f"too few conformalization rows for confidence={self.confidence:g} (at least "
                f"{int(np.ceil(self.confidence / (1 - self.confidence)))} per threshold): "
                f"every set holds class(es) {full[:10]}, whatever the model says",
                ConformalWarning,
                stacklevel=3,
            )
        return quantiles, thresholds

    def set_scores(self, X, uniforms=None) -> np.ndarray:
        """Every class's conformity score on the rows of ``X``, (n, n_classes) float64;
        a class is in the set when its score is at most ``threshold_``."""
        check_is_fitted(self)
        proba = np.asarray(self.estimator_.predict_proba(X), dtype=np.float64)
        if self.randomized:
            if uniforms is None:
                uniforms = check_random_state(self.random_state).uniform(size=len(proba))
            uniforms = np.asarray(uniforms, dtype=np.float64)
            if uniforms.shape != (len(proba),) or np.any(~(np.abs(uniforms - 0.5) <= 0.5)):
                raise ValueError(
                    f"uniforms must be {len(proba)} draws in [0, 1], one per row, got shape "
                    f"{uniforms.shape}"
                )
        elif uniforms is not None:
            raise ValueError("uniforms are only read with randomized=True")
        return self._class_scores(proba, uniforms)

    def predict_set(self, X, uniforms=None) -> np.ndarray:
        """The prediction sets: ``True`` where a class is in the row's set.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        uniforms : array-like of shape (n_samples,), default=None
            With ``randomized=True``: one uniform draw per row (None draws them from
            ``random_state``); the graph takes them as its ``uniforms`` input.

        Returns
        -------
        ndarray of bool, shape (n_samples, n_classes)
            In the order of ``classes_``; the graph's ``prediction_set`` output.
        """
        return self.set_scores(X, uniforms) <= self.threshold_[None, :]

    def predict_proba(self, X):
        """The wrapped model's probabilities."""
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)

    def predict(self, X):
        """The wrapped model's labels."""
        check_is_fitted(self)
        return self.estimator_.predict(X)
