"""The Connect draft's worker groups (experimental; kgroup's API keys 1000-1004, records in
``__worker_offsets``): the protocol classes (``protocol``), the group, its records, the heartbeat,
the assignment round, fencing, and the classic<->connect migration (``migration``: the one part
allowed to know the classic package)."""
