"""The toy scenario's part hooks."""

from labkit.tracks import Track


def hooks(t: Track) -> dict[str, str]:
    return {p: f"Toy hook {p} for {t.label}." for p in "ABCD"}
