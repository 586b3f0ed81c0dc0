"""A database server slow to take new connections: a TCP relay in front of PostgreSQL
that, once slowed, holds each new connection for a while before it reaches the server
(a host whose CPU is saturated forks each backend late), and can end every connection
it relays (as a server restart, or a firewall's idle timeout, ends them)."""
import select
import socket
import threading
import time


class SlowAccept:
    """Listens on a free loopback port (self.port) and relays to 127.0.0.1:upstream."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.delay = 0.0
        self.lock = threading.Lock()
        self.pairs = []
        self.stopping = False
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def params(self, dbparams, cluster_port):
        """DBDParams that reach the server through this relay."""
        return dbparams.replace("port=%d" % cluster_port, "port=%d" % self.port)

    def slow(self, seconds):
        """Each connection taken from now on reaches the server seconds later."""
        self.delay = seconds

    def end_all(self):
        """Ends every connection relayed now (both sides closed)."""
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        self.stopping = True
        self.listener.close()
        self.end_all()

    def _accept(self):
        while not self.stopping:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client, self.delay),
                             daemon=True).start()

    def _relay(self, client, delay):
        time.sleep(delay)
        try:
            server = socket.create_connection(("127.0.0.1", self.upstream), timeout=10)
        except OSError:
            client.close()
            return
        server.settimeout(None)
        with self.lock:
            self.pairs.append((client, server))
        ends = {client: server, server: client}
        try:
            while not self.stopping:
                ready, _, _ = select.select(list(ends), [], [], 1.0)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    ends[s].sendall(data)
        except OSError:
            pass
        finally:
            client.close()
            server.close()
            with self.lock:
                if (client, server) in self.pairs:
                    self.pairs.remove((client, server))
