// The part of a chat frontend's backend that talks to csq: it puts customers
// in line, keeps them there while their chat window is open, follows what
// happens to them, and takes them out when they close it.
//
//   const frontend = new Frontend({ host: '127.0.0.1', port: 7878 });
//   const customer = frontend.customer('cust42', { queue: 'sales' });
//   customer.on('status', (s) => ...);  // waiting (position, eta_ms) / assigned
//   customer.on('end', (why) => ...);   // released, left
//   await customer.join();              // ENQUEUE, then TOUCH until it ends
//   await customer.leave();             // the customer closed the window
//
// csqd speaks the Redis protocol: this uses ioredis, its raw-command call
// (call) and its pub/sub API. One connection sends commands for every
// customer, one more is subscribed to every customer's user:<id> channel.

import { EventEmitter } from 'node:events';
import Redis from 'ioredis';

// A TOUCH every TTL/TOUCHES_PER_TTL: two can be late before csqd takes the
// customer for gone.
export const TOUCHES_PER_TTL = 3;

// How long a customer who LEAVEs waits for the event that tells how it
// ended before it takes its own word for it.
const LEAVE_EVENT_MS = 2000;

// Positions of other customers are not pushed (csqd would pay O(queue) per
// change): a waiting customer's position and wait estimate are asked for
// (WHERE) at least this often.
export const REFRESH_MS = 5000;

// csq replies that describe a thing are flat field/value arrays, as HGETALL's.
export function fields(reply) {
  const out = {};
  for (let i = 0; i + 1 < reply.length; i += 2) out[reply[i]] = reply[i + 1];
  return out;
}

// One customer in csq, from ENQUEUE to its end. Emits 'status' with
// { state, queue, position, eta_ms, servicer, room } when any of them
// changes, and 'end' once with { event, reason } ('released' with `by`,
// or 'left' with `reason`).
export class Customer extends EventEmitter {
  constructor(frontend, id, options) {
    super();
    this.frontend = frontend;
    this.id = id;
    this.options = options;
    this.status = { state: 'none' };
    this.ended = false;
    this.leaving = false;
    this.timer = null;
    this.goneTimer = null; // a reply said "none": waiting for the event
    // Counts events: a reply (ENQUEUE, WHERE) read after an event that
    // arrived while it was on its way may be older than the event, since
    // replies and events come on two connections. Such a reply is dropped;
    // the next refresh asks again.
    this.events = 0;
  }

  // The channel's events, newest state first.
  onEvent(ev) {
    this.events++;
    switch (ev.event) {
      case 'queued':
      case 'rescored':
      case 'requeued':
      case 'declined':
      case 'overflowed':
      case 'transferred':
        // Back in line, or moved in it: requeued (its agent left),
        // declined (an offer refused or missed), overflowed / transferred
        // (another queue) come with the customer's new position.
        // queued carries the new arrival's estimate (eta_ms, issue 38):
        // no flicker between "no wait estimate yet" and the refresh's.
        this.update({ state: 'waiting', queue: ev.queue, position: ev.position,
          servicer: undefined, room: undefined,
          eta_ms: ev.event === 'queued' && ev.eta_ms !== undefined &&
            ev.eta_ms >= 0 ? ev.eta_ms : undefined });
        this.frontend.refresh(this);
        break;
      case 'offered':
        // Protocol v2 offers: an agent has a room reserved and is about to
        // accept. The customer still waits, first in line.
        this.update({ state: 'offered', queue: ev.queue, servicer: ev.servicer,
          room: ev.room, position: undefined, eta_ms: 0 });
        break;
      case 'matched':
        this.update({ state: 'assigned', queue: ev.queue, servicer: ev.servicer,
          room: ev.room, position: undefined, eta_ms: undefined,
          waited_ms: ev.waited_ms });
        break;
      case 'released':
        this.end({ event: 'released', reason: ev.by });
        break;
      case 'left':
        this.end({ event: 'left', reason: ev.reason });
        break;
      default:
        // Events a newer csqd may add: shown, not acted on.
        this.emit('other', ev);
    }
  }

  // Applies a reply of ENQUEUE or WHERE, unless an event came meanwhile.
  onReply(reply, eventsBefore) {
    if (this.ended || this.events !== eventsBefore) return;
    const f = fields(reply);
    if (f.state === 'none' && this.leaving) {
      // Our own LEAVE: its event says how it ended (left, or released by
      // the user); a reply on the command connection can overtake it.
      return;
    }
    if (f.state === 'none' && this.status.state !== 'none') {
      // Gone. The event that says how (released, left) comes on the
      // other connection and may come after this reply: it is waited for
      // a while. None at all (it came before we listened, or the
      // subscription was down): a TTL that ran out is the likely cause.
      if (this.goneTimer === null) {
        this.goneTimer = setTimeout(() => this.end({ event: 'left', reason: 'unknown' }),
          LEAVE_EVENT_MS);
      }
      return;
    }
    this.update({ state: f.state, queue: f.queue, position: f.position,
      servicer: f.servicer, room: f.room, eta_ms: f.eta_ms });
  }

  update(change) {
    const before = JSON.stringify(this.status);
    Object.assign(this.status, change);
    for (const k of Object.keys(this.status)) {
      if (this.status[k] === undefined) delete this.status[k];
    }
    if (JSON.stringify(this.status) !== before) this.emit('status', { ...this.status });
  }

  end(why) {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.goneTimer);
    this.frontend.forget(this);
    this.emit('end', why);
  }

  // Puts the customer in line. Its first status comes before this returns.
  async join() {
    await this.frontend.start(this);
  }

  // The customer closed the chat: a waiting customer abandons (event
  // `left`, reason leave), an assigned one frees its room (`released`,
  // by user). The end comes with the event.
  async leave() {
    if (this.ended) return;
    this.leaving = true;
    const wasAssigned = this.status.state === 'assigned';
    await this.frontend.cmd.call('LEAVE', this.id);
    // The event normally comes first; if the subscription is down it never
    // comes, and the customer must not wait for it forever.
    setTimeout(() => this.end(wasAssigned ? { event: 'released', reason: 'user' }
      : { event: 'left', reason: 'leave' }), LEAVE_EVENT_MS).unref();
  }
}

export class Frontend {
  // options: ioredis's (host, port, username, password, ...).
  constructor(options = {}) {
    this.cmd = new Redis(options);
    this.sub = new Redis(options);
    this.customers = new Map();
    for (const conn of [this.cmd, this.sub]) {
      // ioredis reconnects by itself (commands wait meanwhile, up to its
      // maxRetriesPerRequest); without a listener, each failed try is
      // printed as an unhandled error. Once per outage is enough.
      let reported = false;
      conn.on('error', (err) => {
        if (!reported) console.error(`csq connection: ${err.message}`);
        reported = true;
      });
      conn.on('ready', () => {
        reported = false;
      });
    }
    this.sub.on('message', (channel, message) => this.onMessage(channel, message));
    // Events published while the subscriber was reconnecting are lost:
    // ask where everyone is once it is back (ioredis resubscribes first).
    let reconnect = false;
    this.sub.on('ready', () => {
      if (reconnect) for (const c of this.customers.values()) this.refresh(c);
      reconnect = true;
    });
  }

  onMessage(channel, message) {
    const c = this.customers.get(channel.slice('user:'.length));
    if (!c) return;
    let ev;
    try {
      ev = JSON.parse(message);
    } catch {
      return;
    }
    c.onEvent(ev);
  }

  // A customer of this frontend, not yet in line: attach listeners, then
  // join(). options: queue, tier, ttl (seconds; sent with ENQUEUE, so
  // that the TOUCH interval follows it).
  customer(id, { queue = 'default', tier = 0, ttl = 120 } = {}) {
    return new Customer(this, id, { queue, tier, ttl });
  }

  // Puts a customer in line (or back in its place: ENQUEUE is idempotent)
  // and keeps it there until it ends.
  async start(c) {
    const { queue, tier, ttl } = c.options;
    this.customers.set(c.id, c);
    // Listen first: a free agent takes the customer within ENQUEUE itself.
    await this.sub.subscribe(`user:${c.id}`);
    const before = c.events;
    const reply = await this.cmd.call('ENQUEUE', c.id, 'QUEUE', queue, 'TIER', tier, 'TTL', ttl);
    c.onReply(reply, before);
    if (c.ended) return;
    const every = ttl > 0 ? Math.min((ttl * 1000) / TOUCHES_PER_TTL, REFRESH_MS) : REFRESH_MS;
    c.timer = setInterval(() => this.keepAlive(c), every);
  }

  // TOUCH restarts a waiting customer's TTL (an assigned one has none);
  // WHERE tells the position and the wait estimate.
  async keepAlive(c) {
    if (c.ended || c.status.state === 'assigned') return;
    try {
      await this.cmd.call('TOUCH', c.id);
    } catch (err) {
      // TRYAGAIN (csqd's engine is down for now) or no connection: the
      // next tick tries again, well within the TTL.
      console.error(`${c.id}: TOUCH: ${err.message}`);
      return;
    }
    // Matched meanwhile: nothing to ask (an agent may even have ended
    // the conversation already).
    if (c.status.state === 'assigned') return;
    await this.refresh(c);
  }

  // Never rejects: called from timers and event handlers.
  async refresh(c) {
    if (c.ended) return;
    const before = c.events;
    try {
      c.onReply(await this.cmd.call('WHERE', c.id), before);
    } catch (err) {
      console.error(`${c.id}: WHERE: ${err.message}`);
    }
  }

  forget(c) {
    clearInterval(c.timer);
    this.customers.delete(c.id);
    this.sub.unsubscribe(`user:${c.id}`).catch(() => {});
  }

  async close() {
    for (const c of this.customers.values()) clearInterval(c.timer);
    this.customers.clear();
    await Promise.allSettled([this.sub.quit(), this.cmd.quit()]);
  }
}
