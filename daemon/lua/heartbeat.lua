-- HEARTBEAT servicer [CAPACITY n] [TTL s] [OFFER s] [WRAPUP s] [QUEUES
-- q,...]: each option as a flag ('1' given) and a value, then how many
-- queues (0: keep them) and the queues.
OPS.heartbeat = function(id, has_capacity, capacity, has_ttl, ttl, has_offer,
                         offer, has_wrapup, wrapup, nq, ...)
	nq = tonumber(nq)
	local qs, seen = {}, {}
	for i = 1, nq do
		local q = select(i, ...)
		if not seen[q] then
			seen[q] = true
			qs[#qs + 1] = q
		end
	end

	local s = servicer_load(id)
	local login = s == nil
	if login then
		ghost_remove(id)
		s = { id = id, status = 'ready', capacity = 1, ttl = SERVICER_TTL,
		      active = 0, queues = { 'default' },
		      last_order = order_next(),
		      last_ms = NOW, offer = LIMIT.offer, wrapup = LIMIT.wrapup,
		      missed = 0, retry = 0, prefers = 0 }
		redis.call('ZADD', SERVICERS, 0, id)
		stat('servicers', 1)
	else
		unaccount(s)
	end
	if has_capacity == '1' then s.capacity = tonumber(capacity) end
	-- The windows of the queues it drops end first (§5).
	if nq > 0 and not login then prefer_queues_change(s, qs) end
	if nq > 0 then s.queues = qs end
	if has_ttl == '1' then s.ttl = tonumber(ttl) end
	-- Offers and wrap-ups under way keep the length they started with.
	if has_offer == '1' then s.offer = tonumber(offer) end
	if has_wrapup == '1' then s.wrapup = tonumber(wrapup) end
	deadline_set('s:' .. id, NOW + s.ttl * 1000)
	if login then
		event('servicer_up', id, s.capacity, table.concat(s.queues, ','))
	end
	-- The users whose windows ended go first, as any put back; then s
	-- fills its rooms (csq_heartbeat's settle).
	local ended = back
	if ended then settle_refill(id) else fill(s) end
	account(s)
	servicer_save(s)
	settle()
	if ended then s = servicer_load(id) end
	return reply('OK', s.status, s.capacity, s.active, s.ttl)
end
