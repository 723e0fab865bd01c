-- ROOMS servicer: its rooms in index order, those below its capacity and
-- busy ones above it; ROOMS '': every servicer's, by servicer id (the
-- admin view's snapshot). Flat: servicer, index, state, user, since_ms of
-- each room; a room is free, offered or assigned (its user's record gives
-- which, and since when; a record that does not say so, changed behind
-- csq's back, gives assigned and 0), or in wrap-up ("!<start>" in S2R).
local function rooms_of(s, out)
	local busy, top = {}, s.capacity - 1
	local flat = redis.call('HGETALL', rooms_key(s.id))
	for i = 1, #flat, 2 do
		local idx = tonumber(flat[i])
		busy[idx] = flat[i + 1]
		if idx > top then top = idx end
	end
	for idx = 0, top do
		local uid = busy[idx]
		if uid or idx < s.capacity then
			local since, state = 0, 'free'
			if in_wrapup(uid) then
				state, since = 'wrapup', elapsed(tonumber(string.sub(uid, 2)))
				uid = nil
			elseif uid then
				local rec = redis.call('HGET', USERS, uid) or ''
				local st, sid, room, at = string.match(rec,
				    '^%S+ %d+ %d+ %d+ (%a+)%+?%^? (%S+) (%d+) (%d+)$')
				state = st == 'offered' and 'offered' or 'assigned'
				if sid == s.id and tonumber(room) == idx then
					since = elapsed(tonumber(at))
				end
			end
			out[#out + 1] = s.id
			out[#out + 1] = idx
			out[#out + 1] = state
			out[#out + 1] = uid or ''
			out[#out + 1] = since
		end
	end
end

OPS.rooms = function(id)
	local out = reply('OK')
	if id ~= '' then
		local s = servicer_load(id)
		if not s then return reply('NOTFOUND') end
		rooms_of(s, out)
		return out
	end
	for _, sid in ipairs(redis.call('ZRANGE', SERVICERS, 0, -1)) do
		local s = servicer_load(sid)
		if s then rooms_of(s, out) end
	end
	return out
end
