"""A toy scenario: a ring whose label starts with "Toy" (tests only)."""
