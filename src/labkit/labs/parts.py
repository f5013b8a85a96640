"""The part letters every lab uses, in order (a lab concept; tracks key their hooks by them)."""

PARTS = ("A", "B", "C", "D")
