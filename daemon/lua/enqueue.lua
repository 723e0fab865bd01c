-- ENQUEUE user [QUEUE q] [TIER t] [TTL s]: each option as a flag ('1'
-- given, '0' not) and its value.
OPS.enqueue = function(id, has_queue, queue, has_tier, tier_arg, has_ttl,
                       ttl_arg)
	local u = user_load(id)

	if u then
		-- In a room: its assignment back, nothing changes.
		if u.state == 'assigned' then
			return reply('OK', user_info(u))
		end
		local q = u.queue
		if has_queue == '1' then q = queue end
		if q ~= u.queue and
		   redis.call('ZCARD', queue_key(q)) >= MAX_LENGTH then
			return reply('FULL')
		end
		if has_ttl == '1' then
			u.ttl = tonumber(ttl_arg)
			redis.call('HSET', user_key(id), 'ttl', u.ttl)
		end
		user_deadline(u)
		local tier = tier_of(u.key)
		if has_tier == '1' then tier = tonumber(tier_arg) end
		-- A new tier re-scores in place, a new queue moves it; both keep
		-- the arrival. A move to a queue with a free room is a match.
		if q ~= u.queue or tier ~= tier_of(u.key) then
			local from = u.queue
			redis.call('ZREM', queue_key(from), id)
			u.key = pack(tier, seq_of(u.key))
			u.queue = q
			redis.call('HSET', user_key(id), 'queue', q, 'key', u.key)
			redis.call('ZADD', queue_key(q), u.key, id)
			if not match_user(u) then
				local moved = ''
				if from ~= q then
					moved = ',"from_queue":"' .. from .. '"'
				end
				user_event('rescored', u, ',"tier":%d,"position":%d%s', tier,
				           position(u), moved)
			end
		end
		return reply('OK', user_info(u))
	end

	local q = 'default'
	if has_queue == '1' then q = queue end
	local qkey = queue_key(q)
	local len = redis.call('ZCARD', qkey)
	if len >= MAX_LENGTH then return reply('FULL') end
	-- The sequence is also enqueued_total: one per new user.
	local seq = redis.call('HINCRBY', STATS, 'seq', 1)
	if seq > SEQ_MAX then
		redis.call('HINCRBY', STATS, 'seq', -1)
		return reply('EXHAUSTED')
	end
	local tier = 0
	if has_tier == '1' then tier = tonumber(tier_arg) end
	local ttl = USER_TTL
	if has_ttl == '1' then ttl = tonumber(ttl_arg) end
	u = { id = id, queue = q, key = pack(tier, seq), arrival = NOW, ttl = ttl,
	      state = 'waiting' }
	redis.call('HSET', user_key(id), 'queue', q, 'key', u.key,
	           'arrival', NOW, 'ttl', ttl, 'state', 'waiting')
	redis.call('ZADD', qkey, u.key, id)
	-- A new user has no deadline yet: only set one.
	if ttl > 0 then deadline_set('u:' .. id, NOW + ttl * 1000) end
	if match_user(u) then return reply('OK', user_info(u)) end
	-- Tier 0 packs the highest prefix and a new user the highest sequence:
	-- such a user is last in line, and its rank needs no ZRANK.
	local pos = len + 1
	if tier > 0 then pos = position(u) end
	user_event('queued', u, ',"tier":%d,"position":%d', tier, pos)
	return reply('OK', user_info(u, pos))
end
