"""Cache entries and files that several processes may write at once.

A cache entry (a converted model, a stored recall index) is a folder that must never be seen half
written, and that two processes — two pytest workers, two CLI runs — may try to create at the same
moment. The recipe every cache writer in maitred follows:

1. take :func:`entry_lock` on the entry (an exclusive ``flock`` on a small ``<name>.lock`` file
   beside it), so only one process writes a given entry at a time;
2. look again: if another process finished the entry while this one waited, use it;
3. :func:`sweep_temps` removes what a crashed writer of *this* entry left behind (safe: every
   writer of the entry holds the lock);
4. write into a fresh temporary folder beside the entry and :func:`publish` it with one rename.

Where ``fcntl`` is missing (Windows) the lock is a no-op; :func:`publish` still tolerates a complete
entry that appeared meanwhile, so the result is correct, only the work may be done twice.
The lock files stay (a few bytes each): removing a lock file while another process waits on it
would let a third take a different lock on a new file.

A single file (the gateway's pin file) is written with :func:`write_file`: into a temporary file
beside it, flushed to disk, then renamed over it, so a reader sees the old file or the new one
whole; a writer that reads, changes and writes it back holds :func:`entry_lock` on it meanwhile.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def temp_prefix(final: Path) -> str:
    """The name prefix of temporary folders that write ``final`` (see :func:`sweep_temps`)."""
    return f".{final.name}.tmp-"


@contextmanager
def entry_lock(final: Path) -> Iterator[None]:
    """Hold an exclusive lock on the cache entry ``final`` (blocks while another holds it)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    lock_path = final.with_name(f"{final.name}.lock")
    with open(lock_path, "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def sweep_temps(final: Path) -> None:
    """Remove temporary folders a crashed writer of ``final`` left (call under its lock).

    Also removes ``<name>.tmp<pid>`` folders, the naming of earlier maitred versions.
    """
    if not final.parent.is_dir():
        return
    for child in final.parent.iterdir():
        name = child.name
        if name.startswith(temp_prefix(final)) or name.startswith(f"{final.name}.tmp"):
            shutil.rmtree(child, ignore_errors=True)


def publish(tmp: Path, final: Path, is_complete: Callable[[Path], bool]) -> bool:
    """Rename the finished folder ``tmp`` to ``final``; ``tmp`` is gone afterwards either way.

    Args:
        tmp: a complete entry, written beside ``final``.
        final: where the entry lives.
        is_complete: whether a folder already at ``final`` is a usable entry (then it is kept
            and ``tmp`` dropped); an unusable one is moved aside and deleted first.

    Returns:
        ``True`` when ``tmp`` became the entry, ``False`` when a complete one was kept.
    """
    try:
        if final.exists():
            if is_complete(final):
                return False
            aside = final.with_name(f"{temp_prefix(final)}stale-{os.getpid()}")
            os.replace(final, aside)
            shutil.rmtree(aside, ignore_errors=True)
        try:
            os.replace(tmp, final)
        except OSError:
            # without fcntl another writer may have won the race; its entry is as good as ours
            if not is_complete(final):
                raise
            return False
        return True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_file(path: Path, text: str) -> None:
    """Replace the file ``path`` with ``text`` (UTF-8) in one rename; nothing half written is
    ever seen at ``path``, and no temporary file is left behind, whatever fails."""
    try:
        mode = path.stat().st_mode & 0o7777  # keep the file's permissions
    except FileNotFoundError:
        mode = 0o644  # not mkstemp's 0600: a pin file is reviewed and shared like a config
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), mode)
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
