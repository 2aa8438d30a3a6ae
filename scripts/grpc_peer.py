#!/usr/bin/env python3
"""Python's grpcio as the peer of examples/grpc (used by scripts/grpc_check.sh).

  grpc_peer.py client --addr 127.0.0.1:PORT [--calls N]
      calls every method of corering.echo.Echo, checks every byte, and a call past its
      deadline must end with DEADLINE_EXCEEDED; exits 1 on any failure.
  grpc_peer.py server
      serves corering.echo.Echo on a free 127.0.0.1 port, prints "listening on PORT".

Needs echo_pb2 and echo_pb2_grpc (grpc_tools.protoc on examples/grpc/proto/echo.proto) on
PYTHONPATH.
"""
import argparse
import random
import sys
import time
from concurrent import futures

import grpc

import echo_pb2
import echo_pb2_grpc

MAX_PAYLOAD = 3 * 1024 * 1024
CYCLE = bytes(range(251))


def pattern(seed, i, size):
    """Reply i of a server stream: byte j is (seed + 7 i + j) mod 251."""
    base = (seed + 7 * i) % 251
    reps = (base + size) // 251 + 1
    return (CYCLE * reps)[base:base + size]


class Echo(echo_pb2_grpc.EchoServicer):
    def Unary(self, request, context):
        if request.delay_ms:
            time.sleep(request.delay_ms / 1000)
        return echo_pb2.EchoReply(payload=request.payload, count=1)

    def ServerStream(self, request, context):
        if request.size > MAX_PAYLOAD or request.count > 100000:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "too large")
        for i in range(request.count):
            if request.delay_ms:
                time.sleep(request.delay_ms / 1000)
            yield echo_pb2.EchoReply(payload=pattern(request.seed, i, request.size), count=i)

    def ClientStream(self, request_iterator, context):
        parts, count = [], 0
        for req in request_iterator:
            if req.delay_ms:
                time.sleep(req.delay_ms / 1000)
            parts.append(req.payload)
            count += 1
        payload = b"".join(parts)
        if len(payload) > MAX_PAYLOAD:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "too large")
        return echo_pb2.EchoReply(payload=payload, count=count)


def serve():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    echo_pb2_grpc.add_EchoServicer_to_server(Echo(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"listening on {port}", flush=True)
    server.wait_for_termination()


class Failed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failed(what)


def check_unary(stub, payload):
    reply = stub.Unary(echo_pb2.EchoRequest(payload=payload), timeout=30)
    expect(reply.payload == payload, f"unary ({len(payload)} bytes): reply differs")


def check_server_stream(stub, count, size, seed):
    n = 0
    req = echo_pb2.StreamRequest(count=count, size=size, seed=seed)
    for i, reply in enumerate(stub.ServerStream(req, timeout=30)):
        expect(reply.count == i and reply.payload == pattern(seed, i, size),
               f"server stream ({count} x {size}, seed {seed}): reply {i} differs")
        n += 1
    expect(n == count, f"server stream: {n} replies, {count} asked")


def check_client_stream(stub, payloads):
    reqs = iter([echo_pb2.EchoRequest(payload=p) for p in payloads])
    reply = stub.ClientStream(reqs, timeout=30)
    expect(reply.count == len(payloads) and reply.payload == b"".join(payloads),
           f"client stream ({len(payloads)} messages): reply differs")


def client(addr, calls):
    rng = random.Random(3)
    options = [("grpc.max_receive_message_length", 8 << 20)]
    with grpc.insecure_channel(addr, options=options) as channel:
        stub = echo_pb2_grpc.EchoStub(channel)
        for size in (0, 1, 16379, 65536, 1 << 20):
            check_unary(stub, rng.randbytes(size))
        print("python client: unary ok")
        check_server_stream(stub, 0, 10, 1)
        check_server_stream(stub, 5, 1000, 42)
        check_server_stream(stub, 3, 1 << 20, 7)
        print("python client: server stream ok")
        check_client_stream(stub, [])
        check_client_stream(stub, [b"one ", b"two ", rng.randbytes(100000)])
        check_client_stream(stub, [rng.randbytes(1 << 20), rng.randbytes(4321)])
        print("python client: client stream ok")

        # Random calls, 16 at once (the channel multiplexes them on one connection).
        def one(k):
            r = random.Random(k)
            kind = k % 3
            if kind == 0:
                check_unary(stub, r.randbytes(r.randint(0, 1 << 20)))
            elif kind == 1:
                count = r.randint(1, 8)
                check_server_stream(stub, count, r.randint(0, (1 << 20) // count),
                                    r.getrandbits(32))
            else:
                check_client_stream(stub, [r.randbytes(r.randint(0, 1 << 17))
                                           for _ in range(r.randint(0, 8))])
        with futures.ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(one, range(calls)))
        print(f"python client: {calls} random calls ok")

        # Past its deadline: the server waits 2 s, the deadline is 100 ms.
        try:
            stub.Unary(echo_pb2.EchoRequest(payload=b"late", delay_ms=2000), timeout=0.1)
            raise Failed("deadline: the call succeeded past its deadline")
        except grpc.RpcError as e:
            expect(e.code() == grpc.StatusCode.DEADLINE_EXCEEDED,
                   f"deadline: want DEADLINE_EXCEEDED, got {e.code()}: {e.details()}")
        # Mid-stream: replies 100 ms apart, a deadline of 350 ms.
        got = 0
        try:
            req = echo_pb2.StreamRequest(count=50, size=1000, seed=9, delay_ms=100)
            for i, reply in enumerate(stub.ServerStream(req, timeout=0.35)):
                expect(reply.payload == pattern(9, i, 1000), f"late stream: reply {i} differs")
                got += 1
            raise Failed("deadline: the stream ended past its deadline")
        except grpc.RpcError as e:
            expect(e.code() == grpc.StatusCode.DEADLINE_EXCEEDED,
                   f"stream deadline: want DEADLINE_EXCEEDED, got {e.code()}: {e.details()}")
        print(f"python client: deadlines ok (DEADLINE_EXCEEDED; {got} replies before it)")
        # And the server goes on.
        check_unary(stub, b"after")
    print("python client: all checks passed")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["client", "server"])
    p.add_argument("--addr", default="127.0.0.1:50051")
    p.add_argument("--calls", type=int, default=300)
    a = p.parse_args()
    if a.mode == "server":
        serve()
        return 0
    try:
        client(a.addr, a.calls)
    except (Failed, grpc.RpcError) as e:
        print(f"python client: FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
