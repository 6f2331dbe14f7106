"""The library's private core: what only bernonnx itself uses.

The Bernstein basis and tensor products (:mod:`.basis`, :mod:`.tensor`), the monotone QP
(:mod:`.qp`), the score transforms (:mod:`.transforms`), the weighted quantiles, in memory
and streamed, side by side (:mod:`.quantiles`), the key bins of ``partial_fit``
(:mod:`.keybins`). Nothing here imports an estimator; see ``ARCHITECTURE.md`` for the layers.
"""
