"""The toy scenario's plan."""
