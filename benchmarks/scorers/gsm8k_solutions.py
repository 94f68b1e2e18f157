"""GSM8K gold solutions as structured, re-renderable steps (the model behind ``make_gsm8k_step_set.py``).

A gold line ``Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.`` becomes pieces: free text
(``Janet sells ``), one :class:`Slot` per calculator annotation (the expression as written,
``16 - 3 - 4``, parsed into a :class:`Num` / :class:`Op` tree that keeps how each number and
operator was written; the text between it and the result, `` = ``; the written result ``9``) and
free text again (`` duck eggs a day.``). A slot renders back to its original text until its tree
or value is changed; then its written expression and result are re-rendered from the tree
(expressions: :mod:`gsm8k_expressions`).

The written expression of a slot is the longest one ending right before the ``=`` whose
value is the annotation's; where none reads, the text stays free text and the slot writes only its
result. An equation the text writes without an annotation (``99 + 5 = $104``) gets one first
(:func:`annotate_plain`). A gold solution is rejected (:class:`Unusable`, with the reason the
generator counts) when an annotation is outside the grammar or not exact, its written result is
another value, or no annotated calculation gives the final answer.

Each leaf of a slot is *linked* to where its value comes from: the latest earlier slot with that
value (``slot``), a number in the question (``question``), both (``ambiguous``) or neither
(``const``: 100 for a percentage, 60 minutes, 2 for a half). Changing a slot's value then changes
exactly the later leaves linked to it (:func:`propagate`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction

try:
    from scorers import gsm8k_expressions as ex
except ImportError:  # run as a script: benchmarks/scorers is on sys.path
    import gsm8k_expressions as ex  # type: ignore[no-redef]

# the expression layer, re-exported: the rewrites use this module as their one entry point
Node, Num, Op, Reject = ex.Node, ex.Num, ex.Op, ex.Reject
TEXT_NUMBER_RE, NUMBER = ex.TEXT_NUMBER_RE, ex.NUMBER
evaluate, fmt, leaves, map_leaves, number_value = (
    ex.evaluate,
    ex.fmt,
    ex.leaves,
    ex.map_leaves,
    ex.number_value,
)
parse_math, render, with_value = ex.parse_math, ex.render, ex.with_value


class Unusable(ValueError):
    """A gold solution the rewrites cannot model; ``str(error)`` is the reason counted in the summary."""


# --------------------------------------------------------------------------- gold solutions

ANNOTATION_RE = re.compile(r"<<([^<>=]*)=([^<>]*)>>")
_EQ_BEFORE_RE = re.compile(r"=\s*\$?\s*$")
_RESULT_RE = re.compile(rf"(\$?)(-?(?:{NUMBER}))")
_WORD_NUMBERS = {w: Fraction(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}  # fmt: skip
_WORD_NUMBERS |= {"twenty": Fraction(20), "thirty": Fraction(30), "forty": Fraction(40), "fifty": Fraction(50),
                  "hundred": Fraction(100), "dozen": Fraction(12), "half": Fraction(1, 2), "twice": Fraction(2)}  # fmt: skip
STOP_WORDS = set(
    "a an the and or per each every of to in for on at is are was were be so that which with from by than as "
    "this it he she they we you his her their its more less left total altogether all if but then times now "
    "will would can could has have had do does did after before over under into out up down off there here "
    "she's he's they're what how many much who when where why one two three four five six seven eight nine "
    "ten inside outside fewer older younger extra other different remaining apiece later earlier only just "
    "about already".split()
)


def unit_after(text: str) -> str:
    """The unit words right after a number in ``text`` (``' duck eggs a day.'`` → ``duck eggs``), or ''.

    One lower-case word, not a function word (``a``, ``per``, ``left``), or two when they read as a
    modifier and a plural noun (``duck eggs``, not ``pupils like``)."""
    words: list[str] = []
    for m in re.finditer(r"\s*([A-Za-z][A-Za-z'-]*|\S)", text[:60]):
        word = m.group(1)
        if len(words) == 2 or not word.isalpha() or not word.islower() or word in STOP_WORDS:
            break
        words.append(word)
    if len(words) == 2 and (words[0].endswith("s") or not words[1].endswith("s")):
        words.pop()
    return " ".join(words)


@dataclass
class Slot:
    """One annotated calculation of a gold line: ``lhs_text`` + ``eq`` + ``result_text`` as written.

    ``tree``: the written expression (the annotation's when the line writes only the result);
    ``lhs``: whether the text writes the expression; ``unit``: words after the result; ``links``:
    per leaf, ``(kind, slot)`` with kind slot/question/ambiguous/const (slot -1 when none)."""

    index: int
    line: int
    tree: Node
    value: Fraction
    lhs: bool
    lhs_text: str
    eq: str
    result_text: str
    unit: str = ""
    links: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class Gold:
    """A parsed GSM8K row: ``lines`` of pieces (``str`` free text or ``int`` slot index), its ``slots``,
    the final answer and the slot that computes it, and the question's numbers with their units."""

    row: int
    question: str
    lines: list[list[str | int]]
    slots: list[Slot]
    final: Fraction
    final_text: str
    final_slot: int
    question_numbers: Counter[Fraction]
    question_units: dict[Fraction, tuple[str, bool]]
    commas: bool


def question_quantities(question: str) -> tuple[Counter[Fraction], dict[Fraction, tuple[str, bool]]]:
    """The numbers of a question (digits and number words) and, where unique, ``(unit, dollar)`` of
    each (the unit: the one word after the number, ``16 eggs per day`` → ``eggs``)."""
    numbers: Counter[Fraction] = Counter()
    units: dict[Fraction, list[tuple[str, bool]]] = {}
    for m in TEXT_NUMBER_RE.finditer(question):
        value = number_value(m.group(2))
        numbers[value] += 1
        after = question[m.end() :]
        unit = "" if after.startswith("%") else " ".join(unit_after(after).split()[:1])
        units.setdefault(value, []).append((unit, bool(m.group(1))))
    for word in re.findall(r"[A-Za-z]+", question.lower()):
        if word in _WORD_NUMBERS:
            numbers[_WORD_NUMBERS[word]] += 1
    unique = {
        v: u[0] for v, u in units.items() if len(set(u)) == 1 and numbers[v] == 1 and (u[0][0] or u[0][1])
    }
    return numbers, unique


def _written_lhs(before: str, value: Fraction) -> tuple[Node, int] | None:
    """The written expression ending ``before`` (which ends just before ``=``) whose value is
    ``value``: its tree and its start, the longest one (``14 * 1/2 = 14 / 2 =`` gives ``14 / 2``)."""
    for m in re.finditer(r"(?<![\w.,$])[\d(.$-]", before):
        node = parse_math(before[m.start() :])
        if node is not None and evaluate(node) == value:
            return node, m.start()
    return None


def plain(node: Node) -> str:
    """``node`` in the calculator annotations' grammar: numbers as decimals, ``+ - * /``, parentheses."""
    if isinstance(node, Num):
        text = fmt(node.value)
        return f"({text})" if node.value < 0 else text
    left, right = plain(node.left), plain(node.right)
    if isinstance(node.left, Op) and ex.PREC[node.left.sym] < ex.PREC[node.sym]:
        left = f"({left})"
    if isinstance(node.right, Op) and (ex.PREC[node.right.sym] < ex.PREC[node.sym] or
                                       (ex.PREC[node.right.sym] == ex.PREC[node.sym] and node.sym in "-/")):  # fmt: skip
        right = f"({right})"
    return f"{left}{node.sym}{right}"


_PLAIN_EQ_RE = re.compile(rf"=\s*\$?\s*(?!<<)(-?(?:{NUMBER}))(?![\d%/]|[.,]\d)")


def annotate_plain(line: str) -> str:
    """``line`` with a calculator annotation added to each equation written without one
    (``99 + 5 = $104`` → ``99 + 5 = $<<99+5=104>>104``), when the written expression (at least one
    operator) evaluates exactly to the written result; other ``=`` are left alone."""
    out, cursor = [], 0
    for m in _PLAIN_EQ_RE.finditer(line):
        if line.rfind("<<", 0, m.start()) > line.rfind(">>", 0, m.start()):
            continue  # inside an annotation
        start = max(cursor, line.rfind(">>", 0, m.start()) + 2 if ">>" in line[: m.start()] else 0)
        number = m.group(1)
        value = number_value(number.lstrip("-")) * (-1 if number.startswith("-") else 1)
        found = _written_lhs(line[start : m.start()], value)
        if found is None or isinstance(found[0], Num):
            continue
        out.append(line[cursor : m.start(1)] + f"<<{plain(found[0])}={fmt(value)}>>")
        cursor = m.start(1)
    return "".join(out) + line[cursor:]


def parse_gold(row: int, question: str, answer: str) -> Gold:
    """Parse one GSM8K row into a :class:`Gold`, or raise :class:`Unusable` with the reason."""
    body, sep, final_text = answer.rpartition("####")
    final_text = final_text.strip().replace(",", "")
    if not sep or not re.fullmatch(r"-?\d+(\.\d+)?", final_text):
        raise Unusable("final answer not a number")
    lines: list[list[str | int]] = []
    slots: list[Slot] = []
    for raw in (annotate_plain(line.strip()) for line in body.strip().split("\n")):
        if not raw:
            continue
        pieces: list[str | int] = []
        cursor = 0
        for m in ANNOTATION_RE.finditer(raw):
            tree, result = parse_math(m.group(1)), parse_math(m.group(2))
            if tree is None or not isinstance(result, Num):
                raise Unusable("annotation outside the grammar")
            value = evaluate(tree)
            if value is None or value != result.value:
                raise Unusable("annotation result not exact")
            after = _RESULT_RE.match(raw, m.end())
            if (
                after is None
                or number_value(after.group(2).lstrip("-")) * (-1 if after.group(2)[0] == "-" else 1) != value
            ):
                raise Unusable("written result differs from annotation")
            before = raw[cursor : m.start()]
            eq_match = _EQ_BEFORE_RE.search(before)
            lhs_start, lhs = len(before), False
            found = _written_lhs(before[: eq_match.start()], value) if eq_match else None
            if found is not None and eq_match is not None:
                tree, lhs_start, lhs = found[0], found[1], True
            else:  # only the result is written (or an expression too odd to re-render: left as text)
                eq_match = re.search(r"$", before)
            assert eq_match is not None
            pieces.append(before[:lhs_start])
            slot = Slot(len(slots), len(lines), tree, value, lhs, before[lhs_start : eq_match.start()],
                        before[eq_match.start():] if lhs else "", after.group(0),
                        unit_after(raw[after.end():]))  # fmt: skip
            slots.append(slot)
            pieces.append(slot.index)
            cursor = after.end()
        pieces.append(raw[cursor:])
        lines.append(pieces)
    if not slots:
        raise Unusable("no annotated calculation")
    final = Fraction(final_text)
    finals = [s.index for s in slots if s.value == final]
    if not finals:
        raise Unusable("final answer computed by no annotation")
    numbers, units = question_quantities(question)
    gold = Gold(
        row,
        question,
        lines,
        slots,
        final,
        final_text,
        finals[-1],
        numbers,
        units,
        bool(re.search(r"\d,\d{3}", body)),
    )
    link(gold)
    return gold


def link(gold: Gold) -> None:
    """Set each slot's ``links``: where each of its leaves' values comes from (see the module doc)."""
    for slot in gold.slots:
        slot.links = []
        for leaf in leaves(slot.tree):
            earlier = [s.index for s in gold.slots[: slot.index] if s.value == leaf.value]
            in_question = leaf.value in gold.question_numbers
            if earlier:
                slot.links.append(("ambiguous" if in_question else "slot", earlier[-1]))
            else:
                slot.links.append(("question" if in_question else "const", -1))


def substitute_text(text: str, mapping: dict[Fraction, str]) -> str:
    """``text`` with every free-text number whose value is in ``mapping`` replaced (a ``$`` kept)."""
    if not mapping:
        return text
    return TEXT_NUMBER_RE.sub(lambda m: m.group(1) + mapping.get(number_value(m.group(2)), m.group(2)), text)


def propagate(
    gold: Gold, trees: dict[int, Node], forced: dict[int, Fraction]
) -> dict[int, tuple[Node, Fraction]]:
    """Every slot's (tree, value) after replacing some slots' trees (same leaf count) and forcing some
    values (a slip): leaves linked to a changed slot take its new value, each value is recomputed.

    Raises :class:`Reject` when a change reaches a leaf whose source is ambiguous, when a changed
    value was also a question number or another slot's value (free text could not be updated
    unambiguously), or when a new value is not a short decimal or turns negative."""
    out: dict[int, tuple[Node, Fraction]] = {}
    changed: set[int] = set()
    for slot in gold.slots:
        tree = trees.get(slot.index, slot.tree)
        change: dict[int, Num] = {}
        for i, ((kind, source), leaf) in enumerate(zip(slot.links, leaves(tree), strict=True)):
            if source in changed:
                if kind == "ambiguous":
                    raise Reject("a changed value reaches an ambiguous leaf")
                change[i] = with_value(leaf, out[source][1])
        tree = map_leaves(tree, change)
        value = forced[slot.index] if slot.index in forced else evaluate(tree)
        if value is None or (value < 0 <= slot.value):
            raise Reject("no value or a negative one")
        fmt(value)
        if value != slot.value:
            shared = sum(s.value == slot.value for s in gold.slots) > 1
            if shared or slot.value in gold.question_numbers:
                raise Reject("the changed value is not unique in the solution")
            changed.add(slot.index)
        out[slot.index] = (tree, value)
    return out
