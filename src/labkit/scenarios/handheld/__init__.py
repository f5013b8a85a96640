"""The handheld deployment scenario (see :mod:`labkit.scenarios`)."""
