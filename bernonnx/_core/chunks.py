"""Rows in chunks: what every engine hands the fits, and how chunk results add up.

A :class:`Source` holds ``(score, label, weight)`` rows in chunks it can read
again and offers one operation, :meth:`Source.reduce`: ``fn`` of every
:class:`Chunk`, added (:func:`add`, pairwise by :class:`Adder`). The sources
themselves (in-memory arrays, Parquet, Dask, Spark) and the passes of a fit are
in :mod:`bernonnx._core.sources`; the streamed weighted quantiles in
:mod:`bernonnx._core.quantiles`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

import numpy as np


class Chunk(NamedTuple):
    """Rows ``start, ..., start + len(s) - 1`` of the data.

    ``s``: float64 scores; ``y``: labels as given; ``w``: float64 weights or
    ``None`` (all ones).
    """

    s: np.ndarray
    y: np.ndarray
    w: np.ndarray | None
    start: int


class Source(Protocol):
    """Rows in chunks that can be read again; see the module docstring."""

    def reduce(self, fn: Callable[[Chunk], object]) -> object:
        """``fn(chunk)`` of every chunk, added with ``+`` (in any order)."""


def add(a, b):
    """``a + b`` through tuples and lists (element by element) and ``None`` (absent)."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, (tuple, list)):
        return type(a)(add(x, y) for x, y in zip(a, b, strict=True))
    return a + b


class Adder:
    """Adds results as a binary counter adds bits: pairwise, in arrival order.

    Two sums of ``2^k`` results each make one of ``2^(k+1)``, so each result
    takes part in about ``log2(results)`` additions, not one per later result:
    this matters for summaries that grow with the rows (the distinct-score
    tables of the isotonic and histogram fits), whose additions cost their size.
    """

    def __init__(self):
        self.stack: list[tuple[int, object]] = []

    def push(self, value) -> None:
        level = 0
        while self.stack and self.stack[-1][0] == level:
            value = add(self.stack.pop()[1], value)
            level += 1
        self.stack.append((level, value))

    def total(self):
        out = None
        for _, value in self.stack:
            out = add(out, value)
        return out


def add_all(values) -> object:
    """The sum of ``values`` (an iterable), added pairwise (:class:`Adder`)."""
    adder = Adder()
    for value in values:
        adder.push(value)
    return adder.total()


def target_of(chunk: Chunk, classes: np.ndarray) -> np.ndarray:
    """0/1 float target of a chunk's labels."""
    return (chunk.y == classes[1]).astype(np.float64)


def weights_of(chunk: Chunk) -> np.ndarray:
    return np.ones(chunk.s.shape[0]) if chunk.w is None else chunk.w
