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
		-- Its servicer's hash is gone (ghost_remove): its users go back
		-- in line, and this one leaves from there; or, if no room held
		-- it, it leaves its room all the same.
		local back = ghost_remove(u.servicer) or {}
		local w = user_load(id)
		if w.state == 'waiting' then
			user_abandon(w, 'leave')
		else
			event(EV.released, id, u.queue, u.servicer, u.servicer, u.room,
			      'user')
			user_free(id, false)
		end
		rematch(back)
	end
	return reply('OK', 1)
end
