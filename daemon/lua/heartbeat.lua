-- HEARTBEAT servicer [CAPACITY n] [TTL s] [QUEUES q,...]: capacity and TTL
-- as a flag ('1' given) and a value, then how many queues (0: keep them)
-- and the queues.
OPS.heartbeat = function(id, has_capacity, capacity, has_ttl, ttl, nq, ...)
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
	local back
	if login then
		back = ghost_remove(id)
		s = { id = id, status = 'ready', capacity = 1, ttl = SERVICER_TTL,
		      active = 0, queues = { 'default' },
		      last_order = order_next(),
		      last_ms = NOW }
		redis.call('ZADD', SERVICERS, 0, id)
		stat('servicers', 1)
	else
		unaccount(s)
	end
	if has_capacity == '1' then s.capacity = tonumber(capacity) end
	if nq > 0 then s.queues = qs end
	if has_ttl == '1' then s.ttl = tonumber(ttl) end
	deadline_set('s:' .. id, NOW + s.ttl * 1000)
	if login then
		event('servicer_up', id, s.capacity, table.concat(s.queues, ','))
	end
	fill(s)
	account(s)
	servicer_save(s)
	if back then rematch(back) end
	return reply('OK', s.status, s.capacity, s.active, s.ttl)
end
