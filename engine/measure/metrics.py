"""Reading an engine's /metrics (Prometheus text exposition) into a ``Partial``: a linear
tokenizer for samples, then the metric names the engine's adapter lists (``data/measure.yaml``),
one reader for every engine's vocabulary."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.decision import Code, Decision, Name
from engine.engines import ENGINES, Engine, adapter
from engine.errors import InputError
from engine.measure.measure_data import MetricNames
from engine.measure.reading import (
    AT_METRICS,
    AT_METRICS_LABEL,
    AT_METRICS_LINE,
    AT_USED_OVER_USAGE,
    Partial,
)


def _prefixes() -> tuple[str, ...]:
    return tuple(adapter(e).measure.metrics.prefix for e in ENGINES)


# what /metrics text must be, and how a text fails to be it (data/i18n/<lang>/errors.yaml)
EXPECTED = Code("error.metrics.expected", "prefixes")
NONE = Code("error.metrics.none", "expected")
BOTH = Code("error.metrics.both", "prefixes")
GARBLED = Code("error.metrics.garbled", "line", "text")


def expected_metrics() -> Decision:
    return EXPECTED(prefixes=tuple(Name(f"{p}...") for p in _prefixes()))


# Possessive quantifiers only: each is matched at one position and never backtracks.
_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*+")
_LABEL_NAME = re.compile(r"[ \t]*+([A-Za-z_][A-Za-z0-9_]*+)[ \t]*+=[ \t]*+\"")
_LABEL_VALUE = re.compile(r'((?:[^"\\]++|\\.)*+)"[ \t]*+')
_TIMESTAMP = re.compile(r"-?\d{1,20}+")


@dataclass(frozen=True)
class Sample:
    """One sample line: metric name, labels, the value as printed, and its line number."""

    name: str
    labels: dict[str, str]
    value: str
    number: int

    def where(self, label: str | None = None) -> Decision:
        if label:
            return AT_METRICS_LABEL(line=self.number, metric=Name(self.name), label=Name(label))
        return AT_METRICS_LINE(line=self.number, metric=Name(self.name))


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def parse_sample(line: str, number: int = 0) -> Sample | None:
    """``name{label="v",...} value [timestamp]``, or None when the line is not one."""
    match = _NAME.match(line)
    if match is None:
        return None
    name, pos, size = match.group(), match.end(), len(line)
    labels: dict[str, str] = {}
    if pos < size and line[pos] == "{":
        pos += 1
        while True:
            while pos < size and line[pos] in " \t":
                pos += 1
            if pos < size and line[pos] == "}":
                pos += 1
                break
            label = _LABEL_NAME.match(line, pos)
            if label is None:
                return None
            value = _LABEL_VALUE.match(line, label.end())
            if value is None:
                return None
            labels[label.group(1)] = _unescape(value.group(1))
            pos = value.end()
            if pos < size and line[pos] == ",":
                pos += 1
            elif pos < size and line[pos] == "}":
                pos += 1
                break
            else:
                return None
    rest = line[pos:]
    if not rest[:1].isspace():
        return None
    fields = rest.split()
    if len(fields) not in (1, 2) or (len(fields) == 2 and not _TIMESTAMP.fullmatch(fields[1])):
        return None
    return Sample(name, labels, fields[0], number)


def _short(line: str, limit: int = 120) -> Name:
    return Name(repr(line if len(line) <= limit else line[: limit - 1] + "…"))


def engine_samples(text: str) -> list[Sample]:
    """Every sample in an engine's namespace (``vllm:``, ``sglang:``); other metrics are not
    parsed at all. An engine sample that does not parse means the text was cut off:
    ``InputError`` naming the line."""
    samples: list[Sample] = []
    prefixes = _prefixes()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line.startswith(prefixes):
            continue
        sample = parse_sample(line, number)
        if sample is None:
            raise InputError("metrics", GARBLED(line=number, text=_short(line)))
        samples.append(sample)
    return samples


def _named(samples: list[Sample], metric: MetricNames) -> list[Sample]:
    """The samples of the first name in ``metric.names`` that has any."""
    for name in metric.names:
        found = [s for s in samples if s.name == name]
        if found:
            return found
    return []


def _read_info(part: Partial, samples: list[Sample], engine: Engine) -> None:
    """The fields an info gauge carries in its labels."""
    info_spec = adapter(engine).measure.metrics.cache_info
    if info_spec is None:
        return
    info = next((s for s in samples if s.name == info_spec.name), None)
    if info is None:
        return
    for field_name, rule in info_spec.labels.items():
        raw = info.labels.get(rule.arg)
        # vLLM's CacheConfig.metrics_info() prints an unset option as "None".
        if raw is None or raw in ("None", "", *rule.ignore):
            continue
        where = info.where(rule.arg)
        value = part.read(raw, rule.kind, where, skip_bad=rule.on_bad == "skip", name=field_name)
        part.put(field_name, value, AT_METRICS(metric=Name(info.name)))


def _read_value(part: Partial, samples: list[Sample], field_name: str, metric: MetricNames) -> None:
    """One field from its first metric name that has samples: the first sample, or the
    largest one where each DP engine exports its own."""
    found = _named(samples, metric)
    if metric.pick == "first":
        found = found[:1]
    skip = metric.on_bad == "skip"
    read = [
        (s, part.read(s.value, metric.kind, s.where(), skip_bad=skip, name=field_name))
        for s in found
    ]
    values = [(s, v) for s, v in read if v is not None]
    if values:
        sample, value = max(values, key=lambda pair: float(pair[1]))
        part.put(field_name, value, AT_METRICS(metric=Name(sample.name)))


def parse_metrics(text: str) -> Partial:
    """/metrics text's KV pool numbers, with where each was read: the samples of the one engine
    whose namespace they are in, read by its vocabulary."""
    samples = engine_samples(text)
    engines = [
        e
        for e in ENGINES
        if any(s.name.startswith(adapter(e).measure.metrics.prefix) for s in samples)
    ]
    if not engines:
        raise InputError("metrics", NONE(expected=expected_metrics()))
    if len(engines) > 1:
        found = tuple(Name(adapter(e).measure.metrics.prefix) for e in engines)
        raise InputError("metrics", BOTH(prefixes=found))
    engine = engines[0]
    part = Partial(engine, "metrics")
    _read_info(part, samples, engine)
    for field_name, metric in adapter(engine).measure.metrics.values.items():
        _read_value(part, samples, field_name, metric)
    usage, used = part.values.get("usage_ratio"), part.values.get("used_tokens")
    if isinstance(usage, float) and isinstance(used, int) and usage > 0:
        # the pool's capacity where the engine exports only how full it is
        part.put("tokens_capacity", round(used / usage), AT_USED_OVER_USAGE())
    return part
