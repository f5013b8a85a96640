"""The toy scenario's words."""

OBJECTIVES = {"lab2": ("Toy objective one: place the toy on the roofline.",
                       "Toy objective two: fit the toy in its memory.")}
READING = ("A. Toy, *On toy scenarios*, 2026.",)
SHOWN_TERMS: tuple[str, ...] = ()
MEMO_ASK = "how the toy listens and what it costs"
