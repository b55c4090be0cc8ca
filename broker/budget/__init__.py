"""The privacy budget ledger and the aggregate release use case (a transfer of kind aggregate)."""
