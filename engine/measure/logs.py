"""Reading an engine's startup log into a ``Partial``: the lines each engine's adapter lists
(``data/measure.yaml``), each spotted by its marker and matched once right after it (linear in
the line); one reader for every engine's vocabulary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.decision import Code, Decimal, Decision, Name
from engine.engines import ENGINES, Engine, adapter
from engine.engines.measure_vocab import POOL_BYTES
from engine.errors import InputError
from engine.measure.input_guards import GIB
from engine.measure.measure_data import ArgRead, LogLine, measure_facts
from engine.measure.reading import (
    AT_LOG,
    AT_LOG_ARG,
    AT_LOG_GB,
    AT_LOG_GIB,
    LATER_KV_LINES,
    Partial,
    Value,
)

# what a startup log must show, and how a text fails to be one (data/i18n/<lang>/errors.yaml)
STARTUP_LOG = Code("error.log.startup", "lines")
ENGINE_LINE = Code("error.log.engine_line", "engine", "line")
LOG_NONE = Code("error.log.none", "expected")
LOG_BOTH = Code("error.log.both", "seen")
SEEN = Code("error.log.seen", "engine", "label")
TRUNCATED = Code("error.log.truncated", "line", "engine", "expected", "text")


def expected_log() -> Decision:
    """What a startup log must show: each engine's first capacity line."""
    return STARTUP_LOG(
        lines=tuple(
            ENGINE_LINE(
                engine=Name(adapter(e).label),
                line=Name(adapter(e).measure.capacity_lines[0].expected),
            )
            for e in ENGINES
        )
    )


def _short(line: str, limit: int = 120) -> Name:
    line = line.strip()
    return Name(repr(line if len(line) <= limit else line[: limit - 1] + "…"))


@dataclass(frozen=True)
class Hit:
    """One matched line: its number and the text of each named group (None: not present)."""

    number: int
    groups: dict[str, str | None]


# Matches kept per line kind: enough for every worker's line of a large deployment, while a
# log of nothing but matching lines cannot grow memory past a bound.
MAX_HITS = 1024


@dataclass
class LogScan:
    """The first matches of each log line (up to MAX_HITS), how many there were, and the
    marker lines that did not match."""

    hits: dict[str, list[Hit]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    broken: dict[str, tuple[int, str]] = field(default_factory=dict)

    def first(self, key: str) -> Hit | None:
        found = self.hits.get(key)
        return found[0] if found else None

    def all(self, key: str) -> list[Hit]:
        return self.hits.get(key, [])


def where(line: LogLine, hit: Hit) -> Decision:
    """How the evidence and errors name a line: ``log line N '<label>'``."""
    return AT_LOG(line=hit.number, label=Name(line.label))


def scan_log(text: str) -> LogScan:
    """Find every listed line. A cut-off copy of an essential line, with no whole copy
    elsewhere, means the log was truncated: ``InputError`` naming the line."""
    specs = _all_lines()
    scan = LogScan()
    for number, line in enumerate(text.splitlines(), start=1):
        for spec in specs:
            at = line.find(spec.marker)
            if at < 0:
                continue
            kept = scan.hits.get(spec.key, [])
            if len(kept) >= MAX_HITS:  # counted, not read again
                scan.counts[spec.key] += 1
                continue
            match = spec.regex.match(line, at + len(spec.marker))
            if match is None:
                scan.broken.setdefault(spec.key, (number, line))
            else:
                scan.counts[spec.key] = scan.counts.get(spec.key, 0) + 1
                scan.hits.setdefault(spec.key, kept).append(Hit(number, match.groupdict()))
    for spec in specs:
        if spec.essential and spec.key in scan.broken and spec.key not in scan.hits:
            number, line = scan.broken[spec.key]
            raise InputError(
                "log",
                TRUNCATED(
                    line=number,
                    engine=Name(adapter(spec.engine).label),
                    expected=Name(spec.expected),
                    text=_short(line),
                ),
            )
    return scan


def _all_lines() -> tuple[LogLine, ...]:
    return tuple(line for e in ENGINES for line in adapter(e).measure.log_lines)


def _detect(scan: LogScan) -> Engine:
    """The engine whose identifying lines the log has (exactly one)."""
    found = {
        e: [s for s in adapter(e).measure.log_lines if s.identifies_engine and s.key in scan.hits]
        for e in ENGINES
    }
    engines = [e for e in ENGINES if found[e]]
    if len(engines) > 1:
        seen = tuple(
            SEEN(engine=Name(adapter(e).label), label=Name(found[e][0].label)) for e in engines
        )
        raise InputError("log", LOG_BOTH(seen=seen))
    if not engines:
        raise InputError("log", LOG_NONE(expected=expected_log()))
    return engines[0]


def read_groups(part: Partial, spec: LogLine, hit: Hit) -> dict[str, Value]:
    """The named groups of one hit, each checked as its kind (launch-argument dumps are
    returned as text). A bad number stops, or is left out where the line says on_bad: skip."""
    out: dict[str, Value] = {}
    for name, kind in spec.fields.items():
        raw = hit.groups.get(name)
        if raw is None:
            continue
        if kind == "args":
            out[name] = raw
            continue
        value = part.read(raw, kind, where(spec, hit), skip_bad=spec.on_bad == "skip", name=name)
        if value is not None:
            out[name] = value
    return out


def arg_value(dump: str, name: str) -> str | None:
    """The value of ``name`` in a repr like ``{'a': 1, 'b': 'x'}`` or ``ServerArgs(a=1, b='x')``.

    Plain string scanning, no regex: every character is looked at a bounded number of times,
    so a dump of any length costs linear time.
    """
    start = 0
    size = len(dump)
    while True:
        at = dump.find(name, start)
        if at < 0:
            return None
        start = at + 1
        before = dump[at - 1] if at else ""
        if before.isalnum() or before == "_":
            continue  # the tail of a longer name
        pos = at + len(name)
        if before in ("'", '"'):
            if dump[pos : pos + 1] != before:
                continue
            pos += 1
        elif pos < size and (dump[pos].isalnum() or dump[pos] == "_"):
            continue  # the head of a longer name
        while pos < size and dump[pos] == " ":
            pos += 1
        if pos >= size or dump[pos] not in ":=":
            continue
        pos += 1
        while pos < size and dump[pos] == " ":
            pos += 1
        if pos < size and dump[pos] in ("'", '"'):
            end = dump.find(dump[pos], pos + 1)
            return dump[pos + 1 : end] if end >= 0 else None
        ends = [i for i in (dump.find(c, pos) for c in ",})") if i >= 0]
        return dump[pos : min(ends) if ends else size].strip()


def _put_args(part: Partial, hit: Hit, spec: LogLine, table: Mapping[str, ArgRead]) -> None:
    """Reading fields from the launch-arguments dump; a bad value is left out with a note."""
    dump = hit.groups.get("args") or ""
    why = where(spec, hit)
    for field_name, rule in table.items():
        raw = arg_value(dump, rule.arg)
        if raw is None or raw in rule.ignore or raw == "None":
            continue
        at = AT_LOG_ARG(line=hit.number, label=Name(spec.label), arg=Name(rule.arg))
        part.put(field_name, part.read(raw, rule.kind, at, skip_bad=True, name=field_name), why)


def _read_line(part: Partial, scan: LogScan, spec: LogLine) -> None:
    """One line's fields into the reading: its first hit (or the hit with the smallest
    ``spec.smallest``), the groups ``spec.sums`` names added up, the launch-arguments dump read
    by the engine's argument names."""
    hits = scan.all(spec.key)
    if not hits:
        return
    if any(kind == "args" for kind in spec.fields.values()):
        _put_args(part, hits[0], spec, adapter(part.engine).measure.launch_args)
        return
    every = spec.smallest is not None
    read = [(hit, read_groups(part, spec, hit)) for hit in (hits if every else hits[:1])]
    if spec.smallest is not None:
        smallest = spec.smallest
        read = [(hit, values) for hit, values in read if smallest in values]
        if not read:
            return
        read = [min(read, key=lambda pair: float(pair[1][smallest]))]
    hit, values = read[0]
    counted: dict[str, int] = {}
    for target, groups in spec.sums.items():
        parts = [values.pop(g) for g in groups if g in values]
        if parts:
            values[target] = sum(int(p) for p in parts)
            counted[target] = len(parts)
    for name, value in values.items():
        why = where(spec, hit)
        if name == POOL_BYTES and spec.pool_bytes is not None:
            step = measure_facts().agreement.printed_gib_step
            if spec.pool_bytes == "GiB":
                why = AT_LOG_GIB(line=hit.number, label=Name(spec.label), step=Decimal(step, 2))
            else:
                why = AT_LOG_GB(line=hit.number, label=Name(spec.label))
            # each printed number is off by up to half the printed step
            part.values["bytes_rounding"] = round(GIB * step / 2) * counted.get(name, 1)
        part.put(name, value, why)
    if spec.note_repeats and scan.counts.get(spec.key, 0) > 1:
        part.evidence.append(LATER_KV_LINES())


def parse_log(text: str) -> Partial:
    """A startup log's KV pool numbers, per TP rank, with where each was read: the lines of the
    engine that printed it, in its vocabulary's order, the first value of a field winning."""
    scan = scan_log(text)
    engine = _detect(scan)
    part = Partial(engine, "log")
    for spec in adapter(engine).measure.log_lines:
        _read_line(part, scan, spec)
    return part
