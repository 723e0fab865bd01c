-- The reaper: acts on the deadlines that have passed, at most limit of
-- them, as lib/csq.c's csq_expire does: first the waiting users who time
-- out, then the lost servicers, their users back in line, and only then
-- are those users matched, so that none goes into a room of a servicer
-- whose deadline has passed too. Each kind goes in the set's order, by
-- time, then by id. Several daemons may run it at once; the second finds
-- nothing. Returns how many it handled.
--
-- A pass over more deadlines than limit takes several calls (a script
-- blocks Redis while it runs). The users that a call puts back in line
-- wait in {p}:rematch, scored by their order key, while passed deadlines
-- remain; the call that leaves none matches them all, best first, as
-- csq_expire does in one pass. Matched sooner, one lost servicer's user
-- could go into the free room of another whose deadline had passed but
-- whose call had not come: requeued again a moment later, counted twice.
-- A call that stashes users always leaves a passed deadline behind, so
-- some daemon's reaper comes back for them, even if this one dies. A user
-- who would take a free room between two such calls (a new user, a move,
-- a LOGOUT's), and a servicer whose free rooms would be filled, wait too
-- (reap_defer in common.lua): the last call matches them after
-- the stashed ones, in the order they came.
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
	local stash = P .. 'rematch'
	if #due == tonumber(limit) and deadline_passed() then
		-- Under way, whether or not this call put anyone back.
		stat('reaping', 1 - counter('reaping'))
		for _, u in ipairs(back) do
			redis.call('ZADD', stash, int(u.key), u.id)
		end
	else
		stat('reaping', -counter('reaping'))
		local flat = redis.call('ZRANGE', stash, 0, -1, 'WITHSCORES')
		if flat[1] then
			redis.call('DEL', stash)
			for i = 1, #flat, 2 do
				back[#back + 1] = { id = flat[i], key = tonumber(flat[i + 1]) }
			end
		end
		rematch(back)
		local late = redis.call('LRANGE', stash .. ':late', 0, -1)
		if late[1] then
			redis.call('DEL', stash .. ':late')
			for _, e in ipairs(late) do
				local id = string.sub(e, 3)
				if string.sub(e, 1, 1) == 'u' then
					local u = user_load(id)
					if u and u.state == 'waiting' then match_user(u) end
				else
					local s = servicer_load(id)
					if s then
						unaccount(s)
						fill(s)
						account(s)
						servicer_save(s)
					end
				end
			end
		end
	end
	exact = true
	return reply('OK', #due)
end
