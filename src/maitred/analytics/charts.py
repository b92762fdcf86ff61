"""matplotlib charts of the funnel report (Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from maitred.errors import MissingExtraError

if TYPE_CHECKING:
    from maitred.analytics.report import ReportData

_BLUE, _GREY, _RED = "#3b6ea8", "#9aa5b1", "#c0504d"


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingExtraError("drawing the report's charts", "report", "matplotlib") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _funnel(plt: Any, path: Path, title: str, labels: list[str], values: list[int]) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.2), dpi=110)
    top = max(values) or 1
    bars = ax.barh(labels[::-1], values[::-1], color=[_BLUE, _GREY, _GREY][: len(values)][::-1])
    for bar, value in zip(bars, values[::-1], strict=True):
        ax.text(
            bar.get_width(),
            bar.get_y() + bar.get_height() / 2,
            f" {value:,} ({value / top:.1%})",
            va="center",
            fontsize=9,
        )
    ax.set_xlim(0, top * 1.6)
    ax.set_title(title)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _skills(plt: Any, path: Path, data: ReportData) -> None:
    names = [s["skill"] for s in data.skills]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.35 * len(names) + 1.6), dpi=110)
    left.barh(names[::-1], [s["block_rate"] for s in data.skills][::-1], color=_RED)
    left.set_xlim(0, 1)
    left.set_title("block rate (share of candidate pairs blocked)")
    right.barh(names[::-1], [s["tokens_saved"] for s in data.skills][::-1], color=_BLUE)
    right.set_title("description tokens saved by the gate")
    right.set_yticklabels([])
    for ax in (left, right):
        ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _predicates(plt: Any, path: Path, data: ReportData) -> None:
    labels = [f"{p['skill']} / {p['predicate']}" for p in data.predicates] or ["(none)"]
    values = [p["pairs"] for p in data.predicates] or [0]
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(labels) + 1.4), dpi=110)
    ax.barh(labels[::-1], values[::-1], color=_RED)
    ax.set_title("predicates by pairs blocked")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def draw_all(data: ReportData, out: Path) -> dict[str, Path]:
    """Draw every chart into ``out``; returns chart name -> PNG path."""
    plt = _pyplot()
    paths = {
        name: out / f"{name}.png"
        for name in ("funnel_messages", "funnel_tokens", "skills", "predicates")
    }
    _funnel(
        plt,
        paths["funnel_messages"],
        "messages",
        ["all messages", "matched by recall", "non-empty gated menu"],
        [data.messages, data.matched, data.with_menu],
    )
    _funnel(
        plt,
        paths["funnel_tokens"],
        "skill-description tokens",
        ["every skill, every message", "after recall", "after the gate"],
        [data.tokens_all, data.tokens_recall, data.tokens_gate],
    )
    _skills(plt, paths["skills"], data)
    _predicates(plt, paths["predicates"], data)
    return paths
