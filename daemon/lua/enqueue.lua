-- ENQUEUE user [QUEUE q] [TIER t] [TTL s]: each option empty when it is
-- not given.
OPS.enqueue = function(id, queue, tier_arg, ttl_arg)
	local q = 'default'
	if queue ~= '' then q = queue end
	local qkey = queue_key(q)
	local len = redis.call('ZCARD', qkey)
	local max = queue_max_length(q)

	-- A new user, the usual case: its record is written with HSETNX,
	-- which says whether the id was new, and then it joins the line.
	local sequence = len < max and seq_next()
	local refused
	if sequence then
		local tier, ttl, ttl_s = 0, USER_TTL, USER_TTL_S
		if tier_arg ~= '' then tier = tonumber(tier_arg) end
		if ttl_arg ~= '' then ttl, ttl_s = tonumber(ttl_arg), ttl_arg end
		local u = { id = id, queue = q, key = pack(tier, sequence),
		            arrival = NOW, ttl = ttl, state = 'waiting',
		            fresh = true }
		local key = int(u.key)
		local created = redis.pcall('HSETNX', USERS, id,
		                            user_record(u, key, NOW_S, ttl_s))
		if created == 1 then
			qnum_user_new(q, tier)
			redis.call('ZADD', qkey, key, id)
			stat('waiting', 1)
			-- A new user has no deadline yet: only set one.
			if ttl > 0 then deadline_set('u:' .. id, NOW + ttl * 1000) end
			if match_user(u) then return reply('OK', user_info(u)) end
			clock_start(u)
			-- Tier 0 packs the highest prefix and a new user the highest
			-- sequence: such a user is last in line, and its rank needs
			-- no ZRANK.
			local pos = len + 1
			if tier > 0 then pos = position(u) end
			event('queued', id, q, tier, pos)
			return reply('OK', user_info(u, pos))
		end
		-- Not new, or Redis refused the write (out of memory): the
		-- sequence goes back, and a user who exists is answered below,
		-- which for one in a room writes nothing.
		seq_unused()
		if type(created) == 'table' then refused = created end
	end

	local u = user_load(id)
	if not u then
		if refused then error(refused) end
		if len >= max then return reply('FULL') end
		return reply('EXHAUSTED')
	end
	-- In a room: its assignment back, nothing changes.
	if u.state == 'assigned' then
		return reply('OK', user_info(u))
	end
	-- Offered: out of line until the offer ends; only its TTL.
	if u.state == 'offered' then
		if ttl_arg ~= '' then
			u.ttl = tonumber(ttl_arg)
			user_save(u)
		end
		user_deadline(u)
		return reply('OK', user_info(u))
	end
	-- A transfer chose its queue, or it overflowed from the queue named:
	-- a frontend that repeats its ENQUEUE must not pull it back.
	if queue == '' or u.moved or policy_overflowed_from(u, q) then
		q = u.queue
	end
	-- (len and max are q's when q is given.)
	if q ~= u.queue and len >= max then return reply('FULL') end
	if ttl_arg ~= '' then u.ttl = tonumber(ttl_arg) end
	user_deadline(u)
	local tier = tier_of(u.key)
	if tier_arg ~= '' then tier = tonumber(tier_arg) end
	-- A new tier re-scores in place, a new queue moves it; both keep the
	-- arrival. A move to a queue with a free room is a match, told to
	-- the queue it left too. A move is a return to a line: the clocks of
	-- the new one start.
	if q ~= u.queue or tier ~= tier_of(u.key) then
		local from = u.queue
		redis.call('ZREM', queue_key(from), id)
		if from ~= q then
			clock_leave(u)
			u.over = false
		end
		u.key = pack(tier, seq_of(u.key))
		u.queue = q
		local key = int(u.key)
		user_save(u, key)
		redis.call('ZADD', queue_key(q), key, id)
		local moved = from ~= q and from
		if moved then qnum_user_moved(from, q, tier) end
		if moved then clock_start(u) end
		if not match_user(u, moved) then
			event('rescored', id, q, tier, position(u), moved)
		end
	elseif ttl_arg ~= '' then
		user_save(u)
	end
	return reply('OK', user_info(u))
end
