"""The wearable deployment scenario (see :mod:`labkit.scenarios`)."""
