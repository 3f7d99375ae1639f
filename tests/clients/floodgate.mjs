// Starting real floodgate nodes for the client tests: one standalone node, or a cluster
// formed on loopback, on free ports (a port taken between choosing and binding it makes a
// node exit at once: start again on new ports).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// redis-server (Debian's), the reference the client tests run against first; { port, proc }
// once it answers PING.
export async function startRedisServer() {
  const [port] = await freePorts(1);
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1',
    '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const r = new Redis({ port, lazyConnect: true, retryStrategy: () => null });
    r.on('error', () => {});
    try { await r.connect(); await r.ping(); r.disconnect(); break; } catch { await sleep(50); }
  }
  return { port, proc };
}

// n distinct free ports: all are held open together, then released.
export async function freePorts(n) {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => resolve(srv));
  })));
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

async function waitForPort(p, proc) {
  for (let i = 0; i < 100 && proc.exitCode === null; i++) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(p, '127.0.0.1', () => { s.end(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return true;
    await sleep(50);
  }
  return false;
}

function run(args) {
  return spawn(process.env.FLOODGATE_BIN, [...args, '--native-port', '0', '--admin-port', '0',
    '--log-level', 'warn'], { stdio: 'inherit' });
}

// One standalone node; { port, proc }.
export async function startNode(extra = []) {
  for (let attempt = 0; ; attempt++) {
    const [port] = await freePorts(1);
    const proc = run(['--port', String(port), ...extra]);
    if (await waitForPort(port, proc)) return { port, proc };
    proc.kill('SIGKILL');
    if (attempt === 2) throw new Error('floodgate did not open its port');
  }
}

// `count` nodes clustered, formed; { ports, procs }. `perNode(i)`: more arguments for node i.
// Each cluster holds a secret of its own: nodes of tests running alongside cannot merge into it.
export async function startCluster(count = 3, extra = [], perNode = () => []) {
  const dir = mkdtempSync(join(tmpdir(), 'fg-cluster-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const secret = join(dir, 'cluster.secret');
  writeFileSync(secret, `${randomBytes(16).toString('hex')}\n`);
  for (let attempt = 0; ; attempt++) {
    const all = await freePorts(2 * count);
    const ports = all.slice(0, count);
    const cports = all.slice(count);
    const seeds = `127.0.0.1:${cports[0]},127.0.0.1:${cports[1]}`;
    let exited = false;
    const procs = ports.map((p, i) => {
      const n = run(['--port', String(p), '--cluster-enabled', '--node-id', `c${i + 1}-${process.pid}`,
        '--cluster-port', String(cports[i]), '--seeds', seeds, '--cluster-secret-file', secret,
        ...extra, ...perNode(i)]);
      n.on('exit', () => { exited = true; });
      return n;
    });
    await sleep(300);
    if (!exited) {
      await waitFormed(ports);
      return { ports, procs };
    }
    for (const n of procs) n.kill('SIGKILL');
    if (attempt === 2) throw new Error('the cluster did not start');
  }
}

async function ask(port, fn) {
  const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0,
    retryStrategy: () => null });
  r.on('error', () => {});  // not up (or gone): the caller asks again
  try {
    await r.connect();
    return await fn(r);
  } catch {
    return null;
  } finally {
    r.disconnect();
  }
}

// Every node in `ports` reports the same epoch, as many members and nothing awaited.
export async function waitFormed(ports) {
  for (let i = 0; i < 300; i++) {
    const infos = await Promise.all(ports.map((p) => ask(p, (r) => r.cluster('INFO'))));
    const epochs = new Set(infos.map((s) => /cluster_current_epoch:(\d+)/.exec(s ?? '')?.[1]));
    if (infos.every((s) => s && s.includes('cluster_state:ok') &&
        s.includes(`cluster_size:${ports.length}`) && s.includes('cluster_slots_awaited_here:0')) &&
        epochs.size === 1) return;
    await sleep(100);
  }
  throw new Error('the cluster did not form');
}

// The RESP port of the node that owns `key`, as `via` sees the table.
export async function ownerPort(via, key) {
  return ask(via, async (r) => {
    const slot = await r.cluster('KEYSLOT', key);
    for (const [lo, hi, [, port]] of await r.cluster('SLOTS')) {
      if (slot >= lo && slot <= hi) return port;
    }
    return null;
  });
}

// Sums a counter of INFO's cluster section over `ports`.
export async function clusterCounter(ports, name) {
  let total = 0;
  for (const p of ports) {
    const info = await ask(p, (r) => r.info('cluster'));
    total += Number(new RegExp(`${name}:(\\d+)`).exec(info)[1]);
  }
  return total;
}
