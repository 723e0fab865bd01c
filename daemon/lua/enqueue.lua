-- ENQUEUE user [QUEUE q] [TIER t] [TTL s]: each option empty when it is
-- not given.
OPS.enqueue = function(id, queue, tier_arg, ttl_arg)
	local ukey = user_key(id)
	local u = user_load(id, ukey)

	if u then
		-- In a room: its assignment back, nothing changes.
		if u.state == 'assigned' then
			return reply('OK', user_info(u))
		end
		local q = u.queue
		if queue ~= '' then q = queue end
		if q ~= u.queue and
		   redis.call('ZCARD', queue_key(q)) >= MAX_LENGTH then
			return reply('FULL')
		end
		if ttl_arg ~= '' then
			u.ttl = tonumber(ttl_arg)
			redis.call('HSET', ukey, 'ttl', ttl_arg)
		end
		user_deadline(u)
		local tier = tier_of(u.key)
		if tier_arg ~= '' then tier = tonumber(tier_arg) end
		-- A new tier re-scores in place, a new queue moves it; both keep
		-- the arrival. A move to a queue with a free room is a match.
		if q ~= u.queue or tier ~= tier_of(u.key) then
			local from = u.queue
			redis.call('ZREM', queue_key(from), id)
			u.key = pack(tier, seq_of(u.key))
			u.queue = q
			local key = int(u.key)
			redis.call('HSET', ukey, 'queue', q, 'key', key)
			redis.call('ZADD', queue_key(q), key, id)
			if not match_user(u) then
				local moved = ''
				if from ~= q then
					moved = ',"from_queue":"' .. from .. '"'
				end
				event(EV.rescored, id, q, tier, position(u), moved)
			end
		end
		return reply('OK', user_info(u))
	end

	local q = 'default'
	if queue ~= '' then q = queue end
	local qkey = queue_key(q)
	local len = redis.call('ZCARD', qkey)
	if len >= MAX_LENGTH then return reply('FULL') end
	-- The sequence is also enqueued_total: one per new user.
	local sequence = seq_next()
	if not sequence then return reply('EXHAUSTED') end
	local tier = 0
	if tier_arg ~= '' then tier = tonumber(tier_arg) end
	local ttl = ARGV[2]
	if ttl_arg ~= '' then ttl = ttl_arg end
	u = { id = id, queue = q, key = pack(tier, sequence),
	      arrival = NOW,
	      ttl = tonumber(ttl), state = 'waiting' }
	local key = int(u.key)
	redis.call('HSET', ukey, 'queue', q, 'key', key, 'arrival', NOW_S,
	           'ttl', ttl, 'state', 'waiting')
	redis.call('ZADD', qkey, key, id)
	-- A new user has no deadline yet: only set one.
	if u.ttl > 0 then deadline_set('u:' .. id, NOW + u.ttl * 1000) end
	if match_user(u) then return reply('OK', user_info(u)) end
	-- Tier 0 packs the highest prefix and a new user the highest sequence:
	-- such a user is last in line, and its rank needs no ZRANK.
	local pos = len + 1
	if tier > 0 then pos = position(u) end
	event(EV.queued, id, q, tier, pos)
	return reply('OK', user_info(u, pos))
end
