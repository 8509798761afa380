"""`tenprof report OUT` where OUT holds one profile per rank (`rankNNNNN/`): the merged report."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from rich.console import Console

from tenprof.analyses.compare.collectives import GroupArrivals
from tenprof.analyses.compare.ranks import RankParts, RanksReport, rank_parts, ranks_report
from tenprof.core.cluster import as_done, dask_client
from tenprof.core.quantities import format_quantities
from tenprof.renderers.ranks_text import late_steps, render_ranks
from tenprof.store.schema import Pass


def kernels_across_ranks(out_dir: Path) -> list[dict[str, object]]:
    """Per kernel name, its GPU time in each rank, as min / median / max over the ranks: one DuckDB query
    over every rank's kernels.parquet (streamed by DuckDB, not loaded rank by rank into Python)."""
    pattern = str(out_dir / "rank[0-9]*" / Pass.TIMELINE / "kernels.parquet")
    query = f"""
        with per_rank as (
            select name, filename as rank_file, sum(duration_ns) as ns
            from read_parquet('{pattern.replace("'", "''")}', filename = true)
            group by name, filename
        )
        select name, count(*) as ranks, min(ns) as min_ns, median(ns) as median_ns, max(ns) as max_ns
        from per_rank group by name order by median_ns desc
    """
    import duckdb  # here, not at import: every command imports this module, few merge ranks

    try:
        relation = duckdb.sql(query)
        result = relation.fetchall() if relation is not None else []
    except duckdb.Error:  # no rank has a timeline pass
        return []
    return [dict(zip(("name", "ranks", "min_ns", "median_ns", "max_ns"), row, strict=True)) for row in result]


def print_ranks_report(out_dir: Path, console: Console, limit: int | None, scheduler: str | None = None) -> None:
    render_ranks(_report(out_dir, scheduler), kernels_across_ranks(out_dir), console, limit)


def ranks_json(out_dir: Path, scheduler: str | None = None) -> str:
    """The merged report as JSON: hosts, devices, clock method, per-rank summaries (with overlap and the
    rank's first findings), stragglers and the kernels across ranks."""
    return json.dumps(ranks_data(out_dir, scheduler), indent=2, default=float)


def _report(out_dir: Path, scheduler: str | None) -> RanksReport:
    """The merged report, each rank's parts made as a task of the Dask cluster at `scheduler` where given
    (core.cluster: every worker must see `out_dir`), else here, one rank at a time."""
    if scheduler is None:
        return ranks_report(out_dir)
    with dask_client(scheduler) as client:

        def on_cluster(items: list[tuple[str, int]]) -> list[RankParts]:
            parts: list[RankParts | None] = [None] * len(items)
            for i, result in as_done(client, rank_parts, items, "rank"):
                if isinstance(result, BaseException):
                    raise result  # as a rank that cannot be read fails the merged report here
                parts[i] = result
            return [p for p in parts if p is not None]

        return ranks_report(out_dir, on_cluster)


def _arrivals(group: GroupArrivals, steps: float) -> dict[str, Any]:
    """Who arrived last at one process group's collectives: a row per rank of the group."""
    return {
        "group": group.group,
        "description": group.description,
        "compared": group.compared,
        "most_often_last": group.most_often_last,
        "late_ns": group.late_ns,
        "late_per_step_ns": group.late_ns / steps if steps else None,
        "bus_gbs": group.bus_gbs,
        "bus_collectives": group.bus_collectives,
        "link": group.link,
        "link_peak_gbs": group.link_peak_gbs,
        "ranks": [
            {"rank": r, "last_share": group.last_share[r], "mean_wait_ns": group.mean_wait_ns[r]} for r in group.ranks
        ],
    }


def ranks_data(out_dir: Path, scheduler: str | None = None) -> dict[str, Any]:
    """The merged report's data (`ranks_json`, and the HTML page's ranks section)."""
    report = _report(out_dir, scheduler)
    ranks = []
    for r in report.ranks:
        row = {k: v for k, v in dataclasses.asdict(r).items() if k != "windows"}
        row["overlap"] = None if math.isnan(r.overlap) else r.overlap
        for finding in row["findings"] or []:  # as the text report reads them: quantities written out
            finding["title"] = format_quantities(finding["title"])
        ranks.append(row)
    body = {
        "hosts": report.hosts,
        "devices": report.devices,
        "clock_method": report.clock_method,
        "ranks": ranks,
        "stragglers": [dataclasses.asdict(s) for s in report.stragglers],
        "arrivals": [_arrivals(g, g.steps or late_steps(report)) for g in report.arrivals],
        "kernels": kernels_across_ranks(out_dir),
    }
    return body
