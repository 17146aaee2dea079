"""BENCH lines in, statistics and CSV files out.

Line format (shared with Tessera's kernel), one figure per line:

    BENCH,<experiment>,<metric>,<param>,<value>,<unit>

Anything else on the console is ignored, except `BENCH-INFO,<key>,<value>`
(facts recorded with the configuration), `BENCH-ERROR,...` (a failure inside
the guest) and `BENCH-DONE` (the suite finished).
"""

import csv
import statistics
from dataclasses import dataclass, field
from pathlib import Path

CSV_FIELDS = ["system", "experiment", "metric", "param", "unit", "value",
              "runs", "min", "max", "q1", "q3"]


@dataclass
class Parsed:
    figures: list = field(default_factory=list)   # (experiment, metric, param, value, unit)
    info: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)
    done: bool = False
    bad_lines: list = field(default_factory=list)


def parse(lines):
    p = Parsed()
    for line in lines:
        # A guest may print a figure in the middle of other console output;
        # take the line from the marker on.
        i = line.find("BENCH")
        if i < 0:
            continue
        line = line[i:].strip()
        if line == "BENCH-DONE":
            p.done = True
        elif line.startswith("BENCH-INFO,"):
            parts = line.split(",", 2)
            if len(parts) == 3:
                p.info[parts[1]] = parts[2]
        elif line.startswith("BENCH-ERROR"):
            p.errors.append(line)
        elif line.startswith("BENCH,"):
            parts = line.split(",")
            if len(parts) != 6:
                p.bad_lines.append(line)
                continue
            try:
                p.figures.append((parts[1], parts[2], parts[3], float(parts[4]), parts[5]))
            except ValueError:
                p.bad_lines.append(line)
    return p


def _quartiles(values):
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def aggregate(system, runs):
    """Combine the figures of N runs (lists from parse()) into rows.

    icount runs are deterministic and N is 1; for plain TCG the row's value
    is the median of the runs, with min/max and quartiles as the spread.
    """
    by_key = {}
    order = []
    for figures in runs:
        for exp, metric, param, value, unit in figures:
            key = (exp, metric, param, unit)
            if key not in by_key:
                by_key[key] = []
                order.append(key)
            by_key[key].append(value)
    rows = []
    for key in order:
        exp, metric, param, unit = key
        vals = sorted(by_key[key])
        q1, q3 = _quartiles(vals)
        rows.append({
            "system": system, "experiment": exp, "metric": metric, "param": param,
            "unit": unit, "value": statistics.median(vals), "runs": len(vals),
            "min": vals[0], "max": vals[-1], "q1": q1, "q3": q3,
        })
    return rows


def _fmt(v):
    return f"{v:.2f}".rstrip("0").rstrip(".") if isinstance(v, float) else str(v)


def write_csv(path, rows):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(r[k]) for k in CSV_FIELDS})


def read_csv(path):
    """The rows of one experiment CSV; none if it is missing or is another
    kind of table (such as ltp.csv)."""
    path = Path(path)
    if not path.exists():
        return []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != CSV_FIELDS:
            return []
        rows = list(reader)
    for r in rows:
        for k in ("value", "min", "max", "q1", "q3"):
            r[k] = float(r[k])
        r["runs"] = int(r["runs"])
    return rows


def read_csvs(folder):
    """All rows of all experiment CSVs in a results folder (other tables
    living there, such as ltp.csv, have other columns and are skipped)."""
    return [r for path in sorted(Path(folder).glob("*.csv")) for r in read_csv(path)]


def with_derived(rows):
    """Rows plus figures computed from others, for tables and plots only.

    Tessera's page access program reports its faults by category
    (faults_<category>_<policy>); seed 000's table 5 and Linux's getrusage
    count all of them, so add faults_all_<policy> per page count.
    """
    import re
    sums = {}
    for r in rows:
        m = re.fullmatch(r"faults_(\w+?)_(eager|demand)", r["metric"])
        if r["system"] == "tessera" and r["experiment"] == "pageaccess" and m and m.group(1) != "all":
            key = (m.group(2), r["param"])
            if key not in sums:
                sums[key] = dict(r, metric=f"faults_all_{m.group(2)}", value=0.0, min=0.0, max=0.0,
                                 q1=0.0, q3=0.0)
            for k in ("value", "min", "max", "q1", "q3"):
                sums[key][k] += r[k]
    have = {(r["system"], r["experiment"], r["metric"], r["param"]) for r in rows}
    return rows + [r for r in sums.values()
                   if ("tessera", "pageaccess", r["metric"], r["param"]) not in have]


def poolmem_series(rows, setting, system="tessera"):
    """The `poolmem` samples of one setting: [(ms, bytes)], in time order."""
    pts = [(float(r["param"]), r["value"]) for r in rows
           if r["system"] == system and r["experiment"] == "poolmem" and r["metric"] == setting
           and r["param"].replace(".", "", 1).isdigit()]
    return sorted(pts)


def poolmem_burst_end(points, idle_gap_ms, idle_samples):
    """Index of the sample taken at the end of the burst.

    After the burst the benchmark program sleeps between samples, so the
    trailing samples lie at least `idle_gap_ms` apart (`idle_samples` of
    them); during the burst a sample follows each round of processes.  The
    end of the burst is the sample before that trailing run, and never the
    start sample (index 0): under plain TCG one round can take longer than
    the idle gap.
    """
    if len(points) < 2:
        return len(points) - 1
    i = len(points) - 1
    idle = 0
    while i > 1 and idle < idle_samples and points[i][0] - points[i - 1][0] >= idle_gap_ms:
        i -= 1
        idle += 1
    return i
