-- STATS: the counters, in the order of struct csq_stats; enqueued_total is
-- the sequence and waiting is derived (common.lua). What earlier operations
-- of this call changed is not written yet: it is added here.
OPS.stats = function()
	local fields = { 'seq', 'servicers', 'rooms_busy', 'rooms_free',
	                 'matched_total', 'abandoned_total', 'requeued_total',
	                 'servicers_lost_total' }
	local h = redis.call('HMGET', STATS, unpack(fields))
	for i = 1, 8 do
		h[i] = tonumber(h[i] or '0') + stat_pending(fields[i])
	end
	if seq then h[1] = seq end
	local enqueued, matched, abandoned, requeued = h[1], h[5], h[6], h[7]
	return reply('OK', enqueued + requeued - matched - abandoned,
	             h[2], h[3], h[4], enqueued, matched, abandoned, requeued, h[8])
end
