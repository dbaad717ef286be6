"""Finding the nioc-gpu binary, turning keyword options into its flags, and running it.

Nothing here computes anything of the method: it builds a command line, runs it, passes its
progress through and turns a failure into :class:`NiocError`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

BINARY_ENV = "NIOC_GPU_BIN"
_EXE = "nioc-gpu.exe" if sys.platform == "win32" else "nioc-gpu"


class NiocError(RuntimeError):
    """The nioc-gpu command failed (or could not be run).

    Attributes:
        command: the command line that was run.
        returncode: its exit status (None if it could not be started).
        stderr: everything it printed on stderr, the reason of the failure at its end.
    """

    def __init__(
        self,
        message: str,
        command: Sequence[str] = (),
        returncode: int | None = None,
        stderr: str = "",
    ) -> None:
        super().__init__(message)
        self.command = list(command)
        self.returncode = returncode
        self.stderr = stderr


def binary() -> str:
    """The nioc-gpu executable that this package runs.

    Looked up in this order: the environment variable ``NIOC_GPU_BIN``; the binary packaged in
    the wheel (``nioc/bin/nioc-gpu``); ``nioc-gpu`` on the ``PATH``.

    Raises:
        NiocError: none was found, or ``NIOC_GPU_BIN`` names no executable file.
    """
    env = os.environ.get(BINARY_ENV)
    if env:
        path = Path(env).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise NiocError(f"{BINARY_ENV}={env} is not an executable file")
        return str(path)
    packaged = Path(__file__).resolve().parent / "bin" / _EXE
    if packaged.is_file():
        return str(packaged)
    found = shutil.which("nioc-gpu")
    if found:
        return found
    raise NiocError(
        "nioc-gpu not found: install a wheel that carries it (make wheel), put nioc-gpu on "
        f"the PATH, or set {BINARY_ENV}=/path/to/nioc-gpu"
    )


def flag_args(options: Mapping[str, Any]) -> list[str]:
    """The command-line flags of keyword options, in their order.

    ``restarts=10`` → ``--restarts 10``; underscores become hyphens
    (``check_draws=0`` → ``--check-draws 0``); ``True`` → ``--flag``, ``False`` →
    ``--flag=false``; a list or tuple → its items joined by commas (``infer=["a", "b"]`` →
    ``--infer a,b``); a mapping → ``name=value`` pairs joined by commas
    (``fix={"obs_noise": 1}`` → ``--fix obs_noise=1``); ``None`` → no flag. Numbers are
    written as Python writes them (``repr``: every digit of a float), paths as paths.
    Whether a flag exists and what it means is the command's business: an unknown one is
    its error.
    """
    args: list[str] = []
    for key, value in options.items():
        if value is None:
            continue
        name = "--" + key.replace("_", "-")
        if value is True:
            args.append(name)
        elif value is False:
            args.append(name + "=false")
        else:
            args += [name, _value(value)]
    return args


def _value(value: Any) -> str:
    if isinstance(value, Mapping):
        return ",".join(f"{k}={_scalar(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ",".join(_scalar(v) for v in value)
    return _scalar(value)


def _scalar(value: Any) -> str:
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()  # a NumPy scalar: its Python value (repr of np.float64 is 'np.float64(…)')
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


class Completed:
    """What a finished command printed: ``stdout`` and ``stderr`` (str), and its ``command``."""

    def __init__(self, command: list[str], stdout: str, stderr: str) -> None:
        self.command = command
        self.stdout = stdout
        self.stderr = stderr

    def __repr__(self) -> str:
        return f"Completed(command={self.command!r})"


def run(
    command: str,
    *args: str | os.PathLike[str],
    echo: bool = True,
    cwd: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Completed:
    """Run ``nioc-gpu COMMAND [ARGS] [FLAGS]`` and wait for it.

    Args:
        command: the subcommand (``fit``, ``compare``, ``merge``, …).
        *args: positional arguments, after the flags (e.g. results files for ``compare``).
        echo: pass the command's stderr (its progress, notes and warnings) through to
            ``sys.stderr`` as it prints it; ``False``: only keep it (``Completed.stderr``).
        cwd: working directory of the command.
        **options: the command's flags (see :func:`flag_args`).

    Returns:
        Its output: ``stdout`` and ``stderr``.

    Raises:
        NiocError: it exited with a non-zero status; the error carries its stderr, whose
            last lines say why.
    """
    cmd = [binary(), command, *flag_args(options), *(os.fspath(a) for a in args)]
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    except OSError as exc:
        raise NiocError(f"could not run {cmd[0]}: {exc}", cmd) from exc
    err_lines: list[str] = []
    relay = threading.Thread(target=_relay, args=(proc.stderr, err_lines, echo), daemon=True)
    relay.start()
    assert proc.stdout is not None
    try:
        stdout = proc.stdout.read()
        proc.wait()
    except BaseException:
        # An interrupt that reaches Python only (a notebook's stop button) is passed on, so
        # that the command stops as on Ctrl-C (fit saves its checkpoint, sample keeps the
        # subjects it has finished; --resume goes on).
        _interrupt(proc)
        raise
    relay.join()
    stderr = "".join(err_lines)
    if proc.returncode != 0:
        tail = "\n".join(stderr.strip().splitlines()[-5:])
        raise NiocError(
            f"nioc-gpu {command} failed (exit status {proc.returncode}): {tail}",
            cmd,
            proc.returncode,
            stderr,
        )
    return Completed(cmd, stdout, stderr)


def _interrupt(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    if sys.platform == "win32":
        proc.terminate()
    else:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _relay(stream: IO[str] | None, lines: list[str], echo: bool) -> None:
    assert stream is not None
    for line in iter(stream.readline, ""):
        lines.append(line)
        if echo:
            sys.stderr.write(line)
            sys.stderr.flush()


_session: str | None = None


def session_dir(prefix: str) -> Path:
    """A new directory for one command's output files, kept until the interpreter exits."""
    global _session
    if _session is None:
        _session = tempfile.mkdtemp(prefix="nioc-")
        atexit.register(shutil.rmtree, _session, True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=_session))
