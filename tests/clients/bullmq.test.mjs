// BullMQ's queue limiter, unchanged (its README's example: `limiter: { max: 5, duration:
// 2000 }`): a queue, a worker and `QueueEvents`. Its Lua scripts keep the queue in lists,
// sorted sets and hashes and its events in a stream (XADD ... MAXLEN ~, XTRIM); QueueEvents
// waits on the stream in XREAD BLOCK. Each case runs against redis-server first (the
// reference), then a standalone node, then a 3-node cluster through ioredis `Cluster` (the
// queue's prefix has a hash tag, as BullMQ asks of any Redis Cluster). Every job must
// complete, each completion must reach QueueEvents, and the worker must never run more than
// 5 jobs in a 2 s window.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Queue, QueueEvents, Worker } from 'bullmq';
import Redis from 'ioredis';
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

// Each target makes the options of one BullMQ object. A connection BullMQ is handed is the
// caller's to close (BullMQ closes only those it made): `made` keeps them for that.
const plain = (port) => () => ({ connection: { host: '127.0.0.1', port, maxRetriesPerRequest: null } });
const clustered = (made) => () => {
  const connection = new Redis.Cluster([{ host: '127.0.0.1', port: cluster.ports[0] }],
    { redisOptions: { maxRetriesPerRequest: null } });
  made.push(connection);
  return { prefix: '{bull}', connection };
};

const targets = [
  ['redis-server', () => plain(redisPort)],
  ['a standalone node', () => plain(standalone.port)],
  ['a cluster, ioredis Cluster', (made) => clustered(made)],
];

let made = 0;
for (const [name, where] of targets) {
  test(`BullMQ on ${name}: a rate-limited queue runs every job at 5 per 2 s`, { timeout: 60000 }, async () => {
    const conns = [];
    const options = where(conns);
    const queueName = `limited-${process.pid}-${++made}`;
    const queue = new Queue(queueName, options());
    const events = new QueueEvents(queueName, options());
    const worker = new Worker(queueName, async (job) => job.data.n * 2,
      { ...options(), limiter: { max: 5, duration: 2000 } });
    const errors = [];
    worker.on('error', (e) => errors.push(e.message));
    try {
      await events.waitUntilReady();
      await worker.waitUntilReady();
      const completed = new Map();
      events.on('completed', ({ jobId, returnvalue }) => completed.set(jobId, [Date.now(), returnvalue]));
      const jobs = 12;
      const t0 = Date.now();
      const added = [];
      for (let i = 0; i < jobs; i++) added.push(await queue.add('job', { n: i }));
      while (completed.size < jobs && Date.now() - t0 < 20000) await sleep(50);
      assert.equal(completed.size, jobs, 'every completion reached QueueEvents (XREAD BLOCK)');
      for (const job of added) {
        assert.equal(String(completed.get(job.id)[1]), String(job.data.n * 2));
      }
      const counts = await queue.getJobCounts('completed', 'waiting', 'active', 'failed');
      assert.deepEqual(counts, { completed: jobs, waiting: 0, active: 0, failed: 0 });
      // The limiter: no 2 s window holds more than 5 completions (a little slack for the
      // event's travel), and 12 jobs need the third window.
      const times = [...completed.values()].map(([t]) => t).sort((a, b) => a - b);
      for (let i = 5; i < times.length; i++) {
        assert.ok(times[i] - times[i - 5] >= 1900, `six completions within ${times[i] - times[i - 5]} ms`);
      }
      assert.ok(times[times.length - 1] - t0 >= 3900, 'the last jobs waited for the third window');
      assert.deepEqual(errors, []);
    } finally {
      await worker.close();
      await events.close();
      await queue.close();
      for (const c of conns) c.disconnect();
    }
  });
}
