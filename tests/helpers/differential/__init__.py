"""The differential scenario runner: one scenario (data), the same real clients, played against the
real Apache Kafka and against ``kgroup serve``; everything a client or an operator can observe is
recorded on each side and compared (docs/conformance.md, "The embedded coordinator beside Kafka
4.4: differential scenarios", says what is compared and how to run it against any cluster).

- ``scenario``: what a scenario is (members, a timeline of steps) and the step constructors;
- ``sides``: a side = a bootstrap address (the real Kafka, a ``kgroup serve`` subprocess);
- ``clients``: the real clients as scripted members, recording their rebalance callbacks and errors;
- ``observe``: what is read from a side (DescribeGroups, committed offsets, ``__consumer_offsets``);
- ``play``: one scenario on one side -> its observation;
- ``compare``: two observations -> the difference lines;
- ``run``: scenarios on both sides, side by side in a bounded thread pool.
"""
