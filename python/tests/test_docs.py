"""The documents' Python: every ```python block of README.md and docs/python.md runs, in
order, in a temporary directory, with the nioc of this environment (the wheel, under
make python-test). What a reader has before a document's first block (the README's
study.csv) is made by SETUP; a size is changed only where SUBSTITUTIONS says so and why, and
a substitution that no longer matches fails the test, so that none outlives its text.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")  # the pages' figures, drawn without a display

import nioc  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/python.md"]

SMALL_POSTERIOR = "chains=2, warmup=10, draws=10, max_depth=4, plots=False"
SUBSTITUTIONS = [
    ("README.md", 'init=est.attrs["path"])', f'init=est.attrs["path"], {SMALL_POSTERIOR})',
     "sample's defaults (4 chains of 500 + 1000 iterations) take minutes on 2 cores"),
    ("docs/python.md", "warmup=200, draws=200", "warmup=10, draws=10, chains=2, max_depth=4",
     "4 chains of 200 + 200 iterations take half a minute on 2 cores"),
]


def setup_readme(_: Path) -> None:
    # "Your own data in three commands" begins with the reader's CSV file: a pendulum study of
    # 2 subjects × 10 trials stands in for it, as in cmd/nioc-gpu/docs_test.go.
    nioc.simulate("pendulum", subjects=2, trials=10, seed=1, out="study.csv", echo=False)


SETUP = {"README.md": setup_readme}


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.parametrize("doc", DOCS)
def test_doc_python_blocks(doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    for where, old, new, _why in SUBSTITUTIONS:
        if where == doc:
            assert old in text, f"SUBSTITUTIONS: {doc} has no {old!r} any more: remove or update it"
            text = text.replace(old, new)
    blocks = python_blocks(text)
    assert blocks, f"{doc} has no ```python block any more: remove it from DOCS"
    monkeypatch.chdir(tmp_path)
    if doc in SETUP:
        SETUP[doc](tmp_path)
    namespace: dict = {"__name__": "__doc__"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{doc} (python block {i + 1})", "exec"), namespace)
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
