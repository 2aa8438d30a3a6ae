#!/usr/bin/env python3
"""TechEmpower's rules, checked against a running tfb server (python3 stdlib only).

usage: tfb_verify.py check PORT PSQL...   every rule (PSQL: the psql command line that
                                           reaches hello_world, used to check updates)
       tfb_verify.py status PORT PATH     prints the status of GET PATH, or 'timeout' after
                                           5 s (exit 0 either way; 1 on a connection error)

`check` prints one line per passed check and exits 1 at the first failure.
"""
import html
import json
import socket
import subprocess
import sys

HOST = "127.0.0.1"
TIMEOUT = 10.0

FORTUNES = [
    (1, "fortune: No such file or directory"),
    (2, "A computer scientist is someone who fixes things that aren't broken."),
    (3, "After enough decimal places, nobody gives a damn."),
    (4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1"),
    (5, "A computer program does what you tell it to do, not what you want it to do."),
    (6, "Emacs is a nice operating system, but I prefer UNIX. \u2014 Tom Christaensen"),
    (7, "Any program that runs right is obsolete."),
    (8, "A list is only as strong as its weakest link. \u2014 Donald Knuth"),
    (9, "Feature: A bug with seniority."),
    (10, "Computers make very fast, very accurate mistakes."),
    (11, '<script>alert("This should not be displayed in a browser alert box.");</script>'),
    (12, "\u30d5\u30ec\u30fc\u30e0\u30ef\u30fc\u30af\u306e\u30d9\u30f3\u30c1\u30de\u30fc\u30af"),
]


class Fail(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Fail(what)


class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name):
        return self.headers.get(name.lower())


class Conn:
    """One keep-alive HTTP/1.1 connection with a strict response parser."""

    def __init__(self, port, timeout=TIMEOUT):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def send(self, paths):
        req = b"".join(
            b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (p.encode(), HOST.encode()) for p in paths
        )
        self.sock.sendall(req)

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise Fail("the server closed the connection mid-response")
        self.buf += data

    def read(self):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        expect(parts[0] == "HTTP/1.1", "status line %r" % lines[0])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            expect(name.lower() not in headers, "header %s twice" % name)
            headers[name.lower()] = value.strip()
        expect("transfer-encoding" not in headers, "chunked body (no Content-Length)")
        expect("content-length" in headers, "no Content-Length in %r" % lines)
        length = int(headers["content-length"])
        while len(self.buf) < length:
            self._fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return Response(int(parts[1]), headers, body)

    def get(self, path):
        self.send([path])
        return self.read()


def check_headers(res, path, content_type):
    expect(res.status == 200, "%s: status %d, body %r" % (path, res.status, res.body[:200]))
    for h in ("server", "date", "content-type", "content-length"):
        expect(res.header(h), "%s: no %s header" % (path, h))
    expect(
        res.header("content-type") == content_type,
        "%s: Content-Type %r, not %r" % (path, res.header("content-type"), content_type),
    )
    expect(int(res.header("content-length")) == len(res.body), "%s: Content-Length" % path)


def check_world(w, path):
    expect(isinstance(w, dict) and set(w) == {"id", "randomNumber"}, "%s: row %r" % (path, w))
    for k in ("id", "randomNumber"):
        v = w[k]
        expect(type(v) is int and 1 <= v <= 10000, "%s: %s = %r out of 1..10000" % (path, k, v))


def expected_fortunes():
    rows = FORTUNES + [(0, "Additional fortune added at request time.")]
    rows.sort(key=lambda r: r[1].encode("utf-8"))
    out = (
        "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
        "<tr><th>id</th><th>message</th></tr>"
    )
    for i, m in rows:
        out += "<tr><td>%d</td><td>%s</td></tr>" % (i, html.escape(m, quote=True))
    return (out + "</table></body></html>").encode("utf-8")


# (query string, expected row count): TechEmpower's clamping rules.
QUERY_CASES = [
    ("", 1), ("?queries=", 1), ("?queries=abc", 1), ("?queries=-5", 1), ("?queries=0", 1),
    ("?queries=1", 1), ("?queries=20", 20), ("?queries=500", 500), ("?queries=501", 500),
    ("?queries=100000", 500), ("?foo=2&queries=7", 7),
]


def check(port, psql):
    c = Conn(port)
    ok = lambda what: print("tfb_verify: ok: " + what, flush=True)

    res = c.get("/plaintext")
    check_headers(res, "/plaintext", "text/plain")
    expect(res.body == b"Hello, World!", "/plaintext body %r" % res.body)
    ok("/plaintext")

    res = c.get("/json")
    check_headers(res, "/json", "application/json")
    expect(res.body == b'{"message":"Hello, World!"}', "/json body %r" % res.body)
    ok("/json")

    ids = set()
    for _ in range(20):
        res = c.get("/db")
        check_headers(res, "/db", "application/json")
        w = json.loads(res.body)
        check_world(w, "/db")
        ids.add(w["id"])
    expect(len(ids) > 1, "/db: 20 requests, one id: not random")
    ok("/db (20 requests, %d distinct ids)" % len(ids))

    for q, n in QUERY_CASES:
        path = "/queries" + q
        res = c.get(path)
        check_headers(res, path, "application/json")
        rows = json.loads(res.body)
        expect(isinstance(rows, list) and len(rows) == n, "%s: %d rows, not %d" % (path, len(rows), n))
        for w in rows:
            check_world(w, path)
    ok("/queries, clamped: " + ", ".join("%s->%d" % (q or "(none)", n) for q, n in QUERY_CASES))

    expected = expected_fortunes()
    for _ in range(3):
        res = c.get("/fortunes")
        check_headers(res, "/fortunes", "text/html; charset=utf-8")
        expect(res.body == expected, "/fortunes body differs:\n%r\nexpected\n%r" % (res.body, expected))
    ok("/fortunes byte-exact (%d bytes)" % len(expected))

    check_updates(c, psql, ok)

    res = c.get("/nope")
    expect(res.status == 404 and res.header("server"), "404 without Server header")
    ok("404 with Server header")
    c.close()

    check_pipelining(port, ok)


def psql_rows(psql, sql):
    out = subprocess.run(psql + ["-At", "-c", sql], check=True, capture_output=True, text=True)
    return [line.split("|") for line in out.stdout.splitlines() if line]


def check_updates(c, psql, ok):
    # Zero every number first (outside 1..10000): a row the server updated holds its new
    # number, provably written by the update.
    psql_rows(psql, "UPDATE world SET randomnumber = 0")
    total = 0
    for q, n in [("", 1), ("?queries=abc", 1), ("?queries=5", 5), ("?queries=20", 20),
                 ("?queries=100000", 500)]:
        path = "/updates" + q
        res = c.get(path)
        check_headers(res, path, "application/json")
        rows = json.loads(res.body)
        expect(isinstance(rows, list) and len(rows) == n, "%s: %d rows, not %d" % (path, len(rows), n))
        for w in rows:
            check_world(w, path)
        want = {}
        for w in rows:
            want[w["id"]] = w["randomNumber"]
        expect(all(want[w["id"]] == w["randomNumber"] for w in rows), "%s: one id, two numbers" % path)
        got = dict(
            (int(i), int(r))
            for i, r in psql_rows(
                psql, "SELECT id, randomnumber FROM world WHERE id IN (%s)" % ",".join(map(str, want))
            )
        )
        expect(got == want, "%s: the database holds %r, the response said %r" % (path, got, want))
        total += len(want)
    psql_rows(psql, "UPDATE world SET randomnumber = floor(random() * 10000 + 1) WHERE randomnumber = 0")
    ok("/updates: clamped, %d rows persisted as answered (read back with psql)" % total)


def check_pipelining(port, ok):
    c = Conn(port)
    c.send(["/plaintext"] * 16)
    for i in range(16):
        res = c.read()
        check_headers(res, "pipelined /plaintext #%d" % i, "text/plain")
        expect(res.body == b"Hello, World!", "pipelined #%d body %r" % (i, res.body))
    expect(c.buf == b"", "extra bytes after 16 pipelined responses")
    ok("16 pipelined /plaintext requests on one socket, 16 responses")
    # Mixed, to see the order: each response must answer its own request.
    paths = []
    for i in range(16):
        paths += ["/plaintext", "/json", "/queries?queries=%d" % (i + 1)]
    c.send(paths)
    for p in paths:
        res = c.read()
        if p == "/plaintext":
            expect(res.body == b"Hello, World!", "pipelined order: %s got %r" % (p, res.body[:60]))
        elif p == "/json":
            expect(res.body == b'{"message":"Hello, World!"}', "pipelined order: %s got %r" % (p, res.body[:60]))
        else:
            n = int(p.rsplit("=", 1)[1])
            rows = json.loads(res.body)
            expect(isinstance(rows, list) and len(rows) == n, "pipelined order: %s got %d rows" % (p, len(rows)))
    ok("48 pipelined mixed requests answered in order")
    c.close()


def status(port, path):
    try:
        c = Conn(port, timeout=5.0)
        res = c.get(path)
        print(res.status)
        c.close()
    except socket.timeout:
        print("timeout")
    except (OSError, Fail) as e:
        print("error: %s" % e)
        return 1
    return 0


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "check":
        try:
            check(int(sys.argv[2]), sys.argv[3:])
        except (Fail, OSError, ValueError, subprocess.CalledProcessError) as e:
            print("tfb_verify: FAIL: %s" % e, file=sys.stderr)
            return 1
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "status":
        return status(int(sys.argv[2]), sys.argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
