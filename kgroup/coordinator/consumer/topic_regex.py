"""SubscribedTopicRegex (ConsumerGroupHeartbeat v1) as Python's ``re``, with Kafka's meaning.

Kafka 4.0 compiles the regex with re2j (``GroupMetadataManager.throwIfRegularExpressionIsInvalid``)
and subscribes a member to every topic whose whole name matches (``Pattern.matcher(topic).matches()``).
This module translates the RE2 syntax that Python's ``re`` reads the same way, rewrites the few RE2
spellings Python lacks (``\\Q...\\E``, ``\\z``, ``(?<name>...)``), and refuses everything Python
would read differently or accepts where RE2 does not (backreferences, lookaround, possessive and
atomic forms, ``\\p{..}``, POSIX classes, ``{,n}``, repeat counts over 1000, flags other than ``ims``)
with ``InvalidTopicRegex``: the heartbeat answers it with INVALID_REGULAR_EXPRESSION (128). Refusing
a regex Kafka would accept is the safe side: it never subscribes a member to other topics than Kafka.
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_REPEAT = 1000    # RE2's limit on {n,m}


class InvalidTopicRegex(ValueError):
    """The regex is not one kgroup can match exactly as Kafka would."""


_REFUSED_AFTER_PAREN = {"?=": "lookahead", "?!": "negative lookahead", "?<=": "lookbehind",
                        "?<!": "negative lookbehind", "?>": "atomic group", "?#": "comment group"}


def compile_topic_regex(regex: str) -> re.Pattern:
    """The compiled pattern; match topic names with ``pattern.fullmatch(name)``."""
    return _compile(regex)


def matching_topics(regex: str, topic_names) -> list[str]:
    """Sorted names of the topics whose whole name matches ``regex``."""
    pattern = _compile(regex)
    return sorted(name for name in topic_names if pattern.fullmatch(name))


@lru_cache(maxsize=256)
def _compile(regex: str) -> re.Pattern:
    translated = _translate(regex)
    try:
        return re.compile(translated, re.ASCII)
    except re.error as exc:
        raise InvalidTopicRegex(f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
                                f"{exc.msg}.") from None


def _refuse(regex: str, what: str):
    raise InvalidTopicRegex(f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
                            f"{what} is not supported.")


def _translate(regex: str) -> str:
    out = []
    i, n = 0, len(regex)
    in_class = False
    while i < n:
        c = regex[i]
        if c == "\\":
            if i + 1 >= n:
                out.append(c)          # a trailing backslash: re.compile reports it
                break
            e = regex[i + 1]
            if e == "Q":               # \Q...\E: everything quoted
                end = regex.find("\\E", i + 2)
                literal = regex[i + 2:] if end < 0 else regex[i + 2:end]
                out.append(re.escape(literal))
                i = n if end < 0 else end + 2
                continue
            if e.isdigit() and not in_class:
                _refuse(regex, "a backreference")
            if e in "pPXRhHkKGZ" or (e == "x" and regex[i + 2:i + 3] == "{"):
                _refuse(regex, f"\\{e}")
            out.append("\\Z" if e == "z" else regex[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "[" and regex[i + 1:i + 2] in (":", "=", "."):
                _refuse(regex, "a POSIX character class")
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if regex[i:i + 1] == "^":
                out.append("^")
                i += 1
            if regex[i:i + 1] == "]":      # a leading ] is a literal in both
                out.append("\\]")
                i += 1
            continue
        if c == "(" and regex[i + 1:i + 2] == "?":
            for prefix, what in _REFUSED_AFTER_PAREN.items():
                if regex.startswith(prefix, i + 1):
                    _refuse(regex, f"a {what}")
            if regex.startswith("?<", i + 1):          # (?<name>...) is Python's (?P<name>...)
                out.append("(?P<")
                i += 3
                continue
            if not regex.startswith("?P<", i + 1) and not regex.startswith("?:", i + 1):
                flags = re.match(r"\?([a-zA-Z-]*)[:)]", regex[i + 1:])
                if flags is None or set(flags.group(1)) - set("ims-"):
                    _refuse(regex, "this group or flag")
        if c == "{":
            repeat = re.match(r"\{(\d*)(,?)(\d*)\}", regex[i:])
            if repeat:
                low, comma, high = repeat.groups()
                if not low:
                    _refuse(regex, "a repeat count without a minimum")
                if int(low) > MAX_REPEAT or (high and int(high) > MAX_REPEAT):
                    _refuse(regex, f"a repeat count over {MAX_REPEAT}")
        if c in "*+?}" and regex[i + 1:i + 2] == "+" and out and out[-1] not in ("(", "|"):
            _refuse(regex, "a possessive quantifier")
        out.append(c)
        i += 1
    return "".join(out)
