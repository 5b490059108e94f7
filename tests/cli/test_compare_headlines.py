"""`dse compare` says the assumption a comparison rests on (the price basis) where it prints
the answer: at cost a B200 is cheaper per token than an MI355X, at each vendor's market margin
the MI355X is, so a table without its basis could be read either way."""

from __future__ import annotations

import json

import pytest
import yaml

from dse.inspect.compare import compare, headline_lines
from tests.conftest import SPACES, run_dse

H100 = SPACES / "h100.yaml"
AT_COST = "prices at cost: hardware at its manufacturing cost"
AT_MARKET = "prices at market: each GPU vendor's"


def _cost(designs, label):
    return next(r for r in designs[1] if r["metric"] == "cost.usd_per_mtok")[label]


def test_one_basis_is_said_once_and_the_answer_depends_on_it():
    at_cost = compare([f"{H100}::gpu=b200", f"{H100}::gpu=mi355x"], labels=["b200", "mi355x"])
    lines = headline_lines(at_cost[0])
    assert len(lines) == 1 and lines[0].startswith(AT_COST)
    market = compare(
        [f"{H100}::gpu=b200", f"{H100}::gpu=mi355x"],
        labels=["b200", "mi355x"],
        sets=["price_basis=market"],
    )
    assert [line[: len(AT_MARKET)] for line in headline_lines(market[0])] == [AT_MARKET]
    # the basis flips the answer (NVIDIA's 82 % margin against AMD's 64.7 %)
    assert _cost(at_cost, "b200") < _cost(at_cost, "mi355x")
    assert _cost(market, "b200") > _cost(market, "mi355x")


def test_designs_on_different_bases_are_each_named():
    designs, _ = compare([f"{H100}::gpu=b200", f"{H100}::gpu=b200,price_basis=market"])
    lines = headline_lines(designs)
    assert len(lines) == 2
    assert lines[0].startswith(f"h100: {AT_COST}")
    assert lines[1].startswith(f"h100#2: {AT_MARKET}")


def test_poisson_arrivals_say_how_requests_reach_the_replicas():
    """Under Poisson arrivals the dispatch policy can decide between few large replicas and
    many small ones, so the headline says which one the figures assume."""
    open_ = "workload.arrivals=poisson,workload.ttft_slo_s=1,workload.batch=auto"
    designs, _ = compare([f"{H100}::{open_}", f"{H100}::{open_},workload.dispatch=shortest_queue"])
    lines = headline_lines(designs)
    assert len(lines) == 2
    assert "split at random, each replica queuing alone" in lines[0]
    assert "join the least-loaded replica" in lines[1] and lines[1].startswith("h100#2: ")
    saturated, _ = compare([f"{H100}::gpu=b200"])
    assert "poisson" not in " ".join(headline_lines(saturated))


def test_a_products_own_host_bill_is_said():
    """A shipped product carrying its platform's host bill (host_usd_per_gpu) against a design
    whose host is sized by its power: the two rest on different host rules, so each is named."""
    designs, _ = compare([f"{H100}", f"{H100}::gpu=b200"], labels=["h100", "b200"])
    lines = headline_lines(designs)
    assert len(lines) == 2
    assert "host:" not in lines[0]
    assert (
        lines[1].startswith("b200: ")
        and "host: the platform's own bill, $2,638 per GPU" in lines[1]
    )
    same, _ = compare([f"{H100}::gpu=b200", f"{H100}::gpu=mi355x"])
    assert len(headline_lines(same)) == 1  # both on the same platform bill: said once


@pytest.mark.slow
def test_cli_prints_the_basis_under_the_table_and_in_json():
    r = run_dse("compare", f"{H100}::gpu=b200", f"{H100}::gpu=mi355x", "--metric", "cost.*")
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().splitlines()[-1].startswith(AT_COST)
    j = run_dse("compare", f"{H100}::gpu=b200", f"{H100}::price_basis=market", "--json")
    heads = [d["headlines"] for d in json.loads(j.stdout)["designs"]]
    assert heads[0][0].startswith(AT_COST) and heads[1][0].startswith(AT_MARKET)


@pytest.mark.slow
def test_pareto_prints_the_basis_its_study_ran_at(studies_dir, tmp_path):
    spec = yaml.safe_load(H100.read_text())
    spec["study"], spec["fixed"]["price_basis"] = "at-market", "market"
    (tmp_path / "at-market.yaml").write_text(yaml.safe_dump(spec))
    env = {"DSE_STUDIES_DIR": str(studies_dir)}
    r = run_dse("run", str(tmp_path / "at-market.yaml"), "--trials", "1", "--no-progress", env=env)
    assert r.returncode == 0, r.stderr
    p = run_dse("pareto", "at-market", env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.rstrip().splitlines()[-1].startswith(AT_MARKET)
