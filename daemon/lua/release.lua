-- RELEASE room, as the servicer and the room's index (the daemon parsed
-- the room id).
OPS.release = function(sid, idx)
	local s = servicer_load(sid)
	idx = tonumber(idx)
	if not s or not room_exists(s, idx) then return reply('NOTFOUND') end
	local uid = redis.call('HGET', rooms_key(s.id), int(idx))
	if not uid then return reply('OK', 0) end
	room_release(s, idx, uid, 'servicer')
	return reply('OK', 1)
end
