"""Commands added by this module register themselves on the app (see :func:`register`)."""

from __future__ import annotations

import typer


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add this module's commands to the `maitred` app (and its `eval` group)."""
