// node-redis and ioredis over TLS against a node's tls-port, with the certificates of
// deploy/make-certs: a client certificate signed by the node's CA gets in and is served as
// on the plain port; one without a certificate is refused; a plaintext client on the TLS
// port gets nothing; ioredis's Cluster client over TLS against a 3-node cluster whose peer
// links are mutual TLS (tls-cluster), sent by -MOVED to the nodes' TLS ports.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis5';
import Redis from 'ioredis';
import { freePorts, startCluster, startNode } from './floodgate.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let dir;
let node;
let tlsPort;
let ca;
let cert;
let key;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'fg-tls-'));
  execFileSync(path.join(root, 'deploy/make-certs'), [dir], { stdio: 'ignore' });
  [ca, cert, key] = ['ca.crt', 'client.crt', 'client.key'].map((f) => readFileSync(path.join(dir, f)));
  [tlsPort] = await freePorts(1);
  ({ proc: node } = await startNode(['--tls-port', String(tlsPort),
    '--tls-cert-file', path.join(dir, 'node.crt'), '--tls-key-file', path.join(dir, 'node.key'),
    '--tls-ca-cert-file', path.join(dir, 'ca.crt')]));
});

after(() => {
  node?.kill('SIGTERM');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('node-redis over TLS with a client certificate', { timeout: 30000 }, async () => {
  const client = createClient({ socket: { host: '127.0.0.1', port: tlsPort, tls: true, ca, cert, key } });
  client.on('error', () => {});
  await client.connect();
  try {
    assert.equal(await client.ping(), 'PONG');
    assert.deepEqual(await client.sendCommand(['CL.THROTTLE', 'tls:redis', '2', '10', '60']),
      [0, 3, 2, -1, 6]);
    assert.equal(await client.incr('tls:redis:n'), 1);
    const big = 'x'.repeat(200000);  // more than one TLS record each way
    await client.set('tls:redis:big', big);
    assert.equal(await client.get('tls:redis:big'), big);
  } finally {
    await client.quit().catch(() => client.disconnect());
  }
});

test('ioredis over TLS with a client certificate, pipelined', { timeout: 30000 }, async () => {
  const r = new Redis({ host: '127.0.0.1', port: tlsPort, tls: { ca, cert, key, servername: 'localhost' },
    maxRetriesPerRequest: 0 });
  try {
    const p = r.pipeline();
    for (let i = 0; i < 100; i++) p.incr('tls:ioredis:n');
    const out = await p.exec();
    assert.deepEqual(out.map(([, v]) => v), Array.from({ length: 100 }, (_, i) => i + 1));
    assert.deepEqual(await r.call('FG.TAKE', 'tls:ioredis', 'token_bucket', '5', '1', '1000'),
      [1, 5, 4, -1, 1000]);
  } finally {
    r.disconnect();
  }
});

test('without a client certificate, or without TLS, nothing is served', { timeout: 30000 }, async () => {
  const noCert = new Redis({ host: '127.0.0.1', port: tlsPort, tls: { ca }, lazyConnect: true,
    maxRetriesPerRequest: 0, retryStrategy: () => null });
  noCert.on('error', () => {});
  await assert.rejects((async () => { await noCert.connect(); await noCert.ping(); })());
  noCert.disconnect();
  const plain = new Redis({ host: '127.0.0.1', port: tlsPort, lazyConnect: true, connectTimeout: 2000,
    commandTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  plain.on('error', () => {});
  await assert.rejects((async () => { await plain.connect(); await plain.ping(); })());
  plain.disconnect();
});

test('ioredis Cluster over TLS: -MOVED and CLUSTER SLOTS name the TLS ports', { timeout: 60000 }, async () => {
  const tlsPorts = await freePorts(3);
  const files = ['--tls-cert-file', path.join(dir, 'node.crt'), '--tls-key-file',
    path.join(dir, 'node.key'), '--tls-ca-cert-file', path.join(dir, 'ca.crt')];
  const cluster = await startCluster(3, ['--tls-cluster', ...files],
    (i) => ['--tls-port', String(tlsPorts[i])]);
  const c = new Redis.Cluster([{ host: '127.0.0.1', port: tlsPorts[0] }], {
    redisOptions: { tls: { ca, cert, key } }, slotsRefreshTimeout: 5000,
  });
  try {
    const slots = await c.cluster('SLOTS');
    const named = new Set(slots.flatMap((s) => s.slice(2).map((n) => n[1])));
    assert.deepEqual([...named].sort(), [...tlsPorts].sort());
    for (let i = 0; i < 50; i++) assert.equal(await c.incr(`tls:cluster:${i}`), 1);
    const verdicts = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      c.call('CL.THROTTLE', `tls:thr:${i}`, '0', '1', '60')));
    assert.ok(verdicts.every((v) => v[0] === 0));
    // Through a node that does not own a key, a plain client is redirected to a TLS port.
    const plain = new Redis({ host: '127.0.0.1', port: cluster.ports[0], maxRetriesPerRequest: 0 });
    plain.on('error', () => {});
    await plain.call('CLUSTER', 'SLOTS');  // asked for the topology: -MOVED from now on
    const moved = [];
    for (let i = 0; i < 50 && moved.length === 0; i++) {
      try { await plain.get(`tls:cluster:${i}`); } catch (e) { moved.push(String(e.message)); }
    }
    plain.disconnect();
    assert.match(moved[0] ?? '', new RegExp(`^MOVED \\d+ 127\\.0\\.0\\.1:(${tlsPorts.join('|')})$`));
  } finally {
    c.disconnect();
    for (const n of cluster.procs) n.kill('SIGTERM');
  }
});
