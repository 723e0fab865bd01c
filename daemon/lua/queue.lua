-- QUEUE q offset count. Flat: user, tier, waited.
OPS.queue = function(q, offset, count)
	count = tonumber(count)
	local out = reply('OK')
	if count > 0 then
		local first = tonumber(offset)
		local ids = redis.call('ZRANGE', queue_key(q), first,
		                       first + count - 1)
		-- An id whose record is gone (deleted behind csq's back) is
		-- left out rather than failing the whole page.
		for _, id in ipairs(ids) do
			local u = user_load(id)
			if u then
				out[#out + 1] = id
				out[#out + 1] = tier_of(u.key)
				out[#out + 1] = elapsed(u.arrival)
			end
		end
	end
	return out
end
