-- ACCEPT room (servicer, index): the offer in it becomes a conversation,
-- matched with offered_ms; the servicer's missed offers start again. 0
-- when the room holds no offer.
OPS.accept = function(sid, idx_s)
	local s, idx, uid = room_find(sid, idx_s)
	if not s then return reply('NOTFOUND') end
	local u = uid and not in_wrapup(uid) and user_load(uid)
	if not u or u.state ~= 'offered' then return reply('OK', 0) end
	-- An assigned user has no TTL, and its room no deadline.
	deadline_clear('o:' .. room_name(sid, idx))
	if u.ttl > 0 then deadline_clear('u:' .. uid) end
	local offered_ms = elapsed(u.since)
	-- The room was taken at the offer: the hold time counts from it.
	redis.call('HSET', P .. 'taken', uid, int(u.since))
	u.state = 'assigned'
	u.since = NOW
	user_save(u)
	if s.missed ~= 0 then
		s.missed = 0
		servicer_save(s)
	end
	stat('matched_total', 1)
	qnum_matched(u.queue, elapsed(u.arrival))
	event('matched', u.id, u.queue, tier_of(u.key), sid, idx,
	      elapsed(u.arrival), false, offered_ms)
	return reply('OK', 1)
end
