// The admin page of csq (docs/protocol.md, section 11a).
//
// It loads a snapshot (/api/snapshot), then follows the events after the
// snapshot's id (/api/events) and keeps everything it shows from them
// alone: no polling. Each queue's line is a prefix of the real one, loaded
// page by page (/api/queue/<q>) as the list is scrolled; an event that
// puts a user in line says at which position, one that takes a user out
// names it, so the prefix stays exact. A page answers with the id of the
// state it shows: events are held while pages are on their way, applied up
// to that id, and then the page is joined to the prefix, so that nothing is
// missed or counted twice. A gap in the ids, or "event: resync", reloads.
//
// Events only change the model; the DOM is redrawn at most once per
// animation frame, and only what changed: at 10,000 events a second a frame
// applies some 170 events and redraws a few lines.
"use strict";

(function () {
  const PAGE = 100; // rows asked per page of a line
  const ROW_H = 22; // px, as --row in admin.css
  const LOAD_AHEAD = 2 * PAGE; // rows below the view that are kept loaded
  // A line longer than this is not all kept: its tail, far below the
  // view, is dropped and loaded again when scrolled to.
  const PREFIX_MAX = 50 * PAGE;
  const HOUR_MS = 3600 * 1000;
  const SAMPLE_MS = 10 * 1000; // a point of the chart
  const ARRIVALS_MAX = 200000; // users whose arrival is remembered
  const HIDDEN_APPLY_MS = 250; // events applied while the tab is hidden
  const RELOAD_DELAYS = [0, 500, 2000, 5000]; // after repeated resyncs
  // A queue's wait estimate is csqd's answer to a question, not an event:
  // asked again when events change the queue, at most this often.
  const ESTIMATE_EVERY_MS = 2000;
  const EVENTS = ["queued", "rescored", "matched", "left", "released",
    "requeued", "servicer_up", "servicer_down", "servicer_paused",
    "servicer_resumed", "offered", "declined", "transferred", "wrapup",
    "ready", "overflowed", "prefer_ended", "opened", "closed",
    "servicer_updated"];

  const $ = (id) => document.getElementById(id);
  // The URL of an API path. Not the bare path: a page opened as
  // http://user:password@host/ resolves it to a URL with the credentials
  // in it, which fetch refuses; the origin has none, and the browser
  // sends the credentials the page was opened with all the same.
  const at = (path) => location.origin + path;

  // The model, rebuilt by every load.
  let M = null;
  // The stream and what came on it but is not applied yet.
  let source = null;
  let inbox = [];
  let pages = []; // answers of /api/queue waiting for their id
  let inflight = 0; // requests of pages not answered yet
  let generation = 0; // a load's; answers of an older one are dropped
  let reloads = 0; // in a row, for the delay
  let reloading = false;
  let frameAsked = false;
  // Events applied, for the rate shown; loads after the first.
  let applied = 0, rateT = performance.now(), rate = 0;
  let appliedTotal = 0, reloadsTotal = 0;

  function newModel(snap) {
    return {
      lastId: snap.id,
      skew: snap.ts - Date.now(), // csqd's clock minus ours
      stats: Object.assign({}, snap.stats),
      queues: new Map(),
      servicers: new Map(),
      arrivals: new Map(), // user -> arrival (csqd's ms), where known
      // user -> the queue it waits in, for every user known to wait (in
      // a prefix or beyond it): whether a match took a user from a line
      // or at its ENQUEUE, which publishes no "queued".
      waitingAt: new Map(),
      dirtyQueues: new Set(),
      touched: new Set(), // queues whose estimates may have changed
      // Whether csqd makes wait estimates: the snapshot says, by eta_ms.
      estimates: snap.queues.length > 0 && snap.queues[0].eta_ms !== undefined,
      dirtyServicers: new Set(),
      dirtyStats: true,
      servicerOrder: true, // the table's rows need sorting
      queueOrder: true,
      chart: { t: [], waiting: [], matched: [] },
    };
  }

  function now() {
    return Date.now() + M.skew;
  }

  // ---- queues and lines -------------------------------------------------

  function queue(name) {
    let q = M.queues.get(name);
    if (q === undefined) {
      // Not in the snapshot: it had nobody waiting then.
      q = { name: name, waiting: 0, preferring: 0, line: [],
        users: new Set(), complete: true, uncertain: false,
        oldest: null, oldestKnown: true,
        askedOldest: false, loading: false, card: null,
        eta: -1, sl: -1, abandonPct: -1, estimatedAt: 0,
        askedEstimate: false, hours: null };
      M.queues.set(name, q);
      M.queueOrder = true;
    }
    M.dirtyQueues.add(q);
    M.touched.add(q);
    return q;
  }

  // The share of the queue's users who gave up waiting, of those whose
  // wait ended (matched or abandoned), in %; -1 before any (issue 38).
  function abandonPct(p) {
    if (p.abandoned_total === undefined) return -1;
    const ended = p.abandoned_total + p.matched_total;
    return ended === 0 ? -1 : Math.round(100 * p.abandoned_total / ended);
  }

  // The estimates of csqd's answer p (a snapshot's queue, a page), when
  // its engine makes them (the memory engine's QSTATS).
  function estimate(q, p) {
    // Business hours: open now and the next change, for a queue with
    // them (its events keep them true between answers).
    if (p.open !== undefined) {
      q.hours = { open: p.open, next: p.next_change_ms };
    }
    if (p.eta_ms === undefined) return;
    q.eta = p.eta_ms;
    q.sl = p.service_level_pct;
    q.abandonPct = abandonPct(p);
    q.estimatedAt = performance.now();
    q.askedEstimate = false;
    // As of the answer's id: the events before it changed nothing more.
    M.touched.delete(q);
  }

  // Asks again for the estimates of the queues that events changed, once
  // their last answer is ESTIMATE_EVERY_MS old (a page of no rows, at its
  // place among the events): a change is on screen within that time and
  // a second, the tick's, and a busy queue costs one request per period.
  function refreshEstimates() {
    const t = performance.now();
    for (const q of M.touched) {
      if (q.askedEstimate || t - q.estimatedAt < ESTIMATE_EVERY_MS) continue;
      q.askedEstimate = true;
      M.touched.delete(q);
      requestPage(q, 0);
    }
  }

  function remember(user, arrival) {
    if (arrival === null || arrival === undefined) return;
    if (M.arrivals.size >= ARRIVALS_MAX && !M.arrivals.has(user)) {
      M.arrivals.delete(M.arrivals.keys().next().value);
    }
    M.arrivals.set(user, arrival);
  }

  // The longest wait of q, from csqd: a page of no rows says it, at its
  // place among the events.
  function askOldest(q) {
    q.oldestKnown = false;
    if (q.askedOldest) return;
    q.askedOldest = true;
    requestPage(q, 0);
  }

  // user enters q's line at position (1-based). The prefix takes it when
  // the position falls inside it, or right after it when it is the whole
  // line.
  function lineInsert(q, user, tier, position, arrival, needs) {
    q.waiting++;
    M.waitingAt.set(user, q.name);
    if (arrival === undefined) arrival = M.arrivals.get(user);
    if (arrival === undefined) arrival = null;
    const len = q.line.length;
    if (position <= len || (position === len + 1 && q.complete)) {
      q.line.splice(position - 1, 0,
        { user: user, tier: tier, arrival: arrival, needs: needs || "" });
      q.users.add(user);
    }
    q.complete = q.line.length === q.waiting - q.preferring;
    if (q.line.length > PREFIX_MAX) trimTail(q);
    // The longest wait: this user's, when it is the only one; unknown
    // when its arrival is (a requeued user may have come long ago).
    if (q.waiting === 1) {
      q.oldest = arrival === null ? null : { user: user, arrival: arrival };
      if (arrival === null) askOldest(q);
    } else if (!q.oldestKnown) {
      // asked already
    } else if (arrival === null) {
      askOldest(q);
    } else if (q.oldest !== null && arrival < q.oldest.arrival) {
      q.oldest = { user: user, arrival: arrival };
    }
  }

  // Drops the rows of q far below its view, whose splices cost each event
  // that comes before them.
  function trimTail(q) {
    let keep = PREFIX_MAX - PAGE;
    if (q.card !== null) {
      const c = q.card;
      keep = Math.max(keep, Math.ceil((c.scrollTop + (c.drawn.view || 0)) /
        ROW_H) + LOAD_AHEAD);
    }
    if (q.line.length <= keep) return;
    // (Still waiting: waitingAt keeps them.)
    for (const e of q.line.splice(keep)) q.users.delete(e.user);
    q.complete = false;
  }

  // user leaves q's line; its entry, when the prefix held it.
  function lineRemove(q, user) {
    q.waiting--;
    M.waitingAt.delete(user);
    let entry = null;
    if (q.users.delete(user)) {
      const i = q.line.findIndex((e) => e.user === user);
      entry = q.line.splice(i, 1)[0];
    }
    q.complete = q.line.length === q.waiting - q.preferring;
    if (q.waiting === 0) {
      q.oldest = null;
      q.oldestKnown = true;
    } else if (q.oldestKnown && q.oldest !== null && q.oldest.user === user) {
      // The longest waiter went: the next one is the first of its tier,
      // somewhere in the line; computed when it is all here, else asked.
      q.oldest = null;
      if (q.complete && q.line.every((e) => e.arrival !== null)) {
        for (const e of q.line) {
          if (q.oldest === null || e.arrival < q.oldest.arrival) {
            q.oldest = { user: e.user, arrival: e.arrival };
          }
        }
      } else {
        askOldest(q);
      }
    }
    return entry;
  }

  // A match or an offer took user to a room. From a line when it came
  // from one (from_queue) or is known to wait; else a user matched at its
  // ENQUEUE has waited 0 ms, and one who waited longer was in line before
  // the page loaded, beyond its prefix. An offer does not tell how long
  // the user waited: when the user is not known, the queue's length is
  // asked (a page of no rows), at its place among the events.
  function takeFromLine(d, waited) {
    if (d.from_queue !== undefined) {
      lineRemove(queue(d.from_queue), d.user);
    } else if (M.waitingAt.has(d.user)) {
      lineRemove(queue(M.waitingAt.get(d.user)), d.user);
    } else if (waited === undefined) {
      const q = queue(d.queue);
      q.uncertain = true;
      requestPage(q, 0);
    } else if (waited > 0) {
      lineRemove(queue(d.queue), d.user);
    }
  }

  // ---- rooms --------------------------------------------------------------

  function servicer(id) {
    let s = M.servicers.get(id);
    if (s === undefined) {
      s = { id: id, status: "ready", capacity: 0, queues: [], skills: "",
        pausedBy: "", restingUntil: null, handled: 0, handleMs: 0,
        rooms: new Map(), row: null };
      M.servicers.set(id, s);
      M.servicerOrder = true;
    }
    M.dirtyServicers.add(s);
    return s;
  }

  // The needs of the user in a room, as the page knows them.
  function roomNeeds(sid, room) {
    const s = M.servicers.get(sid);
    const r = s === undefined ? undefined : s.rooms.get(roomIndex(room));
    return r === undefined ? "" : r.needs;
  }

  function roomIndex(room) {
    return Number(room.slice(room.lastIndexOf("/") + 1));
  }

  function setRoom(sid, room, state, user, since, needs) {
    const s = servicer(sid);
    // A user's needs come with the snapshot, and with the events that
    // put it in a room (offered, matched: absent without needs).
    s.rooms.set(roomIndex(room), { room: room, state: state, user: user,
      since: since, needs: needs || "" });
  }

  function freeRoom(sid, room) {
    const s = servicer(sid);
    const idx = roomIndex(room);
    if (idx >= s.capacity) {
      s.rooms.delete(idx); // above a lowered capacity: gone when free
    } else {
      s.rooms.set(idx, { room: room, state: "free", user: "", since: null,
        needs: "" });
    }
  }

  // ---- events -------------------------------------------------------------

  // The queues whose estimates ev may change: its own, the one it left,
  // and those of its servicer (whose rooms, free or not, count in them).
  function touch(d) {
    for (const name of [d.queue, d.from_queue]) {
      const q = name === undefined ? undefined : M.queues.get(name);
      if (q !== undefined) M.touched.add(q);
    }
    const s = d.servicer === undefined ? undefined :
      M.servicers.get(d.servicer);
    if (s !== undefined) {
      for (const name of s.queues) {
        const q = M.queues.get(name);
        if (q !== undefined) M.touched.add(q);
      }
    }
  }

  function apply(ev) {
    const d = ev.data;
    const t = d.ts;
    if (M.estimates) touch(d);
    switch (ev.name) {
      case "queued":
        remember(d.user, t);
        if (d.prefer !== undefined) {
          // Held for a preferred servicer: counted, in no line of the
          // queue's until its window ends (prefer_ended).
          const q = queue(d.queue);
          q.waiting++;
          q.preferring++;
          M.waitingAt.set(d.user, "*prefer");
        } else {
          lineInsert(queue(d.queue), d.user, d.tier, d.position, t,
            d.needs);
        }
        break;
      case "prefer_ended": {
        const q = queue(d.queue);
        q.preferring = Math.max(0, q.preferring - 1);
        q.waiting--;
        if (d.position !== undefined) {
          lineInsert(q, d.user, d.tier, d.position);
        } else {
          // Where it joined the line is not told: its line is loaded
          // again, from its place among the events.
          q.waiting++;
          q.line = [];
          q.users.clear();
          q.complete = false;
          requestPage(q, PAGE);
        }
        break;
      }
      case "rescored": {
        const from = d.from_queue !== undefined ? d.from_queue : d.queue;
        const e = lineRemove(queue(from), d.user);
        lineInsert(queue(d.queue), d.user, d.tier, d.position,
          e !== null ? e.arrival : undefined, d.needs);
        break;
      }
      case "overflowed": {
        const e = lineRemove(queue(d.from_queue), d.user);
        lineInsert(queue(d.queue), d.user, d.tier, d.position,
          e !== null ? e.arrival : undefined, e !== null ? e.needs : "");
        break;
      }
      case "offered":
        takeFromLine(d, undefined);
        setRoom(d.servicer, d.room, "offered", d.user, t, d.needs);
        break;
      case "matched":
        remember(d.user, t - d.waited_ms);
        // After an offer the user was in its room already, not in line.
        if (d.offered_ms === undefined) takeFromLine(d, d.waited_ms);
        setRoom(d.servicer, d.room, "assigned", d.user, t, d.needs);
        M.stats.matched_total++;
        M.dirtyStats = true;
        break;
      case "left":
        if (d.servicer !== undefined) {
          freeRoom(d.servicer, d.room); // an offered user
        } else if (M.waitingAt.get(d.user) === "*prefer") {
          const q = queue(d.queue);
          q.waiting--;
          q.preferring = Math.max(0, q.preferring - 1);
          M.waitingAt.delete(d.user);
        } else {
          lineRemove(queue(d.queue), d.user);
        }
        M.arrivals.delete(d.user);
        break;
      case "declined":
        // Its servicer rests until resting_until_ms (0: no rest).
        if (d.resting_until_ms > 0) {
          servicer(d.servicer).restingUntil = d.resting_until_ms;
        }
        lineInsert(queue(d.queue), d.user, d.tier, d.position, undefined,
          roomNeeds(d.servicer, d.room));
        freeRoom(d.servicer, d.room);
        break;
      case "requeued":
        lineInsert(queue(d.queue), d.user, d.tier, d.position, undefined,
          roomNeeds(d.servicer, d.room));
        freeRoom(d.servicer, d.room);
        break;
      case "transferred":
        lineInsert(queue(d.queue), d.user, d.tier, d.position, undefined,
          d.needs);
        break;
      case "released": {
        // A conversation ended: counted for its servicer, with its time
        // as the page saw it (the next snapshot has csqd's).
        const s = servicer(d.servicer);
        const r = s.rooms.get(roomIndex(d.room));
        s.handled++;
        if (r !== undefined && r.since !== null) {
          s.handleMs += Math.max(0, t - r.since);
        }
        freeRoom(d.servicer, d.room);
        break;
      }
      case "wrapup":
        setRoom(d.servicer, d.room, "wrapup", "", t);
        break;
      case "ready":
        freeRoom(d.servicer, d.room);
        break;
      case "servicer_up": {
        const s = servicer(d.servicer);
        s.status = "ready";
        s.capacity = d.capacity;
        s.queues = d.queues;
        s.skills = d.skills || "";
        s.rooms = new Map();
        for (let i = 0; i < d.capacity; i++) {
          s.rooms.set(i, { room: d.servicer + "/" + i, state: "free",
            user: "", since: null, needs: "" });
        }
        for (const name of d.queues) queue(name);
        break;
      }
      case "servicer_updated": {
        // A HEARTBEAT changed its queues, skills or capacity.
        const s = servicer(d.servicer);
        for (const name of s.queues) queue(name); // may have nobody now
        s.queues = d.queues;
        s.skills = d.skills || "";
        for (const name of d.queues) queue(name);
        // Its rooms: free ones up to the capacity; above it, busy ones
        // stay until they free (freeRoom), as csqd keeps them.
        s.capacity = d.capacity;
        for (const [i, r] of s.rooms) {
          if (i >= d.capacity && r.state === "free") s.rooms.delete(i);
        }
        for (let i = 0; i < d.capacity; i++) {
          if (!s.rooms.has(i)) {
            s.rooms.set(i, { room: d.servicer + "/" + i, state: "free",
              user: "", since: null, needs: "" });
          }
        }
        break;
      }
      case "servicer_down": {
        const s = M.servicers.get(d.servicer);
        if (s !== undefined) {
          // Its queues may have nobody left to serve them.
          for (const name of s.queues) queue(name);
          if (s.row !== null) s.row.remove();
          M.servicers.delete(d.servicer);
          M.dirtyServicers.delete(s);
          M.dirtyStats = true;
        }
        break;
      }
      case "servicer_paused": {
        const s = servicer(d.servicer);
        s.status = "paused";
        s.pausedBy = d.reason || "pause";
        break;
      }
      case "servicer_resumed": {
        // RESUME ends a rest after a DECLINE too.
        const s = servicer(d.servicer);
        s.status = "ready";
        s.pausedBy = "";
        s.restingUntil = null;
        break;
      }
      case "opened":
      case "closed":
        queue(d.queue).hours = { open: ev.name === "opened",
          next: d.until_ms };
        break;
      default:
        break; // kinds to come: nothing shown changes
    }
    M.lastId = ev.id;
    M.dirtyStats = true;
    applied++;
    appliedTotal++;
  }

  // ---- the order of events and pages ---------------------------------------

  // Applies what can be applied: the events in id order, and each page
  // once the events up to its id are applied. While a page is on its way
  // nothing is applied: its id is not known yet, and it may be any id from
  // the last applied on.
  function pump() {
    if (M === null) return;
    for (;;) {
      if (inflight > 0) return;
      while (pages.length > 0 && pages[0].id <= M.lastId) {
        const p = pages.shift();
        if (p.id < M.lastId) {
          // Older than what is shown: ask again.
          requestPage(queue(p.queue), p.count);
          return;
        }
        stitch(p);
      }
      if (inbox.length === 0) return;
      const ev = inbox[0];
      if (ev.id <= M.lastId) { inbox.shift(); continue; }
      if (ev.id !== M.lastId + 1 ||
          (pages.length > 0 && ev.id > pages[0].id)) {
        reload("a gap in the events: " + M.lastId + " then " + ev.id);
        return;
      }
      inbox.shift();
      apply(ev);
    }
  }

  // A page of q's line at the state the model is now in: joined to the
  // prefix where it follows on from it.
  function stitch(p) {
    const q = queue(p.queue);
    q.loading = false;
    q.preferring = p.preferring || 0;
    estimate(q, p);
    if (q.uncertain) {
      // An offer to a user it did not know: csqd's length is the truth.
      q.uncertain = false;
      q.waiting = p.total;
    }
    if (q.waiting !== p.total) {
      // The events and csqd disagree: never show what is not so.
      reload("queue " + q.name + ": " + q.waiting + " by the events, " +
        p.total + " by csqd");
      return;
    }
    const len = q.line.length;
    if (p.offset <= len) {
      for (let i = len - p.offset; i < p.users.length; i++) {
        const u = p.users[i];
        const arrival = p.ts - u.waited_ms;
        remember(u.user, arrival);
        q.line.push({ user: u.user, tier: u.tier, arrival: arrival,
          needs: u.needs || "" });
        q.users.add(u.user);
        M.waitingAt.set(u.user, q.name);
      }
    }
    q.complete = q.line.length === q.waiting - q.preferring;
    q.oldest = p.oldest_user === "" ? null :
      { user: p.oldest_user, arrival: p.ts - p.oldest_wait_ms };
    q.oldestKnown = true;
    q.askedOldest = false;
    M.dirtyQueues.add(q);
    maybeLoad(q);
  }

  function requestPage(q, count) {
    if (q.loading && count > 0) return;
    if (count > 0) q.loading = true;
    inflight++;
    const gen = generation;
    const url = "/api/queue/" + encodeURIComponent(q.name) + "?offset=" +
      q.line.length + "&count=" + count;
    fetch(at(url), { cache: "no-store" })
      .then((r) => {
        if (!r.ok) throw new Error(url + ": " + r.status);
        return r.json();
      })
      .then((p) => {
        if (gen !== generation) return;
        p.count = count;
        inflight--;
        pages.push(p);
        pages.sort((a, b) => a.id - b.id);
        pump();
        askFrame();
      })
      .catch((err) => {
        if (gen !== generation) return;
        inflight--;
        reload(String(err));
      });
  }

  // Loads the next page of q when its view comes near the prefix's end.
  function maybeLoad(q) {
    if (q.complete || q.loading || q.card === null) return;
    const c = q.card;
    const lastShown = Math.ceil((c.scrollTop + (c.drawn.view || 0)) / ROW_H);
    if (lastShown + LOAD_AHEAD >= q.line.length) requestPage(q, PAGE);
  }

  // ---- loading ------------------------------------------------------------

  function reload(why) {
    if (reloading) return;
    reloading = true;
    // What the old stream or its pages still bring is of a state the
    // page no longer vouches for: dropped from now on.
    generation++;
    if (source !== null) source.close();
    source = null;
    inbox = [];
    if (why) console.warn("csq: reloading:", why);
    reloadsTotal++;
    const delay = RELOAD_DELAYS[Math.min(reloads, RELOAD_DELAYS.length - 1)];
    reloads++;
    setTimeout(load, delay);
  }

  function load() {
    generation++;
    const gen = generation;
    if (source !== null) source.close();
    source = null;
    inbox = [];
    pages = [];
    inflight = 0;
    setLink(false, "loading");
    fetch(at("/api/snapshot"), { cache: "no-store" })
      .then((r) => {
        if (!r.ok) throw new Error("/api/snapshot: " + r.status);
        return r.json();
      })
      .then((snap) => {
        if (gen !== generation) return;
        reloading = false;
        show(snap);
        listen(snap.id, gen);
        for (const q of M.queues.values()) {
          if (q.waiting > 0) requestPage(q, PAGE);
        }
        askFrame();
      })
      .catch((err) => {
        if (gen !== generation) return;
        reloading = false;
        setLink(false, "csqd unreachable");
        reload(String(err));
      });
  }

  function listen(id, gen) {
    source = new EventSource(at("/api/events?last_event_id=" + id));
    const take = (name) => (e) => {
      if (gen !== generation) return;
      inbox.push({ id: Number(e.lastEventId), name: name,
        data: JSON.parse(e.data) });
      askFrame();
    };
    for (const name of EVENTS) source.addEventListener(name, take(name));
    source.addEventListener("resync", () => {
      if (gen === generation) reload("csqd asked for a resync");
    });
    source.onopen = () => {
      if (gen === generation) { setLink(true, "live"); reloads = 0; }
    };
    source.onerror = () => {
      if (gen !== generation) return;
      // The stream broke. EventSource would resume it by itself with
      // Last-Event-ID, but the csqd it reaches may not be the one that
      // numbered the events: a memory engine restarted without its
      // journal counts from 0 again, and its event 51 is not the one
      // this page missed. A snapshot is what csqd is now: load again.
      setLink(false, "reconnecting");
      reload("the event stream broke");
    };
  }

  function show(snap) {
    const old = M;
    M = newModel(snap);
    if (old !== null) M.chart = old.chart;
    $("queues").textContent = "";
    $("servicers").tBodies[0].textContent = "";
    for (const q of snap.queues) {
      const m = queue(q.name);
      m.waiting = q.waiting;
      m.preferring = q.preferring || 0;
      m.complete = q.waiting === m.preferring;
      m.oldest = q.oldest_user === "" ? null :
        { user: q.oldest_user, arrival: snap.ts - q.oldest_wait_ms };
      m.needsWaiting = q.needs_waiting || [];
      estimate(m, q);
    }
    for (const s of snap.servicers) {
      const m = servicer(s.id);
      m.status = s.status;
      m.pausedBy = s.paused_by || "";
      m.restingUntil = s.resting_ms > 0 ? snap.ts + s.resting_ms : null;
      m.handled = s.handled_total || 0;
      m.handleMs = s.handle_ms_total || 0;
      m.capacity = s.capacity;
      m.queues = s.queues;
      m.skills = s.skills || "";
      for (const r of s.rooms) {
        m.rooms.set(roomIndex(r.room), { room: r.room, state: r.state,
          user: r.user, since: r.state === "free" ? null :
            snap.ts - r.since_ms, needs: r.needs || "" });
      }
    }
    if (snap.history !== undefined) chartHistory(snap.history);
  }

  // ---- drawing ------------------------------------------------------------

  function askFrame() {
    if (frameAsked) return;
    frameAsked = true;
    requestAnimationFrame(frame);
  }

  // The time each frame's work took (ms), the last FRAME_TIMES of them:
  // what the page itself costs, whatever else the machine is doing.
  const FRAME_TIMES = 4096;
  const frameTimes = [];

  function frame() {
    const t = performance.now();
    frameAsked = false;
    pump();
    if (M !== null && M.estimates && inflight === 0) refreshEstimates();
    if (M !== null) draw();
    if (frameTimes.length === FRAME_TIMES) frameTimes.shift();
    frameTimes.push(performance.now() - t);
  }

  function draw() {
    if (M.queueOrder) orderQueues();
    for (const q of M.dirtyQueues) drawQueue(q);
    M.dirtyQueues.clear();
    if (M.servicerOrder) orderServicers();
    for (const s of M.dirtyServicers) drawServicer(s);
    M.dirtyServicers.clear();
    if (M.dirtyStats) drawStats();
    M.dirtyStats = false;
  }

  function fmtWait(ms) {
    if (ms === null || ms === undefined || ms < 0) return "–";
    const s = Math.floor(ms / 1000);
    if (s < 60) return s + "s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m" + String(s % 60).padStart(2, "0") + "s";
    return Math.floor(m / 60) + "h" + String(m % 60).padStart(2, "0") + "m";
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Whether a queue is shown: someone waits in it, a servicer serves it,
  // or it is the default one (as QUEUES lists them).
  function queueShown(q) {
    if (q.waiting > 0 || q.name === "default" || q.hours !== null) {
      return true;
    }
    for (const s of M.servicers.values()) {
      if (s.queues.indexOf(q.name) >= 0) return true;
    }
    return false;
  }

  function orderQueues() {
    M.queueOrder = false;
    const box = $("queues");
    const names = Array.from(M.queues.keys()).sort();
    for (const name of names) {
      const q = M.queues.get(name);
      if (q.card === null) makeCard(q);
      box.appendChild(q.card.root);
      M.dirtyQueues.add(q);
    }
  }

  function makeCard(q) {
    const root = el("div", "queue");
    root.dataset.queue = q.name;
    const head = el("div", "queue-head");
    const name = el("span", "queue-name", q.name);
    const waiting = el("b");
    const oldest = el("b");
    const facts = el("span", "queue-facts");
    facts.append(waiting, " waiting · oldest ", oldest);
    // The estimate for a new arrival and the share served within the
    // service level, where csqd makes them (not the Redis engine yet).
    const eta = el("b", "queue-eta");
    const sl = el("b", "queue-sl");
    // Nobody serves it (issue 38): no servicer logged in has it.
    const nobody = el("span", "queue-nobody", "nobody serves it");
    nobody.hidden = true;
    // Its users with needs by need-set, as the last load saw them.
    const groups = el("span", "queue-needs");
    const abandon = el("b", "queue-abandon");
    // Business hours: open or closed, and until when (hidden without).
    const hours = el("span", "queue-hours");
    head.append(name, nobody, facts, hours, groups);
    if (M.estimates) {
      const est = el("span", "queue-est");
      est.append("new arrival's wait ", eta, " · served in time ", sl,
        " · gave up ", abandon);
      head.append(est);
    }
    const view = el("div", "line");
    const spacer = el("div", "line-spacer");
    view.appendChild(spacer);
    root.append(head, view);
    // scrollTop as the last scroll left it: read there, not while
    // drawing, where a read after the writes would force a layout.
    q.card = { root: root, facts: facts, waiting: waiting, oldest: oldest,
      eta: eta, sl: sl, nobody: nobody, groups: groups, abandon: abandon,
      hours: hours,
      view: view, spacer: spacer, rows: [], drawn: {}, scrollTop: 0 };
    view.addEventListener("scroll", () => {
      q.card.scrollTop = view.scrollTop;
      M.dirtyQueues.add(q);
      maybeLoad(q);
      askFrame();
    }, { passive: true });
  }

  // Sets what changed only: a DOM write costs the browser a style and
  // layout pass, and most frames change a few rows of a line, if any.
  function put(o, key, value, write) {
    if (o[key] !== value) {
      o[key] = value;
      write(value);
    }
  }

  function makeRow(c) {
    const row = el("div", "row");
    row.append(el("span", "pos"), el("span", "user"), el("span", "tier"),
      el("span", "wait"), el("span", "needs"));
    row.drawn = {};
    c.spacer.appendChild(row);
    c.rows.push(row);
    return row;
  }

  // A row of the view: top, its kind, and its five texts.
  function putRow(row, top, more, user, texts) {
    const d = row.drawn;
    const k = row.children;
    put(d, "hidden", false, (v) => { row.hidden = v; });
    put(d, "top", top, (v) => { row.style.top = v + "px"; });
    put(d, "cls", more ? "row more" : "row", (v) => { row.className = v; });
    put(d, "user", user, (v) => {
      if (v === null) delete row.dataset.user;
      else row.dataset.user = v;
    });
    for (let i = 0; i < 5; i++) {
      put(d, "t" + i, texts[i], (v) => { k[i].textContent = v; });
    }
  }

  // "closed · opens 2030-04-01 07:00Z": a queue's business hours, in
  // UTC as csqd's errors say them; "" for a queue without hours.
  function fmtHours(h) {
    if (h === null) return "";
    const state = h.open ? "open" : "closed";
    if (!h.next) return state;
    const at = new Date(h.next).toISOString().slice(0, 16)
      .replace("T", " ") + "Z";
    return state + (h.open ? " · closes " : " · opens ") + at;
  }

  // The queue's facts and the rows of its line that are in view.
  function drawQueue(q) {
    if (q.card === null) { M.queueOrder = true; return; }
    const c = q.card;
    const d = c.drawn;
    const shown = queueShown(q);
    put(d, "hidden", !shown, (v) => { c.root.hidden = v; });
    if (!shown) return;
    const t = now();
    put(d, "waiting", String(q.waiting), (v) => {
      c.waiting.textContent = v;
      c.root.dataset.waiting = v;
    });
    put(d, "oldest", !q.oldestKnown ? "…" : q.oldest === null ? "–" :
      fmtWait(t - q.oldest.arrival), (v) => { c.oldest.textContent = v; });
    put(d, "eta", q.eta < 0 ? "–" : fmtWait(q.eta),
      (v) => { c.eta.textContent = v; });
    put(d, "sl", q.sl < 0 ? "–" : q.sl + "%",
      (v) => { c.sl.textContent = v; });
    let served = false;
    for (const s of M.servicers.values()) {
      if (s.queues.indexOf(q.name) >= 0) { served = true; break; }
    }
    put(d, "nobody", !served, (v) => {
      c.nobody.hidden = !v;
      c.root.dataset.nobody = v ? "1" : "0";
    });
    put(d, "groups", (q.needsWaiting || []).map((g) =>
      g.waiting + " need " + g.needs).join(" · "),
    (v) => { c.groups.textContent = v; });
    put(d, "abandon", q.abandonPct < 0 ? "–" : q.abandonPct + "%",
      (v) => { c.abandon.textContent = v; });
    put(d, "hours", fmtHours(q.hours), (v) => {
      c.hours.textContent = v;
      c.hours.hidden = v === "";
      if (q.hours === null) delete c.root.dataset.open;
      else c.root.dataset.open = String(q.hours.open);
    });
    const total = q.line.length + (q.complete ? 0 : 1);
    const inLine = q.waiting - q.preferring;
    put(d, "spacer", Math.max(1, total) * ROW_H,
      (v) => { c.spacer.style.height = v + "px"; });
    // The view is as tall as its rows, up to ten (admin.css).
    put(d, "view", Math.min(10, Math.max(1, total)) * ROW_H,
      (v) => { c.view.style.height = v + "px"; });
    put(d, "scroll", total > 10 ? "auto" : "hidden",
      (v) => { c.view.style.overflowY = v; });
    const first = Math.floor(c.scrollTop / ROW_H);
    const count = Math.ceil(d.view / ROW_H) + 1;
    let used = 0;
    for (let i = first; i < Math.min(total, first + count); i++) {
      const row = c.rows[used] || makeRow(c);
      if (i < q.line.length) {
        const e = q.line[i];
        putRow(row, i * ROW_H, false, e.user, [String(i + 1), e.user,
          "t" + e.tier, e.arrival === null ? "–" : fmtWait(t - e.arrival),
          e.needs]);
      } else {
        putRow(row, i * ROW_H, true, null,
          ["", "loading " + (inLine - q.line.length) + " more…", "", "",
            ""]);
      }
      used++;
    }
    if (total === 0) {
      // Nobody in line: one row that says so.
      putRow(c.rows[0] || makeRow(c), 0, true, null,
        ["", "nobody waits", "", "", ""]);
      used = 1;
    }
    for (let i = used; i < c.rows.length; i++) {
      const row = c.rows[i];
      put(row.drawn, "hidden", true, (v) => { row.hidden = v; });
    }
  }

  function orderServicers() {
    M.servicerOrder = false;
    const body = $("servicers").tBodies[0];
    const ids = Array.from(M.servicers.keys()).sort();
    for (const id of ids) {
      const s = M.servicers.get(id);
      if (s.row === null) {
        s.row = el("tr");
        s.row.dataset.servicer = id;
        s.row.append(el("td", null, id), el("td"), el("td"), el("td"),
          el("td", "skills"), el("td", "handled"));
      }
      body.appendChild(s.row);
      M.dirtyServicers.add(s);
    }
  }

  // Why a servicer takes no new user (issue 38): paused by hand or after
  // missed offers, or resting after a DECLINE until offer_retry ends.
  function statusWhy(s, t) {
    if (s.status === "paused") {
      return s.pausedBy === "missed_offers" ? "paused after missed offers"
        : "paused by hand";
    }
    if (s.restingUntil !== null && s.restingUntil > t) {
      return "resting after a decline: offers again in " +
        fmtWait(s.restingUntil - t);
    }
    return "";
  }

  function drawServicer(s) {
    if (s.row === null) { M.servicerOrder = true; return; }
    const td = s.row.children;
    const t = now();
    td[1].textContent = s.status;
    td[1].className = "status-" + s.status;
    td[2].textContent = s.queues.join(", ");
    td[4].textContent = s.skills.split(",").join(", ");
    td[3].textContent = "";
    // Conversations it ended since its login, and their mean time.
    td[5].textContent = s.handled === 0 ? "0" : s.handled + " · mean " +
      fmtWait(Math.round(s.handleMs / s.handled));
    const why = statusWhy(s, t);
    if (why !== "") td[3].appendChild(el("span", "why", why));
    for (const idx of Array.from(s.rooms.keys()).sort((a, b) => a - b)) {
      const r = s.rooms.get(idx);
      let text = r.room + " " + r.state;
      if (r.user !== "") text = r.room + " " + r.user;
      if (r.since !== null) text += " " + fmtWait(t - r.since);
      if (r.needs !== "") text += " needs " + r.needs;
      const chip = el("span", "room room-" + r.state, text);
      chip.dataset.room = r.room;
      chip.dataset.state = r.state;
      chip.dataset.user = r.user;
      chip.dataset.needs = r.needs;
      td[3].appendChild(chip);
    }
  }

  function drawStats() {
    let waiting = 0;
    for (const q of M.queues.values()) waiting += q.waiting;
    let busy = 0, free = 0;
    for (const s of M.servicers.values()) {
      for (const r of s.rooms.values()) {
        if (r.state === "free") { if (s.status === "ready") free++; }
        else busy++;
      }
    }
    $("stat-waiting").textContent = waiting;
    $("stat-servicers").textContent = M.servicers.size;
    $("stat-rooms").textContent = busy + " / " + free;
    $("stat-matched").textContent = M.stats.matched_total;
    $("stat-id").textContent = M.lastId;
    $("stat-rate").textContent = rate;
    $("no-servicers").hidden = M.servicers.size > 0;
  }

  function setLink(up, text) {
    const l = $("link");
    l.textContent = text;
    l.className = up ? "link-up" : "link-down";
  }

  // ---- the chart ------------------------------------------------------------

  let plot = null;

  function chartHistory(h) {
    const c = { t: [], waiting: [], matched: [] };
    for (const p of h) {
      c.t.push(p[0] / 1000);
      c.waiting.push(p[1]);
      c.matched.push(p[2]);
    }
    M.chart = c;
    drawChart();
  }

  // Every SAMPLE_MS: the waiting users now, and the matches of the last
  // minute, from the model.
  let lastMatched = null, matchedTimes = [];
  function sample() {
    if (M === null) return;
    const t = now();
    if (lastMatched !== null && M.stats.matched_total > lastMatched) {
      matchedTimes.push([t, M.stats.matched_total - lastMatched]);
    }
    lastMatched = M.stats.matched_total;
    while (matchedTimes.length > 0 && matchedTimes[0][0] < t - 60000) {
      matchedTimes.shift();
    }
    let perMinute = 0;
    for (const m of matchedTimes) perMinute += m[1];
    let waiting = 0;
    for (const q of M.queues.values()) waiting += q.waiting;
    const c = M.chart;
    c.t.push(t / 1000);
    c.waiting.push(waiting);
    c.matched.push(perMinute);
    while (c.t.length > 0 && c.t[0] < (t - HOUR_MS) / 1000) {
      c.t.shift();
      c.waiting.shift();
      c.matched.shift();
    }
    drawChart();
  }

  function drawChart() {
    if (typeof uPlot === "undefined") return;
    const c = M.chart;
    const data = [c.t, c.waiting, c.matched];
    if (plot === null) {
      const box = $("chart");
      plot = new uPlot({
        width: Math.max(300, box.clientWidth),
        height: 180,
        // The hour up to now, however few the points yet.
        scales: { x: { time: true, range: () => {
          const t = now() / 1000;
          return [t - HOUR_MS / 1000, t];
        } }, m: { auto: true } },
        series: [
          {},
          { label: "waiting users", stroke: "#2f6fd0", width: 2 },
          { label: "matches per minute", stroke: "#2c9a4a", width: 2,
            scale: "m" },
        ],
        axes: [{}, { label: "waiting" },
          { side: 1, scale: "m", label: "matched / min",
            grid: { show: false } }],
      }, data, box);
      window.addEventListener("resize", () => {
        plot.setSize({ width: Math.max(300, box.clientWidth), height: 180 });
      });
    } else {
      plot.setData(data);
    }
  }

  // ---- clocks -----------------------------------------------------------------

  // Waits and room times grow by themselves: redrawn once a second.
  setInterval(() => {
    if (M === null) return;
    const t = performance.now();
    rate = Math.round(applied * 1000 / (t - rateT));
    applied = 0;
    rateT = t;
    for (const q of M.queues.values()) M.dirtyQueues.add(q);
    for (const s of M.servicers.values()) M.dirtyServicers.add(s);
    M.dirtyStats = true;
    askFrame();
  }, 1000);
  setInterval(sample, SAMPLE_MS);
  // A hidden tab gets no animation frames: the events are applied all the
  // same, so that they do not pile up.
  setInterval(() => {
    if (document.hidden) pump();
  }, HIDDEN_APPLY_MS);

  // For tests and curious admins: the model's lines as arrays of users.
  window.csqAdmin = {
    lastId: () => (M === null ? 0 : M.lastId),
    line: (name) => {
      const q = M === null ? undefined : M.queues.get(name);
      return q === undefined ? [] : q.line.map((e) => e.user);
    },
    waiting: (name) => {
      const q = M === null ? undefined : M.queues.get(name);
      return q === undefined ? 0 : q.waiting;
    },
    // Settled: nothing on its way and nothing applied but not yet drawn
    // (a page stitched into the model is on screen only after the next
    // frame: a test reading the screen waits for that too).
    settled: () => M !== null && inflight === 0 && pages.length === 0 &&
      inbox.length === 0 && !reloading && !frameAsked,
    applied: () => appliedTotal,
    frameTimes: () => frameTimes.slice(),
    reloads: () => reloadsTotal,
  };

  load();
})();
