// node-redis v5 and v6 (RESP2 and RESP3 handshakes) and ioredis 5 against one floodgate
// node: connect, the limiter commands, pipelines and errors, as an application uses them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClient as createClient5 } from 'redis5';
import { createClient as createClient6 } from 'redis6';
import Redis from 'ioredis';
import { startNode } from './floodgate.mjs';

let node;
let port;

before(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'fg-compat-'));
  const cfg = path.join(dir, 'floodgate.yaml');
  writeFileSync(cfg, [
    'policies:',
    '  free: {kind: sliding_log, limit: 100, window: 1m}',
    '  ws_messages: {kind: token_bucket, capacity: 120, refill: 120, period: 1m}',
    '  connections: {kind: concurrency, limit: 5, ttl: 1m}',
  ].join('\n'));
  ({ port, proc: node } = await startNode(['--config', cfg]));
});

after(() => { node?.kill('SIGTERM'); });

// node-redis v6 needs Node 20; Debian 12's own nodejs is 18. Say so rather than fail.
const nodeMajor = Number(process.versions.node.split('.')[0]);

for (const [name, createClient] of [['redis v5', createClient5], ['redis v6', createClient6]]) {
  for (const RESP of [2, 3]) {
    const skip = name === 'redis v6' && nodeMajor < 20 ? `needs Node 20, this is ${process.version}` : false;
    test(`${name} RESP${RESP}: handshake, CL.THROTTLE, FG.TAKE, errors`, { skip, timeout: 60000 }, async () => {
      const client = createClient({ url: `redis://127.0.0.1:${port}`, RESP });
      client.on('error', () => {});
      await client.connect();
      try {
        assert.equal(await client.ping(), 'PONG');
        // The handshake really happened: protocol negotiated, library announced itself.
        const info = String(await client.sendCommand(['CLIENT', 'INFO']));
        assert.match(info, new RegExp(`resp=${RESP}`));
        assert.match(info, /lib-name=node-redis/);
        const key = `user:${name}:${RESP}`;
        assert.deepEqual(await client.sendCommand(['CL.THROTTLE', key, '15', '30', '60']),
          [0, 16, 15, -1, 2]);
        const take = await client.sendCommand(['FG.TAKE', `plan:${key}`, 'free']);
        assert.deepEqual(take, [1, 100, 99, -1, 60000]);
        await assert.rejects(client.sendCommand(['FG.TAKE', key, 'nope']),
          /unknown policy 'nope'/);
        await assert.rejects(client.sendCommand(['CL.THROTTLE', key, 'x', '1', '1']),
          /value is not an integer or out of range/);
        // Multi-command pipeline through the client's own batching.
        const replies = await Promise.all(Array.from({ length: 50 }, () =>
          client.sendCommand(['FG.TAKE', `ws:${key}`, 'ws_messages'])));
        assert.deepEqual(replies.map((r) => r[2]), Array.from({ length: 50 }, (_, i) => 119 - i));
      } finally {
        await client.quit().catch(() => client.disconnect());
      }
    });
  }
}

test('ioredis 5: ready check, call, pipeline, leases', { timeout: 60000 }, async () => {
  const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    assert.equal(redis.status, 'ready');
    assert.deepEqual(await redis.call('CL.THROTTLE', 'io:1', '0', '1', '10'), [0, 1, 0, -1, 10]);
    assert.deepEqual(await redis.call('CL.THROTTLE', 'io:1', '0', '1', '10'), [1, 1, 0, 10, 10]);
    const pipe = redis.pipeline();
    for (let i = 0; i < 120; i++) pipe.call('FG.TAKE', 'io:ws', 'ws_messages');
    pipe.call('FG.TAKE', 'io:ws', 'ws_messages');
    const results = await pipe.exec();
    assert.equal(results.filter(([err, r]) => !err && r[0] === 1).length, 120);
    const last = results.at(-1)[1];
    assert.equal(last[0], 0);
    assert.equal(last[4] > 0, true);
    const leases = [];
    for (let i = 0; i < 5; i++) {
      const [granted, lease] = await redis.call('FG.ACQUIRE', 'io:conns', 'connections', 'HOLDER', 'app-1');
      assert.equal(granted, 1);
      leases.push(lease);
    }
    const [denied, none] = await redis.call('FG.ACQUIRE', 'io:conns', 'connections');
    assert.equal(denied, 0);
    assert.equal(none, null);
    assert.equal(await redis.call('FG.HEARTBEAT', 'app-1', '60000'), 5);
    assert.equal(await redis.call('FG.RELEASE', 'io:conns', leases[0]), 1);
    assert.equal(await redis.call('FG.COUNT', 'io:conns'), 4);
    await assert.rejects(redis.call('FG.RELEASE', 'io:conns', 'nothex'), /invalid lease id/);
  } finally {
    redis.disconnect();
  }
});
