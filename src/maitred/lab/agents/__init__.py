"""The gated-agent evaluation (``maitred eval agent``): does putting gates in front of the tools
make an agent succeed more often, and where?

* :mod:`.domains` -- per pack: databases, tasks with expected final states, tools, violations;
* :mod:`.agents` -- scripted ``gold`` and ``reckless`` agents;
* :mod:`.llm` -- an agent over any OpenAI-compatible endpoint;
* :mod:`.stats` -- unbiased pass^k and paired-bootstrap intervals;
* :mod:`.run` -- trials with gates on and off, and the report.
"""

from maitred.lab.agents.agents import Agent, GoldAgent, RecklessAgent
from maitred.lab.agents.domains import DOMAINS, Domain, EvalTask, load_domain
from maitred.lab.agents.llm import LLMAgent
from maitred.lab.agents.run import EvalReport, TaskResult, evaluate_agent
from maitred.lab.agents.stats import Interval, paired_bootstrap, pass_hat_k

__all__ = [
    "DOMAINS",
    "Agent",
    "Domain",
    "EvalReport",
    "EvalTask",
    "GoldAgent",
    "Interval",
    "LLMAgent",
    "RecklessAgent",
    "TaskResult",
    "evaluate_agent",
    "load_domain",
    "paired_bootstrap",
    "pass_hat_k",
]
