"""Open a decision log in DuckDB, read-only, with no download.

DuckDB reads a SQLite log through its ``sqlite_scanner`` extension and a PostgreSQL log through
its ``postgres_scanner``. DuckDB would fetch those from the network on first use; here they come
from the ``duckdb-ext-sqlite`` / ``duckdb-ext-postgres`` wheels (the ``report`` extra), which
ship the builds for exactly the pinned DuckDB version, and are loaded from their file paths.
Autoinstall and autoload are switched off, so nothing is ever fetched. The log is attached
``READ_ONLY`` as the schema ``log``: analytics can read the log and nothing else.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from maitred.errors import ConfigError, LogError, MissingExtraError

_EXTENSIONS = {"sqlite": "sqlite_scanner", "postgres": "postgres_scanner"}


def _extension_path(duckdb: Any, name: str) -> Path:
    try:
        import duckdb_ext
    except ImportError as exc:
        raise MissingExtraError(
            f"reading the log with DuckDB ({name})", "report", f"duckdb-ext-{name.split('_')[0]}"
        ) from exc
    version = duckdb.__version__
    for root in duckdb_ext.__path__:
        found = sorted(Path(root).glob(f"extensions/v{version}/*/{name}.duckdb_extension"))
        if found:
            return found[0]
    raise MissingExtraError(
        f"reading the log with DuckDB {version} (extension {name} for that version)",
        "report",
        f"duckdb-ext-{name.split('_')[0]}",
    )


def connect_log(location: str | os.PathLike[str]) -> Any:
    """A DuckDB connection with the decision log attached read-only as ``log``.

    Args:
        location: a SQLite log path (or ``sqlite:///path``), or a ``postgresql://`` URL.

    Raises:
        MissingExtraError: DuckDB or its extension wheel is not installed.
        LogError: the log does not exist or cannot be attached.
    """
    try:
        import duckdb
    except ImportError as exc:
        raise MissingExtraError("reading the log with DuckDB", "report", "duckdb") from exc
    text = os.fspath(location)
    if text.startswith(("postgresql://", "postgres://")):
        kind, target = "postgres", text
    else:
        kind = "sqlite"
        target = text.removeprefix("sqlite:///") if text.startswith("sqlite:///") else text
        if not Path(target).is_file():
            raise LogError(f"no decision log at {target}; run `maitred run` or `maitred demo`")
    conn = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    conn.execute(f"LOAD '{_extension_path(duckdb, _EXTENSIONS[kind])}'")
    quoted = target.replace("'", "''")
    try:
        conn.execute(f"ATTACH '{quoted}' AS log (TYPE {kind}, READ_ONLY)")
    except duckdb.Error as exc:
        conn.close()
        raise LogError(f"DuckDB cannot attach the log {target}: {exc}") from exc
    tables = {
        row[0]
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'log'"
        ).fetchall()
    }
    missing = {"runs", "turns", "pairs"} - tables
    if missing:
        conn.close()
        raise ConfigError(f"{target} is not a maitred decision log (no {sorted(missing)} tables)")
    return conn
