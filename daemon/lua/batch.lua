-- The operations of one call: ARGV[11] says how many; each is its name, the
-- number of its arguments, then the arguments. They run in order, each in
-- pcall: an operation that fails (a bug, Redis out of memory) gets
-- { 'ERR', why } and neither its events nor its counters count, while the
-- others stand. Then the counters are written and the events published, in
-- causal order, as one message (below).
--
-- Returns { deadline, Redis time in ms, the last event id (its own last
-- event's, or without events the last one published before it), 1 if the
-- deadline is the true earliest (else the earliest this call set, -1 none),
-- the events' message ('' none: the PUBLISH below, which the daemon that
-- made the call may take from here, sooner), then each operation's reply:
-- how many elements it has, then them }.
--
-- call: KEYS and ARGV as the script's (common.lua), whether Redis
-- runs it as a function or as a script. What belongs to the call is set
-- first; the key names only when the prefix differs from the last call's.
local OUT_SLOTS = 16 -- the reply's presized slots (below)

local function call(KEYS, ARGV)
	if KEYS[1] ~= STATS then
		STATS = KEYS[1]
		P = string.sub(STATS, 1, -6)
		USERS, DEADLINES = P .. 'users', P .. 'deadlines'
		SERVICERS, EVENTS = P .. 'servicers', P .. 'events'
	end
	if ARGV[10] == '' then
		local clock = redis.call('TIME')
		NOW = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
		NOW_S = string.format('%d', NOW)
	else
		NOW, NOW_S = tonumber(ARGV[10]), ARGV[10] -- a test's clock
	end
	-- The limits are parsed again only when their text changes.
	if ARGV[1] ~= SERVICER_TTL_S then
		SERVICER_TTL_S, SERVICER_TTL = ARGV[1], tonumber(ARGV[1])
	end
	if ARGV[2] ~= USER_TTL_S then
		USER_TTL_S, USER_TTL = ARGV[2], tonumber(ARGV[2])
	end
	MAX_TIER_S = ARGV[3] -- read by a queue policy's aging only
	if ARGV[4] ~= MAX_LENGTH_S then
		MAX_LENGTH_S, MAX_LENGTH = ARGV[4], tonumber(ARGV[4])
	end
	for i = 1, 5 do
		local f, v = LIMIT_NAMES[i], ARGV[4 + i]
		if v ~= LIMIT_S[f] then LIMIT_S[f], LIMIT[f] = v, tonumber(v) end
	end
	LIMIT.strategy_s = LIMIT_S.strategy
	base, read, seq, order, deltas, op_deltas = nil, nil, nil, nil, {}, nil
	POLICY_DIGEST = nil -- not known until the counters are read
	events, nevents, soonest, exact = {}, 0, -1, false

	local nops = tonumber(ARGV[11])
	qnum_discard(nops)
	-- The reply, presized: a table that grows is rehashed at every power of
	-- two, and one filled from index 6 first would grow in its hash part.
	-- Redis reads it up to its first nil, so the slots left over are
	-- cleared at the end.
	local out, nout = { 0, 0, 0, 0, '', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, 5
	local at = 12
	for k = 1, nops do
		local name, argc = ARGV[at], tonumber(ARGV[at + 1])
		local before = nevents
		op_deltas, back, refill = nil, nil, nil
		if not OPS[name] then make_op(name) end
		local ok, res = pcall(OPS[name], unpack(ARGV, at + 2, at + 1 + argc))
		at = at + 2 + argc
		if ok then
			qnum_commit()
			if op_deltas then
				for f, d in pairs(op_deltas) do
					deltas[f] = (deltas[f] or 0) + d
				end
			end
		else
			qnum_undo()
			for i = nevents, before + 1, -1 do events[i] = nil end
			nevents = before
			if type(res) == 'table' and res.err then res = res.err end
			res = { 'ERR', name .. ': ' .. tostring(res) }
		end
		-- Flat: Redis converts each table of a reply on its own, at a cost.
		local n = #res
		out[nout + 1] = n
		for i = 1, n do out[nout + 1 + i] = res[i] end
		nout = nout + 1 + n
	end
	op_deltas = nil
	-- The queues' numbers, in one write each; as the counters', a write
	-- refused (Redis out of memory) leaves them as they were.
	if QS.dirty[1] or next(QS.gone) then pcall(qnum_flush) end

	-- The counters, in one write. A failed operation keeps the sequences and
	-- orders it took: its user may have been written. If this write fails,
	-- Redis was out of memory and the call has written nothing (Redis lets a
	-- script that has written go on writing), so nothing holds them, and no
	-- operation succeeded with events or deltas.
	local last = 0
	if nevents > 0 or next(deltas) then counters() end
	if base then
		local set, n = {}, 0
		local function put(f, v)
			set[n + 1], set[n + 2] = f, int(v)
			n = n + 2
		end
		if seq and seq ~= base.seq then put('seq', seq) end
		if order and order ~= base.order then put('order', order) end
		for f, d in pairs(deltas) do
			if d ~= 0 then put(f, base[f] + d) end
		end
		-- A state written before waiting was kept: its derived value,
		-- once (common.lua).
		if not read[COUNTER_AT.waiting] and (deltas.waiting or 0) == 0 then
			put('waiting', base.waiting)
		end
		if nevents > 0 then
			last = base.event_id + nevents
			put('event_id', last)
		end
		if n > 0 then pcall(redis.call, 'HSET', STATS, unpack(set)) end
	end
	-- A call without events answers the last id published before it: the
	-- daemon holds its replies until it has seen that far, so that a read
	-- of what another daemon's call changed never beats that call's events.
	if nevents == 0 then
		if base then
			last = base.event_id
		else
			last = tonumber(redis.call('HGET', STATS, 'event_id') or '0')
		end
	end
	-- The message, in MessagePack: the last event's id, the time, then the
	-- events (their ids are the ones up to the last, in order).
	local msg = ''
	if nevents > 0 then
		msg = cmsgpack.pack(last, NOW, events)
		redis.call('PUBLISH', EVENTS, msg)
	end
	for i = nout + 1, OUT_SLOTS do out[i] = nil end
	out[5] = msg
	out[1] = soonest
	if exact then out[1] = earliest() end
	out[2] = NOW
	out[3] = last
	out[4] = exact and 1 or 0
	return out
end
