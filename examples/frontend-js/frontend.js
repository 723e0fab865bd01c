#!/usr/bin/env node
// One customer's chat, as a chat frontend's backend sees it: the customer
// asks for a human, waits (its position and the wait estimate shown as
// they change), talks to an agent, and the conversation ends.
//
//   node frontend.js --user cust42 --queue sales
//
// With roles (docs/roles.md), the backend logs in as a frontend user:
//
//   node frontend.js --username frontend --password ... --user cust42
//
// Ctrl-C (or SIGTERM) is the customer closing the chat window: LEAVE.
// The exit status is 0 when the chat ended (released, left), 1 on an error.

import { parseArgs } from 'node:util';
import { Frontend } from './csq-frontend.js';

const USAGE = `usage: node frontend.js --user ID [options]
  --host HOST        csqd's address (default 127.0.0.1)
  --port PORT        csqd's port (default 7878)
  --username NAME    the user to log in as, with --password, when csqd has
                     users with roles (docs/roles.md): one of role frontend
  --password PASS    the password of --username, or csqd's requirepass
  --user ID          the customer's id (csq's user; not a login)
  --queue Q          the queue to wait in (default: default)
  --tier T           0 and up; a higher tier is served first (default 0)
  --ttl S            seconds csqd waits for a TOUCH (default 120)
  --give-up S        leave if no agent took the chat after S seconds
  --chat S           once with an agent, the customer leaves after S seconds
                     (default: the agent ends the conversation)`;

function say(line) {
  const t = new Date().toTimeString().slice(0, 8);
  console.log(`${t} ${line}`);
}

// The wait estimate (protocol v2, eta_ms) when csqd gives one.
function estimate(etaMs) {
  if (etaMs === undefined) return '';
  if (etaMs < 0) return ', no wait estimate yet';
  return `, estimated wait ${Math.ceil(etaMs / 1000)} s`;
}

function describe(s) {
  switch (s.state) {
    case 'waiting':
      return `waiting in ${s.queue}, position ${s.position}${estimate(s.eta_ms)}`;
    case 'offered':
      return `offered to agent ${s.servicer} (room ${s.room}), waiting for it to accept`;
    case 'assigned': {
      const waited = s.waited_ms === undefined ? '' : ` after ${s.waited_ms} ms`;
      return `matched with agent ${s.servicer} in room ${s.room}${waited}`;
    }
    default:
      return `state ${s.state}`;
  }
}

function options() {
  const { values } = parseArgs({
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '7878' },
      username: { type: 'string' },
      password: { type: 'string' },
      user: { type: 'string' },
      queue: { type: 'string', default: 'default' },
      tier: { type: 'string', default: '0' },
      ttl: { type: 'string', default: '120' },
      'give-up': { type: 'string' },
      chat: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || !values.user) {
    console.error(USAGE);
    process.exit(values.help ? 0 : 64);
  }
  return values;
}

async function main() {
  const o = options();
  // With a username, ioredis sends AUTH <username> <password>.
  const frontend = new Frontend({
    host: o.host,
    port: Number(o.port),
    username: o.username,
    password: o.password,
  });
  const customer = frontend.customer(o.user, {
    queue: o.queue,
    tier: Number(o.tier),
    ttl: Number(o.ttl),
  });
  let giveUp = null;
  let chat = null;

  const leave = (why) => {
    say(`${o.user}: ${why}: leaving`);
    customer.leave().catch((err) => say(`${o.user}: LEAVE: ${err.message}`));
  };

  customer.on('status', (s) => {
    say(`${o.user}: ${describe(s)}`);
    if (s.state === 'assigned') {
      clearTimeout(giveUp);
      if (o.chat !== undefined && chat === null) {
        chat = setTimeout(() => leave('the customer ends the chat'), Number(o.chat) * 1000);
      }
    }
  });
  customer.on('other', (ev) => say(`${o.user}: event ${JSON.stringify(ev)}`));
  const ended = new Promise((resolve) => customer.on('end', resolve));
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => leave(sig));

  await customer.join();
  if (o['give-up'] !== undefined && customer.status.state !== 'assigned') {
    giveUp = setTimeout(() => leave('no agent in time'), Number(o['give-up']) * 1000);
  }

  const why = await ended;
  clearTimeout(giveUp);
  clearTimeout(chat);
  if (why.event === 'released') say(`${o.user}: conversation ended by ${why.reason}`);
  else say(`${o.user}: left the line (${why.reason})`);
  await frontend.close();
}

main().catch((err) => {
  console.error(`frontend: ${err.message}`);
  process.exit(1);
});
