"""``maitred mcp``: an MCP gateway that puts maitred's gates in front of an MCP server.

The gateway fronts one upstream MCP server (launched over stdio) for one account, fixed when
the gateway is launched. Its ``tools/list`` shows only the tools whose exit predicates pass for
that account now; every ``tools/call`` is re-checked by the action gate (visibility on fresh
state, argument schema, call policies) before it may reach the upstream; a write that changes
what is visible is announced with ``notifications/tools/list_changed``; and every decision is
in the decision log before the client sees its result.

* :mod:`maitred.gateway.config` -- the YAML config (``maitred mcp --config gateway.yaml``).
* :mod:`maitred.gateway.keeper` -- the decisions, free of MCP plumbing (testable alone).
* :mod:`maitred.gateway.server` -- the FastMCP proxy and its middleware (needs the ``mcp``
  extra; import it only where it is served).

Only the CLI imports this package, and only this package imports fastmcp or mcp.
"""

from maitred.gateway.config import GatewayConfig, Upstream, load_config, parse_config
from maitred.gateway.keeper import Gatekeeper, catalog_from_tools

__all__ = [
    "Gatekeeper",
    "GatewayConfig",
    "Upstream",
    "catalog_from_tools",
    "load_config",
    "parse_config",
]
