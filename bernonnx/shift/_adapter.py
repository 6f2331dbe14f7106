"""``PriorShiftAdapter``: a fitted, calibrated classifier moved to new class priors.

The math (Bayes' rule for the new priors, the EM estimate) is ``bernonnx._core.priors``;
this module is the estimator around it: what it reads from the wrapped model, its checks
and the bootstrap interval.
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from bernonnx._core.priors import (
    SMALLEST_DIVISOR_PRIOR,
    adapt_proba,
    add_pseudo_counts,
    check_priors,
    em_priors,
    likelihood_ratios,
    likelihood_slope,
    posterior_mean_priors,
    prior_covariance,
    shrink_by_likelihood,
)
from bernonnx._meta import clone_keeping_fitted, final_classifier
from bernonnx._registry import entry_for
from bernonnx._validation import HasMethods, Interval, IntInterval, _fit_context, _num_samples
from bernonnx.calibration import CalibratedClassifier
from bernonnx.fusion import FusionClassifier

__all__ = ["MIN_TARGET_ROWS", "PriorShiftAdapter", "UncalibratedModelWarning"]

#: Fewest target rows an estimate is made from. Even with every label known, a class
#: share from n rows has a standard error up to 0.5 / sqrt(n): 0.05 at n = 100, a 95%
#: interval of +-0.1 at best, and EM on probabilities is noisier than counting labels.
#: Below 100 rows the estimate says little more than the training priors did.
MIN_TARGET_ROWS = 100

#: Bootstrap resamples estimated side by side: at most 16, and at most this many
#: weights (rows x resamples) at once. EM holds about six (N, B) float64 arrays, so
#: 2e6 weights keep the bootstrap's arrays near 100 MB whatever the number of rows.
_BOOTSTRAP_CHUNK = 16
_BOOTSTRAP_CELLS = 2_000_000
#: Target rows scored at a time: the wrapped model's own temporaries stay bounded.
_PREDICT_BLOCK = 65_536
#: EM's tolerance on a resample: the interval needs the estimates to far less than its
#: width (a 95% interval from 100,000 rows is about 0.01 wide)
_BOOTSTRAP_TOL = 1e-6


class UncalibratedModelWarning(UserWarning):
    """The wrapped model's probabilities are not known to be calibrated: EM and Bayes'
    rule on them are only as right as they are calibrated."""


def _is_calibrated(final) -> bool:
    if isinstance(final, CalibratedClassifier | CalibratedClassifierCV | FusionClassifier):
        return True
    try:
        entry_for(final)
    except TypeError:
        return False
    return True


def _missing_rows(X) -> int:
    """Rows of ``X`` holding a missing value (NaN, None, ``pd.NA``) in any column."""
    if hasattr(X, "isna"):
        return int(np.asarray(X.isna()).reshape(len(X), -1).any(axis=1).sum())
    values = np.asarray(X)
    if values.dtype.kind == "f":
        return int(np.isnan(values).reshape(len(values), -1).any(axis=1).sum())
    if values.dtype.kind == "O":
        flat = values.reshape(len(values), -1)
        return int(sum(any(v is None or v != v for v in row) for row in flat))
    return 0


class PriorShiftAdapter(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """A fitted calibrated classifier adapted to new class priors (prior / label shift).

    Where only the class balance changes between the rows a model was calibrated on and
    the rows it now scores (the class-conditional distributions ``p(x | k)`` stay), the
    calibrated probabilities move by Bayes' rule: ``p'(k | x)`` proportional to
    ``p(k | x) pi'_k / pi_k``, renormalised. The new priors ``pi'`` are given, or
    estimated from unlabeled target rows by EM on the calibrated probabilities
    (Saerens, Latinne & Decaestecker 2002), with a bootstrap interval. The wrapped
    model is never refitted: adapting it to given priors costs one division per class.

    Parameters
    ----------
    estimator : fitted classifier
        The model whose probabilities are adapted, used as it is (not cloned, not
        refitted): a fitted :class:`~bernonnx.CalibratedClassifier` (or a Pipeline or
        ``FrozenEstimator`` ending in one), whose ``calibration_prior_`` gives the
        training priors; or any fitted classifier with ``predict_proba`` and
        ``classes_`` (a bernonnx calibrator on scores, scikit-learn's
        ``CalibratedClassifierCV``...) together with ``train_prior``. A model that is
        not a calibrated one gets an :class:`UncalibratedModelWarning`.
    priors : array-like of shape (n_classes,), default=None
        The target priors, in the order of ``classes_``: positive, summing to 1. None
        estimates them from the rows given to :meth:`fit`.
    train_prior : array-like of shape (n_classes,), default=None
        The priors the probabilities are calibrated for; None reads
        ``calibration_prior_`` of the final ``CalibratedClassifier``.
    tol : float, default=1e-8
        EM stops when the gradient of the target rows' mean log likelihood meets the
        optimality (KKT) conditions on the simplex to ``tol``: the classes above the
        floor share one gradient to ``tol``, and none at the floor has a larger one.
    max_iter : int, default=1000
        EM's cap on steps (evaluations of the likelihood's gradient); reaching it warns
        (``ConvergenceWarning``).
    min_prior : float, default=1e-6
        Floor on each estimated prior (then renormalised), so that a class absent from
        the target rows keeps a ratio later steps can move.
    shrinkage : float, default=0.0
        Strength ``c`` of an optional shrinkage of the EM estimate toward
        ``train_prior_`` by the evidence for it: each log ratio
        ``d_k = log(pi'_k / pi_k)`` is multiplied by ``max(0, 1 - c / LR_k)``, ``LR_k``
        the likelihood-ratio statistic of class ``k``'s move (twice the target rows' log
        likelihood at the estimate minus that with class ``k`` put back at its training
        prior), then the priors are renormalised (where the likelihood is quadratic this
        is the positive-part empirical-Bayes, James-Stein, factor). Off by default: on
        the corpus study's tuning tables every strength above 0 raised the prior's error
        and, with ``pseudo_count``, bought no log loss (``docs/results/prior_shift.md``).
    posterior_mean : bool, default=True
        Adapt to each prior's posterior mean given the EM estimate and its standard
        error, under a flat prior on ``[0, 1]``
        (``bernonnx._core.priors.posterior_mean_priors``), rather than to the estimate
        itself. The target rows' log likelihood is taken quadratic about the estimate
        (its slope at the floor, its Fisher curvature), and the standard error is the
        Fisher one of the target rows, times ``sqrt(1 + n / m)`` where the ``m``
        calibration rows are known (the calibrator's own error, see
        ``calibration_rows``). An estimate many standard errors inside ``(0, 1)`` is
        kept, and so is a class at the floor the rows are sure is absent (a steep
        slope); one EM puts at 0 for a class the probabilities barely separate (a flat
        likelihood, a standard error of 0.1: the data cannot tell 0 from 0.2) moves in
        by about 0.8 standard errors, so that class's rows are not adapted to a
        near-zero probability. On the corpus study's tuning tables it raised the
        multiclass log-loss recovery from 0.90 to 0.95 and left the binary one as it
        was (``benchmarks/prior_shift_corpus.md``). False adapts to the EM estimate
        (after ``shrinkage``, with ``pseudo_count``).
    pseudo_count : float, default=1.0
        Rows ``a`` added to each class's expected count among the ``n`` target rows (the
        total ``sample_weight``) before adapting: ``prior_ = (n pi' + a) / (n + K a)``,
        the posterior mean of the priors under a symmetric Dirichlet(``a``) prior (1:
        Laplace's rule of succession). A class EM sends to the floor
        keeps at least ``a / (n + K a)`` rather than ``min_prior``, so the few target
        rows of a class EM missed cost a bounded log loss, while a class absent from
        thousands of rows still gets less than one row's share. Chosen with
        ``posterior_mean`` on the corpus study's tuning tables; 0 adds none
        (``prior_em_`` holds the raw EM estimate either way).
    calibration_rows : float or None, default=None
        How many rows (total weight) the wrapped probabilities were calibrated on; None
        reads it from a final ``CalibratedClassifier`` (the weights of its calibration
        rows), else it is unknown. The calibrator's own sampling error moves the
        estimate as much as that many target rows would, which a bootstrap of the
        target rows cannot see: with ``m`` calibration rows and ``n`` target rows the
        bootstrap interval gets the variance of an estimate from ``m`` rows, the Fisher
        variance of the target rows' estimate times ``n / m`` for ``n`` target rows,
        added to each half-width in quadrature (the error of a difference of two
        independent samples' estimates; from the Fisher information, so that it does
        not vanish where the bootstrap's does, at an estimate on the floor), and the
        standard error ``posterior_mean`` reads is widened by ``sqrt(1 + n / m)``.
        Unknown: no widening (the interval then reflects the target rows alone).
    n_bootstrap : int, default=200
        Bootstrap resamples of the target rows behind ``prior_interval_``; 0 for none
        (each resample is an EM run, from ``prior_`` on, to ``max(tol, 1e-6)``: the
        interval costs about ``n_bootstrap`` point estimates).
    confidence : float, default=0.95
        Level of the percentile interval.
    random_state : int, RandomState instance or None, default=None
        Seeds the bootstrap.

    Attributes
    ----------
    estimator_ : classifier
        ``estimator``, as given.
    classes_ : ndarray of shape (n_classes,)
    train_prior_ : ndarray of shape (n_classes,)
        The priors the wrapped probabilities are calibrated for.
    prior_ : ndarray of shape (n_classes,)
        The target priors: ``priors``, or the EM estimate (shrunk by ``shrinkage``, if
        set; its posterior mean with ``posterior_mean``) with ``pseudo_count`` rows added
        to each class: the priors ``predict_proba`` and the ONNX graph adapt to.
    prior_em_ : ndarray of shape (n_classes,)
        The raw EM estimate (maximum likelihood), before shrinkage and pseudo-counts:
        the estimate of the priors; ``priors`` when given.
    prior_interval_ : ndarray of shape (n_classes, 2) or None
        Bootstrap percentile interval of each EM estimate (``prior_em_``) at
        ``confidence``, widened where the calibration rows ``m`` are known
        (``calibration_rows``): each half-width ``h`` becomes
        ``sqrt(h**2 + z**2 v n / m)``, ``v`` the Fisher variance of the estimate from
        the ``n`` target rows and ``z`` the normal quantile of ``confidence``; and where
        needed to hold ``prior_`` and ``prior_em_``;
        ``[priors, priors]`` for given priors; None with ``n_bootstrap=0``.
    prior_se_ : ndarray of shape (n_classes,) or None
        Bootstrap standard error of each EM estimate, with the same calibration
        variance ``v n / m`` added (``sqrt(se**2 + v n / m)``; zeros for given
        priors). ``v`` is inf for a class the probabilities carry no information on
        (a model predicting its calibration prior on every row): the standard error is
        then inf and the interval ``[0, 1]``, and ``posterior_mean`` leaves that class's
        estimate where EM left it.
    calibration_rows_ : float or None
        ``calibration_rows``, or the calibration weight read from the model; None when
        unknown.
    n_iter_ : int
        EM steps of the estimate (0 for given priors).
    n_features_in_ : int
        The wrapped model's, when it has it.
    feature_names_in_ : ndarray of shape (n_features,)
        The wrapped model's, when it has it.

    Notes
    -----
    Neither ``posterior_mean``, the pseudo-counts nor the shrinkage need the bootstrap
    (all work with ``n_bootstrap=0``; the Fisher variance costs one pass over the
    probabilities, the shrinkage ``n_classes + 1``). ``posterior_mean`` and the
    pseudo-counts guard the adapted probabilities where EM is sure and wrong. With
    several classes the probabilities barely separate, a small miscalibration (class
    means off by 0.02) moves the maximum of the likelihood to the boundary: EM puts a
    class at 0 even on rows with no shift at all, every bootstrap resample agrees, and
    adapting to that estimate costs that class's rows several nats each. Its Fisher
    standard error (0.09 for such a class where a separated one has 0.02) still says
    the data cannot tell 0 from 0.2, and the posterior mean reads it
    (``benchmarks/prior_shift_corpus.md``, "Why multiclass recovery fails"). Where
    every class's probabilities overlap (accuracy near the majority share) no
    estimate from them is reliable: check the interval's width before adapting.

    EM maximises the likelihood of the target rows as a mixture of the classes with
    weights ``pi'``; each step sets ``pi'_k`` to the mean over the rows of the
    probabilities adapted to the current ``pi'``. It assumes the probabilities are
    calibrated for ``train_prior``; the better calibrated, the better the estimate
    (Alexandari, Kundaje & Shrikumar 2020). The ONNX export
    (:func:`bernonnx.to_onnx`, ``priors_input=True`` for a per-request input) computes
    the same adaptation in the same graph as the model.

    References
    ----------
    M. Saerens, P. Latinne and C. Decaestecker, "Adjusting the outputs of a classifier
    to new a priori probabilities: a simple procedure", Neural Computation 14(1), 2002.

    A. Alexandari, A. Kundaje and A. Shrikumar, "Maximum likelihood with bias-corrected
    calibration is hard-to-beat at label shift adaptation", ICML 2020.

    Z. Lipton, Y.-X. Wang and A. Smola, "Detecting and correcting for label shift with
    black box predictors", ICML 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from bernonnx import CalibratedClassifier, PriorShiftAdapter
    >>> X, y = make_classification(4000, weights=[0.8], random_state=0)
    >>> clf = CalibratedClassifier(LogisticRegression(), cv=3).fit(X[:2000], y[:2000])
    >>> clf.calibration_prior_.round(2)
    array([0.8, 0.2])
    >>> rest = np.flatnonzero(y[2000:] == 1)[:400] + 2000  # target rows: half positive
    >>> target = np.concatenate([np.flatnonzero(y[2000:] == 0)[:400] + 2000, rest])
    >>> adapter = PriorShiftAdapter(clf, random_state=0).fit(X[target])
    >>> adapter.prior_.round(1), adapter.prior_interval_.shape
    (array([0.5, 0.5]), (2, 2))
    >>> PriorShiftAdapter(clf, priors=[0.5, 0.5]).fit().predict_proba(X[:1]).shape
    (1, 2)
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["predict_proba"])],
        "priors": ["array-like", None],
        "train_prior": ["array-like", None],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [IntInterval(1, None, closed="left")],
        "min_prior": [Interval(Real, 0, 0.5, closed="neither")],
        "shrinkage": [Interval(Real, 0, None, closed="left")],
        "posterior_mean": ["boolean"],
        "pseudo_count": [Interval(Real, 0, None, closed="left")],
        "calibration_rows": [Interval(Real, 0, None, closed="neither"), None],
        "n_bootstrap": [IntInterval(0, None, closed="left")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        estimator,
        *,
        priors=None,
        train_prior=None,
        tol=1e-8,
        max_iter=1000,
        min_prior=1e-6,
        shrinkage=0.0,
        posterior_mean=True,
        pseudo_count=1.0,
        calibration_rows=None,
        n_bootstrap=200,
        confidence=0.95,
        random_state=None,
    ):
        self.estimator = estimator
        self.priors = priors
        self.train_prior = train_prior
        self.tol = tol
        self.max_iter = max_iter
        self.min_prior = min_prior
        self.shrinkage = shrinkage
        self.posterior_mean = posterior_mean
        self.pseudo_count = pseudo_count
        self.calibration_rows = calibration_rows
        self.n_bootstrap = n_bootstrap
        self.confidence = confidence
        self.random_state = random_state

    def _train_prior(self, final, n_classes: int) -> np.ndarray:
        if self.train_prior is not None:
            return check_priors(
                self.train_prior, n_classes, "train_prior", least=SMALLEST_DIVISOR_PRIOR
            )
        recorded = getattr(final, "calibration_prior_", None)
        if recorded is None:
            raise ValueError(
                f"train_prior is None and {type(final).__name__} records no "
                "calibration_prior_: pass train_prior, the class priors its probabilities "
                "are calibrated for (the class shares of its calibration rows)"
            )
        return check_priors(
            recorded,
            n_classes,
            f"{type(final).__name__}.calibration_prior_",
            least=SMALLEST_DIVISOR_PRIOR,
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X=None, y=None, sample_weight=None):
        """Read the wrapped model's priors; estimate the target priors from ``X``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features), default=None
            Unlabeled target rows, as the wrapped model takes them. Needed (at least
            :data:`MIN_TARGET_ROWS` rows, no missing values) unless ``priors`` is given,
            in which case it is not read.
        y : None
            Ignored: the target rows are unlabeled (accepted for Pipeline use).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the target rows (a weight of 2 counts a row twice).

        Returns
        -------
        self : PriorShiftAdapter
        """
        estimator = self.estimator
        try:
            check_is_fitted(estimator)
        except NotFittedError:
            raise ValueError(
                f"estimator must be a fitted classifier; {type(estimator).__name__} is not "
                "fitted (PriorShiftAdapter adapts a model, it never fits one)"
            ) from None
        self.estimator_ = estimator
        self.classes_ = np.asarray(estimator.classes_)
        n_classes = self.classes_.shape[0]
        final = final_classifier(estimator)
        self.train_prior_ = self._train_prior(final, n_classes)
        self.calibration_rows_ = self.calibration_rows
        if self.calibration_rows_ is None and isinstance(final, CalibratedClassifier):
            self.calibration_rows_ = float(
                sum(pair.weight for pair in final.calibrated_classifiers_)
            )
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(estimator, name):
                setattr(self, name, getattr(estimator, name))
        if self.priors is not None:
            self.prior_ = check_priors(self.priors, n_classes, "priors")
            self.prior_em_ = self.prior_
            self.prior_interval_ = np.stack([self.prior_, self.prior_], axis=1)
            self.prior_se_ = np.zeros(n_classes)
            self.n_iter_ = 0
            return self
        if not _is_calibrated(final):
            warnings.warn(
                f"{type(final).__name__} is not a calibrated model (CalibratedClassifier, "
                "a bernonnx calibrator, CalibratedClassifierCV): EM assumes probabilities "
                "calibrated for train_prior, and the estimate is only as right as they are",
                UncalibratedModelWarning,
                stacklevel=2,
            )
        proba, weights = self._target_proba(X, sample_weight)
        self.prior_em_, self.n_iter_, residual = em_priors(
            proba,
            self.train_prior_,
            weights=weights,
            tol=self.tol,
            max_iter=self.max_iter,
            min_prior=self.min_prior,
        )
        if residual >= self.tol:
            warnings.warn(
                f"EM did not converge in max_iter={self.max_iter} steps: the likelihood's "
                f"gradient still breaks optimality by {residual:.3g} (tol={self.tol:g}); "
                "raise max_iter",
                ConvergenceWarning,
                stacklevel=2,
            )
        prior = self.prior_em_
        if self.shrinkage:
            ratios = likelihood_ratios(proba, self.train_prior_, prior, weights)
            prior = shrink_by_likelihood(prior, self.train_prior_, ratios, self.shrinkage)
        rows = float(len(proba) if weights is None else weights.sum())
        ratio = rows / self.calibration_rows_ if self.calibration_rows_ else 0.0
        # the Fisher variance of the estimate, and the share of it the calibration rows
        # add: posterior_mean reads the one, the interval the other (a pass over the
        # rows, skipped where neither is wanted)
        variance = np.zeros(len(self.prior_em_))
        if self.posterior_mean or (ratio and self.n_bootstrap):
            covariance = prior_covariance(proba, self.train_prior_, self.prior_em_, weights)
            variance = np.maximum(np.diag(covariance), 0.0)
        # (an infinite variance, a class the rows carry no information on, times 0 is 0)
        extra = variance * ratio if ratio else np.zeros_like(variance)
        if self.posterior_mean:
            slope = likelihood_slope(proba, self.train_prior_, self.prior_em_, weights)
            # a class the target rows carry no information on (an infinite variance:
            # a model predicting its calibration prior on every row) keeps its
            # estimate: nothing in the rows moves it, and its interval says so
            se = np.where(np.isinf(variance), 0.0, np.sqrt(variance * (1.0 + ratio)))
            prior = posterior_mean_priors(prior, se, slope=slope, target_variance=variance)
        self.prior_ = add_pseudo_counts(prior, rows, self.pseudo_count)
        self.prior_interval_, self.prior_se_ = self._bootstrap(proba, weights, extra)
        return self

    def _target_proba(self, X, sample_weight):
        """The wrapped model's probabilities of the checked target rows, and weights."""
        if X is None:
            raise ValueError(
                "X is None: give the unlabeled target rows to estimate the priors from, "
                "or the priors themselves (priors=...)"
            )
        n = _num_samples(X)
        if n < MIN_TARGET_ROWS:
            raise ValueError(
                f"X must hold at least {MIN_TARGET_ROWS} target rows to estimate the priors "
                f"from, got {n}: from fewer, even known labels would give each prior a 95% "
                "interval wider than +-0.1; pass priors=... if you know them"
            )
        missing = _missing_rows(X)
        if missing:
            raise ValueError(
                f"X has missing values in {missing} of its {n} target rows: drop or impute "
                "them first (an estimate from the other rows would be of another population)"
            )
        weights = None
        if sample_weight is not None:
            weights = np.asarray(sample_weight, dtype=np.float64)
            if weights.shape != (n,) or not np.all(np.isfinite(weights)) or weights.min() < 0:
                raise ValueError(
                    f"sample_weight must be {n} finite non-negative weights, got shape "
                    f"{weights.shape}"
                )
            if weights.sum() <= 0:
                raise ValueError("sample_weight must have a positive total")
        proba = np.empty((n, len(self.classes_)))
        for start in range(0, n, _PREDICT_BLOCK):
            rows = slice(start, start + _PREDICT_BLOCK)
            block = X.iloc[rows] if hasattr(X, "iloc") else X[rows]
            proba[rows] = self.estimator_.predict_proba(block)
        return proba, weights

    def _bootstrap(self, proba, weights, calibration_variance):
        """Percentile interval and standard error over resamples of the target rows,
        each estimated by EM from the point estimate on; the interval is widened by
        ``calibration_variance`` (the calibration rows' share of the estimate's
        variance) and to hold the point estimates themselves (``prior_`` and
        ``prior_em_``).

        A resample is a row of multinomial counts (how often each row is drawn),
        drawn and estimated a block at a time: memory is bounded by
        ``_BOOTSTRAP_CELLS``, not by ``n_bootstrap`` times the rows."""
        if self.n_bootstrap == 0:
            return None, None
        rng = check_random_state(self.random_state)
        n = proba.shape[0]
        base = None if weights is None else weights
        uniform = np.full(n, 1.0 / n)
        block = int(max(1, min(_BOOTSTRAP_CHUNK, _BOOTSTRAP_CELLS // n)))
        estimates = []
        for start in range(0, self.n_bootstrap, block):
            size = min(block, self.n_bootstrap - start)
            resampled = rng.multinomial(n, uniform, size=size).astype(np.float64)
            if base is not None:
                resampled *= base
                resampled = resampled[resampled.sum(axis=1) > 0]
            if len(resampled):
                chunk, _, _ = em_priors(
                    proba,
                    self.train_prior_,
                    weights=resampled,
                    start=self.prior_em_,
                    tol=max(self.tol, _BOOTSTRAP_TOL),
                    max_iter=self.max_iter,
                    min_prior=self.min_prior,
                )
                estimates.append(chunk)
            del resampled
        found = np.concatenate(estimates)
        alpha = (1.0 - self.confidence) / 2.0
        interval = np.quantile(found, [alpha, 1.0 - alpha], axis=0).T
        se = found.std(axis=0, ddof=1) if len(found) > 1 else np.zeros(found.shape[1])
        if self.calibration_rows_:
            # the calibrator's sampling error adds the variance of an estimate from
            # calibration_rows_ rows to that from the target rows; from the Fisher
            # information, which does not vanish at the floor as the bootstrap does
            extra = norm.ppf(0.5 + self.confidence / 2.0) ** 2 * calibration_variance
            center = self.prior_em_
            below = np.maximum(center - interval[:, 0], 0.0)
            above = np.maximum(interval[:, 1] - center, 0.0)
            low = center - np.sqrt(below**2 + extra)
            high = center + np.sqrt(above**2 + extra)
            interval = np.clip(np.stack([low, high], axis=1), 0.0, 1.0)
            se = np.sqrt(se**2 + calibration_variance)
        # a percentile interval of a skewed bootstrap (a prior near the floor) can miss
        # the estimate it is the interval of: the reported interval always holds it
        points = np.stack([self.prior_, self.prior_em_], axis=1)
        interval[:, 0] = np.minimum(interval[:, 0], points.min(axis=1))
        interval[:, 1] = np.maximum(interval[:, 1], points.max(axis=1))
        return interval, se

    def __sklearn_clone__(self):
        """An unfitted copy with the same parameters and the same wrapped model.

        ``PriorShiftAdapter`` adapts a fitted model and never fits one, so the model is
        kept as it is (scikit-learn's ``clone`` would clone it unfitted, as it does any
        estimator parameter; ``FrozenEstimator`` is kept the same way). Every other
        parameter is cloned as ``clone`` does: grid searches, ``cross_val_score`` and
        Pipelines get an adapter whose ``fit`` works.
        """
        return clone_keeping_fitted(self)

    def predict_proba(self, X):
        """The wrapped model's probabilities moved to ``prior_`` by Bayes' rule.

        ``w = prior_ / train_prior_``; each row ``p * w / sum(p * w)``
        (``bernonnx._core.priors.adapt_proba``, which the ONNX graph emits op for op).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        return adapt_proba(self.estimator_.predict_proba(X), self.train_prior_, self.prior_)

    def predict(self, X):
        """The class with the highest adapted probability."""
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.input_tags.allow_nan = False
        return tags
