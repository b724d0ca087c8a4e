"""What every group type stands on: the log and its operations (``operation_log``), the undo journal
that reverts a failed operation, the virtual-time timers, replay of the log by record type, and the
topic image's metadata hashes."""
