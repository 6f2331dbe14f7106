"""The library's private core: what only bernonnx itself uses.

The math, engine-neutral: the Bernstein basis and tensor products (:mod:`.basis`,
:mod:`.tensor`), a one-score fit's loss terms (:mod:`.loss`), the monotone QP
(:mod:`.qp`), the score transforms (:mod:`.transforms`), the strictly increasing tail
term of the log-odds (:mod:`.tail`), the weighted quantiles in memory and streamed, side
by side (:mod:`.quantiles`), what a fit reads (:mod:`.points`: ``Points``, the ``Rows``
protocol, binning, folds), the fits (:mod:`.newton`) and the degree search
(:mod:`.degree`), the key bins of ``partial_fit`` (:mod:`.keybins`) and rows in chunks
(:mod:`.chunks`). One layer up, the sources of rows and the passes over them
(:mod:`.sources`, :mod:`.parquet`). Nothing here imports an estimator; the layers are in
``ARCHITECTURE.md`` and checked by ``tests/test_layers.py``.
"""
