"""Write the web page's bundled example: example/model.onnx and example/rows.csv.

A calibrated LogisticRegression in a Pipeline with a ColumnTransformer, fitted on the credit
data bundled with bernonnx (a DataFrame, so the graph takes one float64 input per column),
and 200 held-out rows as ``DataFrame.to_csv(index=False)`` writes them. Run from anywhere::

    python examples/web/make_example.py [FOLDER]     # default: examples/web/example
"""

import sys
from pathlib import Path

import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from bernonnx import CalibratedClassifier, to_onnx
from bernonnx.datasets import load_credit_default

HERE = Path(__file__).resolve().parent


def main(out: Path = HERE / "example") -> None:
    X, y, names = load_credit_default()
    frame = pd.DataFrame(X, columns=names)
    categorical = ["SEX", "EDUCATION", "MARRIAGE"]
    numeric = [c for c in names if c not in categorical]
    pipe = make_pipeline(
        ColumnTransformer(
            [
                ("cat", OneHotEncoder(handle_unknown="ignore"), categorical),
                ("num", StandardScaler(), numeric),
            ]
        ),
        LogisticRegression(max_iter=1000),
    )
    clf = CalibratedClassifier(pipe).fit(frame.iloc[:10_000], y[:10_000])
    out.mkdir(parents=True, exist_ok=True)
    (out / "model.onnx").write_bytes(to_onnx(clf, frame.iloc[:5]).SerializeToString())
    frame.iloc[20_000:20_200].to_csv(out / "rows.csv", index=False)
    print(f"wrote {out / 'model.onnx'} and {out / 'rows.csv'} (200 rows)")


if __name__ == "__main__":
    main(*map(Path, sys.argv[1:2]))
