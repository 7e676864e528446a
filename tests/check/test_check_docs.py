"""The README's rule table is the rule list itself, and every rule reads as documentation:
a summary, a rationale, sources named as the README names them."""

from __future__ import annotations

import re

from sse_tool.check import RULES
from sse_tool.check.report import rules_markdown
from sse_tool.check.rules import Severity

from ..support import ROOT

README = (ROOT / "README.md").read_text()


def test_the_readme_table_is_the_rule_list():
    start = README.index("<!-- the rules table:")
    start = README.index("\n", start) + 1
    end = README.index("<!-- end of the rules table -->")
    assert README[start:end] == rules_markdown()


def test_every_rule_has_a_family_id_a_summary_and_a_rationale():
    for rule in RULES.values():
        assert re.fullmatch(r"[a-z-]+\.[a-z0-9-]+", rule.id), rule.id
        assert rule.summary and rule.summary[0].islower() and not rule.summary.endswith(".")
        assert len(rule.rationale) > 80 and rule.rationale.endswith((".", ")"))
        assert isinstance(rule.severity, Severity)


def test_the_rules_that_say_a_stream_was_cut_are_errors():
    truncation = {r.id for r in RULES.values() if r.truncation}
    assert truncation == {"stream.no-events", "stream.no-terminal-event", "sse.missing-final-blank-line",
                          "ndjson.missing-final-newline", "json-array.unclosed", "eventstream.cut"}
    assert all(RULES[r].severity is Severity.ERROR for r in truncation)
