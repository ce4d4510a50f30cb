"""The study's report folder: the rows (Parquet), the table of medians and quartiles (CSV and
Markdown), Figure 1 as box plots of returns per state on a log axis with both stopping rules side
by side (PNG and SVG), and ``report.md`` tying them together with the machine they ran on."""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl

from ..fileio import write_atomic

#: Colours of the rules (the paper's EBGStop grey, the betting rule blue).
RULE_COLOURS = {"ebgstop": "#9a9a9a", "betting": "#2f6db5"}


def figure(rows: pl.DataFrame):  # type: ignore[no-untyped-def]
    """One panel per domain: for each (epsilon, delta), a box of returns per state for each rule."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    domains = rows["domain"].unique(maintain_order=True).to_list()
    rules = rows["rule"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(1, len(domains), figsize=(6.5 * len(domains), 4.5), squeeze=False)
    for ax, domain in zip(axes[0], domains, strict=True):
        part = rows.filter(pl.col("domain") == domain)
        groups = part.select("epsilon", "delta").unique(maintain_order=True).rows()
        width = 0.8 / len(rules)
        for j, rule in enumerate(rules):
            data = [
                part.filter((pl.col("epsilon") == e) & (pl.col("delta") == d) & (pl.col("rule") == rule))["returns"]
                .to_numpy()
                .clip(1)
                for e, d in groups
            ]
            positions = [g + (j - (len(rules) - 1) / 2) * width for g in range(len(groups))]
            box = ax.boxplot(data, positions=positions, widths=width * 0.9, patch_artist=True, whis=1.5)
            for patch in box["boxes"]:
                patch.set_facecolor(RULE_COLOURS.get(rule, "#cccccc"))
            for flier in box["fliers"]:
                flier.set_markersize(3)
            ax.plot([], [], "s", color=RULE_COLOURS.get(rule, "#cccccc"), label=rule)
        ax.set_yscale("log")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"ε={e:g}\nδ={d:g}" for e, d in groups])
        ax.set_ylabel("returns sampled per state")
        ax.set_title(f"{domain}: {part['state'].n_unique()} states")
        ax.grid(axis="y", which="major", alpha=0.3)
        ax.legend(loc="upper left", frameon=False)
    fig.tight_layout()
    return fig


def markdown_table(table: pl.DataFrame) -> str:
    """The summary as a Markdown table (counts of returns per state)."""
    head = "| domain | ε | δ | rule | states | median | 25%-75% | max | uncertified | times fewer | s |"
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in table.iter_rows(named=True):
        fewer = "" if r["fewer_than_ebgstop"] is None or r["rule"] == "ebgstop" else f"{r['fewer_than_ebgstop']:.1f}"
        lines.append(
            f"| {r['domain']} | {r['epsilon']:g} | {r['delta']:g} | {r['rule']} | {r['states']} | {r['median']:,.0f} "
            f"| {r['q25']:,.0f}-{r['q75']:,.0f} | {r['max']:,} | {r['uncertified']} | {fewer} | {r['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def write_report(out: Path, rows: pl.DataFrame, table: pl.DataFrame, header: list[str]) -> list[Path]:
    """Writes ``rows.parquet``, ``summary.csv``, ``figure1.png``/``.svg`` and ``report.md`` into
    ``out`` (each atomically), and returns their paths."""
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    rows.write_parquet(buffer)
    paths = [write_atomic(out / "rows.parquet", buffer.getvalue())]
    paths.append(write_atomic(out / "summary.csv", table.write_csv().encode()))
    fig = figure(rows)
    for suffix in ("png", "svg"):
        image = io.BytesIO()
        fig.savefig(image, format=suffix, dpi=120, bbox_inches="tight")
        paths.append(write_atomic(out / f"figure1.{suffix}", image.getvalue()))
    plt.close(fig)
    text = "\n".join(
        [
            "# Returns per state to certify a value (Sajed et al. 2018, Figure 1)",
            "",
            *header,
            "",
            "![returns per state](figure1.png)",
            "",
            markdown_table(table),
            "`times fewer`: EBGStop's median over the betting rule's, on the same states and returns.",
            "",
        ]
    )
    paths.append(write_atomic(out / "report.md", text.encode()))
    return paths
