"""Network faults: iptables partitions and packet loss (inside the runner's own network
namespace), and a fault-injecting proxy that delays and reorders traffic between nodes
(this kernel has no netem)."""
import asyncio
import os
import random
import subprocess
import threading

CHAIN = "FGCHAOS"


def in_private_netns():
    return os.environ.get("FG_CHAOS_NETNS") == "1"


def _ipt(*args):
    subprocess.run(["iptables", "-w", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


class Firewall:
    """Rules live in one chain hooked into INPUT, so healing is one flush. Only used inside
    the private namespace: nothing outside it is touched."""

    def __init__(self):
        self.ready = False

    def setup(self):
        if not in_private_netns():
            raise RuntimeError("firewall faults need the runner's private network namespace "
                               "(run as root)")
        if not self.ready:
            if subprocess.run(["iptables", "-w", "-L", CHAIN, "-n"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode != 0:
                _ipt("-N", CHAIN)
                _ipt("-I", "INPUT", "-j", CHAIN)
            _ipt("-F", CHAIN)
            self.ready = True

    def drop(self, src_host, dst_host):
        self.setup()
        _ipt("-A", CHAIN, "-s", src_host, "-d", dst_host, "-j", "DROP")

    def partition(self, side_a, side_b):
        """Symmetric: nothing passes between the two sides."""
        for a in side_a:
            for b in side_b:
                self.drop(a.host, b.host)
                self.drop(b.host, a.host)

    def one_way(self, senders, receivers):
        """Packets from `senders` never reach `receivers`; the other direction works."""
        for a in senders:
            for b in receivers:
                self.drop(a.host, b.host)

    def loss(self, nodes, probability):
        """Each packet between two nodes is dropped with `probability`."""
        self.setup()
        lo = min(n.host for n in nodes)
        hi = max(n.host for n in nodes)
        _ipt("-A", CHAIN, "-m", "iprange", "--src-range", "%s-%s" % (lo, hi), "--dst-range",
             "%s-%s" % (lo, hi), "-m", "statistic", "--mode", "random", "--probability",
             "%.4f" % probability, "-j", "DROP")

    def heal(self):
        if self.ready:
            _ipt("-F", CHAIN)


class DelayProxy:
    """Sits on each node's announced bus address (UDP gossip and TCP peer links) and passes
    traffic to the node's real address after `delay_ms` plus up to `jitter_ms` of random
    extra. Datagrams and separate connections overtake one another (reordering); bytes on
    one connection keep their order, as TCP would."""

    def __init__(self, nodes, seed):
        self.nodes = nodes
        self.rng = random.Random(seed)
        self.delay_s = 0.0
        self.jitter_s = 0.0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.servers = []
        self.forwarded = 0

    def set_delay(self, delay_ms, jitter_ms):
        self.delay_s, self.jitter_s = delay_ms / 1000.0, jitter_ms / 1000.0

    def _lag(self):
        return self.delay_s + self.rng.random() * self.jitter_s

    def start(self):
        self.thread.start()
        fut = asyncio.run_coroutine_threadsafe(self._listen_all(), self.loop)
        fut.result(timeout=10)

    def close(self):
        async def shut():
            for s in self.servers:
                s.close()
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        try:
            asyncio.run_coroutine_threadsafe(shut(), self.loop).result(timeout=5)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    async def _listen_all(self):
        for n in self.nodes:
            target = (n.host, n.bus_port)
            srv = await asyncio.start_server(
                lambda r, w, t=target: self._tcp(r, w, t), n.announce, n.bus_port)
            self.servers.append(srv)
            transport, _ = await self.loop.create_datagram_endpoint(
                lambda t=target: _UdpRelay(self, t), local_addr=(n.announce, n.bus_port))
            self.servers.append(transport)

    async def _tcp(self, reader, writer, target):
        try:
            up_r, up_w = await asyncio.open_connection(*target)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(self._pump(reader, up_w), self._pump(up_r, writer),
                                 return_exceptions=True)
        except asyncio.CancelledError:  # the proxy is closing: end quietly
            up_w.close()
            writer.close()

    async def _pump(self, reader, writer):
        queue = asyncio.Queue()

        async def deliver():
            while True:
                due, data = await queue.get()
                wait = due - self.loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if data is None:
                    writer.close()
                    return
                writer.write(data)
                self.forwarded += 1
                await writer.drain()

        task = self.loop.create_task(deliver())
        last_due = 0.0
        try:
            while True:
                data = await reader.read(65536)
                last_due = max(last_due, self.loop.time() + self._lag())
                await queue.put((last_due, data or None))
                if not data:
                    break
        except (OSError, ConnectionError):
            await queue.put((last_due, None))
        await task


class _UdpRelay(asyncio.DatagramProtocol):
    def __init__(self, proxy, target):
        self.proxy, self.target = proxy, target

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        def send():
            self.transport.sendto(data, self.target)
            self.proxy.forwarded += 1
        self.proxy.loop.call_later(self.proxy._lag(), send)
