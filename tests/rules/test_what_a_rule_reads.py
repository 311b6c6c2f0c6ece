"""Both engines ask one module which arguments a rule reads (rules._introspect).

The tape keeps (and version-checks) an argument only if the rule reads its
value; the transformer saves a primal value for the adjoint on the same
answer.  A wrong "unused" is a wrong gradient waiting to happen, so every
doubt answers "value".
"""

import builtins

import numpy as np

from astgrad.rules import _introspect, lookup


def test_an_argument_in_star_args_counts_as_read_never_as_a_keyword_parameter():
    # builtin_max(g, ans, *args, key=None, default=None): max(a, b)'s b lands in *args,
    # not on ``key`` (which the rule never reads)
    rule = lookup(builtins.max)
    usage = rule.usage
    assert usage["key"] == "unused"
    assert _introspect.argument_usage(rule.vjp, usage, 0) == "value"
    assert _introspect.argument_usage(rule.vjp, usage, 1) == "value"


def test_a_keyword_only_parameter_is_not_matched_to_a_positional_argument():
    def vjp(g, ans, a, *, axis=None):
        return g * np.shape(a)[0]

    usage = _introspect.parameter_usage(vjp)
    assert usage == {"g": "value", "ans": "unused", "a": "meta", "axis": "unused"}
    assert _introspect.argument_usage(vjp, usage, 0) == "meta"
    assert _introspect.argument_usage(vjp, usage, 1) == "value"  # past the named ones: read
    assert _introspect.argument_usage(vjp, usage, -1) == "unused"


def test_the_output_and_metadata_reads_are_told_apart():
    rule = lookup(np.sin)
    assert _introspect.argument_usage(rule.vjp, rule.usage, 0) == "value"
    rule = lookup(np.add)
    assert _introspect.argument_usage(rule.vjp, rule.usage, 0) in ("meta", "unused")
    assert _introspect.argument_usage(rule.vjp, rule.usage, -1) in ("meta", "unused")
    rule = lookup(np.exp)
    assert _introspect.argument_usage(rule.vjp, rule.usage, -1) == "value"


def test_a_rule_without_a_readable_signature_or_source_reads_everything():
    assert _introspect.argument_usage(None, {}, 0) == "value"
    assert _introspect.argument_usage(None, {}, -1) == "value"
    vjp = lambda g, ans, a: g * a  # noqa: E731  (a lambda: no function source to read)
    usage = _introspect.parameter_usage(vjp)
    assert set(usage.values()) == {"value"}


def test_a_variant_without_unneeded_gradients_reads_less():
    rule = lookup(np.multiply)
    full = rule.usage
    x_only = rule.usage_for((True, False))
    assert _introspect.argument_usage(rule.vjp, full, 0) == "value"
    assert _introspect.argument_usage(rule.vjp, x_only, 0) != "value"  # x * 3: x is not kept
    assert _introspect.argument_usage(rule.vjp, x_only, 1) == "value"


def test_the_registry_binds_keywords_with_the_same_parameters():
    rule = lookup(np.select)
    names = [p.name for p in _introspect.positional_parameters(rule.vjp)]
    assert names[:3] == ["condlist", "choicelist", "default"]
