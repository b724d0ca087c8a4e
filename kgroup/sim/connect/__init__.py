"""kgroup.sim.connect: `kgroup simulate connect`, simulated Kafka Connect workers (experimental).

Modules: `params` (parameters, option syntax, the case presets), `cluster` (the draft's workers and
their clock against the embedded coordinator), `script` (a case's scripted events, run until the
group settles), `simulation` (a run as `simulate connect`'s JSON document), `plot` (its `--plot`),
`classic` (the same workers on Connect's current classic protocol), `compare` (`--compare
protocol`'s three runs and their figures), `migration` (`simulate connect migration`: workers rolled
between the two protocols on one coordinator).
"""
