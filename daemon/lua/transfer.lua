-- TRANSFER room (servicer, index) queue: the conversation ends as by
-- RELEASE (released by transfer, a wrap-up if any), and the user goes
-- into the queue with its order key (tier and arrival), its TTL
-- restarted, whatever the queue's length; transferred, then it is
-- matched before the room it left is refilled. Replies its state, as
-- WHERE's. NOCONV when the room holds no conversation (lib/transfer.c).
-- With PREFER (prefer, prefer_s; '' when not given) it waits in the
-- servicer's prefer line instead, when that one may hold the window.
OPS.transfer = function(sid, idx_s, to, prefer, prefer_s)
	local s, idx, uid = room_find(sid, idx_s)
	if not s then return reply('NOTFOUND') end
	local u = uid and not in_wrapup(uid) and user_load(uid)
	if not u or u.state ~= 'assigned' then return reply('NOCONV') end
	local from = u.queue
	unaccount(s)
	event('released', uid, from, sid, idx, 'transfer')
	qnum_room_end(from, uid, u.since, s.wrapup)
	if room_after(s, idx) then
		redis.call('HDEL', rooms_key(sid), idx_s)
		s.active = s.active - 1
		settle_refill(sid)
	end
	account(s)
	servicer_save(s)
	-- The agent's choice: a later ENQUEUE does not move it back.
	u.queue, u.moved, u.state = to, true, 'waiting'
	local want = prefer ~= '' and prefer_target(prefer, to)
	if want then
		prefer_insert(u, want, NOW + tonumber(prefer_s) * 1000)
	else
		redis.call('ZADD', queue_key(to), int(u.key), uid)
		clock_start(u)
	end
	user_save(u)
	qnum_user_moved(from, to, tier_of(u.key))
	stat('waiting', 1)
	user_deadline(u)
	stat('transferred_total', 1)
	event('transferred', uid, from, to, tier_of(u.key), sid, idx, position(u))
	settle_back(u)
	settle()
	return reply('OK', user_info(user_load(uid)))
end
