"""LaTeX (and Markdown) as the equation reader reads plain text: one linear, bounded rewrite of a step's text.

Models write their arithmetic in LaTeX, inside prose: ``\\(3 \\times \\$68 = \\$204\\)``,
``$\\frac{30}{100}\\cdot 180 = 54$``, ``\\[ 50 \\text{ km/hr} \\times 3 = 150 \\text{ km} \\]``,
``2{,}500``. :func:`latex_to_text` rewrites such text into the plain form the expression grammar of
:mod:`psgrpo.ps.scorers.expressions` already reads (``3 * $68 = $204``, ``30/100 * 180 = 54``,
``50 km/hr * 3 = 150 km``, ``2,500``), so plain and LaTeX steps are judged by one grammar:

* math delimiters ``\\( \\)``, ``\\[ \\]``, ``$$`` and a ``$`` that opens or closes math are
  dropped (a ``$`` before a number, or ``\\$``, is currency and stays); ``\\\\`` is a line break and
  ``&`` (aligned environments) a space; ``\\begin{...}`` / ``\\end{...}`` are dropped;
* ``\\times``, ``\\cdot``, ``\\ast``, ``·`` are ``*``; ``\\div`` is ``/``; ``\\%``, ``\\$``,
  ``\\{ \\}`` are the characters; ``{,}`` and ``\\,`` between digits are thousands separators;
  spacing commands (``\\,  \\;  \\!  \\quad  ~``) are spaces; ``\\left`` / ``\\right`` go;
* ``\\frac{a}{b}``, ``\\dfrac``, ``\\tfrac`` (and ``\\frac12``) are ``a/b`` when both are numbers,
  else ``(a)/(b)``; after a digit, a mixed number (``1\\frac{1}{2}`` is ``1 1/2``, 1.5, not 11/2);
  ``^{e}`` is ``^(e)`` (``^`` is a power in the grammar), ``^\\circ`` goes;
* ``\\text{…}``, ``\\mathrm``, ``\\textbf``, ``\\mbox``, ``\\operatorname`` and ``\\boxed{…}`` are
  their contents with spaces around (units inside math are then read past as in prose);
* any other command (``\\approx``, ``\\le`` ...) stays a word (its backslash dropped), and a
  function with its argument (``\\sqrt{16}``, ``\\log 100``, ``\\log_2(8)``, ``\\lfloor 17/5
  \\rfloor``, any unknown ``\\cmd{...}``) is fenced off as ``sqrt⟦16⟧``: words and fences are never arithmetic, so an equation holding one is left
  unread, never misread (``\\sqrt{16} + 1 = 5`` is not ``16 + 1 = 5``).

Markdown (:func:`strip_markdown`): a bullet opening a line, bold (``**``, ``__``) and italics (``*7*``)
are blanked; they read as a binary minus left open, a power and a product. :func:`to_plain` is both rewrites, what every reader of
step text (equations, units, the reference verifier's numbers) applies first.

Bounded work: one pass over the text, each character visited a bounded number of times (brace
groups are matched by a scan that stops at :data:`MAX_GROUP_CHARS`); nothing is evaluated here.
Text without a backslash, ``$``, ``{`` or ``·`` is returned unchanged at the cost of one scan.

Why not math-verify's LaTeX parser (``latex2sympy2_extended``): it parses one whole expression into
a SymPy tree, not equations embedded in prose, and evaluating that tree is unbounded on model text
(``10^{10^{10}}``, nested factorials); math-verify bounds it with a timeout built on signals,
which works only in the main thread. The rewrite here keeps the verifier's guarantees (exact
``Fraction`` arithmetic, a work budget per step, no ``eval``) and costs microseconds.
"""

from __future__ import annotations

import bisect
import re

MAX_GROUP_CHARS = 400
"""Longest brace group ``{...}`` read as an argument; a longer or unclosed one is left as it is."""

_TRIGGERS = re.compile(r"[\\${·⋅]")
_SYMBOLS = {
    "times": " * ", "cdot": " * ", "ast": " * ", "div": " / ", "%": "%", "$": "$", "{": "{", "}": "}",
    "left": "", "right": "", "displaystyle": "", "quad": " ", "qquad": " ", ";": " ", ":": " ", "!": "",
    " ": " ", "cdotp": " * ", "colon": ":", "_": "_", "&": "&", "#": "#",
}  # fmt: skip
_TEXT_COMMANDS = {
    "text", "textrm", "textnormal", "textit", "textbf", "mathrm", "mathbf", "mathit", "mbox", "operatorname",
    "boxed", "fbox", "emph", "underline", "mathsf", "texttt", "hbox",
}  # fmt: skip
_FRACTIONS = {"frac", "dfrac", "tfrac", "cfrac"}
_DROPPED_ARGUMENT = {"begin", "end", "label", "tag"}
_FUNCTIONS = {
    "sqrt", "log", "ln", "exp", "sin", "cos", "tan", "binom", "dbinom", "tbinom", "floor", "ceil", "max", "min",
    "overline", "bar", "hat", "vec", "sum", "prod", "int", "lim",
}  # fmt: skip
_DELIMITERS = {"lfloor": "\\rfloor", "lceil": "\\rceil"}  # \lfloor 17 / 5 \rfloor: fenced whole
_NUMBER = re.compile(r"\s*\$?\d[\d,]*(?:\.\d+)?\s*")
_ARGUMENT_NUMBER = re.compile(r" *\d{1,3}(?:,\d{3})+(?:\.\d+)?| *\d+(?:\.\d+)?")  # \log 100: the whole number
_OPENING_PAREN = re.compile(r" *(?:\\left\s*)?\(")
_TWO_ARGUMENTS = {"binom", "dbinom", "tbinom"}
_COMMAND = re.compile(r"\\([A-Za-z]+|.)")


def _group(text: str, i: int) -> tuple[str, int] | None:
    """The argument starting at ``text[i]`` (after spaces): a brace group's contents, or one
    character / digit (``\\frac12``); with the index after it; ``None`` if there is none."""
    while i < len(text) and text[i] == " ":
        i += 1
    if i >= len(text):
        return None
    if text[i] != "{":
        if text[i] == "\\":
            match = _COMMAND.match(text, i)
            return (match.group(), match.end()) if match else None
        return text[i], i + 1
    depth = 0
    for j in range(i, min(len(text), i + MAX_GROUP_CHARS)):
        if text[j] == "{" and (j == 0 or text[j - 1] != "\\"):
            depth += 1
        elif text[j] == "}" and text[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
    return None


def _fraction(numerator: str, denominator: str) -> str:
    """``a/b`` for two numbers, else ``(a)/(b)``."""
    if _NUMBER.fullmatch(numerator) and _NUMBER.fullmatch(denominator):
        return f"{numerator.strip()}/{denominator.strip()}"
    return f"({numerator})/({denominator})"


def _dollar(text: str, i: int) -> str:
    """A bare ``$`` at ``text[i]``: currency (kept) before a number, else a math delimiter (a space)."""
    after = text[i + 1 : i + 3]
    return "$" if after[:1].isdigit() or (after[:1] in "-−" and after[1:].isdigit()) else " "


def latex_to_text(text: str, _depth: int = 0) -> str:
    """``text`` with its LaTeX rewritten as plain arithmetic (see the module docstring).

    Args:
        text: a step of model text, prose and LaTeX mixed.

    Returns:
        The rewritten text (its length may differ: positions are those of the result).
    """
    if not _TRIGGERS.search(text):
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == "$":
            if text.startswith("$$", i):
                out.append(" ")
                i += 2
                continue
            out.append(_dollar(text, i))
            i += 1
            continue
        if char in "·⋅":
            out.append(" * ")
            i += 1
            continue
        if char == "~":  # a non-breaking space: 18~000
            out.append(" ")
            i += 1
            continue
        if char == "&":  # an aligned environment's column mark: 12 \times 4 &= 48
            out.append(" ")
            i += 1
            continue
        if char == "{" and text.startswith("{,}", i):
            out.append(",")
            i += 3
            continue
        if char in "{}":  # grouping only: ^{2} and \frac{}{} are read below
            i += 1
            continue
        if char == "^":
            i = _power_group(text, i, out, _depth)
            continue
        if char != "\\":
            out.append(char)
            i += 1
            continue
        match = _COMMAND.match(text, i)
        if match is None:  # a lone backslash at the end
            i += 1
            continue
        name, i = match.group(1), match.end()
        if name in "()[]":
            out.append(" ")
        elif name == "\\":  # a line break of display math or an aligned environment
            out.append("\n")
        elif name == ",":  # \, between digits groups thousands (1\,000); elsewhere it is a space
            digits = out and out[-1][-1:].isdigit() and text[i : i + 1].isdigit()
            out.append("," if digits else " ")
        elif name in _SYMBOLS:
            out.append(_SYMBOLS[name])
        elif name in _FRACTIONS and _depth < 8:
            i = _frac(text, i, out, _depth)
        elif name in _TEXT_COMMANDS or name in _DROPPED_ARGUMENT:
            argument = _group(text, i)
            if argument is None:
                out.append(" ")
                continue
            body, i = argument
            keep = name not in _DROPPED_ARGUMENT and _depth < 8
            out.append(f" {latex_to_text(body, _depth + 1)} " if keep else " ")
        elif name.isalpha() and (name in _FUNCTIONS or name in _DELIMITERS or text[i : i + 1] == "{"):
            # \sqrt{16} + 1 = 5 is not 16 + 1 = 5: fenced, never read as arithmetic
            body, i = _function_argument(text, i, name)
            out.append(f" {name[1:] if name in _DELIMITERS else name}⟦{body.strip()}⟧ ")
        else:
            out.append(f" {name} " if name.isalpha() else " ")
    return "".join(out)


def _function_argument(text: str, i: int, name: str) -> tuple[str, int]:
    """What the function command ``name`` applies to, from ``text[i]``, and the index after it.

    A subscript and an optional ``[…]`` first (``\\log_2 8``, ``\\log_{10}(1000)``, ``\\sqrt[3]{27}``:
    part of the function), then for floor and ceiling everything up to ``\\rfloor`` / ``\\rceil``, else
    a parenthesised group (``\\left(`` too), a whole number (``\\log 100``, not ``1`` then ``00``), or a
    brace group (two for ``\\binom``) or one character."""
    start = i
    if text[i : i + 1] == "_":
        subscript = _group(text, i + 1)
        i = subscript[1] if subscript is not None else i + 1
    if text[i : i + 1] == "[" and (close := text.find("]", i, i + MAX_GROUP_CHARS)) >= 0:
        i = close + 1
    if name in _DELIMITERS and (close := text.find(_DELIMITERS[name], i, i + MAX_GROUP_CHARS)) >= 0:
        return text[start:close].replace("\\right", "").strip(), close + len(_DELIMITERS[name])
    if (opening := _OPENING_PAREN.match(text, i)) is not None and (
        close := _closing_paren(text, opening.end())
    ) >= 0:
        return text[start : close + 1], close + 1
    if (number := _ARGUMENT_NUMBER.match(text, i)) is not None:
        return text[start : number.end()], number.end()
    argument = _group(text, i)
    if argument is not None and name in _TWO_ARGUMENTS and (second := _group(text, argument[1])) is not None:
        return text[start:i] + argument[0] + " " + second[0], second[1]
    return (text[start:i] + argument[0], argument[1]) if argument is not None else (text[start:i], i)


_PARENS_RE = re.compile(r"[()]")


def _closing_paren(text: str, i: int) -> int:
    """The index of the ``)`` closing the ``(`` just before ``text[i]``, within :data:`MAX_GROUP_CHARS`;
    -1 if none."""
    depth = 1
    for match in _PARENS_RE.finditer(text, i, min(len(text), i + MAX_GROUP_CHARS)):
        depth += 1 if match.group() == "(" else -1
        if depth == 0:
            return match.start()
    return -1


def _frac(text: str, i: int, out: list[str], depth: int) -> int:
    """Read ``{a}{b}`` at ``text[i]`` after ``\\frac`` into ``out``; the index after it."""
    numerator = _group(text, i)
    denominator = _group(text, numerator[1]) if numerator else None
    if numerator is None or denominator is None:
        out.append(" frac ")
        return i
    a = latex_to_text(numerator[0], depth + 1)
    b = latex_to_text(denominator[0], depth + 1)
    out.append(_juxtaposed(out) + _fraction(a, b))
    return denominator[1]


_INTEGER_END_RE = re.compile(r"(?<![\d.,/])\d+\Z")


def _juxtaposed(out: list[str]) -> str:
    """What joins a fraction to a number written right before it: a space after an integer (a mixed
    number, ``1\\frac{1}{2}`` is ``1 1/2``, 1.5, not 11/2), `` * `` after a decimal or a fraction (a
    product, ``0.5\\frac{1}{2}``), else nothing."""
    tail = ""
    for chunk in out[-1:-65:-1]:  # the last characters written, past empty pieces (\\!); bounded
        tail = chunk + tail
        if len(tail) >= 24:
            break
    if not tail[-1:].isdigit():
        return ""
    return " " if _INTEGER_END_RE.search(tail) else " * "


def _power_group(text: str, i: int, out: list[str], depth: int) -> int:
    """Read ``^e`` / ``^{e}`` at ``text[i]`` into ``out`` (``^\\circ`` dropped); the index after it."""
    argument = _group(text, i + 1)
    if argument is None:
        out.append("^")
        return i + 1
    body, end = argument
    if body.strip() in {"\\circ", "{\\circ}", "o"}:
        return end
    inner = latex_to_text(body, depth + 1) if depth < 8 else body
    out.append(f"^{inner.strip()}" if _NUMBER.fullmatch(inner) else f"^({inner})")
    return end


_BULLET_RE = re.compile(r"^([^\S\n]*)[-*+•·–](?=[^\S\n])", re.MULTILINE)
_EMPHASIS_RE = re.compile(r"\*\*\*|\*\*|__")
# *7*, *Step 1:*, *3 * 4 = 12*: a single * opening after no word character and closing before none, on
# one line; a * with spaces around it inside is an operator
_ITALIC_RE = re.compile(r"(?<![\w*\\])\*(?=[^\s*])(?:[^*\n]|(?<=\s)\*(?=\s))*?(?<=[^\s*\\])\*(?![\w*])")
_OPERAND_AFTER_RE = re.compile(r"[^\S\n]*(?:[\d(]|\.\d|[-−]\d)")  # 2**10, 2 ** (1/2), 2 ** -1
_LINE_RE = re.compile(r"[^\n]+")
_DISPLAY_RE = re.compile(  # display math, where a line may open with an operator; bounded scan
    r"\\\[.{0,2000}?\\\]|\$\$.{0,2000}?\$\$|\\begin\{(\w+\*?)\}.{0,2000}?\\end\{\1\}", re.DOTALL
)


def _blank_bullets(text: str) -> str:
    """A bullet opening a line blanked (``- 9 + 2 = 11``), outside display math, where ``\\[ 100 \\n- 20
    = 80 \\]`` continues an expression."""
    if not _BULLET_RE.search(text):
        return text
    starts, ends = [], []
    for match in _DISPLAY_RE.finditer(text):
        starts.append(match.start())
        ends.append(match.end())

    def blank(match: re.Match[str]) -> str:
        k = bisect.bisect_right(starts, match.start()) - 1
        inside = k >= 0 and match.start() < ends[k]
        return match.group() if inside else match.group(1) + " "

    return _BULLET_RE.sub(blank, text)


def _blank_emphasis(text: str) -> str:
    """Bold (``**``, ``__``, ``***``) blanked, each line's markers paired first: a ``**`` that opens a bold
    closed later on the line, or closes an open one, is bold even beside a number (``= **48** (12 × 4)``);
    an unpaired ``**`` between two operands stays a power (``2**10``, ``2 ** 10``, ``(2 + 3)**2``)."""
    if "**" not in text and "__" not in text:
        return text
    out = list(text)
    for line in _LINE_RE.finditer(text):
        marks = list(_EMPHASIS_RE.finditer(text, line.start(), line.end()))
        bold_open = False
        for i, mark in enumerate(marks):
            start, end = mark.span()
            glued_before = start > line.start() and not text[start - 1].isspace()
            glued_after = end < line.end() and not text[end].isspace()
            if mark.group() != "**":  # __ and ***: never an operator
                blank = True
            elif bold_open and glued_before:  # closes a bold: **48** (12 × 4), **5**(2)
                blank, bold_open = True, False
            elif glued_after and not glued_before and i + 1 < len(marks):  # opens a bold closed later
                blank, bold_open = True, True
            else:
                blank = not _power(text, start, end)
                bold_open = bold_open or (blank and glued_after)
            if blank:
                out[start:end] = " " * (end - start)
    return "".join(out)


def _blank_italics(text: str) -> str:
    """Italics (``*7*``, ``*Step 1:*``) blanked, except between two operands, where the stars multiply
    (``3 *4* 5``)."""
    if "*" not in text:
        return text

    def blank(match: re.Match[str]) -> str:
        start, end = match.span()
        if _power(text, start, start + 1) and _OPERAND_AFTER_RE.match(text, end):
            return match.group()
        return " " + match.group()[1:-1] + " "

    return _ITALIC_RE.sub(blank, text)


def _power(text: str, start: int, end: int) -> bool:
    """Whether the ``**`` at ``text[start:end]`` stands between two operands (a digit or ``)`` before it,
    past spaces on the line; a digit, ``(``, ``.5`` or a signed number after it)."""
    k = start - 1
    while k >= 0 and text[k] in " \t":
        k -= 1
    before = k >= 0 and (text[k].isdigit() or text[k] == ")")
    return before and _OPERAND_AFTER_RE.match(text, end) is not None


def strip_markdown(text: str) -> str:
    """``text`` with the Markdown a chat model writes around its arithmetic blanked, same length.

    A bullet opening a line (``- 9 + 2 = 11``, ``* …``, ``+ …``, ``• …``, ``· …``, ``– …``; not inside
    display math) would read as a binary operator left open (``x - 9 + 2 = 11``), bold (``**Step 2:** 9
    + 2 = 11``, ``= **11**``, ``***7***``) as a power and italics (``= *11*``, ``*Step 2:*``) as a
    product: each left the equation unread, so the step scored the neutral score. A ``**`` between two
    operands that pairs with no other stays a power (``2**10 = 1024``). Positions are kept (each mark
    becomes spaces). Linear in the text's length.
    """
    return _blank_italics(_blank_emphasis(_blank_bullets(text)))


def to_plain(text: str) -> str:
    """``text`` as the readers read it: its Markdown blanked (:func:`strip_markdown`), then its LaTeX
    rewritten (:func:`latex_to_text`)."""
    return latex_to_text(strip_markdown(text))
