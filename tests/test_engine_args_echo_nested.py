"""vLLM's `non-default args` echo when it is no Python literal (a config object's repr inside it): each top-level
pair is read whole, so a nested dict's keys never become flags of their own."""

from __future__ import annotations

from diagnose.facts.args import _parse_dict
from diagnose.launch.python_forms import from_engine_args

ECHO = ("{'model_tag': '/m', 'default_chat_template_kwargs': {'temperature': 1.0, 'top_p': 0.95}, "
        "'tensor_parallel_size': 3, 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 7}, "
        "'attention_config': AttentionConfig(backend=None, flash_attn_version=None), 'served_model_name': ['m']}")


def test_nested_pairs_stay_in_their_value():
    args = _parse_dict(ECHO)
    assert sorted(args) == ["attention_config", "default_chat_template_kwargs", "model_tag", "served_model_name",
                            "speculative_config", "tensor_parallel_size"]
    assert args["default_chat_template_kwargs"] == {"temperature": 1.0, "top_p": 0.95}
    assert args["tensor_parallel_size"] == 3 and args["served_model_name"] == ["m"]


def test_the_rebuilt_launch_has_no_flag_from_a_nested_key():
    launch = from_engine_args(_parse_dict(ECHO))
    flags = [a.spelled for a in launch.args]
    assert "--temperature" not in flags and "--method" not in flags and "--backend" not in flags
    assert launch.get("--tensor-parallel-size") == "3"
    assert launch.get("--speculative-config") == '{"method": "mtp", "num_speculative_tokens": 7}'


def test_a_literal_echo_still_parses_as_one_literal():
    assert _parse_dict("{'max_model_len': 4096, 'x': {'a': 1}}") == {"max_model_len": 4096, "x": {"a": 1}}


def test_a_cut_echo_keeps_its_whole_pairs():
    assert _parse_dict("{'a': 1, 'b': X(c=1), 'd': {'e': 2") == {"a": 1, "b": "X(c=1)", "d": "{'e': 2"}
