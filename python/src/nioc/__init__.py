"""nioc: Python client of nioc-gpu, probabilistic inverse optimal control.

A thin layer over the ``nioc-gpu`` command, in the manner of CmdStanPy: each function builds
the command line from its keyword options (``restarts=10`` → ``--restarts 10``), writes the
data as a trajectory CSV, runs the binary and reads the files it writes into pandas
DataFrames or an ArviZ ``InferenceData``. Nothing of the method is computed in Python.

    >>> import nioc
    >>> data = nioc.simulate("pendulum", trials=20, seed=1)
    >>> est = nioc.fit(data, task="pendulum", restarts=10)
    >>> idata = nioc.sample(data, task="pendulum", chains=2, draws=200)

The binary is ``$NIOC_GPU_BIN``, else the one packaged in the wheel, else ``nioc-gpu`` on
the PATH (:func:`binary`). Full documentation: docs/python.md of the nioc-gpu repository.
"""

from ._commands import Data, fit, loglik, sample, simulate, tasks, version
from ._read import read_fit, read_jsonl, read_sample, read_trajectories, results_csv_path
from ._runner import Completed, NiocError, binary, flag_args, run

__all__ = [
    "Completed",
    "Data",
    "NiocError",
    "binary",
    "fit",
    "flag_args",
    "loglik",
    "read_fit",
    "read_jsonl",
    "read_sample",
    "read_trajectories",
    "results_csv_path",
    "run",
    "sample",
    "simulate",
    "tasks",
    "version",
]
