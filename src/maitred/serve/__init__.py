"""``maitred serve``: the HTTP API over the engine (the ``serve`` extra: Starlette, uvicorn,
prometheus-client).

::

    config = load_config("serve.yaml")
    engine = open_engine(config)
    service = Service(
        engine, config.tenants, config.limits, durability=config.durability,
        require_scopes=config.require_scopes,
    )
    app = create_app(service, config.limits)
    # uvicorn.run(app, host=config.host, port=config.port); engine.close() afterwards

An adapter on top of the library: nothing in the core imports this package (tests/test_layers.py),
and it holds no routing or gating logic of its own -- :class:`~maitred.Maitred` decides, this
package authenticates, parses, keeps sessions and counts.
"""

from __future__ import annotations

from maitred.engine import Maitred
from maitred.errors import ConfigError, MaitredError
from maitred.serve.app import create_app
from maitred.serve.config import Limits, ServeConfig, Tenant, load_config, parse_config
from maitred.serve.reload import Reloader
from maitred.serve.service import Service
from maitred.state.registry import open_provider

__all__ = [
    "Limits",
    "Reloader",
    "ServeConfig",
    "Service",
    "Tenant",
    "create_app",
    "load_config",
    "open_engine",
    "parse_config",
]


def open_engine(config: ServeConfig) -> Maitred:
    """The engine a config describes, with ``state_timeout_s`` as the deadline of every fetch.

    Raises:
        ConfigError: a catalog, state spec, table mapping or option that cannot work (the
            message is prefixed with the config file's name).
    """
    try:
        provider = open_provider(config.state, config.tables, timeout_s=config.state_timeout_s)
        return Maitred.open(
            list(config.catalogs),
            provider,
            config.options,
            log=config.log,
            cache_dir=config.cache_dir,
            settings=config.settings,
            clock_skew_s=config.state_clock_skew_s,
        )
    except MaitredError as exc:
        raise ConfigError(f"{config.source}: {exc}") from exc
