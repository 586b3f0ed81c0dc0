"""Many GET requests on one keep-alive connection, pipelined a few at a time: a plain
socket reads each answer's status line, headers and Content-Length body. For tests that
need thousands of scans with their own headers, where requests' own cost per call
(about half a millisecond) would be most of the test's time."""
import socket


class ClosedBeforeAnswer(ConnectionError):
    """The server closed the connection before any byte of the next answer."""


def read_answer(f):
    """The next answer on f (a socket's makefile("rb")): (status, body, whether it says
    Connection: close); ClosedBeforeAnswer when the connection ends first."""
    status = f.readline()
    if not status:
        raise ClosedBeforeAnswer("the server closed the connection")
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
    is opened again for the requests not yet answered: after an answer that says so, or,
    as HTTP clients do for such requests, when a connection that has answered closes
    before any byte of the next answer (httpd's event MPM closes idle keep-alive
    connections when its workers are all busy, without reading what came)."""
    items = list(items)
    codes = []
    while len(codes) < len(items):
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            f = s.makefile("rb")
            sent = fresh = len(codes)
            closed = False
            while len(codes) < len(items) and not closed:
                while sent < len(items) and sent - len(codes) < depth:
                    path, headers = items[sent]
                    head = "GET %s HTTP/1.1\r\nHost: %s:%d\r\n" % (path, host, port)
                    head += "".join("%s: %s\r\n" % kv for kv in headers.items())
                    try:
                        s.sendall((head + "\r\n").encode("latin-1"))
                    except (BrokenPipeError, ConnectionResetError):
                        if len(codes) == fresh:
                            raise
                        closed = True
                        break
                    sent += 1
                if closed:
                    break
                try:
                    code, _, closed = read_answer(f)
                except (ClosedBeforeAnswer, ConnectionResetError):
                    if len(codes) == fresh:
                        raise
                    break
                codes.append(code)
    return codes
