// bottleneck's Clustering mode, unchanged: limiters in different processes share one
// state in Redis (its Lua scripts, hashes, sorted sets) and wake each other with pub/sub
// (its scripts PUBLISH; every limiter SUBSCRIBEs). Two limiters with the same id must hold
// `maxConcurrent` and a shared `reservoir` between them. Each case runs against redis-server
// first (the reference), then a standalone node, then a 3-node cluster — with ioredis
// `Cluster`, and with two plain connections to two different nodes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Bottleneck from 'bottleneck';
import redis3 from 'redis3';
import { sleep, startCluster, startNode, startRedisServer } from './floodgate.mjs';

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

let made = 0;
// Two limiters of one id. `where(i)`: the datastore options of limiter i. The id has a hash
// tag, as bottleneck's keys must share a slot in any Redis Cluster. The first clears what an
// earlier run left: it is ready before the second starts, or its clearing could remove the
// second's registration (bottleneck then answers UNKNOWN_CLIENT, on redis-server too).
async function pair(where, options) {
  const id = `{bn-${process.pid}-${++made}}`;
  const first = new Bottleneck({ id, clearDatastore: true, ...where(0), ...options });
  await first.ready();
  return [first, new Bottleneck({ id, clearDatastore: false, ...where(1), ...options })];
}

const on = (datastore, port) => datastore === 'ioredis'
  ? { datastore, clientOptions: { host: '127.0.0.1', port, maxRetriesPerRequest: 2 } }
  : { datastore, Redis: redis3, clientOptions: { host: '127.0.0.1', port } };

const targets = [
  ['redis-server, ioredis', () => on('ioredis', redisPort)],
  ['redis-server, redis v3', () => on('redis', redisPort)],
  ['a standalone node, ioredis', () => on('ioredis', standalone.port)],
  ['a standalone node, redis v3', () => on('redis', standalone.port)],
  ['a cluster, ioredis Cluster', () => ({ datastore: 'ioredis', clusterNodes: [{ host: '127.0.0.1', port: cluster.ports[0] }],
    clientOptions: { redisOptions: { maxRetriesPerRequest: 2 } } })],
  ['a cluster, each limiter on its own node, redis v3', (i) => on('redis', cluster.ports[i])],
];

async function both(limiters, f) {
  try {
    await Promise.all(limiters.map((l) => l.ready()));
    await f(...limiters);
  } finally {
    await Promise.all(limiters.map((l) => l.disconnect(false)));
  }
}

for (const [name, where] of targets) {
  test(`bottleneck on ${name}: maxConcurrent holds across two limiters`, { timeout: 60000 }, async () => {
    await both(await pair(where, { maxConcurrent: 2 }), async (a, b) => {
      let running = 0;
      let peak = 0;
      let done = 0;
      const job = async () => {
        running++;
        peak = Math.max(peak, running);
        await sleep(30);
        running--;
        done++;
      };
      const jobs = [];
      for (let i = 0; i < 12; i++) jobs.push((i % 2 ? a : b).schedule({ expiration: 10000 }, job));
      await Promise.all(jobs);
      assert.equal(done, 12);
      assert.equal(peak, 2, 'two at a time, over both limiters');
      assert.equal(await a.clusterQueued(), 0);
      assert.equal(await b.running(), 0);
    });
  });

  test(`bottleneck on ${name}: a reservoir is shared and refilled for both`, { timeout: 60000 }, async () => {
    await both(await pair(where, { reservoir: 5 }), async (a, b) => {
      let ran = 0;
      const job = async () => { ran++; };
      const jobs = [];
      for (let i = 0; i < 8; i++) jobs.push((i % 2 ? a : b).schedule({ expiration: 10000 }, job));
      await sleep(600);
      assert.equal(ran, 5, 'five permits between the two limiters');
      assert.equal(await a.currentReservoir(), 0);
      assert.equal(await b.currentReservoir(), 0);
      // Refilled through one limiter: the other's jobs run too (it is told over pub/sub).
      await a.incrementReservoir(3);
      await Promise.all(jobs);
      assert.equal(ran, 8);
      assert.equal(await b.currentReservoir(), 0);
    });
  });
}
