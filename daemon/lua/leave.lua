-- LEAVE user: a waiting user abandons; an assigned user's room is freed.
OPS.leave = function(id)
	local u = user_load(id)
	if not u then return reply('OK', 0) end
	if u.state == 'waiting' then
		user_abandon(u, 'leave')
	else
		room_release(servicer_load(u.servicer), u.room, u.id, 'user')
	end
	return reply('OK', 1)
end
