// Transactions through the Node.js clients: ioredis's and node-redis's
// multi(). Usage: node multi_node.mjs <csqd port> (test_multi_node.py
// starts csqd). Ends with the plain "N passed, N failed" line.
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { createClient } from 'redis';

const port = Number(process.argv[2]);
let passed = 0;
let failed = 0;

async function test(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}`);
    console.log(e);
  }
}

// ioredis: exec() gives [error, reply] pairs; a block refused while
// queueing rejects with EXECABORT.
await test('ioredis multi', async () => {
  const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true });
  await r.connect();
  const got = await r.multi()
    .call('ENQUEUE', 'i1', 'QUEUE', 'js')
    .call('HEARTBEAT', 'is1', 'QUEUES', 'js')
    .call('RELEASE', 'nobody/0')
    .call('WHERE', 'i1')
    .exec();
  assert.deepEqual(got[0], [null, ['state', 'waiting', 'queue', 'js', 'position', 1, 'eta_ms', -1]]);
  assert.deepEqual(got[1][1].slice(0, 4), ['servicer', 'is1', 'status', 'ready']);
  assert.match(got[2][0].message, /^NOTFOUND no such servicer or room/);
  assert.deepEqual(got[3][1].slice(0, 6), ['state', 'assigned', 'queue', 'js', 'room', 'is1/0']);

  await assert.rejects(
    r.multi().call('ENQUEUE', 'i2').call('ENQUEUE', 'bad!id').exec(),
    /EXECABORT Transaction discarded because of previous errors/);
  await assert.rejects(
    r.multi().call('ENQUEUE', 'i2').call('SUBSCRIBE', 'events').exec(),
    /EXECABORT/);
  assert.deepEqual(await r.call('WHERE', 'i2'), ['state', 'none']);

  // DISCARD: with multi({ pipeline: false }) ioredis sends MULTI at once,
  // then each command as it is called.
  assert.equal(await r.multi({ pipeline: false }), 'OK');
  assert.equal(await r.call('ENQUEUE', 'i3'), 'QUEUED');
  await assert.rejects(r.multi({ pipeline: false }), /MULTI calls can not be nested/);
  assert.equal(await r.discard(), 'OK');
  assert.deepEqual(await r.call('WHERE', 'i3'), ['state', 'none']);
  r.disconnect();
});

// node-redis: exec() gives the replies; an error in the block rejects
// with a MultiErrorReply that holds them all.
await test('node-redis multi', async () => {
  const c = createClient({ socket: { port, host: '127.0.0.1' } });
  await c.connect();
  const got = await c.multi()
    .addCommand(['ENQUEUE', 'n1', 'QUEUE', 'node'])
    .addCommand(['HEARTBEAT', 'ns1', 'QUEUES', 'node'])
    .addCommand(['WHERE', 'n1'])
    .exec();
  assert.deepEqual(got[0], ['state', 'waiting', 'queue', 'node', 'position', 1, 'eta_ms', -1]);
  assert.deepEqual(got[2].slice(0, 6), ['state', 'assigned', 'queue', 'node', 'room', 'ns1/0']);

  await assert.rejects(
    c.multi().addCommand(['ENQUEUE', 'n2']).addCommand(['ENQUEUE']).exec(),
    /EXECABORT|wrong number of arguments/);
  assert.deepEqual(await c.sendCommand(['WHERE', 'n2']), ['state', 'none']);

  await assert.rejects(
    c.multi().addCommand(['ENQUEUE', 'n3']).addCommand(['RELEASE', 'nobody/0']).exec(),
    (e) => {
      assert.equal(e.replies.length, 2);
      assert.deepEqual(e.replies[0].slice(0, 2), ['state', 'waiting']);
      assert.match(String(e.replies[1]), /NOTFOUND/);
      return true;
    });
  await c.quit();
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
