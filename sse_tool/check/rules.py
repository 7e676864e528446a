"""Rules and findings: the vocabulary of ``sse-tool check``.

A ``Rule`` is data: a stable id (``family.name``; never renamed, so CI configurations that
ignore one keep working), a severity, a one-line summary, a rationale and the widely used
clients it is known to break. Each family module declares its rules with ``rule(...)``,
which registers them in ``RULES`` (the order of registration is the order of listing).

Severity: ``error`` breaks the protocol; ``warning`` is legal but known to break named
clients; ``note`` is worth knowing. Rules marked ``truncation`` say that the input stopped
early: a stream cut anywhere gives at most those beyond the findings of the whole stream.

A ``Finding`` is one occurrence: the rule, the byte offset in the input (in the body, for a
recording), the index of the event it is in or before (0-based), the line (1-based,
counting LF) and one line saying what is wrong.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple


class Severity(IntEnum):
    NOTE = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()


class Rule(NamedTuple):
    id: str
    severity: Severity
    #: what is wrong, in a few words (the SARIF short description)
    summary: str
    #: why it matters, with the sources that show it
    rationale: str
    #: widely used clients it is known to break
    breaks: tuple[str, ...] = ()
    #: the input stopped early (a cut stream gives these and nothing new)
    truncation: bool = False

    def at(self, offset: int, event: int, message: str) -> Finding:
        return _new(Finding, (self, offset, event, message, 0))  # (a stream may give one an event)


_new = tuple.__new__  # builds a Finding without the keyword handling of its constructor


class Finding(NamedTuple):
    rule: Rule
    offset: int
    event: int
    message: str
    line: int = 0

    @property
    def severity(self) -> Severity:
        return self.rule.severity

    def key(self) -> tuple:
        """What identifies the finding whatever the chunking (its line is derived)."""
        return self.rule.id, self.offset, self.event, self.message


def key(value):
    """A payload value usable as a dict key or a set member (a JSON array or object, which
    a broken stream may send where a number or a string belongs, becomes its repr)."""
    return value if value is None or isinstance(value, (str, int, float)) else repr(value)


#: every rule, by id, in the order the families declare them
RULES: dict[str, Rule] = {}


def rule(id: str, severity: Severity, summary: str, rationale: str, breaks: tuple[str, ...] = (),
         truncation: bool = False) -> Rule:
    if id in RULES:
        raise ValueError(f"rule {id} declared twice")
    RULES[id] = made = Rule(id, severity, summary, " ".join(rationale.split()), breaks, truncation)
    return made


ERROR, WARNING, NOTE = Severity.ERROR, Severity.WARNING, Severity.NOTE
