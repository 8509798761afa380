"""The report page (renderers/html_page.py, `tenprof export --format html`, `run --html`, `diff --html`):
one file that fetches nothing, and, opened in headless Chromium (Debian's package; skipped with the
reason when it or Playwright is missing), every section drawn without a console error, the icicle zooming
on a click, tables sorting and filtering; screenshots are saved beside the test's files."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tenprof.analyses.calltree import Node
from tenprof.cli.main import main
from tenprof.renderers.html_page import _tree, page_data, render_page
from tenprof.store.profile import load_profile
from tests.conftest import DATA

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DOCS = DATA.parent.parent / "docs" / "report_page"


def _embedded(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="tenprof-data">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def gpt2_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("page") / "gpt2.html"
    assert main(["export", str(DATA / "gpt2"), "-o", str(out)]) == 0
    return out


def test_the_page_is_one_file_that_fetches_nothing(gpt2_page: Path, tmp_path: Path) -> None:
    out = gpt2_page
    page = out.read_text()
    assert out.stat().st_size < 5_000_000
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) and "<link" not in page
    assert "fetch(" not in page and "XMLHttpRequest" not in page and "import(" not in page
    data = _embedded(page)
    assert data["summary"]["kernel_count"] == 3699 and data["calltree"]["nodes"][0][0] == "all"
    # every key of the JSON report is in the page (the same section registry)
    report = json.loads((lambda p: p.read_text())(Path(_export_json(tmp_path))))
    assert set(report) <= set(data)


def _export_json(tmp_path: Path) -> str:
    target = tmp_path / "report.json"
    assert main(["export", str(DATA / "gpt2"), "--format", "json", "-o", str(target)]) == 0
    return str(target)


def test_a_call_tree_deeper_than_json_writers_nest_is_written() -> None:
    # a recursive model's backward: 400 frames deep (orjson stops at 254 levels of nesting)
    root = node = Node("root", "all")
    for depth in range(400):
        node = node.child("frame", f"f{depth}", "model.py", depth + 1)
    node.gpu_ns = node.cpu_ns = 100
    for n in root.walk():
        n.gpu_ns, n.cpu_ns = 100, 100
    nodes = _tree(root)["nodes"]
    assert len(nodes) == 401 and [n[6] for n in nodes[:3]] == [-1, 0, 1]
    assert json.loads(orjson.dumps({"calltree": {"nodes": nodes}}))["calltree"]["nodes"][-1][0].startswith("f399")


def test_the_hatchet_export_of_such_a_tree_is_written_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import tenprof.analyses.calltree as calltree
    from tenprof.cli.export_formats import BY_NAME, ExportOptions

    root = node = Node("root", "all")
    for depth in range(300):
        node = node.child("frame", f"f{depth}", "model.py", depth + 1)
    monkeypatch.setattr(calltree, "build_tree", lambda profile: root)
    out = io.BytesIO()
    BY_NAME["hatchet"].write(None, out, ExportOptions())  # type: ignore[arg-type]
    deepest = json.loads(out.getvalue())[0]
    for _ in range(300):
        deepest = deepest["children"][0]
    assert deepest["frame"]["name"] == "f299 (model.py:300)"


def test_a_source_edited_after_the_recording_is_not_quoted(tmp_path: Path) -> None:
    import os

    from tenprof.importers.call_paths import line_text

    job = tmp_path / "job.py"
    job.write_text("x = 1\ny = x @ x\n")
    recorded = job.stat().st_mtime + 60  # the trace was written a minute after the file
    assert line_text(str(job), 2, recorded) == "y = x @ x"
    os.utime(job, (recorded + 60, recorded + 60))  # then the file was edited
    assert line_text(str(job), 2, recorded) is None and line_text(str(job), 2) == "y = x @ x"


def test_a_page_that_cannot_be_made_leaves_the_old_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tenprof.renderers.html_page as html_page

    out = tmp_path / "report.html"
    out.write_text("the page made before")

    def broken(*args: object, **kwargs: object) -> dict[str, Any]:
        raise RuntimeError("no page today")

    monkeypatch.setattr(html_page, "page_data", broken)
    with pytest.raises(RuntimeError):
        main(["export", str(DATA / "matmul64"), "-o", str(out), "--force"])
    assert out.read_text() == "the page made before" and sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    # diff --html refuses an existing page before it compares anything
    assert main(["diff", str(DATA / "matmul64"), str(DATA / "matmul64"), "--html", str(out)]) == 2
    assert "exists; pass --force" in capsys.readouterr().err


def test_text_that_looks_like_markup_cannot_end_the_data_early() -> None:
    data = page_data(load_profile(DATA / "finding_fp32_gemm"))
    data["title"] = "<!--<script></script><script>alert(1)</script>"
    page = render_page(data)
    assert _embedded(page)["title"] == data["title"]
    assert page.count("</script>") == 2 and "<!--" not in page  # the data's and the page script's


# ---- in the browser ----


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (scripts/test.sh installs Debian's package where it can)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


def _open(browser: Any, html: Path, shots: Path) -> tuple[Any, list[str], float]:
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    start = time.perf_counter()
    page.goto(html.resolve().as_uri())
    page.wait_for_selector("body[data-ready='1']")
    opened = time.perf_counter() - start
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / f"{html.stem}.png"))
    return page, errors, opened


def _sections(page: Any) -> list[str]:
    return [s.get_attribute("id") for s in page.query_selector_all("section")]


def test_the_gpt2_page_draws_every_section_and_its_tree_zooms(browser: Any, gpt2_page: Path, tmp_path: Path) -> None:
    page, errors, opened = _open(browser, gpt2_page, tmp_path / "shots")
    assert not errors and opened < 2.0
    assert _sections(page) == ["findings", "summary", "steps", "calltree", "tallies", "memory", "perf_model"]
    # the speed of light of GPT-2's top ops: the output layer's GEMMs (vocabulary 50257) far below it
    assert page.locator(".sol-chart .sol-bar").count() >= 10
    assert "MFU" in page.locator("#perf_model .note").first.inner_text()
    assert page.locator("details.finding").count() == 4 and page.locator(".steps-chart .step-bar").count() == 3
    # click a node of the icicle: it becomes the whole width, the path above it the crumbs; then back out
    node = page.locator(".icicle .node", has_text="[scope] backward").first
    node.click()
    box = page.locator(".icicle")
    assert box.get_attribute("data-focus") == "[scope] backward"
    top = page.locator(".icicle .node").first
    assert top.get_attribute("data-label") == "[scope] backward" and top.bounding_box()["width"] > 1000
    page.locator(".crumbs span").first.click()
    assert box.get_attribute("data-focus") == "all"
    # search dims what does not match
    page.fill("input[aria-label='search the tree']", "aten::mm")
    assert page.locator(".icicle .node.match").count() > 0
    # the first tally: sorted by time, re-sorted by calls, filtered
    tally = page.locator("#tallies table.grid").first
    first = tally.locator("tbody tr").first.inner_text()
    tally.locator("th", has_text="calls").click()
    assert tally.locator("tbody tr").first.inner_text() != first
    page.locator("#tallies input[type=search]").first.fill("gemm")
    counts = page.locator("#tallies .count").first.inner_text()
    assert re.match(r"\d+ of \d+ rows \(\d+ in all\)", counts), counts
    page.screenshot(path=str(tmp_path / "shots" / "gpt2-zoomed.png"), full_page=True)


def test_gpt2_with_every_pass_draws_in_under_two_seconds(browser: Any, tmp_path: Path) -> None:
    # the data of the page GPT-2's run wrote on the H100 (docs/report_page/gpt2_all.html, every pass),
    # drawn by this page script
    data = _embedded((DOCS / "gpt2_all.html").read_text())
    html = tmp_path / "gpt2_all.html"
    html.write_text(render_page(data))
    assert html.stat().st_size < 5_000_000
    page, errors, opened = _open(browser, html, tmp_path / "shots")
    assert not errors and opened < 2.0, (errors, opened)
    expected = {"findings", "summary", "steps", "calltree", "tallies", "memory", "forests", "tensor_stall_cost"}
    assert expected | {"access_patterns", "counters", "stalls"} <= set(_sections(page))
    assert page.locator("#counters circle.op-point").count() > 50


def test_pages_of_every_pass_ranks_and_a_diff(browser: Any, tmp_path: Path) -> None:
    shots = tmp_path / "shots"
    every = tmp_path / "user_kernels.html"  # timeline, tensors, stalls, accesses (with the lanes compared)
    assert main(["export", str(DATA / "tensor_cost" / "user_kernels"), "-o", str(every)]) == 0
    page, errors, _ = _open(browser, every, shots)
    assert not errors
    assert {"tensor_stall_cost", "access_patterns", "stalls", "memory"} <= set(_sections(page))
    assert "gather" in page.locator("#access_patterns").inner_text()  # the Triton gather's table
    # the forests: SVG where graphviz's dot is installed, else the forest's text
    assert page.locator("#forests img").count() >= 1 or "T0" in page.locator("#forests pre").inner_text()
    assert page.locator("#tensor_stall_cost tbody tr").count() > 0 and page.locator("#stalls .kernel-block").count() > 0
    ranks = tmp_path / "ranks.html"
    assert main(["export", str(DATA / "ranks" / "slowed"), "-o", str(ranks)]) == 0
    page, errors, _ = _open(browser, ranks, shots)
    assert not errors and _sections(page)[0] == "ranks"
    assert (
        page.locator(".rank-bar").count() == 2 and page.locator(".rank-bar.straggler").get_attribute("data-rank") == "1"
    )
    changed = tmp_path / "diff.html"
    argv = ["diff", str(DATA / "finding_fp32_gemm"), str(DATA / "finding_fp32_gemm_fixed"), "--html", str(changed)]
    assert main(argv) == 0
    page, errors, _ = _open(browser, changed, shots)
    assert not errors and _sections(page)[0] == "diff"
    assert "fp32_gemm.py:15" in page.locator("#diff tbody tr").first.inner_text()
