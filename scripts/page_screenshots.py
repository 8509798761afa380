"""Make the sample report pages and their screenshots (docs/report_page/), in headless Chromium.

    python scripts/page_screenshots.py [--out docs/report_page] [--pages /tmp/tenprof-pages]

Pages from recordings in tests/data: GPT-2 small's timeline (H200), the planted access patterns with
every pass (H100), the small MLP with counters and stalls (H100), two DDP ranks with one slowed (H100)
and the fp32 -> TF32 diff (H100); and GPT-2 small with every pass, the page its run wrote on the H100
(gpt2_all.html: its data kept as it came, drawn again by this version's script). Prints each page's
size and the time it took to open (to the page's ready mark), which docs/REPORT_PAGE.md quotes. The
screenshots go to --out; the pages made from tests/data go to --pages (each inlines the same script and
style: only gpt2_all.html, whose data came from the GPU machine, is kept in docs/)."""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from tenprof.cli.main import main
from tenprof.report.html_page import embedded_data, render_page

DATA = Path("tests/data")  # run from the repository root: the pages name the recordings by these paths
PAGES = {
    "gpt2": ["export", str(DATA / "gpt2")],
    "every_pass": ["export", str(DATA / "tensor_cost" / "patterns")],
    "counters": ["export", str(DATA / "stalls" / "mlp")],
    "ranks": ["export", str(DATA / "ranks" / "slowed")],
    "diff": ["diff", str(DATA / "finding_fp32_gemm"), str(DATA / "finding_fp32_gemm_fixed"), "--html"],
    # made on the GPU machine by `tenprof run --html --passes all` (scripts/gpu_record.sh page23): kept as is
    "gpt2_all": [],
}
SHOTS = {  # page -> sections to picture
    "gpt2": ["findings", "steps", "calltree", "memory", "perf_model"],
    "every_pass": ["forests", "tensor_stall_cost", "stalls"],
    "counters": ["counters"],
    "ranks": ["ranks"],
    "diff": ["diff"],
    "gpt2_all": ["findings", "calltree", "forests", "tensor_stall_cost", "counters", "stalls"],
}


def run() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="docs/report_page")
    parser.add_argument("--pages", default="/tmp/tenprof-pages")
    args = parser.parse_args()
    out, pages = Path(args.out), Path(args.pages)
    pages.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is not installed (apt install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
        )
        for name, argv in PAGES.items():
            html = (pages if argv else out) / f"{name}.html"
            if argv:
                assert main(_argv(argv, html)) == 0
            elif not html.exists():
                continue
            else:  # the data as the GPU run wrote it, drawn by this version's script and style
                html.write_text(render_page(embedded_data(html.read_text())))
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
            start = time.perf_counter()
            page.goto(html.resolve().as_uri())
            page.wait_for_selector("body[data-ready='1']")
            opened = time.perf_counter() - start
            for section in SHOTS[name]:
                box = page.locator(f"section#{section}").bounding_box()
                clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], 760)}
                page.screenshot(path=str(out / f"{name}-{section}.png"), clip=clip, full_page=True)
            print(
                f"{name}: {html.stat().st_size / 1e3:.0f} kB, opened in {opened:.2f} s, console errors: {len(errors)}"
            )
            page.close()
        browser.close()


def _argv(argv: list[str], html: Path) -> list[str]:
    if argv[0] == "export":
        return [*argv, "-o", str(html), "--force"]
    return [*argv, str(html), "--force"]


if __name__ == "__main__":
    run()
