"""kgroup.sim: predict what group operations cost, on the embedded coordinator in virtual time.

    from kgroup.sim.scenarios import SimParams, run_scenario     # `kgroup simulate`
    from kgroup.sim.assignors import get_assignor, predict_after_removal, MemberInfo

Modules: ``assignors`` (range, roundrobin, sticky, cooperative-sticky; KIP-345 member order),
``client`` (a simulated classic-protocol consumer), ``engine`` (one clock for coordinator
timers and client events), ``metrics`` (ownership ledger), ``scenarios``, ``plot`` (matplotlib,
optional).
"""
