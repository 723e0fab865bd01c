-- The reaper: acts on the deadlines that have passed, at most limit of
-- them, as lib/csq.c's csq_expire does: first the waiting users who time
-- out, then the lost servicers, their users back in line, and only then
-- are those users matched, so that none goes into a room of a servicer
-- whose deadline has passed too. Each kind goes in the set's order, by
-- time, then by id. Several daemons may run it at once; the second finds
-- nothing. Returns how many it handled.
OPS.expire = function(limit)
	local due = redis.call('ZRANGEBYSCORE', DEADLINES, '-inf', NOW_S,
	                       'LIMIT', 0, limit)
	local lost, back = {}, {}
	for _, m in ipairs(due) do
		deadline_clear(m)
		local id = string.sub(m, 3)
		if string.sub(m, 1, 1) == 'u' then
			local u = user_load(id)
			if u and u.state == 'waiting' then user_abandon(u, 'timeout') end
		else
			lost[#lost + 1] = id
		end
	end
	for _, id in ipairs(lost) do
		local s = servicer_load(id)
		local b
		if s then b = servicer_drop(s, 'lost') else b = ghost_remove(id) end
		for _, u in ipairs(b or {}) do back[#back + 1] = u end
	end
	rematch(back)
	exact = true
	return reply('OK', #due)
end
