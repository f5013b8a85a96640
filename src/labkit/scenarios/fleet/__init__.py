"""The fleet deployment scenario (see :mod:`labkit.scenarios`)."""
