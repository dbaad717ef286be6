"""Tests of the nioc client against the nioc-gpu binary's own files.

Run by python/test.sh (make python-test) in a fresh virtual environment where the wheel is
installed; NIOC_TEST_WHEEL=1 there makes test_runs_the_wheels_binary check that the package and
the binary are the wheel's. Sizes are tiny: the point is that what Python returns is exactly
what the command wrote, not the quality of the estimates.
"""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nioc

TASK = "pendulum"
FIT = {"restarts": 2, "seed": 1, "check_draws": 0, "quiet": True}
SAMPLE = {"chains": 2, "warmup": 20, "draws": 20, "max_depth": 4, "seed": 1, "plots": False, "quiet": True}


def cli(*args: str) -> subprocess.CompletedProcess:
    """Run the binary directly, as a user at the command line would."""
    return subprocess.run([nioc.binary(), *args], capture_output=True, text=True, check=True)


def read_table(path: Path) -> pd.DataFrame:
    """A CSV with every digit (pandas < 3 needs round_trip for that; 3 deprecates it)."""
    exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    return pd.read_csv(path, dtype={"subject": str}, **exact)


def read_csv_cells(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def same_cell(cell: str, value) -> bool:
    """A CSV cell of the binary against the DataFrame's value, with no tolerance."""
    if cell in ("", "NaN"):
        return value is None or (isinstance(value, float) and math.isnan(value))
    if cell in ("true", "false"):
        return bool(value) == (cell == "true")
    try:
        return float(cell) == float(value)
    except (TypeError, ValueError):
        return cell == str(value)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("nioc")


@pytest.fixture(scope="module")
def data(work: Path) -> pd.DataFrame:
    return nioc.simulate(TASK, trials=5, subjects=2, seed=1, out=work / "data.csv", echo=False)


def test_flag_args():
    assert nioc.flag_args({"restarts": 10}) == ["--restarts", "10"]
    assert nioc.flag_args({"check_draws": 0, "task_file": Path("a/b.toml")}) == [
        "--check-draws", "0", "--task-file", "a/b.toml"]
    assert nioc.flag_args({"resume": True, "plots": False, "seed": None}) == ["--resume", "--plots=false"]
    assert nioc.flag_args({"infer": ["action_cost", "obs_noise"]}) == ["--infer", "action_cost,obs_noise"]
    assert nioc.flag_args({"fix": {"obs_noise": 1, "motor_noise": 0.1}}) == ["--fix", "obs_noise=1,motor_noise=0.1"]
    assert nioc.flag_args({"jitter": 1e-8, "target_accept": np.float64(0.95), "chains": np.int64(4)}) == [
        "--jitter", "1e-08", "--target-accept", "0.95", "--chains", "4"]
    x = 0.1 + 0.2  # every digit of a float reaches the binary
    assert nioc.flag_args({"params": {"obs_noise": x}}) == ["--params", f"obs_noise={x!r}"]


def test_binary_lookup(tmp_path, monkeypatch):
    fake = tmp_path / "nioc-gpu"
    fake.write_text("#!/bin/sh\necho fake\n")
    fake.chmod(0o755)
    monkeypatch.setenv("NIOC_GPU_BIN", str(fake))
    assert nioc.binary() == str(fake)
    monkeypatch.setenv("NIOC_GPU_BIN", str(tmp_path / "missing"))
    with pytest.raises(nioc.NiocError, match="NIOC_GPU_BIN"):
        nioc.binary()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_interrupt_is_passed_on(tmp_path, monkeypatch):
    # A notebook's stop button interrupts Python only: the command must get the SIGINT that
    # Ctrl-C would give it (fit saves its checkpoint on it, sample keeps finished subjects).
    mark = tmp_path / "interrupted"
    fake = tmp_path / "nioc-gpu"
    fake.write_text(f"#!/bin/sh\ntrap 'echo stopped > {mark}; exit 130' INT\n"
                    "i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n")  # 10 s at most
    fake.chmod(0o755)
    monkeypatch.setenv("NIOC_GPU_BIN", str(fake))
    # Python's own handler, as in a terminal or a notebook: a test run in the background of a
    # shell without job control inherits SIGINT ignored, and Python then installs none.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C to Python alone
    try:
        with pytest.raises(KeyboardInterrupt):
            nioc.run("fit", echo=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert mark.read_text().strip() == "stopped"


@pytest.mark.skipif(not os.environ.get("NIOC_TEST_WHEEL"), reason="only where the wheel is installed (make python-test)")
def test_runs_the_wheels_binary():
    assert "NIOC_GPU_BIN" not in os.environ
    pkg = Path(nioc.__file__).resolve().parent
    assert Path(sys.prefix).resolve() in pkg.parents, "nioc is imported from the fresh venv"
    assert Path(nioc.binary()) == pkg / "bin" / ("nioc-gpu.exe" if sys.platform == "win32" else "nioc-gpu")
    assert nioc.version()


def test_tasks():
    tasks = {t["name"]: t for t in nioc.tasks()}
    assert tasks[TASK]["states"] == ["theta", "omega"]
    assert [p["name"] for p in tasks[TASK]["params"]] == ["action_cost", "velocity_cost", "motor_noise", "obs_noise"]


def test_simulate_is_the_commands_file(work, data):
    cli("simulate", "--task", TASK, "--trials", "5", "--subjects", "2", "--seed", "1", "--out", str(work / "cli.csv"))
    assert (work / "cli.csv").read_bytes() == (work / "data.csv").read_bytes()
    rows = read_csv_cells(work / "data.csv")
    assert list(data.columns) == ["subject", "trial", "t", "theta", "omega"] and len(data) == len(rows) == 2 * 5 * 51
    for row, (_, rec) in zip(rows, data.iterrows()):
        assert all(same_cell(row[c], rec[c]) for c in data.columns)


def test_fit_equals_results_files_and_the_command_line(work, data):
    est = nioc.fit(data, task=TASK, out=work / "fit.jsonl", echo=False, **FIT)
    # The DataFrame is the results table, cell for cell, and its records the JSON lines.
    rows = read_csv_cells(work / "fit.csv")
    assert list(est.columns) == list(rows[0]) and len(est) == len(rows) == 2
    for row, (_, rec) in zip(rows, est.iterrows()):
        for col in est.columns:
            assert same_cell(row[col], rec[col]), col
    lines = {r["subject"]: r for r in nioc.read_jsonl(work / "fit.jsonl")}
    assert est.attrs["records"] == [lines[s] for s in est["subject"]]
    for rec, (_, row) in zip(est.attrs["records"], est.iterrows()):
        for name, value in rec["params"].items():
            assert row[name] == value
            lo, hi = rec["ci95_natural"][name]
            assert (row[f"{name}_ci95_natural_lo"], row[f"{name}_ci95_natural_hi"]) == (lo, hi)

    # The command line on the same file and flags gives the same estimates.
    cli("fit", "--task", TASK, "--data", str(work / "data.csv"), "--restarts", "2", "--seed", "1",
        "--check-draws", "0", "--quiet", "--out", str(work / "cli-fit.jsonl"))
    by_cli = read_table(work / "cli-fit.csv")
    timing = ["seconds"]
    pd.testing.assert_frame_equal(est.drop(columns=timing), by_cli.drop(columns=timing), check_exact=True)


def test_data_as_path_numpy_and_dataframe_agree(work, data):
    by_frame = nioc.loglik(data, task=TASK, params={"obs_noise": 0.5}, echo=False)
    by_path = nioc.loglik(work / "data.csv", task=TASK, params={"obs_noise": 0.5}, echo=False)
    structured = data.to_records(index=False)
    by_records = nioc.loglik(structured, task=TASK, params={"obs_noise": 0.5}, echo=False)
    plain = data.to_numpy()
    by_array = nioc.loglik(plain, task=TASK, params={"obs_noise": 0.5}, columns=list(data.columns), echo=False)
    for other in (by_path, by_records, by_array):
        pd.testing.assert_frame_equal(by_frame, other, check_exact=True)
    with pytest.raises(TypeError, match="named states"):
        nioc.loglik(plain, task=TASK)

    # loglik's table is the command's JSON lines.
    out = cli("loglik", "--task", TASK, "--data", str(work / "data.csv"), "--params", "obs_noise=0.5").stdout
    records = [json.loads(line) for line in out.splitlines()]
    assert by_frame.attrs["records"] == records
    for rec, (_, row) in zip(records, by_frame.iterrows()):
        assert row["loglik"] == rec["loglik"] and row["subject"] == rec["subject"]
        assert all(row[f"grad_{k}"] == v for k, v in rec["grad"].items())


def test_errors_carry_the_commands_message(work, data):
    with pytest.raises(nioc.NiocError) as err:
        nioc.fit(work / "no-such.csv", task=TASK, echo=False)
    assert "no-such.csv" in err.value.stderr and err.value.returncode != 0
    with pytest.raises(nioc.NiocError, match="no-such-flag"):
        nioc.fit(data, task=TASK, no_such_flag=1, echo=False)
    with pytest.raises(ValueError, match="hierarchical"):
        nioc.sample(data, task=TASK, population="pop")


def test_progress_is_passed_through(data, capsys):
    nioc.loglik(data, task=TASK, echo=False)
    nioc.fit(data, task=TASK, echo=True, **FIT)
    err = capsys.readouterr().err
    assert err.count("fitting pendulum") == 1 and "done: 2 subject(s)" in err


def test_sample_is_the_commands_draws_and_summary(work, data):
    az = pytest.importorskip("arviz")
    out = work / "post"
    idata = nioc.sample(data, task=TASK, out=out, echo=False, **SAMPLE)
    post, stats = idata.posterior, idata.sample_stats
    params = ["action_cost", "velocity_cost", "motor_noise", "obs_noise", "temperature"]
    assert list(post.data_vars) == params
    assert dict(post.sizes) == {"chain": 2, "draw": 20, "subject": 2}
    assert list(post.subject.values) == ["1", "2"]

    # Every draw and sample statistic is draws.csv's.
    for row in read_csv_cells(out / "draws.csv"):
        at = {"chain": int(row["chain"]), "draw": int(row["draw"]), "subject": row["subject"]}
        for p in params:
            assert float(row[p]) == post[p].sel(at).item()
        assert float(row["log_posterior"]) == stats["lp"].sel(at).item()
        assert (row["divergent"] == "true") == stats["diverging"].sel(at).item()
        assert int(row["tree_depth"]) == stats["tree_depth"].sel(at).item()
        assert float(row["step_size"]) == stats["step_size"].sel(at).item()
        assert float(row["energy"]) == stats["energy"].sel(at).item()
        assert float(row["accept_stat"]) == stats["acceptance_rate"].sel(at).item()
        assert int(row["n_leapfrog"]) == stats["n_steps"].sel(at).item()
    assert list(stats.data_vars) == ["lp", "diverging", "tree_depth", "step_size", "energy", "acceptance_rate", "n_steps"]
    assert stats["diverging"].dtype == bool

    # The summary's warnings, and the observed data.
    summary = json.loads((out / "summary.json").read_text())
    messages = [w["message"] for s in summary["subjects"] for w in s.get("warnings") or []]
    assert list(post.attrs["warnings"]) == messages and messages
    assert json.loads(post.attrs["summary_json"]) == summary
    obs = idata.observed_data
    assert np.array_equal(obs["theta"].values, data["theta"].to_numpy())
    assert list(obs["subject"].values) == list(data["subject"])

    # ArviZ's summary equals summary.csv: mean and sd (stat_focus="mean"); the 5 %, 50 % and
    # 95 % quantiles as the equal-tailed interval of stat_focus="median" with hdi_prob=0.9
    # (xarray's quantile, type 7 like nioc-gpu's; not the default HDI); R-hat and ESS.
    table = read_table(out / "summary.csv")
    table.index = [f"{p}[{s}]" for p, s in zip(table["parameter"], table["subject"])]
    mean = az.summary(idata, kind="stats", round_to="none").loc[table.index]
    eti = az.summary(idata, kind="stats", stat_focus="median", hdi_prob=0.9, round_to="none").loc[table.index]
    diag = az.summary(idata, kind="diagnostics", round_to="none").loc[table.index]
    np.testing.assert_allclose(mean["mean"], table["mean"], rtol=1e-12)
    np.testing.assert_allclose(mean["sd"], table["sd"], rtol=1e-12)
    np.testing.assert_allclose(eti["eti_5%"], table["q5"], rtol=1e-15)
    np.testing.assert_allclose(eti["median"], table["q50"], rtol=1e-15)
    np.testing.assert_allclose(eti["eti_95%"], table["q95"], rtol=1e-15)
    np.testing.assert_allclose(diag["r_hat"], table["rhat"], rtol=1e-12)
    np.testing.assert_allclose(diag["ess_bulk"], table["ess_bulk"], rtol=1e-12)
    # Tail ESS: where one tail's indicator is constant (ties at a quantile, as in these short
    # chains) nioc-gpu writes NaN as R's posterior package does, ArviZ the other tail's ESS.
    finite = table["ess_tail"].notna()
    np.testing.assert_allclose(diag["ess_tail"][finite], table["ess_tail"][finite], rtol=1e-12)

    # Saved and read back by ArviZ, attrs included.
    idata.to_netcdf(work / "post.nc")
    back = az.from_netcdf(work / "post.nc")
    assert list(back.posterior.attrs["warnings"]) == messages
    np.testing.assert_array_equal(back.posterior["obs_noise"].values, post["obs_noise"].values)


def test_energy_gives_arvizs_bfmi_and_energy_plot(work, data):
    az = pytest.importorskip("arviz", reason="az.bfmi and az.plot_energy need ArviZ (pip install 'nioc[arviz]')")
    out = work / "post-energy"
    idata = nioc.sample(data, task=TASK, out=out, echo=False, **SAMPLE)
    stats = idata.sample_stats
    # The Hamiltonian at each draw: −lp plus the kinetic energy of the draw's momentum, ≥ 0.
    kinetic = stats["energy"] + stats["lp"]
    assert bool((kinetic >= 0).all()) and bool((kinetic > 0).any())
    assert bool(((stats["acceptance_rate"] >= 0) & (stats["acceptance_rate"] <= 1)).all())
    depth, steps = stats["tree_depth"], stats["n_steps"]
    assert bool(((steps >= 2**depth - 1) & (steps <= 2 ** (depth + 1) - 1) & (steps >= 1)).all())

    # ArviZ's E-BFMI of each subject's chains is the one sample reports in summary.json.
    summary = {s["subject"]: s for s in json.loads((out / "summary.json").read_text())["subjects"]}
    for subject in ["1", "2"]:
        one = idata.sel(subject=subject)
        bfmi = az.bfmi(one)
        assert bfmi.shape == (SAMPLE["chains"],) and np.isfinite(bfmi).all()
        np.testing.assert_allclose(bfmi, [float(e) for e in summary[subject]["ebfmi"]], rtol=1e-10)
    import matplotlib

    matplotlib.use("Agg")
    ax = az.plot_energy(idata.sel(subject="1"))
    assert "BFMI" in " ".join(t.get_text() for t in ax.get_legend().get_texts())
    matplotlib.pyplot.close("all")

    # A draws.csv of an earlier nioc-gpu, without the three columns, is still read: without
    # them, as before (ArviZ then says there is no energy).
    earlier = work / "post-earlier"
    earlier.mkdir()
    (earlier / "summary.json").write_text((out / "summary.json").read_text())
    read_table(out / "draws.csv").drop(columns=["energy", "accept_stat", "n_leapfrog"]).to_csv(
        earlier / "draws.csv", index=False)
    old = nioc.read_sample(earlier)
    assert list(old.sample_stats.data_vars) == ["lp", "diverging", "tree_depth", "step_size"]
    np.testing.assert_array_equal(old.sample_stats["lp"].values, stats["lp"].values)
    assert list(old.posterior.data_vars) == list(idata.posterior.data_vars)
    with pytest.raises(TypeError, match="Energy"):
        az.bfmi(old.sel(subject="1"))


def test_read_sample_and_fit_of_existing_output(work, data):
    pytest.importorskip("arviz")
    if not (work / "post").is_dir():
        pytest.skip("needs test_sample_is_the_commands_draws_and_summary's output")
    again = nioc.read_sample(work / "post")
    assert "observed_data" not in again.groups()
    assert nioc.read_fit(work / "fit.jsonl")["subject"].tolist() == ["1", "2"]
