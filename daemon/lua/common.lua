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
-- max_queue_length; ARGV[5..9] its routing limits: offer_timeout,
-- offer_max_missed, offer_retry, wrapup and strategy (0 longest_idle,
-- 1 least_busy); ARGV[10] the time in ms, empty for Redis's own (TIME):
-- only a test build's daemon sends one (daemon/debug_clock.h); ARGV[11]
-- and after: the operations (batch.lua).
--
-- The rules of routing (protocol-v2 sections 1 to 3) are those of
-- lib/room.c, lib/offer.c, lib/transfer.c and lib/deadline.c, function
-- for function where the state allows: an operation collects the users
-- it put back in line and the servicers it gave a free room, and matches
-- them at its end (settle, as lib/matcher.c's csq_settle).
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
-- The routing limits (ARGV[5..9]) by name, parsed, and their text, parsed
-- again only when it changes: offer (a new servicer's OFFER), missed
-- (offer_max_missed), retry (offer_retry), wrapup (a new servicer's
-- WRAPUP), strategy ('0' longest_idle, '1' least_busy: kept as text).
local LIMIT, LIMIT_S = {}, {}
local LIMIT_NAMES = { 'offer', 'missed', 'retry', 'wrapup', 'strategy' }

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
-- The users of queue q held for servicer sid (§5, below).
local function prefer_key(sid, q) return P .. 'prefer:' .. sid .. '/' .. q end

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
-- event_id are taken one at a time. waiting is kept since offers (an
-- offered user is out of line but not matched); a state written before
-- has none, and its waiting is what it was derived from then: enqueued +
-- requeued - matched - abandoned (written at the first call that reads it).
--
-- A counter's text becomes a number at its first use in a call (PARSED):
-- tonumber costs about as much as a Redis command, and most calls use
-- three or four of the ten. seq and order are nil until taken.
local COUNTERS = { 'seq', 'order', 'event_id', 'servicers', 'rooms_busy',
                   'rooms_free', 'matched_total', 'abandoned_total',
                   'requeued_total', 'servicers_lost_total', 'reaping',
                   'offers_total', 'offers_declined_total',
                   'offers_missed_total', 'transferred_total', 'waiting',
                   'strategy', 'preferring' }
local COUNTER_AT = {} -- counter -> its place in COUNTERS
for i = 1, #COUNTERS do COUNTER_AT[COUNTERS[i]] = i end
local base -- counter -> value, as read
local read -- the HMGET's reply
local seq, order
local deltas, op_deltas
local PARSED = { __index = function(t, f)
	local v = read[COUNTER_AT[f]]
	if not v and f == 'waiting' then
		v = t.seq + t.requeued_total - t.matched_total - t.abandoned_total
	else
		v = tonumber(v or '0')
	end
	t[f] = v
	return v
end }

local rekey
-- Queue policies (protocol-v2 §4): defined in their block at the end.
-- POLICY_DIGEST: the digest of those in force, false for none, as the
-- call's counters() read it (nil before): a hook that finds false has
-- nothing to do, and costs nothing more.
local policy_of, queue_strategy, clock_start, clock_leave
local queue_has_policy, queue_service_level, policy_tag_read, policy_tag
local POLICY_DIGEST

local function counters()
	if base then return base end
	read = redis.call('HMGET', STATS, unpack(COUNTERS))
	base = setmetatable({}, PARSED)
	-- The free-room indexes are scored by the strategy they were made
	-- under: after a change (a reload), every servicer's score again,
	-- once, before anything is matched (each match reads the counters).
	-- With queue policies, which score some queues their way, the field
	-- holds their digest too (policy_tag_read).
	POLICY_DIGEST = false
	local st = read[COUNTER_AT.strategy] or '0'
	if st ~= LIMIT.strategy_s and policy_tag_read(st) ~= LIMIT.strategy_s then
		rekey()
	end
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
                          'last_order', 'last_ms', 'offer', 'wrapup',
                          'missed', 'retry' }

-- What servicer_load reads: SERVICER_FIELDS, then prefers (§5, below),
-- which servicer_save never writes. Made at the first load of a call.
local SERVICER_READ

local function servicer_load(id)
	if not SERVICER_READ then
		SERVICER_READ = { unpack(SERVICER_FIELDS) }
		SERVICER_READ[#SERVICER_READ + 1] = 'prefers'
	end
	local h = redis.call('HMGET', servicer_key(id), unpack(SERVICER_READ))
	if not h[1] then return nil end
	local qs = {}
	for q in string.gmatch(h[5], '[^,]+') do qs[#qs + 1] = q end
	-- was, vacated and deferred are set later: named here, the table is
	-- sized once.
	-- offer, wrapup, missed, retry: none in a hash written before
	-- routing, 0 then. retry is 1 while an offer-retry window runs.
	local s = { id = id, status = h[1], capacity = tonumber(h[2]),
	            ttl = tonumber(h[3]), active = tonumber(h[4]), queues = qs,
	            last_order = tonumber(h[6]), last_ms = tonumber(h[7]),
	            offer = tonumber(h[8] or '0'),
	            wrapup = tonumber(h[9] or '0'),
	            missed = tonumber(h[10] or '0'),
	            retry = tonumber(h[11] or '0'),
	            prefers = tonumber(h[#SERVICER_FIELDS + 1] or '0'),
	            was = false, vacated = false, deferred = false }
	-- In SERVICER_FIELDS' order; a constructor, which sizes the table once,
	-- rather than a loop over them (5,000 instructions more a RELEASE).
	s.was = { s.status, s.capacity, s.ttl, s.active, qs, s.last_order,
	          s.last_ms, s.offer, s.wrapup, s.missed, s.retry }
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
			was[i] = v
			if i == 5 then
				v = table.concat(v, ',')
			elseif i > 1 then
				v = int(v)
			end
			set[n + 1], set[n + 2] = f, v
			n = n + 2
		end
	end
	s.was = was
	if n > 0 then redis.call('HSET', servicer_key(s.id), unpack(set, 1, n)) end
end

local function free_count(s)
	if s.active < s.capacity then return s.capacity - s.active end
	return 0
end

-- Ready, a free room, no offer-retry window (lib/servicer.c).
local function has_free(s)
	return s.status == 'ready' and free_count(s) > 0 and s.retry == 0
end

-- Queue numbers and estimates (protocol-v2 §6)
--
-- lib/qstats.c and lib/estimate.c for the state in Redis: a hash per queue,
-- {p}:qstat:<q>, holds what struct csq_queue holds of it (its counts and
-- its struct csq_estimate), and what says whether the queue exists. Its
-- field n holds the 14 numbers below, users to within_s, packed in that
-- order as little-endian doubles (struct.pack '<d' each, QS.pack): one
-- struct.unpack reads them all and one struct.pack writes them, where a
-- field each cost a tonumber (strtod) to read and a string.format and a
-- field of HSET to write (docs/benchmarks.md); field tiers is text:
--   users       the users whose record names it, in any state
--   servicers   the logged-in servicers serving it
--   ready       the capacity of the ready ones (rooms_ready), which
--               account changes only when a servicer's readiness,
--               capacity or queues change, not at each RELEASE
--   matched, leave, timeout, overflowed_total, wait_sum   (QSTATS)
--   hold, holds          room time per user, a moving mean (estimate.c)
--   area, abandons       moving sums of waits and abandons (in 1/1024ths)
--   within, within_s     the ring's outcomes within within_s seconds
--   tiers                the arrivals of each tier that had any (0..15):
--                        "<tier>:<count>:<mean gap>:<last>", space between
-- and a second hash, {p}:qring:<q>, holds the ring:
--   r0 .. r999           the ring of the last 1000 outcomes: a matched
--                        user's wait in ms, or "a" (abandoned); its next
--                        slot is matched + leave + timeout mod 1000
-- The hashes go when their queue stops existing (no user, no servicer, no
-- policy; never the default queue), exactly when libcsq frees the queue
-- and its numbers, and {p}:qstats lists the queues that have one. A call
-- reads a queue's hash once (HMGET of n and tiers, its first need) and
-- writes what its operations changed once, at its end (qnum_flush,
-- batch.lua): one HSET
-- per queue changed, however many operations a batch holds. An operation
-- that fails has its changes undone (qnum_undo); one that succeeds is done
-- with them (qnum_commit), and a queue it left without users, servicers or
-- policy is gone from then on: its hash is deleted at the flush, and the
-- call sees zeros if it comes back. Every value is an integer below 2^53,
-- exact in a double.
-- The block's state and helpers, in one table (QS): the script's top
-- level may have 200 locals in all. fields: the hash's fields, HMGET's
-- order; at: a number field's place in it; all: the queues read in this
-- call (queue -> numbers); dirty: those it changed, in order; op: those
-- the current operation changed; gone: those gone; ring: the ring's field
-- names, made once; ahead: ring slots to read at once (QS.ring_old);
-- none: an undo's "had no value"; seq: the current operation's stamp;
-- small: small numbers as text. batch.lua empties all, dirty, op and gone
-- at a call's start.
local QS = { fields = { 'users', 'servicers', 'ready', 'matched', 'leave',
                        'timeout', 'overflowed_total', 'wait_sum', 'hold',
                        'holds', 'area', 'abandons', 'within', 'within_s',
                        'tiers' },
             pack = '<dddddddddddddd',
             at = {}, all = {}, dirty = {}, op = {}, gone = {}, ring = {},
             ahead = 1, none = {}, seq = 0, small = {}, num = false }
for i = 1, #QS.fields - 1 do QS.at[QS.fields[i]] = i end
QS.num = { __index = function(e, f)
	local i = QS.at[f]
	if not i then return nil end
	local v = e.raw_[i] or 0
	e[f] = v
	return v
end }

-- Whether q has a policy, and its service level: the queue policies'
-- block (queue_has_policy, queue_service_level, at the end).

function QS.qstat_key(q) return P .. 'qstat:' .. q end
-- The ring's own hash: kept out of the numbers' hash, which then stays a
-- small listpack whose 15 fields are found at once instead of among up to
-- 1000 ring slots (each HMGET and HSET walked them; docs/benchmarks.md).
function QS.qring_key(q) return P .. 'qring:' .. q end

-- q's numbers, read at the call's first need of them (none for a queue
-- gone in this call: it starts again from zeros).
local function qn(q)
	local e = QS.all[q]
	if e then return e end
	-- raw_: the numbers in QS.fields' order, then the tiers' text.
	local raw, had = {}, false
	if not QS.gone[q] then
		local got = redis.call('HMGET', QS.qstat_key(q), 'n', 'tiers')
		if got[1] then raw = { struct.unpack(QS.pack, got[1]) } end
		raw[#QS.fields] = got[2] or nil
		had = got[1] ~= false or got[2] ~= false
	end
	-- undo_: the fields the current operation changed, with what they
	-- were ({ value, whether it was to write }); tiers_: the tiers parsed.
	e = setmetatable({ q_ = q, raw_ = raw, had_ = had, set_ = false,
	                   undo_ = false, tiers_ = false, ahead_ = false },
	                 QS.num)
	QS.all[q] = e
	return e
end

-- e is to be written (field f), and is the current operation's.
-- Field f of e becomes v (a number, or the text of a ring slot's field;
-- the tiers, a table), undone if the operation fails: undo_ has what a
-- field was before the operation (QS.none: nothing), and set_ says which
-- fields are to write, with the operation's stamp (QS.seq) for those that
-- only this operation made so.
local function qn_put(e, f, v)
	local undo = e.undo_
	if not undo then
		undo = {}
		e.undo_ = undo
		QS.op[#QS.op + 1] = e
	end
	if undo[f] == nil then
		local old = e[f]
		if f == 'tiers' then old = e.tiers_ end
		if old == nil then old = QS.none end
		undo[f] = old
		local set = e.set_
		if not set then
			set = {}
			e.set_ = set
			QS.dirty[#QS.dirty + 1] = e
		end
		if not set[f] then set[f] = QS.seq end
	end
	if f == 'tiers' then e.tiers_ = v else e[f] = v end
end

-- e is to be written (field f, as it is) and checked at the operation's
-- end (qnum_commit): a policy given or taken (policy.lua).
local function qn_mark(e, f)
	qn_put(e, f, e[f])
end

-- Adds d to field f of q's numbers: the policies' overflowed_total goes
-- through here too.
local function qnum_incr(q, f, d)
	local e = qn(q)
	qn_put(e, f, e[f] + d)
end

-- The current operation failed (batch.lua): its changes are undone.
local function qnum_undo()
	for i = 1, #QS.op do
		local e = QS.op[i]
		for f, old in pairs(e.undo_) do
			if old == QS.none then old = nil end
			if f == 'tiers' then e.tiers_ = old else e[f] = old end
			if e.set_[f] == QS.seq then e.set_[f] = nil end
		end
		e.undo_ = false
	end
	QS.op = {}
	QS.seq = QS.seq + 1
end

-- The current operation succeeded: a queue it left without users,
-- servicers or policy (never the default queue) is gone, as libcsq frees
-- it.
local function qnum_commit()
	for i = 1, #QS.op do
		local e = QS.op[i]
		local q = e.q_
		e.undo_ = false
		if QS.all[q] == e and e.users <= 0 and e.servicers <= 0 and
		   q ~= 'default' and not queue_has_policy(q) then
			QS.all[q] = nil
			if e.had_ then QS.gone[q] = true end
		end
	end
	QS.op = {}
	QS.seq = QS.seq + 1
end

-- The tiers field's text of what the call knows (qnum_flush). Tiers and
-- counts (up to 128) as text are kept once made: a number made into text
-- costs a sprintf.
function QS.qn_small(n)
	local t = QS.small[n]
	if not t then
		t = int(n)
		QS.small[n] = t
	end
	return t
end
function QS.qn_tiers_text(tiers)
	local text
	for k = 0, TIER_TOP do
		local v = tiers[k]
		if v then
			local part = QS.qn_small(k) .. ':' .. QS.qn_small(v[1]) .. ':' ..
			             int(v[2]) .. ':' .. int(v[3])
			if text then text = text .. ' ' .. part else text = part end
		end
	end
	return text or ''
end

-- The call's changes, written at its end (batch.lua): the queues gone lose
-- their hash, the others get what changed.
local function qnum_flush()
	for q in pairs(QS.gone) do
		redis.call('DEL', QS.qstat_key(q), QS.qring_key(q))
		redis.call('SREM', P .. 'qstats', q)
	end
	for i = 1, #QS.dirty do
		local e = QS.dirty[i]
		if QS.all[e.q_] == e then
			-- set: the numbers' fields (n, tiers); ring: the ring's slots.
			local set, n, ring, nr, nums = {}, 0, nil, 0, false
			for f in pairs(e.set_) do
				if QS.at[f] then
					nums = true
				elseif f == 'tiers' then
					set[n + 1], set[n + 2] = f, QS.qn_tiers_text(e.tiers_)
					n = n + 2
				else
					ring = ring or {}
					ring[nr + 1], ring[nr + 2] = f, e[f]
					nr = nr + 2
				end
			end
			if nums then
				set[n + 1], set[n + 2] = 'n', struct.pack(QS.pack,
					e.users, e.servicers, e.ready, e.matched, e.leave,
					e.timeout, e.overflowed_total, e.wait_sum, e.hold,
					e.holds, e.area, e.abandons, e.within, e.within_s)
				n = n + 2
			end
			if nr > 0 then
				redis.call('HSET', QS.qring_key(e.q_), unpack(ring, 1, nr))
			end
			if n > 0 then
				redis.call('HSET', QS.qstat_key(e.q_), unpack(set, 1, n))
			end
			if n + nr > 0 and not e.had_ then
				redis.call('SADD', P .. 'qstats', e.q_)
			end
		end
	end
end

-- A call of nops operations starts with nothing read.
local function qnum_discard(nops)
	QS.all, QS.dirty, QS.op, QS.gone = {}, {}, {}, {}
	QS.ahead = nops < 32 and nops or 32
end

-- Tier t's arrivals: how many (up to the window), their mean gap, the
-- last one's time. The field is parsed at the call's first need.
function QS.qn_tier(e, t)
	local tiers = e.tiers_
	if not tiers then
		tiers = {}
		local text = e.raw_[#QS.fields] or ''
		-- One tier, the usual case, without an iterator.
		local k, n, gap, last = string.match(text, '^(%d+):(%d+):(%d+):(%d+)$')
		if k then
			tiers[tonumber(k)] = { tonumber(n), tonumber(gap), tonumber(last) }
		else
			for k, n, gap, last in string.gmatch(text,
			                                     '(%d+):(%d+):(%d+):(%d+)') do
				tiers[tonumber(k)] = { tonumber(n), tonumber(gap),
				                       tonumber(last) }
			end
		end
		e.tiers_ = tiers
	end
	local v = tiers[t]
	if v then return v[1], v[2], v[3] end
	return 0, 0, 0
end

-- lib/estimate.c's moving mean, in integers.
function QS.est_mean(mean, sample, n)
	if sample >= mean then return mean + math.floor((sample - mean) / n) end
	return mean - math.floor((mean - sample) / n)
end

-- A user of tier t arrived in q's line (csq_estimate_arrival); the window
-- is 128 samples, and tiers above 15 are not counted.
local function est_arrival(q, t)
	if t > TIER_TOP then return end
	local e = qn(q)
	local n, gap, last = QS.qn_tier(e, t)
	if n > 0 then
		gap = QS.est_mean(gap, elapsed(last), n < 128 and n or 128)
	end
	if n < 128 then n = n + 1 end
	-- The parsed tiers are what the call knows; the field's text is made
	-- once, at the flush. An operation that fails gets back the tiers it
	-- found.
	local tiers, undo = e.tiers_, e.undo_
	if not (undo and undo.tiers) then
		local copy = {}
		for k, v in pairs(tiers) do copy[k] = v end
		qn_put(e, 'tiers', copy)
		tiers = copy
	end
	tiers[t] = { n, gap, NOW }
end


-- A new user waits in q; one moved from queue from to q (a re-ENQUEUE,
-- a TRANSFER, an overflow) and arrives there.
local function qnum_user_new(q, t)
	qnum_incr(q, 'users', 1)
	est_arrival(q, t)
end
local function qnum_user_moved(from, q, t)
	if from ~= q then
		qnum_incr(from, 'users', -1)
		qnum_incr(q, 'users', 1)
	end
	est_arrival(q, t)
end

-- Of the users who waited: the time they waited and how many gave up,
-- moving sums (csq_estimate_outcome).
local function est_outcome(e, waited, abandoned)
	if waited == 0 and not abandoned then return end
	qn_put(e, 'area', e.area - math.floor(e.area / 128) + waited)
	local a = e.abandons - math.floor(e.abandons / 128)
	if abandoned then a = a + 1024 end
	if a ~= e.abandons then qn_put(e, 'abandons', a) end
end

function QS.qn_is_within(w, level)
	return w ~= 'a' and tonumber(w) <= level * 1000
end

-- The ring's slots read ahead: a slot's old value is needed when an
-- outcome replaces it, and one HMGET reads the next ones, as many as the
-- call has operations (at most 32: QS.ahead, set by qnum_discard); those
-- that the call writes meanwhile are read from its own changes first.
function QS.qn_ring_old(e, slot, f)
	local old = rawget(e, f)
	if old then return old end
	local ahead = e.ahead_
	if not ahead or ahead[f] == nil then
		ahead = {}
		local names = {}
		for i = 0, QS.ahead - 1 do
			local k = (slot + i) % 1000
			local name = QS.ring[k]
			if not name then
				name = 'r' .. k
				QS.ring[k] = name
			end
			names[i + 1] = name
		end
		local got = redis.call('HMGET', QS.qring_key(e.q_), unpack(names))
		for i = 1, QS.ahead do ahead[names[i]] = got[i] end
		e.ahead_ = ahead
	end
	return ahead[f]
end

-- The queue's service level and the ring's outcomes within it: counted
-- again when the level changed (a reload; lib/qstats.c's
-- csq_qstats_relevel), else as kept.
function QS.qn_within_now(e)
	local level = queue_service_level(e.q_)
	if e.within_s == level then return level, e.within end
	local n = e.matched + e.leave + e.timeout
	if n > 1000 then n = 1000 end
	local within = 0
	if n > 0 then
		local fields = {}
		for i = 1, n do fields[i] = 'r' .. (i - 1) end
		local ring = redis.call('HMGET', QS.qring_key(e.q_), unpack(fields))
		for i = 1, n do
			local w = rawget(e, fields[i]) or ring[i]
			if w and QS.qn_is_within(w, level) then within = within + 1 end
		end
	end
	return level, within
end

-- The same, kept: an outcome is about to be counted against the level.
function QS.qn_level(e)
	local level, within = QS.qn_within_now(e)
	if e.within_s ~= level then
		qn_put(e, 'within', within)
		qn_put(e, 'within_s', level)
	end
	return level
end

-- One more outcome in the ring (w: the wait's text, or 'a'), before it
-- is counted in matched, leave or timeout.
function QS.qn_outcome(e, w, ms)
	local level = QS.qn_level(e)
	local total = e.matched + e.leave + e.timeout
	local slot = total % 1000
	local f = QS.ring[slot]
	if not f then
		f = 'r' .. slot
		QS.ring[slot] = f
	end
	local within = e.within
	if total >= 1000 then
		local old = QS.qn_ring_old(e, slot, f)
		if old and QS.qn_is_within(old, level) then within = within - 1 end
	end
	if ms and ms <= level * 1000 then within = within + 1 end
	if within ~= e.within then qn_put(e, 'within', within) end
	qn_put(e, f, w)
end

-- A user of q was matched (assigned, or accepted an offer) after waiting
-- waited ms (csq_qstats_matched).
local function qnum_matched(q, waited)
	local e = qn(q)
	local w = waited
	if w > 4294967294 then w = 4294967294 end -- the ring's uint32
	QS.qn_outcome(e, int(w), w)
	qnum_incr(q, 'matched', 1)
	if waited > 0 then qnum_incr(q, 'wait_sum', waited) end
	est_outcome(e, waited, false)
end

-- A waiting or offered user of q gave up (reason leave, timeout).
local function qnum_abandoned(q, reason, waited)
	local e = qn(q)
	est_outcome(e, waited, true)
	QS.qn_outcome(e, 'a', false)
	if reason == 'timeout' then
		qnum_incr(q, 'timeout', 1)
	else
		qnum_incr(q, 'leave', 1)
	end
end

-- When a room was taken by the user in it, for its hold time: the
-- assignment, or the offer it accepted, which ACCEPT notes in {p}:taken
-- (the record's since is then the acceptance). Clears the note: each
-- call that takes the user out of its room calls this once. Only once
-- offers have been made: without them nothing is noted.
local function qnum_taken(uid)
	if counter('offers_total') <= 0 then return nil end
	local key = P .. 'taken'
	local at = redis.call('HGET', key, uid)
	if not at then return nil end
	redis.call('HDEL', key, uid)
	return tonumber(at)
end

-- A conversation of q in a room taken at since (the record's) ended with
-- a wrap-up of wrapup s: how long its user held the room
-- (csq_estimate_hold, from csq_room_end).
local function qnum_room_end(q, uid, since, wrapup)
	local e = qn(q)
	local ms = elapsed(qnum_taken(uid) or since) + wrapup * 1000
	local holds = e.holds + 1
	qn_put(e, 'holds', holds)
	qn_put(e, 'hold', QS.est_mean(e.hold, ms, holds < 128 and holds or 128))
end

-- unaccount notes a servicer's ready capacity and queues, and account
-- moves each queue's servicers and ready by what changed: a login (no
-- note, and never saved), new queues, a new readiness or capacity.
local function qnum_unaccount(s)
	s.qn_ready = s.status == 'ready' and s.capacity or 0
	s.qn_queues = s.queues
end

function QS.qn_serving(qs, d, ready)
	for _, q in ipairs(qs) do
		if d ~= 0 then qnum_incr(q, 'servicers', d) end
		if ready ~= 0 then qnum_incr(q, 'ready', ready) end
	end
end

local function qnum_account(s)
	local ready, had = s.status == 'ready' and s.capacity or 0, s.qn_queues
	s.qn_queues = nil
	if not had then
		if not s.was then QS.qn_serving(s.queues, 1, ready) end
		return
	end
	if had ~= s.queues and
	   table.concat(had, ',') ~= table.concat(s.queues, ',') then
		QS.qn_serving(had, -1, -s.qn_ready)
		QS.qn_serving(s.queues, 1, ready)
	elseif ready ~= s.qn_ready then
		QS.qn_serving(s.queues, 0, ready - s.qn_ready)
	end
end

-- s (out of the accounts) logs out or is lost.
local function qnum_drop(s)
	QS.qn_serving(s.queues, -1, -s.qn_ready)
end

-- The estimate for the pos-th user of tier t in q's line; -1 none
-- (csq_estimate_line). The same doubles as lib/estimate.c, in the same
-- order, rounded as llround; Lua 5.1 has no log1p, and log(1 + x) loses
-- x's low bits when x is small: log(u) * x / (u - 1) with u = 1 + x
-- (Goldberg's correction) is within a few ulps of log1p, so an estimate
-- differs from the memory engine's only if its fraction is that close to
-- one half.
local function est_line(q, pos, t)
	if not base or counter('rooms_free') > 0 then
		if redis.call('EXISTS', free_key(q)) == 1 then return 0 end
	end
	local e = qn(q)
	if e.ready <= 0 or e.holds == 0 or e.hold == 0 then return -1 end
	local full = e.ready / e.hold
	local rate = 0
	for k = t + 1, TIER_TOP do
		local n, gap, last = QS.qn_tier(e, k)
		if n >= 2 then
			local since = elapsed(last)
			if since > gap then gap = since end
			if gap > 0 then rate = rate + 1.0 / gap end
		end
	end
	local mu = full - rate
	if mu < (1 - 0.9) * full then mu = (1 - 0.9) * full end
	local theta, ahead, eta = 0, 0, 0
	if e.area > 0 then theta = e.abandons / 1024 / e.area end
	if pos > 0 then ahead = pos - 1 end
	if theta > 0 then
		local x = theta * ahead / mu
		local u = 1 + x
		if u ~= 1 then x = math.log(u) * x / (u - 1) end
		eta = x / theta
	else
		eta = ahead / mu
	end
	eta = eta + 1 / mu
	if eta >= 864000000 then return 864000000 end -- CSQ_TTL_MAX s * 10
	local r = math.floor(eta)
	if eta - r >= 0.5 then r = r + 1 end
	return r
end

-- A user's eta_ms: 0 offered, the line's estimate waiting (pos: its
-- position), -1 assigned.
local function est_user(u, pos)
	if u.state == 'offered' then return 0 end
	if u.state ~= 'waiting' then return -1 end
	return est_line(u.queue, pos, tier_of(u.key))
end

-- The longest wait in q's line, and whose: the user who came first (the
-- lowest sequence) is the first of its tier (the line is in tier order,
-- then arrival order), so one lookup per tier present rather than a walk
-- of the line (QUEUES, QSTATS).
local function oldest_wait(q)
	local key, first, who, from = queue_key(q), nil, nil, '-inf'
	while true do
		local r = redis.call('ZRANGEBYSCORE', key, from, '+inf', 'WITHSCORES',
		                     'LIMIT', 0, 1)
		if not r[1] then break end
		local score = tonumber(r[2])
		if not first or seq_of(score) < first then
			first, who = seq_of(score), r[1]
		end
		local tier = tier_of(score)
		if tier == 0 then break end
		-- Sequence 0 is never handed out: the tier below starts after it.
		from = int(pack(tier - 1, 0))
	end
	if not who then return 0, '' end
	local rec = redis.call('HGET', USERS, who)
	local arrival = rec and string.match(rec, '^%S+ %d+ (%d+) ')
	return elapsed(tonumber(arrival)), who
end
-- (end of the queue numbers and estimates)

-- A servicer's score in the free-room index of its queues; the lowest
-- gets the next user (lib/servicer.c's csq_avail_key). longest_idle: the
-- order of its login or last new user, which no two share. least_busy:
-- its busy rooms (offered + assigned + wrap-up) first, ties by that
-- order: busy * 2^43 + order, exact in a double while busy <= 1000
-- (CSQ_CAPACITY_MAX < 2^10) and the order below 2^43 (8.8e12 logins and
-- new users). O(log n) per change, as any ZADD.
local BUSY_UNIT = 8796093022208
local function free_score(s, q)
	local st = LIMIT.strategy_s
	if POLICY_DIGEST ~= false then st = queue_strategy(q) end
	if st == '1' then
		return int(s.active * BUSY_UNIT + s.last_order)
	end
	return int(s.last_order)
end

-- Every change to a servicer's readiness, capacity, queues or rooms sits
-- between unaccount and account, which keep rooms_busy, rooms_free and the
-- free-room index of each queue true (lib/servicer.c).
local function unaccount(s)
	qnum_unaccount(s)
	stat('rooms_busy', -s.active)
	if s.status == 'ready' then stat('rooms_free', -free_count(s)) end
	if has_free(s) then
		for _, q in ipairs(s.queues) do
			redis.call('ZREM', free_key(q), s.id)
		end
	end
end

local function account(s)
	qnum_account(s)
	stat('rooms_busy', s.active)
	if s.status == 'ready' then stat('rooms_free', free_count(s)) end
	-- A servicer whose fill waits for a split reap's last call (fill)
	-- stays out of the index until then: no user takes its rooms first.
	if has_free(s) and not s.deferred then
		for _, q in ipairs(s.queues) do
			redis.call('ZADD', free_key(q), free_score(s, q), s.id)
		end
	end
end

-- Every servicer scored again under the strategy of this call
-- (counters(), above), and the strategy of the indexes noted.
rekey = function()
	for _, id in ipairs(redis.call('ZRANGE', SERVICERS, 0, -1)) do
		local s = servicer_load(id)
		if s and has_free(s) then
			for _, q in ipairs(s.queues) do
				if redis.call('ZSCORE', free_key(q), id) then
					redis.call('ZADD', free_key(q), free_score(s, q), id)
				end
			end
		end
	end
	read[COUNTER_AT.strategy] = policy_tag(POLICY_DIGEST)
	redis.call('HSET', STATS, 'strategy', read[COUNTER_AT.strategy])
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
-- "<queue> <key> <arrival> <ttl> <state> <servicer> <room> <since>" for
-- state offered or assigned (since: the offer, the assignment; times in
-- ms, ttl in s). A '+' right after the state marks a user that a
-- TRANSFER placed (lib/state.h's CSQ_USER_TRANSFERRED): an ENQUEUE does
-- not move it to another queue; a '^' after it one that overflowed
-- (CSQ_USER_OVERFLOWED): an ENQUEUE naming a queue it overflowed from
-- does not move it back. One hash rather than a key per user: a
-- new user is one HSETNX, which also says whether the id was new.

-- key, arrival, ttl: those fields as text, where the caller has them
-- already (ENQUEUE of a new user: its arguments and the call's time), so
-- that no number is formatted again.
local function user_record(u, key, arrival, ttl)
	local head = u.queue .. ' ' .. (key or int(u.key)) .. ' ' ..
	             (arrival or int(u.arrival)) .. ' ' .. (ttl or int(u.ttl)) ..
	             ' ' .. u.state
	if u.moved then head = head .. '+' end
	if u.over then head = head .. '^' end
	if u.state == 'waiting' then
		-- Held for a preferred servicer (§5): who, and the window's end.
		if u.prefer then
			head = head .. ' ' .. u.prefer .. ' ' .. int(u.prefer_at)
		end
		return head
	end
	return head .. ' ' .. u.servicer .. ' ' .. u.room .. ' ' .. int(u.since)
end

local function user_save(u, key)
	redis.call('HSET', USERS, u.id, user_record(u, key))
end

local function user_load(id)
	local rec = redis.call('HGET', USERS, id)
	if not rec then return nil end
	local q, key, arrival, ttl, state, moved, over, sid, room, at =
	    string.match(rec,
	    '^(%S+) (%d+) (%d+) (%d+) (%a+)(%+?)(%^?) ?(%S*) ?(%d*) ?(%d*)$')
	-- (A waiting user's tail, when it has one, is its preference window:
	-- the servicer and when the window ends.)
	if not (state == 'waiting' and (sid == '' or (room ~= '' and at == ''))) and
	   not ((state == 'assigned' or state == 'offered') and at ~= '') then
		error('csq: the record of user ' .. id .. ' is not csq\'s')
	end
	local u = { id = id, queue = q, key = tonumber(key),
	            arrival = tonumber(arrival), ttl = tonumber(ttl),
	            state = state, moved = moved == '+', over = over == '^',
	            servicer = false, room = false, since = false,
	            prefer = false, prefer_at = false }
	if state ~= 'waiting' then
		u.servicer = sid
		u.room = tonumber(room)
		u.since = tonumber(at)
	elseif sid ~= '' then
		u.prefer, u.prefer_at = sid, tonumber(room)
	end
	return u
end

-- (A preferring user's is in its prefer line.)
local function position(u)
	if u.prefer then
		return redis.call('ZRANK', prefer_key(u.prefer, u.queue), u.id) + 1
	end
	return redis.call('ZRANK', queue_key(u.queue), u.id) + 1
end

-- (Re)starts u's TTL from now, or clears it for a TTL of 0.
local function user_deadline(u)
	if u.ttl > 0 then
		deadline_set('u:' .. u.id, NOW + u.ttl * 1000)
	else
		deadline_clear('u:' .. u.id)
	end
end

-- A user has a deadline while it waits or is offered with a TTL, and
-- only then: timed says whether user id does. q: its queue, which it no
-- longer holds.
local function user_free(id, timed, q)
	if timed then deadline_clear('u:' .. id) end
	redis.call('HDEL', USERS, id)
	qnum_incr(q, 'users', -1)
end

-- Deadlines of rooms: "o:<servicer>/<index>" an offer, "w:<...>" a
-- wrap-up; "r:<servicer>" a retry window.
local function room_name(sid, idx) return sid .. '/' .. idx end

-- A room in wrap-up holds "!<start ms>" in S2R instead of a user id,
-- which no id can be (csq_valid_id): in_wrapup says whether v (an S2R
-- value, or nil) is one.
local function in_wrapup(v)
	return v ~= nil and v ~= false and string.byte(v, 1) == 33 -- '!'
end

-- What an operation put back in line (user records) and which servicers
-- it gave a free room (ids), matched at its end by settle (below), as
-- lib/matcher.c's csq_settle. nil for each operation until it has one
-- (batch.lua): most have none, and a table costs an allocation.
local back, refill

local function settle_back(u)
	if not back then back = {} end
	back[#back + 1] = u
end
local function settle_refill(id)
	if not refill then refill = {} end
	refill[#refill + 1] = id
end

-- Preferred servicers (protocol-v2 §5), as lib/prefer.c. A user who
-- prefers servicer S waits in a line of S's own for its queue, the
-- sorted set {p}:prefer:<S>/<q>, scored by its order key like the
-- queue's line, and in no queue line meanwhile: nobody else's match ever
-- meets it, and S alone looks at its prefer lines, beside its queues'
-- heads, when it fills a free room (best_user), and only while its hash's
-- prefers (how many users wait for it, read with its other fields) is
-- above 0. The window is the deadline p:<id>, a late kind of the reaper
-- (expire.lua); the user's record holds the servicer and the window's
-- end. {p}:preferring counts the users so held by queue (QLEN counts them
-- in), and STATS' preferring all of them, so that an ENQUEUE reads the
-- queue's count only when somebody somewhere prefers.
-- Users of q held for a preferred servicer (QSTATS' waiting too).
local function queue_preferring(q)
	if counter('preferring') <= 0 then return 0 end
	return tonumber(redis.call('HGET', P .. 'preferring', q) or '0')
end

-- The servicer a PREFER names (sid; '' none) if it may hold a window for
-- queue q: logged in and serving q (csq_prefer_target); else false.
local function prefer_target(sid, q)
	if sid == '' then return false end
	local qs = redis.call('HGET', servicer_key(sid), 'queues')
	for sq in string.gmatch(qs or '', '[^,]+') do
		if sq == q then return sid end
	end
	return false
end

-- The counts of held users, by servicer and by queue, move by d. A
-- servicer's prefers leaves its hash at 0, so that a hash deleted behind
-- csq's back is not made again by it.
local function prefer_counted(sid, q, d)
	local skey = servicer_key(sid)
	if redis.call('HINCRBY', skey, 'prefers', d) <= 0 then
		redis.call('HDEL', skey, 'prefers')
	end
	if redis.call('HINCRBY', P .. 'preferring', q, d) <= 0 then
		redis.call('HDEL', P .. 'preferring', q)
	end
	stat('preferring', d)
end

-- u (waiting, in no line) into sid's prefer line of its queue, its window
-- to end at at (ms); its record is the caller's to save. Returns its
-- position there.
local function prefer_insert(u, sid, at)
	local key = prefer_key(sid, u.queue)
	u.prefer, u.prefer_at = sid, at
	redis.call('ZADD', key, int(u.key), u.id)
	prefer_counted(sid, u.queue, 1)
	deadline_set('p:' .. u.id, at)
	return redis.call('ZRANK', key, u.id) + 1
end

-- u out of its prefer line, its window closed without an event (it is
-- offered, assigned, leaves, or moves); its record is the caller's.
local function prefer_remove(u)
	redis.call('ZREM', prefer_key(u.prefer, u.queue), u.id)
	prefer_counted(u.prefer, u.queue, -1)
	deadline_clear('p:' .. u.id)
	u.prefer, u.prefer_at = false, false
end

-- u's window closes (reason): prefer_ended, and u joins its queue's line
-- at its order key (csq_prefer_end). The caller matches it.
local function prefer_end(u, reason)
	event('prefer_ended', u.id, u.queue, u.prefer, reason)
	prefer_remove(u)
	user_save(u)
	redis.call('ZADD', queue_key(u.queue), int(u.key), u.id)
	clock_start(u) -- back in a line: its clocks start (csq_user_join_line)
end

-- Every window of sid's prefer line of q ends (reason), from its head;
-- the users go back to settle (prefer_end_line).
local function prefer_end_line(sid, q, reason)
	for _, id in ipairs(redis.call('ZRANGE', prefer_key(sid, q), 0, -1)) do
		local u = user_load(id)
		if u and u.prefer == sid and u.queue == q then
			prefer_end(u, reason)
			settle_back(u)
		else
			-- Not csq's (changed behind its back): not trusted.
			redis.call('ZREM', prefer_key(sid, q), id)
		end
	end
end

-- s logs out or is lost: every window held for it ends, queue by queue
-- in the order it serves them (csq_prefer_servicer_gone).
local function prefer_servicer_gone(s, reason)
	if s.prefers <= 0 then return end
	for _, q in ipairs(s.queues) do prefer_end_line(s.id, q, reason) end
end

-- s is about to serve qs instead: the windows of the queues it drops end
-- (reason queues), in the order it served them; the prefer lines of the
-- queues it keeps stay (csq_prefer_queues_change).
local function prefer_queues_change(s, qs)
	if s.prefers <= 0 then return end
	local keep = {}
	for _, q in ipairs(qs) do keep[q] = true end
	for _, q in ipairs(s.queues) do
		if not keep[q] then prefer_end_line(s.id, q, 'queues') end
	end
end

-- The head of s's prefer lines if it comes before best (key best_key):
-- best_user's, with the same comparison (matcher_better). Returns the
-- best, its key, its queue and its line's key (nil: a queue's line).
local function prefer_better(s, best, best_key, best_q)
	local best_line
	for _, q in ipairs(s.queues) do
		local key = prefer_key(s.id, q)
		local r = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
		if r[1] then
			local k = tonumber(r[2])
			if not best or k < best_key then
				best, best_key, best_q, best_line = r[1], k, q, key
			end
		end
	end
	return best, best_key, best_q, best_line
end

-- The eta_ms of u, held for its servicer at position pos of its line
-- (lib/estimate.c's estimate_preferring): that servicer's rooms alone
-- serve it, one every hold / capacity; were the window to close first,
-- it would wait in its queue's line, at worst at its end.
local function prefer_eta(u, pos)
	local s, e, own = servicer_load(u.prefer), qn(u.queue), -1
	if s and s.status == 'ready' and e.holds > 0 then
		own = math.floor(pos * e.hold / s.capacity)
	end
	local line = est_line(u.queue,
	                      redis.call('ZCARD', queue_key(u.queue)) + 1,
	                      tier_of(u.key))
	if line >= 0 then
		if u.prefer_at > NOW then line = line + u.prefer_at - NOW end
		if own < 0 or line < own then own = line end
	end
	return own
end

-- WHERE's and ENQUEUE's prefer and prefer_ms: the servicer, and the
-- window's time left ('' and 0 outside a window).
local function prefer_info(u)
	if not u.prefer then return '', 0 end
	if u.prefer_at > NOW then return u.prefer, u.prefer_at - NOW end
	return u.prefer, 0
end

-- The matcher (lib/matcher.c). An operation that changes a servicer takes
-- it out of the accounts (unaccount), changes it, fills its free rooms
-- (fill), puts it back (account) and saves it, once.

-- Waiting user u takes room of s, which is out of the accounts: offered
-- when s takes offers (OFFER > 0), else assigned (lib/matcher.c's
-- matcher_place). moved: the queue u moved from in this operation, when
-- it did (its line is told too), else nil or false.
local function place(u, s, room, moved)
	if u.prefer then
		prefer_remove(u) -- its window ends silently
	else
		redis.call('ZREM', queue_key(u.queue), u.id)
		if POLICY_DIGEST ~= false then clock_leave(u) end
	end
	stat('waiting', -1)
	redis.call('HSET', rooms_key(s.id), int(room), u.id)
	if room == s.vacated then s.vacated = nil end
	s.active = s.active + 1
	s.last_order = order_next()
	s.last_ms = NOW
	u.servicer, u.room, u.since = s.id, room, NOW
	if s.offer > 0 then
		-- It keeps its TTL.
		u.state = 'offered'
		user_save(u)
		local at = NOW + s.offer * 1000
		deadline_set('o:' .. room_name(s.id, room), at)
		stat('offers_total', 1)
		event('offered', u.id, u.queue, tier_of(u.key), s.id, room, at,
		      moved or false)
		return
	end
	if u.ttl > 0 then deadline_clear('u:' .. u.id) end
	u.state = 'assigned'
	user_save(u)
	stat('matched_total', 1)
	qnum_matched(u.queue, elapsed(u.arrival))
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

-- Waiting u takes the lowest free room of s (saved): true.
local function place_saved(u, s, moved)
	unaccount(s)
	place(u, s, free_room(s), moved)
	account(s)
	servicer_save(s)
	return true
end

-- A user started waiting: the servicer that the strategy puts first in
-- the free-room index of its queue takes it (a user held for a preferred
-- servicer: that one, if it has a free room). An entry of the index that
-- is not true (its servicer's key deleted or changed behind csq's back)
-- is dropped rather than trusted, and the free rooms are counted again.
local function match_user(u, moved)
	if rooms_free() <= 0 or reap_defer('u:' .. u.id) then return false end
	-- Held for a preferred servicer: a free room of that one only.
	if u.prefer then
		local s = servicer_load(u.prefer)
		return (s and has_free(s) and place_saved(u, s, moved)) or false
	end
	local fkey = free_key(u.queue)
	while true do
		local top = redis.call('ZRANGE', fkey, 0, 0)
		if not top[1] then return false end
		local s = servicer_load(top[1])
		if s and has_free(s) and serves(s, u.queue) then
			return place_saved(u, s, moved)
		end
		redis.call('ZREM', fkey, top[1])
		rooms_free_recount()
		if rooms_free() <= 0 then return false end
	end
end

-- The best waiting user across the queues s serves and the users held
-- for s alone, its queue, and its prefer line's key (nil: its queue's).
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
	if s.prefers > 0 then
		local line
		best, best_key, best_q, line = prefer_better(s, best, best_key,
		                                             best_q)
		return best, best_q, line
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
		local id, q, line = best_user(s)
		if not id then break end
		local u = user_load(id)
		if u and u.state == 'waiting' and u.queue == q and
		   u.prefer == (line and s.id or false) then
			place(u, s, free_room(s))
		else
			redis.call('ZREM', line or queue_key(q), id)
			-- Without a record it is gone: STATS' waiting follows.
			if not u then
				stat('abandoned_total', 1)
				stat('waiting', -1)
			end
		end
	end
end

-- s (saved) takes the best users it serves into its free rooms.
local function refill_one(s)
	unaccount(s)
	fill(s)
	account(s)
	servicer_save(s)
end

-- Whether u heads its line, not counting the users of skip (a set of
-- ids, or nil): those who came while a split reap was under way, whom its
-- last call matches after the others, as if they had come after it.
local function heads_line(u, skip)
	-- A preferring user's line is its prefer line.
	local key = queue_key(u.queue)
	if u.prefer then key = prefer_key(u.prefer, u.queue) end
	if not skip then
		return redis.call('ZRANGE', key, 0, 0)[1] == u.id
	end
	local from = 0
	while true do
		local ids = redis.call('ZRANGE', key, from, from + 15)
		for _, id in ipairs(ids) do
			if not skip[id] then return id == u.id end
		end
		if #ids < 16 then return false end
		from = from + 16
	end
end

-- The users put back (list, records) best first, each as its record
-- stands now and only while it waits at the head of its line (skip:
-- heads_line's): a better user of its queue waited already, so no room of
-- that queue was free before the operation, and any that it freed are
-- refilled after.
local function rematch(list, skip)
	if #list > 1 then
		table.sort(list, function(a, b) return a.key < b.key end)
	end
	for _, b in ipairs(list) do
		local u = user_load(b.id)
		if u and u.state == 'waiting' and heads_line(u, skip) then
			match_user(u)
		end
	end
end

-- The end of an operation (lib/matcher.c's csq_settle): the users it
-- put back, then the servicers it gave a free room, in the order they got
-- it. Every servicer the operation changed is saved before. skip: as
-- heads_line's.
local function settle(skip)
	local b, f = back, refill
	back, refill = nil, nil
	if b then rematch(b, skip) end
	for _, id in ipairs(f or {}) do
		local s = servicer_load(id)
		if s then refill_one(s) end
	end
end

-- Room idx of s, offered or assigned to u, is free again and u goes back
-- in line at its old place (same key; the length limit does not apply;
-- its TTL restarts): event kind (requeued, declined) with reason, and u
-- to settle. s is out of the accounts (lib/room.c's csq_room_return).
local function room_return(s, idx, u, kind, reason)
	redis.call('HDEL', rooms_key(s.id), int(idx))
	if u.state == 'offered' then
		deadline_clear('o:' .. room_name(s.id, idx))
	end
	s.active = s.active - 1
	if u.state == 'assigned' then qnum_taken(u.id) end
	u.state = 'waiting'
	user_save(u)
	redis.call('ZADD', queue_key(u.queue), int(u.key), u.id)
	if POLICY_DIGEST ~= false then clock_start(u) end
	stat('waiting', 1)
	user_deadline(u)
	local pos = position(u)
	if kind == 'requeued' then
		stat('requeued_total', 1)
		event('requeued', u.id, u.queue, tier_of(u.key), pos, s.id, idx,
		      reason)
	else
		event('declined', u.id, u.queue, tier_of(u.key), s.id, idx, reason,
		      pos)
	end
	settle_back(u)
end

-- The busy rooms of servicer id, by index: { idx, value } (a user id, or
-- a wrap-up's "!<start>").
local function rooms_of(id)
	local flat = redis.call('HGETALL', rooms_key(id))
	local rooms = {}
	for i = 1, #flat, 2 do
		rooms[#rooms + 1] = { idx = tonumber(flat[i]), user = flat[i + 1] }
	end
	table.sort(rooms, function(a, b) return a.idx < b.idx end)
	return rooms
end

-- The user of room r of servicer id when its record says it is there
-- (offered or assigned), else nil (a key changed behind csq's back).
local function room_user(id, r)
	if in_wrapup(r.user) then return nil end
	local u = user_load(r.user)
	if u and u.state ~= 'waiting' and u.servicer == id and u.room == r.idx then
		return u
	end
	return nil
end

-- s (out of the accounts) stops taking users: its offers go back in
-- line (requeued, reason pause). lib/offer.c's csq_offer_withdraw_all.
local function offers_withdraw(s)
	if s.active == 0 then return end
	for _, r in ipairs(rooms_of(s.id)) do
		local u = room_user(s.id, r)
		if u and u.state == 'offered' then
			room_return(s, r.idx, u, 'requeued', 'pause')
		end
	end
end

-- PAUSE, or an auto-pause (why missed_offers): its offers go back in
-- line, then servicer_paused. Its conversations and wrap-ups go on.
local function servicer_pause(s, why)
	unaccount(s)
	offers_withdraw(s)
	s.status = 'paused'
	account(s)
	servicer_save(s)
	event('servicer_paused', s.id, why)
end

-- The offer of room idx of s to u ends without a conversation, declined
-- by the servicer or by timeout: u goes back to its old place, and s
-- takes no new user for offer_retry seconds (lib/offer.c).
local function offer_decline(s, idx, u, by)
	unaccount(s)
	room_return(s, idx, u, 'declined', by)
	if LIMIT.retry > 0 then
		s.retry = 1
		deadline_set('r:' .. s.id, NOW + LIMIT.retry * 1000)
	end
	account(s)
	servicer_save(s)
	settle_refill(s.id)
end

-- The offer runs out: declined by timeout, a missed offer, and the
-- offer_max_missed-th in a row pauses the servicer.
local function offer_expire(s, idx, u)
	stat('offers_missed_total', 1)
	s.missed = s.missed + 1
	offer_decline(s, idx, u, 'timeout')
	if LIMIT.missed > 0 and s.missed >= LIMIT.missed and
	   s.status == 'ready' then
		servicer_pause(s, 'missed_offers')
	end
end

-- Room idx of s (saved, not out of the accounts) in wrap-up, or NOTFOUND
-- and the like: the servicer and whether the room exists.
-- A wrap-up ends (READY, or its deadline): event ready, the room free.
local function room_ready(s, idx)
	unaccount(s)
	redis.call('HDEL', rooms_key(s.id), int(idx))
	deadline_clear('w:' .. room_name(s.id, idx))
	s.active = s.active - 1
	account(s)
	servicer_save(s)
	event('ready', s.id, idx)
	settle_refill(s.id)
end

-- The conversation in room idx of s ended (by: servicer, user,
-- transfer) and event released is out: with a wrap-up the room stays
-- busy until READY or its deadline (event wrapup); else it is free. s is
-- out of the accounts; the room is still in S2R. Returns whether it is
-- free (the caller fills it).
local function room_after(s, idx)
	if s.wrapup == 0 then return true end
	redis.call('HSET', rooms_key(s.id), int(idx), '!' .. NOW_S)
	local at = NOW + s.wrapup * 1000
	deadline_set('w:' .. room_name(s.id, idx), at)
	event('wrapup', s.id, idx, at)
	return false
end

-- The conversation in room idx of s ends (RELEASE, LEAVE); the user
-- leaves the system. Without a wrap-up the room leaves the hash only if
-- fill does not put the next user in it (an HSET over it), which is the
-- usual case: with nobody put back, filling it here is what settle would
-- do. The user's record is read before anything is written: a record
-- that is not csq's fails the operation with nothing changed. Returns
-- false, with nothing changed, when the room holds an offer.
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
		if state == 'offered' then return false end
	end
	unaccount(s)
	-- A record gone (deleted behind csq's back): the room is freed all
	-- the same, without an event, which would have no queue to name.
	if rec then
		event('released', uid, q, s.id, idx, by)
		if state == 'assigned' then
			-- The record's last field, since: a match from its end, as
			-- one from each place would cost 100,000 instructions.
			qnum_room_end(q, uid,
			              tonumber(string.match(rec, ' (%d+)$', -24)),
			              s.wrapup)
		end
		user_free(uid, state == 'waiting' and ttl ~= '0', q)
	end
	if room_after(s, idx) then
		s.vacated = idx
		s.active = s.active - 1
		fill(s)
		if s.vacated then
			redis.call('HDEL', rooms_key(s.id), int(idx))
			s.vacated = nil
		end
	end
	account(s)
	servicer_save(s)
	return true
end

-- A waiting or offered user gives up (LEAVE) or times out. An offer goes
-- with it, and its room is free at once; its left then names the
-- servicer and the room (lib/csq.c's csq_user_abandon).
local function user_abandon(u, reason)
	stat('abandoned_total', 1)
	qnum_abandoned(u.queue, reason, elapsed(u.arrival))
	if u.state == 'waiting' then
		if u.prefer then
			prefer_remove(u)
		else
			redis.call('ZREM', queue_key(u.queue), u.id)
			if POLICY_DIGEST ~= false then clock_leave(u) end
		end
		stat('waiting', -1)
		event('left', u.id, u.queue, reason)
	else
		local s = servicer_load(u.servicer)
		if s then
			unaccount(s)
			redis.call('HDEL', rooms_key(s.id), int(u.room))
			s.active = s.active - 1
			account(s)
			servicer_save(s)
			settle_refill(s.id)
		end
		deadline_clear('o:' .. room_name(u.servicer, u.room))
		event('left', u.id, u.queue, reason, u.servicer, u.room)
	end
	user_free(u.id, u.ttl > 0, u.queue)
end

-- The users in the rooms of servicer id go back in line at their old
-- place (room_return), to settle, and its wrap-ups end without an event;
-- its rooms go. A room whose user's record does not say it is there (a
-- key changed behind csq's back) is dropped. Returns how many users and
-- how many rooms there were. s: the servicer (out of the accounts), or a
-- stand-in for one whose hash is gone.
local function rooms_requeue(s, reason)
	local rooms = rooms_of(s.id)
	local n = 0
	for _, r in ipairs(rooms) do
		if in_wrapup(r.user) then
			deadline_clear('w:' .. room_name(s.id, r.idx))
		else
			local u = room_user(s.id, r)
			if u then
				room_return(s, r.idx, u, 'requeued', reason)
				n = n + 1
			end
		end
	end
	if #rooms > 0 then redis.call('DEL', rooms_key(s.id)) end
	return n, #rooms
end

-- Removes s (logout or loss): its users go back in line, to settle
-- (rooms_requeue), then servicer_down. Returns how many users.
local function servicer_drop(s, reason)
	unaccount(s)
	qnum_drop(s)
	local n = rooms_requeue(s, reason)
	prefer_servicer_gone(s, reason)
	redis.call('DEL', servicer_key(s.id))
	deadline_clear('s:' .. s.id)
	if s.retry ~= 0 then deadline_clear('r:' .. s.id) end
	redis.call('ZREM', SERVICERS, s.id)
	stat('servicers', -1)
	if reason == 'lost' then stat('servicers_lost_total', 1) end
	event('servicer_down', s.id, reason)
	return n
end

-- What is left of servicer id when its hash is gone (deleted or evicted
-- behind csq's back) but its rooms or its place among the servicers are
-- not: without this, its next HEARTBEAT would log it in afresh and put a
-- waiting user into a room that another still holds, and its users would
-- stay in rooms nobody serves. Its users go back in line, to settle, and
-- it is declared lost. How many free rooms it had is lost with its hash:
-- they are counted again. Returns whether there was anything left.
local function ghost_remove(id)
	local listed = redis.call('ZSCORE', SERVICERS, id)
	if not listed and redis.call('EXISTS', rooms_key(id)) == 0 then
		return false
	end
	local _, nrooms = rooms_requeue({ id = id, active = 0 }, 'lost')
	stat('rooms_busy', -nrooms)
	if listed then
		redis.call('ZREM', SERVICERS, id)
		stat('servicers', -1)
		stat('servicers_lost_total', 1)
	end
	deadline_clear('s:' .. id)
	deadline_clear('r:' .. id)
	rooms_free_recount()
	event('servicer_down', id, 'lost')
	return true
end

-- A room given by the daemon as servicer and index (it parsed the room
-- id): the servicer, the index and the room's entry in S2R (a user id,
-- a wrap-up's "!<start>", or nil when free); nil when no such room
-- (NOTFOUND).
local function room_find(sid, idx_s)
	local s = servicer_load(sid)
	local idx = tonumber(idx_s)
	if not s or not room_exists(s, idx) then return nil end
	return s, idx, redis.call('HGET', rooms_key(sid), idx_s)
end

-- The reply fields of a user (ENQUEUE, WHERE, TRANSFER): state, queue,
-- position, tier, waited_ms, servicer, room, since_ms, expires_in_ms,
-- eta_ms, prefer, prefer_ms. pos: the position if known.
local function user_info(u, pos)
	if u.state == 'waiting' then
		pos = pos or position(u)
		local prefer, prefer_ms = prefer_info(u)
		return 'waiting', u.queue, pos, tier_of(u.key), elapsed(u.arrival),
		       '', '', 0, 0, u.prefer and prefer_eta(u, pos) or est_user(u, pos),
		       prefer, prefer_ms
	end
	local room = room_name(u.servicer, u.room)
	local expires = 0
	if u.state == 'offered' then
		local at = redis.call('ZSCORE', DEADLINES, 'o:' .. room)
		if at and tonumber(at) > NOW then expires = tonumber(at) - NOW end
	end
	return u.state, u.queue, 0, tier_of(u.key), elapsed(u.arrival),
	       u.servicer, room, elapsed(u.since), expires, est_user(u), '', 0
end

-- Queue policies (protocol-v2 §4) ------------------------------------------
-- lib/policy.c written again. The policies in force are the ones the last
-- daemon wrote (OPS.policy, policy.lua): {p}:policy, one packed entry per
-- queue, and their digest after the strategy in STATS' strategy ("<0|1>
-- <sha1>"; the strategy alone without policies), which a call reads with
-- its other counters. So without policies nothing here costs a command;
-- with them a queue's entry is read once per call (and once per digest
-- for all the calls of a loaded library, whose top level lives on: the
-- cache below), and only that of a queue the call touches.
local POLICY = { tag = false, p = false, cache = {}, n = 0, staged = false,
                 raw = false, raw_st = false, raw_digest = false }
local POLICY_CACHE_MAX = 4096 -- queues whose policy (or none) is cached
local POLICY_CHAIN_MAX = 1000 -- CSQ_POLICIES_MAX: no chain is longer
local MAX_TIER_S -- ARGV[3], the daemon's max_tier (batch.lua)
local function policy_key() return P .. 'policy' end
-- The time each user with a clock joined its line (ms), by id.
local function clocks_key() return P .. 'clock' end

-- An entry as engine_redis.c packs it: "<strategy> <max_length>
-- <overflow_after> <aging_every> <aging_max_tier> <service_level>
-- <overflow_to>", -1 (strategy, aging_max_tier), 0 or '' for a key not
-- given. false for none.
local function policy_parse(text)
	if not text then return false end
	local st, max, over, every, agemax, level, to = string.match(text,
	    '^(%-?%d) (%d+) (%d+) (%d+) (%-?%d+) (%d+) (%S*)$')
	if not st then
		error('csq: the policy "' .. text .. '" is not csq\'s')
	end
	local p = { strategy = st ~= '-1' and st, max = tonumber(max),
	            over = tonumber(over), every = tonumber(every),
	            agemax = tonumber(agemax), level = tonumber(level),
	            to = to ~= '' and to, clocks = false }
	p.clocks = p.over > 0 or p.every > 0
	return p
end

-- STATS' strategy as read: its strategy, and the digest (POLICY_DIGEST);
-- the text parsed last is kept (a library's calls see the same one).
policy_tag_read = function(v)
	if v ~= POLICY.raw then
		local st, digest = string.match(v, '^(%d) (%x+)$')
		POLICY.raw, POLICY.raw_st, POLICY.raw_digest = v, st or v, digest
	end
	if POLICY.raw_digest then POLICY_DIGEST = POLICY.raw_digest end
	return POLICY.raw_st
end

-- STATS' strategy for this call's strategy and digest (false: none).
policy_tag = function(digest)
	if digest then return LIMIT.strategy_s .. ' ' .. digest end
	return LIMIT.strategy_s
end

-- q's policy, nil for none.
policy_of = function(q)
	if POLICY_DIGEST == nil then counters() end
	local digest = POLICY_DIGEST
	if not digest then return nil end
	if POLICY.tag ~= digest or POLICY.p ~= P then
		POLICY.tag, POLICY.p, POLICY.cache, POLICY.n = digest, P, {}, 0
	end
	local p = POLICY.cache[q]
	if p == nil then
		if POLICY.n >= POLICY_CACHE_MAX then POLICY.cache, POLICY.n = {}, 0 end
		p = policy_parse(redis.call('HGET', policy_key(), q))
		POLICY.cache[q], POLICY.n = p, POLICY.n + 1
	end
	return p or nil
end

-- The strategy of arrivals in q ('0' longest_idle, '1' least_busy): its
-- policy's, else the daemon's (lib/servicer.c's queue_strategy).
queue_strategy = function(q)
	local p = policy_of(q)
	if p and p.strategy then return p.strategy end
	return LIMIT.strategy_s
end

local function queue_max_length(q)
	local p = policy_of(q)
	if p and p.max > 0 then return p.max end
	return MAX_LENGTH
end

-- The service level of q in seconds (CSQ_DEFAULT_SERVICE_LEVEL without).
queue_service_level = function(q)
	local p = policy_of(q)
	if p and p.level > 0 then return p.level end
	return 20
end

-- A policy keeps its queue, and the queue's numbers, in existence.
queue_has_policy = function(q)
	return policy_of(q) ~= nil
end

-- A user in the line of a queue whose policy has a clock has its join
-- time in {p}:clock and one deadline, its next step: "a:<id>" the next
-- aging point, or "m:<id>" the overflow, whichever comes first (aging on a
-- tie), after time t (lib/policy.c's policy_arm_after). An overflow that
-- is due already (a reload made it so) waits for the next pass. fresh:
-- the user has no deadline of its clock yet (it has just joined).
local function clock_arm(id, p, joined, t, fresh)
	local overflow, aging = math.huge, math.huge
	if p.over > 0 then overflow = joined + p.over * 1000 end
	if p.every > 0 then
		local every, k = p.every * 1000, 1
		if t >= joined then k = math.floor((t - joined) / every) + 1 end
		aging = joined + k * every
	end
	if overflow < t then overflow = t end
	local kind, other, at = 'a:', 'm:', aging
	if aging > overflow then kind, other, at = 'm:', 'a:', overflow end
	if not fresh then deadline_clear(other .. id) end
	deadline_set(kind .. id, at)
end

local function clock_drop(id)
	redis.call('ZREM', DEADLINES, 'a:' .. id, 'm:' .. id)
	redis.call('HDEL', clocks_key(), id)
end

-- u has joined the line of u.queue now (with no clock: a new user, or one
-- that left a line or a room before): its clocks start.
clock_start = function(u)
	local p = policy_of(u.queue)
	if not (p and p.clocks) then return end
	redis.call('HSET', clocks_key(), u.id, NOW_S)
	clock_arm(u.id, p, NOW, NOW, true)
end

-- u leaves the line of u.queue (matched, offered, gone, moved). A new
-- user matched at its ENQUEUE (fresh) never had a clock.
clock_leave = function(u)
	if u.fresh then return end
	local p = policy_of(u.queue)
	if p and p.clocks then clock_drop(u.id) end
end

-- A re-ENQUEUE names queue named: true when u overflowed and named is
-- upstream of u's queue in the overflow chain (a frontend that repeats
-- its first ENQUEUE must not pull the user back).
local function policy_overflowed_from(u, named)
	if not u.over then return false end
	for _ = 0, POLICY_CHAIN_MAX do
		local p = policy_of(named)
		if not (p and p.to) then return false end
		named = p.to
		if named == u.queue then return true end
	end
	return false
end

-- The tier aging stops at (0: the queue does not age): aging_max_tier,
-- max_tier by default and at most.
local function aging_max(p)
	local max = tonumber(MAX_TIER_S)
	if p.every == 0 then return 0 end
	if p.agemax >= 0 and p.agemax < max then max = p.agemax end
	return max
end

-- One aging step: a tier more, the same arrival; rescored (aging).
local function policy_age(u)
	u.key = pack(tier_of(u.key) + 1, seq_of(u.key))
	local key = int(u.key)
	user_save(u, key)
	redis.call('ZADD', queue_key(u.queue), key, u.id)
	event('rescored', u.id, u.queue, tier_of(u.key), position(u), false,
	      'aging')
end

-- u moves to its queue's overflow queue with its key, whatever that
-- queue's length; its clocks start there. A free room there takes it at
-- once (matched or offered, with from_queue); else overflowed.
local function policy_overflow(u, p)
	local from = u.queue
	redis.call('ZREM', queue_key(from), u.id)
	clock_leave(u)
	u.queue, u.over = p.to, true
	qnum_incr(from, 'overflowed_total', 1)
	qnum_user_moved(from, u.queue, tier_of(u.key))
	local key = int(u.key)
	user_save(u, key)
	redis.call('ZADD', queue_key(u.queue), key, u.id)
	clock_start(u)
	if not match_user(u, from) then
		event('overflowed', u.id, from, u.queue, tier_of(u.key), position(u))
	end
end

-- The step of waiting user u is due: its deadline (kind 'a' or 'm') was
-- at at. Every aging point up to now that comes before the overflow is a
-- step, one event each while the tier grows, then the overflow if it is
-- due; else its next step (lib/policy.c's csq_policy_act).
local function policy_act(u, kind, at)
	local p = policy_of(u.queue)
	local joined = p and p.clocks and
	               tonumber(redis.call('HGET', clocks_key(), u.id) or '')
	if not joined then
		clock_drop(u.id)
		return
	end
	local overflow_at, limit = math.huge, NOW
	if p.over > 0 then overflow_at = joined + p.over * 1000 end
	if overflow_at < limit then limit = overflow_at end
	if kind == 'a' and at <= limit and p.every > 0 then
		local points = math.floor((limit - at) / (p.every * 1000)) + 1
		local max = aging_max(p)
		while points > 0 and tier_of(u.key) < max do
			policy_age(u)
			points = points - 1
		end
	end
	if overflow_at <= NOW then
		policy_overflow(u, p)
	else
		clock_arm(u.id, p, joined, NOW)
	end
end

-- A late deadline of the reaper (expire.lua), 'm' or 'a', of user id.
local function policy_due(id, kind, at)
	local u = user_load(id)
	if u and u.state == 'waiting' then
		policy_act(u, kind, at)
	else
		clock_drop(id)
	end
end
