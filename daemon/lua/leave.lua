-- LEAVE user: a waiting user abandons; an assigned user's room is freed.
OPS.leave = function(id)
	local u = user_load(id)
	if not u then return reply('OK', 0) end
	local s = u.state == 'assigned' and servicer_load(u.servicer)
	if u.state == 'waiting' then
		user_abandon(u, 'leave')
	elseif s then
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
		user_free(id, false)
		rematch(ghost_remove(u.servicer) or {})
	end
	return reply('OK', 1)
end
