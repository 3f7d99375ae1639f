// The Redis limiter libraries people run, unchanged: rate-limiter-flexible's
// RateLimiterRedis (ioredis, standalone and Cluster), rate-limit-redis behind
// express-rate-limit in front of an HTTP app, and hand-written Lua limiters. Each runs
// against redis-server first (the reference: it proves the expectations are Redis's), then
// a standalone node, a 3-node cluster through a node that does not own the key, and across
// a `kill -9` of the key's owner.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import Redis from 'ioredis';
import { ownerPort, sleep, startCluster, startNode, startRedisServer } from './floodgate.mjs';

let redisServer;
let redisPort;
let standalone;
let cluster;

before(async () => {
  ({ port: redisPort, proc: redisServer } = await startRedisServer());
  standalone = await startNode();
  cluster = await startCluster(3);
});

after(() => {
  redisServer?.kill('SIGTERM');
  standalone?.proc.kill('SIGTERM');
  for (const n of cluster?.procs ?? []) n.kill('SIGTERM');
});

const client = (port) => new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });

// A cluster node that does not own `key` (requests for it are forwarded to the owner).
async function notOwner(key) {
  const owner = await ownerPort(cluster.ports[0], key);
  return cluster.ports.find((p) => p !== owner);
}

// Where each exercise runs: a name and a function giving a connection for a key.
const targets = [
  ['redis-server', async () => client(redisPort)],
  ['a standalone node', async () => client(standalone.port)],
  ['a cluster, through a node that does not own the key', async (key) => client(await notOwner(key))],
];

// ---- rate-limiter-flexible -------------------------------------------------------------

function flexible(storeClient) {
  return new RateLimiterRedis({ storeClient, points: 5, duration: 60, keyPrefix: 'rlflx' });
}

// A rejection is a RateLimiterRes; a store failure would be an Error (said plainly).
async function rejected(promise) {
  try {
    await promise;
  } catch (res) {
    if (res instanceof Error) throw res;
    assert.ok(res instanceof RateLimiterRes);
    return res;
  }
  assert.fail('expected the limiter to reject');
}

async function exerciseFlexible(rl, key) {
  for (let i = 0; i < 5; i++) {
    const r = await rl.consume(key);
    assert.equal(r.consumedPoints, i + 1);
    assert.equal(r.remainingPoints, 4 - i);
    assert.ok(r.msBeforeNext > 55000 && r.msBeforeNext <= 60000, `msBeforeNext ${r.msBeforeNext}`);
  }
  const no = await rejected(rl.consume(key));
  assert.equal(no.consumedPoints, 6);
  assert.equal(no.remainingPoints, 0);
  assert.ok(no.msBeforeNext > 55000 && no.msBeforeNext <= 60000, `msBeforeNext ${no.msBeforeNext}`);
  assert.equal((await rl.penalty(key, 2)).consumedPoints, 8);
  assert.equal((await rl.reward(key, 5)).consumedPoints, 3);
  assert.equal((await rl.consume(key)).remainingPoints, 1);
  await rl.block(key, 10);
  const blocked = await rejected(rl.consume(key));
  assert.ok(blocked.msBeforeNext > 8000 && blocked.msBeforeNext <= 10000, `blocked ${blocked.msBeforeNext}`);
  assert.equal(await rl.delete(key), true);
  assert.equal(await rl.get(key), null);
  assert.equal((await rl.consume(key)).consumedPoints, 1);
}

for (const [where, connect] of targets) {
  test(`rate-limiter-flexible RateLimiterRedis (ioredis) on ${where}`, { timeout: 30000 }, async () => {
    const key = `{flex}user-${Date.now()}`;
    const c = await connect(`rlflx:${key}`);
    try {
      await exerciseFlexible(flexible(c), key);
    } finally {
      c.disconnect();
    }
  });
}

test('rate-limiter-flexible RateLimiterRedis with an ioredis Cluster', { timeout: 30000 }, async () => {
  const c = new Redis.Cluster([{ host: '127.0.0.1', port: cluster.ports[0] }],
    { redisOptions: { maxRetriesPerRequest: 2 } });
  try {
    await once(c, 'ready');
    for (const key of ['alice', 'bob', 'carol']) await exerciseFlexible(flexible(c), `${key}-${Date.now()}`);
  } finally {
    c.disconnect();
  }
});

// ---- rate-limit-redis behind express-rate-limit ----------------------------------------

// An HTTP app limited to 3 requests a minute per X-User; its base URL and a closer.
async function limitedApp(c) {
  const app = express();
  app.use(rateLimit({
    windowMs: 60000,
    limit: 3,
    standardHeaders: 'draft-6',
    legacyHeaders: false,
    keyGenerator: (req) => req.get('x-user'),
    store: new RedisStore({ sendCommand: (...args) => c.call(...args), prefix: 'rl:' }),
  }));
  app.get('/', (req, res) => res.send('hello'));
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

async function exerciseExpress(c, user) {
  const app = await limitedApp(c);
  try {
    for (let i = 1; i <= 4; i++) {
      const r = await fetch(app.url, { headers: { 'x-user': user } });
      assert.equal(r.status, i <= 3 ? 200 : 429, `request ${i}`);
      assert.equal(r.headers.get('ratelimit-limit'), '3');
      assert.equal(r.headers.get('ratelimit-remaining'), String(Math.max(0, 3 - i)));
      const reset = Number(r.headers.get('ratelimit-reset'));
      assert.ok(reset > 55 && reset <= 60, `RateLimit-Reset ${reset}`);
      await r.text();
    }
  } finally {
    app.close();
  }
}

for (const [where, connect] of targets) {
  test(`rate-limit-redis with express-rate-limit on ${where}`, { timeout: 30000 }, async () => {
    const user = `{rlr}user-${Date.now()}`;
    const c = await connect(`rl:${user}`);
    try {
      await exerciseExpress(c, user);
    } finally {
      c.disconnect();
    }
  });
}

// ---- hand-written scripts --------------------------------------------------------------

const fixedWindow = `local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count`;

// A sliding log in a sorted set, with a counter key derived from the declared one (not
// declared itself) for unique members.
const slidingLog = `local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
if redis.call('ZCARD', key) >= limit then return 0 end
local id = redis.call('INCR', key .. ':counter')
redis.call('ZADD', key, now, now .. '-' .. id)
redis.call('PEXPIRE', key, window)
redis.call('PEXPIRE', key .. ':counter', window)
return 1`;

function withScripts(c) {
  // defineCommand: EVALSHA first, EVAL when the server answers NOSCRIPT.
  c.defineCommand('fixedWindow', { numberOfKeys: 1, lua: fixedWindow });
  c.defineCommand('slidingLog', { numberOfKeys: 1, lua: slidingLog });
  return c;
}

async function exerciseScripts(c, tag) {
  const win = `${tag}:window`;
  assert.deepEqual([await c.eval(fixedWindow, 1, win, 60), await c.fixedWindow(win, 60),
    await c.fixedWindow(win, 60)], [1, 2, 3]);
  const ttl = await c.ttl(win);
  assert.ok(ttl > 55 && ttl <= 60, `TTL ${ttl}`);
  const log = `${tag}:log`;
  const now = Date.now();
  const got = [];
  for (let i = 0; i < 4; i++) got.push(await c.slidingLog(log, now + i, 60000, 3));
  assert.deepEqual(got, [1, 1, 1, 0]);
  assert.equal(await c.zcard(log), 3);
  assert.equal(await c.get(`${log}:counter`), '3');
  assert.equal(await c.slidingLog(log, now + 60002, 60000, 3), 1);  // the oldest left the window
}

for (const [where, connect] of targets) {
  test(`hand-written Lua limiters on ${where}`, { timeout: 30000 }, async () => {
    const tag = `{lua}${Date.now()}`;
    const c = withScripts(await connect(tag));
    try {
      await exerciseScripts(c, tag);
      if (where.startsWith('a cluster')) {
        // A key outside the script's slot: Redis Cluster's errors, one for a key another
        // node owns, one for a key of another slot of the same node.
        const here = await ownerPort(cluster.ports[0], tag);
        for (const other of ['elsewhere', 'other', 'more', 'again']) {
          const text = (await ownerPort(cluster.ports[0], other)) === here
            ? /^ERR Script attempted to access keys that do not hash to the same slot/
            : /^ERR Script attempted to access a non local key in a cluster node/;
          await assert.rejects(c.eval(`return redis.call('GET', '${other}')`, 1, tag), { message: text });
        }
      }
    } finally {
      c.disconnect();
    }
  });
}

// ---- across the owner's death ----------------------------------------------------------

test('every limiter keeps its counts across a kill -9 of the keys\' owner', { timeout: 90000 }, async () => {
  // One hash tag: every key below lives in one slot, so one node owns them all.
  const tag = '{failover}';
  const owner = await ownerPort(cluster.ports[0], tag);
  const via = cluster.ports.find((p) => p !== owner);
  const c = withScripts(client(via));
  const rl = flexible(c);
  const app = await limitedApp(c);
  const hit = async () => (await fetch(app.url, { headers: { 'x-user': tag } })).status;
  try {
    for (let i = 0; i < 3; i++) await rl.consume(`${tag}flex`);
    assert.deepEqual([await hit(), await hit()], [200, 200]);
    assert.equal(await c.fixedWindow(`${tag}:window`, 60), 1);
    assert.equal(await c.fixedWindow(`${tag}:window`, 60), 2);
    await sleep(300);  // past the replication lag bound: every count is on the replica

    cluster.procs[cluster.ports.indexOf(owner)].kill('SIGKILL');
    // Until a survivor serves the slot, requests fail (TRYAGAIN / CLUSTERDOWN).
    let up = false;
    for (let i = 0; i < 150 && !up; i++) {
      try {
        await c.exists(`${tag}:window`);
        up = true;
      } catch {
        await sleep(100);
      }
    }
    assert.ok(up, 'the slot was not served again within 15 s');

    assert.equal((await rl.consume(`${tag}flex`)).consumedPoints, 4);
    assert.deepEqual([await hit(), await hit()], [200, 429]);
    assert.equal(await c.fixedWindow(`${tag}:window`, 60), 3);
  } finally {
    app.close();
    c.disconnect();
  }
});
