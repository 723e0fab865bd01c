-- POLICY i n name entry writer: the queue policies of a daemon's
-- `queues` (engine_redis.c), one operation each, all in one call: the
-- last (i = n - 1; n = 0 sends one with an empty name) puts the set in
-- force in place of the one before, whoever wrote it (the last writer
-- wins), as lib/policy.c's csq_set_policies: each queue whose strategy
-- changed has its free-room index scored again, and each whose clocks
-- changed has the clocks of its waiting users armed anew, measured from
-- when they joined its line (from now for those who had none). One walk
-- of those lines, once per change. The same set again changes nothing.
-- Replies 1 when the set replaced a different one that another writer
-- (another daemon, or this one before a restart) had put in force, for
-- the daemon's log; else 0.
OPS.policy = function(i, n, name, entry, writer)
	if i == '0' then POLICY.staged = {} end
	if name ~= '' then POLICY.staged[name] = entry end
	if tonumber(i) < tonumber(n) - 1 then return reply('OK', 0) end
	local staged = POLICY.staged or {}
	POLICY.staged = false

	local names, parts = {}, {}
	for q in pairs(staged) do names[#names + 1] = q end
	table.sort(names)
	for k, q in ipairs(names) do parts[k] = q .. ' ' .. staged[q] end
	local digest = ''
	if names[1] then digest = redis.sha1hex(table.concat(parts, '\n')) end
	-- The same set again (a reconnect, another daemon's start) reads
	-- one field, and not the counters, whose first read in a state
	-- written before would write them.
	local old = string.match(redis.call('HGET', STATS, 'strategy') or '',
	                         ' (%x+)$') or ''
	if old == digest then return reply('OK', 0) end
	counters()
	local replaced = 0
	if old ~= '' and redis.call('HGET', STATS, 'policy_by') ~= writer then
		replaced = 1
	end

	local was, flat = {}, redis.call('HGETALL', policy_key())
	for k = 1, #flat, 2 do was[flat[k]] = policy_parse(flat[k + 1]) end
	redis.call('DEL', policy_key())
	for k = 1, #names, 256 do
		local set = {}
		for j = k, math.min(k + 255, #names) do
			set[#set + 1] = names[j]
			set[#set + 1] = staged[names[j]]
		end
		redis.call('HSET', policy_key(), unpack(set))
	end
	POLICY_DIGEST = digest ~= '' and digest
	read[COUNTER_AT.strategy] = policy_tag(POLICY_DIGEST)
	redis.call('HSET', STATS, 'strategy', read[COUNTER_AT.strategy],
	           'policy_by', writer)

	-- Every queue of either set, in name order.
	local queues, seen = {}, {}
	for _, set in ipairs({ was, staged }) do
		for q in pairs(set) do
			if not seen[q] then
				seen[q] = true
				queues[#queues + 1] = q
			end
		end
	end
	table.sort(queues)
	for _, q in ipairs(queues) do
		local before, now = was[q] or nil, policy_of(q)
		-- A queue a policy gains or loses is made, or goes with its
		-- numbers if nothing else holds it (qnum_flush), as libcsq's.
		if not before ~= not now then qn_mark(qn(q), 'users') end
		local st_before = before and before.strategy or LIMIT.strategy_s
		if st_before ~= queue_strategy(q) then
			local fkey = free_key(q)
			for _, id in ipairs(redis.call('ZRANGE', fkey, 0, -1)) do
				local s = servicer_load(id)
				if s then redis.call('ZADD', fkey, free_score(s, q), id) end
			end
		end
		local cb, cn = before and before.clocks or false,
		               now and now.clocks or false
		if cb ~= cn or (cn and (before.over ~= now.over or
		    before.to ~= now.to or before.every ~= now.every or
		    before.agemax ~= now.agemax)) then
			for _, id in ipairs(redis.call('ZRANGE', queue_key(q), 0, -1)) do
				if not (now and now.clocks) then
					clock_drop(id)
				else
					local joined = tonumber(
					    redis.call('HGET', clocks_key(), id) or '')
					if not joined then
						joined = NOW
						redis.call('HSET', clocks_key(), id, NOW_S)
					end
					clock_arm(id, now, joined, NOW)
				end
			end
		end
	end
	return reply('OK', replaced)
end
