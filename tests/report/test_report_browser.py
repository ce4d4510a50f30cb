"""The smoke report's page as a reader opens it: rendered by headless Chromium (Debian's
``chromium``, driven through Playwright with ``executable_path``), every image loads, the console
stays free of errors, no Markdown shows raw, and at 1280x800 the first results figure is wholly in
view and covers at least 35% of the screen. Screenshots go to ``target/report-screens/`` and their
paths are printed.

Without a browser the test is skipped with the reason, except under CI (``CI`` set), where a
missing browser fails: .ci/run installs it (scripts/install-browser.sh)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

SCREENS = Path(__file__).resolve().parents[2] / "target" / "report-screens"
WIDTH, HEIGHT = 1280, 800
#: The share of the first screen the first results figure covers at least.
MIN_SHARE = 0.35

#: Markdown left raw in the rendered text: inline code, emphasis, links, headings, powers.
RAW_MARKDOWN = (
    re.compile(r"`[^`\n]+`"),
    re.compile(r"\*\*[^*\n]+\*\*"),
    re.compile(r"(?<!\w)__[^_\n]+__(?!\w)"),
    re.compile(r"\]\([^)\s]+\)"),
    re.compile(r"^#{1,6} ", re.MULTILINE),
    re.compile(r"\d\^[a-z0-9{]"),
    re.compile(r"\\[!-/:-@\[-`{-~]"),  # an escape left as typed
)


def _browser() -> str:
    """The Chromium executable; without one a skip naming what is missing, a failure under CI.
    Playwright is a test dependency (the ``test`` extra): its absence is a failure."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail("the playwright package is missing: pip install -e '.[test]' (or pip install playwright)")
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        reason = "no chromium on the PATH: bash scripts/install-browser.sh (Debian's chromium package)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must render the report in a browser: {reason}")
        pytest.skip(reason)
    return executable


def test_the_report_reads_in_a_browser(request: pytest.FixtureRequest) -> None:
    executable = _browser()  # before the report is made: a skip costs nothing
    smoke_report = request.getfixturevalue("smoke_report")
    from playwright.sync_api import sync_playwright

    SCREENS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(smoke_report.html.as_uri(), wait_until="load")
            first = SCREENS / "first-screen.png"
            page.screenshot(path=str(first))
            whole = SCREENS / "whole-page.png"
            page.screenshot(path=str(whole), full_page=True)
            images = page.evaluate(
                "() => Array.from(document.images, i => ({alt: i.alt, ok: i.complete && i.naturalWidth > 0}))"
            )
            box = page.evaluate(
                "() => { const r = document.querySelector('figure img').getBoundingClientRect();"
                " return {x: r.x, y: r.y, width: r.width, height: r.height}; }"
            )
            text = page.inner_text("body")
        finally:
            browser.close()
    print(f"\nreport screenshots: {first} {whole}")
    assert len(images) >= 9 and all(image["ok"] for image in images), [i["alt"] for i in images if not i["ok"]]
    assert errors == []
    raw = [m.group(0) for pattern in RAW_MARKDOWN for m in pattern.finditer(text)]
    assert raw == [], raw
    # The first results figure: wholly in view on the first screen, and a large part of it.
    assert box["x"] >= 0 and box["y"] >= 0, box
    assert box["x"] + box["width"] <= WIDTH and box["y"] + box["height"] <= HEIGHT, box
    assert box["width"] * box["height"] >= MIN_SHARE * WIDTH * HEIGHT, box
