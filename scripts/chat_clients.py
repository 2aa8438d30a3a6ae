#!/usr/bin/env python3
"""Drives the chat example (examples/chat) with Python's `websockets` clients, a peer nobody
here wrote. Used by scripts/chat_check.sh.

1. N clients connect (at most 100 handshakes at a time) to ws://ADDR/ws.
2. Each sends K messages `c<client>-m<k>`; every client must receive all N*K, each sender's
   in order. Meanwhile a raw-socket client sends an unmasked frame and must get close 1002.
3. Raw-socket clients send a reserved opcode (close 1002) and invalid UTF-8 text (close
   1007); then one message from client 0 must still reach every client (the others are
   unaffected).
4. SIGTERM to the server (--pid): every client must see a close frame with code 1001.

Every wait is bounded; exits 1 on the first failure, with what went wrong.
"""

import argparse
import asyncio
import base64
import hashlib
import os
import signal
import struct
import sys
import time

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def fail(msg):
    print(f"chat_clients: FAIL: {msg}", file=sys.stderr, flush=True)
    # At once: the pending client tasks need no orderly end (the OS closes their sockets).
    os._exit(1)


class Client:
    """One `websockets` client and what it has received."""

    def __init__(self, index, n, k):
        self.index = index
        self.ws = None
        self.next = [0] * n  # per sender: the next `m` sequence number expected
        self.got = 0  # round-one messages received
        self.extra = []  # messages after round one
        self.k = k
        self.round_done = asyncio.Event()
        self.extra_done = asyncio.Event()
        self.closed = asyncio.Event()
        self.close_code = None
        self.error = None

    async def receive(self, n):
        """Reads until the connection closes, checking each message."""
        try:
            async for msg in self.ws:
                if not isinstance(msg, str):
                    raise AssertionError(f"binary message {msg!r}")
                if msg.startswith("c") and "-m" in msg:
                    sender, seq = msg[1:].split("-m")
                    sender, seq = int(sender), int(seq)
                    if not 0 <= sender < n or seq != self.next[sender]:
                        raise AssertionError(
                            f"{msg!r}: expected sequence {self.next[sender]} from {sender}"
                        )
                    self.next[sender] += 1
                    self.got += 1
                    if self.got == n * self.k:
                        self.round_done.set()
                else:
                    self.extra.append(msg)
                    self.extra_done.set()
        except ConnectionClosed:
            pass
        except Exception as e:  # noqa: BLE001 - reported below
            self.error = f"client {self.index}: {e!r}"
        finally:
            rcvd = self.ws.protocol.close_rcvd
            self.close_code = rcvd.code if rcvd is not None else None
            self.closed.set()
            self.round_done.set()
            self.extra_done.set()


async def raw_ws(host, port):
    """A raw connection through the handshake; returns (reader, writer)."""
    reader, writer = await asyncio.open_connection(host, port)
    key = base64.b64encode(os.urandom(16))
    writer.write(
        b"GET /ws HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
        % (host.encode(), port, key)
    )
    await writer.drain()
    head = (await reader.readuntil(b"\r\n\r\n")).decode("ascii").lower()
    if not head.startswith("http/1.1 101 "):
        fail(f"raw handshake: {head!r}")
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest()).decode().lower()
    if f"\r\nsec-websocket-accept: {accept}\r\n" not in head:
        fail(f"raw handshake: wrong Sec-WebSocket-Accept in {head!r}")
    return reader, writer


def masked(first, payload):
    mask = os.urandom(4)
    return bytes([first, 0x80 | len(payload)]) + mask + bytes(
        b ^ mask[i % 4] for i, b in enumerate(payload)
    )


async def read_frame(reader):
    """One server frame: (first byte, payload)."""
    b0, b1 = await reader.readexactly(2)
    length = b1 & 0x7F
    if length == 126:
        (length,) = struct.unpack("!H", await reader.readexactly(2))
    elif length == 127:
        (length,) = struct.unpack("!Q", await reader.readexactly(8))
    return b0, await reader.readexactly(length)


async def bad_frame(host, port, frame, want, what, conn=None, after=0):
    """Sends `frame` on `conn` (or a fresh connection) once `after` chat messages have come
    in; the server must answer with close `want` and end the connection."""
    reader, writer = conn if conn is not None else await raw_ws(host, port)
    skipped = 0
    sent = False
    while True:
        if not sent and skipped >= after:
            writer.write(frame)
            await writer.drain()
            sent = True
        b0, payload = await read_frame(reader)
        if b0 == 0x88:
            break
        if b0 != 0x81:
            fail(f"{what}: unexpected frame 0x{b0:02x} before the close")
        skipped += 1
    if not sent:
        fail(f"{what}: closed before the bad frame was sent")
    code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
    if code != want:
        fail(f"{what}: close code {code}, want {want} ({payload!r})")
    rest = await reader.read()
    if rest:
        fail(f"{what}: bytes after the close frame: {rest!r}")
    writer.close()
    print(f"ok: {what} -> close {code} ({payload[2:].decode(errors='replace')}); sent after "
          f"{after} chat messages, {skipped} received before the close", flush=True)


async def wait_all(events, timeout, what):
    try:
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), timeout)
    except asyncio.TimeoutError:
        fail(f"timed out after {timeout} s waiting for {what}")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True, help="HOST:PORT of the chat server")
    ap.add_argument("--pid", type=int, required=True, help="the server's pid (SIGTERM)")
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--messages", type=int, default=3, help="K: messages per client")
    ap.add_argument("--timeout", type=float, default=120.0, help="bound on each phase (s)")
    args = ap.parse_args()
    host, port = args.addr.rsplit(":", 1)
    port = int(port)
    n, k, limit = args.clients, args.messages, args.timeout
    url = f"ws://{host}:{port}/ws"
    clients = [Client(i, n, k) for i in range(n)]

    # 1. Connect everyone; each starts receiving at once.
    t0 = time.monotonic()
    gate = asyncio.Semaphore(100)
    tasks = []

    async def open_one(c):
        async with gate:
            c.ws = await connect(
                url, proxy=None, compression=None, ping_interval=None, open_timeout=limit,
                close_timeout=10, max_queue=None, max_size=2**16,
            )
        tasks.append(asyncio.create_task(c.receive(n)))

    try:
        await asyncio.wait_for(asyncio.gather(*(open_one(c) for c in clients)), limit)
    except Exception as e:  # noqa: BLE001
        fail(f"connecting {n} clients: {e!r}")
    print(f"ok: {n} clients connected in {time.monotonic() - t0:.1f} s", flush=True)

    # 2. Everyone sends K messages; each client must get all n*k. A malformed frame meanwhile.
    t0 = time.monotonic()

    async def send_all(c):
        for m in range(k):
            await c.ws.send(f"c{c.index}-m{m}")

    # The raw client joins the room first, so chat traffic flows to it around its bad frame.
    raw = await raw_ws(host, port)
    unmasked = bad_frame(host, port, bytes([0x81, 0x02]) + b"hi", 1002,
                         "raw client, unmasked frame during the broadcast", conn=raw,
                         after=min(100, n * k))
    try:
        await asyncio.wait_for(
            asyncio.gather(unmasked, *(send_all(c) for c in clients)), limit)
    except asyncio.TimeoutError:
        fail("sending timed out")
    await wait_all([c.round_done for c in clients], limit, f"{n * k} messages at every client")
    for c in clients:
        if c.error:
            fail(c.error)
        if c.got != n * k or any(x != k for x in c.next):
            fail(f"client {c.index}: got {c.got} of {n * k} (closed: {c.close_code})")
    took = time.monotonic() - t0
    print(f"ok: every one of {n} clients received all {n * k} messages "
          f"({n * n * k} deliveries in {took:.1f} s, {n * n * k / took:,.0f}/s)", flush=True)

    # 3. More malformed frames; the others go on.
    await bad_frame(host, port, masked(0x83, b"x"), 1002, "raw client, reserved opcode 0x3")
    await bad_frame(host, port, masked(0x81, b"\xff\xfe"), 1007, "raw client, invalid UTF-8")
    await clients[0].ws.send("after the bad frames")
    await wait_all([c.extra_done for c in clients], limit, "the message after the bad frames")
    for c in clients:
        if c.error:
            fail(c.error)
        if c.extra != ["after the bad frames"]:
            fail(f"client {c.index}: after the bad frames got {c.extra!r}")
    print(f"ok: all {n} clients unaffected by the bad frames", flush=True)

    # 4. SIGTERM: every client must get close 1001.
    os.kill(args.pid, signal.SIGTERM)
    await wait_all([c.closed for c in clients], limit, "the close frames after SIGTERM")
    codes = {}
    for c in clients:
        if c.error:
            fail(c.error)
        codes[c.close_code] = codes.get(c.close_code, 0) + 1
    if codes != {1001: n}:
        fail(f"close codes after SIGTERM: {codes}")
    print(f"ok: all {n} clients closed with 1001 (going away) on SIGTERM", flush=True)
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    asyncio.run(main())
