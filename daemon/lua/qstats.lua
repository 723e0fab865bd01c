-- QSTATS queue: its line, servicers and numbers (protocol-v2 section 6,
-- lib/qstats.c's csq_qstats_fill); QSTATS '': those of every queue that
-- exists, sorted by name (the /metrics scrape: one call). Flat, per queue:
-- name, waiting, oldest_wait_ms, eta_ms, servicers, free_rooms, matched,
-- leave, timeout, overflowed, wait_sum, service_level, outcomes (in the
-- ring) and those within the level; the daemon derives the rest. A read:
-- nothing is written.

-- The free rooms that would take a user of q: those of the servicers in
-- its free-room index (ready, a free room, no retry window).
local function free_rooms(q)
	local n = 0
	for _, id in ipairs(redis.call('ZRANGE', free_key(q), 0, -1)) do
		local h = redis.call('HMGET', servicer_key(id), 'status', 'capacity',
		                     'active', 'retry')
		local free = (tonumber(h[2]) or 0) - (tonumber(h[3]) or 0)
		if h[1] == 'ready' and free > 0 and (h[4] or '0') == '0' then
			n = n + free
		end
	end
	return n
end

local function qstats_of(q, out)
	local e = qn(q)
	local level, within = QS.qn_within_now(e)
	local total = e.matched + e.leave + e.timeout
	if total > 1000 then total = 1000 end
	local len = redis.call('ZCARD', queue_key(q))
	local n = #out
	out[n + 1] = q
	out[n + 2] = len + queue_preferring(q)
	out[n + 3] = oldest_wait(q)
	out[n + 4] = est_line(q, len + 1, 0)
	out[n + 5] = e.servicers
	out[n + 6] = free_rooms(q)
	out[n + 7] = e.matched
	out[n + 8] = e.leave
	out[n + 9] = e.timeout
	out[n + 10] = e.overflowed_total
	out[n + 11] = e.wait_sum
	out[n + 12] = level
	out[n + 13] = total
	out[n + 14] = within
end

OPS.qstats = function(q)
	local out = reply('OK')
	if q ~= '' then
		qstats_of(q, out)
		return out
	end
	local names = redis.call('SMEMBERS', P .. 'qstats')
	local seen = {}
	for _, name in ipairs(names) do seen[name] = true end
	if not seen.default then names[#names + 1] = 'default' end
	table.sort(names)
	for _, name in ipairs(names) do qstats_of(name, out) end
	return out
end
