"""Regenerate every committed result under studies/paper/ from spaces/paper/ (deterministic).

    .venv/bin/python studies/paper/reproduce.py

Writes compare-*.csv (``dse compare`` tables), sweeps (area, D0, CPO and OCS cost), the quarter-die
case, a sensitivity tornado, the nominal and robust fronts of spaces/paper/robust.yaml, and
summary.md. Optuna journals go to a scratch folder; only seeded, timing-free values are written,
so a re-run reproduces every file byte for byte.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
# $PAPER_OUT redirects the output (the test suite regenerates into a temporary folder and
# compares with the committed files).
OUT = Path(os.environ.get("PAPER_OUT", "paper-results"))  # set from --out by main()
SPACES = ROOT / "spaces" / "paper"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import breakeven  # noqa: E402
import classes  # noqa: E402
import findings  # noqa: E402
import pool  # noqa: E402
import spares  # noqa: E402
import spread  # noqa: E402

from dse import api  # noqa: E402
from dse.inspect.compare import compare, to_csv  # noqa: E402
from dse.inspect.sensitivity import sensitivity  # noqa: E402
from dse.model.robust import Uncertain, evaluate_under, robust_model  # noqa: E402

WORKLOADS: dict[str, list[str]] = {
    "llama3-70b-decode": [],
    "llama3-70b-prefill": ["workload.phase=prefill"],
    "llama3-405b-decode": ["workload.model=llama3-405b"],
    "llama3-405b-prefill": ["workload.model=llama3-405b", "workload.phase=prefill"],
    "llama3-70b-train": ["workload.phase=train"],
}
LITE = ["half", "quarter", "eighth"]
LINKS = ["cpo", "pluggable", "electrical"]
KEY = {
    "cost.usd_per_mtok": "USD/Mtok",
    "perf.tokens_per_joule": "tok/J",
    "availability.capacity_availability": "capacity avail.",
    "availability.blast_radius_fraction": "blast radius",
    "perf.tokens_per_s": "tok/s",
    "perf.gpus_per_replica": "GPUs/replica",
    "cost.die_yield": "die yield",
    "cost.gpu_usd_per_pflops": "GPU USD/PFLOPS",
    "cost.network_cost_usd": "network USD",
    "perf.shoreline_used_fraction": "shoreline used",
}
BASE_N, BASE_AREA = 64, 814.0


def designs() -> list[tuple[str, str, list[str]]]:
    out = [("h100", str(SPACES / "h100.yaml"), [])]
    for size in LITE:
        for gain in ("", "-shoreline"):
            for link in LINKS:
                out.append(
                    (f"{size}{gain}/{link}", str(SPACES / f"lite-{size}{gain}.yaml"), [link])
                )
    return out


#: The user's ``--set key=value`` overrides, applied to every design this script evaluates
#: (after the design's own values), the robust spec's distributions included.
USER_SETS: list[str] = []


def _load_for_evaluate(spec: str | Path, sets: list[str]) -> tuple[Any, dict[str, Any]]:
    return api.load_for_evaluate(spec, [*sets, *USER_SETS])


def arg(spec: str, sets: list[str]) -> str:
    sets = [*sets, *USER_SETS]
    return spec + ("::" + ",".join(sets) if sets else "")


def compare_tables(summary: list[str]) -> None:
    for wl, sets in WORKLOADS.items():
        args, labels = [], []
        for label, spec, link in designs():
            args.append(arg(spec, sets + [f"link_type={x}" for x in link]))
            labels.append(label)
        evaluated, rows = compare(args, labels=labels)
        (OUT / f"compare-{wl}.csv").write_text(to_csv(rows), encoding="utf-8")
        summary.append(f"\n### {wl}\n")
        summary.append("| design | " + " | ".join(KEY.values()) + " |")
        summary.append("|---" * (len(KEY) + 1) + "|")
        for d in evaluated:
            cells = [_g(d.metrics[k]) for k in KEY]
            summary.append(f"| {d.label} | " + " | ".join(cells) + " |")


#: Scale-up fabrics of the same-fabric comparison: (label, link type, fabric).
FABRIC_CASES = [
    ("switched/electrical", "electrical", "switched"),
    ("ocs/cpo", "cpo", "ocs"),
    ("packet/cpo", "cpo", "packet"),
    ("direct/cpo", "cpo", "direct"),
]
OBJECTIVES = {
    "cost.usd_per_mtok": ("cost per token", -1),
    "perf.tokens_per_joule": ("tokens per joule", 1),
    "availability.capacity_availability": ("capacity availability", 1),
}


def same_fabric(summary: list[str], results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every Lite design (with the shoreline gain) and the H100 on the SAME scale-up fabric.

    The H100 gets the Lite's link type and fabric (its 18 x 2 x 100G links as CPO on an OCS,
    a packet fat tree or a direct torus), so a ratio isolates the die size from the fabric.
    """
    rows: list[dict[str, Any]] = []
    summary.append("\n## Same-fabric comparison: Lite (with gain) / H100 on the same fabric\n")
    summary.append(
        "Ratios Lite / H100 (cost < 1 and tok/J, availability > 1 mean the Lite design wins).\n"
    )
    summary.append(
        "| workload | fabric | design | USD/Mtok | cost ratio | tok/J ratio | avail. ratio |"
    )
    summary.append("|---|---|---|---|---|---|---|")
    for wl, sets in WORKLOADS.items():
        for flabel, link, fabric in FABRIC_CASES:
            fsets = sets + [f"link_type={link}", f"scaleup_fabric={fabric}"]
            args = [arg(str(SPACES / "h100.yaml"), fsets)]
            labels = ["h100"]
            for size in LITE:
                args.append(arg(str(SPACES / f"lite-{size}-shoreline.yaml"), fsets))
                labels.append(f"{size}-shoreline")
            evaluated, _ = compare(args, labels=labels)
            base = evaluated[0].metrics
            for d in evaluated[1:]:
                m = d.metrics
                row = {"workload": wl, "fabric": flabel, "design": d.label}
                for k in OBJECTIVES:
                    row[k] = m[k]
                    row["h100." + k] = base[k]
                    row[k + "_ratio"] = m[k] / base[k]
                row["feasible"] = float(
                    m["perf.model_fits"] * m["perf.slo_met"] * m["perf.topology_ok"]
                )
                row["h100.feasible"] = float(
                    base["perf.model_fits"] * base["perf.slo_met"] * base["perf.topology_ok"]
                )
                rows.append(row)
                summary.append(
                    f"| {wl} | {flabel} | {d.label} | {_g(m['cost.usd_per_mtok'])} "
                    f"| {row['cost.usd_per_mtok_ratio']:.3f} "
                    f"| {row['perf.tokens_per_joule_ratio']:.3f} "
                    f"| {row['availability.capacity_availability_ratio']:.4f} |"
                )
    pd.DataFrame(rows).to_csv(OUT / "same-fabric.csv", index=False, float_format="%.6g")
    results["same_fabric"] = {
        f"{r['workload']}/{r['fabric']}/{r['design']}": round(
            float(r["cost.usd_per_mtok_ratio"]), 6
        )
        for r in rows
    }
    return rows


def conditions(summary: list[str], results: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """Where a Lite design wins, per objective: the workload x fabric cells with a winner."""
    summary.append("\n## Conditions under which a Lite design wins (same fabric as the H100)\n")
    summary.append("| objective | workload | fabric | winning Lite designs (ratio) |")
    summary.append("|---|---|---|---|")
    table: dict[str, list[str]] = {}
    for k, (name, sign) in OBJECTIVES.items():
        for wl in WORKLOADS:
            for flabel, _, _ in FABRIC_CASES:
                cell = [
                    r
                    for r in rows
                    if r["workload"] == wl and r["fabric"] == flabel and r["feasible"] > 0
                ]
                win = [r for r in cell if (r[k + "_ratio"] - 1) * sign > 1e-9]
                if not win:
                    continue
                fmt = ".4f" if k.startswith("availability.") else ".3g"
                text = ", ".join(f"{r['design']} ({r[k + '_ratio']:{fmt}})" for r in win)
                summary.append(f"| {name} | {wl} | {flabel} | {text} |")
                table.setdefault(k, []).append(f"{wl}/{flabel}")
    results["lite_wins"] = table


def _g(v: float) -> str:
    return f"{v:.4g}"


def family(fraction: np.ndarray, *, gain: bool, link: str) -> dict[str, Any]:
    """Lite-GPU of equal total compute from a die of ``fraction`` x 814 mm2 (continuous).

    HBM stacks (H100 stacks: 16 GB, 0.67 TB/s) and scale-up bandwidth (9 ports) scale with
    compute, times 1/sqrt(fraction) with the shoreline gain.
    """
    scale = fraction / np.sqrt(fraction) if gain else fraction
    return {
        "die_area_mm2": BASE_AREA * fraction,
        "cluster_size": np.round(BASE_N / fraction),
        "hbm_stacks_per_die": 5.0 * scale,
        "hbm_gb_per_stack": np.full_like(fraction, 16.0),
        "hbm_tbps_per_stack": np.full_like(fraction, 0.67),
        "links_per_gpu": np.full_like(fraction, 9.0),
        "optics_per_link": np.full_like(fraction, 1.0),
        "lane_gbps": 3600.0 * scale / 9.0,
        "link_type": link,
    }


def crossing(x: np.ndarray, y: np.ndarray, level: float = 1.0) -> float | None:
    """First x where y crosses ``level`` (linear interpolation), scanning in x order."""
    s = np.sign(y - level)
    for i in range(len(x) - 1):
        if s[i] == 0:
            return float(x[i])
        if s[i] != s[i + 1]:
            return float(x[i] + (level - y[i]) * (x[i + 1] - x[i]) / (y[i + 1] - y[i]))
    return None


def _cross_text(x: float | None, ratio: Any, unit: str) -> str:
    if x is not None:
        return f"{x:.3g} {unit}".strip()
    r = np.asarray(ratio, dtype=float)
    side = "below" if np.all(r < 1) else "above" if np.all(r > 1) else "on both sides of"
    return f"none: ratio {side} 1 ({r.min():.3g} to {r.max():.3g})"


def area_sweep(summary: list[str], results: dict[str, Any]) -> None:
    base_model, base_params = _load_for_evaluate(SPACES / "h100.yaml", [])
    base = api.evaluate(base_model, base_params)
    n = np.array(
        [64, 72, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 1024]
    )
    frac = BASE_N / n
    model, _ = _load_for_evaluate(SPACES / "lite-quarter.yaml", [])
    rows = []
    summary.append("\n## Equal-compute die-size sweep (Llama-3-70B decode; ratio to H100 x 64)\n")
    summary.append("| link | shoreline gain | metric | crossover die area mm2 (ratio = 1) |")
    summary.append("|---|---|---|---|")
    for gain in (False, True):
        for link in LINKS:
            m = model.evaluate(family(frac, gain=gain, link=link), strict=False)
            df = pd.DataFrame({"die_area_mm2": BASE_AREA * frac, "cluster_size": n})
            df["link_type"], df["shoreline_gain"] = link, gain
            for k in (
                "cost.die_cost_usd",
                "cost.die_yield",
                "cost.gpu_usd_per_pflops",
                "cost.usd_per_pflops",
                "cost.usd_per_mtok",
                "perf.tokens_per_joule",
                "perf.tokens_per_s",
                "perf.slo_met",
                "availability.capacity_availability",
                "availability.blast_radius_fraction",
            ):
                df[k] = m[k]
            silicon_per_pf = m["cost.silicon_cost_usd"] / m["perf.tflops_per_gpu"] * 1000
            base_si = base["cost.silicon_cost_usd"] / base["perf.tflops_per_gpu"] * 1000
            df["silicon_usd_per_pflops_ratio"] = silicon_per_pf / base_si
            for k in ("cost.gpu_usd_per_pflops", "cost.usd_per_mtok", "perf.tokens_per_joule"):
                df[k + "_ratio"] = m[k] / base[k]
            rows.append(df)
            for k in (
                "silicon_usd_per_pflops_ratio",
                "cost.gpu_usd_per_pflops_ratio",
                "cost.usd_per_mtok_ratio",
                "perf.tokens_per_joule_ratio",
            ):
                x = crossing(df["die_area_mm2"].to_numpy()[1:], df[k].to_numpy()[1:])
                results.setdefault("area_crossover", {})[f"{link}/{gain}/{k}"] = x
                summary.append(
                    f"| {link} | {gain} | {k} | {_cross_text(x, df[k].to_numpy()[1:], 'mm2')} |"
                )
    allrows = pd.concat(rows)
    allrows.to_csv(OUT / "sweep-die-area.csv", index=False, float_format="%.6g")
    summary.append(
        "\nRatios Lite / H100 at equal total compute (1 = parity; cost < 1 is better):\n"
    )
    cols = [
        "silicon_usd_per_pflops_ratio",
        "cost.gpu_usd_per_pflops_ratio",
        "cost.usd_per_mtok_ratio",
        "perf.tokens_per_joule_ratio",
        "cost.die_yield",
        "availability.capacity_availability",
        "availability.blast_radius_fraction",
    ]
    summary.append("| link | gain | die mm2 | GPUs | " + " | ".join(cols) + " |")
    summary.append("|---" * (len(cols) + 4) + "|")
    pick = allrows[allrows["cluster_size"].isin([64, 128, 256, 512, 1024])]
    for r in pick.to_dict("records"):
        vals = " | ".join(_g(r[c]) for c in cols)
        head = f"| {r['link_type']} | {r['shoreline_gain']} | {r['die_area_mm2']:.4g} "
        summary.append(f"{head}| {r['cluster_size']} | {vals} |")


def scenario_sweep(
    spec: Path, sets: list[str], key: str, values: np.ndarray
) -> dict[str, np.ndarray]:
    model, params = _load_for_evaluate(spec, sets)
    model.uncertain = [Uncertain(("technology", key), "uniform", {"low": 0.0, "high": 1.0})]
    return evaluate_under(model, params, {f"technology.{key}": values}, strict=False)


def tech_sweeps(summary: list[str], results: dict[str, Any]) -> None:
    quarter = SPACES / "lite-quarter-shoreline.yaml"
    sweeps = {
        "defect_density_per_cm2": np.round(np.arange(0.03, 0.5001, 0.01), 4),
        "cpo_usd_per_gbps": np.round(np.arange(0.0, 2.0001, 0.05), 4),
        "ocs_usd_per_port": np.arange(0.0, 1000.1, 25.0),
    }
    summary.append("\n## Technology sweeps: 1/4 die with shoreline gain vs H100 x 64\n")
    summary.append("| swept constant | design | metric | break-even value (ratio = 1) |")
    summary.append("|---|---|---|---|")
    for key, vals in sweeps.items():
        h = scenario_sweep(SPACES / "h100.yaml", [], key, vals)
        frames = []
        for link in LINKS:
            q = scenario_sweep(quarter, [f"link_type={link}"], key, vals)
            df = pd.DataFrame({key: vals, "link_type": link})
            for k in ("cost.gpu_usd_per_pflops", "cost.usd_per_mtok", "cost.die_yield"):
                df[k] = q[k]
                df["h100." + k] = h[k]
                df[k + "_ratio"] = q[k] / h[k]
            frames.append(df)
            for k in ("cost.gpu_usd_per_pflops_ratio", "cost.usd_per_mtok_ratio"):
                x = crossing(vals, df[k].to_numpy())
                results.setdefault("breakeven", {})[f"{key}/{link}/{k}"] = x
                shown = _cross_text(x, df[k], "")
                summary.append(f"| technology.{key} | quarter-shoreline/{link} | {k} | {shown} |")
        pd.concat(frames).to_csv(OUT / f"sweep-{key}.csv", index=False, float_format="%.6g")


def port_sweep(summary: list[str], results: dict[str, Any]) -> None:
    """Fewer, fatter scale-up ports at the same bandwidth (1/4 die + gain, CPO, 70B decode).

    Every Lite-GPU port is one optical circuit switch port (or one rail of a packet fat tree),
    so port count, not bandwidth, sets the network bill; this sweep keeps 1.8 Tb/s per GPU and
    trades ports for lanes per port.
    """
    h100 = api.evaluate(*_load_for_evaluate(SPACES / "h100.yaml", []))
    rows = []
    summary.append(
        "\n## Scale-up ports: 1/4 die + gain, CPO, 1.8 Tb/s per GPU (Llama-3-70B decode)\n"
    )
    summary.append("| ports x lanes | fabric | USD/Mtok | Lite / H100 | network USD | tok/J |")
    summary.append("|---|---|---|---|---|---|")
    for links, lanes in ((9, 2), (6, 3), (3, 6), (2, 9), (1, 18)):
        for fabric in ("circuit", "packet"):
            sets = [
                f"links_per_gpu={links}",
                f"optics_per_link={lanes}",
                "lane_gbps=100",
                f"technology.optical_fabric={fabric}",
            ]
            m = api.evaluate(*_load_for_evaluate(SPACES / "lite-quarter-shoreline.yaml", sets))
            ratio = m["cost.usd_per_mtok"] / h100["cost.usd_per_mtok"]
            rows.append(
                {
                    "links_per_gpu": links,
                    "optics_per_link": lanes,
                    "optical_fabric": fabric,
                    "cost.usd_per_mtok": m["cost.usd_per_mtok"],
                    "usd_per_mtok_ratio": ratio,
                    "cost.network_cost_usd": m["cost.network_cost_usd"],
                    "cost.network_tiers": m["cost.network_tiers"],
                    "perf.tokens_per_joule": m["perf.tokens_per_joule"],
                }
            )
            summary.append(
                f"| {links} x {lanes} | {fabric} | {m['cost.usd_per_mtok']:.4g} | {ratio:.3f} "
                f"| {m['cost.network_cost_usd']:.4g} | {m['perf.tokens_per_joule']:.4g} |"
            )
    pd.DataFrame(rows).to_csv(OUT / "sweep-ports.csv", index=False, float_format="%.6g")
    results["ports"] = {
        f"{r['links_per_gpu']}x{r['optics_per_link']}/{r['optical_fabric']}": round(
            float(r["usd_per_mtok_ratio"]), 6
        )
        for r in rows
    }


def quarter_case(summary: list[str], results: dict[str, Any]) -> None:
    summary.append("\n## 1/4 die: cost per token vs D0 and optics (Llama-3-70B decode)\n")
    summary.append("| design | D0 /cm2 | Lite USD/Mtok | H100 USD/Mtok | Lite / H100 |")
    summary.append("|---|---|---|---|---|")
    rows = []
    for gain in ("", "-shoreline"):
        for link in ("pluggable", "cpo"):
            for d0 in (0.05, 0.15):
                sets = [f"technology.defect_density_per_cm2={d0}"]
                lm, lp = _load_for_evaluate(
                    SPACES / f"lite-quarter{gain}.yaml", [*sets, f"link_type={link}"]
                )
                hm, hp = _load_for_evaluate(SPACES / "h100.yaml", sets)
                lite = api.evaluate(lm, lp)["cost.usd_per_mtok"]
                h100 = api.evaluate(hm, hp)["cost.usd_per_mtok"]
                rows.append(
                    {"design": f"quarter{gain}/{link}", "d0": d0, "lite": lite, "h100": h100}
                )
                summary.append(
                    f"| quarter{gain}/{link} | {d0} | {lite:.4g} | {h100:.4g} "
                    f"| {lite / h100:.3f} |"
                )
    pd.DataFrame(rows).to_csv(OUT / "quarter-d0-optics.csv", index=False, float_format="%.6g")
    results["quarter_case"] = rows


def tornado(summary: list[str]) -> None:
    payload = {}
    for name, spec in (
        ("quarter-shoreline-cpo", "lite-quarter-shoreline.yaml"),
        ("h100", "h100.yaml"),
    ):
        model, params = _load_for_evaluate(SPACES / spec, [])
        table = sensitivity(model, params)
        payload[name] = {
            m: [
                {
                    "assumption": s.assumption,
                    "low": s.low,
                    "high": s.high,
                    "at_low": s.metric_at_low,
                    "at_high": s.metric_at_high,
                    "swing": s.swing,
                }
                for s in rows[:12]
            ]
            for m, rows in table.items()
        }
        summary.append(f"\n## Sensitivity (technology +/-20 %), {name}: top 8 per objective\n")
        for m, rows in table.items():
            top = ", ".join(
                f"{s.assumption.split('.')[-1]} {s.swing_fraction:.1%}" for s in rows[:8]
            )
            summary.append(f"- {m} (nominal {rows[0].nominal:.4g}): {top}")
    (OUT / "sensitivity.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


#: Headline Lite / H100 ratios whose drivers are ranked: (name, Lite spec, H100 spec, sets).
HEADLINES = [
    ("70b-decode quarter+gain CPO (ocs) vs H100 NVLink", "lite-quarter-shoreline.yaml", []),
    (
        "70b-decode quarter+gain vs H100, both CPO on the OCS fabric",
        "lite-quarter-shoreline.yaml",
        ["link_type=cpo", "scaleup_fabric=ocs"],
    ),
    (
        "405b-decode half+gain CPO (ocs) vs H100 NVLink",
        "lite-half-shoreline.yaml",
        ["workload.model=llama3-405b"],
    ),
]


def drivers(summary: list[str], results: dict[str, Any]) -> None:
    """The assumptions that move each headline ratio most: every technology constant at -20 %
    and +20 % for the Lite design AND the H100 together (``dse sensitivity``'s swings),
    ranked by the swing of the ratio."""
    summary.append(
        "\n## What moves each headline ratio (technology constants +/-20 %, both sides)\n"
    )
    summary.append(
        "| headline | metric | nominal ratio | top 3 drivers (ratio at -20 % / +20 %) |"
    )
    summary.append("|---|---|---|---|")
    payload: dict[str, Any] = {}
    for name, lite_spec, sets in HEADLINES:
        lm, lp = _load_for_evaluate(SPACES / lite_spec, sets)
        hm, hp = _load_for_evaluate(SPACES / "h100.yaml", sets)
        lt, ht = sensitivity(lm, lp), sensitivity(hm, hp)
        payload[name] = {}
        for metric in OBJECTIVES:
            h_rows = {r.assumption: r for r in ht[metric]}
            ranked = []
            for r in lt[metric]:
                h = h_rows.get(r.assumption)
                if h is None or not (h.metric_at_low and h.metric_at_high and h.nominal):
                    continue
                lo, hi = r.metric_at_low / h.metric_at_low, r.metric_at_high / h.metric_at_high
                nominal = r.nominal / h.nominal
                ranked.append((abs(hi - lo) / abs(nominal), r.assumption, lo, hi, nominal))
            ranked.sort(key=lambda x: (-x[0], x[1]))
            top = ranked[:3]
            payload[name][metric] = [
                {"assumption": a, "ratio_at_low": lo, "ratio_at_high": hi, "swing": sw}
                for sw, a, lo, hi, _ in top
            ]
            nominal = ranked[0][4] if ranked else float("nan")
            f = ".4f" if metric.startswith("availability.") else ".3g"
            text = "; ".join(
                f"{a.split('.')[-1]} ({lo:{f}} / {hi:{f}})" for _, a, lo, hi, _ in top
            )
            summary.append(f"| {name} | {OBJECTIVES[metric][0]} | {nominal:{f}} | {text} |")
    (OUT / "drivers.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    results["drivers"] = {
        n: {m: [x["assumption"] for x in v] for m, v in d.items()} for n, d in payload.items()
    }


def fronts(summary: list[str], results: dict[str, Any]) -> None:
    spec = SPACES / "robust.yaml"
    keep = None
    summary.append(
        "\n## spaces/paper/robust.yaml: nominal and robust (pessimistic, K=16) fronts\n"
    )
    for label, robust in (("nominal", False), ("robust-pessimistic-k16", True)):
        model = api.load(spec, sets=USER_SETS)
        if robust:
            model = robust_model(model, k=16, statistic="pessimistic")
        result = api.run(model)
        front = result.front
        cols = [c for c in front.columns if c.startswith("params.")]
        objs = model.objective_names
        extra = [c for c in front.columns if c.startswith(("nominal.", "robust."))]
        extra = [c for c in extra if any(c.endswith(o) or f".{o}." in c for o in objs)]
        keep = ["number", *cols, *objs, *extra, "perf.gpus_per_replica", "cost.die_yield"]
        front[[c for c in keep if c in front.columns]].to_csv(
            OUT / f"front-{label}.csv", index=False, float_format="%.6g"
        )
        done = result.trials
        results[f"front_{label}"] = {
            "trials": int(len(done)),
            "feasible": int(done["feasible"].sum()),
            "front": int(len(front)),
        }
        summary.append(
            f"- {label}: {len(done)} trials, {int(done['feasible'].sum())} feasible, "
            f"front {len(front)}; cheapest USD/Mtok {front[objs[0]].min():.4g} "
            f"(die {front.loc[front[objs[0]].idxmin(), 'params.die_area_mm2']:g} mm2, "
            f"{front.loc[front[objs[0]].idxmin(), 'params.link_type']})"
        )


def report(scratch: str) -> None:
    """The nominal study's HTML report, with the robust front beside it (dse report)."""
    from dse.inspect.report import write_report

    result = write_report("paper-robust")
    html = result.html.read_text(encoding="utf-8").replace(scratch, "$SCRATCH")
    (OUT / "report.html").write_text(html, encoding="utf-8")


def class_study(scratch: str, *, jobs: int, only: list[str] | None) -> list[dict[str, Any]]:
    """Every case x die class x price basis swept exactly and searched (classes.py), on
    ``jobs`` processes, with a progress line per finished search."""
    todo = classes.jobs(only)
    expected = sum(expected_min(j) for j in todo) / jobs
    classes.progress(
        f"class study: {len(todo)} case x die class x price basis, each an exact sweep of its "
        f"grid, at cost also an NSGA-II search; about {expected:.0f} min on {jobs} idle cores"
    )
    presets = os.environ.get("DSE_PRESETS")
    t0 = time.perf_counter()
    done: list[dict[str, Any]] = []
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = [pool.submit(classes.run_job, j, scratch, USER_SETS, presets) for j in todo]
        for k, fut in enumerate(as_completed(futures), 1):
            r = fut.result()
            done.append(r)
            j, el = r["job"], time.perf_counter() - t0
            if r["found_by"] == "search":
                hv = r["hv_search"] / max(r["hv_exact"], 1e-300)
                what = f"{r['trials']} trials, hypervolume {hv:.2%} of the exact front"
            else:
                what = "the exact front (no search at this price basis)"
            classes.progress(
                f"  [{k}/{len(todo)}] {j.path}: {r['grid']} grid designs, {what} "
                f"({r['cpu_s']:.0f} CPU s; {el:.0f} s so far, about "
                f"{el / k * (len(todo) - k):.0f} s left)"
            )
    order = {j: i for i, j in enumerate(todo)}
    return sorted(done, key=lambda r: order[r["job"]])


#: Minutes of one job on one core of a shared 2-core machine (measured with reproduce.py
#: --only on the 3.2 M-design grid of spaces/paper/search.yaml, load 4-7): an exact sweep and
#: a search at the searched price basis (3.0 min for llama3-70b-decode/quarter), the sweep
#: alone at the others.
EXPECTED_MIN_PER_JOB = {"search": 3.5, "sweep": 1.8}
#: A fleet case evaluates the performance and cost models once per model of its mix
#: (mixed-fleet/quarter/cost: 6.9 min).
FLEET_FACTOR = 2.2
#: A search-only case (classes.SEARCH_ONLY: mixture of experts, no exact sweep).
SEARCH_ONLY_MIN = 3.0


def expected_min(job: classes.Job) -> float:
    """Expected minutes of one job on one core (EXPECTED_MIN_PER_JOB)."""
    kind = "search" if job.basis in classes.SEARCHED_BASES else "sweep"
    fleet = FLEET_FACTOR if job.case in classes.FLEET_CASES else 1.0
    if job.case in classes.SEARCH_ONLY:  # a search without the sweep, at every basis
        return SEARCH_ONLY_MIN
    scale = 1.5 if classes.CASE_SCALE.get(job.case, 1) > 1 else 1.0  # bigger clusters
    return EXPECTED_MIN_PER_JOB[kind] * fleet * scale


COMMITTED = Path(__file__).resolve().parent


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Regenerate the Lite-GPU paper study (studies/paper) into --out.",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(os.environ.get("PAPER_OUT", "paper-results")),
        help="folder to write (default ./paper-results; the committed results are "
        "studies/paper, written only when named)",
    )
    ap.add_argument("--presets", type=Path, help="a folder of preset files (like $DSE_PRESETS)")
    ap.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a design or technology value everywhere (repeatable), e.g. "
        "technology.defect_density_per_cm2=0.1",
    )
    ap.add_argument(
        "--only",
        action="append",
        help="run only the class searches whose case/class/basis starts with this "
        "(repeatable; skips the files that need every search)",
    )
    ap.add_argument("--jobs", type=int, default=2, help="processes for the class searches")
    ap.add_argument(
        "--baseline",
        type=Path,
        help="an earlier run's folder that moved.csv and FINDINGS' 'what moved' compare with "
        "(default: --out's files before they are overwritten)",
    )
    ap.add_argument(
        "--no-illustrations",
        action="store_true",
        help="skip the hand-made designs (compare tables, sweeps, robust fronts)",
    )
    ap.add_argument(
        "--parts",
        type=Path,
        help="folder where --only runs keep each job's fronts (default --out/parts), and "
        "where --finish reads them",
    )
    ap.add_argument(
        "--finish",
        action="store_true",
        help="make every file from the jobs kept in --parts by earlier --only runs "
        "(a split regeneration: --only CASE for each case, then --finish)",
    )
    ap.add_argument(
        "--findings-only",
        action="store_true",
        help="only re-render FINDINGS.md (and model_error.csv when missing) from --out's files",
    )
    args = ap.parse_args(argv)
    if args.out.resolve() == COMMITTED and (args.sets or args.presets or args.only):
        ap.error(
            "the committed results in studies/paper are made with the shipped constants and "
            "every search; write runs with --set, --presets or --only to another --out DIR"
        )
    if any("=" not in s for s in args.sets):
        ap.error("--set takes KEY=VALUE")
    return args


def main(argv: list[str] | None = None) -> None:
    global OUT
    args = parse_args(argv)
    OUT = args.out
    OUT.mkdir(parents=True, exist_ok=True)
    USER_SETS[:] = args.sets
    if args.presets:
        os.environ["DSE_PRESETS"] = str(args.presets.resolve())
    # Journals in memory where the system has it (/dev/shm): a search appends ~90,000 records,
    # each flushed to disk (fsync), which on a disk is a third of a search's time.
    shm = Path("/dev/shm")
    fast = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    scratch = tempfile.mkdtemp(prefix="paper-studies-", dir=fast)
    os.environ["DSE_STUDIES_DIR"] = scratch
    try:
        t0 = time.perf_counter()
        if args.findings_only:
            if not (OUT / "model_error.csv").exists():
                table = pd.read_csv(OUT / "classes.csv")
                bias = classes.model_error_rows(table, scratch, USER_SETS)
                bias.to_csv(OUT / "model_error.csv", index=False, float_format="%.6g")
            findings.write(OUT)
            return
        if args.finish and args.only:
            raise SystemExit("--finish reads every job's results: it takes no --only")
        parts = args.parts if args.parts is not None else (OUT / "parts" if args.finish else None)
        before = _previous(args.baseline if args.baseline is not None else OUT)
        results = _class_results(scratch, jobs=args.jobs, only=args.only, parts=parts)
        table = classes.class_rows(results)
        win = None if args.only else classes.winners(table)
        if win is not None:  # a winner the space chose, not the physics: refused, nothing written
            findings.check_edge_winners(table, win)
        if not args.no_illustrations:
            classes.progress("illustrations: hand-made designs, sweeps and the robust fronts")
            _generate(scratch)
        _classes(scratch, results, table, win, before=before)
        classes.progress(f"wrote {OUT} in {time.perf_counter() - t0:.0f} s")
    finally:  # the scratch journals (~15 MB a run) are not results: leave no trace in $TMPDIR
        shutil.rmtree(scratch, ignore_errors=True)


def _previous(folder: Path) -> dict[str, pd.DataFrame]:
    """An earlier run's classes, products and winners (what moved.csv compares with)."""
    return {
        k: pd.read_csv(folder / f"{k}.csv")
        for k in ("classes", "products", "winners")
        if (folder / f"{k}.csv").exists()
    }


def _class_results(
    scratch: str, *, jobs: int, only: list[str] | None, parts: Path | None
) -> list[dict[str, Any]]:
    """The class study's results. With ``only``, the jobs' results are also kept in ``parts``
    (default --out/parts) so that runs of different cases compose; with ``parts`` and no
    ``only`` (``--finish``), the results are read from there, not rerun."""
    if parts is not None and not only:
        return load_parts(parts, scratch=scratch)
    results = class_study(scratch, jobs=jobs, only=only)
    if only:
        save_parts(results, parts or OUT / "parts")
    return results


def _classes(
    scratch: str,
    results: list[dict[str, Any]],
    table: pd.DataFrame,
    win: pd.DataFrame | None,
    *,
    before: dict[str, pd.DataFrame],
) -> None:
    """Every file made from the class study (``win`` None: an --only run, its own files)."""
    table.to_csv(OUT / "classes.csv", index=False, float_format="%.6g")
    classes.quality_rows(results).to_csv(OUT / "quality.csv", index=False, float_format="%.6g")
    products = classes.product_rows(USER_SETS)
    products.to_csv(OUT / "products.csv", index=False, float_format="%.6g")
    if win is None:
        return
    win.to_csv(OUT / "winners.csv", index=False, float_format="%.6g")
    moved = classes.moved_rows(before, {"classes": table, "products": products, "winners": win})
    moved.to_csv(OUT / "moved.csv", index=False, float_format="%.6g")
    classes.progress("spread over the uncertain assumptions")
    ranked: list[dict[str, Any]] = []
    ranges = spread.spread_rows(table, scratch, USER_SETS, results=results, sensitivity=ranked)
    ranges.to_csv(OUT / "spread.csv", index=False, float_format="%.6g")
    pd.DataFrame(ranked).to_csv(OUT / "ratio-sensitivity.csv", index=False, float_format="%.6g")
    classes.progress("break-even of each deciding assumption (winner vs runner-up)")
    parity = breakeven.breakeven_rows(table, scratch, USER_SETS)
    parity.to_csv(OUT / "breakeven.csv", index=False, float_format="%.6g")
    classes.progress("pooled memory over optics around each class's best decode design")
    pool.pool_rows(table, scratch, USER_SETS).to_csv(
        OUT / "pool.csv", index=False, float_format="%.6g"
    )
    spares.spare_rows(table, scratch, USER_SETS).to_csv(
        OUT / "spares.csv", index=False, float_format="%.6g"
    )
    classes.progress("the validated model error's effect on each class / full ratio")
    bias = classes.model_error_rows(table, scratch, USER_SETS)
    bias.to_csv(OUT / "model_error.csv", index=False, float_format="%.6g")
    for case in classes.CASES:
        classes.figure(case, results, products, OUT / f"fig-{case}.png")
    findings.write(OUT)


#: The scalar fields of one job's result, kept beside its two fronts in a parts folder.
_PART_FIELDS = ("grid", "grid_feasible", "found_by", "trials", "trials_feasible", "hv_exact",
                "hv_search", "cpu_s")  # fmt: skip


def save_parts(results: list[dict[str, Any]], folder: Path) -> None:
    """Each job's exact and searched fronts and its figures, one file each, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for r in results:
        stem = r["job"].study
        r["exact"].to_csv(folder / f"{stem}.exact.csv", index=False)
        r["search"].to_csv(folder / f"{stem}.search.csv", index=False)
        info = {k: r[k] for k in _PART_FIELDS}
        (folder / f"{stem}.json").write_text(json.dumps(info) + "\n", encoding="utf-8")


def _front_csv(path: Path) -> pd.DataFrame:
    """A kept front; a search-only job's empty exact front (classes.SEARCH_ONLY) as empty."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def load_parts(
    folder: Path, todo: list[classes.Job] | None = None, *, scratch: str | None = None
) -> list[dict[str, Any]]:
    """Every job's (or ``todo``'s) result from a parts folder; one line naming the missing
    jobs if any. With ``scratch``, each front is checked against the current models
    (:func:`_current`)."""
    todo = classes.jobs(None) if todo is None else todo
    missing = [j.path for j in todo if not (folder / f"{j.study}.json").exists()]
    if missing:
        raise SystemExit(
            f"{folder}: no results for {len(missing)} of {len(todo)} jobs (first: "
            f"{missing[0]}); run them with --only into the same parts folder first"
        )
    out = []
    for j in todo:
        info = json.loads((folder / f"{j.study}.json").read_text(encoding="utf-8"))
        fronts = {
            "exact": _front_csv(folder / f"{j.study}.exact.csv"),
            "search": pd.read_csv(folder / f"{j.study}.search.csv"),
        }
        if scratch is not None:
            fronts = {k: _current(j, f, scratch, folder) for k, f in fronts.items()}
        out.append({"job": j, **fronts, **info})
    return out


def _current(job: classes.Job, front: pd.DataFrame, scratch: str, folder: Path) -> pd.DataFrame:
    """``front`` with every metric the current models publish for its designs: a metric the
    part lacks (a model newer than the part) is added; one it holds must agree (rtol 1e-9),
    else the part was made by other models and is refused in one line."""
    from dse import api

    if front.empty:
        return front
    model = api.load(classes.class_spec(job, Path(scratch)), sets=classes._sets(job, USER_SETS))
    params = {n: front[f"params.{n}"].to_numpy() for n in model.spec.space}
    with np.errstate(all="ignore"):
        metrics = model.evaluate(params, strict=False)
    front = front.copy()
    for name, now in metrics.items():
        now = np.broadcast_to(now, (len(front),))
        if name not in front.columns:
            front[name] = now
            continue
        kept = front[name].to_numpy(float)
        if not np.allclose(kept, now, rtol=1e-9, atol=0.0, equal_nan=True):
            i = int(np.flatnonzero(~np.isclose(kept, now, rtol=1e-9, atol=0.0, equal_nan=True))[0])
            raise SystemExit(
                f"{folder}: {job.path}'s {name} is {kept[i]:.10g} in the part, {now[i]:.10g} "
                "with the current models; rerun it with --only into the same parts folder"
            )
    return front


def _generate(scratch: str) -> None:
    summary = ["# Lite-GPU paper study: generated numbers (studies/paper/reproduce.py)"]
    results: dict[str, Any] = {}
    summary.append("\n## Fixed designs of equal total compute (`dse compare`)")
    compare_tables(summary)
    conditions(summary, results, same_fabric(summary, results))
    area_sweep(summary, results)
    tech_sweeps(summary, results)
    quarter_case(summary, results)
    port_sweep(summary, results)
    tornado(summary)
    drivers(summary, results)
    fronts(summary, results)
    report(scratch)
    (OUT / "summary.md").write_text("\n".join(summary) + "\n", encoding="utf-8")
    (OUT / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
