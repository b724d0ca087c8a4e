"""Drives `frame_fuzz` mutations into a running `kgroup serve` over many connections, and checks
that every connection is answered or closed within a bound.

Each session is one connection on the PLAINTEXT or the SASL_PLAINTEXT listener: plain requests;
frames before authentication; a SASL exchange (SaslHandshake v0 or v1, PLAIN or SCRAM) with a
mutated handshake or token; or requests after a valid PLAIN authentication. Each session's
frames name a group of their own, so JoinGroups do not wait for other sessions' members. After each batch of fuzz frames
(one, or several pipelined) a valid ApiVersions v0 probe follows: requests are served in order,
so its answer, or the server closing the connection, shows the batch was dealt with. Without
either within the bound, the client half-closes: a server still reading sees the end and must
close; only a server parked in a long-poll (Fetch, JoinGroup, SyncGroup, whose mutated timeouts
may be long) may stay silent. Anything else is a problem, reported with the frame that caused it.
The seed fixes every frame sent; which connection sends which depends on timing.
"""

from __future__ import annotations

import asyncio
import base64
import random
import struct
import time
from collections import Counter
from dataclasses import dataclass, field

from kgroup.server.frame_fuzz import (FUZZ_USER, PLAIN_TOKEN, Seed, Send, encode_frame,
                                      extreme_seeds, mutate, seeds)
from kgroup.server.security.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE

PROBE_ID = 0x5EEDF00D  # a correlation id no fuzz seed uses
_PROBE_ID_BYTES = struct.pack(">i", PROBE_ID)
_SIZE = struct.Struct(">i")


@dataclass
class Report:
    frames: int = 0  # fuzz frames sent (probes and valid authentication not counted)
    answers: int = 0  # frames read back, probes included
    connections: int = 0
    closed_by_server: int = 0
    waited: int = 0  # batches the server waited on for more bytes until the half-close
    parked: int = 0  # batches left unanswered in a long-poll (allowed)
    per_api: Counter = field(default_factory=Counter)  # by the seed's API name
    per_mutation: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def lines(self) -> list[str]:
        rate = self.frames / self.seconds if self.seconds else 0.0
        out = [f"frames tried: {self.frames} over {self.connections} connections in "
               f"{self.seconds:.1f} s ({rate:.0f} frames/s)",
               f"connections closed by the server: {self.closed_by_server}; waited for bytes: "
               f"{self.waited}; parked in a long-poll: {self.parked}",
               "per API: " + ", ".join(f"{k}={n}" for k, n in sorted(self.per_api.items())),
               "per mutation: " + ", ".join(f"{k}={n}"
                                            for k, n in sorted(self.per_mutation.items())),
               f"problems found: {len(self.problems)}"]
        return out + [f"  {p}" for p in self.problems]


def _probe() -> bytes:
    from kafka.protocol.metadata import ApiVersionsRequest

    return encode_frame(ApiVersionsRequest(version=0), PROBE_ID)


class _Conn:
    """One fuzz connection: send bytes, read frames with a deadline."""

    def __init__(self, reader, writer, bound):
        self.reader, self.writer, self.bound = reader, writer, bound

    async def send(self, chunks):
        for chunk in chunks:
            self.writer.write(chunk)
            if len(chunks) > 1:
                await self.writer.drain()
                await asyncio.sleep(0)
        await self.writer.drain()

    async def frame(self) -> bytes | None:
        """The next response frame, or None at the end of the stream."""
        try:
            head = await self.reader.readexactly(4)
            return await self.reader.readexactly(_SIZE.unpack(head)[0])
        except (asyncio.IncompleteReadError, ConnectionError):
            return None

    async def frame_within_bound(self) -> bytes | None:
        """The next response frame; None at the end of the stream or past the bound."""
        try:
            async with asyncio.timeout(self.bound):
                return await self.frame()
        except TimeoutError:
            return None

    async def until_probe_or_close(self, report) -> str:
        """'answered', 'closed' or 'silent'."""
        try:
            async with asyncio.timeout(self.bound):
                while True:
                    payload = await self.frame()
                    if payload is None:
                        report.closed_by_server += 1
                        return "closed"
                    report.answers += 1
                    if payload[:4] == _PROBE_ID_BYTES:
                        return "answered"
        except TimeoutError:
            return "silent"

    async def until_close(self) -> bool:
        """Half-close, then True if the server closes within the bound."""
        try:
            async with asyncio.timeout(self.bound):
                if self.writer.can_write_eof():
                    self.writer.write_eof()
                while await self.frame() is not None:
                    pass
            return True
        except TimeoutError:
            return False
        except OSError:  # already closed by the server
            return True


class FrameFuzzer:
    def __init__(self, plain_address, sasl_address, api_table, sasl_table, seed: int,
                 bound: float = 5.0):
        self.plain, self.sasl = plain_address, sasl_address
        self.plain_seeds = seeds(api_table)
        self.extreme_seeds = extreme_seeds(api_table)
        self.sasl_seeds = seeds(sasl_table)
        self.api_keys = set(sasl_table)
        self.api_names = {key: entry[0].__name__.removesuffix("Request")
                          for key, entry in sasl_table.items()}
        self.rng = random.Random(seed)
        self.bound = bound
        self.report = Report()
        self.probe = _probe()

    async def run(self, frames: int, concurrency: int = 32) -> Report:
        started = time.monotonic()
        session_rngs = iter(lambda: random.Random(self.rng.getrandbits(64)), None)
        remaining = [frames]

        async def worker():
            while remaining[0] > 0:
                try:
                    await self._session(next(session_rngs), remaining)
                except Exception as exc:  # a fuzzer bug is reported, not lost in the gather
                    self.report.problems.append(f"fuzzer error: {type(exc).__name__}: {exc}")
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        self.report.seconds = time.monotonic() - started
        return self.report

    async def _session(self, rng: random.Random, remaining):
        # a PLAIN authentication costs the server a 4096-round PBKDF2: SASL sessions are rarer
        kind = rng.choices(("plain", "sasl_before", "sasl_exchange", "sasl_after"),
                           (12, 3, 2, 1))[0]
        address = self.plain if kind == "plain" else self.sasl
        try:
            async with asyncio.timeout(self.bound):
                reader, writer = await asyncio.open_connection(*address)
        except (OSError, TimeoutError) as exc:
            self.report.problems.append(f"connect to {address}: {type(exc).__name__}: {exc}")
            await asyncio.sleep(0.1)
            return
        self.report.connections += 1
        conn = _Conn(reader, writer, self.bound)
        try:
            if kind == "sasl_after" and not await self._authenticate(conn, rng):
                return
            if kind == "sasl_exchange":
                await self._sasl_exchange(conn, rng, remaining)
                return
            pool = self.sasl_seeds if kind == "sasl_before" else self.plain_seeds
            group = f"fz{rng.randrange(10000):04d}"
            for _ in range(rng.randint(1, 12)):
                if remaining[0] <= 0:
                    return
                count = rng.randint(2, 8) if rng.random() < 0.15 else 1
                sends = [self._fuzz_frame(rng, pool, group, kind) for _ in range(count)]
                if await self._batch(conn, kind, sends, remaining) != "answered":
                    return
        finally:
            writer.close()

    def _fuzz_frame(self, rng, pool, group, kind) -> Send:
        """A mutated seed, or (a fifth of the time, after authentication) a well-formed frame with
        a field at the edge of its type."""
        if kind != "sasl_before" and rng.random() < 0.2:
            seed = rng.choice(self.extreme_seeds).in_group(group)
            return Send(seed, "extreme_value", [seed.frame])
        return mutate(rng.choice(pool).in_group(group), rng, self.api_keys)

    async def _batch(self, conn, kind, sends, remaining) -> str:
        remaining[0] -= len(sends)
        for send in sends:
            self.report.frames += 1
            self.report.per_api[self.api_names[send.seed.api_key]] += 1
            self.report.per_mutation[send.mutation] += 1
        size_lie = any(send.size_lie for send in sends)
        try:
            await conn.send([chunk for send in sends for chunk in send.chunks]
                            + ([] if size_lie else [self.probe]))
        except ConnectionError:  # closed by the server before all was written
            self.report.closed_by_server += 1
            return "closed"
        if not size_lie:
            outcome = await conn.until_probe_or_close(self.report)
            if outcome != "silent":
                return outcome
        if await conn.until_close():
            self.report.waited += 1
        elif any(send.may_park() for send in sends):
            self.report.parked += 1
        else:
            described = "; ".join(f"api {s.seed.api_key} v{s.seed.version} {s.mutation} "
                                  f"{s.data[:300].hex()}" for s in sends)
            self.report.problems.append(f"{kind}: neither answered nor closed within "
                                        f"{self.bound:.0f} s after: {described}")
        return "silent"

    # -- SASL ------------------------------------------------------------------------------
    async def _request(self, conn, frame: bytes) -> bytes | None:
        """Send one valid frame; its answer, or None (closed, or nothing within the bound)."""
        try:
            await conn.send([frame])
        except ConnectionError:
            return None
        payload = await conn.frame_within_bound()
        if payload is not None:
            self.report.answers += 1
        return payload

    async def _authenticate(self, conn, rng) -> bool:
        """A valid PLAIN exchange (SaslHandshake v1, SaslAuthenticate v0-2)."""
        from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse,
                                         SaslHandshakeRequest)

        handshake = SaslHandshakeRequest(version=1, mechanism="PLAIN")
        if await self._request(conn, encode_frame(handshake, 1)) is None:
            self.report.problems.append("a valid SaslHandshake was not answered")
            return False
        request = SaslAuthenticateRequest(version=rng.randint(0, 2), auth_bytes=PLAIN_TOKEN)
        reply = await self._request(conn, encode_frame(request, 2))
        if reply is None or SaslAuthenticateResponse.decode(
                reply, version=request.version, header=True).error_code != 0:
            self.report.problems.append("a valid PLAIN authentication was refused")
            return False
        return True

    async def _sasl_exchange(self, conn, rng, remaining):
        """A mutated SaslHandshake, or a valid one and then the mechanism's tokens with the last
        one mutated (SCRAM's client-final built on the server's real nonce, with a wrong proof)."""
        from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse,
                                         SaslHandshakeRequest)

        mechanism = rng.choice(("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"))
        handshake_version = rng.randint(0, 1)
        handshake = encode_frame(SaslHandshakeRequest(version=handshake_version,
                                                      mechanism=mechanism), 1)
        if rng.random() < 0.3:  # the handshake itself mutated
            handshake_seed = Seed(SASL_HANDSHAKE, handshake_version, handshake)
            await self._batch(conn, "sasl_exchange", [mutate(handshake_seed, rng, self.api_keys)],
                              remaining)
            return
        if await self._request(conn, handshake) is None:
            self.report.problems.append(f"a valid SaslHandshake v{handshake_version} "
                                        f"{mechanism} was not answered")
            return
        version = rng.randint(0, 2)

        def wrap(token: bytes) -> Seed:
            if handshake_version == 0:  # raw tokens: a size and the bytes, no header
                return Seed(SASL_AUTHENTICATE, -1, _SIZE.pack(len(token)) + token)
            return Seed(SASL_AUTHENTICATE, version, encode_frame(
                SaslAuthenticateRequest(version=version, auth_bytes=token), 3))

        if mechanism == "PLAIN":
            token = PLAIN_TOKEN
        else:
            nonce = base64.b64encode(rng.randbytes(18)).decode()
            first = f"n,,n={FUZZ_USER},r={nonce}".encode()
            if rng.random() < 0.5:
                token = first
            else:
                reply = await self._request(conn, wrap(first).frame)
                if reply is None:
                    self.report.problems.append(f"a valid {mechanism} client-first message "
                                                f"was not answered")
                    return
                if handshake_version == 1:
                    reply = SaslAuthenticateResponse.decode(reply, version=version,
                                                            header=True).auth_bytes or b""
                server_nonce = dict(p.split(b"=", 1) for p in reply.split(b",")
                                    if b"=" in p).get(b"r", b"").decode()
                proof = base64.b64encode(rng.randbytes(64)).decode()
                token = f"c=biws,r={server_nonce},p={proof}".encode()
        await self._batch(conn, "sasl_exchange", [mutate(wrap(token), rng, self.api_keys)],
                          remaining)


def run_fuzz(plain_address, sasl_address, frames: int, seed: int, bound: float = 5.0,
             concurrency: int = 32) -> Report:
    """Fuzz a serve with a PLAINTEXT and a SASL_PLAINTEXT listener (user FUZZ_USER)."""
    from kgroup.server.handlers.apis import build_api_table
    from kgroup.server.security.sasl import sasl_api_entries

    api_table = build_api_table()
    fuzzer = FrameFuzzer(plain_address, sasl_address, api_table,
                         {**api_table, **sasl_api_entries()}, seed, bound)
    return asyncio.run(fuzzer.run(frames, concurrency))
