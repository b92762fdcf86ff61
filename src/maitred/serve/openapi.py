"""The OpenAPI 3.1 description served at ``/openapi.json``, written by hand.

Seven routes do not need a generator. The schemas are plain JSON Schema (2020-12, as OpenAPI
3.1 uses), so the tests validate real responses against them with ``jsonschema``: a field the
server adds, drops or retypes without updating this file fails a test, and so does a route
missing from it.

**The request schemas say exactly what is refused**, so that a schema-valid request is never
refused as a field's fault and a client generator (schemathesis) can tell: every string and key
of a body matches :data:`CLEAN_PATTERN` (no NUL, no lone surrogate, as
:mod:`maitred._ijson` refuses them), a required text :data:`TEXT_PATTERN` (also: not blank, as
:data:`~maitred.serve.requests.BLANK` says), an id is at most ``MAX_ID`` characters (so the
512 bytes an id may be in the log, :func:`maitred.log.storable.identity_fault`), a number of
the arguments is finite; a refusal is then 422 ``invalid_field`` naming the field. What JSON
Schema cannot say -- a key twice, nesting deeper than 32 levels -- is a 400
``malformed_json``, described with it. The request examples are the service guide's.
"""

from __future__ import annotations

import copy
from typing import Any

from maitred.menu.render import RENDERERS
from maitred.serve.requests import MAX_ID, NOT_BLANK_PATTERN

_STR = {"type": "string"}
#: a string without a NUL (U+0000), which the decision log cannot store (PostgreSQL ``text``);
#: a lone surrogate, refused too, is no character, so no pattern a generator can use names it
#: (schemathesis drops a pattern with a surrogate escape): I-JSON (RFC 7493, 2.1) excludes it
#: from the JSON text, and the descriptions say so
CLEAN_PATTERN = "^[^\\u0000]*$"
_BLANKS = NOT_BLANK_PATTERN[2:-1]  # the escapes inside NOT_BLANK_PATTERN's brackets
#: ... with a character that is not blank (what a required text field must hold): blanks, then
#: that one, then any (no two branches can take the same character: linear to match or refuse)
TEXT_PATTERN = f"^[{_BLANKS}]*[^\\u0000{_BLANKS}][^\\u0000]*$"
_CLEAN = {"type": "string", "pattern": CLEAN_PATTERN}
#: what the server reads as "given": a string with a character that is not blank
_TEXT = {"type": "string", "minLength": 1, "pattern": TEXT_PATTERN}
#: an id: given, and at most MAX_ID characters (so at most 512 bytes, what the log stores)
_ID = {**_TEXT, "maxLength": MAX_ID}
_NULLABLE_STR = {"type": ["string", "null"]}
#: the largest finite JSON number (a number beyond it is refused)
_FLOAT_MAX = 1.7976931348623157e308


#: the requests of the service guide (docs/service.md), whose tenant owns every ``acc-`` account:
#: a client that tries the examples -- schemathesis mixes them into what it generates, its
#: stateful phase included -- reaches a turn that succeeds, and the call check it links to
TURN_EXAMPLE = {
    "text": "connect my own domain to my site",
    "account": "acc-000001",
    "session_id": "s1",
}
CHECK_EXAMPLE = {"session_id": "s1", "call": {"name": "connect-domain", "arguments": {}}}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json(_ref("Error"), description)


_SCHEMAS: dict[str, Any] = {
    "Json": {
        "description": "any JSON value the decision log can carry: every string and key "
        "without a NUL (and, as I-JSON requires, without a lone surrogate), every number "
        "finite (nesting deeper than 32 levels in all is refused too, 400 malformed_json)",
        "pattern": CLEAN_PATTERN,
        "propertyNames": {"pattern": CLEAN_PATTERN},
        "maximum": _FLOAT_MAX,
        "minimum": -_FLOAT_MAX,
        "items": {"$ref": "#/components/schemas/Json"},
        "additionalProperties": {"$ref": "#/components/schemas/Json"},
    },
    "JsonObject": {
        "type": "object",
        "description": "a JSON object the decision log can carry (see Json)",
        "propertyNames": {"pattern": CLEAN_PATTERN},
        "additionalProperties": {"$ref": "#/components/schemas/Json"},
    },
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["status", "code", "message"],
                "properties": {
                    "status": {"type": "integer"},
                    "code": {
                        "type": "string",
                        "description": "stable: unauthorized, account_forbidden, "
                        "session_not_found, session_account_mismatch, body_too_large, "
                        "malformed_json, invalid_field, run_not_found, no_decision_log, "
                        "engine_unavailable, rate_limited, rate_limit_unavailable",
                    },
                    "message": _STR,
                    "field": {"type": "string", "description": "the offending field, dotted"},
                    "retry_after_s": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "rate_limited: seconds to wait (also Retry-After)",
                    },
                    "scope": {
                        "enum": ["per_tenant", "per_tool"],
                        "description": "rate_limited: the exhausted budget",
                    },
                },
            }
        },
    },
    "TurnRequest": {
        "type": "object",
        "required": ["text", "account", "session_id"],
        "additionalProperties": False,
        "examples": [TURN_EXAMPLE],
        "properties": {
            "text": {**_TEXT, "description": "the user's message"},
            "account": {**_ID, "description": "whose state the gate reads"},
            "session_id": {
                **_ID,
                "description": "the conversation; created on first use, then remembered "
                "(bounded, idle expiry) so a later call check knows what was offered",
            },
            "conversation": {
                "type": "array",
                "description": "earlier messages (strings or {role, content}); checked, but "
                "routing ranks `text` alone in this version",
                "items": {
                    "oneOf": [
                        _CLEAN,
                        {
                            "type": "object",
                            "required": ["role", "content"],
                            "propertyNames": {"pattern": CLEAN_PATTERN},
                            "additionalProperties": _ref("Json"),
                            "properties": {"role": _CLEAN, "content": _CLEAN},
                        },
                    ]
                },
            },
            "format": {"enum": [*sorted(RENDERERS), None], "description": "menu format"},
            "scopes": {
                "type": ["array", "null"],
                "items": {"type": "string", "pattern": "^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$"},
                "description": "the OAuth scopes the application's user was granted: a tool "
                "whose contract requires one not listed is hidden (turns) and refused with "
                "INSUFFICIENT_SCOPE (checks); omitted or null: scopes are not asked",
            },
        },
    },
    "PredicateOutcome": {
        "type": "object",
        "required": ["predicate", "status", "message"],
        "properties": {
            "predicate": _STR,
            "status": _STR,
            "version": _STR,
            "values": {"type": "object"},
            "detail": _STR,
            "message": {"type": "string", "description": "the predicate's message for people"},
        },
    },
    "Blocked": {
        "type": "object",
        "required": ["skill", "rank", "predicates"],
        "properties": {
            "skill": _STR,
            "rank": {"type": "integer"},
            "predicates": {"type": "array", "items": _ref("PredicateOutcome")},
        },
    },
    "TurnResponse": {
        "type": "object",
        "required": [
            "turn_id",
            "session_id",
            "account",
            "menu_format",
            "menu",
            "menu_tokens",
            "exposed",
            "visible",
            "blocked",
            "candidates",
            "cause",
            "timings_us",
        ],
        "properties": {
            "turn_id": {"type": "string", "description": "the turn's id in the decision log"},
            "session_id": _STR,
            "message": _STR,
            "account": _STR,
            "matched": {"type": "boolean"},
            "candidates": {"type": "array", "items": {"type": "object"}},
            "visible": {"type": "array", "items": _STR},
            "exposed": {"type": "array", "items": _STR},
            "blocked": {"type": "array", "items": _ref("Blocked")},
            "menu_format": {"enum": sorted(RENDERERS)},
            "menu_tokens": {"type": "integer"},
            "menu": {
                "description": "tool objects (openai, anthropic, mcp) or the skills block as "
                "text (agentskills)",
                "type": ["array", "string"],
            },
            "snapshot_hash": _NULLABLE_STR,
            "provider_error": _NULLABLE_STR,
            "cause": {
                "enum": ["state_unavailable", "account_not_found", None],
                "description": "set when the turn failed closed as a whole",
            },
            "catalog_version": _STR,
            "timings_us": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
    },
    "CheckRequest": {
        "type": "object",
        "required": ["session_id", "call"],
        "additionalProperties": False,
        "examples": [CHECK_EXAMPLE],
        "properties": {
            "session_id": _ID,
            "call": {
                "type": "object",
                "required": ["name"],
                "additionalProperties": False,
                "properties": {
                    "name": _ID,
                    "arguments": _ref("JsonObject"),
                    "id": {**_CLEAN, "description": "the provider's tool call id"},
                },
            },
            "scopes": {
                "type": ["array", "null"],
                "items": {"type": "string", "pattern": "^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$"},
                "description": "the OAuth scopes the application's user was granted: a tool "
                "whose contract requires one not listed is hidden (turns) and refused with "
                "INSUFFICIENT_SCOPE (checks); omitted or null: scopes are not asked",
            },
        },
    },
    "CheckResponse": {
        "type": "object",
        "required": [
            "decision_id",
            "session_id",
            "turn_id",
            "allow",
            "verdict",
            "code",
            "message_for_model",
            "message",
            "fields",
            "tool_result",
            "decision",
        ],
        "properties": {
            "decision_id": _STR,
            "session_id": _STR,
            "turn_id": _NULLABLE_STR,
            "allow": {"type": "boolean"},
            "verdict": {"enum": ["allow", "reject"]},
            "code": {"type": "string", "description": "OK, TOOL_NOT_OFFERED, ARGS_INVALID, ..."},
            "message_for_model": _STR,
            "message": {"type": "string", "description": "for people"},
            "fields": {"type": "array", "items": _STR},
            "tool_result": {
                "type": ["object", "null"],
                "description": "on reject: what to hand the model instead of the tool's output",
            },
            "decision": {"type": "object", "description": "the decision as logged"},
        },
    },
    "Funnel": {
        "type": "object",
        "required": ["run_id", "messages", "candidate_pairs", "blocked_pairs", "fail_closed"],
        "properties": {
            "run_id": _NULLABLE_STR,
            "messages": {"type": "integer"},
            "candidate_pairs": {"type": "integer"},
            "blocked_pairs": {"type": "integer"},
            "fail_closed": {"type": "object"},
        },
    },
    "Ready": {
        "type": "object",
        "required": ["ready", "checks"],
        "properties": {
            "ready": {"type": "boolean"},
            "checks": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "required": ["ok", "detail"],
                    "properties": {"ok": {"type": "boolean"}, "detail": _STR},
                },
            },
        },
    },
}

_AUTH_ERRORS = {
    "401": _error("missing or unknown bearer token (WWW-Authenticate: Bearer)"),
}
_BODY_ERRORS = {
    "400": _error(
        "malformed_json: the body is empty, not UTF-8 or not JSON, or its structure is "
        "outside I-JSON (RFC 7493): a key twice in one object, nesting deeper than 32 levels "
        "(`field` names where); a value no field may hold is a 422"
    ),
    "413": _error("the body is larger than limits.max_body_bytes"),
    "422": _error(
        "invalid_field, the one code for a fault in a field (`field` names it, dotted): "
        "missing, unknown, of the wrong type, blank, longer than its maxLength, or holding "
        "what the decision log cannot carry -- a NUL (U+0000), a lone surrogate, in a value "
        "or a key, or a number beyond float range"
    ),
    "429": _error(
        "rate_limited: a rate limit (rate_limits) is reached; nothing was decided. "
        "Retry-After says when to try again"
    ),
    "503": _error(
        "the decision log or the engine failed (engine_unavailable), or the shared rate-limit "
        "store could not count a check of a tool that changes things (rate_limit_unavailable); "
        "nothing was decided"
    ),
}
_SECURE: list[dict[str, list[str]]] = [{"bearer": []}]
#: a turn opens (or continues) a session; a call check of that session follows it. OpenAPI
#: link objects, so a client generator -- and schemathesis's stateful phase -- can chain them
_TURN_LINKS = {
    "CheckACallOfThisSession": {
        "operationId": "checkCall",
        "description": "the turn's `session_id` is the session of the model's next tool call",
        "requestBody": {"session_id": "$response.body#/session_id"},
    }
}


def openapi() -> dict[str, Any]:
    """The API description (a fresh dict each call)."""
    return copy.deepcopy(_spec())


def _spec() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "maitred",
            "version": "1",
            "description": "What an LLM agent is offered each turn, and which tool calls it "
            "may make. Every decision is logged.",
        },
        "components": {
            "schemas": _SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": {
            "/v1/turns": {
                "post": {
                    "summary": "Route one message: the menu, the blocked skills, the turn id",
                    "security": _SECURE,
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("TurnRequest")}},
                    },
                    "operationId": "answerTurn",
                    "responses": {
                        "200": {
                            **_json(_ref("TurnResponse"), "the turn"),
                            "links": _TURN_LINKS,
                        },
                        "403": _error("the account is not one of the tenant's"),
                        "409": _error("the session belongs to another account"),
                        **_AUTH_ERRORS,
                        **_BODY_ERRORS,
                    },
                }
            },
            "/v1/calls/check": {
                "post": {
                    "summary": "Allow or reject one tool call of a session",
                    "operationId": "checkCall",
                    "security": _SECURE,
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("CheckRequest")}},
                    },
                    "responses": {
                        "200": _json(_ref("CheckResponse"), "the decision (allow or reject)"),
                        "404": _error("no such session for this tenant (or it expired)"),
                        **_AUTH_ERRORS,
                        **_BODY_ERRORS,
                    },
                }
            },
            "/v1/funnel": {
                "get": {
                    "summary": "The funnel of the tenant's turns in this server process",
                    "security": _SECURE,
                    "parameters": [
                        {
                            "name": "run_id",
                            "in": "query",
                            "required": False,
                            "schema": _STR,
                            "description": "an earlier run of this tenant (serve-<tenant>-...)",
                        }
                    ],
                    "responses": {
                        "200": _json(_ref("Funnel"), "the funnel"),
                        "404": _error("no decision log, or no such run of this tenant"),
                        **_AUTH_ERRORS,
                    },
                }
            },
            "/healthz": {
                "get": {
                    "summary": "The process is up",
                    "responses": {
                        "200": _json(
                            {"type": "object", "properties": {"status": {"const": "ok"}}}, "up"
                        )
                    },
                }
            },
            "/readyz": {
                "get": {
                    "summary": "Catalog loaded, decision log writable, state store reachable",
                    "responses": {
                        "200": _json(_ref("Ready"), "ready"),
                        "503": _json(_ref("Ready"), "not ready; `checks` says which part"),
                    },
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics",
                    "responses": {
                        "200": {
                            "description": "text exposition format",
                            "content": {"text/plain": {"schema": _STR}},
                        }
                    },
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "This description",
                    "responses": {"200": _json({"type": "object"}, "OpenAPI 3.1")},
                }
            },
        },
    }
