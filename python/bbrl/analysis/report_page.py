"""The report's page: sections of figures, each figure first with the question it answers and one
sentence saying what it shows, the method and the data folded below (``<details>``), prose written
in Markdown and rendered (markdown-it-py, CommonMark with tables; raw HTML in prose is escaped).

A section is data (:class:`Section`, :class:`ReportFigure`), so that another part of the report
(an across-experiments summary, a module's own figures) adds one without touching the page: it
builds a :class:`Section` and :mod:`bbrl.analysis.report` places it."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Details", "ReportFigure", "Section", "markdown", "markdown_code", "markdown_escape", "page"]


def markdown(text: str, inline: bool = False) -> str:
    """``text`` (Markdown: CommonMark with tables) as HTML; raw HTML in it is escaped, not kept."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")
    return parser.renderInline(text) if inline else parser.render(text)


def markdown_escape(text: str) -> str:
    """``text`` (a name, a path) with the characters Markdown would read as markup escaped."""
    return "".join("\\" + ch if ch in "\\`*_{}[]<>()#+-.!|~" else ch for ch in str(text))


def markdown_code(text: str) -> str:
    """``text`` as a Markdown code span, verbatim (escapes are not read inside one): fenced with
    one backtick more than its longest run of backticks."""
    text = str(text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


@dataclass
class ReportFigure:
    """One figure: its PNG (embedded), its SVG if written, the question it answers (the caption's
    first part) and one sentence saying what it shows, in Markdown."""

    id: str
    png: Path
    question: str
    answer: str
    svg: Path | None = None


@dataclass
class Details:
    """A folded part below a section's figures: its summary line (plain text) and body (HTML)."""

    summary: str
    body_html: str


@dataclass
class Section:
    """A part of the report: a heading, notes above its figures (HTML: warnings), its figures, and
    folded details (method, tables, data)."""

    id: str
    title: str
    figures: list[ReportFigure] = field(default_factory=list)
    notes_html: str = ""
    details: list[Details] = field(default_factory=list)
    #: The section's name in the page's line of links (its title if empty).
    short: str = ""


_CSS = """
body { font-family: system-ui, sans-serif; margin: 0.6em auto 2em; max-width: 1180px; padding: 0 1em; color: #222;
       line-height: 1.4; }
h1 { font-size: 1.35em; margin: 0.2em 0; } h2 { font-size: 1.15em; margin: 1.2em 0 0.3em; }
p.lead { margin: 0.2em 0 0.4em; color: #333; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; }
td:nth-child(n+3) { text-align: right; font-variant-numeric: tabular-nums; }
tr.best td { font-weight: bold; }
table.race-stops td:nth-child(n+3) { text-align: left; }
table.race-stops td:nth-child(3) { text-align: right; }
.race { background: #e8f1fb; padding: 0.5em; border-left: 4px solid #0072b2; }
.race-notes { font-size: 0.85em; color: #444; }
.warn { background: #fff3cd; padding: 0.5em; border-left: 4px solid #e0a800; }
figure { margin: 0.4em 0 1.2em; }
figure img { display: block; max-width: 100%; max-height: 72vh; width: auto; height: auto; }
figcaption { font-size: 0.95em; margin-top: 0.2em; } figcaption .question { font-weight: 600; }
details { margin: 0.4em 0; } summary { cursor: pointer; color: #0b4f8a; }
nav { font-size: 0.9em; }
"""


def _figure_html(figure: ReportFigure) -> str:
    data = base64.b64encode(figure.png.read_bytes()).decode()
    files = f"<code>{html.escape(figure.png.name)}</code>"
    if figure.svg is not None:
        files += f', <a href="{html.escape(figure.svg.name)}">SVG</a>'
    return (
        f'<figure id="{html.escape(figure.id)}"><img alt="{html.escape(figure.png.name)}" '
        f'src="data:image/png;base64,{data}"><figcaption><span class="question">'
        f"{markdown(figure.question, inline=True)}</span> {markdown(figure.answer, inline=True)} "
        f"<small>({files})</small></figcaption></figure>"
    )


def _section_html(section: Section) -> str:
    parts = [f'<section id="{html.escape(section.id)}"><h2>{html.escape(section.title)}</h2>', section.notes_html]
    parts += [_figure_html(f) for f in section.figures]
    parts += [f"<details><summary>{html.escape(d.summary)}</summary>{d.body_html}</details>" for d in section.details]
    parts.append("</section>")
    return "".join(parts)


def page(
    title: str, lead_markdown: str, notes_html: str, sections: Sequence[Section], closing: Sequence[Section]
) -> str:
    """The whole page: the title, a lead paragraph (Markdown), a line of links to the sections,
    notes (HTML: warnings), the sections, and the closing sections (method, machine, cost model).
    Kept short above the first section, so that its first figure is in view when the page opens."""
    nav = " · ".join(
        f'<a href="#{html.escape(s.id)}">{html.escape(s.short or s.title)}</a>' for s in (*sections, *closing)
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>',
            f"<style>{_CSS}</style></head><body>",
            f"<h1>{html.escape(title)}</h1>",
            f'<div class="lead">{markdown(lead_markdown).replace("<p>", "<p class=lead>", 1)}</div>',
            f"<nav>{nav}</nav>",
            notes_html,
            *(_section_html(s) for s in sections),
            *(_section_html(s) for s in closing),
            "</body></html>",
        ]
    )
