"""What a measured row's ``launch_flags`` say (data/perf/added.jsonl): the engine command as its
source or recipe states it, with the recipe's variables. Harness plumbing, not engine rules: the
speed model takes only what a plan could state too (``RowFlags``), read here from the row.

A row's ``launch_flags`` is one line: the launch command (``export`` lines before it), then, after
``;; recipe variables:``, the recipe's shell assignments that give its ``$VARIABLES`` their values,
``if [[ ... ]]; then ... else ... fi`` included (conditions on the run's ``$CONC``, ``$TP``,
``$ISL``, ``$OSL``, ``$EP_SIZE``). The recipe text is condensed: an ``elif`` line may be missing,
so an ``if`` can stay open; a variable assigned twice in one branch of such an open ``if`` marks
where the lost branch began, and what follows it is not read. A value the text does not settle is
None (the engine's default then).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

VARIABLES = ";; recipe variables:"
OPTIONS = ";; extra options file:"
_COND = re.compile(
    r'"?\$\{?(\w+)(?::-([\w.]+))?\}?"?\s*(-eq|-ne|-ge|-gt|-le|-lt|==|!=)\s*"?([\w.]+)"?'
)
_ASSIGN = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")
_OPS = {
    "-eq": lambda a, b: a == b, "-ne": lambda a, b: a != b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b, "-ge": lambda a, b: a >= b, "-gt": lambda a, b: a > b,
    "-le": lambda a, b: a <= b, "-lt": lambda a, b: a < b,
}  # fmt: skip


def _value(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _holds(cond: str, env: dict[str, str]) -> bool | None:
    """An ``[[ ... ]]`` condition (``&&`` / ``||`` of comparisons) on the run's variables; None
    when it names a variable the run does not give."""
    result: bool | None = None
    joiner = "&&"
    for part in re.split(r"\s*(&&|\|\|)\s*", cond):
        if part in ("&&", "||"):
            joiner = part
            continue
        m = _COND.search(part)
        if m is None:
            return None
        name, default, op, right = m.groups()
        left = env.get(name, default)
        if left is None:
            return None
        this = bool(_OPS[op](_value(left), _value(right)))
        result = this if result is None else (result and this if joiner == "&&" else result or this)
    return result


def _statements(text: str) -> list[str]:
    """The recipe text as statements: ``if [[ c ]]; then``, ``else``, ``fi``, ``VAR=value``."""
    out: list[str] = []
    rest = text.strip()
    while rest:
        m = re.match(r"(el)?if\s+\[\[?\s*(.*?)\s*\]\]?\s*;\s*then\s*", rest)
        if m:
            out.append(("elif " if m.group(1) else "if ") + m.group(2))
            rest = rest[m.end() :]
            continue
        word = rest.split(maxsplit=1)
        head = word[0]
        if head in ("else", "fi"):
            out.append(head)
            rest = word[1] if len(word) > 1 else ""
            continue
        m = re.match(r'([A-Z_][A-Z0-9_]*)=("[^"]*"|\S*)\s*', rest)
        if m is None:
            rest = word[1] if len(word) > 1 else ""  # a word this reader does not evaluate
            continue
        out.append(f"{m.group(1)}={m.group(2).strip(chr(34))}")
        rest = rest[m.end() :]
    return out


def recipe_values(text: str, env: dict[str, str]) -> dict[str, str]:
    """The recipe variables' values for the run ``env`` (bash's last assignment wins; see the
    module docstring for an ``if`` the condensed text leaves open)."""
    values: dict[str, str] = {}
    # each open if: (taking its current branch, a branch already taken, names set in it)
    stack: list[tuple[bool, bool, set[str]]] = []
    for st in _statements(text):
        live = all(taking for taking, _, _ in stack)
        if st.startswith(("if ", "elif ")):
            cond = _holds(st.split(" ", 1)[1], env)
            if st.startswith("if "):
                stack.append((bool(cond), bool(cond), set()))
            elif stack:
                _, taken, _ = stack[-1]
                now = bool(cond) and not taken
                stack[-1] = (now, taken or now, set())
        elif st == "else":
            if stack:
                _, taken, _ = stack[-1]
                stack[-1] = (not taken, True, set())
        elif st == "fi":
            if stack:
                stack.pop()
        elif live:
            name, value = st.split("=", 1)
            if stack and name in stack[-1][2]:
                stack[-1] = (False, True, stack[-1][2])  # a lost elif / else began here
                continue
            if stack:
                stack[-1][2].add(name)
            values[name] = value
    return values


def _resolve(word: str, values: dict[str, str], env: dict[str, str]) -> str | None:
    if "$" not in word:
        return word
    m = re.fullmatch(r'"?\$\{?(\w+)\}?"?', word)
    if m is None:
        return None
    return values.get(m.group(1), env.get(m.group(1)))


@dataclass(frozen=True)
class RowFlags:
    """What the launch command sets that a plan could state too (None: not set, or not settled
    by the text: the engine's default)."""

    kv_dtype: str | None = None  # --kv-cache-dtype
    chunk: int | None = None  # SGLang --chunked-prefill-size, vLLM --max-num-batched-tokens
    max_running: int | None = None  # SGLang --max-running-requests, vLLM --max-num-seqs
    recv_interval: int | None = None  # SGLang --scheduler-recv-interval
    memory_fraction: float | None = None  # --mem-fraction-static / --gpu-memory-utilization
    eager: bool = False  # vLLM --enforce-eager, SGLang --disable-cuda-graph
    env: tuple[tuple[str, str], ...] = ()  # the variables the launch exports

    def aiter(self, engine: str) -> bool:
        """Whether the launch leaves the engine's AITER kernels on (ROCm): SGLang's
        SGLANG_USE_AITER unless set to 0 (its ROCm images export 1), vLLM's only where
        VLLM_ROCM_USE_AITER=1 is exported (off by default, vllm/envs.py)."""
        env = dict(self.env)
        if engine == "sglang":
            return env.get("SGLANG_USE_AITER", "1") not in ("0", "false", "False")
        return env.get("VLLM_ROCM_USE_AITER", "0") in ("1", "true", "True")


FLAGS = {
    "--kv-cache-dtype": "kv_dtype",
    "--chunked-prefill-size": "chunk",
    "--max-num-batched-tokens": "chunk",
    "--max-running-requests": "max_running",
    "--max-num-seqs": "max_running",
    "--scheduler-recv-interval": "recv_interval",
    "--mem-fraction-static": "memory_fraction",
    "--gpu-memory-utilization": "memory_fraction",
}
EAGER = ("--enforce-eager", "--disable-cuda-graph")


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def row_flags(row: dict[str, Any]) -> RowFlags:
    """The ``RowFlags`` of a measured row, its recipe variables evaluated at the row's own
    concurrency, TP, ISL, OSL and EP size."""
    text = str(row.get("launch_flags") or "")
    command, _, rest = text.partition(VARIABLES)
    variables = rest.partition(OPTIONS)[0]
    env = {
        k.upper(): str(row[key])
        for k, key in (("conc", "concurrency"), ("tp", "tp"), ("isl", "isl"), ("osl", "osl"))
        if row.get(key) is not None
    }
    env["EP_SIZE"] = str(row.get("ep") or 1)
    values = recipe_values(variables, env)
    words = _words(command.split(";; ")[0])
    found: dict[str, Any] = {}
    eager = False
    exported = tuple((m.group(1), m.group(2).rstrip(";")) for m in map(_ASSIGN.match, words) if m)
    for i, word in enumerate(words):
        name, eq, inline = word.partition("=")
        if name in EAGER:
            eager = True
        field = FLAGS.get(name)
        if field is None or field in found:
            continue
        raw = inline if eq else (words[i + 1] if i + 1 < len(words) else None)
        value = _resolve(raw, values, env) if raw is not None else None
        if value is None:
            continue
        if field == "kv_dtype":
            found[field] = value
        elif field == "memory_fraction":
            number = _value(value)
            if isinstance(number, float) and 0 < number <= 1:
                found[field] = number
        elif value.lstrip("-").isdigit():
            found[field] = int(value)
    return RowFlags(eager=eager, env=exported, **found)
