"""Validate the serving model against SemiAnalysis InferenceX (InferenceMAX) measurements.

Validation only: nothing is fitted and no constant changes. The rows
(``benchmarks/inferencex_rows.json``) were picked by a rule declared before any was evaluated
(the file's ``rule``; docs/validation_inferencex.md) from the dump of InferenceX results in
SemiAnalysisAI/InferenceX-app @ 3a600f1d packages/app/cypress/fixtures/api/benchmarks.json.

How a row was measured (SemiAnalysisAI/InferenceX @ f267602f, the tree of 2026-02-27, inside
the rows' dates; every single-node script alike):

* client: ``utils/bench_serving/benchmark_serving.py`` (vLLM's benchmark_serving) with
  ``--dataset-name random --request-rate inf --max-concurrency $CONC --num-prompts $CONC*10
  --ignore-eos --num-warmups 2*$CONC`` (benchmarks/benchmark_lib.sh, run_benchmark_serving):
  a closed loop of ``conc`` requests in flight against ONE server of ``tp`` GPUs, every answer
  exactly as long as asked;
* lengths: ``--random-range-ratio 0.8`` (.github/workflows/benchmark-tmpl.yml
  RANDOM_RANGE_RATIO), drawn uniform on the integers [int(0.8 L), L]
  (benchmark_serving.py sample_random_requests), so a mean of (int(0.8 L) + L) / 2 and a
  coefficient of variation sqrt((n^2 - 1) / 12) / mean, n = L - int(0.8 L) + 1;
* metrics: utils/process_result.py divides the client's ``total_token_throughput`` (input +
  output) and ``output_throughput`` by ``tp`` (single node: the engine's GPU count, expert
  and attention-data parallelism inside it); TTFT/TPOT are the client's per-request means;
* engines: SGLang ``--tensor-parallel-size $TP --ep-size $EP_SIZE``; TensorRT-LLM
  ``trtllm-serve --backend=pytorch --tp_size --ep_size`` with ``enable_attention_dp``
  (benchmarks/single_node/dsr1_*_b200_trt.sh); ATOM (AMD) and vLLM likewise.

Mapping: gpu (h100 -> h100-sxm, gb200/gb300 -> their NVL72 presets), model (dsr1 ->
deepseek-v3, gptoss -> gpt-oss-120b, llama70b -> llama3-70b), precision (fp4 on Blackwell and
MI355X; gpt-oss MXFP4 on Hopper would be bf16 + weight_precision fp4), tp = the GPU count,
ep, attention_dp; ``batch`` = conc (the closed loop pins the running batch of the one
replica); mean lengths and their spread as above; software stack: TensorRT-LLM rows take the
PyTorch backend's FP4 GEMM factor and vLLM-on-ROCm rows the ROCm vLLM factor, as
validate_perf.py does (PYTORCH_SOURCES, ROCM_SOURCES); SGLang and ATOM have no factor of
their own (the model's defaults). Round 16 rule (2026-12-04, with ``workload.prefill_batching``;
written after these rows were evaluated with mixed steps and the decode-only diagnostic was
seen, so their improvement under it is in-sample): SGLang rows run with
``prefill_batching: separate``, SGLang's default (ServerArgs.enable_mixed_chunk = False,
sgl-project/sglang python/sglang/srt/server_args.py; no stored InferenceX launch script found
passing --enable-mixed-chunk); TensorRT-LLM (in-flight batching) and ATOM rows stay mixed. A
run of 10 x conc requests in a closed loop holds conc in
flight all along but for the last answers, so the steady state is compared (no tail).

Three samples, each declared before its rows were evaluated (the file's ``rule``): A (windows
[96,000 k, +16,000)) and B (windows [96,000 k + 48,000, +16,000)) of 3a600f1d, and C (rule 5:
the two other stored captures of the fixture, InferenceX-app @ 528c4146 and @ cac6246e, whole,
keys disjoint from A and B; ``select_c``). The SGLang mapping above was written after A was
evaluated, so A is in sample for it and B and C are not; ``--mixed`` evaluates every row with
mixed steps (the mapping before round 16), to show what ``separate`` does.

    PYTHONPATH=. python benchmarks/validate_inferencex.py                   # writes the doc
    PYTHONPATH=. python benchmarks/validate_inferencex.py --check           # print only
    PYTHONPATH=. python benchmarks/validate_inferencex.py --check --mixed   # every row mixed
    PYTHONPATH=. python benchmarks/validate_inferencex.py --select-c NEWER.json OLDER.json
        # rule 5 again on the captures (git show 528c4146:<fixture>, cac6246e:<fixture>)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from validate_perf import Row, context  # noqa: E402

from objectives.perf import evaluate_perf  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "inferencex_rows.json"
DOC = ROOT / "docs" / "validation_inferencex.md"
SRC = "IFX"  # InferenceX: the Row source tag of these rows
RANGE_RATIO = 0.8  # benchmark-tmpl.yml RANDOM_RANGE_RATIO @ f267602f
GPUS = {"h100": "h100-sxm", "h200": "h200", "b200": "b200", "b300": "b300",
        "gb200": "gb200-nvl72", "gb300": "gb300-nvl72", "mi300x": "mi300x",
        "mi355x": "mi355x"}  # fmt: skip
MODELS = {"dsr1": "deepseek-v3", "gptoss": "gpt-oss-120b", "llama70b": "llama3-70b"}
FAMILIES = {"Hopper": ("h100", "h200"), "Blackwell": ("b200", "b300", "gb200", "gb300"),
            "AMD": ("mi300x", "mi355x")}  # fmt: skip
HOPPER = FAMILIES["Hopper"]
METRICS = ("out_tps_gpu", "tpot_s", "ttft_s")
ENGINES = ("sglang", "trt", "atom", "vllm")  # the single-node frameworks of the filter
SAMPLES = ("A", "B", "C")  # the file's rule: A declared first, B after A's, C after B's
#: Sample C's sources (rule 5 of docs/validation_inferencex.md): the stored captures of the
#: fixture, newer first (a key held by both keeps the newer record).
C_SOURCES = (
    ("SemiAnalysisAI/InferenceX-app@528c4146b8f502fcbce8df7870a935a970cbae25 (PR #458, via "
     "vngcloud/InferenceX-app) packages/app/cypress/fixtures/api/benchmarks.json"),
    ("SemiAnalysisAI/InferenceX-app@cac6246e9fef70841e48e1434cbf10bb9a2802a8 (PR #318, via "
     "vngcloud/InferenceX-app) packages/app/cypress/fixtures/api/benchmarks.json"),
)  # fmt: skip
LENGTHS = ((1024, 1024), (1024, 8192), (8192, 1024))  # filter (2): the (ISL, OSL) pairs
CONCS = (4, 32, 128)  # filter (2): the concurrencies
KEY = ("hardware", "framework", "precision", "tp", "ep", "dp_attention", "isl", "osl", "conc")


def mean_len(n_max: int) -> float:
    """Mean of the random data set's lengths: uniform on the integers [int(0.8 L), L]."""
    return (int(n_max * RANGE_RATIO) + n_max) / 2


def len_cv(n_max: int) -> float:
    """Coefficient of variation of those lengths (discrete uniform over n values)."""
    n = n_max - int(n_max * RANGE_RATIO) + 1
    return math.sqrt((n * n - 1) / 12) / mean_len(n_max)


@dataclass(frozen=True)
class Measured:
    """One InferenceX record and its mapping."""

    raw: dict[str, Any]

    @property
    def out_tps_gpu(self) -> float:
        """Output tokens/s per GPU; older records publish only input + output, split by the
        mean lengths (every answer as long as asked, ignore_eos)."""
        v = self.raw["output_tput_per_gpu"]
        if v is not None:
            return float(v)
        i, o = mean_len(self.raw["isl"]), mean_len(self.raw["osl"])
        return float(self.raw["tput_per_gpu"]) * o / (i + o)

    @property
    def family(self) -> str:
        return next(f for f, hw in FAMILIES.items() if self.raw["hardware"] in hw)

    @property
    def sample(self) -> str:
        return str(self.raw["sample"])

    def row(self, index: int, *, mixed: bool = False) -> Row:
        """The workload of this record; ``mixed`` drops the round 16 SGLang rule (every step
        carries prompt tokens), the mapping A was first evaluated with."""
        r = self.raw
        wl: dict[str, Any] = {
            "batch": r["conc"],
            "ep": r["ep"],
            "input_tokens_cv": round(len_cv(r["isl"]), 4),
            "output_tokens_cv": round(len_cv(r["osl"]), 4),
        }
        if r["ep"] > 1:
            wl["attention_dp"] = bool(r["dp_attention"])
        if r["framework"] == "sglang" and not mixed:  # SGLANG_SEPARATE (round 16 rule)
            wl["prefill_batching"] = "separate"
        precision = r["precision"]
        if r["model"] == "gptoss" and precision == "fp4" and r["hardware"] in HOPPER:
            precision, wl["weight_precision"] = "bf16", "fp4"  # MXFP4 experts, BF16 GEMMs
            wl["quantized_weights"] = "experts"  # the rest of gpt-oss is BF16
        return Row(index, SRC, GPUS[r["hardware"]], r["tp"], r["tp"], MODELS[r["model"]],
                   precision, round(mean_len(r["isl"])), round(mean_len(r["osl"])),
                   self.out_tps_gpu, "tput_gpu", wl, note=r["framework"])  # fmt: skip

    def stack(self, tech: dict[str, Any]) -> None:
        """The software stack's factors (validate_perf._conditions)."""
        if self.raw["framework"] == "trt":  # trtllm-serve --backend=pytorch
            tech["cb_fp4_gemm_efficiency"] = tech["cb_fp4_gemm_efficiency_pytorch"]
        if self.raw["framework"] == "vllm" and self.family == "AMD":
            tech["cb_stack_gemm_efficiency"] = tech["cb_stack_gemm_efficiency_rocm_vllm"]


def passes_filter(rec: dict[str, Any]) -> bool:
    """Filter (2) of the rule: single node, no speculative decoding, a modelled model and GPU,
    the declared concurrencies and lengths."""
    return (not rec["disagg"] and not rec["is_multinode"] and rec["spec_method"] == "none"
            and rec["model"] in MODELS and rec["hardware"] in GPUS and rec["conc"] in CONCS
            and (rec["isl"], rec["osl"]) in LENGTHS)  # fmt: skip


def as_row(rec: dict[str, Any], **where: Any) -> dict[str, Any]:
    """A fixture record as a stored row (the decode layout is the single node's layout)."""
    m = rec["metrics"]
    return {**where, "hardware": rec["hardware"], "framework": rec["framework"],
            "model": rec["model"], "precision": rec["precision"], "tp": rec["decode_tp"],
            "ep": rec["decode_ep"], "dp_attention": rec["decode_dp_attention"],
            "isl": rec["isl"], "osl": rec["osl"], "conc": rec["conc"],
            "tput_per_gpu": m["tput_per_gpu"], "output_tput_per_gpu": m.get("output_tput_per_gpu"),
            "mean_tpot_s": m["mean_tpot"], "mean_ttft_s": m["mean_ttft"], "date": rec["date"],
            "image": rec["image"], "run_url": rec["run_url"]}  # fmt: skip


def select_c(
    captures: list[list[dict[str, Any]]], taken: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rule 5 (sample C): the records of ``captures`` (newer first, as C_SOURCES) that pass
    filter (2), whose key no row of ``taken`` (A and B) has, one per key (the newer capture's);
    and, apart, the records that pass all of it but the GPU (no preset: not expressible)."""
    seen = {tuple(r[k] for k in KEY) for r in taken}
    rows, not_expressible = [], []
    for src, recs in zip(C_SOURCES, captures, strict=True):
        for i, rec in enumerate(recs):
            row = as_row(rec, sample="C", src=src, index=i)
            k = tuple(row[f] for f in KEY)
            if k in seen:
                continue
            if passes_filter(rec):
                rows.append(row)
                seen.add(k)
            elif passes_filter({**rec, "hardware": "h100"}) and rec["hardware"] not in GPUS:
                not_expressible.append(row)
                seen.add(k)
    return rows, not_expressible


def load(path: Path = DATA) -> list[Measured]:
    return [Measured(r) for r in json.loads(path.read_text())["rows"]]


def _perf(m: Measured, r: Row) -> dict[str, Any]:
    d = context(r)
    m.stack(d["technology"])
    return evaluate_perf(d)


def evaluate(m: Measured, index: int, *, mixed: bool = False) -> dict[str, float]:
    """The model's output tokens/s per GPU, mean TPOT and TTFT for one row, and (diagnostic,
    not compared) its decode-only step at the same batch (``phase: decode``: no prompt
    tokens in the step)."""
    r = m.row(index, mixed=mixed)
    out = _perf(m, r)
    dec = _perf(m, replace(r, wl={**r.wl, "phase": "decode"}))
    return {"out_tps_gpu": float(out["tokens_per_s"]) / r.gpus,
            "tpot_s": float(out["tpot_s"]), "ttft_s": float(out["ttft_s"]),
            "batch": float(out["batch"]), "decode_step_s": float(dec["tpot_s"])}  # fmt: skip


def results(rows: list[Measured] | None = None, *, mixed: bool = False) -> list[dict[str, Any]]:
    """Every row evaluated, numbered in file order (A's rows first)."""
    out = []
    for i, m in enumerate(rows if rows is not None else load(), start=1):
        p = evaluate(m, i, mixed=mixed)
        meas = {"out_tps_gpu": m.out_tps_gpu, "tpot_s": float(m.raw["mean_tpot_s"]),
                "ttft_s": float(m.raw["mean_ttft_s"])}  # fmt: skip
        err = {k: p[k] / meas[k] - 1 for k in METRICS}
        out.append({"i": i, "m": m, "pred": p, "meas": meas, "err": err})
    return out


def stats(errs: list[float]) -> dict[str, float]:
    a = np.abs(np.asarray(errs, dtype=float))
    return {"n": len(a), "median": float(np.median(a)), "p90": float(np.percentile(a, 90)),
            "bias": float(np.median(errs))}  # fmt: skip


def of_sample(res: list[dict[str, Any]], sample: str) -> list[dict[str, Any]]:
    """The rows of one sample (``"all"``: every row)."""
    return [x for x in res if sample == "all" or x["m"].sample == sample]


Groups = dict[tuple[str, ...], dict[str, dict[str, float]]]  # (sample,) kind, name -> stats


def groups(res: list[dict[str, Any]]) -> Groups:
    """median / p90 |error| and the median signed error per family, model and engine."""
    keys: list[tuple[str, str, Any]] = [("family", f, lambda x, f=f: x["m"].family == f)
                                        for f in FAMILIES]  # fmt: skip
    keys += [("model", k, lambda x, k=k: x["m"].raw["model"] == k) for k in MODELS]
    keys += [("engine", e, lambda x, e=e: x["m"].raw["framework"] == e) for e in ENGINES]
    keys.append(("all", "all", lambda x: True))
    out: Groups = {}
    for kind, name, pick in keys:
        sel = [x for x in res if pick(x)]
        if sel:
            out[(kind, name)] = {k: stats([x["err"][k] for x in sel]) for k in METRICS}
    return out


def sample_groups(res: list[dict[str, Any]]) -> Groups:
    """``groups`` per sample (A, B and all), keyed (sample, kind, name)."""
    out: Groups = {}
    for sample in (*SAMPLES, "all"):
        sel = of_sample(res, sample)
        if sel:
            out.update({(sample, *k): v for k, v in groups(sel).items()})
    return out


def decode_check(res: list[dict[str, Any]]) -> dict[int, dict[str, float]]:
    """Diagnostic: the model's decode-only step against the measured mean TPOT, per
    concurrency (a step with no prompt tokens in it)."""
    out = {}
    for c in sorted({x["m"].raw["conc"] for x in res}):
        errs = [x["pred"]["decode_step_s"] / x["meas"]["tpot_s"] - 1 for x in res
                if x["m"].raw["conc"] == c]  # fmt: skip
        out[c] = stats(errs)
    return out


def _pct(x: float) -> str:
    return f"{x:+.0%}"


def summary_table(g: Groups) -> list[str]:
    """One line per group; the key's parts name it (sample, kind, name or kind, name)."""
    lines = ["| group | n | out tok/s/GPU median \\|err\\| | p90 | bias | TPOT median | p90 | "
             "bias | TTFT median | p90 | bias |", "|---|---:|" + "---:|" * 9]  # fmt: skip
    for key, s in g.items():
        cells = [" ".join(key), str(s["out_tps_gpu"]["n"])]
        for k in METRICS:
            cells += [f"{s[k]['median']:.0%}", f"{s[k]['p90']:.0%}", _pct(s[k]["bias"])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def row_table(res: list[dict[str, Any]]) -> list[str]:
    head = ("# | GPU | engine | prec | TP/EP/ADP | ISL/OSL | conc | out tok/s/GPU meas | model | "
            "err | TPOT ms meas | model | err | decode-only step ms | TTFT s meas | model | err | "
            "run")  # fmt: skip
    align = ["---:", "---", "---", "---", "---", "---", *["---:"] * 11, "---"]
    lines = [f"| {head} |", "|" + "|".join(align) + "|"]
    for x in res:
        r, p, m, e = x["m"].raw, x["pred"], x["meas"], x["err"]
        run = r["run_url"].split("/runs/")[1].split("/")[0]
        adp = "y" if r["dp_attention"] else "n"
        lines.append(
            f"| {x['i']} | {r['hardware']} | {r['framework']} | {r['precision']} | "
            f"{r['tp']}/{r['ep']}/{adp} | {r['isl']}/{r['osl']} | {r['conc']} | "
            f"{m['out_tps_gpu']:.1f}{'*' if r['output_tput_per_gpu'] is None else ''} | "
            f"{p['out_tps_gpu']:.1f} | {_pct(e['out_tps_gpu'])} | {m['tpot_s'] * 1e3:.1f} | "
            f"{p['tpot_s'] * 1e3:.1f} | {_pct(e['tpot_s'])} | {p['decode_step_s'] * 1e3:.1f} | "
            f"{m['ttft_s']:.2f} | "
            f"{p['ttft_s']:.2f} | {_pct(e['ttft_s'])} | [{run}]({r['run_url']}) |"
        )
    return lines


def diag_table(res: list[dict[str, Any]]) -> list[str]:
    """``decode_check`` per sample and concurrency."""
    lines = ["| sample | conc | n | decode-only step vs measured TPOT: median \\|err\\| | p90 | "
             "bias |", "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for sample in SAMPLES:
        for c, s in decode_check(of_sample(res, sample)).items():
            lines.append(f"| {sample} | {c} | {s['n']} | {s['median']:.0%} | {s['p90']:.0%} | "
                         f"{_pct(s['bias'])} |")  # fmt: skip
    return lines


def sample_section(res: list[dict[str, Any]], mixed: list[dict[str, Any]], sample: str
                   ) -> list[str]:  # fmt: skip
    """One sample with the mapping as declared, the same rows with every step mixed, and its
    rows."""
    b, bm = of_sample(res, sample), of_sample(mixed, sample)
    return [*summary_table(groups(b)), "",
            "The same rows with every step mixed (`--mixed`: no `prefill_batching: separate` "
            "for SGLang):", "", *summary_table(groups(bm)), "",
            f"Every row of sample {sample} (mapping as declared):", "", *row_table(b)]  # fmt: skip


def b_section(res: list[dict[str, Any]], mixed: list[dict[str, Any]]) -> list[str]:
    """Sample B with the mapping as declared, B with every row mixed, and B's rows."""
    return sample_section(res, mixed, "B")


def not_expressible_table(path: Path = DATA) -> list[str]:
    """The records a rule picked that the documented fields cannot express, and why."""
    lines = ["| GPU | engine | prec | TP/EP | ISL/OSL | conc | capture, index | why |",
             "|---|---|---|---|---|---:|---|---|"]  # fmt: skip
    for r in json.loads(path.read_text()).get("not_expressible", []):
        src = r["src"].split("@")[1][:8]
        lines.append(f"| {r['hardware']} | {r['framework']} | {r['precision']} | "
                     f"{r['tp']}/{r['ep']} | {r['isl']}/{r['osl']} | {r['conc']} | "
                     f"{src}, {r['index']} | {r['reason']} |")  # fmt: skip
    return lines


def c_section(res: list[dict[str, Any]], mixed: list[dict[str, Any]]) -> list[str]:
    """Sample C as B, then the records C's rule picked that cannot be expressed."""
    return [*sample_section(res, mixed, "C"), "",
            "Picked by rule 5 but not expressible (not evaluated):", "",
            *not_expressible_table()]  # fmt: skip


def check_c(newer: Path, older: Path) -> bool:
    """Rule 5 applied again to the two captures (C_SOURCES order) gives the stored C rows."""
    doc = json.loads(DATA.read_text())
    taken = [r for r in doc["rows"] if r["sample"] in ("A", "B")]
    rows, nx = select_c([json.loads(newer.read_text()), json.loads(older.read_text())], taken)
    stored = [r for r in doc["rows"] if r["sample"] == "C"]
    return rows == stored and [{**r, "reason": ""} for r in nx] == [
        {**r, "reason": ""} for r in doc.get("not_expressible", [])]  # fmt: skip


def _write(text: str, tag: str, body: list[str]) -> str:
    start, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    head, rest = text.split(start, 1)
    return head + start + "\n" + "\n".join(body) + "\n" + end + rest.split(end, 1)[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="print only, write nothing")
    ap.add_argument("--mixed", action="store_true",
                    help="with --check: every row mixed (no SGLang separate prefill)")  # fmt: skip
    ap.add_argument("--select-c", nargs=2, type=Path, metavar=("NEWER", "OLDER"),
                    help="the captures of C_SOURCES (528c4146, cac6246e): check that rule 5 "
                    "picks the stored C rows, and exit")  # fmt: skip
    args = ap.parse_args()
    if args.select_c:
        ok = check_c(*args.select_c)
        print(f"rule 5 on the captures gives the stored C rows: {ok}")
        sys.exit(0 if ok else 1)
    if args.mixed and not args.check:
        ap.error("--mixed prints only: pass --check too (the doc is written with both mappings)")
    res = results(mixed=args.mixed)
    print("\n".join(summary_table(sample_groups(res))))
    if args.check:
        return
    text = DOC.read_text()
    a = of_sample(res, "A")
    body = [*summary_table(sample_groups(res)), "", "Diagnostic (not a compared figure):", "",
            *diag_table(res), "", "Every row of sample A (* output derived from input + output "
            "by the mean lengths):", "", *row_table(a)]  # fmt: skip
    text = _write(text, "inferencex", body)
    mixed = results(mixed=True)
    text = _write(text, "inferencex-b", b_section(res, mixed))
    text = _write(text, "inferencex-c", c_section(res, mixed))
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
