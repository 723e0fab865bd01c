-- ENQUEUE: ARGV[5] user, [6] has queue, [7] queue, [8] has tier, [9] tier,
-- [10] has ttl, [11] ttl.
local id = ARGV[5]
local u = user_load(id)

if u then
	-- In a room: its assignment back, nothing changes.
	if u.state == 'assigned' then
		return finish('OK', false, user_info(u))
	end
	local q = u.queue
	if ARGV[6] == '1' then q = ARGV[7] end
	if q ~= u.queue and
	   redis.call('ZCARD', queue_key(q)) >= MAX_LENGTH then
		return finish('FULL', false)
	end
	if ARGV[10] == '1' then
		u.ttl = tonumber(ARGV[11])
		redis.call('HSET', user_key(id), 'ttl', u.ttl)
	end
	user_deadline(u)
	local tier = tier_of(u.key)
	if ARGV[8] == '1' then tier = tonumber(ARGV[9]) end
	-- A new tier re-scores in place, a new queue moves it; both keep
	-- the arrival. A move to a queue with a free room is a match.
	if q ~= u.queue or tier ~= tier_of(u.key) then
		local from = u.queue
		redis.call('ZREM', queue_key(from), id)
		u.key = pack(tier, seq_of(u.key))
		u.queue = q
		redis.call('HSET', user_key(id), 'queue', q, 'key', int(u.key))
		redis.call('ZADD', queue_key(q), int(u.key), id)
		if not match_user(u) then
			local e = user_event('rescored', u)
			add_int(e, 'tier', tier)
			add_int(e, 'position', position(u))
			if from ~= q then add_str(e, 'from_queue', from) end
		end
	end
	return finish('OK', false, user_info(u))
end

local q = 'default'
if ARGV[6] == '1' then q = ARGV[7] end
if redis.call('ZCARD', queue_key(q)) >= MAX_LENGTH then
	return finish('FULL', false)
end
-- The sequence is also enqueued_total: one per new user.
local seq = redis.call('HINCRBY', STATS, 'seq', 1)
if seq > SEQ_MAX then
	redis.call('HINCRBY', STATS, 'seq', -1)
	return finish('EXHAUSTED', false)
end
local tier = 0
if ARGV[8] == '1' then tier = tonumber(ARGV[9]) end
local ttl = USER_TTL
if ARGV[10] == '1' then ttl = tonumber(ARGV[11]) end
u = { id = id, queue = q, key = pack(tier, seq), arrival = NOW, ttl = ttl,
      state = 'waiting' }
redis.call('HSET', user_key(id), 'queue', q, 'key', int(u.key),
           'arrival', int(NOW), 'ttl', ttl, 'state', 'waiting')
redis.call('ZADD', queue_key(q), int(u.key), id)
user_deadline(u)
local pos
if not match_user(u) then
	pos = position(u)
	local e = user_event('queued', u)
	add_int(e, 'tier', tier)
	add_int(e, 'position', pos)
end
return finish('OK', false, user_info(u, pos))
