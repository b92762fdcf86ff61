"""``maitred mcp``: an MCP gateway that puts maitred's gates in front of an MCP server.

The gateway fronts one or more upstream MCP servers (stdio subprocesses or streamable-HTTP
URLs), served over stdio (one session, for the account fixed at launch) or over streamable HTTP
(one session per authenticated MCP session, for the account its bearer token maps to). Its
``tools/list`` shows only the tools whose exit predicates pass for the session's account now
(with ``disclosure: find_tools``, only those the session found through ``find_tools``); every
``tools/call`` is re-checked by the action gate (visibility on fresh state, argument schema,
call policies) before it may reach the upstream; a write that changes what is visible, or
(with ``watch``) a change of the account's state made elsewhere, is announced with
``notifications/tools/list_changed``; and every decision is in the decision log before the
client sees its result.

* :mod:`maitred.gateway.config` -- the YAML config (``maitred mcp --config gateway.yaml``).
* :mod:`maitred.gateway.keeper` -- the decisions, free of MCP plumbing (testable alone).
* :mod:`maitred.gateway.server` -- the gate's middleware: each session's listing and calls.
* :mod:`maitred.gateway.build` -- the FastMCP server over the upstreams, its middlewares and
  routes; :mod:`maitred.gateway.serve` serves it over stdio or HTTP (both need the ``mcp``
  extra; import them only where the gateway is served).
* :mod:`maitred.gateway.channels` -- how the state watch reaches a session outside a request
  (a standing channel, or a ``subscriptions/listen`` stream).
* :mod:`maitred.gateway.traces` -- what each request's and each decision's span holds
  (``tracing:`` in the config).
* :mod:`maitred.gateway.rates` -- who a call is charged to under ``rate_limits:``
  (:mod:`maitred.ratelimit`), and where the limit applies.

Only the CLI imports this package, and only this package imports fastmcp or mcp.
"""

from maitred.gateway.config import GatewayConfig, Token, Upstream, load_config, parse_config
from maitred.gateway.keeper import Gatekeeper, GatewayEngines, catalog_from_tools

__all__ = [
    "Gatekeeper",
    "GatewayConfig",
    "GatewayEngines",
    "Token",
    "Upstream",
    "catalog_from_tools",
    "load_config",
    "parse_config",
]
