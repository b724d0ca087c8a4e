"""kgroup.sim: predict what group operations cost, on the embedded coordinator in virtual time.

    from kgroup.sim.model import SimParams                       # `kgroup simulate`
    from kgroup.sim.scenarios import run_scenario

The assignors the simulated leaders run are library code, in ``kgroup.assignors``.

Modules: ``client`` (a simulated classic-protocol consumer), ``consumer_client`` (a simulated
KIP-848 consumer-protocol one), ``process`` (what both share: stopping, coalesced heartbeats), ``consumer_group``
(the simulated consumer group's topic image and settle test), ``group_config`` (the simulated broker's
group.* settings and the consumers', checked as a broker checks them), ``engine`` (one clock for coordinator
timers and client events), ``metrics`` (ownership ledger), ``model`` (parameters, results,
comparisons), ``scenarios``, ``protocol_roll`` (upgrade-protocol / downgrade-protocol: one group, both
protocols in turn), ``plot`` (matplotlib, optional) and ``timeline_layout`` (its and ``connect.plot``'s
shared rules for rows, labels and shades). The package ``connect`` is `kgroup simulate connect`:
Connect workers on the ``connect`` group type.
"""
