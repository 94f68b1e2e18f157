"""The rewrites of ``make_gsm8k_step_set.py``: valid ones (label -1) and errors with a known first
wrong step, each a function ``(draft, rng) -> None`` that changes a :class:`gsm8k_draft.Draft` in place
or raises :class:`gsm8k_solutions.Reject` when it does not apply (registries :data:`VALID`,
:data:`ERRORS`). The kinds and the label rule are described in ``make_gsm8k_step_set.py``.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction

try:
    from scorers import gsm8k_solutions as gs
except ImportError:  # run as a script: benchmarks/scorers is on sys.path
    import gsm8k_solutions as gs  # type: ignore[no-redef]
try:
    from scorers import gsm8k_draft as gd
except ImportError:  # run as a script: benchmarks/scorers is on sys.path
    import gsm8k_draft as gd  # type: ignore[no-redef]

Node, Num, Op = gs.Node, gs.Num, gs.Op
Draft, Extra = gd.Draft, gd.Extra
equation_slots, equation_step, result_text = gd.equation_slots, gd.equation_step, gd.result_text
slot_dollar, source_unit = gd.slot_dollar, gd.source_unit


# --------------------------------------------------------------------------- valid rewrites


def valid_gold(draft: Draft, rng: random.Random) -> None:
    """The gold solution, annotations removed."""


def valid_units(draft: Draft, rng: random.Random) -> None:
    """Unit words and ``$`` on the numbers of the equations: ``16 eggs - 3 eggs - 4 eggs = 9``."""
    gold, changed = draft.gold, False
    for slot in equation_slots(draft):
        tree = draft.slots[slot.index][0]
        additive = all(not isinstance(n, Op) or n.sym in "+-" for n in _nodes(tree))
        change: dict[int, Num] = {}
        for i, ((kind, source), leaf) in enumerate(zip(slot.links, gs.leaves(tree), strict=True)):
            if leaf.unit or leaf.dollar or leaf.percent:
                continue
            unit, dollar = source_unit(gold, kind, source, leaf.value)
            if additive and not unit and not dollar:
                unit, dollar = slot.unit, slot_dollar(slot)
            if (unit and len(unit.split()) <= 2) or dollar:
                change[i] = replace(leaf, unit=unit if not dollar else "", dollar=dollar)
        if change:
            draft.set_tree(slot.index, gs.map_leaves(tree, change))
            changed = True
    if not changed:
        raise gs.Reject("no unit known for any number")


def _nodes(node: Node) -> list[Node]:
    return [node] if isinstance(node, Num) else [node, *_nodes(node.left), *_nodes(node.right)]


SPLIT_TEMPLATES = ("First, {}.", "{}.", "We compute {}.", "First we find {}.")


def valid_split(draft: Draft, rng: random.Random) -> None:
    """One calculation in two steps: a sub-expression first (``a - b - c``: ``b + c`` first)."""
    gold, options = draft.gold, []
    for slot in equation_slots(draft):
        tree = draft.slots[slot.index][0]
        if not isinstance(tree, Op):
            continue
        if tree.sym == "-" and isinstance(tree.left, Op) and tree.left.sym == "-" and not tree.left.paren:
            sub = Op("+", tree.left.right, tree.right)
            options.append((slot, sub, lambda n, t=tree: Op("-", t.left.left, n, t.shown)))
        for side in ("left", "right"):
            child = getattr(tree, side)
            if isinstance(child, Op):
                options.append(
                    (slot, replace(child, paren=False), lambda n, t=tree, s=side: replace(t, **{s: n}))
                )
    rng.shuffle(options)
    for slot, sub, rebuild in options:
        value = gs.evaluate(sub)
        if value is None or value < 0:
            continue
        subleaves = gs.leaves(sub)
        dollar = all(x.dollar for x in subleaves) and sub.sym in "+-"
        units = {x.unit for x in subleaves}
        unit = units.pop() if len(units) == 1 and sub.sym in "+-" else ""
        try:
            step = equation_step(sub, value, dollar, unit, gold, rng.choice(SPLIT_TEMPLATES))
        except gs.Reject:
            continue
        draft.set_tree(slot.index, rebuild(Num(value, "", dollar, unit)))
        draft.order.insert(draft.order.index(slot.line), step)
        return
    raise gs.Reject("no compound calculation")


def valid_merge(draft: Draft, rng: random.Random) -> None:
    """Two consecutive steps in one: the first calculation in parentheses inside the second."""
    gold, options = draft.gold, []
    for first in equation_slots(draft):
        line_slots = [p for p in gold.lines[first.line] if isinstance(p, int)]
        users = [(s, i) for s in gold.slots for i, link in enumerate(s.links) if link[1] == first.index]
        if (line_slots != [first.index] or len(users) != 1 or first.index == gold.final_slot
                or not isinstance(draft.slots[first.index][0], Op) or first.value in gold.question_numbers):  # fmt: skip
            continue
        second, leaf = users[0]
        later_text = [p for ln in gold.lines[first.line + 1 :] for p in ln if isinstance(p, str)]
        if second.line != first.line + 1 or not second.lhs or second.links[leaf][0] != "slot":
            continue
        if any(gs.substitute_text(t, {first.value: "#"}) != t for t in later_text):
            continue
        options.append((first, second, leaf))
    if not options:
        raise gs.Reject("no step used once by the next")
    first, second, leaf = rng.choice(options)
    inner = replace(draft.slots[first.index][0], paren=True)
    draft.set_tree(second.index, gs.map_leaves(draft.slots[second.index][0], {leaf: inner}))
    draft.order.remove(first.line)


CONNECTIVES = ("so", "then", "therefore", "thus", "this", "that", "these", "in total", "altogether", "total",
               "now", "hence", "finally", "after", "combined", "together", "all", "overall")  # fmt: skip


def valid_reorder(draft: Draft, rng: random.Random) -> None:
    """Two consecutive independent steps swapped (neither uses the other's values)."""
    gold, options = draft.gold, []
    for line in range(len(gold.lines) - 1):
        mine = [p for p in gold.lines[line] if isinstance(p, int)]
        nxt = [p for p in gold.lines[line + 1] if isinstance(p, int)]
        if not mine or not nxt:
            continue
        values = {gold.slots[i].value: "#" for i in mine}
        uses = any(link[1] in mine for i in nxt for link in gold.slots[i].links)
        text = [p for p in gold.lines[line + 1] if isinstance(p, str)]
        mentions = any(gs.substitute_text(t, values) != t for t in text)
        opening = "".join(text[:1]).lower()
        if not uses and not mentions and not opening.startswith(CONNECTIVES):
            options.append(line)
    if not options:
        raise gs.Reject("no independent consecutive steps")
    line = rng.choice(options)
    at = draft.order.index(line)
    draft.order[at], draft.order[at + 1] = draft.order[at + 1], draft.order[at]


def _routes(tree: Node) -> list[tuple[str, Node]]:
    """Other expressions of the same value at the root of ``tree``: (name, tree)."""
    if not isinstance(tree, Op):
        return []
    out: list[tuple[str, Node]] = []
    a, b = tree.left, tree.right
    if tree.sym == "*" and isinstance(b, Op) and b.sym in "+-":
        out.append(("distribute", Op(b.sym, Op("*", a, b.left, tree.shown), Op("*", a, b.right, tree.shown))))
    if tree.sym == "*" and isinstance(a, Op) and a.sym in "+-":
        out.append(("distribute", Op(a.sym, Op("*", a.left, b, tree.shown), Op("*", a.right, b, tree.shown))))
    if (tree.sym in "+-" and isinstance(a, Op) and isinstance(b, Op) and a.sym == b.sym == "*"
            and isinstance(a.left, Num) and isinstance(b.left, Num) and a.left.value == b.left.value):  # fmt: skip
        out.append(("factor", Op("*", a.left, Op(tree.sym, a.right, b.right, paren=True), a.shown)))
    if tree.sym == "-" and isinstance(a, Op) and a.sym == "-" and not a.paren:
        out.append(("regroup", Op("-", a.left, Op("+", a.right, b, paren=True), tree.shown)))
    if tree.sym in "+*":
        out.append(("commute", replace(tree, left=replace(b, paren=False), right=replace(a, paren=False))))
    return out


def valid_route(draft: Draft, rng: random.Random) -> None:
    """Another route to the same value in one calculation (distributed, factored, regrouped, or swapped)."""
    options = [(s, r) for s in equation_slots(draft) for r in _routes(draft.slots[s.index][0])]
    if not options:
        raise gs.Reject("no other route")
    better = [o for o in options if o[1][0] != "commute"]
    slot, (_, tree) = rng.choice(better or options)
    draft.set_tree(slot.index, tree)


RESTATE_TEMPLATES = ("So we have {}.", "That gives {}.", "So there are {} in all.", "This means {}.")
GIVEN_TEMPLATES = ("We are given {}.", "The problem says {}.", "We start with {}.")


def valid_restate(draft: Draft, rng: random.Random) -> None:
    """A step restating a value: a computed one after its step, or a question quantity at the start."""
    gold, options = draft.gold, []
    for slot in gold.slots:
        if slot.unit and not slot_dollar(slot):
            text = rng.choice(RESTATE_TEMPLATES).format(
                result_text(slot.value, False, slot.unit, gold.commas)
            )
            options.append((draft.order.index(slot.line) + 1, Extra(text)))
        elif slot_dollar(slot):
            options.append(
                (
                    draft.order.index(slot.line) + 1,
                    Extra(f"That is {result_text(slot.value, True, '', gold.commas)}."),
                )
            )
    first_leaves = [
        (k, leaf) for k, leaf in zip(gold.slots[0].links, gs.leaves(gold.slots[0].tree), strict=True)
    ]
    for (kind, _), leaf in first_leaves:
        unit, dollar = gold.question_units.get(leaf.value, ("", False)) if kind == "question" else ("", False)
        if unit and not dollar:
            text = rng.choice(GIVEN_TEMPLATES).format(result_text(leaf.value, False, unit, gold.commas))
            options.append((0, Extra(text)))
    if not options:
        raise gs.Reject("no value with a unit")
    at, step = rng.choice(options)
    draft.order.insert(at, step)


def valid_times_one(draft: Draft, rng: random.Random) -> None:
    """A question quantity times or over 1, stated before the step that uses it: ``16 eggs x 1 = 16 eggs``."""
    gold, options = draft.gold, []
    for slot in equation_slots(draft):
        for (kind, _), leaf in zip(slot.links, gs.leaves(slot.tree), strict=True):
            unit, dollar = (
                gold.question_units.get(leaf.value, ("", False)) if kind == "question" else ("", False)
            )
            if unit or dollar:
                options.append((slot, leaf.value, unit, dollar))
    if not options:
        raise gs.Reject("no question quantity with a unit")
    slot, value, unit, dollar = rng.choice(options)
    sym, shown = rng.choice([("*", "x"), ("*", "×"), ("*", "*"), ("/", "/")])
    tree = Op(sym, Num(value, "", dollar, unit), Num(Fraction(1), "1"), shown)
    step = equation_step(tree, value, dollar, unit, gold, "{}.")
    draft.order.insert(draft.order.index(slot.line), step)


def valid_operators(draft: Draft, rng: random.Random) -> None:
    """``x`` / ``×`` / ``*`` for multiplication and ``÷`` / ``/`` for division, one choice per solution."""
    times, over = rng.choice(["x", "×", "*"]), rng.choice(["÷", "/"])
    changed = False
    for slot in equation_slots(draft):
        tree = _reshow(draft.slots[slot.index][0], times, over)
        if tree != draft.slots[slot.index][0]:
            draft.set_tree(slot.index, tree)
            changed = True
    if not changed:
        raise gs.Reject("no operator to show otherwise")


def _reshow(node: Node, times: str, over: str) -> Node:
    if isinstance(node, Num):
        return node
    shown = {"*": times, "/": over}.get(node.sym, node.shown)
    return replace(
        node, shown=shown, left=_reshow(node.left, times, over), right=_reshow(node.right, times, over)
    )


def valid_percent(draft: Draft, rng: random.Random) -> None:
    """A percentage of a quantity written as such: ``20% of 80 = 16`` (the question states 20%)."""
    gold, options = draft.gold, []
    percents = {gs.number_value(m.group(2)) for m in gs.TEXT_NUMBER_RE.finditer(gold.question)
                if gold.question[m.end() : m.end() + 1] == "%"}  # fmt: skip
    for slot in equation_slots(draft):
        values = [leaf.value for leaf in gs.leaves(slot.tree)]
        for p in percents:
            for i, base in enumerate(values):
                rest = Counter(values[:i] + values[i + 1 :])
                if (
                    p * base / 100 == slot.value
                    and set(rest) <= {p, Fraction(100), p / 100}
                    and sum(rest.values()) <= 2
                ):
                    options.append((slot, p, gs.leaves(slot.tree)[i]))
    if not options:
        raise gs.Reject("no percentage of a quantity")
    slot, p, base = rng.choice(options)
    draft.set_tree(
        slot.index, Op("*", Num(p / 100, gs.fmt(p) + "%", percent=True), replace(base, paren=False), "of")
    )


def valid_words(draft: Draft, rng: random.Random) -> None:
    """A halving, third, quarter or doubling in words, ``=`` sometimes as ``is``: ``half of 30 is 15``."""
    changed = False
    for slot in equation_slots(draft):
        tree = draft.slots[slot.index][0]
        if isinstance(tree, Op) and gs.render(replace(tree, shown="words")) != gs.render(
            replace(tree, shown="")
        ):
            draft.set_tree(slot.index, replace(tree, shown="words", paren=False))
            draft.verbs[slot.index] = rng.choice(["=", "is"])
            changed = True
    if not changed:
        raise gs.Reject("no halving or doubling")


# --------------------------------------------------------------------------- errors


def _apply(draft: Draft, trees: dict[int, Node], forced: dict[int, Fraction], left_out: int = -1) -> None:
    """Change slots (:func:`gsm8k_solutions.propagate`) unless the first wrong value is one the gold
    solution or the question also has (then the error would not be one: ``3 + 3`` → ``4 + 3 = 7`` where
    a later gold step computes 7). ``left_out``: a slot whose step is removed (not a written value)."""
    gold = draft.gold
    slots = gs.propagate(gold, {**{i: tree for i, (tree, _) in draft.slots.items()}, **trees}, forced)
    first = next((s for s in gold.slots if slots[s.index][1] != s.value and s.index != left_out), None)
    known = {s.value for s in gold.slots} | set(gold.question_numbers)
    if first is None or slots[first.index][1] in known:
        raise gs.Reject("the wrong value is also a value of the gold solution or the question")
    draft.slots = slots
    draft.final = slots[gold.final_slot][1]


def _slip(value: Fraction, rng: random.Random) -> Fraction:
    """A plausible wrong result near ``value``: off by 1, 2 or 10, times or over 10, two digits swapped."""
    options = [value + d for d in (1, -1, 2, -2, 10, -10)] + [value * 10, value / 10]
    digits = gs.fmt(value)
    swaps = [digits[:i] + digits[i + 1] + digits[i] + digits[i + 2 :] for i in range(len(digits) - 1)
             if digits[i].isdigit() and digits[i + 1].isdigit() and digits[i] != digits[i + 1]]  # fmt: skip
    options += [Fraction(s) for s in swaps if not s.startswith("0")]
    options = [v for v in options if v != value and v > 0 and (v * 100).denominator == 1]
    if not options:
        raise gs.Reject("no slip")
    return rng.choice(options)


def error_slip(draft: Draft, rng: random.Random) -> None:
    """A calculation's result is off; later steps use the wrong result, their arithmetic right."""
    slot = rng.choice(equation_slots(draft) or [None])
    if slot is None:
        raise gs.Reject("no written calculation")
    _apply(draft, {}, {slot.index: _slip(slot.value, rng)})


def error_operand(draft: Draft, rng: random.Random) -> None:
    """A question number replaced by another number of the question, the arithmetic right."""
    gold, options = draft.gold, []
    for slot in equation_slots(draft):
        tree = draft.slots[slot.index][0]
        for i, ((kind, _), leaf) in enumerate(zip(slot.links, gs.leaves(tree), strict=True)):
            if kind == "question" and not leaf.percent:
                options += [
                    (slot, tree, i, leaf, q) for q in gold.question_numbers if q != leaf.value and q > 0
                ]
    rng.shuffle(options)
    for slot, tree, i, leaf, q in options:
        try:
            _apply(draft, {slot.index: gs.map_leaves(tree, {i: gs.with_value(leaf, q)})}, {})
        except gs.Reject:
            continue
        if draft.slots[slot.index][1] != slot.value:
            return
    raise gs.Reject("no wrong operand changes a value")


FLIP = {"+": "-", "-": "+", "*": "/", "/": "*"}
FLIP_SHOWN = {"x": "/", "X": "/", "×": "÷", "÷": "×", "*": "/", "/": "*", "+": "-", "-": "+"}


def _flips(node: Node) -> list[Node]:
    """``node`` with one operator flipped (``+``↔``-``, ``*``↔``/``), each way."""
    if isinstance(node, Num):
        return []
    here = replace(node, sym=FLIP[node.sym], shown=FLIP_SHOWN.get(node.shown, FLIP[node.sym]))
    return ([here] + [replace(node, left=t) for t in _flips(node.left)]
            + [replace(node, right=t) for t in _flips(node.right)])  # fmt: skip


def error_operation(draft: Draft, rng: random.Random) -> None:
    """One operator of a calculation flipped (``+`` for ``-``, ``/`` for ``*``), the arithmetic right."""
    options = [(s, t) for s in equation_slots(draft) for t in _flips(draft.slots[s.index][0])]
    rng.shuffle(options)
    for slot, tree in options:
        value = gs.evaluate(tree)
        if value is None or value == slot.value:
            continue
        try:
            _apply(draft, {slot.index: tree}, {})
        except gs.Reject:
            continue
        return
    raise gs.Reject("no operation to flip")


def error_skipped(draft: Draft, rng: random.Random) -> None:
    """A step left out: the later step that used its result uses the step's input (its first number) instead."""
    gold, options = draft.gold, []
    for slot in equation_slots(draft):
        line_slots = [p for p in gold.lines[slot.line] if isinstance(p, int)]
        used = any(link == ("slot", slot.index) for s in gold.slots for link in s.links)
        first = gs.leaves(slot.tree)[0].value
        if line_slots == [slot.index] and used and slot.index != gold.final_slot and first != slot.value:
            options.append((slot, first))
    rng.shuffle(options)
    for slot, first in options:
        try:
            _apply(draft, {}, {slot.index: first}, left_out=slot.index)
        except gs.Reject:
            continue
        draft.order.remove(slot.line)
        return
    raise gs.Reject("no step whose result is used later")


def error_stop_short(draft: Draft, rng: random.Random) -> None:
    """The last steps left out: the solution ends after an earlier calculation and gives its value as the answer."""
    gold = draft.gold
    last = gold.slots[gold.final_slot].line
    options = [s for s in gold.slots if s.line < last and s.value != gold.final and s.value > 0
               and s.index == max(p for p in gold.lines[s.line] if isinstance(p, int))]  # fmt: skip
    if not options:
        raise gs.Reject("no earlier calculation")
    slot = rng.choice(options)
    draft.order = [item for item in draft.order if isinstance(item, Extra) or item <= slot.line]
    draft.final = slot.value


Rewrite = Callable[[Draft, random.Random], None]
VALID: dict[str, Rewrite] = {f.__name__: f for f in (
    valid_gold, valid_units, valid_split, valid_merge, valid_reorder, valid_route, valid_restate,
    valid_times_one, valid_operators, valid_percent, valid_words)}  # fmt: skip
ERRORS: dict[str, Rewrite] = {f.__name__: f for f in (
    error_slip, error_operand, error_operation, error_skipped, error_stop_short)}  # fmt: skip
KINDS = {**VALID, **ERRORS}
