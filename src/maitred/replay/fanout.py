"""Where a replay's model calls run: a local thread pool, or a Ray cluster.

A replay is embarrassingly parallel -- one independent question per sampled turn -- and its
cost is the model. Locally, turns are asked on a thread pool (a remote endpoint is I/O-bound;
a local model releases the GIL while it computes). With ``--ray-address``, each Ray worker
builds its own model and catalog once (an actor) and turns are spread over the actors with an
ordered pool, so results come back in sampling order whichever backend ran them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from maitred.errors import MissingExtraError
from maitred.replay.cohort import ReplayTurn
from maitred.replay.models import ChoiceModel, make_model
from maitred.replay.run import ReplayOutcome, ask
from maitred.skills.catalog import load_catalog
from maitred.skills.model import Catalog


@dataclass
class ThreadFanout:
    """A local thread pool over one shared model."""

    model: ChoiceModel
    catalog: Catalog
    workers: int = 1

    @property
    def model_name(self) -> str:
        return self.model.name

    @property
    def catalog_version(self) -> str:
        return self.catalog.version

    def map(self, turns: Sequence[ReplayTurn]) -> Iterator[ReplayOutcome]:
        with ThreadPoolExecutor(max_workers=max(1, self.workers)) as pool:
            yield from pool.map(lambda t: ask(self.model, self.catalog, t), turns)


@dataclass(frozen=True)
class ModelSpec:
    """How a worker builds its own model and catalog (picklable, unlike a loaded model)."""

    model: str
    skills: tuple[str, ...]
    base_url: str | None = None
    api_key: str = ""


class _Worker:
    """One Ray actor: a model and a catalog, built once, asked many times."""

    def __init__(self, spec: ModelSpec) -> None:
        self.model = make_model(spec.model, base_url=spec.base_url, api_key=spec.api_key)
        self.catalog = load_catalog(list(spec.skills))

    def ask(self, turn: ReplayTurn) -> ReplayOutcome:
        return ask(self.model, self.catalog, turn)


class RayFanout:
    """Spread turns over ``workers`` Ray actors on the cluster at ``address``."""

    def __init__(self, address: str, spec: ModelSpec, workers: int = 2) -> None:
        try:
            import ray
            from ray.util import ActorPool
        except ImportError as exc:
            raise MissingExtraError("replay fan-out over Ray", "ray", "ray") from exc
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        actor = ray.remote(num_cpus=0)(_Worker)
        self._pool: Any = ActorPool([actor.remote(spec) for _ in range(max(1, workers))])
        self._spec = spec
        self._version = load_catalog(list(spec.skills)).version  # the one each worker loads

    @property
    def model_name(self) -> str:
        return self._spec.model

    @property
    def catalog_version(self) -> str:
        return self._version

    def map(self, turns: Sequence[ReplayTurn]) -> Iterator[ReplayOutcome]:
        yield from self._pool.map(lambda a, t: a.ask.remote(t), list(turns))
