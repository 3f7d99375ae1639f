// Cluster-aware clients against a real 3-node Floodgate cluster: ioredis Cluster and
// node-redis createCluster discover the nodes from CLUSTER SLOTS, route keys, follow
// -MOVED, and get the same limiter answers whichever node they land on.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createCluster as createCluster5 } from 'redis5';
import { createCluster as createCluster6 } from 'redis6';
import Redis from 'ioredis';
import { startCluster, clusterCounter } from './floodgate.mjs';

let ports = [];
let nodes = [];
const counter = (name) => clusterCounter(ports, name);

before(async () => {
  ({ ports, procs: nodes } = await startCluster(3));
});

after(() => { for (const n of nodes) n.kill('SIGTERM'); });

test('ioredis Cluster: discovers the masters and gets one limiter per key', { timeout: 60000 }, async () => {
  const cluster = new Redis.Cluster([{ host: '127.0.0.1', port: ports[0] }],
    { redisOptions: { maxRetriesPerRequest: 2 } });
  try {
    await new Promise((resolve, reject) => { cluster.once('ready', resolve); cluster.once('error', reject); });
    assert.equal(cluster.nodes('master').length, 3);
    for (const key of ['user:1', 'user:2', '{t}:x', 'another']) {
      for (let i = 0; i < 7; i++) {
        const r = await cluster.call('CL.THROTTLE', key, '4', '1', '60');
        assert.deepEqual(r.slice(0, 3), i < 5 ? [0, 5, 4 - i] : [1, 5, 0], `${key} #${i}`);
      }
    }
    // ioredis knows the key positions of Redis's own commands only; module commands land
    // on any node, which forwards (or, with --cluster-redirect moved, redirects) them.
    assert.equal(await cluster.call('CLUSTER', 'KEYSLOT', 'user:1'), 10778);
  } finally {
    cluster.disconnect();
  }
});

const nodeMajor = Number(process.versions.node.split('.')[0]);
for (const [name, createCluster] of [['redis v5', createCluster5], ['redis v6', createCluster6]]) {
  const skip = name === 'redis v6' && nodeMajor < 20 ? `needs Node 20, this is ${process.version}` : false;
  test(`${name} createCluster: goes straight to each key's owner`, { skip, timeout: 60000 }, async () => {
    const cluster = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${ports[1]}` }] });
    cluster.on('error', () => {});
    await cluster.connect();
    try {
      assert.equal(cluster.masters.length, 3);
      const forwardedBefore = await counter('forwarded_commands');
      const movedBefore = await counter('moved_redirections');
      for (let k = 0; k < 30; k++) {
        const key = `${name}:${k}`;
        const r = await cluster.sendCommand(key, false, ['FG.TAKE', key, 'fixed_window', '2', '60000']);
        assert.deepEqual(r.slice(0, 3), [1, 2, 1]);
        const r2 = await cluster.sendCommand(key, false, ['FG.TAKE', key, 'fixed_window', '2', '60000']);
        assert.deepEqual(r2.slice(0, 3), [1, 2, 0]);
      }
      // Sixty commands and not one forward or redirection: each went to its owner.
      assert.equal(await counter('forwarded_commands'), forwardedBefore);
      assert.equal(await counter('moved_redirections'), movedBefore);
    } finally {
      await cluster.close();
    }
  });
}

// Limiter code written for Redis, unchanged: the patterns people run on ioredis Cluster and
// node-redis today, with their own commands (the client routes them by key).
test('ioredis Cluster: Redis limiter code runs unchanged', { timeout: 60000 }, async () => {
  const cluster = new Redis.Cluster([{ host: '127.0.0.1', port: ports[2] }],
    { redisOptions: { maxRetriesPerRequest: 2 } });
  try {
    await new Promise((resolve, reject) => { cluster.once('ready', resolve); cluster.once('error', reject); });
    // A fixed window: MULTI / INCR key:minute / EXPIRE key 59 / EXEC.
    const minute = `rl:ioredis:${Math.floor(Date.now() / 60000)}`;
    for (let i = 1; i <= 3; i++) {
      const r = await cluster.multi().incr(minute).expire(minute, 59).exec();
      assert.deepEqual(r, [[null, i], [null, 1]]);
    }
    assert.ok(await cluster.ttl(minute) > 0 && await cluster.ttl(minute) <= 59);
    // INCR, then EXPIRE on the first hit.
    const first = await cluster.incr('rl:first');
    if (first === 1) assert.equal(await cluster.expire('rl:first', 60), 1);
    assert.equal(await cluster.pttl('rl:first') > 0, true);
    // Per-server connection counts under one user's hash tag, summed with MGET.
    const user = 'customer-limit-{user7}';
    await cluster.incr(`${user}:srv1`);
    await cluster.incr(`${user}:srv1`);
    await cluster.incrby(`${user}:srv2`, 3);
    await cluster.decr(`${user}:srv1`);
    const counts = await cluster.mget(`${user}:srv1`, `${user}:srv2`, `${user}:srv3`);
    assert.deepEqual(counts, ['1', '3', null]);
    assert.equal(await cluster.set(`${user}:note`, 'x', 'PX', 60000, 'NX'), 'OK');
    assert.equal(await cluster.set(`${user}:note`, 'y', 'PX', 60000, 'NX'), null);
    assert.equal(await cluster.del(`${user}:srv1`, `${user}:srv2`, `${user}:note`), 3);
    // A token bucket kept in a hash (HMGET, then HSET of tokens and timestamp).
    const bucket = 'rl:bucket:{user7}';
    assert.deepEqual(await cluster.hmget(bucket, 'tokens', 'ts'), [null, null]);
    assert.equal(await cluster.hset(bucket, 'tokens', 9, 'ts', 1700000000000), 2);
    assert.equal(await cluster.hincrby(bucket, 'tokens', -1), 8);
    assert.deepEqual(await cluster.hgetall(bucket), { tokens: '8', ts: '1700000000000' });
    assert.equal(await cluster.pexpire(bucket, 60000), 1);
    // A sliding log in a sorted set: drop what left the window, count, add, refresh.
    const log = 'rl:log:{user7}';
    const now = Date.now();
    for (let i = 0; i < 4; i++) {
      const [[, removed], [, count], [, added], [, refreshed]] = await cluster.multi()
        .zremrangebyscore(log, '-inf', now - 60000).zcard(log).zadd(log, now + i, `req:${i}`)
        .pexpire(log, 60000).exec();
      assert.deepEqual([removed, count, added, refreshed], [0, i, 1, 1]);
    }
    assert.deepEqual(await cluster.zrange(log, 0, 0), ['req:0']);
  } finally {
    cluster.disconnect();
  }
});

test('redis v5 createCluster: Redis limiter code runs unchanged', { timeout: 60000 }, async () => {
  const cluster = createCluster5({ rootNodes: [{ url: `redis://127.0.0.1:${ports[0]}` }] });
  cluster.on('error', () => {});
  await cluster.connect();
  try {
    const key = `rl:node-redis:${Math.floor(Date.now() / 60000)}`;
    for (let i = 1; i <= 3; i++) {
      const r = await cluster.multi().incr(key).expire(key, 59).exec();
      assert.deepEqual(r.map(Number), [i, 1]);  // (EXEC's replies as sent: integers)
    }
    assert.equal(await cluster.get(key), '3');
    assert.equal(await cluster.incrByFloat('rl:float', '1.5'), '1.5');
    assert.equal(await cluster.type(key), 'string');
    assert.equal(Number(await cluster.persist(key)), 1);
    assert.equal(await cluster.ttl(key), -1);
  } finally {
    await cluster.close();
  }
});
