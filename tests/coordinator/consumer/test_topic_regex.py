"""SubscribedTopicRegex translation: full-match RE2 semantics, and what is refused."""

import pytest

from kgroup.coordinator.consumer.topic_regex import InvalidTopicRegex, compile_topic_regex, matching_topics

TOPICS = ["orders", "orders.eu", "orders-v2", "payments", "a.b", "aXb", "x1", "x22"]


@pytest.mark.parametrize("regex, expected", [
    ("orders", ["orders"]),                              # full match: not a prefix search
    ("orders.*", ["orders", "orders-v2", "orders.eu"]),
    ("orders\\..*", ["orders.eu"]),
    ("\\Qa.b\\E", ["a.b"]),                              # \Q...\E quotes, as in RE2/Java
    ("a.b", ["a.b", "aXb"]),
    ("x\\d{1,2}", ["x1", "x22"]),
    ("(?<name>pay)ments", ["payments"]),                 # Java's named group
    ("(?i)ORDERS", ["orders"]),
    ("orders|payments", ["orders", "payments"]),
    ("[^o].*", ["a.b", "aXb", "payments", "x1", "x22"]),
    ("orders\\z", ["orders"]),
])
def test_matching_topics_is_a_full_match(regex, expected):
    assert matching_topics(regex, TOPICS) == expected


@pytest.mark.parametrize("regex", [
    "(a)\\1", "(?=a)a", "(?!a)b", "(?<=a)b", "(?<!a)b", "(?>a)", "a++", "a*+", "a?+",
    "\\p{L}+", "[[:alpha:]]+", "a{,3}", "a{1001}", "a{1,1001}", "(?U)a", "\\x{41}", "\\Z",
    "(", "a**", "[a", "\\",
])
def test_what_python_would_read_differently_or_re2_refuses_is_invalid(regex):
    with pytest.raises(InvalidTopicRegex) as info:
        compile_topic_regex(regex)
    assert str(info.value).startswith(f"SubscribedTopicRegex `{regex}` is not a valid regular expression: ")


def test_a_character_class_keeps_escapes_and_a_leading_bracket():
    assert compile_topic_regex("[]a]+").fullmatch("]a]")
    assert compile_topic_regex("[\\d.]+").fullmatch("1.2")
    assert not compile_topic_regex("\\d+").fullmatch("١٢")  # RE2's \d is ASCII only
