"""Many GET requests on one keep-alive connection, pipelined a few at a time: a plain
socket reads each answer's status line, headers and Content-Length body. For tests that
need thousands of scans with their own headers, where requests' own cost per call
(about half a millisecond) would be most of the test's time."""
import socket


def _read_answer(f):
    status = f.readline()
    if not status:
        raise ConnectionError("the server closed the connection")
    code = int(status.split()[1])
    length, close = 0, False
    while True:
        line = f.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        k, _, v = line.partition(b":")
        k = k.strip().lower()
        if k == b"content-length":
            length = int(v)
        elif k == b"connection" and v.strip().lower() == b"close":
            close = True
        elif k == b"transfer-encoding":
            raise ValueError("chunked answers are not read here")
    body = f.read(length) if length else b""
    return code, body, close


def get_many(host, port, items, depth=16, timeout=60):
    """GET each (path, headers) of items in order on keep-alive connections, up to depth
    requests in flight; returns the status codes in order. A connection the server closes
    is opened again for the requests not yet answered."""
    items = list(items)
    codes = []
    while len(codes) < len(items):
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            f = s.makefile("rb")
            sent = len(codes)
            closed = False
            while len(codes) < len(items) and not closed:
                while sent < len(items) and sent - len(codes) < depth:
                    path, headers = items[sent]
                    head = "GET %s HTTP/1.1\r\nHost: %s:%d\r\n" % (path, host, port)
                    head += "".join("%s: %s\r\n" % kv for kv in headers.items())
                    s.sendall((head + "\r\n").encode("latin-1"))
                    sent += 1
                code, _, closed = _read_answer(f)
                codes.append(code)
    return codes
