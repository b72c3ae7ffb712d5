"""Reading a vLLM or SGLang startup log into a ``Partial``: the lines ``data/measure.yaml``
lists, each spotted by its marker and matched once right after it (linear in the line)."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.decision import Decimal, Decision, Name
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
from engine.software.tables import ENGINES, Engine

EXPECTED_LOG = (
    "a vLLM or SGLang startup log; expected a vLLM line 'GPU KV cache size: N tokens' "
    "(vllm/v1/core/kv_cache_utils.py) or an SGLang line 'KV Cache is allocated. #tokens: N, "
    "K size: a GB, V size: b GB' (python/sglang/srt/mem_cache/memory_pool.py)"
)


def _short(line: str, limit: int = 120) -> str:
    line = line.strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


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
    specs = measure_facts().log_lines
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
                f"line {number} starts {spec.engine}'s {spec.expected} but is cut off or "
                f"garbled ({_short(line)!r}); the log looks truncated",
            )
    return scan


def _detect(scan: LogScan) -> Engine:
    specs = measure_facts().log_lines
    engines = [
        e
        for e in ENGINES
        if any(s.key in scan.hits for s in specs if s.engine == e and s.identifies_engine)
    ]
    if len(engines) > 1:
        raise InputError(
            "log",
            "one engine's text; found both vLLM ('GPU KV cache size') and SGLang "
            "('KV Cache is allocated') lines",
        )
    if not engines:
        raise InputError("log", f"{EXPECTED_LOG}; found neither")
    return engines[0]


def read_groups(part: Partial, key: str, hit: Hit) -> dict[str, Value]:
    """The named groups of one hit, each checked as its kind (launch-argument dumps are
    returned as text). A bad number stops, or is left out where the line says on_bad: skip."""
    spec = measure_facts().log_line(key)
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


def _put_first(part: Partial, scan: LogScan, key: str) -> None:
    """Every group of the first ``key`` line into the reading under its own name."""
    hit = scan.first(key)
    if hit is None:
        return
    spec = measure_facts().log_line(key)
    for name, value in read_groups(part, key, hit).items():
        if spec.fields[name] != "args":
            part.put(name, value, where(spec, hit))


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


def _put_args(part: Partial, scan: LogScan, key: str, table: dict[str, ArgRead]) -> None:
    """Reading fields from the launch-arguments dump; a bad value is left out with a note."""
    hit = scan.first(key)
    if hit is None:
        return
    spec = measure_facts().log_line(key)
    dump = hit.groups.get("args") or ""
    why = where(spec, hit)
    for field_name, rule in table.items():
        raw = arg_value(dump, rule.arg)
        if raw is None or raw in rule.ignore or raw == "None":
            continue
        at = AT_LOG_ARG(line=hit.number, label=Name(spec.label), arg=Name(rule.arg))
        part.put(field_name, part.read(raw, rule.kind, at, skip_bad=True, name=field_name), why)


def _parse_vllm(scan: LogScan) -> Partial:
    facts = measure_facts()
    part = Partial("vllm", "log")
    _put_first(part, scan, "vllm_tokens")
    _put_first(part, scan, "vllm_concurrency")
    available = facts.log_line("vllm_available")
    sizes = [(hit, read_groups(part, available.key, hit)) for hit in scan.all(available.key)]
    read = [(hit, v["kv_bytes_available"]) for hit, v in sizes if "kv_bytes_available" in v]
    if read:
        # Every worker logs its own; vLLM sizes all ranks' pools to the smallest.
        hit, nbytes = min(read, key=lambda pair: pair[1])
        step = facts.agreement.printed_gib_step
        at = AT_LOG_GIB(line=hit.number, label=Name(available.label), step=Decimal(step, 2))
        part.put("kv_bytes_available", nbytes, at)
        part.values["bytes_rounding"] = round(GIB * step / 2)
    _put_first(part, scan, "vllm_hybrid_block")
    _put_first(part, scan, "vllm_cp")
    _put_args(part, scan, "vllm_args", facts.launch_args.vllm)
    return part


def _parse_sglang(scan: LogScan) -> Partial:
    facts = measure_facts()
    part = Partial("sglang", "log")
    kv_line = facts.log_line("sglang_kv")
    kv = scan.first(kv_line.key)
    if kv is not None:
        values = read_groups(part, kv_line.key, kv)
        why = where(kv_line, kv)
        part.put("tokens_capacity", values.get("tokens_capacity"), why)
        parts = [values[k] for k in ("kv_gib",) if k in values] or [
            values[k] for k in ("k_gib", "v_gib") if k in values
        ]
        gb = AT_LOG_GB(line=kv.number, label=Name(kv_line.label))
        part.put("kv_bytes_available", sum(int(p) for p in parts), gb)
        step = round(GIB * facts.agreement.printed_gib_step / 2)
        part.values["bytes_rounding"] = step * len(parts)
        part.put("cache_dtype", values.get("cache_dtype"), why)
        if scan.counts.get(kv_line.key, 0) > 1:
            part.evidence.append(LATER_KV_LINES())
    _put_first(part, scan, "sglang_max_total")
    mamba_line = facts.log_line("sglang_mamba")
    mamba = scan.first(mamba_line.key)
    if mamba is not None:
        values = read_groups(part, mamba_line.key, mamba)
        why = where(mamba_line, mamba)
        part.put("state_slots", values.get("state_slots"), why)
        part.put("state_bytes", int(values["conv_gib"]) + int(values["ssm_gib"]), why)
    _put_first(part, scan, "sglang_dtype")
    _put_args(part, scan, "sglang_args", facts.launch_args.sglang)
    return part


def parse_log(text: str) -> Partial:
    """A startup log's KV pool numbers, per TP rank, with where each was read."""
    scan = scan_log(text)
    parsers = {"vllm": _parse_vllm, "sglang": _parse_sglang}  # each engine's log lines
    return parsers[_detect(scan)](scan)
