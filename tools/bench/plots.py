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
from matplotlib.ticker import FuncFormatter, NullLocator  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import papers  # noqa: E402
from results import poolmem_burst_end, poolmem_series, read_csvs, with_derived  # noqa: E402

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


def _ipc_values(rows):
    return {(r["metric"], r["param"]): r for r in _select(rows, "ipc", system="tessera")}


def _conf(mode):
    return "QEMU icount (deterministic)" if mode == "icount" else f"QEMU {mode}, median of runs, bars: min–max"


def plot_ipc(rows, mode, out):
    """Round trip: Tessera's rendezvous (same CPU, other CPU) against Linux's
    pipe, Unix socket and futex round trips, with issue 6's goal."""
    val = _ipc_values(rows)
    bars = []  # (label, row, colour, hatch)
    same_colors = {"0": "#1f77b4", "64": "#6baed6"}
    # The boot of record first (one CPU), then the two-CPU boot, each
    # payload's same-CPU bar beside its other-CPU bar.
    record, smp2 = papers.IPC_ROUND_TRIPS[0][0], [m for m, _ in papers.IPC_ROUND_TRIPS[1:]]
    order = [(record, p) for p in ("0", "64")] + [(m, p) for p in ("0", "64") for m in smp2]
    hatches = {"round_trip_same_cpu_smp2": "..", "round_trip_cross_cpu": "//"}
    labels = {"round_trip_same_cpu": "same CPU", "round_trip_same_cpu_smp2": "same CPU\n2-CPU boot",
              "round_trip_cross_cpu": "other CPU\n2-CPU boot"}
    for metric, p in order:
        r = val.get((metric, p))
        if r is not None:
            bars.append((f"Tessera\nrendezvous, {p} B\n{labels.get(metric, metric)}", r, same_colors[p],
                         hatches.get(metric)))
    greys = ["#505050", "#7f7f7f", "#a8a8a8"]
    for i, (metric, label) in enumerate(papers.IPC_LINUX):
        lr = next((r for r in _select(rows, "ipc", metric=metric, system="linux") if r["param"] == "1"), None)
        if lr is not None:
            wrapped = label.replace(" on a ", "\non a ").replace(" socket", "\nsocket")
            bars.append((f"Linux 6.1\n{wrapped}, 1 B", lr, greys[i % len(greys)], None))
    if not bars:
        return
    fig, ax = plt.subplots(figsize=(max(7, 1.25 * len(bars) + 1.5), 4.8))
    for x, (label, r, color, hatch) in enumerate(bars):
        ax.bar(x, r["value"] / 1000, 0.65, color=color, hatch=hatch, edgecolor="#404040", linewidth=0.4,
               yerr=_err(r, 1000), capsize=3)
        top = (r["max"] if _err(r, 1000) else r["value"]) / 1000
        ax.annotate(f"{r['value'] / 1000:.2f}", (x, top), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 2), textcoords="offset points")
    if mode == "icount" and val:
        limit, _text = papers.IPC_GOAL_ROUND_TRIP
        ax.axhline(limit / 1000, color="#d62728", linestyle="--", linewidth=1,
                   label=f"issue 6 goal: call + reply on the same CPU ≤ {limit:,} ns")
        ax.legend(loc="upper left", fontsize=8)
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([b[0] for b in bars], fontsize=7.5)
    ax.set_ylabel(_time_axis(mode, "µs").replace("per operation", "per round trip"))
    ax.grid(axis="y", alpha=0.3)
    ax.margins(y=0.15)
    fig.suptitle("Round trip between two processes: Tessera's call + reply to a server, Linux's 1-byte "
                 "ping-pong", fontsize=11)
    sub = _subtitle(rows, "ipc", mode)
    if mode == "icount" and any(m == "round_trip_cross_cpu" for m, _ in val):
        sub += ("; 2-CPU boot: ipc alone with -smp 2 (dotted: same CPU, hatched: other CPU),\n"
                "both CPUs' instructions on the one icount clock")
    ax.set_title(sub, fontsize=8)
    _save(fig, out / "ipc.png")
    plot_ipc_stages(rows, mode, out)


def plot_ipc_stages(rows, mode, out):
    """callsync against request + fetch, and multi-stage requests with and
    without direct return against the number of servers in the chain (the
    calls seed 002 fig. 7 is built on)."""
    val = _ipc_values(rows)
    ifaces = [(label, val[(m, "64")]) for m, label, _calls in papers.IPC_INTERFACES if (m, "64") in val]
    stage_ms = {m for m, _ in papers.IPC_STAGES}
    stages = sorted({int(p) for m, p in val if m in stage_ms and p.isdigit()})
    if not ifaces and not stages:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1, 1.5]})
    colors = ["#1f77b4", "#ff7f0e"]
    for x, (label, r) in enumerate(ifaces):
        a1.bar(x, r["value"] / 1000, 0.6, color=colors[x % 2], edgecolor="#404040", linewidth=0.4,
               yerr=_err(r, 1000), capsize=3)
        a1.annotate(f"{r['value'] / 1000:.2f}", (x, r["value"] / 1000), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 2), textcoords="offset points")
    if len(ifaces) == 2:
        d = ifaces[1][1]["value"] - ifaces[0][1]["value"]
        a1.set_title(f"64 B, server on the same CPU; request + fetch {d:+,.0f} ns", fontsize=9)
    a1.set_xticks(range(len(ifaces)))
    a1.set_xticklabels([label.split(" (")[0].replace(", then ", " then\n") for label, _ in ifaces], fontsize=8)
    a1.set_ylabel(_time_axis(mode, "µs").replace("per operation", "per request"))
    a1.grid(axis="y", alpha=0.3)
    a1.margins(y=0.15)

    base = val.get(papers.IPC_STAGE_BASE)
    styles = {"multistage_direct_return": ("#2ca02c", "o", "-"),
              "multistage_no_direct_return": ("#d62728", "s", "--")}
    series = {}
    for m, label in papers.IPC_STAGES:
        pts = ([(1, base)] if base else []) + [(n, val[(m, str(n))]) for n in stages if (m, str(n)) in val]
        if not pts:
            continue
        color, marker, style = styles.get(m, ("#1f77b4", "^", "-"))
        xs = [n for n, _ in pts]
        ys = [r["value"] / 1000 for _, r in pts]
        series[m] = dict(zip(xs, ys))
        a2.plot(xs, ys, marker=marker, linestyle=style, color=color, label=label)
        for x_, y_ in zip(xs, ys):
            if x_ > 1:
                below = m == papers.IPC_STAGES[0][0]
                a2.annotate(f"{y_:.2f}", (x_, y_), xytext=(6, -10) if below else (-6, 6),
                            ha="left" if below else "right", textcoords="offset points", fontsize=8,
                            color=color)
    d_m, n_m = papers.IPC_STAGES[0][0], papers.IPC_STAGES[1][0]
    switch = base["value"] / 2000 if base else None
    for n in stages:
        if n in series.get(d_m, {}) and n in series.get(n_m, {}):
            lo, hi = series[d_m][n], series[n_m][n]
            a2.annotate("", (n, lo), (n, hi), arrowprops=dict(arrowstyle="<->", color="#606060", lw=0.8))
            text = f"−{(hi - lo) * 1000:,.0f} ns"
            if switch:
                text += f"\n= {(hi - lo) / switch:.2f} switches"
            a2.annotate(text, (n, (lo + hi) / 2), xytext=(6, 0), textcoords="offset points", ha="left",
                        va="center", fontsize=7.5, color="#404040")
    a2.set_xticks([1] + stages)
    a2.set_xticklabels(["1\n(plain call)"] + [str(n) for n in stages])
    a2.set_xlim(0.6, (stages[-1] if stages else 1) + 0.5)
    a2.set_xlabel("servers in the chain (relays, then echo)")
    a2.set_ylabel(_time_axis(mode, "µs").replace("per operation", "per request"))
    top = max((y for ys in series.values() for y in ys.values()), default=1)
    a2.set_ylim(0, top * 1.12)
    a2.grid(alpha=0.3)
    a2.legend(fontsize=8, loc="upper left")
    a2.set_title("multi-stage requests, 64 B, all on one CPU" + (
        f"; one server switch = half the round trip = {base['value'] / 2:,.0f} ns" if base else ""), fontsize=9)
    fig.suptitle("Tessera rendezvous: blocking against non-blocking, and direct return along a chain "
                 "(the calls under seed 002 fig. 7)\n" + _conf(mode), fontsize=10)
    _save(fig, out / "ipc_stages.png")


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
        # One CPU's times only (the counts and the other CPU's figures are
        # in the tables).
        known = papers.TRANSFER_METHODS if s == "tessera" else papers.TRANSFER_LINUX
        found = {r["metric"] for r in _select(rows, "transfer", system=s)}
        metrics = [m for m, _ in known if m in found]
        for i, m in enumerate(metrics):
            pts = sorted(_select(rows, "transfer", metric=m, system=s), key=lambda r: int(r["param"]))
            xs = [int(r["param"]) for r in pts]
            ys = [r["value"] / 1000 for r in pts]
            color = plt.cm.tab10(i) if s == "tessera" else greys[i % len(greys)]
            ax.plot(xs, ys, marker=markers[i % len(markers)], linestyle="-" if s == "tessera" else "--",
                    color=color, label=f"{LABELS[s]}: {dict(known)[m]}")
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


# Pool settings: no pool in greys, the pool in blues (darker = more of the
# pool's functions), demand paging hatched.
POOL_COLORS = {"basic": "#8c8c8c", "reuse": "#9ecae1", "add": "#3182bd", "reduce": "#08306b",
               "demand": "#d9d9d9"}


def _pool_cells(rows):
    cells = {}
    for r in _select(rows, "pool", system="tessera"):
        setting, _, mode_ = r["metric"].partition("_")
        if mode_:
            cells.setdefault(mode_, {}).setdefault(r["param"], {})[setting] = r
    return cells


def _ordered(found, known):
    return [k for k in known if k in found] + sorted(k for k in found if k not in known)


def plot_pool(rows, mode, out):
    """Seed 000 figs. 5/6 and 8/9: time per process per program, one bar per
    pool setting; left one process at a time, right 10 at once."""
    cells = _pool_cells(rows)
    if not cells:
        return
    modes = _ordered(set(cells), papers.POOL_MODES)
    programs = _ordered({p for c in cells.values() for p in c}, papers.POOL_PROGRAMS)
    fig, axes = plt.subplots(1, len(modes), figsize=(6.8 * len(modes), 5.2), sharey=True, squeeze=False)
    for ax, md in zip(axes[0], modes):
        settings = _ordered({s for c in cells[md].values() for s in c}, papers.POOL_SETTINGS)
        width = 0.84 / len(settings)
        for i, s in enumerate(settings):
            for j, prog in enumerate(programs):
                r = cells[md].get(prog, {}).get(s)
                if r is None:
                    continue
                x = j + (i - (len(settings) - 1) / 2) * width
                v = r["value"] / 1e6
                ax.bar(x, v, width, color=POOL_COLORS.get(s, TESSERA_SHADES[i % len(TESSERA_SHADES)]),
                       edgecolor="#404040", linewidth=0.4, hatch="//" if s == "demand" else None,
                       yerr=_err(r, 1e6), capsize=2,
                       label=papers.POOL_SETTINGS.get(s, s) if j == 0 else None)
                base = cells[md].get(prog, {}).get(papers.POOL_BASELINE)
                text = f"{v:.3f}"
                if base and s != papers.POOL_BASELINE and base["value"]:
                    text += f"  ×{r['value'] / base['value']:.2f}"
                top = (r["max"] if _err(r, 1e6) else r["value"]) / 1e6
                ax.annotate(text, (x, top), ha="center", va="bottom", rotation=90, fontsize=6.5,
                            xytext=(0, 2), textcoords="offset points")
        ax.set_xticks(range(len(programs)))
        ax.set_xticklabels([papers.POOL_PROGRAMS.get(p, (p,))[0].replace(", ", "\n") for p in programs],
                           fontsize=8)
        ax.set_title(("one process at a time (figs. 5, 8)" if md == "serial" else
                      "10 processes at once (figs. 6, 9)" if md == "concurrent10" else md), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.margins(y=0.28)
        ax.legend(loc="upper left", fontsize=8, title="pool setting (eager loading)", title_fontsize=8)
    axes[0][0].set_ylabel(_time_axis(mode, "ms").replace("per operation", "per process: spawn + exit + wait"))
    conf = "QEMU icount (deterministic)" if mode == "icount" else f"QEMU {mode}, median of runs, bars: min–max"
    fig.suptitle("Resource pool: creating and deleting a process under each pool setting "
                 "(Tessera against itself; seed 000 figs. 5, 6, 8, 9)\n"
                 f"{conf}; labels: ms and ×ratio to basic of the same run", fontsize=11)
    _save(fig, out / "pool.png")


def plot_poolmem(rows, mode, out):
    """Seed 000 figs. 7 and 10: pool memory over time, reuse only against
    reuse+add+reduce, during and after a burst of 10 concurrent processes."""
    settings = _ordered({r["metric"] for r in _select(rows, "poolmem", system="tessera")},
                        ("reuse", "reduce"))
    if not settings:
        return
    fig, ax = plt.subplots(figsize=(8.5, 5))
    colors = {"reuse": "#e6550d", "reduce": "#08519c"}
    markers = {"reuse": "o", "reduce": "s"}
    burst_end, rounds = 0, 0
    for i, s in enumerate(settings):
        pts = poolmem_series(rows, s)
        if not pts:
            continue
        xs = [t for t, _ in pts]
        ys = [b / 1048576 for _, b in pts]
        color = colors.get(s, plt.cm.tab10(i))
        e = poolmem_burst_end(pts, papers.POOLMEM_IDLE_GAP_MS, papers.POOLMEM_IDLE_SAMPLES)
        burst_end, rounds = max(burst_end, xs[e]), max(rounds, e)
        ax.plot(xs, ys, marker=markers.get(s, "^"), markersize=4, color=color,
                label=f"{papers.POOL_SETTINGS.get(s, s)}: {ys[e]:.2f} MiB at the end of the burst, "
                      f"{ys[-1]:.2f} MiB at the end")
        # Label each level the pool settles at after the burst (or the one
        # it keeps).
        changes = [k for k in range(e + 1, len(pts)) if ys[k] != ys[k - 1]]
        for k in changes:
            ax.annotate(f"{ys[k]:.2f} MiB at {xs[k]:.0f} ms", (xs[k], ys[k]), xytext=(6, 6),
                        textcoords="offset points", fontsize=7.5, color=color)
        if not changes:
            ax.annotate(f"{ys[-1]:.2f} MiB", (xs[-1], ys[-1]), xytext=(0, 6), textcoords="offset points",
                        ha="right", fontsize=8, color=color)
    ax.axvspan(0, burst_end, color="#bdbdbd", alpha=0.35, linewidth=0)
    ax.annotate(f"burst: {rounds} × 10 processes", (burst_end, 0), xytext=(4, 4), textcoords="offset points",
                fontsize=7.5, color="#404040")
    ax.set_xlabel("time since the start of the burst (ms" + (", icount)" if mode == "icount" else ")"))
    ax.set_ylabel("memory held by the pool (MiB)")
    ax.set_ylim(bottom=0)
    ax.margins(y=0.15)
    ax.grid(alpha=0.3)
    ax.legend(loc="center right", fontsize=8)
    fig.suptitle("Resource pool: memory over time, with and without reduce (seed 000 figs. 7, 10)")
    ax.set_title("Tessera against itself: rounds of 10 concurrent page access processes (800 pages), "
                 "then idle; T = interval = 50 ms\n"
                 "paper, after the requests: fig. 10 11.25 → 4.28 MB with reduce; fig. 7 8.72 → 4.04 MB",
                 fontsize=8)
    _save(fig, out / "poolmem.png")


# Container IPC (seed 004 figs. 5, 6, 7): parts of the kernel's breakdown
# and the modes, in fixed colours so that the three figures read alike.
PART_COLORS = {"create": "#d62728", "delete": "#ff9896", "exchange": "#2ca02c", "copy": "#ff7f0e",
               "attach": "#9467bd", "detach": "#8c564b", "queue": "#e377c2", "other": "#c7c7c7"}
MODE_STYLE = {"copy": ("#ff7f0e", "o", "-"), "share": ("#1f77b4", "s", "-"), "move": ("#9467bd", "^", "-"),
              "swap": ("#2ca02c", "D", "-"), "swap + create": ("#006d2c", "v", "--"),
              "swap + delete": ("#006d2c", "v", "--"), "push copy": ("#ff7f0e", "o", "-"),
              "push share": ("#1f77b4", "s", "-"), "push move": ("#9467bd", "^", "-"),
              "exchange": ("#2ca02c", "D", "-")}


def _container_values(rows):
    return {(r["metric"], r["param"]): r for r in _select(rows, "container", system="tessera")}


def _paper_vs_ours(val, fig):
    """One line: the paper's ratios of a figure and ours at 4 KiB."""
    parts = []
    for c in papers.CONTAINER_CLAIMS:
        if c["fig"] != fig or c["kind"] != "ratio" or not c["paper"]:
            continue
        a, b = val.get((c["a"], c["param"])), val.get((c["b"], c["param"]))
        if a and b and b["value"]:
            pa, pb = (m.split("_", 1)[1] if m.startswith(("send_", "receive_")) else m.replace("_", " ")
                      for m in (c["a"], c["b"]))
            parts.append(f"{pa} / {pb}: paper ≈ {_paper_ratio(c['paper'])}, here {a['value'] / b['value']:.2f}")
    return "; ".join(parts)


def _paper_ratio(x):
    for num, den in ((1, 7), (3, 5), (4, 7), (1, 2)):
        if abs(x - num / den) < 1e-9:
            return f"{num}/{den}"
    return f"{x:g}"


def _container_bars(ax, val, ops, param, mode, breakdown):
    """Bars at one size, stacked by the kernel's parts when `breakdown`."""
    from matplotlib.patches import Patch
    present = [(label, m) for label, m in ops if (m, param) in val]
    used_parts = []
    top = max((val[(m, param)]["value"] for _, m in present), default=0) / 1000
    for j, (label, m) in enumerate(present):
        total = val[(m, param)]["value"]
        bottom = 0.0
        if breakdown:
            for q in papers.CONTAINER_PARTS + ["other"]:
                if q == "other":
                    v = max(0.0, total - bottom)
                else:
                    r = val.get((f"{m}:{q}", param))
                    v = r["value"] if r else 0.0
                if v <= 0:
                    continue
                ax.bar(j, v / 1000, 0.6, bottom=bottom / 1000, color=PART_COLORS[q], edgecolor="#404040",
                       linewidth=0.4)
                if q not in used_parts:
                    used_parts.append(q)
                if v / total >= 0.08:
                    ax.annotate(f"{v / total * 100:.0f} %", (j, (bottom + v / 2) / 1000), ha="center",
                                va="center", fontsize=7)
                bottom += v
        else:
            ax.bar(j, total / 1000, 0.6, color=MODE_STYLE.get(label, (TESSERA_SHADES[0],))[0],
                   edgecolor="#404040", linewidth=0.4)
        ax.annotate(f"{total / 1000:.2f}", (j, total / 1000), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(range(len(present)))
    ax.set_xticklabels([label for label, _ in present])
    ax.set_ylabel(_time_axis(mode, "µs"))
    ax.grid(axis="y", alpha=0.3)
    if breakdown and used_parts:
        # Room above the bars for the legend, which lists the parts in
        # stacking order (bottom first), "other" last.
        ax.set_ylim(0, top * 1.4)
        order = [q for q in papers.CONTAINER_PARTS + ["other"] if q in used_parts]
        ax.legend([Patch(facecolor=PART_COLORS[q], edgecolor="#404040", linewidth=0.4) for q in order],
                  [q if q != "other" else "other (system call, mediator, lookups)" for q in order],
                  fontsize=7.5, loc="upper center", ncol=4, title="kernel part, bottom up", title_fontsize=7.5)
    else:
        ax.set_ylim(0, top * 1.15)


def _container_lines(ax, val, ops, mode):
    for label, m in ops:
        pts = sorted((r for (mm, _p), r in val.items() if mm == m and r["param"].isdigit()),
                     key=lambda r: int(r["param"]))
        if not pts:
            continue
        color, marker, style = MODE_STYLE.get(label, ("#1f77b4", "o", "-"))
        xs = [int(r["param"]) for r in pts]
        ys = [r["value"] / 1000 for r in pts]
        ax.plot(xs, ys, marker=marker, linestyle=style, color=color, markersize=4,
                label=f"{label}: {ys[0]:.2f} → {ys[-1]:,.2f} µs")
        if any(r["max"] > r["min"] for r in pts):
            ax.fill_between(xs, [r["min"] / 1000 for r in pts], [r["max"] / 1000 for r in pts],
                            color=color, alpha=0.15)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = sorted({int(p) for (_m, p) in val if p.isdigit()})
    ax.set_xticks(sizes)
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("container size")
    ax.set_ylabel(_time_axis(mode, "µs, log scale"))
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")


def _container_figure(rows, mode, out, ops, fig_no, title, filename, breakdown):
    val = _container_values(rows)
    if not val:
        return
    sizes = sorted({p for _, p in val if p.isdigit()}, key=int)
    param = "4096" if "4096" in sizes else sizes[0]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5.2), gridspec_kw={"width_ratios": [1, 1.15]})
    _container_bars(a1, val, ops, param, mode, breakdown)
    a1.set_title(f"at {_size_label(int(param))}" + (", by kernel part" if breakdown else ""), fontsize=10)
    _container_lines(a2, val, ops, mode)
    a2.set_title("against container size", fontsize=10)
    conf = "QEMU icount (deterministic)" if mode == "icount" else f"QEMU {mode}, median of runs"
    sub = _paper_vs_ours(val, fig_no)
    fig.suptitle(f"{title} (seed 004 fig. {fig_no}), Tessera\n{conf}" + (f"\n4 KiB, {sub}" if sub else ""),
                 fontsize=10)
    _save(fig, out / filename)


def plot_container(rows, mode, out):
    _container_figure(rows, mode, out, papers.CONTAINER_SEND, "5", "Container send through a box",
                      "container_send.png", True)
    _container_figure(rows, mode, out, papers.CONTAINER_RECEIVE, "6", "Container receive from a box",
                      "container_receive.png", True)
    _container_figure(rows, mode, out, papers.CONTAINER_DIRECT, "7",
                      "Direct transfer between processes: push per mode against exchange",
                      "container_direct.png", False)


def plot_batch(rows, mode, out):
    """Seed 002 fig. 7 (time against n, three lines) and fig. 9 (CPU work:
    callsync × 10 against ncallsync(2) × 5, 1 CPU and the plain-TCG 3-CPU boot)."""
    val = {(r["metric"], r["param"]): r for r in _select(rows, "batch", system="tessera")}
    names = {m for m, _ in papers.BATCH_SERIES}
    ns = sorted({int(p) for m, p in val if m in names and p.isdigit()})
    work = []
    for size, (cs, nc) in papers.BATCH_WORK_VARIANTS:
        for suffix, label in (("", "icount" if mode == "icount" else mode), ("_tcg", "plain TCG")):
            for p in sorted({p for m, p in val if m == cs + suffix}, key=lambda q: int(q) if q.isdigit() else 0):
                if (nc + suffix, p) in val:
                    work.append((f"{size.split(' ')[0]} {size.split(' ')[1]}: {label},\n{p} CPU{'s' if p != '1' else ''}",
                                 val[(cs + suffix, p)], val[(nc + suffix, p)]))
    if not ns and not work:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1.5, 1]})
    styles = {"callsync_x_n": ("#d62728", "s", "--"), "ncallsync": ("#1f77b4", "o", "-"),
              "ncallsync_distributor": ("#2ca02c", "^", "-.")}
    for m, label in papers.BATCH_SERIES:
        pts = [(n, val[(m, str(n))]) for n in ns if (m, str(n)) in val]
        if not pts:
            continue
        color, marker, style = styles.get(m, ("#7f7f7f", "x", "-"))
        xs = [n for n, _ in pts]
        ys = [r["value"] / 1000 for _, r in pts]
        if len(pts) >= 2 and xs[0] == 1 and xs[-1] == 10:
            label += f" ({(pts[-1][1]['value'] - pts[0][1]['value']) / 9:,.0f} ns per extra request)"
        a1.errorbar(xs, ys, yerr=None if mode == "icount" else
                    [[(r["value"] - r["min"]) / 1000 for _, r in pts], [(r["max"] - r["value"]) / 1000 for _, r in pts]],
                    marker=marker, linestyle=style, color=color, label=label, capsize=2)
        a1.annotate(f"{ys[-1]:.1f}", (xs[-1], ys[-1]), xytext=(4, 0), textcoords="offset points", fontsize=8,
                    color=color, va="center")
    a1.set_xticks(ns)
    a1.set_xlim(0.5, (ns[-1] if ns else 10) + 1)
    a1.set_ylim(bottom=0)
    a1.set_xlabel("number of requests n")
    a1.set_ylabel(_time_axis(mode, "µs").replace("per operation", "for n requests"))
    a1.grid(alpha=0.3)
    a1.legend(fontsize=8, loc="upper left")
    limit = papers.BATCH_GOAL_PER_REQUEST[0]
    a1.set_title(f"fig. 7: nop `echo` on the client's CPU (1 CPU); goal ≤ {limit:,} ns per extra request "
                 "in a batch", fontsize=9)

    if work:
        colors = ["#d62728", "#1f77b4"]
        for i, (label, a, b) in enumerate(work):
            # Relative to callsync × 10 of the same boot: 3 ms and 30 ms
            # requests side by side.
            base = a["value"] or 1
            for j, r in enumerate((a, b)):
                x = i + (j - 0.5) * 0.36
                a2.bar(x, r["value"] / base, 0.34, color=colors[j], edgecolor="#404040", linewidth=0.4,
                       yerr=_err(r, base), capsize=3,
                       label=("callsync × 10" if j == 0 else "ncallsync(2) × 5") if i == 0 else None)
            top = max(a["max"], b["max"]) / base
            a2.annotate(f"speed-up {a['value'] / b['value']:.2f}", (i, top), xytext=(0, 4),
                        textcoords="offset points", ha="center", fontsize=8)
        a2.set_xticks(range(len(work)))
        a2.set_xticklabels([w_[0] for w_ in work], fontsize=7)
        a2.set_ylabel("time for 10 requests, relative to callsync × 10")
        a2.margins(y=0.15)
        a2.grid(axis="y", alpha=0.3)
        a2.legend(fontsize=8, loc="lower right")
        need = papers.BATCH_GOAL_SPEEDUP[0] * papers.BATCH_SERVER_CPUS
        a2.set_title(f"fig. 9: 3 ms and 30 ms CPU work, servers on CPUs 1 and 2; goal speed-up ≥ {need:.1f}\n"
                     "(icount: no parallel speed-up by construction)", fontsize=9)
    else:
        a2.axis("off")
    fig.suptitle("Tessera batch requests (seed 002 figs. 7 and 9)\n" + _conf(mode), fontsize=10)
    _save(fig, out / "batch.png")


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


PLOTS = {"syscall": plot_syscall, "spawn": plot_spawn, "pageaccess": plot_pageaccess,
         "pool": plot_pool, "poolmem": plot_poolmem, "pagefault": plot_pagefault, "ipc": plot_ipc, "transfer": plot_transfer, "container": plot_container,
         "batch": plot_batch, "kernel": plot_kernel}


def plot_files(exp):
    """The PNG files an experiment's plot function writes."""
    return [name for name, _ in papers.EXPERIMENTS.get(exp, {}).get("plots", [(f"{exp}.png", "")])]


def main(folder, mode):
    folder = Path(folder)
    rows = with_derived(read_csvs(folder))
    out = folder / "plots"
    out.mkdir(exist_ok=True)
    present = {r["experiment"] for r in rows}
    for exp, fn in PLOTS.items():
        targets = [out / name for name in plot_files(exp)]
        for target in targets:
            if target.exists():
                target.unlink()  # no stale plot, whether or not the figures are still there
        if exp in present:
            fn(rows, mode, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
