"""The ``bernonnx`` command line: ``demo``, ``compare``, ``export``, ``attach``, ``adapt``.

Installed as the ``bernonnx`` console script (``python -m bernonnx`` runs the same
:func:`main`). Results go to standard output; progress lines and errors go to standard
error, errors as one line starting ``bernonnx: error:``.

Exit status: 0 success; 1 unexpected failure (``--traceback`` shows where); 2 bad usage
or bad input (unknown option or method, unreadable file, missing column, non-binary
labels, non-numeric or non-finite scores, an output path that is an input), as argparse
does for usage errors; 3 the ONNX graph does not reproduce Python (``export``, ``demo``).

Everything is checked before anything is written, and every file is written whole
(a temporary file in the same folder, then renamed).

Layout: :mod:`._parser` the arguments; :mod:`.demo`, :mod:`.compare`, :mod:`.export`,
:mod:`.attach` and :mod:`.adapt` one command each; :mod:`._files` reads every command's
input (a CSV through :mod:`._csv`, Parquet through :mod:`._stream`, which also streams large files)
and writes the outputs, :mod:`._methods` the ``--method`` names (from
:mod:`bernonnx._registry`) and their fits, :mod:`._table` formats the results,
:mod:`._base` the exit statuses and progress lines. Modules import downwards only:
``_base`` <- ``_csv``, ``_methods`` <- ``_stream`` <- ``_files`` <- the commands.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence

from ._base import EXIT_FAILURE, EXIT_OK, EXIT_PARITY, EXIT_USAGE, InputError, _Progress
from ._parser import _build_parser
from .adapt import _cmd_adapt
from .attach import _cmd_attach
from .compare import _cmd_compare
from .demo import _cmd_demo
from .export import _cmd_export

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_PARITY", "EXIT_USAGE", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``bernonnx`` command line and return its exit status.

    Parameters
    ----------
    argv : sequence of str, default=None
        The arguments after the program name; ``sys.argv[1:]`` if None.

    Returns
    -------
    status : int
        :data:`EXIT_OK` (0) on success, :data:`EXIT_USAGE` (2) for bad usage or bad
        input, :data:`EXIT_FAILURE` (1) for anything unexpected. Errors are printed to
        standard error as one line starting ``bernonnx: error:``.

    Examples
    --------
    >>> import json, os, tempfile
    >>> import numpy as np
    >>> from bernonnx.cli import main
    >>> rng = np.random.default_rng(0)
    >>> score = rng.normal(size=400)
    >>> label = rng.random(400) < 1 / (1 + np.exp(-2 * score))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     data, result = os.path.join(tmp, "s.csv"), os.path.join(tmp, "r.json")
    ...     np.savetxt(data, np.c_[label, score], delimiter=",", header="y,s", comments="")
    ...     status = main(["-q", "compare", data, "--label", "y", "--score", "s",
    ...                    "--method", "platt", "--method", "isotonic",
    ...                    "--format", "json", "--output", result])
    ...     report = json.load(open(result))
    >>> status, [row["method"] for row in report["results"]]
    (0, ['platt', 'isotonic'])
    >>> main(["-q", "compare", "no-such-file.csv", "--label", "y", "--score", "s"])
    2
    """
    parser = _build_parser()
    args = None
    try:
        args = parser.parse_args(argv)
        progress = _Progress(quiet=args.quiet)
        command = {
            "demo": _cmd_demo,
            "compare": _cmd_compare,
            "export": _cmd_export,
            "attach": _cmd_attach,
            "adapt": _cmd_adapt,
        }
        return command[args.command](args, progress)
    except InputError as exc:
        print(f"bernonnx: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("bernonnx: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:  # --help and --version exit through argparse
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except Exception as exc:
        if args is not None and args.traceback:
            traceback.print_exc()
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(
            f"bernonnx: error: unexpected {type(exc).__name__}: {message} "
            "(rerun as 'bernonnx --traceback ...' to see where)",
            file=sys.stderr,
        )
        return EXIT_FAILURE
