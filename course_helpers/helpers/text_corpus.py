"""Real text available offline: the English documentation that ships with Python (`pydoc_data`).

The text model trains on most topics and is measured on the held-out ones (every `HOLD_OUT`-th
topic, in name order); the probe sentences come from the held-out prose.
"""

from __future__ import annotations

import re

HOLD_OUT = 8


def _topics() -> dict[str, str]:
    from pydoc_data.topics import topics

    return topics


def training_text() -> str:
    """The topics the text model learns from, joined by blank lines."""
    names = sorted(_topics())
    return "\n\n".join(_topics()[n] for i, n in enumerate(names) if i % HOLD_OUT != 0)


def held_out_text() -> str:
    """The topics it never saw, joined by blank lines."""
    names = sorted(_topics())
    return "\n\n".join(_topics()[n] for i, n in enumerate(names) if i % HOLD_OUT == 0)


def probe_sentences(count: int = 3, longest: int = 64) -> list[str]:
    """`count` held-out prose sentences of at most `longest` characters that hold a quoted word
    or a bracket pair, in the order they appear."""
    prose = " ".join(line.strip() for line in held_out_text().splitlines() if line and not line.startswith(" "))
    found = []
    for match in re.finditer(r"(?<=[.:] )[A-Z][^.:;]*[a-z)\"][.:](?= )", prose):
        sentence = match.group()
        balanced = sentence.count('"') % 2 == 0 and sentence.count("(") == sentence.count(")")
        quoted = re.search(r'"\w[^"]*"|\(\w[^)]*\)', sentence)
        if 32 <= len(sentence) <= longest and balanced and quoted and sentence not in found:
            found.append(sentence)
        if len(found) == count:
            break
    return found
