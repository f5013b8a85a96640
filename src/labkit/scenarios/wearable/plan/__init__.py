"""The wearable scenario's plan: its design check (:mod:`.scenario`) and computations."""
