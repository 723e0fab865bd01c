-- The reaper: acts on the deadlines that have passed, earliest first, at
-- most limit of them; several daemons may run it at once, the second
-- finds nothing. Returns how many it handled.
OPS.expire = function(limit)
	limit = tonumber(limit)
	local n = 0
	while n < limit do
		local r = redis.call('ZRANGE', DEADLINES, 0, 0, 'WITHSCORES')
		if not r[1] or tonumber(r[2]) > NOW then break end
		deadline_clear(r[1])
		local id = string.sub(r[1], 3)
		if string.sub(r[1], 1, 1) == 'u' then
			local u = user_load(id)
			if u and u.state == 'waiting' then user_abandon(u, 'timeout') end
		else
			local s = servicer_load(id)
			if s then
				servicer_remove(s, 'lost')
			else
				local back = ghost_remove(id)
				if back then rematch(back) end
			end
		end
		n = n + 1
	end
	exact = true
	return reply('OK', n)
end
