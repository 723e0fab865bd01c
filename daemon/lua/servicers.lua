-- SERVICERS: flat id, status, capacity, active, idle_ms, queues ("a,b,c"),
-- offer, wrapup, missed; ordered by id (the set's scores are all 0, so its
-- order is the ids' byte order).
OPS.servicers = function()
	-- Built in place: unpack() would fail beyond some thousands of values.
	local out = reply('OK')
	for _, id in ipairs(redis.call('ZRANGE', SERVICERS, 0, -1)) do
		local h = redis.call('HMGET', servicer_key(id), 'status', 'capacity',
		                     'active', 'last_ms', 'queues', 'offer', 'wrapup',
		                     'missed')
		out[#out + 1] = id
		out[#out + 1] = h[1]
		out[#out + 1] = tonumber(h[2])
		out[#out + 1] = tonumber(h[3])
		out[#out + 1] = elapsed(tonumber(h[4]))
		out[#out + 1] = h[5] or ''
		out[#out + 1] = tonumber(h[6] or '0')
		out[#out + 1] = tonumber(h[7] or '0')
		out[#out + 1] = tonumber(h[8] or '0')
	end
	return out
end
