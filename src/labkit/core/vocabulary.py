"""Words of one kind of deployment's story, as regular expressions a scenario's
``about.FOREIGN`` lists when its screens must never show them (tested over every rendered
string: ``tests/labs/test_track_vocabulary.py``)."""

from __future__ import annotations

BRACKET_PLURAL = r"(?-i:[a-z]\(s\))"
"""'device(s)': a count is said with :func:`labkit.core.format.counted`, never so."""

TOKEN_STREAM: tuple[str, ...] = (
    r"\btokens?\b", r"\brequests?\b", r"\breplicas?\b", r"\busers?\b", r"\bconversations?\b",
    r"\bprompts?\b", r"\bTPOT\b", r"\bTTFT\b", r"continuous batching", r"\binferences?/s\b",
    r"pad(ding)? to (the )?longest", r"request-length", r"\boutput loop\b",
)
"""A language model served to users: none of it exists for a sensor's windows or frames."""
