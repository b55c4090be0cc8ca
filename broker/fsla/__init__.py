"""F-SLA records and the transfer decision: pure code with no web or database imports."""
