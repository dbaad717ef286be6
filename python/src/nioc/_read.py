"""Reading the files nioc-gpu writes: trajectory CSV, fit results, sample output.

Only parsing and rearranging: every number comes from the binary's files unchanged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    import arviz

# Subject and trial are labels (s01, 007): read as text so that nothing is renumbered.
_IDS = {"subject": str, "trial": str}

# pandas before 3 parses floats to within an ulp or so unless asked for round_trip; 3.0
# parses them exactly by default and deprecates the argument.
_EXACT = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}


def read_csv(path: str | os.PathLike[str], **kwargs: Any) -> pd.DataFrame:
    """``pd.read_csv`` with every digit of the file's floats."""
    return pd.read_csv(path, **_EXACT, **kwargs)


def read_trajectories(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A trajectory CSV (``subject,trial,t,<states>``) as a DataFrame.

    ``subject`` and ``trial`` are read as text (they are labels), ``t`` as an integer, the
    states as float64 with every digit of the file.
    """
    return read_csv(path, dtype=_IDS)


def results_csv_path(jsonl: str | os.PathLike[str]) -> Path:
    """The table ``fit`` writes beside a results file: ``r.jsonl`` → ``r.csv``."""
    s = os.fspath(jsonl)
    for ext in (".jsonl", ".json"):
        if s.endswith(ext):
            s = s[: -len(ext)]
            break
    return Path(s + ".csv")


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a JSON Lines file, one dict per line."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_fit(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A ``fit`` results file as a DataFrame: its ``.csv`` table, one row per subject.

    The columns are the table's (``docs/guide.md``, "Reading the results"): ``subject``,
    ``loglik``, ``aic``, ``bic``, ``converged``, …, then per parameter its estimate
    (``action_cost``), ``_fixed`` value, ``_scale``, ``_stderr_scaled``,
    ``_ci95_scaled_lo``/``_hi`` and ``_ci95_natural_lo``/``_hi``.

    ``df.attrs`` holds ``records`` (the JSON records of the ``.jsonl`` file, in the table's
    row order: every field, e.g. ``check``, ``warnings``, ``identified``) and ``path``.

    Args:
        path: the results file given to ``fit --out`` (``results.jsonl``).
    """
    table = read_csv(results_csv_path(path), dtype={"subject": str})
    records = {str(r["subject"]): r for r in read_jsonl(path)}
    table.attrs["records"] = [records.get(s) for s in table["subject"]]
    table.attrs["path"] = os.fspath(path)
    return table


def read_sample(
    out: str | os.PathLike[str], data: str | os.PathLike[str] | None = None
) -> arviz.InferenceData:
    """A ``sample`` output directory as an ArviZ ``InferenceData``.

    * ``posterior``: every sampled parameter (natural units) with dims
      ``(chain, draw, subject)``; chain and draw numbered as in ``draws.csv`` (from 1).
    * ``sample_stats``: from ``draws.csv``: ``lp`` (its ``log_posterior``: unconstrained
      scale, Jacobian included, up to a constant, as Stan's ``lp__``), ``diverging`` (its
      ``divergent``), ``tree_depth``, ``step_size``, ``energy`` (the Hamiltonian at the draw,
      Stan's ``energy__``), ``acceptance_rate`` (its ``accept_stat``) and ``n_steps`` (its
      ``n_leapfrog``), named as ArviZ's ``from_cmdstan`` names them, so that
      ``az.bfmi(idata.sel(subject=s))`` and ``az.plot_energy`` work. The last three are left
      out for a ``draws.csv`` of an earlier nioc-gpu, which did not write them.
    * ``observed_data`` (when ``data`` is given): the trajectory CSV, one row per time step
      (dim ``row``), with ``subject``, ``trial`` and ``t`` as coordinates.
    * ``posterior.attrs``: ``warnings`` (every warning message of ``summary.json``),
      ``subjects_with_warnings``, ``summary_json`` (the whole of ``summary.json``, as text),
      ``out`` (the directory) and ``inference_library(_version)``.

    Subjects whose chains failed (``error`` in ``summary.json``) have no draws and are
    left out; their messages are in the warnings.

    Args:
        out: the directory given to ``sample --out``.
        data: the trajectory CSV that was sampled, for ``observed_data``.

    Raises:
        ImportError: ArviZ is not installed (``pip install 'nioc[arviz]'``).
    """
    try:
        import arviz as az
        import xarray as xr
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("nioc.sample needs ArviZ: pip install 'nioc[arviz]'") from exc

    out = Path(out)
    draws = read_csv(out / "draws.csv", dtype={"subject": str})
    with open(out / "summary.json", encoding="utf-8") as f:
        summary_text = f.read()
    summary = json.loads(summary_text)

    # draws.csv's sampler statistics and ArviZ's names of them (io_cmdstan's rename_dict).
    stats = {
        "log_posterior": "lp",
        "divergent": "diverging",
        "tree_depth": "tree_depth",
        "step_size": "step_size",
        "energy": "energy",
        "accept_stat": "acceptance_rate",
        "n_leapfrog": "n_steps",
    }
    ids = ["subject", "chain", "draw"]
    params = [c for c in draws.columns if c not in ids and c not in stats]
    stats = {k: v for k, v in stats.items() if k in draws.columns}  # earlier versions: no energy
    subjects = list(dict.fromkeys(draws["subject"]))  # the binary's order

    cube = (
        xr.Dataset.from_dataframe(draws.set_index(["chain", "draw", "subject"]))
        .reindex(subject=subjects)
        .transpose("chain", "draw", "subject")
    )
    posterior = cube[params]
    sample_stats = cube[list(stats)].rename(stats)
    if sample_stats["diverging"].dtype != bool and not sample_stats["diverging"].isnull().any():
        sample_stats["diverging"] = sample_stats["diverging"].astype(bool)

    run = summary.get("run", {})
    warnings: list[str] = []
    for s in summary.get("subjects", []):
        warnings += [w["message"] for w in s.get("warnings") or []]
        if s.get("error"):
            warnings.append(f"subject {s['subject']}: {s['error']}")
    posterior.attrs.update(
        {
            "inference_library": "nioc-gpu",
            "inference_library_version": str(run.get("version", "")),
            "warnings": warnings,
            "subjects_with_warnings": [str(s) for s in summary.get("subjects_with_warnings") or []],
            "summary_json": summary_text,
            "out": str(out),
        }
    )
    sample_stats.attrs.update({"inference_library": "nioc-gpu"})
    groups: dict[str, Any] = {"posterior": posterior, "sample_stats": sample_stats}
    if data is not None:
        traj = read_trajectories(data)
        traj.index.name = "row"
        observed = xr.Dataset.from_dataframe(traj.drop(columns=["subject", "trial", "t"]))
        groups["observed_data"] = observed.assign_coords(
            subject=("row", traj["subject"].to_numpy()),
            trial=("row", traj["trial"].to_numpy()),
            t=("row", traj["t"].to_numpy()),
        )
    return az.InferenceData(**groups)
