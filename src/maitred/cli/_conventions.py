"""The command-line conventions, enforced in one place rather than by every command.

Every ``maitred`` command and group is built from :class:`App`, which gives it:

* ``-h`` as well as ``--help`` (the context's ``help_option_names``, inherited by subcommands);
* plain, user-facing metavars in help (``PATH``, ``N``, ``NUMBER``, ``TEXT``, nothing for a
  flag) instead of the Python types typer prints by default (``<bool>``, ``<list[str]>``,
  ``<int range>``); a numeric bound reads as words in the help text ("at least 1");
* hidden aliases: old option spellings that still parse for one release, never appear in help
  and print one deprecation line on stderr. ``--catalog`` and ``-c`` are aliases of ``--skills``
  and ``-s`` on every command that has ``--skills`` (and no option of its own by that name);
  a command adds its own with ``App.command(..., aliases={"--domain": "--skills"})``.

* values no command can use, refused for every command right after parsing (one line, exit
  status 2, before any work): ``nan``, ``inf`` or ``1e400`` given to a number option
  (:func:`refuse_non_finite`); a string option holding bytes that are not UTF-8
  (:func:`refuse_non_text`); ``--cache-dir`` naming a file or a path under one
  (:func:`refuse_cache_file`).

The aliases are rewritten in the argument list before click parses it, so a command keeps one
parameter per concept and needs no merging code. Only tokens before a bare ``--`` are read.
"""

from __future__ import annotations

import math
import os
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from maitred._ijson import is_text
from maitred.errors import ConfigError

if TYPE_CHECKING:  # typer vendors its own click; its Context is the one commands receive
    from typer._click import Context as ClickContext

HELP_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
"""The context settings of every group and command: ``-h`` works wherever ``--help`` does."""

CATALOG_ALIASES: Mapping[str, str] = {"--catalog": "--skills", "-c": "-s"}
"""Old spellings of the catalog option, accepted on every command that has ``--skills``."""

_METAVARS: Mapping[type, str] = {int: "N", float: "NUMBER", str: "TEXT", Path: "PATH"}


def _element_type(annotation: Any) -> Any:
    """``int`` for ``int``, ``list[int]``, ``int | None`` and ``list[int] | None``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return _element_type(args[0]) if len(args) == 1 else annotation


def plain_metavar(param: TyperOption | TyperArgument) -> str:
    """The metavar help shows for ``param``: a word a user reads, never a Python type."""
    if isinstance(param, TyperOption) and param.is_flag:
        return ""
    kind = _element_type(param.type_descriptor.annotation)
    return _METAVARS.get(kind, "PATH" if param.type_descriptor.is_path else "TEXT")


class PlainArgument(TyperArgument):
    """A positional argument shown the click way: ``NAME`` (or ``[NAME]``), typed in words.

    typer would print ``{messages}`` in the usage line and ``<path>`` in the type column.
    """

    def display_type_rich(self, ctx: ClickContext) -> str | None:
        return plain_metavar(self)

    def _rich_display_name(self) -> str:
        return self.display_name_raw + ("..." if self.nargs != 1 else "")

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


def _bound_words(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"from {low:g} to {high:g}"
    return f"at least {low:g}" if low is not None else f"at most {high:g}"


def _plain_help(param: TyperOption | TyperArgument) -> None:
    """Give ``param`` a plain metavar and move a numeric bound from ``[x>=1]`` into words.

    ``param.min``/``param.max`` only feed typer's help display; the bound itself is enforced
    from the option's declaration, so clearing them here changes what help shows, not what
    parses (tests/cli/test_conventions.py checks both).
    """
    if isinstance(param, TyperArgument):
        param.__class__ = PlainArgument  # same object and state, plain display
        if param.metavar is None:
            param.metavar = (param.name or "value").upper()
    elif param.metavar is None:
        param.metavar = plain_metavar(param)
    low, high = param.min, param.max
    if (low is None and high is None) or (isinstance(param, TyperOption) and param.count):
        return
    param.min = param.max = None
    words = _bound_words(low, high)
    help_text = (param.help or "").rstrip()
    param.help = f"{help_text[:-1] if help_text.endswith('.') else help_text} ({words})."


def _plain_params(params: list[Any]) -> None:
    for param in params:
        if isinstance(param, TyperOption | TyperArgument):
            _plain_help(param)


def _flag_metavar(option: TyperOption | None) -> TyperOption | None:
    """The help option, shown as the flag it is (click builds it per context, outside params)."""
    if option is not None:
        option.metavar = ""
    return option


def _option_names(command: TyperCommand) -> set[str]:
    names: set[str] = set()
    for param in command.params:
        names.update(param.opts)
        names.update(param.secondary_opts)
    return names


def rewrite_aliases(
    args: list[str], aliases: Mapping[str, str], warn: Callable[[str], None]
) -> list[str]:
    """``args`` with every old spelling replaced by its current one (``--old=v`` too).

    ``warn`` receives one deprecation line per old spelling used. Tokens after ``--`` are
    positional values and are left alone.
    """
    out: list[str] = []
    used: list[str] = []
    for i, token in enumerate(args):
        if token == "--":
            out.extend(args[i:])
            break
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in aliases:
            out.append(aliases[name] + eq + value)
            if name not in used:
                used.append(name)
        else:
            out.append(token)
    for name in used:
        warn(
            f"warning: {name} is an old spelling of {aliases[name]} and goes in the next "
            f"release; use {aliases[name]}"
        )
    return out


def refuse_non_finite(params: list[Any], values: Mapping[str, Any]) -> None:
    """Refuse ``nan``, ``inf`` and ``1e400`` given to any number option.

    click reads them as floats (and its ranges let ``nan`` through: every comparison with it is
    false), so without this a NaN would flow into the figures and out as ``NaN`` -- JSON no
    reader accepts. One check for every command, run right after parsing.

    Raises:
        ConfigError: naming the option and the value (exit status 2, one line).
    """
    for param in params:
        value = values.get(param.name or "")
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, float) and not math.isfinite(item):
                name = max(param.opts, key=len) if param.opts else param.name
                raise ConfigError(f"{name} must be a finite number, got {item!r}")


def refuse_non_text(params: list[Any], values: Mapping[str, Any]) -> None:
    """Refuse a string option holding bytes that are not UTF-8 (an account, a run id...).

    Python hands undecodable command-line bytes over as lone surrogates, which no log row or
    hash can hold: an id with one would crash the first write. Positional free text (``route``'s
    message) is exempt -- that command replaces such bytes and says so -- and so are options
    typed as paths, which may name any file the system can.

    Raises:
        ConfigError: naming the option.
    """
    for param in params:
        if not isinstance(param, TyperOption):
            continue
        value = values.get(param.name or "")
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, str) and not is_text(item):
                name = max(param.opts, key=len) if param.opts else param.name
                raise ConfigError(
                    f"{name} holds bytes that are not UTF-8 text; pass it in UTF-8 (check the "
                    "terminal's or the shell's encoding)"
                )


def refuse_cache_file(value: Path | None) -> None:
    """Refuse a ``--cache-dir`` (or ``$MAITRED_CACHE_DIR``, when the option is not given) that
    names a file, or lies under one: the index store would fail deep inside with
    ``NotADirectoryError``. A folder that does not exist yet is fine (it is created).

    Raises:
        ConfigError: naming the option, the path and the file in the way.
    """
    where, name = value, "--cache-dir"
    if where is None and os.environ.get("MAITRED_CACHE_DIR"):
        where, name = Path(os.environ["MAITRED_CACHE_DIR"]), "$MAITRED_CACHE_DIR"
    if where is None:
        return
    for folder in (where, *where.parents):
        if folder.exists():
            if not folder.is_dir():
                what = "is a file" if folder == where else f"lies under the file {folder}"
                raise ConfigError(
                    f"{name} {where} {what}, not a folder; give a folder (it is created when "
                    "missing)"
                )
            return


def _warn(line: str) -> None:
    typer.echo(line, err=True)


class MaitredCommand(TyperCommand):
    """A typer command with plain help metavars and hidden option aliases (see the module)."""

    aliases: ClassVar[Mapping[str, str]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_params(self.params)

    def active_aliases(self) -> dict[str, str]:
        """The old spellings this command accepts: the catalog's, then its own."""
        names = _option_names(self)
        found = {k: v for k, v in CATALOG_ALIASES.items() if "--skills" in names}
        found.update(self.aliases)
        return {old: new for old, new in found.items() if old not in names and new in names}

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, rewrite_aliases(args, self.active_aliases(), _warn))
        refuse_non_finite(self.params, ctx.params)
        refuse_non_text(self.params, ctx.params)
        if "cache_dir" in ctx.params:
            refuse_cache_file(ctx.params["cache_dir"])
        return rest

    def get_help_option(self, ctx: ClickContext) -> TyperOption | None:
        return _flag_metavar(super().get_help_option(ctx))


class MaitredGroup(TyperGroup):
    """A typer group whose own options (``--help``, ``--version``, a serving group's own:
    ``maitred mcp``) show no Python types and are refused like a command's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_params(self.params)

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        refuse_non_finite(self.params, ctx.params)
        refuse_non_text(self.params, ctx.params)
        return rest

    def get_help_option(self, ctx: ClickContext) -> TyperOption | None:
        return _flag_metavar(super().get_help_option(ctx))


def _with_aliases(aliases: Mapping[str, str]) -> type[MaitredCommand]:
    return type("MaitredCommand", (MaitredCommand,), {"aliases": dict(aliases)})


class App(typer.Typer):
    """``typer.Typer`` with maitred's conventions: every command and group built from it
    gets ``-h``, plain metavars and the hidden catalog aliases."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", MaitredGroup)
        kwargs.setdefault("context_settings", HELP_SETTINGS)
        kwargs.setdefault("no_args_is_help", True)
        kwargs.setdefault("add_completion", False)
        kwargs.setdefault("pretty_exceptions_enable", False)
        super().__init__(**kwargs)

    def command(  # type: ignore[override]
        self,
        name: str | None = None,
        *,
        aliases: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a command; ``aliases`` maps old option spellings to current ones."""
        kwargs.setdefault("cls", _with_aliases(aliases) if aliases else MaitredCommand)
        kwargs.setdefault("context_settings", HELP_SETTINGS)
        return super().command(name, **kwargs)
