-- QUEUES [queue]: the queues that exist, sorted by name (those with a
-- waiting user or a servicer serving them, and the default queue), or the
-- one named. Flat: the last event id a reader of this state has seen
-- (event_id_now), then name, waiting, oldest_wait_ms and the user who has
-- waited that long ('' for none) of each.
--
-- A line's key exists while someone waits in it, and no index lists the
-- lines: they are found by SCAN, whose cost is that of the database's
-- keys (csq's are a few per servicer and queue: docs/design.md). An admin
-- command, never on the path of a user or a servicer.
local function queues_waiting(found, seen)
	local prefix = P .. 'queue:'
	local pattern = string.gsub(prefix, '[%*%?%[%]\\]', '\\%0') .. '*'
	local cursor = '0'
	repeat
		local r = redis.call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000)
		cursor = r[1]
		for _, key in ipairs(r[2]) do
			local q = string.sub(key, #prefix + 1)
			if not seen[q] then
				seen[q] = true
				found[#found + 1] = q
			end
		end
	until cursor == '0'
end

local function queues_served(found, seen)
	for _, id in ipairs(redis.call('ZRANGE', SERVICERS, 0, -1)) do
		local qs = redis.call('HGET', servicer_key(id), 'queues')
		for q in string.gmatch(qs or '', '[^,]+') do
			if not seen[q] then
				seen[q] = true
				found[#found + 1] = q
			end
		end
	end
end

-- The longest wait in q's line, and whose: the user who came first (the
-- lowest sequence) is the first of its tier (the line is in tier order,
-- then arrival order), so one lookup per tier present rather than a walk
-- of the line.
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

OPS.queues = function(q)
	local names = { q }
	if q == '' then
		local seen = { default = true }
		names = { 'default' }
		queues_served(names, seen)
		queues_waiting(names, seen)
		table.sort(names)
	end
	local out = reply('OK', event_id_now())
	for _, name in ipairs(names) do
		local wait, who = oldest_wait(name)
		out[#out + 1] = name
		out[#out + 1] = redis.call('ZCARD', queue_key(name))
		out[#out + 1] = wait
		out[#out + 1] = who
	end
	return out
end
