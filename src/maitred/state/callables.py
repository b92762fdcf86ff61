"""State from Python callables: one fetcher per key root (or per key), run concurrently.

This is how an application plugs in the services it already has::

    CallableStateProvider(
        {
            "billing": lambda account: billing_api.summary(account),   # a dict of fields
            "domain.registrar_lock": registrar.lock_status,            # one value
        },
        timeout_s=0.8,
    )

A requested key is served by the fetcher whose name is its **longest dotted prefix**: the fetcher
named ``"domain.registrar_lock"`` answers that key alone; the fetcher named ``"billing"`` answers
every ``billing.*`` key from the dict it returns (nested or dotted, as in
:mod:`maitred.state.memory`), and ``billing`` itself with the whole dict.

Invariants:

* each fetcher a turn needs is called **once**, with the account id, whatever number of its keys
  were asked for; fetchers of one turn run concurrently in a thread pool;
* a fetcher returning ``None`` means "this account has none of it": its keys are missing (a
  root fetcher can still report a JSON null for one field: ``{"status": None}``);
* ``timeout_s`` bounds the whole turn: when it passes, :class:`~maitred.errors.ProviderTimeout`
  names the fetchers still running (their threads cannot be killed; they finish in the
  background and their results are dropped); a fetcher that raises gives
  :class:`~maitred.errors.ProviderError` naming the fetcher and the account. Either way the
  gate blocks every candidate that reads state, with the cause ``state_unavailable`` -- a
  failing service never becomes a silent offer;
* fetchers cannot say whether an account exists, so snapshots carry ``account_found=None``
  (a fetcher returning None only means "none of this root");
* :meth:`CallableStateProvider.uncovered` names the keys no fetcher serves, so a pipeline
  refuses a catalog whose predicates read them.

Thread-safety: ``fetch`` may be called from many threads; the pool is shared and created on the
first fetch. :meth:`CallableStateProvider.close` shuts it down.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import threading
from collections.abc import Callable, Collection, Mapping
from types import TracebackType
from typing import Any

from maitred.errors import ConfigError, ProviderError, ProviderTimeout
from maitred.state._values import ABSENT, UnsupportedValue, json_safe, key_parts, lookup, nest
from maitred.state.snapshot import Snapshot, now

Fetcher = Callable[[str], Any]
"""Takes an account id; returns a dict of fields (root fetcher), a value (key fetcher) or None."""


class CallableStateProvider:
    """Account state from Python functions, one per key root or per key.

    Args:
        fetchers: fetcher name (a root such as ``"billing"`` or a full key such as
            ``"billing.status"``) -> function of the account id.
        timeout_s: the most one fetch may take, all fetchers together; None waits for ever.
        max_workers: threads in the pool (default: one per fetcher, at most 32).
        version: the version marker every snapshot carries.
        clock: the snapshot time source.

    Raises:
        ConfigError: a malformed fetcher name, a non-callable fetcher or a bad timeout.
    """

    def __init__(
        self,
        fetchers: Mapping[str, Fetcher],
        *,
        timeout_s: float | None = None,
        max_workers: int | None = None,
        version: str = "",
        clock: Callable[[], float] = now,
    ) -> None:
        for name, fetcher in fetchers.items():
            if not isinstance(name, str) or key_parts(name) is None:
                raise ConfigError(
                    f"state fetcher name {name!r} must be a key root ('billing') or a dotted "
                    "key ('billing.status') without empty segments"
                )
            if not callable(fetcher):
                raise ConfigError(
                    f"state fetcher {name!r} is a {type(fetcher).__name__}, not a function of "
                    "the account id"
                )
        if timeout_s is not None and not timeout_s > 0:
            raise ConfigError(f"state fetchers: timeout_s must be positive, not {timeout_s!r}")
        if not fetchers:
            raise ConfigError(
                "CallableStateProvider needs at least one fetcher, e.g. "
                "{'billing': lambda account: {...}}"
            )
        self.fetchers = dict(fetchers)
        self.timeout_s = timeout_s
        self.version = version
        self._max_workers = max_workers or min(32, len(self.fetchers))
        self._clock = clock
        self._lock = threading.Lock()
        self._pool: cf.ThreadPoolExecutor | None = None

    def fetch(self, account: str, keys: Collection[str]) -> Snapshot:
        """Call each needed fetcher once (concurrently) and answer every requested key.

        Raises:
            ProviderTimeout: fetchers still running after ``timeout_s``.
            ProviderError: a fetcher raised, or returned something that is not state.
        """
        as_of = self._clock()
        routes = {key: self._route(key) for key in set(keys)}
        needed = sorted({name for name in routes.values() if name is not None})
        results = self._run(account, needed, routes) if needed else {}
        values: dict[str, Any] = {}
        missing: set[str] = set()
        for key, name in routes.items():
            value = ABSENT if name is None else _answer(key, name, results[name])
            if value is ABSENT:
                missing.add(key)
            else:
                values[key] = value
        return Snapshot(account, values, as_of, {}, frozenset(missing), self.version)

    def uncovered(self, keys: Collection[str]) -> frozenset[str]:
        """The keys no fetcher serves (no fetcher is named by any dotted prefix of them)."""
        return frozenset(key for key in keys if self._route(key) is None)

    def close(self) -> None:
        """Shut the pool down without waiting for fetchers still running."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> CallableStateProvider:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _route(self, key: str) -> str | None:
        """The fetcher for ``key``: the longest dotted prefix that names one."""
        parts = key_parts(key)
        if parts is None:
            return None
        for end in range(len(parts), 0, -1):
            name = ".".join(parts[:end])
            if name in self.fetchers:
                return name
        return None

    def _executor(self) -> cf.ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = cf.ThreadPoolExecutor(
                    self._max_workers, thread_name_prefix="maitred-state"
                )
            return self._pool

    def _run(self, account: str, names: list[str], routes: dict[str, str | None]) -> dict[str, Any]:
        """name -> normalised result, for every fetcher in ``names``."""
        pool = self._executor()
        futures = {name: pool.submit(self.fetchers[name], account) for name in names}
        _, pending = cf.wait(futures.values(), timeout=self.timeout_s)
        if pending:
            late = [name for name, future in futures.items() if future in pending]
            for name in late:
                futures[name].cancel()
            raise ProviderTimeout(
                f"state fetcher(s) {late} did not answer within {self.timeout_s:g}s for account "
                f"{account!r} (keys: {_keys_of(routes, late)}); make them faster, or raise "
                "timeout_s"
            )
        results: dict[str, Any] = {}
        for name, future in futures.items():
            error = future.exception()
            if error is not None:
                raise ProviderError(
                    f"state fetcher {name!r} raised {type(error).__name__}: {error} for account "
                    f"{account!r} (keys: {_keys_of(routes, [name])}); fix the fetcher or the "
                    "service it calls"
                ) from error
            results[name] = self._normalise(name, account, future.result(), routes)
        return results

    def _normalise(
        self, name: str, account: str, result: Any, routes: dict[str, str | None]
    ) -> Any:
        """A fetcher's result as a JSON-safe value, or a tree if some key reads below it."""
        below = any(key != name for key, route in routes.items() if route == name)
        try:
            if result is None:
                return None
            if isinstance(result, Mapping):
                return nest(result, f"state fetcher {name!r}, account {account!r}")
            if below:
                raise UnsupportedValue(
                    f"state fetcher {name!r}, account {account!r}: returned a "
                    f"{type(result).__name__}, but keys below it were asked for "
                    f"({_keys_of(routes, [name])}); a root fetcher must return a dict of "
                    "fields or None"
                )
            return json_safe(result, f"state fetcher {name!r}, account {account!r}")
        except UnsupportedValue as exc:
            raise ProviderError(str(exc)) from exc


def _answer(key: str, name: str, result: Any) -> Any:
    """The value for ``key`` from fetcher ``name``'s normalised result, or ABSENT."""
    if result is None:
        return ABSENT
    if key == name:
        return copy.deepcopy(result)
    return lookup(result, key[len(name) + 1 :])


def _keys_of(routes: dict[str, str | None], names: list[str]) -> list[str]:
    return sorted(key for key, route in routes.items() if route in names)
