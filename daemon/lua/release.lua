-- RELEASE room, as the servicer and the room's index (the daemon parsed
-- the room id). The index comes as the daemon printed it, plain decimal,
-- which is also how S2R names the room.
OPS.release = function(sid, idx_s)
	local s = servicer_load(sid)
	local idx = tonumber(idx_s)
	if not s or not room_exists(s, idx) then return reply('NOTFOUND') end
	local uid = redis.call('HGET', rooms_key(s.id), idx_s)
	if not uid then return reply('OK', 0) end
	room_release(s, idx, uid, 'servicer')
	return reply('OK', 1)
end
