"""Each option's allowed values are defined once (psgrpo.config.options) and checked wherever a value comes from."""

from __future__ import annotations

import dataclasses
import math
import typing

import pytest

from psgrpo.config import options
from psgrpo.config.options import allowed, check_choice, check_number, check_registered
from psgrpo.config.parsing import ConfigParser
from psgrpo.config.process_grpo_config import ProcessGRPOConfig

LITERAL_FIELDS = {
    "ps_advantage_mode": options.PsAdvantageMode,
    "ps_on_scorer_error": options.ScorerErrorPolicy,
    "vps_boundaries": options.VpsBoundaries,
    "vps_zero_variance": options.ZeroVarianceMode,
    "vps_truncated": options.TruncatedMode,
    "kl_schedule": options.KLSchedule,
    "curriculum": options.Curriculum,
}


def _config(tmp_path, **fields):
    return ProcessGRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], **fields)


def test_every_choice_field_of_the_config_uses_its_literal():
    hints = typing.get_type_hints(ProcessGRPOConfig)
    for name, option_type in LITERAL_FIELDS.items():
        assert hints[name] is option_type, name


@pytest.mark.parametrize("name", sorted(LITERAL_FIELDS))
def test_the_parser_offers_exactly_the_literal_values(name):
    parser = ConfigParser((ProcessGRPOConfig,))
    (action,) = [a for a in parser._actions if a.dest == name]
    assert tuple(action.choices) == allowed(LITERAL_FIELDS[name])


@pytest.mark.parametrize("name", sorted(LITERAL_FIELDS))
def test_python_api_refuses_a_value_outside_the_literal(tmp_path, name):
    with pytest.raises(ValueError, match=f"{name}='bogus' is not allowed; choose one of"):
        _config(tmp_path, **{name: "bogus"})


def test_method_takes_the_registered_methods_in_their_documented_order(tmp_path):
    from psgrpo.methods import BUILTIN_METHODS, method_names

    assert method_names()[:4] == list(BUILTIN_METHODS) == list(options.METHODS)  # the built-ins, then yours
    for name in BUILTIN_METHODS:
        assert _config(tmp_path, method=name).method == name
    with pytest.raises(
        ValueError, match="method='bogus' is not allowed; choose one of 'grpo', 'ps', 'vps', 'tree'"
    ):
        _config(tmp_path, method="bogus")


def test_defaults_are_allowed_values(tmp_path):
    config = _config(tmp_path)
    for name, option_type in LITERAL_FIELDS.items():
        assert getattr(config, name) in allowed(option_type)


def test_check_choice_and_registered_messages():
    check_choice("vps_boundaries", "markers", options.VpsBoundaries)
    with pytest.raises(
        ValueError, match=r"vps_boundaries='marker' is not allowed; choose one of 'entropy', 'markers'"
    ):
        check_choice("vps_boundaries", "marker", options.VpsBoundaries)
    with pytest.raises(ValueError, match=r"segmenter='x' is not registered; choose one of 'a', 'b', or so"):
        check_registered("segmenter", "x", ["b", "a"], hint=", or so")
    with pytest.raises(TypeError):
        allowed(str)


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (math.nan, {}, "not a finite number"),
        (math.inf, {}, "not a finite number"),
        (-1.0, {"low": 0.0}, r"outside its range \[0.0, inf\]"),
        (0.0, {"low": 0.0, "low_open": True}, r"outside its range \(0.0, inf\]"),
        (1.0, {"high": 1.0, "high_open": True}, r"outside its range \[-inf, 1.0\)"),
        ("abc", {}, "must be a number, got 'abc' \\(str\\)"),
        (True, {}, "must be a number"),
        (None, {}, "must be a number, got None"),
    ],
)
def test_check_number_refuses(value, kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_number("x", value, **kwargs)


def test_check_number_accepts():
    check_number("x", 0.0, low=0.0)
    check_number("x", 3, low=1)
    check_number("x", None, allow_none=True)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"vps_alpha": math.nan}, "vps_alpha=nan is not a finite number"),
        ({"ps_lambda": math.inf}, "ps_lambda=inf is not a finite number"),
        (
            {"learning_rate": math.nan},
            "learning_rate=nan is not a finite number",
        ),  # TRL's own float fields too
        ({"vps_alpha": -0.5}, r"vps_alpha=-0.5 is outside its range"),
        ({"ps_min_temperature": 0.0}, "ps_min_temperature=0.0 is outside its range"),
        (  # every advantage would be 0 (helper review, 2026-12-07)
            {"method": "ps", "ps_lambda": 0.0, "ps_outcome_weight": 0.0},
            r"--ps_lambda 0 with --ps_outcome_weight 0 gives every token an advantage of 0",
        ),
        ({"vps_entropy_quantile": 1.5}, "vps_entropy_quantile=1.5 is outside its range"),
        ({"vps_entropy_tolerance": 1.0}, "vps_entropy_tolerance=1.0 is outside its range"),
        ({"vps_max_segments": 0}, "vps_max_segments=0 is outside its range"),
        ({"vps_probe_chunk_size": 0}, "vps_probe_chunk_size=0 is outside its range"),
        (
            {"step_scorer_kwargs": '{"correct_weight": "abc"}'},
            r"step_scorer_kwargs\['correct_weight'\] must be a number",
        ),
        ({"step_scorer_kwargs": {"neutral_score": math.nan}}, "not a finite number"),
        (  # "no" is a truthy string: taken as given it would silently switch the rule on
            {"step_scorer": "reference", "step_scorer_kwargs": '{"final_step_reaches_answer": "no"}'},
            r"step_scorer_kwargs\['final_step_reaches_answer'\]='no' must be true or false",
        ),
        (
            {"step_scorer": "reference", "step_scorer_kwargs": {"final_step_reaches_answer": 0}},
            "must be true or false",
        ),
        (
            {"step_scorer": "prm", "step_scorer_kwargs": {"model": "m", "good_token": 1}},
            r"step_scorer_kwargs\['good_token'\]=1 must be a string, not int",
        ),
        (
            {"step_scorer_kwargs": {"weights": 1}},
            "unexpected keyword argument 'weights'; accepted: correct_weight",
        ),
        ({"segmenter": "lines"}, "segmenter='lines' is not registered"),
        ({"segmenter_kwargs": {"pattern": "("}}, "do not fit segmenter 'markers'"),
        ({"step_scorer": "verifier"}, "step_scorer='verifier' is not registered"),
        ({"reward_funcs": ["correctness", "formatting"]}, "reward_funcs='formatting' is not registered"),
        ({"advantage_estimator": "gae"}, "advantage_estimator='gae' is not registered"),
        ({"advantage_estimator": "outcome"}, "'outcome' was renamed.*use advantage_estimator='grpo'"),
        ({"advantage_estimator": "process"}, "'process' was renamed.*use advantage_estimator='ps'"),
        ({"advantage_estimator": "hybrid"}, "'hybrid' was renamed.*use advantage_estimator='vps'"),
    ],
)
def test_bad_values_are_refused_before_anything_loads(tmp_path, fields, message):
    with pytest.raises(ValueError, match=message):
        _config(tmp_path, **fields)


def test_every_float_field_is_checked_for_nan(tmp_path):
    """No float option of ProcessGRPOConfig, psgrpo's or TRL's, accepts NaN."""
    defaults = _config(tmp_path)
    floats = [f.name for f in dataclasses.fields(defaults) if isinstance(getattr(defaults, f.name), float)]
    assert {"vps_alpha", "ps_lambda", "beta", "epsilon", "temperature", "learning_rate"} <= set(floats)
    for name in floats:
        with pytest.raises(ValueError, match=f"{name}=nan"):
            _config(tmp_path, **{name: math.nan})
