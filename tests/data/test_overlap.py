"""Held-out rows that are also training rows (psgrpo/data/overlap.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from psgrpo.data.overlap import count_shared_rows, overlap_warning, row_key

QUESTIONS = [
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
    "How many clips did Natalia sell altogether in April and May?",
    "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?",
    "Betty is saving money for a new wallet which costs $100. Betty has only half of the money she needs. "
    "How much more money does Betty need to buy the wallet?",
]
ROWS = st.lists(st.sampled_from(QUESTIONS + [f"What is {a} + {a}?" for a in range(20)]), max_size=30)


def rows(questions):
    return [{"question": q, "prompt": f"Q: {q}\nA:"} for q in questions]


@given(train=ROWS, extra=ROWS)
def test_every_held_out_row_in_the_training_rows_is_counted(train, extra):
    held_out = rows(train + extra)
    shared = count_shared_rows(rows(train), held_out)
    assert shared == sum(q in set(train) for q in train + extra)
    assert count_shared_rows(rows(train), rows(train)) == len(train)


@given(train=ROWS)
def test_disjoint_rows_share_nothing(train):
    assert (
        count_shared_rows(rows(train), rows([q + " (new)" for q in train if q + " (new)" not in train])) == 0
    )


def test_rows_match_on_question_modulo_whitespace_then_on_prompt():
    assert row_key({"question": "  Weng earns $12\nan hour. "}) == row_key(
        {"question": "Weng earns $12 an hour."}
    )
    chat = [{"role": "user", "content": QUESTIONS[0]}]
    assert row_key({"prompt": chat}) == row_key({"prompt": list(chat)})


def test_warning_only_when_rows_overlap():
    train = rows(QUESTIONS)
    assert overlap_warning(train, rows(["What is 2 + 2?"]), "data/gsm8k", "test") is None
    message = overlap_warning(train, rows(QUESTIONS[:2]), "data/gsm8k.jsonl", "test")
    assert message is not None and "2 of the 2 held-out rows (data/gsm8k.jsonl, split 'test')" in message
    assert "training data" in message and "every held-out row" in message
    partly = overlap_warning(train, rows([QUESTIONS[0], "What is 2 + 2?"]), "data/gsm8k", "test")
    assert partly is not None and "1 of the 2" in partly and "every held-out row" not in partly
