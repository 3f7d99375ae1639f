"""Real floodgate processes on loopback: start, kill -9, pause, stop, restart, and ask
their admin ports what they see."""
import ctypes
import glob
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

from .resp import Resp, RespError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAKETIME_LIB = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))),
                    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    # PR_SET_PDEATHSIG: a runner killed with -9 takes its nodes with it.
    _libc.prctl(1, signal.SIGKILL)


def free_port(host, kind=socket.SOCK_STREAM, also_udp=False):
    while True:
        s = socket.socket(socket.AF_INET, kind)
        s.bind((host, 0))
        port = s.getsockname()[1]
        s.close()
        if not also_udp:
            return port
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind((host, port))
            return port
        except OSError:
            continue
        finally:
            u.close()


def now():
    return time.monotonic()


class Node:
    """One floodgate process. Its ports and id survive restarts."""

    def __init__(self, idx, build, workdir, config, announce_proxy=False):
        self.idx = idx
        self.host = "127.0.0.%d" % (11 + idx)
        self.announce = "127.0.1.%d" % (11 + idx) if announce_proxy else self.host
        self.port = free_port(self.host)
        self.native_port = free_port(self.host)
        self.admin_port = free_port(self.host)
        self.bus_port = free_port(self.host, also_udp=True)
        if announce_proxy:  # the proxy listens on the announced address with the same ports
            self.bus_port = free_port(self.announce, also_udp=True)
        self.id = "chaos-%d" % idx
        self.binary = os.path.join(build, "node", "floodgate")
        self.workdir = workdir
        self.config = config
        self.proc = None
        self.paused = False
        self.clock_file = None
        self.starts = 0

    @property
    def bus(self):
        return "%s:%d" % (self.announce, self.bus_port)

    def start(self, seeds, cluster=True):
        self.reaped()  # (its last life, if it ended by itself)
        args = [self.binary, "--config", self.config, "--bind", self.host, "--port", str(self.port),
                "--native-port", str(self.native_port), "--admin-port", str(self.admin_port),
                "--log-level", "info"]
        if cluster:
            args += ["--cluster-enabled", "--cluster-port", str(self.bus_port), "--node-id",
                     self.id, "--cluster-secret-file", secret_file(self.workdir)]
            args += ["--tls-cluster"] + tls_files(self.workdir)
        if cluster and self.announce != self.host:
            args += ["--cluster-announce-host", self.announce]
        if cluster and seeds:
            args += ["--seeds", ",".join(seeds)]
        env = dict(os.environ)
        if self.clock_file:
            env.update(LD_PRELOAD=FAKETIME_LIB, FAKETIME_TIMESTAMP_FILE=self.clock_file,
                       FAKETIME_DONT_FAKE_MONOTONIC="1", FAKETIME_CACHE_DURATION="1")
        self.starts += 1
        log = open(os.path.join(self.workdir, "%s.log" % self.id), "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                                     preexec_fn=_die_with_parent)
        log.close()
        self.paused = False

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        if self.running():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.reaped()

    def reaped(self):
        """libfaketime keeps a shared-memory file and a semaphore per process, removed only when
        the process exits normally; a killed node's are removed here, or a later process given
        the same pid would fail to start ("shm_open failed: File exists")."""
        if self.clock_file and self.proc is not None and self.proc.poll() is not None:
            for name in ("faketime_shm_%d" % self.proc.pid, "sem.faketime_sem_%d" % self.proc.pid):
                try:
                    os.unlink(os.path.join("/dev/shm", name))
                except OSError:
                    pass

    def pause(self):
        if self.running():
            self.proc.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self):
        if self.running() and self.paused:
            self.proc.send_signal(signal.SIGCONT)
            self.paused = False

    def stop(self, timeout_s=15):
        """SIGTERM: a graceful leave (hands its slots' state over), then the process ends."""
        if not self.running():
            return True
        self.resume()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout_s)
            self.reaped()
            return True
        except subprocess.TimeoutExpired:
            self.kill9()
            return False

    def admin(self, path, timeout_s=0.5):
        try:
            with urllib.request.urlopen("http://%s:%d%s" % (self.host, self.admin_port, path),
                                        timeout=timeout_s) as r:
                return json.loads(r.read().decode())
        except Exception:
            return None

    def rss_kb(self):
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except (OSError, AttributeError):
            pass
        return 0

    def resp(self, timeout_s=2.0):
        return Resp(self.host, self.port, timeout_s)


def secret_file(workdir):
    """The run's cluster secret (gossip/DESIGN-NOTES.md): every scenario runs with the bus
    authenticated, so failover and partitions are checked with it on."""
    path = os.path.join(workdir, "cluster.secret")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(os.urandom(24).hex() + "\n")
    return path


def tls_files(workdir):
    """The run's certificates (deploy/make-certs): every scenario runs with the peer links
    under mutual TLS (node/OPERATIONS.md, TLS), so failover, partitions and hand-off are
    checked through it."""
    certs = os.path.join(workdir, "certs")
    if not os.path.exists(os.path.join(certs, "node.key")):
        subprocess.run([os.path.join(ROOT, "deploy", "make-certs"), certs], check=True,
                       stdout=subprocess.DEVNULL)
    return ["--tls-cert-file", os.path.join(certs, "node.crt"),
            "--tls-key-file", os.path.join(certs, "node.key"),
            "--tls-ca-cert-file", os.path.join(certs, "ca.crt")]


class Cluster:
    def __init__(self, build, workdir, config, n, proxy=False):
        self.build = build
        self.workdir = workdir
        self.config = config
        self.proxy = proxy
        self.nodes = [Node(i, build, workdir, config, proxy) for i in range(n)]

    def seeds_for(self, node):
        return [m.bus for m in self.nodes if m is not node and m.starts > 0] or \
               [m.bus for m in self.nodes if m is not node][:2]

    def start_all(self):
        for n in self.nodes:
            n.start([m.bus for m in self.nodes if m is not n])

    def add_node(self):
        n = Node(len(self.nodes), self.build, self.workdir, self.config, self.proxy)
        self.nodes.append(n)
        return n

    def live(self):
        return [n for n in self.nodes if n.running() and not n.paused]

    def stop_all(self):
        for n in self.nodes:
            if n.running():
                n.resume()
                n.proc.send_signal(signal.SIGKILL)
        for n in self.nodes:
            if n.proc is not None:
                try:
                    n.proc.wait(timeout=10)
                    n.reaped()
                except subprocess.TimeoutExpired:
                    pass

    def converged(self, expect=None):
        """Every live node ready, with quorum, on one epoch, seeing exactly the live set alive."""
        live = self.live() if expect is None else expect
        want = sorted(n.id for n in live)
        epochs = set()
        for n in live:
            c = n.admin("/cluster")
            if not c or not c.get("ready") or not c.get("quorum"):
                return False
            alive = sorted(m["id"] for m in c["members"] if m["state"] == "alive")
            if alive != want:
                return False
            if sorted(m["id"] for m in c["members"] if m.get("in_table")) != want:
                return False
            epochs.add(c.get("epoch"))
        return len(epochs) == 1

    def wait_converged(self, timeout_s=30, expect=None):
        t0 = now()
        while now() - t0 < timeout_s:
            if self.converged(expect):
                return now() - t0
            time.sleep(0.1)
        return None

    def slot_of(self, key):
        for n in self.live():
            try:
                r = n.resp()
                try:
                    return r.call("CLUSTER", "KEYSLOT", key)
                finally:
                    r.close()
            except (OSError, RespError, ConnectionError):
                continue
        raise RuntimeError("no node answers CLUSTER KEYSLOT")

    def owner_of(self, key):
        slot = self.slot_of(key)
        for n in self.live():
            c = n.admin("/cluster")
            if not c:
                continue
            for m in c["members"]:
                if any(a <= slot <= b for a, b in m["ranges"]):
                    return next((x for x in self.nodes if x.id == m["id"]), None)
        return None

    def node_states(self, observer):
        """{node id: state} as `observer` sees them, or None when it does not answer."""
        c = observer.admin("/cluster", timeout_s=0.3)
        if not c:
            return None
        return {m["id"]: m["state"] for m in c["members"]}
