-- DECLINE room (servicer, index): the offered user goes back to its old
-- place and on to the next free servicer; this one opens its retry
-- window. 0 when the room holds no offer.
OPS.decline = function(sid, idx_s)
	local s, idx, uid = room_find(sid, idx_s)
	if not s then return reply('NOTFOUND') end
	local u = uid and not in_wrapup(uid) and user_load(uid)
	if not u or u.state ~= 'offered' then return reply('OK', 0) end
	stat('offers_declined_total', 1)
	offer_decline(s, idx, u, 'servicer')
	settle()
	return reply('OK', 1)
end
