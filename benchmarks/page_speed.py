"""How the report page copes with large tables: a page made from the GPT-2 recording (tests/data/gpt2)
with its first tally grown to N rows (copies of its rows, renamed), opened in headless Chromium (Debian's
package) through Playwright; prints the page's size, the time to the page's ready mark, and the time to
filter and to sort that table.

    python benchmarks/page_speed.py [--rows 100000]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from tenprof.report.html_page import page_data, render_page
from tenprof.store.profile import load_profile


def run() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    rows = parser.parse_args().rows
    data = page_data(load_profile("tests/data/gpt2"))
    seed = data["tallies"][0]["rows"]
    data["tallies"][0]["rows"] = [
        {**seed[i % len(seed)], "name": f"kernel_{i}_{seed[i % len(seed)]['name'][:40]}"} for i in range(rows)
    ]
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is not installed (apt install chromium)")
    with tempfile.TemporaryDirectory() as scratch, sync_playwright() as p:
        html = Path(scratch) / "big.html"
        html.write_text(render_page(data))
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        start = time.perf_counter()
        page.goto(html.as_uri())
        page.wait_for_selector("body[data-ready='1']")
        opened = time.perf_counter() - start
        start = time.perf_counter()
        page.locator("#tallies input[type=search]").first.fill("kernel_9999")
        page.wait_for_function("document.querySelector('#tallies .count').textContent.includes('in all')")
        filtered = time.perf_counter() - start
        start = time.perf_counter()
        page.locator("#tallies table.grid").first.locator("th", has_text="calls").click()
        page.wait_for_selector("#tallies th.sorted-desc")
        sorted_s = time.perf_counter() - start
        count = page.locator("#tallies .count").first.inner_text()
        browser.close()
    print(
        f"{rows} rows: page {html_size(data) / 1e6:.1f} MB, opened in {opened:.2f} s, filtered in {filtered:.2f} s "
        f"({count}), sorted in {sorted_s:.2f} s"
    )


def html_size(data: dict[str, object]) -> int:
    return len(render_page(data).encode())


if __name__ == "__main__":
    run()
