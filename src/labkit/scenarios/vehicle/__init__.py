"""The vehicle deployment scenario (see :mod:`labkit.scenarios`)."""
