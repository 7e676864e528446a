"""Findings as text: JSON Lines, SARIF 2.1.0, GitHub workflow commands, and a rich table.

Pure functions of findings (and the input's name); ``table`` draws on a console it is
given. SARIF locations carry the 1-based line and, for a plain stream, the byte offset (in
a recording the offset is the body's, which is not the file's, so only the line is given).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote

import orjson

from .. import __version__
from ..plural import count
from .rules import RULES, Finding, Rule, Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}
_GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def record(f: Finding, name: str) -> dict:
    """One finding as a JSON object (a line of ``--format json``)."""
    return {"file": name, "line": f.line, "offset": f.offset, "event": f.event,
            "severity": f.severity.label, "rule": f.rule.id, "message": f.message,
            "breaks": list(f.rule.breaks)}


_LABEL = {s: s.label for s in Severity}


def json_lines(findings: list[Finding], name: str) -> bytes:
    """Findings as ``--format json`` writes them: the ``record`` of each, one a line (its
    fields read once each: a stream may give one finding an event)."""
    dumps = orjson.dumps
    return b"".join([dumps({"file": name, "line": line, "offset": offset, "event": event,
                            "severity": _LABEL[rule.severity], "rule": rule.id, "message": message,
                            "breaks": list(rule.breaks)}) + b"\n"
                     for rule, offset, event, message, line in findings])


def rule_record(r: Rule) -> dict:
    return {"rule": r.id, "severity": r.severity.label, "summary": r.summary, "rationale": r.rationale,
            "breaks": list(r.breaks), "truncation": r.truncation}


def github(f: Finding, name: str) -> str:
    """One finding as a GitHub Actions workflow command (an annotation)."""
    props = f"file={_escape_property(name)}"
    if f.line:
        props += f",line={f.line}"
    props += f",title={_escape_property(f.rule.id)}"
    text = f"{f.message} [{f.rule.summary}; event {f.event}, byte {f.offset}]" if f.event is not None else f.message
    return f"::{_GITHUB_COMMAND[f.severity]} {props}::{_escape_data(text)}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def sarif(results: Iterable[tuple[str, Finding, bool]]) -> dict:
    """A SARIF 2.1.0 log of one run; ``results`` are (input name, finding, whether the
    name is a file of a plain stream, whose byte offsets are the file's)."""
    rules = list(RULES.values())
    index = {r.id: i for i, r in enumerate(rules)}
    out = []
    for name, f, plain in results:
        region: dict = {}
        if f.line:
            region["startLine"] = f.line
        if plain:
            region["byteOffset"] = f.offset
        location = {"physicalLocation": {"artifactLocation": {"uri": _uri(name)}}}
        if region:
            location["physicalLocation"]["region"] = region
        result = {"ruleId": f.rule.id, "ruleIndex": index[f.rule.id], "level": _SARIF_LEVEL[f.severity],
                  "message": {"text": f.message}, "locations": [location],
                  "properties": {"offset": f.offset}}
        if f.event is not None:
            result["properties"]["event"] = f.event
        out.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "sse-tool check",
                "version": __version__,
                "rules": [_descriptor(r) for r in rules],
            }},
            "results": out,
        }],
    }


def _descriptor(r: Rule) -> dict:
    text = r.rationale + (" Breaks: " + "; ".join(r.breaks) + "." if r.breaks else "")
    return {
        "id": r.id,
        "name": "".join(part.capitalize() for part in r.id.replace(".", "-").split("-")),
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": text},
        "help": {"text": text},
        "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
        "properties": {"breaks": list(r.breaks), "truncation": r.truncation},
    }


def _uri(name: str) -> str:
    """A relative URI reference for an input name ("stdin" for standard input)."""
    if name == "<stdin>":
        return "stdin"
    uri = quote(name.replace("\\", "/"), safe="/:@!$&'()*+,;=-._~")
    # a colon in the first segment would read as a scheme (x:y.sse, C:/...): RFC 3986 4.2
    first = uri.split("/", 1)[0]
    return "./" + uri if ":" in first and not uri.startswith("/") else uri


_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.NOTE: "cyan"}


def counts(tally: dict) -> str:
    """``2 errors, 1 warning`` (or ``no findings``) from a count per severity."""
    parts = [count(n, s.label) for s, n in sorted(tally.items(), reverse=True) if n]
    return ", ".join(parts) or "no findings"


def table(console, name: str, findings: list[Finding], about: str, tally: dict, left_out: int = 0) -> None:
    """Findings as a table for a person (rich), under a title naming the input and the
    count of findings per severity (``tally``, those not shown included)."""
    from rich.table import Table
    from rich.text import Text

    from ..render.controls import safe  # a stream's words are no commands for the terminal

    title = safe(f"{name}: {about}: {counts(tally)}")
    if left_out:
        title += f" ({left_out} not shown: --max-per-rule)"
    if not findings:
        console.print(Text(title), soft_wrap=True)
        return
    from rich import box

    grid = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    for column, justify in (("line", "right"), ("byte", "right"), ("event", "right"), ("severity", "left"),
                            ("rule", "left")):
        grid.add_column(column, justify=justify, no_wrap=True)
    grid.add_column("message", overflow="fold")
    for f in findings:
        grid.add_row(str(f.line or ""), str(f.offset), "" if f.event is None else str(f.event),
                     Text(f.severity.label, style=_STYLE[f.severity]), f.rule.id, safe(f.message))
    console.print(grid)


def rules_table(console) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    grid = Table(title=f"{len(RULES)} rules", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                 show_lines=True)
    grid.add_column("rule", no_wrap=True)
    grid.add_column("severity", no_wrap=True)
    grid.add_column("what", overflow="fold")
    for r in RULES.values():
        what = Text(r.summary + (" (truncation)" if r.truncation else ""), style="bold")
        what.append("\n" + r.rationale)
        if r.breaks:
            what.append("\nbreaks: " + "; ".join(r.breaks), style="italic")
        grid.add_row(r.id, Text(r.severity.label, style=_STYLE[r.severity]), what)
    console.print(grid)


def rules_markdown() -> str:
    """The rule list as a Markdown table (the README's)."""
    rows = ["| rule | severity | what, and why | breaks |", "|---|---|---|---|"]
    for r in RULES.values():
        what = f"**{r.summary}**" + (" (truncation)" if r.truncation else "") + ". " + r.rationale
        rows.append(f"| `{r.id}` | {r.severity.label} | {_md(what)} | {_md('; '.join(r.breaks))} |")
    return "\n".join(rows) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")
