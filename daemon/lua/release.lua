-- RELEASE room, as the servicer and the room's index (the daemon parsed
-- the room id). The index comes as the daemon printed it, plain decimal,
-- which is also how S2R names the room. An offer stands, a wrap-up runs
-- on: neither is a conversation (0).
OPS.release = function(sid, idx_s)
	local s, idx, uid = room_find(sid, idx_s)
	if not s then return reply('NOTFOUND') end
	if not uid or in_wrapup(uid) then return reply('OK', 0) end
	if not room_release(s, idx, uid, 'servicer') then
		return reply('OK', 0)
	end
	return reply('OK', 1)
end
