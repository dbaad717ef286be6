"""The commands: simulate, fit, sample, loglik, tasks.

Each builds the command line from its keyword options, writes the data it is given as a
trajectory CSV, runs nioc-gpu and reads back the files it wrote.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pandas as pd

from ._read import read_csv, read_fit, read_sample, read_trajectories
from ._runner import run, session_dir

if TYPE_CHECKING:
    import arviz

Data = Union[pd.DataFrame, np.ndarray, str, "os.PathLike[str]"]
"""Trajectories: a DataFrame with columns ``subject, trial, t, <states>``; a NumPy structured
array with those fields (or a 2-D array with ``columns=``); or the path of a CSV file."""


def _data_file(data: Data, columns: Sequence[str] | None, workdir: Path) -> str:
    """The path of a trajectory CSV holding ``data``: the path itself, or a file written in
    ``workdir`` (every digit of the numbers, no index)."""
    if isinstance(data, (str, os.PathLike)):
        return os.fspath(data)
    if isinstance(data, np.ndarray):
        if data.dtype.names:
            frame = pd.DataFrame.from_records(data)
        elif data.ndim == 2 and columns is not None:
            frame = pd.DataFrame(data, columns=list(columns))
        else:
            raise TypeError(
                "a NumPy array needs named states: a structured array with fields "
                "subject, trial, t, <states>, or a 2-D array and columns=[...]"
            )
    elif isinstance(data, pd.DataFrame):
        frame = data
        if any(name is not None for name in frame.index.names):
            frame = frame.reset_index()  # subject, trial, t kept in the index
    else:
        raise TypeError(f"data must be a DataFrame, a NumPy array or a path, not {type(data).__name__}")
    path = workdir / "data.csv"
    frame.to_csv(path, index=False)
    return str(path)


def _task(task: str | None, options: dict[str, Any]) -> dict[str, Any]:
    return ({"task": task} if task is not None else {}) | options


def simulate(
    task: str | None = None,
    *,
    out: str | os.PathLike[str] | None = None,
    echo: bool = True,
    **options: Any,
) -> pd.DataFrame:
    """Simulate the task's agent: ``nioc-gpu simulate``.

    Args:
        task: a built-in task (``nioc.tasks()``); or give ``task_file="my.toml"``.
        out: where the CSV is written (``--out``); default: a temporary file kept until the
            interpreter exits (``df.attrs["path"]``).
        echo: pass the command's stderr through as it prints it.
        **options: the command's flags: ``trials=5``, ``subjects=2``, ``seed=1``,
            ``params={"obs_noise": 0.5}``, ``population={...}``, ``force=True``, …
            (``nioc-gpu simulate -h``).

    Returns:
        The trajectories (``subject, trial, t, <states>``), as :func:`read_trajectories` reads
        the file. ``df.attrs``: ``path``, ``stderr``, ``command``, and with ``population``
        the ``truth`` and ``subjects`` tables it wrote beside the CSV.

    Raises:
        NiocError: the command failed; it carries the command's stderr.
    """
    if out is None:
        out = session_dir("simulate-") / "data.csv"
    done = run("simulate", echo=echo, **_task(task, options), out=out)
    frame = read_trajectories(out)
    frame.attrs.update({"path": os.fspath(out), "stderr": done.stderr, "command": done.command})
    for key, flag, suffix in (("truth", "truth", ".truth.csv"), ("subjects", "subjects_out", ".subjects.csv")):
        side = options.get(flag) or os.fspath(out)[: -len(".csv")] + suffix
        if options.get("population") is not None and Path(side).is_file():
            frame.attrs[key] = read_csv(side, dtype={"subject": str})
    return frame


def fit(
    data: Data,
    task: str | None = None,
    *,
    out: str | os.PathLike[str] | None = None,
    echo: bool = True,
    columns: Sequence[str] | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Maximum-likelihood fit of every subject: ``nioc-gpu fit``.

    Args:
        data: the trajectories (a DataFrame, a NumPy array with named states, or a CSV path).
        task: a built-in task; or give ``task_file="my.toml"``.
        out: the results file (``--out``, ``.jsonl``; the ``.csv`` table is written beside
            it); default: a temporary file kept until the interpreter exits.
        echo: pass the command's stderr (progress, notes, warnings) through as it prints it.
        columns: the column names of ``data`` when it is a plain 2-D NumPy array.
        **options: the command's flags: ``restarts=10``, ``seed=1``, ``fix={"obs_noise": 1}``,
            ``infer=["action_cost", "velocity_cost"]``, ``uncertainty="bootstrap"``,
            ``quiet=True`` (no progress bar), ``resume=True``, … (``nioc-gpu fit -h``).

    Returns:
        The results table as :func:`read_fit` reads it: one row per subject with the
        estimates (natural units), their 95 % intervals, log-likelihood, AIC/BIC and the
        fit's diagnostics; ``df.attrs["records"]`` the JSON records (every field),
        ``df.attrs["path"]``, ``["stderr"]`` and ``["command"]``.

    Raises:
        NiocError: the command failed; it carries the command's stderr.
    """
    workdir = session_dir("fit-")
    if out is None:
        out = workdir / "fit.jsonl"
    data_path = _data_file(data, columns, workdir)
    done = run("fit", echo=echo, **_task(task, options), data=data_path, out=out)
    table = read_fit(out)
    table.attrs.update({"stderr": done.stderr, "command": done.command})
    return table


def sample(
    data: Data,
    task: str | None = None,
    *,
    out: str | os.PathLike[str] | None = None,
    echo: bool = True,
    columns: Sequence[str] | None = None,
    **options: Any,
) -> arviz.InferenceData:
    """Draws from the posterior of every subject's parameters: ``nioc-gpu sample``.

    Args:
        data: the trajectories (a DataFrame, a NumPy array with named states, or a CSV path).
        task: a built-in task; or give ``task_file="my.toml"``.
        out: the output directory (``--out``: ``draws.csv``, ``summary.csv``,
            ``summary.json``, figures); default: a temporary one kept until the interpreter
            exits (``idata.posterior.attrs["out"]``).
        echo: pass the command's stderr (progress, warnings) through as it prints it.
        columns: the column names of ``data`` when it is a plain 2-D NumPy array.
        **options: the command's flags: ``chains=4``, ``warmup=500``, ``draws=1000``,
            ``init="fit.jsonl"``, ``prior={"obs_noise": "normal(0,1)"}``, ``plots=False``,
            ``force=True``, … (``nioc-gpu sample -h``).

    Returns:
        An ArviZ ``InferenceData`` as :func:`read_sample` builds it: ``posterior``
        (chain × draw × subject), ``sample_stats`` (``lp``, ``diverging``, ``tree_depth``,
        ``step_size``, ``energy``, ``acceptance_rate``, ``n_steps``), ``observed_data``, and
        the summary's warnings in ``posterior.attrs["warnings"]``.

    Raises:
        NiocError: the command failed; it carries the command's stderr.
        ImportError: ArviZ is not installed (``pip install 'nioc[arviz]'``).
    """
    if options.get("population") is not None:
        raise ValueError(
            "nioc.sample reads the per-subject sampler's files; the hierarchical one "
            "(sample --population) writes others: run it with nioc.run(\"sample\", population=..., ...) "
            "and read its draws.csv and hierarchical.json"
        )
    workdir = session_dir("sample-")
    if out is None:
        out = workdir / "sample"
    data_path = _data_file(data, columns, workdir)
    run("sample", echo=echo, **_task(task, options), data=data_path, out=out)
    return read_sample(out, data=data_path)


def loglik(
    data: Data,
    task: str | None = None,
    *,
    echo: bool = True,
    columns: Sequence[str] | None = None,
    **options: Any,
) -> pd.DataFrame:
    """The log-likelihood of each subject's data and its gradient: ``nioc-gpu loglik``.

    Args:
        data: the trajectories (a DataFrame, a NumPy array with named states, or a CSV path).
        task: a built-in task; or give ``task_file="my.toml"``.
        echo: pass the command's stderr through as it prints it.
        columns: the column names of ``data`` when it is a plain 2-D NumPy array.
        **options: the command's flags: ``params={"obs_noise": 0.5}`` (natural units; others
            at the task's defaults), ``method="baseline"``, ``observe="full"``, …
            (``nioc-gpu loglik -h``).

    Returns:
        One row per subject: ``subject``, ``trials``, ``loglik`` and ``grad_<parameter>``
        (the gradient as the command prints it); ``df.attrs["records"]`` its JSON lines.

    Raises:
        NiocError: the command failed; it carries the command's stderr.
    """
    workdir = session_dir("loglik-")
    data_path = _data_file(data, columns, workdir)
    done = run("loglik", echo=echo, **_task(task, options), data=data_path)
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    table = pd.json_normalize(records, sep="_")
    if "subject" in table:
        table["subject"] = table["subject"].astype(str)
    front = [c for c in ("subject", "trials", "loglik") if c in table]
    table = table[front + [c for c in table.columns if c not in front]]
    table.attrs.update({"records": records, "stderr": done.stderr, "command": done.command})
    return table


def tasks(task_file: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The tasks (``nioc-gpu tasks --json``): one dict per task with its ``name``,
    ``states``, ``controls``, ``steps`` and ``params`` (each with ``default``, ``lo``,
    ``hi``, ``scale``), as the command prints them.

    Args:
        task_file: only the task of this TOML file.
    """
    done = run("tasks", echo=False, json=True, task_file=task_file)
    return json.loads(done.stdout)


def version() -> str:
    """The version of the nioc-gpu binary (``nioc-gpu --version``): the commit it was built from."""
    done = run("--version", echo=False)
    return (done.stdout or done.stderr).strip()
