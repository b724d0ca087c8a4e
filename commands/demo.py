"""`kgroup demo`: a guided tour on an embedded broker with real static consumers."""

import click

from kgroup.commands.options import CONTEXT_SETTINGS, output_option

GROUP = "demo-app"
TOPIC = "orders"
SESSION_TIMEOUT_MS = 6000


@click.command("demo", context_settings=CONTEXT_SETTINGS)
@output_option(["table", "json"])
@click.option("--consumers", type=click.IntRange(2, 8), default=3, show_default=True,
              help="Static consumers to start (group.instance.id node-0, node-1, ...).")
@click.option("--partitions", type=click.IntRange(1, 64), default=6, show_default=True,
              help=f"Partitions of the demo topic {TOPIC!r}.")
@click.option("--log-dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Keep the broker's log directory in DIR/logs (default: a temporary directory, removed at the end).")
def demo(output, consumers, partitions, log_dir):
    """Run kgroup against an embedded broker and real kafka-python static consumers.

    Starts `kgroup serve` in-process on a free port, starts static consumers, then runs list,
    describe, a rolling restart of one consumer (no rebalance), remove-members of another,
    describe again, an offset reset (the fleet stopped and removed, wait for Empty, the plan, then
    --execute), and decode-offsets / describe --from-dump of the resulting __consumer_offsets,
    printing each kgroup command line before its output. Takes about 15 s and cleans up.

    With -o json nothing is printed until the end, then one JSON object:
    {"ok", "steps": [{"note"} | {"command": [...], "exit_code", "output": the command's own -o json
    document}], "error"}.

    Exit status: 0 the tour ran, 1 something failed (the message says what).
    """
    import shutil
    import signal
    import tempfile

    from kgroup.errors import KgroupError

    workdir = log_dir or tempfile.mkdtemp(prefix="kgroup-demo-")
    tour = Narrator(json_mode=output == "json")
    error = None
    previous = _exit_on_sigterm()
    try:
        _tour(workdir, consumers, partitions, tour)
    except KgroupError as exc:
        error = str(exc)
    except OSError as exc:  # e.g. no free port or an unwritable temporary directory
        error = f"cannot run the embedded broker: {exc}"
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if log_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    if tour.json_mode:
        import json

        click.echo(json.dumps({"ok": error is None, "steps": tour.steps, "error": error}, indent=2))
    if error is not None:
        click.echo(f"kgroup demo: {error}", err=True)
        raise SystemExit(1)


def _exit_on_sigterm():
    """SIGTERM unwinds the tour as SIGINT does (consumers and broker stopped, the temporary
    directory removed), exiting 143; returns the handler to restore (None off the main thread)."""
    import signal

    def terminate(signum, frame):
        raise SystemExit(128 + signum)

    try:
        return signal.signal(signal.SIGTERM, terminate)
    except ValueError:  # not the main thread: signals cannot be handled here
        return None


def _tour(workdir, count, partitions, tour):
    import os

    from kgroup.client.fleet import stop_all
    from kgroup.errors import KgroupError
    from kgroup.records.partitioning import partition_for
    from kgroup.server.harness import ThreadedBroker

    say = tour.say
    say(f"Starting an embedded Kafka broker (kgroup serve) with topic {TOPIC!r} ({partitions} partitions) ...")
    broker = ThreadedBroker(os.path.join(workdir, "logs"), topics=[(TOPIC, partitions)],
                            config={"group.initial.rebalance.delay.ms": "0",
                                    "group.min.session.timeout.ms": "500",
                                    "offsets.topic.num.partitions": "50"})
    fleet = {}
    try:
        say(f"Broker listening on {broker.bootstrap}. Producing 60 messages ...")
        _produce(broker.bootstrap, partitions, 60)
        say(f"Starting {count} static consumers in group {GROUP!r} "
            f"(group.instance.id node-0..node-{count - 1}, session.timeout.ms {SESSION_TIMEOUT_MS}) ...")
        for i in range(count):
            fleet[f"node-{i}"] = _consumer(broker, f"node-{i}")
        _settle(broker, fleet, partitions)
        _await_commits(broker, partitions)
        bootstrap = ["--bootstrap-server", broker.bootstrap]

        tour.run(["list", *bootstrap])
        tour.run(["describe", GROUP, "--offsets", *bootstrap])

        before = _group(broker)
        leader = next(m.group_instance_id for m in before.members if m.member_id == before.leader)
        # A follower: a restarted leader makes kafka-python (JoinGroup < v9, no KIP-814) reassign.
        victim = next(name for name in sorted(fleet) if name != leader)
        say(f"Rolling restart of {victim}: a static consumer sends no LeaveGroup, and rejoins with the same "
            f"group.instance.id within the session timeout ...")
        fleet[victim].stop()
        fleet[victim] = _consumer(broker, victim)
        _settle(broker, fleet, partitions)
        after = _group(broker)
        say(f"Generation before {before.generation}, after {after.generation}: "
            + ("no rebalance; the other consumers never stopped." if after.generation == before.generation
               else "a rebalance happened (unexpected for a static restart)."))
        tour.run(["describe", GROUP, *bootstrap])

        leaving = next(name for name in sorted(fleet, reverse=True) if name != victim)
        say(f"Scaling down: stopping {leaving} for good. Without kgroup its partitions would sit idle until "
            f"the {SESSION_TIMEOUT_MS} ms session timeout; remove it now instead.")
        fleet.pop(leaving).stop()
        tour.run(["remove-members", GROUP, "--instance-id", leaving, "--dry-run", *bootstrap])
        tour.run(["remove-members", GROUP, "--instance-id", leaving, "--reason", "kgroup demo scale-down",
              "--wait", "--wait-timeout", "30", *bootstrap])
        tour.run(["describe", GROUP, *bootstrap])

        say("Moving the group's offsets, as a static fleet's runbook does: stop the consumers, wait for "
            "Empty, reset, restart. Stopping the rest of the fleet and removing it ...")
        stop_all(fleet.values())
        fleet.clear()
        tour.run(["remove-members", GROUP, "--all", *bootstrap])
        tour.run(["wait", GROUP, "--state", "Empty", "--timeout", "30", *bootstrap])
        say("The plan first (nothing changes), then --execute commits it: every partition back to its log start.")
        tour.run(["reset-offsets", GROUP, "--all-topics", "--to-earliest", *bootstrap])
        tour.run(["reset-offsets", GROUP, "--all-topics", "--to-earliest", "--execute", *bootstrap])
    finally:
        stop_all(fleet.values())
        broker.stop()
    offsets_dir = os.path.join(workdir, "logs", f"__consumer_offsets-{partition_for(GROUP, 50)}")
    if not os.path.isdir(offsets_dir):
        raise KgroupError(f"the broker wrote no {offsets_dir}")
    say("The broker is stopped. Everything above is in its __consumer_offsets log; read it offline:")
    tour.run(["decode-offsets", offsets_dir, "--view", "state", "--group", GROUP])
    tour.run(["describe", "--from-dump", offsets_dir, GROUP])


class Narrator:
    """Prints each step for a person (table), or collects the steps into one JSON document."""

    def __init__(self, json_mode: bool):
        self.json_mode = json_mode
        self.steps: list[dict] = []

    def say(self, text):
        if self.json_mode:
            self.steps.append({"note": text})
        else:
            click.echo(click.style(f"# {text}", fg="cyan"))

    def run(self, args):
        """Print the command line, then run it in this process (table output, or captured JSON)."""
        import contextlib
        import io
        import json
        import shlex
        import sys

        from kgroup.commands.cli import cli

        args = [args[0], "-o", "json" if self.json_mode else "table", *args[1:]]
        captured = io.StringIO()
        if not self.json_mode:
            click.echo(click.style("$ kgroup " + " ".join(shlex.quote(a) for a in args), bold=True))
        with contextlib.redirect_stdout(captured) if self.json_mode else contextlib.nullcontext():
            try:
                cli.main(args=args, prog_name="kgroup", standalone_mode=False)
                code = 0
            except SystemExit as exc:
                code = exc.code or 0
        sys.stdout.flush()
        if self.json_mode:
            text = captured.getvalue()
            try:
                output = json.loads(text)
            except ValueError:
                output = text
            self.steps.append({"command": ["kgroup", *args], "exit_code": code, "output": output})
            return
        if code not in (0, None):
            click.echo(f"(exit status {code})")
        click.echo("")


def _consumer(broker, instance):
    from kgroup.client.fleet import FleetConsumer

    return FleetConsumer(broker.bootstrap, GROUP, [TOPIC], instance, session_timeout_ms=SESSION_TIMEOUT_MS,
                         client_id=f"demo-{instance}")


def _group(broker):
    return broker.group(GROUP)


def _settle(broker, fleet, partitions, timeout=30.0):
    from kgroup.client.fleet import wait_settled
    from kgroup.errors import KgroupError

    if not wait_settled(lambda: _group(broker), fleet.values(), partitions, timeout):
        errors = [f"{name}: {c.error}" for name, c in fleet.items() if c.error]
        raise KgroupError(f"the demo group did not settle within {timeout:g}s"
                          + (f" ({'; '.join(errors)})" if errors else ""))


def _await_commits(broker, partitions, timeout=10.0):
    """Until auto-commit has stored an offset for every partition, so describe shows committed offsets."""
    from kgroup.client.fleet import wait_until

    wait_until(lambda: len(broker.committed_offsets(GROUP)) >= partitions, timeout)


def _produce(bootstrap, partitions, count):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False, client_id="demo-producer")
    try:
        for i in range(count):
            producer.send(TOPIC, value=f"order-{i}".encode(), partition=i % partitions)
        producer.flush(10)
    finally:
        producer.close()
