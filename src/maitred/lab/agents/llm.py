"""An LLM agent over any OpenAI-compatible chat-completions endpoint, with tool calling.

The loop: a system message (the domain's policy, in brief), a user message (the task's
instruction plus the identifiers the user would give: the arguments of the gold *reads*, and any
stated context such as a cancellation reason), then ``POST {base_url}/chat/completions`` with
the pack's tools until the model answers without tool calls or ``max_steps`` is reached. Tool
calls run through :meth:`GatedRegistry.openai_tool_messages`, so with gates on a rejected call
comes back to the model as its tool result (``rejected_by_policy``, the code and a message it can
re-plan with); with gates off the tool just runs. No SDK is imported.
"""

from __future__ import annotations

import json
import random
import urllib.error
import urllib.request
from typing import Any

from maitred.actions.wrap import GatedRegistry
from maitred.errors import ConfigError
from maitred.lab.agents.domains import Domain, EvalTask


def tool_schemas(domain: Domain) -> list[dict[str, Any]]:
    """OpenAI ``tools`` for every tool of the domain's policy, with the tools' own schemas."""
    out = []
    for name, tool in sorted(domain.make_gate().rulebook.tools.items()):
        kind = "changes data" if tool.mutates else "reads data"
        schema = dict(tool.schema or {"type": "object", "properties": {}})
        out.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": f"{tool.tool.description} ({kind})",
                    "parameters": schema,
                },
            }
        )
    return out


def user_message(task: EvalTask, read_tools: set[str]) -> str:
    """The instruction plus the identifiers a user would state (gold reads' arguments)."""
    facts: dict[str, Any] = {}
    for c in task.task.calls:
        if c["name"] in read_tools:
            facts.update(c["arguments"])
    facts.update(task.task.context)
    detail = "; ".join(f"{k}: {v}" for k, v in facts.items())
    return f"{task.task.instruction} ({detail})" if detail else task.task.instruction


class LLMAgent:
    """Tool-calling agent over ``{base_url}/chat/completions``.

    Args:
        domain: the evaluation domain (policy text and tools).
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        model: the model name the endpoint expects.
        api_key: sent as a bearer token when not empty.
        max_steps: model calls per task at most.
        timeout_s: per request.
    """

    name = "llm"

    def __init__(
        self,
        domain: Domain,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        max_steps: int = 24,
        timeout_s: float = 120.0,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"--base-url {base_url!r} must be an http(s) URL (…/v1)")
        self.domain, self.base_url, self.model = domain, base_url.rstrip("/"), model
        self.api_key, self.max_steps, self.timeout_s = api_key, max_steps, timeout_s
        self.tools = tool_schemas(domain)
        rulebook = domain.make_gate().rulebook
        self.read_tools = {n for n, t in rulebook.tools.items() if not t.mutates}

    def run(self, task: EvalTask, tools: GatedRegistry, rng: random.Random) -> None:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.domain.policy_text},
            {"role": "user", "content": user_message(task, self.read_tools)},
        ]
        for _ in range(self.max_steps):
            message = self._complete(messages, rng.randrange(2**31))
            calls = message.get("tool_calls") or []
            messages.append(
                {"role": "assistant", "content": message.get("content") or "", "tool_calls": calls}
                if calls
                else {"role": "assistant", "content": message.get("content") or ""}
            )
            if not calls:
                return
            messages.extend(tools.openai_tool_messages(calls))

    def _complete(self, messages: list[dict[str, Any]], seed: int) -> dict[str, Any]:
        body = {
            "model": self.model,
            "messages": messages,
            "tools": self.tools,
            "tool_choice": "auto",
            "temperature": 1.0,
            "seed": seed,
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        request = urllib.request.Request(url, json.dumps(body).encode(), headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                answer = json.loads(response.read())
            return dict(answer["choices"][0]["message"])
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise ConfigError(
                f"the model endpoint {url} failed: {exc}; check --base-url, --model and the "
                "API key (--api-key-env)"
            ) from exc
        except (KeyError, IndexError, TypeError, json.JSONDecodeError) as exc:
            raise ConfigError(
                f"the model endpoint {url} answered without choices[0].message ({exc!r}); is "
                "it an OpenAI-compatible chat-completions endpoint?"
            ) from exc
