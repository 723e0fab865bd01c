-- QUEUES [queue]: the queues that exist, sorted by name (those with a
-- waiting user or a servicer serving them, and the default queue), or the
-- one named. Flat: the last event id a reader of this state has seen
-- (event_id_now), then name, waiting, oldest_wait_ms, the user who has
-- waited that long ('' for none) and how many of its waiting users are
-- held for a preferred servicer, of each.
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

-- The queues with a policy (protocol-v2 §4) exist while it is in force.
local function queues_with_policy(found, seen)
	for _, q in ipairs(redis.call('HKEYS', P .. 'policy')) do
		if not seen[q] then
			seen[q] = true
			found[#found + 1] = q
		end
	end
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

OPS.queues = function(q)
	local names = { q }
	if q == '' then
		local seen = { default = true }
		names = { 'default' }
		queues_served(names, seen)
		queues_with_policy(names, seen)
		queues_waiting(names, seen)
		table.sort(names)
	end
	local out = reply('OK', event_id_now())
	for _, name in ipairs(names) do
		local wait, who = oldest_wait(name)
		out[#out + 1] = name
		-- As QLEN counts them: held for a preferred servicer too, and
		-- how many of them are (the admin API's preferring).
		local held = tonumber(redis.call('HGET', P .. 'preferring', name) or
		                      '0')
		out[#out + 1] = redis.call('ZCARD', queue_key(name)) + held
		out[#out + 1] = wait
		out[#out + 1] = who
		out[#out + 1] = held
	end
	return out
end
