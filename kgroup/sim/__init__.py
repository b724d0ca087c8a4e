"""kgroup.sim: predict what group operations cost, on the embedded coordinator in virtual time.

    from kgroup.sim.scenarios import SimParams, run_scenario     # `kgroup simulate`

The assignors the simulated leaders run are library code, in ``kgroup.assignors``.

Modules: ``client`` (a simulated classic-protocol consumer), ``engine`` (one clock for coordinator
timers and client events), ``metrics`` (ownership ledger), ``scenarios``, ``plot`` (matplotlib,
optional).
"""
