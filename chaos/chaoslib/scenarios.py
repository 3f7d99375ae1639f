"""The scenarios: each starts its own cluster, puts it under load, injects one kind of fault
(durations and victims drawn from its seed), heals, and checks the bounds."""
import os
import threading
import time

from . import checks
from .cluster import FAKETIME_LIB
from .netfault import DelayProxy, Firewall
from .resp import RespError
from .run_context import CAP_LIMIT, CONN_LIMIT, LAG_S, LEASE_TTL_S, LIMIT, SLACK_S, Run


def _lost_bound(run, t):
    """What a failover at `t` may forget: admissions possibly decided in the last Δ."""
    return checks.possible_admissions(run.hist.of("take"), t - LAG_S - SLACK_S, t)


def _restart(run, node, label="restart"):
    t = run.hist.t()
    node.start(run.cluster.seeds_for(node))
    run.fault("%s %s" % (label, node.id), t, target=node.id)
    conv = run.wait_converged("converged after %s %s" % (label, node.id))
    return t + (conv or 0)


def healthy(run, quick):
    """64 clients on one hot key through every node: the limit holds exactly."""
    run.start()
    run.load()
    run.sleep(8 if quick else run.rng.uniform(10, 30))
    run.check_counters()
    run.end_load()
    run.check_admission()


def _owner_down(run, label, down, up, down_s):
    """The hot key's owner goes down (`down`) for `down_s`, then comes back (`up`): it is
    detected by all within 3 s, its replica serves, what is lost (counters, and
    over-admission of the hot key) is at most the last Δ, none with sync replication."""
    run.start()
    run.load()
    run.sleep(run.rng.uniform(2, 4))
    victim = run.cluster.owner_of(run.hot)
    t = run.hist.t()
    down(victim)
    run.watch_detection(victim, t)
    run.sleep(down_s)
    run.check_counters(t_loss_at=t)
    t2 = run.hist.t()
    up(victim)
    run.fault("%s %s" % (label, victim.id), t, t2, victim.id)
    conv = run.wait_converged("converged after %s ended" % label)
    run.faults.append((t, t2 + (conv or 0)))
    run.sleep(3)
    run.end_load()
    run.check_detection()
    run.check_admission(_lost_bound(run, t), "admissions possibly in the last Δ before it")
    run.check_serving()


def kill(run, quick):
    """kill -9 the hot key's owner, restart it: detected by all within 3 s, its replica
    serves, loss at most the last Δ (none with sync replication); it rejoins."""
    _owner_down(run, "kill -9", lambda n: n.kill9(),
                lambda n: n.start(run.cluster.seeds_for(n)), run.rng.uniform(4.5, 6))


def pause(run, quick):
    """SIGSTOP the owner for longer than the failure timeout, then SIGCONT: it is declared
    dead, its replica serves, and the woken node rejoins without answering from its old
    state."""
    _owner_down(run, "SIGSTOP", lambda n: n.pause(), lambda n: n.resume(), run.rng.uniform(5, 7))


def _partition(run, quick, how):
    run.start()
    run.load()
    run.sleep(run.rng.uniform(2, 4))
    fw = run.firewall = Firewall()
    nodes = run.cluster.nodes
    owner = run.cluster.owner_of(run.hot)
    others = [n for n in nodes if n is not owner]
    run.rng.shuffle(others)
    if how == "one-way":
        side_a, side_b = [owner], others
        label = "one-way: %s hears nobody" % owner.id
        fw.one_way(side_b, side_a)
        run.watch_detection(owner, run.hist.t())
    else:
        k = len(nodes) // 2 - 1  # 5 nodes: 2 | 3 (a minority); 4 nodes: 2 | 2 (a clean split)
        if how == "minority":
            # The owner and its replica (the next member in id order; R = 2): the minority
            # holds every copy of the hot key's slot, the majority none.
            ids = sorted(n.id for n in nodes)
            replica_id = ids[(ids.index(owner.id) + 1) % len(ids)]
            replica = next(n for n in others if n.id == replica_id)
            others.remove(replica)
            others.insert(0, replica)
        side_a, side_b = [owner] + others[:k], others[k:]
        label = "%s partition %s | %s" % (how, ",".join(n.id for n in side_a),
                                          ",".join(n.id for n in side_b))
        fw.partition(side_a, side_b)
    t = run.hist.t()
    run.sleep(run.rng.uniform(5, 8))
    fw.heal()
    t2 = run.hist.t()
    run.fault(label, t, t2)
    conv = run.wait_converged("converged after healing")
    run.faults.append((t, t2 + (conv or 0)))
    run.sleep(3)
    # A partition is not an owner kill: the side that keeps the quorum may take over with
    # the replica's copy it had; the figures say how much that cost. When the minority held
    # every copy, the majority answers the fail mode instead of serving from empty
    # (cluster-empty-grace), and at the heal the minority's state is merged into the new
    # owner's: every acknowledged count is there.
    every_copy = how == "minority"
    run.check_counters(t_loss_at=t, expect_no_loss=every_copy, report_only=not every_copy)
    run.end_load()
    if how == "one-way":
        run.check_detection(bound=False)  # a figure: the stated bound is for crashed nodes
        _check_stopped_before_declared_dead(run, owner, t, t2)
    run.check_admission()
    run.check_serving()


def _check_stopped_before_declared_dead(run, owner, t, healed):
    """No split brain: the cut-off owner gives no definite answer of its own between the
    first other node declaring it dead (a replica may serve its slots from then on) and
    the heal."""
    seen, _ = getattr(run, "detection", ({}, 0))
    if not seen:
        run.verdict.check("the others declared the cut-off owner dead", False)
        return
    declared = t + min(seen.values())
    idx = run.cluster.nodes.index(owner)
    late = [o for o in run.hist.of("take") if o[3] == idx and o[6] in ("ok", "deny") and
            o[7] is None and declared < o[5] < healed]
    run.verdict.check("cut-off owner stopped before it was declared dead", not late, len(late), 0,
                      "answers it gave after %.2fs" % declared)


def partition_minority(run, quick):
    """The owner and its replica cut off from the other three (symmetric): the minority
    holds every copy of the hot key's slot; after the heal no acknowledged count is lost."""
    _partition(run, quick, "minority")


def partition_split(run, quick):
    """Four nodes split two and two (the half with the lowest node id keeps serving)."""
    _partition(run, quick, "split")


def partition_oneway(run, quick):
    """The owner's packets reach the others; nothing reaches the owner."""
    _partition(run, quick, "one-way")


def loss(run, quick):
    """10% of packets between nodes dropped: nobody is declared dead, nothing over-admitted,
    nothing lost."""
    run.start()
    run.load()
    run.sleep(2)
    dur = 20 if quick else 600
    run.watch_false_dead(run.hist.t() + dur)
    fw = run.firewall = Firewall()
    t = run.hist.t()
    fw.loss(run.cluster.nodes, 0.10)
    run.sleep(dur)
    fw.heal()
    run.hist.mark("10%% packet loss", t, run.hist.t())
    run.sleep(2)
    run.check_counters()
    run.end_load()
    run.check_false_dead()
    run.check_admission()
    run.check_serving()


def delay(run, quick):
    """Traffic between nodes delayed 20–50 ms and reordered through a proxy: the limit still
    holds exactly and nobody is declared dead."""
    proxy = DelayProxy(run.cluster.nodes, run.seed)
    proxy.start()
    try:
        run.start()
        run.load()
        run.sleep(2)
        dur = run.rng.uniform(8, 12) if quick else run.rng.uniform(20, 60)
        run.watch_false_dead(run.hist.t() + dur)
        t = run.hist.t()
        proxy.set_delay(20, 30)
        run.sleep(dur)
        proxy.set_delay(0, 0)
        run.hist.mark("delay 20-50 ms, reordered", t, run.hist.t())
        run.sleep(2)
        run.verdict.figure("proxied_messages", proxy.forwarded)
        run.verdict.check("traffic went through the proxy", proxy.forwarded > 0, proxy.forwarded)
        run.check_counters()
        run.end_load()
        run.check_false_dead()
        run.check_admission()
        run.check_serving()
    finally:
        proxy.close()


def clock(run, quick):
    """The owner's wall clock jumps an hour ahead, then back: limits neither reset nor
    freeze, and nobody is declared dead."""
    for n in run.cluster.nodes:
        n.clock_file = os.path.join(run.workdir, "%s.clock" % n.id)
        with open(n.clock_file, "w") as f:
            f.write("+0\n")
    run.start()
    run.load()
    run.sleep(2)
    victim = run.cluster.owner_of(run.hot)
    run.watch_false_dead(run.hist.t() + 14)
    t = run.hist.t()
    with open(victim.clock_file, "w") as f:
        f.write("+3600\n")
    run.sleep(run.rng.uniform(4, 6))
    t2 = run.hist.t()
    with open(victim.clock_file, "w") as f:
        f.write("+0\n")
    run.hist.mark("clock +1h on %s" % victim.id, t, t2)
    run.hist.mark("clock back on %s" % victim.id, t2)
    run.sleep(5)
    run.check_counters()
    run.end_load()
    tail = [o for o in run.hist.of("take") if o[6] == "ok" and o[4] >= t2 + 2]
    run.verdict.check("still admits after the jump back", len(tail) >= LIMIT, len(tail),
                      ">= %d" % LIMIT, "admissions in the last 3 s")
    run.check_false_dead()
    run.check_admission()
    run.check_serving()


def leases(run, quick):
    """Permits: never more than the limit held, across an owner kill (no double grant);
    a crashed holder's permits come back within TTL + 1 s, and not before the TTL."""
    run.start()
    conn_key, cap_key = "{%s}:conn" % run.tag, "{c%s}:cap" % run.tag
    run.load(clients=16, counters=False)
    run.lease_load(conn_key)
    node = run.cluster.nodes[0]
    holder = node.resp()
    for _ in range(CAP_LIMIT):
        holder.call("FG.ACQUIRE", cap_key, "chaos_cap", "HOLDER", "crashy")
    last_hb = [None, None]
    crash_at = run.hist.t() + run.rng.uniform(1.5, 2.5)
    while run.hist.t() < crash_at:
        s = run.hist.t()
        holder.call("FG.HEARTBEAT", "crashy", int(LEASE_TTL_S * 1000))
        last_hb[:] = [s, run.hist.t()]
        time.sleep(0.3)
    holder.close()  # the holder "crashes": no more heartbeats, no release
    run.fault("holder crashy stops", last_hb[1])
    granted = _probe_until_granted(run, cap_key, LEASE_TTL_S + 3)
    bound_reclaim = _bound_holder_crash(run, conn_key)
    victim = run.cluster.owner_of(conn_key)
    t = run.hist.t()
    victim.kill9()
    run.watch_detection(victim, t)
    run.sleep(5)
    run.fault("kill -9 %s" % victim.id, t, run.hist.t(), victim.id)
    healed = _restart(run, victim)
    run.faults.append((t, healed))
    run.sleep(2)
    run.end_load()
    worst, at = checks.lease_overlap(run.hist.ops, CONN_LIMIT)
    run.verdict.figure("max_permits_held", worst)
    run.verdict.check("live permits <= limit (no double grant)", worst <= CONN_LIMIT, worst,
                      CONN_LIMIT, "" if at is None else "at %.2fs" % at)
    grants = sum(1 for o in run.hist.of("acq") if o[6] == "ok")
    run.verdict.check("permits were granted", grants > 0, grants)
    if granted is None:
        run.verdict.check("crashed holder's permits back", False, detail="never")
    else:
        reclaim = granted[1] - last_hb[1]
        run.verdict.figure("reclaim_s", round(reclaim, 3))
        run.verdict.check("crashed holder's permits back within TTL + 1 s",
                          reclaim <= LEASE_TTL_S + 1, "%.2fs" % reclaim, "%gs" % (LEASE_TTL_S + 1))
        run.verdict.check("and not before the TTL", granted[1] >= last_hb[0] + LEASE_TTL_S - 0.002,
                          "%.2fs" % (granted[1] - last_hb[0]), ">= %gs" % LEASE_TTL_S)
    if bound_reclaim is not None:
        run.verdict.figure("bound_reclaim_s", round(bound_reclaim, 3))
    run.verdict.check("a crashed node's BOUND leases back within TTL + 1 s",
                      bound_reclaim is not None and bound_reclaim <= LEASE_TTL_S + 1,
                      None if bound_reclaim is None else "%.2fs" % bound_reclaim,
                      "%gs" % (LEASE_TTL_S + 1))
    run.check_detection()
    run.check_admission()
    run.check_serving()


def _bound_holder_crash(run, conn_key):
    """A node holding client connections with BOUND leases is killed: nobody renews them
    any more, and the permits come back within the TTL. Returns the seconds that took."""
    bound_key = "{d%s}:bound" % run.tag
    busy = {run.cluster.owner_of(bound_key), run.cluster.owner_of(conn_key)}
    holder = next(n for n in run.cluster.nodes if n not in busy and n.running())
    conn = holder.resp()
    for _ in range(CAP_LIMIT):
        reply = conn.call("FG.ACQUIRE", bound_key, "chaos_cap", "BOUND")
        if reply[0] != 1:
            run.verdict.check("BOUND leases granted", False, detail=repr(reply))
            return None
    run.sleep(LEASE_TTL_S / 2)  # renewed by the node at least once
    t = run.hist.t()
    holder.kill9()
    conn.close()
    granted = _probe_until_granted(run, bound_key, LEASE_TTL_S + 4)
    run.fault("kill -9 %s (holds BOUND leases)" % holder.id, t, run.hist.t(), holder.id)
    healed = _restart(run, holder)
    run.faults.append((t, healed))
    return None if granted is None else granted[1] - t


def _probe_until_granted(run, key, timeout_s):
    """Asks for a permit every 50 ms; returns the granting call's (start, end)."""
    deadline = run.hist.t() + timeout_s
    while run.hist.t() < deadline:
        for n in run.cluster.live():
            s = run.hist.t()
            try:
                r = n.resp()
                try:
                    reply = r.call("FG.ACQUIRE", key, "chaos_cap", "HOLDER", "probe")
                    if reply[0] == 1:
                        e = run.hist.t()
                        r.call("FG.RELEASE", key, reply[1])
                        return s, e
                finally:
                    r.close()
                break
            except (OSError, ConnectionError, RespError):
                continue
        time.sleep(0.05)
    return None


def membership(run, quick):
    """Under load: a node joins, one leaves, one comes back, then every node restarts in
    turn. State moves with ownership: no over-admission, nothing lost."""
    run.start()
    run.load()
    run.sleep(2)
    newcomer = run.cluster.add_node()
    _restart(run, newcomer, "join")
    leaver = run.cluster.nodes[1 + run.rng.randrange(len(run.cluster.nodes) - 1)]
    t = run.hist.t()
    leaver.stop()
    run.fault("leave %s" % leaver.id, t, target=leaver.id)
    run.wait_converged("converged after %s left" % leaver.id)
    _restart(run, leaver, "rejoin")
    order = list(run.cluster.nodes)
    run.rng.shuffle(order)
    for n in order if not quick else order[:3]:
        t = run.hist.t()
        n.stop()
        run.fault("stop %s" % n.id, t, target=n.id)
        run.wait_converged("converged without %s" % n.id)
        _restart(run, n)
    run.sleep(2)
    run.check_counters(expect_no_loss=True)
    run.end_load()
    run.check_admission()
    run.check_serving()


def rolling(run, quick):
    """Every node restarted in turn under load (SIGTERM, start, ready, the next), and in the
    middle of one restart another node killed with kill -9 — the leaving node's successor,
    which its leave hands its slots to: no acknowledged write lost, limits held within the
    kill's bound, no permit granted twice."""
    run.start()
    conn_key = "{%s}:conn" % run.tag
    run.load(clients=32)
    run.lease_load(conn_key)
    run.write_keys(3000)
    run.sleep(2)
    order = list(run.cluster.nodes)
    run.rng.shuffle(order)
    meets_kill = run.rng.randrange(len(order))
    t_kill = None
    for i, n in enumerate(order):
        t = run.hist.t()
        if i != meets_kill:
            run.verdict.check("%s stopped by SIGTERM within 60 s" % n.id, n.stop(timeout_s=60))
            run.fault("stop %s" % n.id, t, target=n.id)
            run.wait_converged("converged without %s" % n.id)
            _restart(run, n)
            continue
        ids = sorted(m.id for m in run.cluster.live())
        successor = ids[(ids.index(n.id) + 1) % len(ids)]
        victim = next(m for m in run.cluster.nodes if m.id == successor)
        # The kill up to 300 ms before the SIGTERM (nobody has declared it dead when the
        # leave plans its table) or up to 1.5 s after it (while the slots move).
        stopped = []
        stopper = threading.Thread(target=lambda: stopped.append(n.stop(timeout_s=60)),
                                   daemon=True)
        offset = run.rng.uniform(-0.3, 1.5)
        if offset >= 0:
            stopper.start()
            time.sleep(offset)
        t_kill = run.hist.t()
        victim.kill9()
        run.watch_detection(victim, t_kill, exclude=(n,))
        if offset < 0:
            time.sleep(-offset)
            stopper.start()
        stopper.join(70)
        run.verdict.check("%s stopped by SIGTERM within 60 s, %s killed meanwhile" % (
            n.id, victim.id), stopped == [True])
        run.fault("stop %s, kill -9 %s" % (n.id, victim.id), t, run.hist.t(), n.id)
        run.wait_converged("converged without %s and %s" % (n.id, victim.id))
        healed = _restart(run, n)
        healed = _restart(run, victim)
        run.faults.append((t, healed))
    run.sleep(2)
    run.check_counters(t_loss_at=t_kill)
    run.end_load()
    run.check_keys()
    worst, at = checks.lease_overlap(run.hist.ops, CONN_LIMIT)
    run.verdict.figure("max_permits_held", worst)
    run.verdict.check("live permits <= limit (no double grant)", worst <= CONN_LIMIT, worst,
                      CONN_LIMIT, "" if at is None else "at %.2fs" % at)
    run.check_detection()
    run.check_admission(_lost_bound(run, t_kill), "admissions possibly in the last Δ before the kill")
    run.check_serving()


def overload(run, quick):
    """Four times the cluster's capacity offered open loop on random keys through every node
    (20 s quick, a minute full), and the hot key's owner killed with `kill -9` in the middle
    and restarted: detected by all within 3 s, no other member declared dead, the bounds
    hold for the checked clients beside the flood, every node serves after."""
    run.start()
    run.load()
    run.sleep(2)
    cap = run.capacity()
    run.verdict.figure("capacity_per_s", int(cap))
    dur = 20 if quick else 60
    t0 = run.hist.t()
    dead_on_purpose = set()
    run.watch_false_dead(t0 + dur + 10, ignore=dead_on_purpose)
    flood = run.flood(4 * cap, dur)
    run.hist.mark("flood at 4x capacity (%d/s)" % int(4 * cap), t0, t0 + dur)
    run.sleep(dur / 3)
    victim = run.cluster.owner_of(run.hot)
    dead_on_purpose.add(victim.id)
    t = run.hist.t()
    victim.kill9()
    run.watch_detection(victim, t)
    run.sleep(run.rng.uniform(4.5, 6))
    t2 = run.hist.t()
    victim.start(run.cluster.seeds_for(victim))
    run.fault("kill -9 %s under the flood" % victim.id, t, t2, victim.id)
    flood.join(dur + 90)
    conv = run.wait_converged("converged after the flood and the restart")
    run.faults.append((t, t2 + (conv or 0)))
    run.sleep(2)
    run.check_counters(t_loss_at=t)
    run.end_load()
    r = run.flood_result
    run.verdict.check("the flood ran to its end", r is not None,
                      detail=getattr(run, "flood_error", ""))
    if r:
        served = float(r["served_rate"])
        run.verdict.figure("flood_served_per_s", int(served))
        run.verdict.figure("flood_served_of_capacity", round(served / cap, 2) if cap else None)
        run.verdict.figure("flood_p99_ms", float(r["p99_ms"]))
        run.verdict.figure("flood_unanswered", int(r["unanswered"]))
    run.check_detection()
    run.check_false_dead()
    run.check_admission(_lost_bound(run, t), "admissions possibly in the last Δ before it")
    run.check_serving()


SCENARIOS = {
    # name: (function, nodes, needs)
    "healthy": (healthy, 5, ()),
    "kill": (kill, 5, ()),
    "pause": (pause, 5, ()),
    "partition-minority": (partition_minority, 5, ("root",)),
    "partition-split": (partition_split, 4, ("root",)),
    "partition-oneway": (partition_oneway, 5, ("root",)),
    "loss": (loss, 5, ("root",)),
    "delay": (delay, 5, ()),
    "clock": (clock, 3, ("faketime",)),
    "leases": (leases, 5, ()),
    "membership": (membership, 3, ()),
    "rolling": (rolling, 5, ()),
    "overload": (overload, 5, ()),
}


def missing_needs(needs):
    from .netfault import in_private_netns
    out = []
    if "root" in needs and not in_private_netns():
        out.append("root (iptables in a private network namespace)")
    if "faketime" in needs and not os.path.exists(FAKETIME_LIB):
        out.append("libfaketime (deploy/install-deps --test)")
    return out


def run_scenario(ctx, name, seed, quick):
    fn, nodes, _ = SCENARIOS[name]
    run = Run(ctx, name, seed, nodes, proxy=(name == "delay"))
    started = time.monotonic()
    try:
        fn(run, quick)
    except Exception as e:  # a scenario that cannot finish is a failed scenario
        run.verdict.check("scenario ran to the end", False, detail="%s: %s" % (type(e).__name__, e))
    finally:
        run.shutdown()
    return run.result(started)
