"""psgrpo/trl_warnings.py: transformers' checkpointing deprecations that TRL raises are hidden, nothing else is."""

from __future__ import annotations

import warnings

import pytest

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.trl_warnings import ignore_trl_deprecations

TRL_USES = [  # the messages transformers 5.25 raises for what TRL 1.16 calls
    "`is_gradient_checkpointing` is deprecated and will be removed in v6. Use `is_activation_checkpointing` instead.",
    "`gradient_checkpointing_disable` is deprecated and will be removed in v6. Use `activation_checkpointing_disable`",
    "`gradient_checkpointing_enable` is deprecated and will be removed in v6. Use `activation_checkpointing_enable`",
    "`gradient_checkpointing` is deprecated and will be removed in v6. Use `activation_checkpointing` instead.",
    "`gradient_checkpointing_kwargs` is deprecated and will be removed in v6.",
]


def test_only_trls_deprecations_are_ignored():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ignore_trl_deprecations()
        for message in TRL_USES:
            warnings.warn(message, FutureWarning, stacklevel=1)
        warnings.warn("`other_option` is deprecated", FutureWarning, stacklevel=1)  # not TRL's: shown
        warnings.warn(TRL_USES[0], UserWarning, stacklevel=1)  # another category: shown
    assert [(w.category, str(w.message)) for w in caught] == [
        (FutureWarning, "`other_option` is deprecated"),
        (UserWarning, TRL_USES[0]),
    ]


def test_a_second_call_mutates_nothing_and_a_users_later_filter_wins():
    """Each trainer calls it (compare builds many): the filters, and so Python's record of the warnings already
    shown once, stay as they are; a filter the user adds afterwards goes in front and keeps precedence."""
    with warnings.catch_warnings(record=True) as caught:
        ignore_trl_deprecations()
        before = list(warnings.filters)
        ignore_trl_deprecations()
        assert warnings.filters == before
        warnings.simplefilter("always")
        ignore_trl_deprecations()
        warnings.warn(TRL_USES[0], FutureWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == [TRL_USES[0]]


@pytest.mark.parametrize("checkpointing", [None, True, False])
def test_the_config_sets_the_new_name_itself_and_does_not_warn(tmp_path, checkpointing):
    """TRL's GRPOConfig defaults gradient_checkpointing to True; transformers would warn for every config."""
    fields = {} if checkpointing is None else {"gradient_checkpointing": checkpointing}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = ProcessGRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], **fields)
    assert not [w for w in caught if "checkpointing" in str(w.message)], [str(w.message) for w in caught]
    expected = True if checkpointing is None else checkpointing  # TRL's default, else the user's
    assert config.gradient_checkpointing is expected
    if hasattr(config, "activation_checkpointing"):  # transformers >= about 5.20
        assert config.activation_checkpointing is expected
