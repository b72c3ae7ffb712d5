"""Reading an engine's /metrics (Prometheus text exposition) into a ``Partial``: a linear
tokenizer for samples, then the metric names ``data/measure.yaml`` lists per engine."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.decision import Decision, Name
from engine.errors import InputError
from engine.measure.measure_data import MetricNames, ValueKind, measure_facts
from engine.measure.reading import (
    AT_METRICS,
    AT_METRICS_LABEL,
    AT_METRICS_LINE,
    AT_USED_OVER_USAGE,
    Partial,
)

EXPECTED_METRICS = (
    "Prometheus text from the engine's /metrics with 'vllm:...' or 'sglang:...' samples, e.g. "
    "'vllm:cache_config_info{block_size=\"16\",...} 1.0' or 'sglang:token_usage{...} 0.12'"
)
_PREFIXES = ("vllm:", "sglang:")
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


def _short(line: str, limit: int = 120) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."


def engine_samples(text: str) -> list[Sample]:
    """Every vllm:/sglang: sample; other metrics are not parsed at all. An engine sample that
    does not parse means the text was cut off: ``InputError`` naming the line."""
    samples: list[Sample] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line.startswith(_PREFIXES):
            continue
        sample = parse_sample(line, number)
        if sample is None:
            raise InputError(
                "metrics",
                f"line {number} is an engine sample cut off or garbled ({_short(line)!r}); "
                "expected 'name{label=\"v\",...} value'",
            )
        samples.append(sample)
    return samples


def _named(samples: list[Sample], metric: MetricNames) -> list[Sample]:
    """The samples of the first name in ``metric.names`` that has any."""
    for name in metric.names:
        found = [s for s in samples if s.name == name]
        if found:
            return found
    return []


def _parse_vllm(samples: list[Sample]) -> Partial:
    facts = measure_facts().metrics.vllm
    part = Partial("vllm", "metrics")
    info = next((s for s in samples if s.name == facts.cache_info.name), None)
    if info is not None:
        for field_name, rule in facts.cache_info.labels.items():
            raw = info.labels.get(rule.arg)
            # CacheConfig.metrics_info() prints an unset option as "None".
            if raw is None or raw in ("None", "", *rule.ignore):
                continue
            where = info.where(rule.arg)
            value = part.read(
                raw, rule.kind, where, skip_bad=rule.on_bad == "skip", name=field_name
            )
            part.put(field_name, value, AT_METRICS(metric=Name(info.name)))
    usage = _named(samples, facts.usage_ratio)
    ratios = [
        (s, part.read(s.value, "ratio", s.where(), skip_bad=True, name="usage_ratio"))
        for s in usage
    ]
    read = [(s, float(r)) for s, r in ratios if r is not None]
    if read:
        # One sample per DP engine; the fullest one is the one that preempts first.
        sample, ratio = max(read, key=lambda pair: pair[1])
        part.put("usage_ratio", ratio, AT_METRICS(metric=Name(sample.name)))
    return part


def _first_value(
    part: Partial, samples: list[Sample], metric: MetricNames, field_name: str, kind: ValueKind
) -> None:
    found = _named(samples, metric)
    if not found:
        return
    sample = found[0]
    skip = metric.on_bad == "skip"
    value = part.read(sample.value, kind, sample.where(), skip_bad=skip, name=field_name)
    part.put(field_name, value, AT_METRICS(metric=Name(sample.name)))


def _parse_sglang(samples: list[Sample]) -> Partial:
    facts = measure_facts().metrics.sglang
    part = Partial("sglang", "metrics")
    _first_value(part, samples, facts.tokens_capacity, "tokens_capacity", "count")
    _first_value(part, samples, facts.usage_ratio, "usage_ratio", "ratio")
    _first_value(part, samples, facts.used_tokens, "used_tokens", "count")
    usage, used = part.values.get("usage_ratio"), part.values.get("used_tokens")
    if isinstance(usage, float) and isinstance(used, int) and usage > 0:
        part.put(
            "tokens_capacity",
            round(used / usage),
            AT_USED_OVER_USAGE(),
        )
    return part


def parse_metrics(text: str) -> Partial:
    """/metrics text's KV pool numbers, with where each was read."""
    samples = engine_samples(text)
    engines = sorted({s.name.split(":", 1)[0] for s in samples})
    if not engines:
        raise InputError("metrics", f"{EXPECTED_METRICS}; found none")
    if len(engines) > 1:
        raise InputError("metrics", "one engine's /metrics; found both vllm: and sglang: samples")
    parsers = {"vllm": _parse_vllm, "sglang": _parse_sglang}  # each engine's metric names
    return parsers[engines[0]](samples)
