"""The state layer's tests: contract suites (one set of tests run against every implementation
of a state protocol), the politeness transitions, departures, and what only Redis does."""
