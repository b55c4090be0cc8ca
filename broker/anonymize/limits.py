"""How many rows the methods that load a table whole may take, in a module that imports nothing
(the command line shows it in its help without loading pandas)."""

# Mondrian and the partition method load the rows; above this many they are refused.
WHOLE_TABLE_ROWS = 1_000_000
