"""Every die class searched to its own best: the paper's question answered by search.

For each case (workload) and die class, ``spaces/paper/search.yaml`` with its die area narrowed
to the class is (1) swept exactly on its grid and (2) searched by the engine (NSGA-II), at two
price bases. The search's front is checked against the exact front (hypervolume); the best
design the search found for each objective is a row of ``classes.csv``. Shipped products are
evaluated on the same cases as reference points (``products.csv``), and the headline ratios get
their spread over the uncertain assumptions (``spread.py``, ``spread.csv``).

Imported by ``reproduce.py``; ``run_job`` runs in worker processes.
"""

from __future__ import annotations

import copy
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[2]
SPACES = ROOT / "spaces" / "paper"
TEMPLATE = SPACES / "search.yaml"

#: Case name -> the overrides of the template's workload (``--set`` syntax).
CASES: dict[str, list[str]] = {
    "llama3-70b-decode": [],
    "llama3-70b-prefill": ["workload.phase=prefill"],
    "llama3-405b-decode": ["workload.model=llama3-405b"],
    "llama3-405b-prefill": ["workload.model=llama3-405b", "workload.phase=prefill"],
    "llama3-70b-train": ["workload.phase=train"],
    # A small model, where the full die's capacity is mostly idle weight copies.
    "llama3-8b-decode": ["workload.model=llama3-8b"],
    # Mixture of experts with long outputs: DeepSeek-R1 (DeepSeek-V3's architecture: 671B, 256
    # routed experts, MLA; the expert-parallel degree searched, ``ep: auto``), ~1k in, 8k out,
    # so the KV cache of a long decode decides the batch.
    "deepseek-r1-reasoning": [
        "workload.model=deepseek-v3",
        "workload.ep=auto",
        "workload.input_tokens=1024",
        "workload.output_tokens=8192",
    ],
    # Today's scale: 16 x the silicon (1,024 H100-equivalents), where switch tiers and copper
    # reach matter to every class.
    "llama3-405b-decode-1k": ["workload.model=llama3-405b"],
    # One cluster serving a request mix over Llama-3-8B/70B/405B, each at its own SLO, replicas
    # bin-packed (objectives/fleet/): allocation granularity and stranded capacity.
    "mixed-fleet": [],
}
#: Cases judged on the mixed fleet's metrics (objectives/fleet/) instead of one model's.
FLEET_CASES = ("mixed-fleet",)
#: Search settings a case needs beyond the template's to reach 98.5 % of the exact front's
#: hypervolume (none now: the template's 4,000 trials after a 1,000,000-design warm start
#: cover the cases measured, the mixed fleet included; studies/paper/README.md).
CASE_SEARCH: dict[str, dict[str, Any]] = {
    # 98.3 % at 4,000 trials on mixed-fleet/eighth (the three models' joint front is wider)
    "mixed-fleet": {"trials": 6000},
    # a 100,000-design warm start costs 45 CPU-s here (see SEARCH_ONLY)
    "deepseek-r1-reasoning": {"warm_start": 100000},
}
#: Cases searched without an exact sweep, at both price bases: a mixture-of-experts model's
#: serving model tries every expert-parallel degree and batch for each design, ~0.45 CPU-ms a
#: design (deepseek-r1-reasoning/half, 100,000 designs in 45 s), so one 3.2 M-design grid
#: would take 24 CPU-min and the case's twelve ~5 CPU-h. Their answer is the search's front
#: alone; quality.csv says so (no grid, no hypervolume fraction). DeepSeek-V3 decode, the MoE
#: case of earlier rounds, is left to this long-output case of the same architecture.
SEARCH_ONLY: tuple[str, ...] = ("deepseek-r1-reasoning",)
#: Compute silicon of a case's cluster in units of the 64 x 814 mm2 baseline (default 1).
CASE_SCALE: dict[str, int] = {"llama3-405b-decode-1k": 16}
#: Compute silicon of the baseline cluster: 64 H100 dies of 814 mm2.
BASE_SILICON_MM2 = 52096
#: Die classes by compute-die area, halving from 700 mm2 (the reticle-class die is >= 700 mm2;
#: 858 mm2 is the 26 x 33 mm field): (low, high, step) of the searched and swept grid, 7 areas
#: each so that every class's exact sweep has the same size.
CLASSES: dict[str, tuple[float, float, float]] = {
    "full": (700.0, 856.0, 26.0),
    "half": (350.0, 686.0, 56.0),
    "quarter": (175.0, 343.0, 28.0),
    "eighth": (88.0, 172.0, 14.0),
    "chiplet": (175.0, 343.0, 28.0),
    "dual": (700.0, 856.0, 26.0),
}
#: What separates die size from package size: dies per package beyond the template's one, and
#: their die-to-die link. ``chiplet``: four quarter-size compute dies in one package; ``dual``:
#: two reticle-class dies in one package, as B200. Both join their dies at B200's NV-HBI
#: 10 TB/s (NVIDIA Blackwell architecture technical brief, 2024). Packaging (CoWoS-S or -L),
#: HBM stacks per die, cooling and every other choice are searched for every class alike.
CLASS_FIXED: dict[str, dict[str, Any]] = {
    "chiplet": {"dies_per_gpu": 4, "d2d_tbps": 10.0},
    "dual": {"dies_per_gpu": 2, "d2d_tbps": 10.0},
}
#: The package-structure fields a class may fix; everything else is the same for all classes
#: (tests/cli/test_paper_symmetry.py holds it).
PACKAGE_FIELDS = ("dies_per_gpu", "d2d_tbps")
#: Who pays the margin. "cost": a buyer who builds at manufacturing cost (a hyperscaler's own
#: silicon and network). "market": the vendors' gross margins on top, each GPU at its vendor's
#: and each class of network gear at its own (price_basis, objectives/presets/technology/
#: market.yaml; before issue 40 one markup of 4.0 on every GPU and 2.6 on network gear).
BASES: dict[str, list[str]] = {
    "cost": [],
    "market": ["price_basis=market"],
}
#: Bases searched by the engine (and checked against the exact sweep); at the others the
#: exact sweep's front gives the answer (the same grid, every design evaluated).
SEARCHED_BASES = ("cost",)
COST = "cost.usd_per_mtok_delivered"
POWER = "availability.delivered_tokens_per_s_per_mw"
"""Fixed site power: delivered tokens/s per MW of facility power (IT x PUE) at the SLO."""
TPJ = "availability.delivered_tokens_per_joule"  # recorded, no longer an objective
SERVE_AVAIL = "availability.capacity_availability"
TRAIN_AVAIL = "availability.goodput_fraction"
#: Shipped products as reference points: label -> (GPU preset, extra overrides).
#: 64 GPUs each (72, one rack, for the NVL72 systems), on their own fabric and node; their
#: compute silicon per GPU differs (a B200 has two ~800 mm2 dies), which per-token figures
#: do not depend on.
PRODUCTS: dict[str, tuple[str, list[str]]] = {
    "h100-sxm": ("h100-sxm", []),
    "h200": ("h200", []),
    "h100-die-7-stacks": ("h100-sxm", ["hbm_stacks_per_die=7"]),
    "b200": ("b200", []),
    "b300": ("b300", []),
    "gb200-nvl72": ("gb200-nvl72", ["cluster_size=72"]),
    "gb300-nvl72": ("gb300-nvl72", ["cluster_size=72"]),
    "mi300x": ("mi300x", []),
    "mi355x": ("mi355x", []),
    "tpu-v5p": ("tpu-v5p", []),
    "tpu-ironwood": ("tpu-ironwood", []),
}
BASE_N = 64  # the products' cluster: 64 GPUs (8 HGX nodes), like the classes' total die area


FLEET_COST = "fleet.usd_per_mtok"
FLEET_POWER = "fleet.tokens_per_s_per_mw"
#: A fleet case's objectives under the names every table uses for cost and power.
ALIAS = {FLEET_COST: COST, FLEET_POWER: POWER}


def objectives(case: str) -> list[str]:
    if case in FLEET_CASES:
        return [FLEET_COST, FLEET_POWER, SERVE_AVAIL]
    return [COST, POWER, TRAIN_AVAIL if case.endswith("-train") else SERVE_AVAIL]


def minimized(obj: str) -> bool:
    """True for the cost objectives (under any alias)."""
    return ALIAS.get(obj, obj) == COST


def maximize(case: str) -> list[bool]:
    return [False, True, True]


@dataclass(frozen=True)
class Job:
    case: str
    die_class: str
    basis: str

    @property
    def path(self) -> str:
        return f"{self.case}/{self.die_class}/{self.basis}"

    @property
    def study(self) -> str:
        return f"paper-{self.case}-{self.die_class}-{self.basis}"


def jobs(only: list[str] | None = None) -> list[Job]:
    """Every case x class x basis; ``only`` keeps those whose 'case/class/basis' path starts
    with one of its entries (``llama3-70b-decode/quarter``)."""
    out = [Job(c, k, b) for c in CASES for k in CLASSES for b in BASES]
    if only:
        out = [
            j for j in out if any(f"{j.case}/{j.die_class}/{j.basis}".startswith(o) for o in only)
        ]
    return out


def class_spec(job: Job, scratch: Path, *, trials_factor: int = 1) -> Path:
    """The template with the class's die area, the case's objectives and a study name;
    ``trials_factor``: a search rerun with that many times the trials (its own study)."""
    spec = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    low, high, step = CLASSES[job.die_class]
    spec["study"] = job.study if trials_factor == 1 else f"{job.study}-x{trials_factor}"
    spec["description"] = f"{job.die_class} die class, {job.case}, price basis {job.basis}"
    spec["space"]["die_area_mm2"] = {"type": "float", "low": low, "high": high, "step": step}
    extra = CLASS_FIXED.get(job.die_class, {})
    spec["fixed"].update(extra)
    dies = int(extra.get("dies_per_gpu", 1))
    silicon = BASE_SILICON_MM2 * CASE_SCALE.get(job.case, 1)
    per_gpu = f"({dies} * die_area_mm2)" if dies > 1 else "die_area_mm2"
    spec["derived"]["cluster_size"] = f"{silicon} // {per_gpu}"  # equal compute silicon
    for obj, metric in zip(spec["objectives"], objectives(job.case), strict=True):
        obj["metric"] = metric
    spec["search"].update(CASE_SEARCH.get(job.case, {}))
    spec["search"]["trials"] = int(spec["search"]["trials"]) * trials_factor
    if job.case in FLEET_CASES:  # every model of the mix must fit and meet its SLO
        spec["evaluators"] = {
            "cost": None,
            "perf": None,
            "availability": None,
            "fleet": "objectives.fleet:evaluate_fleet",
        }
        drop = ["perf.model_fits", "perf.slo_met"]
        spec["constraints"] = ["fleet.models_fit"] + [
            c for c in spec["constraints"] if c not in drop
        ]
        spec["default_constraints"] = {"drop": drop}  # the fleet's models, not the workload's
    path = scratch / "specs" / f"{spec['study']}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


#: Set for every design of the study, products included: multi-die packages (chiplet, dual,
#: B200-class products) pay their die-to-die link on collectives (technology/fabric.yaml).
STUDY_SETS = ["technology.d2d_collective_penalty=true"]


def _sets(job: Job, user_sets: list[str]) -> list[str]:
    return [*STUDY_SETS, *CASES[job.case], *BASES[job.basis], *user_sets]


def run_job(job: Job, scratch: str, user_sets: list[str], presets: str | None) -> dict[str, Any]:
    """Sweep and search one case x class x basis; the two fronts and their hypervolumes."""
    os.environ["DSE_STUDIES_DIR"] = str(Path(scratch) / "studies")
    if presets:
        os.environ["DSE_PRESETS"] = presets
    import optuna

    from dse import api
    from dse.model.pareto import reference_point

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # this worker process's own logging
    from dse.results.quality import front_hypervolume
    from dse.search.sweep.sweep import sweep

    t0 = time.process_time()
    model = api.load(class_spec(job, Path(scratch)), sets=_sets(job, user_sets))
    if job.case in SEARCH_ONLY:
        return {**_search_only(job, model), "cpu_s": time.process_time() - t0}
    exact = sweep(model, write=False)
    _add_derived(model, exact.front)
    out: dict[str, Any] = {
        "job": job,
        "exact": exact.front,
        "grid": int(exact.designs_evaluated),
        "grid_feasible": int(exact.feasible),
    }
    if job.basis not in SEARCHED_BASES:  # the exact front answers; no search to check
        out.update(search=exact.front, found_by="sweep", trials=0, trials_feasible=0,
                   hv_exact=float("nan"), hv_search=float("nan"))  # fmt: skip
        return {**out, "cpu_s": time.process_time() - t0}
    objs, mx = objectives(job.case), maximize(job.case)
    ref = reference_point(
        thresholds=[None] * len(objs), maximize=mx, reference_set=exact.front[objs].to_numpy()
    )
    hv_exact = front_hypervolume(exact.front[objs].to_numpy(), ref, mx)
    factor = 1
    while True:  # a search short of the check is run again with twice the trials
        result = api.run(model)
        hv = front_hypervolume(result.front[objs].to_numpy(), ref, mx)
        if hv >= HV_CHECK * hv_exact or factor >= MAX_TRIALS_FACTOR:
            break
        factor *= 2
        model = api.load(
            class_spec(job, Path(scratch), trials_factor=factor), sets=_sets(job, user_sets)
        )
    _add_derived(model, result.front)
    out.update(
        search=result.front,
        found_by="search",
        trials=int(len(result.trials)),
        trials_feasible=int(result.trials["feasible"].sum()),
        hv_exact=hv_exact,
        hv_search=hv,
    )
    return {**out, "cpu_s": time.process_time() - t0}


#: The search's check: its front's hypervolume at least this fraction of the exact front's
#: (issue 35: 98.5 %). A search short of it is rerun with 2x, then 4x its trials (a new study
#: from the same seed), and quality.csv records the trials of the one kept.
HV_CHECK = 0.985
MAX_TRIALS_FACTOR = 4


def _search_only(job: Job, model: Any) -> dict[str, Any]:
    """A search with no exact sweep to check it against (SEARCH_ONLY)."""
    from dse import api

    result = api.run(model)
    _add_derived(model, result.front)
    return {
        "job": job,
        "exact": pd.DataFrame(),
        "grid": 0,
        "grid_feasible": 0,
        "search": result.front,
        "found_by": "search",
        "trials": int(len(result.trials)),
        "trials_feasible": int(result.trials["feasible"].sum()),
        "hv_exact": float("nan"),
        "hv_search": float("nan"),
    }


def _add_derived(model: Any, front: pd.DataFrame) -> None:
    """The spec's derived values (cluster size, HBM speed) as ``params.`` columns."""
    if front.empty:
        return
    params = {n: front[f"params.{n}"].to_numpy() for n in model.spec.space}
    design = model.design(params)
    for name in model.derived:
        front[f"params.{name}"] = np.broadcast_to(np.asarray(design[name], float), len(front))


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _template_space() -> dict[str, Any]:
    return dict(yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))["space"])


#: The searched parameters (the template's space) and, after them, the derived ones.
SEARCHED = list(_template_space())
PARAMS = [*SEARCHED, "cluster_size"]

#: Edges of the searched space a best design may sit on because they are physical limits, not
#: choices of the study: (parameter, "low" | "high") -> why. A best design on any other edge
#: (``at_bound``) means the space cut it off, and findings.py refuses to name it a winner.
PHYSICAL_EDGES: dict[tuple[str, str], str] = {
    ("die_area_mm2", "low"): "the class's own definition",
    ("die_area_mm2", "high"): "the class's own definition (the reticle for full and dual)",
    ("clock_ghz", "low"): "below the V-f curve's Vmin knee (~1.16 GHz) a lower clock saves no "
    "energy per operation (technology.vdd_min_v)",
    ("clock_ghz", "high"): "above H100's 1.98 GHz boost clock (NVIDIA H100 datasheet)",
    ("hbm_stacks_per_die", "low"): "a GPU needs at least one HBM stack",
    ("hbm_stacks_per_die", "high"): "8 stacks of ~11 mm PHY beachfront take 88 mm, 78 % of a "
    "reticle die's ~113 mm perimeter, and with the scale-up I/O what one die's edge holds "
    "(perf.shoreline_used_fraction 0.84-0.99 at the study's winners there); no shipped die "
    "carries more than H100's 6 stack sites (NVIDIA H100 whitepaper; B200: 4 per die)",
    ("hbm_tbps_per_stack", "high"): "HBM4 is the newest JEDEC generation (JESD270-4, 2025)",
    ("hbm_tbps_per_stack", "low"): "HBM2e is the oldest generation still made for AI GPUs",
    ("hbm_gb_per_stack", "low"): "the smallest HBM2e/HBM3 stack (8-high x 16 Gb)",
    ("hbm_gb_per_stack", "high"): "the largest stack shipped (16-high x 24 Gb)",
    ("links_per_gpu", "low"): "two links are the fewest that close a ring",
    ("links_per_gpu", "high"): "18 links per GPU, NVLink 4/5's count (NVIDIA H100/B200); the "
    "bandwidth beyond it is searched as lanes per link (links x lanes is what a torus of at "
    "most 3 dimensions or a switch sees)",
    ("optics_per_link", "high"): "8 lanes of 200 Gb/s, a 1.6T port, the widest shipped "
    "(1.6T OSFP optics; NVIDIA Quantum-X800 / Spectrum-X Photonics 1.6T ports)",
    ("optics_per_link", "low"): "a link has at least one lane",
}


def at_bound(row: Mapping[str, Any], space: Mapping[str, Any], low: float, high: float) -> str:
    """The searched parameters whose value in ``row`` is the lowest or highest the space offers
    (ordered numeric choices and ranges; unordered names have no edge), as 'name=low' and
    'name=high' joined by ';'. ``low``/``high``: the class's die area range."""
    out = []
    for name, dist in space.items():
        if name == "die_area_mm2":
            lo, hi = low, high
        elif "choices" in dist:
            vals = dist["choices"]
            if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
                continue
            if len(vals) < 2:
                continue
            lo, hi = min(vals), max(vals)
        else:
            lo, hi = dist["low"], dist["high"]
        v = float(row[name])
        if abs(v - lo) <= 1e-9 * max(1.0, abs(lo)):
            out.append(f"{name}=low")
        elif abs(v - hi) <= 1e-9 * max(1.0, abs(hi)):
            out.append(f"{name}=high")
    return ";".join(out)


def unphysical_edges(text: str) -> list[str]:
    """The entries of an ``at_bound`` cell that are not declared physical limits."""
    if not isinstance(text, str) or not text:
        return []
    out = []
    for item in text.split(";"):
        name, side = item.split("=")
        if (name, side) not in PHYSICAL_EDGES:
            out.append(item)
    return out


def _best_row(front: pd.DataFrame, objs: list[str], mx: list[bool], i: int) -> pd.Series:
    """The front's best design for objective ``i``; ties go to the better other objectives."""
    keys = [objs[i], *[o for j, o in enumerate(objs) if j != i]]
    asc = [not mx[i], *[not m for j, m in enumerate(mx) if j != i]]
    return front.sort_values(keys, ascending=asc, kind="mergesort").iloc[0]


def best_design(
    table: pd.DataFrame, case: str, die_class: str, obj: str, basis: str = "cost"
) -> pd.Series | None:
    """A class's best design for ``obj`` at ``basis`` (its classes.csv row); None if absent."""
    rows = table[
        (table["case"] == case)
        & (table["die_class"] == die_class)
        & (table["price_basis"] == basis)
        & (table["objective"] == obj)
    ]
    return None if rows.empty else rows.iloc[0]


def class_rows(results: list[dict[str, Any]]) -> pd.DataFrame:
    """classes.csv: per case x class x basis x objective, the best design the search found,
    every searched parameter and metric, and the exact sweep's best value beside it."""
    rows = []
    space = _template_space()
    fixed = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))["fixed"]
    for r in results:
        job: Job = r["job"]
        objs, mx = objectives(job.case), maximize(job.case)
        front, exact = r["search"], r["exact"]
        for i, obj in enumerate(objs):
            best = _best_row(front, objs, mx, i)
            if exact.empty:  # a search-only case (SEARCH_ONLY): no exact best to compare
                ex = float("nan")
            else:
                ex = exact[obj].max() if mx[i] else exact[obj].min()
            row: dict[str, Any] = {
                "case": job.case,
                "die_class": job.die_class,
                "price_basis": job.basis,
                "objective": ALIAS.get(obj, obj),
                "found_by": r["found_by"],
                "value": float(best[obj]),
                "exact_value": float(ex),
                "search_gap": float(abs(best[obj] - ex) / abs(ex)),
            }
            for p in PARAMS:
                row[p] = best[f"params.{p}"]
            row["dies_per_gpu"] = int(CLASS_FIXED.get(job.die_class, {}).get("dies_per_gpu", 1))
            row["lane_gbps"] = float(fixed.get("lane_gbps", float("nan")))
            low, high, _ = CLASSES[job.die_class]
            row["at_bound"] = at_bound(
                {p: best[f"params.{p}"] for p in SEARCHED}, space, low, high
            )
            metrics = sorted(c for c in front.columns if c.split(".")[0] in METRIC_GROUPS)
            for m in metrics:
                row[m] = float(best[m])
            rows.append(row)
    return pd.DataFrame(rows)


METRIC_GROUPS = ("cost", "perf", "availability", "fleet")


def quality_rows(results: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for r in results:
        job: Job = r["job"]
        rows.append(
            {
                "case": job.case,
                "die_class": job.die_class,
                "price_basis": job.basis,
                "grid_designs": r["grid"],
                "grid_feasible": r["grid_feasible"],
                "exact_front": len(r["exact"]),
                "trials": r["trials"],
                "trials_feasible": r["trials_feasible"],
                "found_by": r["found_by"],
                "search_front": len(r["search"]) if r["found_by"] == "search" else 0,
                "hypervolume_fraction": r["hv_search"] / r["hv_exact"]
                if r["hv_exact"] and r["grid"]
                else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def _scaled(extra: list[str], scale: int) -> list[str]:
    """A product's overrides for a cluster ``scale`` x the baseline: BASE_N x scale GPUs, or
    for a rack system (cluster_size=72) whole racks of about the same count."""
    if scale == 1:
        return extra
    rest = [e for e in extra if not e.startswith("cluster_size=")]
    if len(rest) < len(extra):  # NVL72: whole racks, 15 x 72 = 1,080 for 1,024
        return [*rest, f"cluster_size={72 * round(BASE_N * scale / 72)}"]
    return [*rest, f"cluster_size={BASE_N * scale}"]


def _fleet_metrics(model: Any, params: dict[str, Any]) -> dict[str, float]:
    """A fixed design's mixed-fleet metrics, its cost and power also under COST and POWER."""
    from objectives.fleet import evaluate_fleet

    f = {f"fleet.{k}": float(v) for k, v in evaluate_fleet(model.design(params)).items()}
    f[COST], f[POWER] = f[FLEET_COST], f[FLEET_POWER]
    f["perf.model_fits"] = f["perf.slo_met"] = f["fleet.models_fit"]
    return f


def product_rows(user_sets: list[str]) -> pd.DataFrame:
    """Shipped products on every case and basis, as they ship (64 GPUs, their own fabric)."""
    from dse import api

    rows = []
    for case, case_sets in CASES.items():
        for basis, basis_sets in BASES.items():
            for label, (preset, extra) in PRODUCTS.items():
                extra = _scaled(extra, CASE_SCALE.get(case, 1))
                # technology=auto first: each product on the node it ships on (an MI355X is
                # an N3 part), where the spec pins the classes' N4; the study's and the
                # case's technology overrides then apply to that node
                sets = [f"gpu={preset}", "technology=auto", *extra, *STUDY_SETS, *case_sets]
                sets += basis_sets
                sets += user_sets
                model, params = api.load_for_evaluate(SPACES / "h100.yaml", sets)
                m = api.evaluate(model, params)
                if case in FLEET_CASES:  # the mix's cost and power, under the common names
                    m.update(_fleet_metrics(model, params))
                feasible = all(
                    m[k] > 0 for k in ("perf.model_fits", "perf.slo_met", "perf.topology_ok")
                )
                rows.append(
                    {
                        "case": case,
                        "price_basis": basis,
                        "product": label,
                        "feasible": float(feasible),
                        **{k: float(v) for k, v in sorted(m.items())},
                    }
                )
    return pd.DataFrame(rows)


def winners(classes: pd.DataFrame) -> pd.DataFrame:
    """Per case x basis x objective: the winning class and each class's value / the full's."""
    rows = []
    for (case, basis, obj), g in classes.groupby(["case", "price_basis", "objective"], sort=False):
        mx = obj != COST
        full = float(g.loc[g["die_class"] == "full", "value"].iloc[0])
        order = g.sort_values("value", ascending=not mx, kind="mergesort")
        win = order.iloc[0]
        rows.append(
            {
                "case": case,
                "price_basis": basis,
                "objective": obj,
                "winner": win["die_class"],
                "winner_value": float(win["value"]),
                "full_value": full,
                **{
                    f"{k}_vs_full": float(v) / full
                    for k, v in zip(g["die_class"], g["value"], strict=True)
                },
            }
        )
    return pd.DataFrame(rows)


def moved_rows(before: dict[str, pd.DataFrame], after: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """moved.csv: each class's best value, each product's value and each winner, before (an
    earlier run's files) and after (this run's), so FINDINGS can say what a model change
    moved. A row only in this run has no ``before`` (a new case, class or product)."""
    rows: list[dict[str, Any]] = []

    def add(kind: str, r: pd.Series, subject: str, obj: str, old: Any, new: Any) -> None:
        numeric = kind != "winner" and old is not None
        rows.append(
            {
                "kind": kind,
                "case": r["case"],
                "price_basis": r["price_basis"],
                "subject": subject,
                "objective": obj,
                "before": old,
                "after": new,
                "change": float(new) / float(old) - 1 if numeric else None,
            }
        )

    def lookup(frame: pd.DataFrame | None, keys: list[str], column: str) -> dict[Any, Any]:
        return {} if frame is None else frame.set_index(keys)[column].to_dict()

    ckeys = ["case", "price_basis", "die_class", "objective"]
    prev = lookup(before.get("classes"), ckeys, "value")
    for _, r in after["classes"].iterrows():
        add("class", r, r["die_class"], r["objective"], prev.get(tuple(r[ckeys])), r["value"])
    pkeys = ["case", "price_basis", "product"]
    for obj in (COST, POWER):
        prev = lookup(before.get("products"), pkeys, obj)
        for _, r in after["products"].iterrows():
            add("product", r, r["product"], obj, prev.get(tuple(r[pkeys])), r[obj])
    wkeys = ["case", "price_basis", "objective"]
    prev = lookup(before.get("winners"), wkeys, "winner")
    for _, r in after["winners"].iterrows():
        add("winner", r, "winner", r["objective"], prev.get(tuple(r[wkeys])), r["winner"])
    return pd.DataFrame(rows)


MARKERS = {"full": "s", "half": "D", "quarter": "o", "eighth": "^", "chiplet": "P", "dual": "X"}


def figure(case: str, results: list[dict[str, Any]], products: pd.DataFrame, out: Path) -> None:
    """The classes' searched fronts (cost basis) in cost per token x tokens/s per MW of facility
    power, die area as colour, shipped products marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5.2), dpi=110)
    x_obj, y_obj = objectives(case)[:2]  # the fleet case: its own metrics
    sc = None
    for r in results:
        job = r["job"]
        if job.case != case or job.basis != "cost":
            continue
        f = r["search"]
        sc = ax.scatter(
            f[x_obj], f[y_obj], c=f["params.die_area_mm2"], cmap="viridis", vmin=88, vmax=858,
            marker=MARKERS[job.die_class], s=28, edgecolors="k", linewidths=0.3,
            label=f"{job.die_class} die (searched front)",
        )  # fmt: skip
    prod = products[(products["case"] == case) & (products["price_basis"] == "cost")]
    for _, p in prod.iterrows():
        ax.scatter(p[COST], p[POWER], marker="*", s=180, c="red", edgecolors="k", zorder=5)
        ax.annotate(p["product"], (p[COST], p[POWER]), textcoords="offset points",
                    xytext=(6, 4), fontsize=8, color="darkred")  # fmt: skip
    if sc is not None:
        fig.colorbar(sc, ax=ax, label="compute die area (mm²)")
    ax.set_xlabel("USD per million tokens delivered (manufacturing cost basis)")
    ax.set_ylabel("tokens/s delivered per MW of facility power")
    ax.set_title(f"{case}: each die class searched to its own best; ★ shipped products")
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, metadata={"Software": None})
    plt.close(fig)


def model_error_rows(
    classes: pd.DataFrame, scratch: str, user_sets: list[str], *, basis: str = "cost"
) -> pd.DataFrame:
    """What the serving model's validated error pattern does to each class / full ratio.

    benchmarks/validation_bias.py regresses the log error of every validated continuous-batching
    throughput row on where its step time goes (GEMM compute, weight streaming, attention,
    all-reduce, per-layer cost); each class's best design is split the same way at its own
    operating point, and exp(implied error of the class - that of the full die) is the bias the
    known error pattern puts into the ratio of their tokens/s (so of tokens/J and cost per
    token). Serving cases only: training is validated separately (docs/validation.md)."""
    import math

    from dse import api
    from objectives.perf import evaluate_perf

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import validation_bias as vb

    x, y, _ = vb.rows()
    beta = vb.regress(x, y)["beta"]
    rows = []
    for case in CASES:
        if case.endswith("-train") or case in FLEET_CASES:
            continue
        models = {
            cls: api.load(class_spec(Job(case, cls, basis), Path(scratch)),
                          sets=_sets(Job(case, cls, basis), user_sets))
            for cls in CLASSES
        }  # fmt: skip
        sub = classes[(classes["case"] == case) & (classes["price_basis"] == basis)]
        for obj in objectives(case)[:2]:
            implied = {}
            for _, r in sub[sub["objective"] == obj].iterrows():
                d = models[r["die_class"]].design({p: r[p] for p in SEARCHED})
                m = evaluate_perf(copy.deepcopy(d))
                wl = {k: v for k, v in d["workload"].items() if k not in vb._OPEN}
                wl.update(batch=max(1, math.floor(float(m["batch"]))), tp=int(m["tp"]),
                          pp=int(m["pp"]), ep=int(m.get("ep", 1)))  # fmt: skip

                def step(over: dict[str, float], d: dict[str, Any] = d, wl=wl) -> float:
                    e = {**d, "workload": wl, "technology": {**d["technology"], **over}}
                    return float(evaluate_perf(e)["step_s"])

                implied[r["die_class"]] = float(vb.shares(step) @ beta)
            for cls, e in implied.items():
                rows.append(
                    {
                        "case": case,
                        "objective": obj,
                        "die_class": cls,
                        "implied_tokens_per_s_error": math.exp(e) - 1,
                        "ratio_bias_vs_full": math.exp(e - implied["full"]),
                    }
                )
    return pd.DataFrame(rows)
