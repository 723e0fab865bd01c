-- LEAVE user: a waiting or offered user abandons; an assigned user's
-- conversation ends (released by the user).
OPS.leave = function(id)
	local u = user_load(id)
	if not u then return reply('OK', 0) end
	if u.state ~= 'assigned' then
		user_abandon(u, 'leave')
		settle()
		return reply('OK', 1)
	end
	local s = servicer_load(u.servicer)
	if s then
		room_release(s, u.room, u.id, 'user')
	else
		-- Its servicer's hash is gone (keys changed behind csq's back):
		-- it leaves its room as from any other, released by the user,
		-- and what is left of the servicer is declared lost, its other
		-- users back in line (ghost_remove).
		local rk = rooms_key(u.servicer)
		if redis.call('HGET', rk, int(u.room)) == id then
			redis.call('HDEL', rk, int(u.room))
			stat('rooms_busy', -1)
		end
		event('released', id, u.queue, u.servicer, u.room, 'user')
		qnum_taken(id)
		user_free(id, false, u.queue)
		ghost_remove(u.servicer)
		settle()
	end
	return reply('OK', 1)
end
