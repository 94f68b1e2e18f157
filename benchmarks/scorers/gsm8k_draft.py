"""A GSM8K gold solution being rewritten (:class:`Draft`) and the helpers the rewrites share.

A draft holds each calculation's current (tree, value), the steps in order (gold lines and inserted
:class:`Extra` steps) and the final answer; :meth:`Draft.steps` renders it, marking each step's
equations as holding or not and the step as wrong or not (the label's definition: see
``make_gsm8k_step_set.py``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction

try:
    from scorers import gsm8k_solutions as gs
except ImportError:  # run as a script: benchmarks/scorers is on sys.path
    import gsm8k_solutions as gs  # type: ignore[no-redef]

Node, Num, Op = gs.Node, gs.Num, gs.Op

FINAL_TEMPLATES = (
    "The answer is {}.",
    "So the answer is {}.",
    "Therefore, the answer is {}.",
    "The final answer is {}.",
)
ANSWER_FORMS = {"line": 0.4, "fold": 0.25, "none": 0.35}
"""How rows give the final answer, with their shares: a last step ``The answer is n.`` (``line``), that
sentence at the end of the last step (``fold``), or nothing, the last step's last number being the
answer as in GSM8K's model-written solutions (``none``; a row whose last step does not end on its
answer falls back to ``line``)."""


@dataclass
class Extra:
    """An inserted step: ``text``, and the calculation it states (``tree`` = ``value``), if any."""

    text: str
    tree: Node | None = None
    value: Fraction | None = None


@dataclass
class Draft:
    """A solution being rewritten: each slot's (tree, value), the steps in order (gold line indices
    or :class:`Extra` steps), per-line slot trees shown instead of the original text, and the answer."""

    gold: gs.Gold
    slots: dict[int, tuple[Node, Fraction]]
    order: list[int | Extra]
    final: Fraction
    answer: str
    template: str
    restyled: set[int] = field(default_factory=set)
    verbs: dict[int, str] = field(default_factory=dict)

    @classmethod
    def of(cls, gold: gs.Gold, rng: random.Random) -> Draft:
        """The gold solution as a draft (answer form and sentence drawn from ``rng``)."""
        answer = rng.choices(list(ANSWER_FORMS), weights=list(ANSWER_FORMS.values()))[0]
        return cls(gold, {s.index: (s.tree, s.value) for s in gold.slots}, list(range(len(gold.lines))),
                   gold.final, answer, rng.choice(FINAL_TEMPLATES))  # fmt: skip

    def set_tree(self, slot: int, tree: Node) -> None:
        """Show ``slot`` as ``tree`` (same value; checked)."""
        value = self.slots[slot][1]
        if gs.evaluate(tree) != value:
            raise AssertionError(f"rewrite changed slot {slot}'s value")
        self.slots[slot] = (tree, value)
        self.restyled.add(slot)

    def changes(self) -> list[tuple[int, int, Fraction, str]]:
        """(line, slot, old value, new text) of every slot whose value differs from gold's."""
        return [(s.line, s.index, s.value, gs.fmt(self.slots[s.index][1], self.gold.commas))
                for s in self.gold.slots if self.slots[s.index][1] != s.value]  # fmt: skip

    def render_line(self, line: int) -> tuple[str, bool, bool]:
        """Line ``line``'s text, whether its equations hold, and whether it is wrong (see the module doc)."""
        gold, changes = self.gold, self.changes()
        parts, holds, wrong = [], True, False
        for pos, piece in enumerate(gold.lines[line]):
            if isinstance(piece, str):
                mapping = {old: new for (ln, sl, old, new) in changes
                           if ln < line or (ln == line and gold.lines[line].index(sl) < pos)}  # fmt: skip
                text = gs.substitute_text(piece, mapping)
                wrong |= text != piece
                parts.append(text)
                continue
            slot = gold.slots[piece]
            tree, value = self.slots[piece]
            holds &= gs.evaluate(tree) == value
            wrong |= value != slot.value or gs.evaluate(tree) != value
            if tree == slot.tree and value == slot.value and piece not in self.restyled:
                parts.append(slot.lhs_text + slot.eq + slot.result_text)
                continue
            result = "$" * slot.result_text.startswith("$") + gs.fmt(value, gold.commas)
            verb = self.verbs.get(piece, "=")
            lhs = f"{gs.render(tree, gold.commas)} {verb} " + "$" * ("$" in slot.eq) if slot.lhs else ""
            parts.append(lhs + result)
        return " ".join("".join(parts).split()), holds, wrong

    def steps(self) -> list[tuple[str, bool, bool]]:
        """Every step as (text, equations hold, wrong), the final answer (:data:`ANSWER_FORMS`) included:
        the step that gives it is wrong when it is not gold's."""
        out = []
        for item in self.order:
            if isinstance(item, Extra):
                holds = item.tree is None or gs.evaluate(item.tree) == item.value
                out.append((item.text, holds, not holds))
            else:
                out.append(self.render_line(item))
        final = self.template.format(gs.fmt(self.final))
        wrong_final = self.final != self.gold.final
        numbers = gs.TEXT_NUMBER_RE.findall(out[-1][0]) if out else []
        ends_on_answer = bool(numbers) and gs.number_value(numbers[-1][1]) == self.final
        if out and (self.answer == "fold" or (self.answer == "none" and ends_on_answer)):
            text, holds, wrong = out[-1]
            stop = "" if text[-1:] in ".!?" else "."
            out[-1] = (
                f"{text}{stop} {final}" if self.answer == "fold" else text,
                holds,
                wrong or wrong_final,
            )
        else:
            out.append((final, True, wrong_final))
        return out


def result_text(value: Fraction, dollar: bool, unit: str, commas: bool) -> str:
    """A written result: ``$18``, ``9 eggs``."""
    return "$" * dollar + gs.fmt(value, commas) + (f" {unit}" if unit else "")


def equation_step(
    tree: Node, value: Fraction, dollar: bool, unit: str, gold: gs.Gold, template: str
) -> Extra:
    """An inserted step stating ``tree = value`` through ``template`` (``{}`` = the equation)."""
    text = f"{gs.render(tree, gold.commas)} = {result_text(value, dollar, unit, gold.commas)}"
    return Extra(template.format(text), tree, value)


def slot_dollar(slot: gs.Slot) -> bool:
    """Whether a slot's result is written with ``$``."""
    return "$" in slot.eq or slot.result_text.startswith("$")


def source_unit(gold: gs.Gold, kind: str, source: int, value: Fraction) -> tuple[str, bool]:
    """(unit, dollar) a leaf inherits: from the slot that computed it, or from the question."""
    if kind == "slot":
        slot = gold.slots[source]
        return slot.unit, slot_dollar(slot)
    if kind == "question":
        return gold.question_units.get(value, ("", False))
    return "", False


def equation_slots(draft: Draft) -> list[gs.Slot]:
    """The slots whose text writes the expression (the ones a rewrite may re-render)."""
    return [s for s in draft.gold.slots if s.lhs]
