"""docs/validation.md keeps the training model's errors against published measurements
(benchmarks/train_measurements.yaml, evaluated by benchmarks/validate_train.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]


def _vt():
    spec = importlib.util.spec_from_file_location(
        "validate_train", ROOT / "benchmarks" / "validate_train.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def res():
    vt = _vt()
    return vt, vt.results()


def _doc_summary() -> dict[str, tuple[float, float, float]]:
    text = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    out = {}
    for m in re.finditer(r"^\| training \| ([\w ,()-]+?) \| \d+ \| ([\d.]+)% \| ([\d.]+)% \| "
                         r"([\d.]+)% \|$", text, re.M):  # fmt: skip
        out[m[1]] = (float(m[2]), float(m[3]), float(m[4]))
    return out


def test_doc_summary_matches_the_model(res):
    """Regenerate with `.venv/bin/python benchmarks/validate_train.py` after a model change."""
    vt, r = res
    doc, now = _doc_summary(), vt.summary(r)
    assert set(doc) == set(now) and "validation dense" in now
    for k, v in now.items():
        got = tuple(round(100 * v[q], 1) for q in ("median", "p90", "max"))
        assert got == pytest.approx(doc[k], abs=0.15), k


def test_validation_split_meets_its_targets(res):
    """Issue 30's bar, median |error| <= 15 %, p90 <= 25 %, on the whole validation split, on
    the dense models' validation rows (with and without the rows that repeat a fit row's
    configuration) and on the llm-foundry rows (PyTorch FSDP). The MoE validation
    rows meet the median, not the p90 (DGX-B200 gpt-oss row 34 and GB200 Qwen3 row 39, see the
    notes): their figures are kept so they cannot get worse unnoticed."""
    vt, r = res
    s = vt.summary(r)
    groups = ("validation dense", "validation dense (no repeats)", "validation dense, llm-foundry")
    for split in (*groups, "validation all"):
        assert s[split]["n"] >= 15
        assert s[split]["median"] <= 0.15 and s[split]["p90"] <= 0.25, (split, s[split])
    moe = s["validation moe"]
    assert moe["n"] == 7 and moe["median"] <= 0.15, moe
    assert moe["p90"] <= 0.56 and moe["max"] <= 0.95, moe  # before issue 30's MoE work: 1.31, 2.77
    assert s["fit moe"]["n"] == 3 and s["fit moe"]["max"] <= 0.10, s["fit moe"]
    assert s["fit llm-foundry"]["n"] == 5 and s["fit llm-foundry"]["max"] <= 0.20
    assert s["validation dense, llm-foundry"]["n"] == 21
    assert s["validation all"]["n"] == sum(
        s[k]["n"] for k in ("validation dense", "validation dense, llm-foundry", "validation moe")
    )


def test_split_is_declared_and_only_the_declared_constants_are_fitted():
    data = yaml.safe_load((ROOT / "benchmarks" / "train_measurements.yaml").read_text())
    splits = {r["split"] for r in data["rows"]}
    assert splits == {"fit", "fit-moe", "fit-stack", "validation"}
    fit = [r["id"] for r in data["rows"] if r["split"] == "fit"]
    assert fit == [1, 2, 3, 4]
    # the MoE fit rows are, by the declared rule, the first row of each MoE model in the file
    vt = _vt()
    first: dict[str, int] = {}
    for r in data["rows"]:
        if r.get("ep", 1) > 1:
            first.setdefault(r["model"], r["id"])
    moe_fit = [r["id"] for r in data["rows"] if r["split"] == "fit-moe"]
    assert moe_fit == sorted(first.values()) == [30, 32, 35]
    # the llm-foundry fit rows are, by the declared rule, the first row of each MPT model
    first = {}
    for r in data["rows"]:
        if r["src"] == "MOSAIC":
            assert r["software"] == "pytorch-fsdp" and r["fsdp"]
            first.setdefault(r["model"], r["id"])
    stack_fit = [r["id"] for r in data["rows"] if r["split"] == "fit-stack"]
    assert stack_fit == sorted(first.values()) == [40, 42, 48, 56, 62]
    assert all(r["src"] in data["sources"] for r in data["rows"])
    ids = [r["id"] for r in data["rows"]]
    assert len(ids) == len(set(ids))
    # the repeats say which fit row they repeat, and are validation rows
    for r in data["rows"]:
        if r.get("repeat"):
            assert r["split"] == "validation" and "repeat of row" in r["note"]
    perf = (ROOT / "objectives" / "presets" / "technology" / "performance.yaml").read_text()
    fitted = re.findall(r"^  (train_\w+): \{[^\n]*source: \"F:", perf, re.M)
    assert sorted(fitted) == sorted(vt.FITTED + vt.FITTED_MOE + vt.FITTED_STACK)


def test_every_row_runs_under_its_published_parallelism(res):
    vt, r = res
    assert [x["row"]["id"] for x in r if not x["m"]["model_fits"]] == [63]
    for x in r:
        row, m = x["row"], x["m"]
        assert m["tp"] == row["tp"] and m["pp"] == row["pp"]
        assert m["gpus_per_replica"] == row["tp"] * row["pp"] * row["cp"]
        if row["src"] in vt.OTHER_STACKS and not m["model_fits"]:
            continue  # reported in the doc ("model: does not fit HBM"): row 63
        assert m["replicas"] * m["gpus_per_replica"] == row["gpus"]  # it fits, and every GPU works
        assert m["batch"] == row["gbs"] / m["replicas"]


def test_megatron_flop_count_reproduces_nemo_2407_by_hand():
    """NeMo 24.07 publishes both figures for Llama-2-7B (8 H100, seq 4096): 16,847 tokens/s
    and 776 TFLOP/s per GPU, i.e. 46.06 GFLOP per token. By hand, Megatron-LM's count:
    12 L h^2 [(1 + g/a + s/h) + f/h x 1.5 + V/(2 L h)] = 12 x 32 x 4096^2 x (3 + 4.03125 +
    0.12207) = 46.08 GFLOP."""
    vt = _vt()
    from objectives.perf import arch_of
    from objectives.presets import resolve_context

    model = yaml.safe_load((ROOT / "benchmarks" / "train_measurements.yaml").read_text())
    ctx = resolve_context({"gpu": "h100-sxm", "cluster_size": 1, "workload": {
        "model": model["models"]["llama2-7b"], "phase": "train"}})  # fmt: skip
    per = vt.flops_per_token(arch_of(ctx["workload"]["model"]), 4096, "megatron_noncausal")
    assert per == pytest.approx(12 * 32 * 4096**2 * (3 + 11008 / 4096 * 1.5 + 32000 / (64 * 4096)))
    assert per == pytest.approx(776e12 / 16847, rel=0.002)


@pytest.mark.parametrize("family", ["validation Hopper", "validation Blackwell"])
def test_training_family_meets_issue_36_target(res, family):
    """Issue 36's training target per GPU family: median |error| <= 15 %, p90 <= 25 %. Blackwell
    meets it since row 34 runs at its recipe's EP 64 (the recipe rule in train_measurements.yaml;
    at the printed EP 8 its p90 is 42.7 %)."""
    vt, r = res
    v = vt.summary(r)[family]
    assert v["n"] >= 9 and v["median"] <= 0.15 and v["p90"] <= 0.25, v


def test_lora_rows_are_predicted_within_five_percent(res):
    """NeMo 24.07's LoRA fine-tuning rows (69-71, declared before evaluation, nothing fitted):
    the frozen-weight step is within 5 % of each published tokens/s per GPU, and the published
    LoRA / SFT ratio on Llama-2-7B (rows 69 / 66: 1.47) is above 1.3 in the model too."""
    _, r = res
    by = {x["row"]["id"]: x for x in r}
    lora = [x for x in r if x["row"].get("lora_rank", 0) > 0]
    assert {x["row"]["id"] for x in lora} == {69, 70, 71}
    assert all(x["row"]["split"] == "validation" for x in lora)
    for x in lora:
        assert abs(x["err"]) <= 0.05, (x["row"]["id"], x["err"])
    assert by[69]["pred"] / by[66]["pred"] > 1.3


def test_recipe_rule_moves_only_row_34(res):
    """The recipe rule (train_measurements.yaml notes) overrides exactly one printed field of one
    row: DGX-B200 gpt-oss-120b (row 34) runs at EP 64 with every other printed field as the
    table's, like the 26.02 table's row 36 for the same system, and the two measured figures agree
    within 3 %; so must the model's."""
    _, r = res
    by = {x["row"]["id"]: x for x in r}
    r34, r36 = by[34]["row"], by[36]["row"]
    assert r34["ep"] == r36["ep"] == 64 and "prints EP 8" in r34["note"]
    assert (r34["gpus"], r34["mbs"], r34["gbs"]) == (64, 4, 512)
    assert r34["value"] / r36["value"] == pytest.approx(1.0, abs=0.03)
    assert by[34]["pred"] / by[36]["pred"] == pytest.approx(1.0, abs=0.03)
    assert [x["row"]["id"] for x in r if "rule" in x["row"]["note"]] == [34]
