-- READY room (servicer, index): its wrap-up ends now, and the room takes
-- the next user. 0 when the room is not in wrap-up.
OPS.ready = function(sid, idx_s)
	local s, idx, mark = room_find(sid, idx_s)
	if not s then return reply('NOTFOUND') end
	if not in_wrapup(mark) then return reply('OK', 0) end
	room_ready(s, idx)
	settle()
	return reply('OK', 1)
end
