"""Session settings shared by every test module: one BLAS/OpenMP thread per process.

The suite runs on pytest-xdist workers (``-n auto`` in pyproject.toml), one per core;
a worker that also spread BLAS or OpenMP over every core would oversubscribe a
2-core CI machine several times over. Set here, before any test module imports
numpy's BLAS or scikit-learn's OpenMP code, and enforced again with threadpoolctl
for libraries loaded already.
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(limits=1)
