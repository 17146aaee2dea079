"""PNG plots of a results folder, in the manner of the papers' figures.

Runs under the harness's matplotlib environment (see bench.py: a venv under
build/bench/venv, or Debian's python3-matplotlib); needs nothing else from
the harness except results.py and papers.py.

    python plots.py RESULTS_FOLDER MODE
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import papers  # noqa: E402
from results import read_csvs, with_derived  # noqa: E402

COLORS = {"tessera": "#1f77b4", "linux": "#7f7f7f"}
LABELS = {"tessera": "Tessera", "linux": "Linux 6.1"}
SYSTEMS = ["tessera", "linux"]


def _time_axis(mode, scale_label):
    if mode == "icount":
        return f"time per operation ({scale_label}, icount: ≈ instructions)"
    return f"time per operation ({scale_label})"


def _subtitle(rows, exp, mode):
    conf = "QEMU icount (deterministic)" if mode == "icount" else f"QEMU {mode}, median of runs, bars: min–max"
    if not any(r["system"] == "tessera" and r["experiment"] == exp for r in rows):
        issue = papers.EXPERIMENTS.get(exp, {}).get("issue", "a later issue").split(" (")[0]
        return f"{conf}; Tessera not yet measurable ({issue})"
    return conf


def _select(rows, exp, metric=None, system=None):
    return [r for r in rows if r["experiment"] == exp
            and (metric is None or r["metric"] == metric)
            and (system is None or r["system"] == system)]


def _err(r, scale):
    # icount runs are identical: a zero-height error bar would only add noise.
    if r["runs"] > 1 and r["max"] > r["min"]:
        return [[(r["value"] - r["min"]) / scale], [(r["max"] - r["value"]) / scale]]
    return None


TESSERA_SHADES = ["#1f77b4", "#6baed6", "#08519c", "#9ecae1", "#3182bd"]


def series(rows, exp, linux_metric, param):
    """Bars for one setting: Linux's figure and every Tessera figure that
    answers it (same name, or a counterpart such as an eager/demand variant)."""
    out = []
    for r in rows:
        if r["experiment"] != exp:
            continue
        if r["system"] == "linux" and r["metric"] == linux_metric and r["param"] == param:
            out.append((LABELS["linux"], r))
        elif r["system"] == "tessera":
            (e, m, p), variant = papers.linux_counterpart(exp, r["metric"], r["param"])
            if m == linux_metric and p == param:
                out.append((f"Tessera ({variant})" if variant else "Tessera", r))
    return out


def grouped_bars(ax, groups, bars_for, scale, fmt="{:,.0f}"):
    """One group of bars per setting, one bar per series (papers' bar charts).

    bars_for(group) -> [(series label, row)]; a series keeps its slot and
    colour in every group, Tessera's series first, Linux's last.
    """
    labels = []
    for g in groups:
        for label, _ in bars_for(g):
            if label not in labels:
                labels.append(label)
    labels.sort(key=lambda lab: lab == LABELS["linux"])
    colors = {}
    for i, lab in enumerate(x for x in labels if x != LABELS["linux"]):
        colors[lab] = TESSERA_SHADES[i % len(TESSERA_SHADES)]
    colors[LABELS["linux"]] = COLORS["linux"]
    width = 0.8 / max(1, len(labels))
    seen = set()
    for j, g in enumerate(groups):
        for label, r in bars_for(g):
            i = labels.index(label)
            x = j + (i - (len(labels) - 1) / 2) * width
            ax.bar(x, r["value"] / scale, width, color=colors[label], yerr=_err(r, scale), capsize=3,
                   label=None if label in seen else label)
            seen.add(label)
            # Label above the error bar, where there is one, so neither hides the other.
            top = (r["max"] if _err(r, scale) else r["value"]) / scale
            ax.annotate(fmt.format(r["value"] / scale), (x, top),
                        ha="center", va="bottom", fontsize=7 if len(labels) > 2 else 8,
                        xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(range(len(groups)))
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    ax.margins(y=0.2)


def plot_syscall(rows, mode, out):
    fig, ax = plt.subplots(figsize=(6, 4))
    groups = ["getpid", "clock_gettime"]
    grouped_bars(ax, groups, lambda g: series(rows, "syscall", g, ""), 1)
    ax.set_xticklabels(["getpid (null system call)", "clock_gettime"])
    ax.set_ylabel(_time_axis(mode, "ns"))
    fig.suptitle("Null system call and clock read")
    ax.set_title(_subtitle(rows, "syscall", mode), fontsize=8)
    _save(fig, out / "syscall.png")


def plot_spawn(rows, mode, out):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    groups = ["fork_exec_wait", "vfork_exec_wait", "posix_spawn_wait"]
    grouped_bars(ax, groups, lambda g: series(rows, "spawn", g, ""), 1000)
    tessera = any(r["system"] == "tessera" for r in _select(rows, "spawn"))
    ax.set_xticklabels(["fork + execve + wait",
                        "vfork + execve + wait" + ("\n(Tessera: spawn + exit + wait)" if tessera else ""),
                        "posix_spawn + wait"])
    ax.set_ylabel(_time_axis(mode, "µs"))
    fig.suptitle("Creating and deleting a process (tiny static program)")
    ax.set_title(_subtitle(rows, "spawn", mode), fontsize=8)
    _save(fig, out / "spawn.png")


def plot_pageaccess(rows, mode, out):
    """Seed 000 fig. 8 (time per request vs BSS pages) beside table 5 (faults)."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    pages = sorted({r["param"] for r in _select(rows, "pageaccess")}, key=int)
    grouped_bars(a1, pages, lambda g: series(rows, "pageaccess", "fork_exec_wait", g), 1e6, fmt="{:.2f}")
    a1.set_xticklabels(pages)
    a1.set_xlabel("BSS pages touched (page access program)")
    a1.set_ylabel(_time_axis(mode, "ms") .replace("per operation", "per spawn"))
    a1.set_title("start, run, exit, reap: time per spawn (Linux: fork + execve + wait)", fontsize=10)
    grouped_bars(a2, pages, lambda g: series(rows, "pageaccess", "minflt", g), 1, fmt="{:,.0f}")
    a2.set_xticklabels(pages)
    a2.set_xlabel("BSS pages touched (page access program)")
    a2.set_ylabel("page faults per spawn (count)")
    a2.set_title("page faults per spawn (Linux: child's getrusage)", fontsize=10)
    for ax in (a1, a2):  # the bars grow to the right: the left corner is free
        ax.legend(loc="upper left")
    fig.suptitle("Page access program (seed 000, fig. 8 and table 5)\n" + _subtitle(rows, "pageaccess", mode),
                 fontsize=11)
    _save(fig, out / "pageaccess.png")


def plot_pagefault(rows, mode, out):
    fig, ax = plt.subplots(figsize=(5, 4))
    grouped_bars(ax, ["anon_first_touch"], lambda g: series(rows, "pagefault", g, ""), 1)
    ax.set_xticklabels(["first touch of a 4 KiB anonymous page"])
    ax.set_ylabel(_time_axis(mode, "ns").replace("per operation", "per page"))
    fig.suptitle("First-touch page fault")
    ax.set_title(_subtitle(rows, "pagefault", mode), fontsize=7)
    _save(fig, out / "pagefault.png")


def plot_ipc(rows, mode, out):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    metrics = []
    for r in _select(rows, "ipc", system="linux"):
        if r["metric"] not in metrics:
            metrics.append(r["metric"])
    grouped_bars(ax, metrics, lambda g: series(rows, "ipc", g, "1"), 1000, fmt="{:.1f}")
    names = {"pipe": "two pipes", "unix": "Unix stream socket", "futex": "futex on a shared page"}
    ax.set_xticklabels([names.get(m, m.replace("_", " ")) for m in metrics])
    ax.set_ylabel(_time_axis(mode, "µs").replace("per operation", "per round trip"))
    fig.suptitle("Round trip between two processes, 1 byte, one CPU")
    ax.set_title(_subtitle(rows, "ipc", mode), fontsize=8)
    _save(fig, out / "ipc.png")


def _size_label(v, _pos=None):
    v = int(v)
    return f"{v >> 20} MiB" if v >= 1 << 20 else f"{v >> 10} KiB"


def plot_transfer(rows, mode, out):
    """Latency against message size, one line per method and system (log-log).

    Linux's methods in greys, dashed; Tessera's in colour, solid: the eye
    should find Tessera's lines against the Linux band.
    """
    fig, ax = plt.subplots(figsize=(8, 5))
    markers = ["o", "s", "^", "D", "v", "P", "X"]
    greys = ["#303030", "#707070", "#a8a8a8", "#c8c8c8"]
    for s in SYSTEMS:
        metrics = []
        for r in _select(rows, "transfer", system=s):
            if r["metric"] not in metrics:
                metrics.append(r["metric"])
        for i, m in enumerate(metrics):
            pts = sorted(_select(rows, "transfer", metric=m, system=s), key=lambda r: int(r["param"]))
            xs = [int(r["param"]) for r in pts]
            ys = [r["value"] / 1000 for r in pts]
            color = plt.cm.tab10(i) if s == "tessera" else greys[i % len(greys)]
            ax.plot(xs, ys, marker=markers[i % len(markers)], linestyle="-" if s == "tessera" else "--",
                    color=color, label=f"{LABELS[s]}: {m.replace('_', ' + ')}")
            if any(r["max"] > r["min"] for r in pts):
                ax.fill_between(xs, [r["min"] / 1000 for r in pts], [r["max"] / 1000 for r in pts],
                                color=color, alpha=0.15)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
    ax.set_xlabel("message size")
    ax.set_ylabel(_time_axis(mode, "µs").replace("per operation", "per message + 1-byte ack"))
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle("Moving data between two processes")
    ax.set_title(_subtitle(rows, "transfer", mode), fontsize=8)
    _save(fig, out / "transfer.png")


def plot_kernel(rows, mode, out):
    ks = [r for r in _select(rows, "kernel", system="tessera") if r["unit"] == "ns"]
    if not ks:
        return
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(ks) + 1.5))
    labels = [r["metric"].replace("_", " ") + (f" ({r['param']})" if r["param"] else "") for r in ks]
    ax.barh(range(len(ks)), [r["value"] for r in ks], color=COLORS["tessera"],
            xerr=[[r["value"] - r["min"] for r in ks], [r["max"] - r["value"] for r in ks]]
            if any(r["max"] > r["min"] for r in ks) else None)
    for i, r in enumerate(ks):
        ax.annotate(f"{r['value']:,.0f}", (max(r["value"], r["max"]), i), va="center", fontsize=8,
                    xytext=(3, 0), textcoords="offset points")
    ax.set_yticks(range(len(ks)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel(_time_axis(mode, "ns, log scale"))
    fig.suptitle("Tessera kernel-internal operations")
    ax.set_title("QEMU icount (deterministic)" if mode == "icount"
                 else f"QEMU {mode}, median of runs, bars: min–max", fontsize=8)
    ax.margins(x=0.15)
    _save(fig, out / "kernel.png")


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


PLOTS = {"syscall": plot_syscall, "spawn": plot_spawn, "pageaccess": plot_pageaccess,
         "pagefault": plot_pagefault, "ipc": plot_ipc, "transfer": plot_transfer, "kernel": plot_kernel}


def main(folder, mode):
    folder = Path(folder)
    rows = with_derived(read_csvs(folder))
    out = folder / "plots"
    out.mkdir(exist_ok=True)
    present = {r["experiment"] for r in rows}
    for exp, fn in PLOTS.items():
        target = out / f"{exp}.png"
        if exp in present:
            fn(rows, mode, out)
        elif target.exists():
            target.unlink()  # no figures any more: no stale plot either


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
