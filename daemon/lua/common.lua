-- The prelude of csq's script: the key layout, the clock, and the rules of
-- libcsq (lib/csq.c, lib/servicer.c, lib/matcher.c) written again for the
-- state in Redis. The script is this prelude, then one function per
-- operation (OPS.<name>, one file each), then batch.lua, which runs the
-- operations that a daemon sends in one call, in order. A call is atomic,
-- whichever daemon sends it. docs/design.md describes the keys.
--
-- KEYS[1] is "{prefix}:stats"; every other key is derived from the same
-- hash tag, so all of them live in one Cluster slot.
-- ARGV[1..4]: the daemon's servicer_ttl, user_ttl, max_tier and
-- max_queue_length; ARGV[5] and after: the operations (batch.lua).
--
-- The same text is loaded two ways (embed.cmake): as a function library
-- (FUNCTION LOAD, Redis 7), whose top level runs once and whose functions
-- live on between calls, and as a script for EVALSHA, whose top level runs
-- on every call. So the top level only defines: what belongs to one call
-- (the keys, the time, the limits, the counters and events so far) is in
-- the locals below, which call() in batch.lua sets first. (Redis runs a
-- library's top level without Lua's global functions: ipairs, tonumber
-- and the like only in what a call runs.)
local STATS, P, USERS, DEADLINES, SERVICERS, EVENTS
local NOW, NOW_S
local SERVICER_TTL_S, SERVICER_TTL, USER_TTL_S, USER_TTL
local MAX_LENGTH_S, MAX_LENGTH

-- The order key of lib/orderkey.h: (15 - tier) * 2^49 + sequence, exact
-- in a double below 2^53.
local SEQ_UNIT = 562949953421312
local SEQ_MAX = SEQ_UNIT - 1
local TIER_TOP = 15

-- Numbers become text through "%.14g" in Lua's tostring and "..", which
-- would round a packed key, and redis.call converts a number argument with
-- "%.17g", which is slow: a number that goes into text or to Redis on a hot
-- path is made into text with int() (an integer format) first.
-- string.format costs about 3,000 instructions in Redis's Lua, so int()
-- answers the call's time (NOW_S) and the number it made last without it:
-- a call formats its new order and its last event id twice.
local int_n, int_s
local function int(n)
	if n == NOW then return NOW_S end
	if n ~= int_n then int_n, int_s = n, string.format('%d', n) end
	return int_s
end

local function servicer_key(id) return P .. 'servicer:' .. id end
local function rooms_key(id) return P .. 'S2R:' .. id end
local function queue_key(q) return P .. 'queue:' .. q end
local function free_key(q) return P .. 'free:' .. q end

local function tier_of(key) return TIER_TOP - math.floor(key / SEQ_UNIT) end
local function seq_of(key) return key % SEQ_UNIT end
local function pack(tier, seq) return (TIER_TOP - tier) * SEQ_UNIT + seq end

local function elapsed(since)
	if since and NOW > since then return NOW - since end
	return 0
end

-- The counters of STATS are read at the call's first need (counters) and
-- written once, at its end, with one HSET (batch.lua). Most change by
-- deltas; an operation's deltas (op_deltas, made on its first change) count
-- only if it succeeds. seq (the order key's sequence, which is also
-- enqueued_total), order (servicers' order of their last new user) and
-- event_id are taken one at a time. waiting is derived rather than kept
-- (stats.lua): enqueued + requeued - matched - abandoned.
--
-- A counter's text becomes a number at its first use in a call (PARSED):
-- tonumber costs about as much as a Redis command, and most calls use
-- three or four of the ten. seq and order are nil until taken.
local COUNTERS = { 'seq', 'order', 'event_id', 'servicers', 'rooms_busy',
                   'rooms_free', 'matched_total', 'abandoned_total',
                   'requeued_total', 'servicers_lost_total', 'reaping' }
local COUNTER_AT = {} -- counter -> its place in COUNTERS
for i = 1, #COUNTERS do COUNTER_AT[COUNTERS[i]] = i end
local base -- counter -> value, as read
local read -- the HMGET's reply
local seq, order
local deltas, op_deltas
local PARSED = { __index = function(t, f)
	local v = tonumber(read[COUNTER_AT[f]] or '0')
	t[f] = v
	return v
end }

local function counters()
	if base then return base end
	read = redis.call('HMGET', STATS, unpack(COUNTERS))
	base = setmetatable({}, PARSED)
	return base
end

local function stat(field, d)
	if not op_deltas then op_deltas = {} end
	op_deltas[field] = (op_deltas[field] or 0) + d
end

-- A counter as it stands, with what the call has changed so far.
local function counter(field)
	local v = counters()[field] + (deltas[field] or 0)
	if op_deltas then v = v + (op_deltas[field] or 0) end
	return v
end

-- The next sequence, or nil when they are all used.
local function seq_next()
	if not seq then seq = counters().seq end
	if seq >= SEQ_MAX then return nil end
	seq = seq + 1
	return seq
end

-- Gives back the sequence seq_next just gave.
local function seq_unused()
	seq = seq - 1
end

local function order_next()
	if not order then order = counters().order end
	order = order + 1
	return order
end

-- A user who starts waiting looks for a free room only if one exists:
-- rooms_free counts the free rooms of ready servicers, which are exactly
-- the members of the free-room indexes.
local function rooms_free()
	return counter('rooms_free')
end

-- Operations, by name: each takes its arguments (strings, as the daemon
-- sent them) and returns its reply, { status, results... }.
local OPS = {}
local function reply(status, ...)
	return { status, ... }
end

-- Events wait until the end too: then the call takes their ids from one
-- counter for all daemons, so that a daemon can tell when it has seen them
-- all, and publishes them with the time (batch.lua). An event is a fact:
-- its kind and its fields, in the order lib/event_fact.c gives the kind
-- (that of its JSON), which every daemon turns into the JSON of
-- lib/event.c. A field is a string, an integer, or false when absent;
-- never nil, which would cut the array short. A room may be given as its
-- index alone, of the event's servicer.
local events, nevents
local function event(kind, ...)
	nevents = nevents + 1
	events[nevents] = { kind, ... }
end

-- The id of the last event so far, the call's own included: what a read
-- has seen. (The call's header gives the last of the whole call, which
-- may come after a read of the same call.)
local function event_id_now()
	return counters().event_id + nevents
end

-- The earliest deadline the call set (-1 none): the daemon's timer takes
-- the sooner of it and what it knew. exact: an operation wants the true
-- earliest one returned (the reaper, the health check).
local soonest, exact
local function deadline_set(member, at)
	redis.call('ZADD', DEADLINES, int(at), member)
	if soonest < 0 or at < soonest then soonest = at end
end
local function deadline_clear(member)
	redis.call('ZREM', DEADLINES, member)
end

local function earliest()
	local r = redis.call('ZRANGE', DEADLINES, 0, 0, 'WITHSCORES')
	if r[2] then return tonumber(r[2]) end
	return -1
end

-- Servicers: a hash of their fields; S2R their busy rooms (index -> user).

-- A servicer's fields in the hash, in order. A loaded servicer keeps them
-- as they were (was), and servicer_save writes only those that changed:
-- a RELEASE and its match change last_order and last_ms, and a steady
-- heartbeat at most its queues.
local SERVICER_FIELDS = { 'status', 'capacity', 'ttl', 'active', 'queues',
                          'last_order', 'last_ms' }

local function servicer_load(id)
	local h = redis.call('HMGET', servicer_key(id), unpack(SERVICER_FIELDS))
	if not h[1] then return nil end
	local qs = {}
	for q in string.gmatch(h[5], '[^,]+') do qs[#qs + 1] = q end
	-- was, vacated and deferred are set later: named here, the table is
	-- sized once.
	local s = { id = id, status = h[1], capacity = tonumber(h[2]),
	            ttl = tonumber(h[3]), active = tonumber(h[4]), queues = qs,
	            last_order = tonumber(h[6]), last_ms = tonumber(h[7]),
	            was = false, vacated = false, deferred = false }
	-- In SERVICER_FIELDS' order; a constructor, which sizes the table once,
	-- rather than a loop over them (5,000 instructions more a RELEASE).
	s.was = { s.status, s.capacity, s.ttl, s.active, qs, s.last_order,
	          s.last_ms }
	return s
end

-- (A new servicer has no was: all of its fields are written. Its queues
-- are a new table whenever they are set, so that comparing them is
-- comparing tables.)
local function servicer_save(s)
	local was, set, n = s.was or {}, {}, 0
	for i, f in ipairs(SERVICER_FIELDS) do
		local v = s[f]
		if v ~= was[i] then
			if i == 5 then
				v = table.concat(v, ',')
			elseif i > 1 then
				v = int(v)
			end
			set[n + 1], set[n + 2] = f, v
			n = n + 2
		end
	end
	if n > 0 then redis.call('HSET', servicer_key(s.id), unpack(set, 1, n)) end
end

local function free_count(s)
	if s.active < s.capacity then return s.capacity - s.active end
	return 0
end

local function has_free(s)
	return s.status == 'ready' and free_count(s) > 0
end

-- Every change to a servicer's readiness, capacity, queues or rooms sits
-- between unaccount and account, which keep rooms_busy, rooms_free and the
-- free-room index of each queue true (lib/servicer.c).
local function unaccount(s)
	stat('rooms_busy', -s.active)
	if s.status == 'ready' then stat('rooms_free', -free_count(s)) end
	if has_free(s) then
		for _, q in ipairs(s.queues) do
			redis.call('ZREM', free_key(q), s.id)
		end
	end
end

local function account(s)
	stat('rooms_busy', s.active)
	if s.status == 'ready' then stat('rooms_free', free_count(s)) end
	-- A servicer whose fill waits for a split reap's last call (fill)
	-- stays out of the index until then: no user takes its rooms first.
	if has_free(s) and not s.deferred then
		local order = int(s.last_order)
		for _, q in ipairs(s.queues) do
			redis.call('ZADD', free_key(q), order, s.id)
		end
	end
end

-- The lowest free room below the capacity; only when has_free. One
-- HKEYS of the busy rooms, not a HEXISTS for each room in turn. A room
-- that room_release vacated is free though still in the hash.
local function free_room(s)
	if s.active == 0 then return 0 end
	local busy = {}
	for _, i in ipairs(redis.call('HKEYS', rooms_key(s.id))) do
		busy[tonumber(i)] = true
	end
	if s.vacated then busy[s.vacated] = nil end
	for i = 0, s.capacity - 1 do
		if not busy[i] then return i end
	end
	error('csq: servicer ' .. s.id .. ' has no free room')
end

local function room_exists(s, idx)
	return idx < s.capacity or
	       redis.call('HEXISTS', rooms_key(s.id), int(idx)) == 1
end

-- Users: one hash, USERS, of records by id, each a line of text:
-- "<queue> <key> <arrival> <ttl> waiting" or, with U2R at its end,
-- "<queue> <key> <arrival> <ttl> assigned <servicer> <room> <assigned>"
-- (times in ms, ttl in s). One hash rather than a key per user: a new
-- user is one HSETNX, which also says whether the id was new.

-- key, arrival, ttl: those fields as text, where the caller has them
-- already (ENQUEUE of a new user: its arguments and the call's time), so
-- that no number is formatted again.
local function user_record(u, key, arrival, ttl)
	if u.state == 'waiting' then
		return u.queue .. ' ' .. (key or int(u.key)) .. ' ' ..
		       (arrival or int(u.arrival)) .. ' ' .. (ttl or int(u.ttl)) ..
		       ' waiting'
	end
	return string.format('%s %s %d %d assigned %s %d %d', u.queue,
	                     key or int(u.key), u.arrival, u.ttl, u.servicer,
	                     u.room, u.assigned)
end

local function user_save(u, key)
	redis.call('HSET', USERS, u.id, user_record(u, key))
end

local function user_load(id)
	local rec = redis.call('HGET', USERS, id)
	if not rec then return nil end
	local q, key, arrival, ttl, state, sid, room, at = string.match(rec,
	    '^(%S+) (%d+) (%d+) (%d+) (%a+) ?(%S*) ?(%d*) ?(%d*)$')
	if not (state == 'waiting' and sid == '') and
	   not (state == 'assigned' and at ~= '') then
		error('csq: the record of user ' .. id .. ' is not csq\'s')
	end
	local u = { id = id, queue = q, key = tonumber(key),
	            arrival = tonumber(arrival), ttl = tonumber(ttl),
	            state = state }
	if state == 'assigned' then
		u.servicer = sid
		u.room = tonumber(room)
		u.assigned = tonumber(at)
	end
	return u
end

local function position(u)
	return redis.call('ZRANK', queue_key(u.queue), u.id) + 1
end

local function user_deadline(u)
	if u.ttl > 0 then
		deadline_set('u:' .. u.id, NOW + u.ttl * 1000)
	else
		deadline_clear('u:' .. u.id)
	end
end

-- A user has a deadline while it waits with a TTL, and only then: timed
-- says whether user id does.
local function user_free(id, timed)
	if timed then deadline_clear('u:' .. id) end
	redis.call('HDEL', USERS, id)
end

-- The matcher (lib/matcher.c). An operation that changes a servicer takes
-- it out of the accounts (unaccount), changes it, fills its free rooms
-- (fill), puts it back (account) and saves it, once.

-- Puts waiting user u into room of s, which is out of the accounts. moved:
-- the queue u moved from in this operation, when it did (its
-- line is told too), else nil or false.
local function assign(u, s, room, moved)
	if u.state == 'waiting' then
		redis.call('ZREM', queue_key(u.queue), u.id)
		if u.ttl > 0 then deadline_clear('u:' .. u.id) end
	end
	u.state = 'assigned'
	u.servicer = s.id
	u.room = room
	u.assigned = NOW
	user_save(u)
	redis.call('HSET', rooms_key(s.id), int(room), u.id)
	if room == s.vacated then s.vacated = nil end
	s.active = s.active + 1
	s.last_order = order_next()
	s.last_ms = NOW
	stat('matched_total', 1)
	event('matched', u.id, u.queue, tier_of(u.key), s.id, room,
	      elapsed(u.arrival), moved or false)
end

local function serves(s, q)
	for _, sq in ipairs(s.queues) do
		if sq == q then return true end
	end
	return false
end

-- rooms_free counted again from the servicers' hashes, after keys were
-- found changed behind csq's back: what a lost hash held is not known
-- otherwise, and STATS and /metrics would be off for good. Only while no
-- servicer is out of the accounts (unaccount), and rare: a HMGET for
-- each servicer.
local function rooms_free_recount()
	local total = 0
	for _, id in ipairs(redis.call('ZRANGE', SERVICERS, 0, -1)) do
		local h = redis.call('HMGET', servicer_key(id), 'status', 'capacity',
		                     'active')
		if h[1] == 'ready' then
			local f = (tonumber(h[2]) or 0) - (tonumber(h[3]) or 0)
			if f > 0 then total = total + f end
		end
	end
	stat('rooms_free', total - counter('rooms_free'))
end

-- While a reap of more deadlines than one call takes is under way
-- (expire.lua; STATS' reaping is 1 from its first call to its last), the
-- users it put back in line wait in {p}:rematch for its last call, which
-- matches them best first. A user who would take a free room meanwhile,
-- and a servicer whose free rooms would be filled, wait too, in
-- {p}:rematch:late ("u:<id>", "s:<id>"), in the order they came: the last
-- call matches them after the others, each in turn, as the memory engine,
-- whose reap is one pass, would have had they come just after it. Taking
-- a room at once, such a user would take one that a requeued user,
-- better placed, had in that pass, or the free room of a servicer whose
-- deadline has passed and whose call has not come, to be requeued from
-- it a moment later; and such a servicer would take users from a line
-- that the requeued are not all back in. Only while a passed deadline is
-- left: a reap that no call will finish (its deadlines deleted by hand)
-- holds nobody back. (reaping is read with the counters, which a call
-- that changes anything reads anyway.)
local function deadline_passed()
	return redis.call('ZRANGEBYSCORE', DEADLINES, '-inf', NOW_S,
	                  'LIMIT', 0, 1)[1] ~= nil
end

-- Puts entry ("u:<id>", "s:<id>") in {p}:rematch:late if a split reap is
-- under way, and says whether it did.
local function reap_defer(entry)
	if counter('reaping') ~= 1 or not deadline_passed() then
		return false
	end
	redis.call('RPUSH', P .. 'rematch:late', entry)
	return true
end

-- A user started waiting: the ready servicer with a free room serving its
-- queue that has gone longest without a new user takes it. An entry of
-- the free-room index that is not true (its servicer's key deleted or
-- changed behind csq's back) is dropped rather than trusted, and the free
-- rooms are counted again.
local function match_user(u, moved)
	if rooms_free() <= 0 or reap_defer('u:' .. u.id) then return false end
	local fkey = free_key(u.queue)
	while true do
		local top = redis.call('ZRANGE', fkey, 0, 0)
		if not top[1] then return false end
		local s = servicer_load(top[1])
		if s and has_free(s) and serves(s, u.queue) then
			unaccount(s)
			assign(u, s, free_room(s), moved)
			account(s)
			servicer_save(s)
			return true
		end
		redis.call('ZREM', fkey, top[1])
		rooms_free_recount()
		if rooms_free() <= 0 then return false end
	end
end

-- The best waiting user across the queues s serves, and its queue.
local function best_user(s)
	local best, best_key, best_q
	for _, q in ipairs(s.queues) do
		local r = redis.call('ZRANGE', queue_key(q), 0, 0, 'WITHSCORES')
		if r[1] then
			local k = tonumber(r[2])
			if not best or k < best_key then
				best, best_key, best_q = r[1], k, q
			end
		end
	end
	return best, best_q
end

-- The best waiting users into s's free rooms; s is out of the accounts.
-- An id in a line whose record is gone or says it waits elsewhere (keys
-- changed behind csq's back) leaves the line: trusted, it would fail
-- every operation that fills a room of that queue, for good.
local function fill(s)
	if has_free(s) and reap_defer('s:' .. s.id) then
		s.deferred = true
		return
	end
	while has_free(s) do
		local id, q = best_user(s)
		if not id then break end
		local u = user_load(id)
		if u and u.state == 'waiting' and u.queue == q then
			assign(u, s, free_room(s))
		else
			redis.call('ZREM', queue_key(q), id)
			-- Without a record it is gone: STATS' waiting follows.
			if not u then stat('abandoned_total', 1) end
		end
	end
end

-- The conversation in room idx of s ends; the user leaves the system.
-- The room leaves the hash only if fill does not put the next user in it
-- (an HSET over it), which is the usual case. The user's record is read
-- before anything is written: a record that is not csq's fails the
-- operation with nothing changed.
local function room_release(s, idx, uid, by)
	-- Of the user who leaves, only the queue, the state and the TTL count:
	-- a shorter pattern than user_load's, and no number parsed.
	local rec = redis.call('HGET', USERS, uid)
	local q, ttl, state
	if rec then
		q, ttl, state = string.match(rec, '^(%S+) %d+ %d+ (%d+) (%a+)')
		if not state then
			error('csq: the record of user ' .. uid .. ' is not csq\'s')
		end
	end
	unaccount(s)
	s.vacated = idx
	s.active = s.active - 1
	-- A record gone (deleted behind csq's back): the room is freed all
	-- the same, without an event, which would have no queue to name.
	if rec then
		event('released', uid, q, s.id, idx, by)
		user_free(uid, state == 'waiting' and ttl ~= '0')
	end
	fill(s)
	if s.vacated then
		redis.call('HDEL', rooms_key(s.id), int(idx))
		s.vacated = nil
	end
	account(s)
	servicer_save(s)
end

-- A waiting user gives up (LEAVE) or times out.
local function user_abandon(u, reason)
	redis.call('ZREM', queue_key(u.queue), u.id)
	stat('abandoned_total', 1)
	event('left', u.id, u.queue, reason)
	user_free(u.id, u.state == 'waiting' and u.ttl > 0)
end

-- The users in the rooms of servicer id go back in line at their old
-- place (same key; the length limit does not apply; their TTL restarts),
-- and its rooms go. A room whose user's record does not say it is there
-- (a key changed behind csq's back) is dropped. Returns the users and
-- how many rooms there were.
local function rooms_requeue(id, reason)
	local flat = redis.call('HGETALL', rooms_key(id))
	local rooms = {}
	for i = 1, #flat, 2 do
		rooms[#rooms + 1] = { idx = tonumber(flat[i]), user = flat[i + 1] }
	end
	table.sort(rooms, function(a, b) return a.idx < b.idx end)
	local back = {}
	for _, r in ipairs(rooms) do
		local u = user_load(r.user)
		if u and u.state == 'assigned' and u.servicer == id and
		   u.room == r.idx then
			u.state = 'waiting'
			user_save(u)
			redis.call('ZADD', queue_key(u.queue), int(u.key), u.id)
			stat('requeued_total', 1)
			if u.ttl > 0 then
				deadline_set('u:' .. u.id, NOW + u.ttl * 1000)
			end
			event('requeued', u.id, u.queue, tier_of(u.key), position(u),
			      id, r.idx, reason)
			back[#back + 1] = u
		end
	end
	if #rooms > 0 then redis.call('DEL', rooms_key(id)) end
	return back, #rooms
end

-- Requeued users are matched best first where a room is free (as
-- lib/servicer.c's csq_rematch): each as its record stands now, since
-- what ran since its requeue (a login's fill, a LEAVE) may have matched
-- or removed it already.
local function rematch(back)
	table.sort(back, function(a, b) return a.key < b.key end)
	for _, b in ipairs(back) do
		local u = user_load(b.id)
		if u and u.state == 'waiting' then match_user(u) end
	end
end

-- Removes s: its users go back in line (rooms_requeue), then
-- servicer_down. Returns them, for the caller to rematch.
local function servicer_drop(s, reason)
	unaccount(s)
	local back = rooms_requeue(s.id, reason)
	redis.call('DEL', servicer_key(s.id))
	deadline_clear('s:' .. s.id)
	redis.call('ZREM', SERVICERS, s.id)
	stat('servicers', -1)
	if reason == 'lost' then stat('servicers_lost_total', 1) end
	event('servicer_down', s.id, reason)
	return back
end

-- servicer_drop, then its users are matched.
local function servicer_remove(s, reason)
	local back = servicer_drop(s, reason)
	rematch(back)
	return #back
end

-- What is left of servicer id when its hash is gone (deleted or evicted
-- behind csq's back) but its rooms or its place among the servicers are
-- not: without this, its next HEARTBEAT would log it in afresh and put a
-- waiting user into a room that another still holds, and its users would
-- stay in rooms nobody serves. Its users go back in line and it is
-- declared lost; the caller rematches them (returned). How many free
-- rooms it had is lost with its hash: they are counted again.
local function ghost_remove(id)
	local listed = redis.call('ZSCORE', SERVICERS, id)
	if not listed and redis.call('EXISTS', rooms_key(id)) == 0 then
		return nil
	end
	local back, nrooms = rooms_requeue(id, 'lost')
	stat('rooms_busy', -nrooms)
	if listed then
		redis.call('ZREM', SERVICERS, id)
		stat('servicers', -1)
		stat('servicers_lost_total', 1)
	end
	deadline_clear('s:' .. id)
	rooms_free_recount()
	event('servicer_down', id, 'lost')
	return back
end

-- The reply fields of a user (ENQUEUE, WHERE): state, queue, position,
-- tier, waited_ms, servicer, room, since_ms. pos: the position if known.
local function user_info(u, pos)
	if u.state == 'waiting' then
		return 'waiting', u.queue, pos or position(u), tier_of(u.key),
		       elapsed(u.arrival), '', '', 0
	end
	return 'assigned', u.queue, 0, tier_of(u.key), elapsed(u.arrival),
	       u.servicer, u.servicer .. '/' .. u.room, elapsed(u.assigned)
end
