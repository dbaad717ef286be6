"""Pure helpers of sidebyside.py (no JAX needed), tested by test_sbs_parse.py.

- parse_bench_table: our per-evaluation times from the first table of ``bench/table``, read
  by its header's column names, so that added columns do not break it;
- reference_params: the values of an estimate that the reference's likelihood (and ours with
  the reference's flags) takes: a fitted temperature, which the reference fixes, is dropped;
- schedule: the interleaved order in which the two tools' fits are timed.
"""


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _seconds(cell):
    """'0.123 s' or '12 ms' -> seconds."""
    v, _, unit = cell.partition(" ")
    x = float(v)
    return x / 1e3 if unit.strip() == "ms" else x


def parse_bench_table(out, task):
    """Rows of task in the first Markdown table of `bench/table` output, keyed by the number of
    parameter vectors: {vectors: {graph_nodes, build_compile_s, per_eval_s, vectors_per_s}}.

    Columns are found by their header names ('parameter vectors', 'per evaluation', 'vectors/s',
    'build+compile', and 'graph nodes' or 'largest program (nodes)'). Raises ValueError when
    the table or a needed column is missing, or no row is the task's."""
    header = None
    rows = {}
    for line in out.splitlines():
        if not line.strip().startswith("|"):
            if header is not None and rows:
                break  # the end of the first table
            continue
        cells = _cells(line)
        if header is None:
            if cells and cells[0] == "task" and "per evaluation" in cells:
                header = {name: i for i, name in enumerate(cells)}
            continue
        if set(line.replace("|", "").strip()) <= set("-: "):
            continue  # the separator
        if len(cells) != len(header) or cells[0] != task:
            continue
        nodes_col = header.get("graph nodes", header.get("largest program (nodes)"))
        need = ["parameter vectors", "per evaluation", "vectors/s", "build+compile"]
        missing = [c for c in need if c not in header] + (["graph nodes"] if nodes_col is None else [])
        if missing:
            raise ValueError("bench/table output lacks column(s) " + ", ".join(missing))
        try:
            rows[int(cells[header["parameter vectors"]])] = dict(
                graph_nodes=int(cells[nodes_col]),
                build_compile_s=_seconds(cells[header["build+compile"]]),
                per_eval_s=_seconds(cells[header["per evaluation"]]),
                vectors_per_s=float(cells[header["vectors/s"]]))
        except ValueError:
            continue  # a failed row ("failed: ...")
    if header is None:
        raise ValueError("no bench/table header ('| task | ... | per evaluation | ...') in the output")
    if not rows:
        raise ValueError(f"no row of task {task!r} in the bench/table output")
    return rows


def reference_params(values, names):
    """The entries of values (natural units) named in names, in that order: what `nioc-gpu
    loglik --params` accepts with the reference's flags (--temperature fixed), and what the
    reference's likelihood takes. A fitted temperature, or any other name, is left out."""
    missing = [n for n in names if n not in values]
    if missing:
        raise KeyError("estimate lacks " + ", ".join(missing))
    return {n: values[n] for n in names}


def schedule(repeats):
    """The order in which the fits are timed: reference, ours, reference, ours, ... (repeats
    pairs), so that a change in the machine's load falls on both tools alike."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    return [tool for _ in range(repeats) for tool in ("ref", "ours")]
