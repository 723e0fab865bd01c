-- QUEUE q offset count. Flat: user, tier, waited.
OPS.queue = function(q, offset, count)
	count = tonumber(count)
	local out = reply('OK')
	if count > 0 then
		local first = tonumber(offset)
		local ids = redis.call('ZRANGE', queue_key(q), first,
		                       first + count - 1)
		for _, id in ipairs(ids) do
			local h = redis.call('HMGET', user_key(id), 'key', 'arrival')
			out[#out + 1] = id
			out[#out + 1] = tier_of(tonumber(h[1]))
			out[#out + 1] = elapsed(tonumber(h[2]))
		end
	end
	return out
end
