-- ENQUEUE user [QUEUE q] [TIER t] [TTL s] [PREFER servicer seconds]: each
-- option empty when it is not given (PREFER as two).
OPS.enqueue = function(id, queue, tier_arg, ttl_arg, prefer, prefer_s)
	local q = 'default'
	if queue ~= '' then q = queue end
	local qkey = queue_key(q)
	-- Its length counts the users held for a preferred servicer (§5).
	local len = redis.call('ZCARD', qkey)
	local held = queue_preferring(q)
	local max = MAX_LENGTH
	if POLICY_DIGEST ~= false then max = queue_max_length(q) end

	-- A new user, the usual case: its record is written with HSETNX,
	-- which says whether the id was new, and then it joins the line.
	local sequence = len + held < max and seq_next()
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
			-- PREFER a servicer that may hold the window: its line, where
			-- the queue's clocks do not run.
			local want, pos = prefer ~= '' and prefer_target(prefer, q)
			if want then
				pos = prefer_insert(u, want, NOW + tonumber(prefer_s) * 1000)
				user_save(u, key)
			else
				redis.call('ZADD', qkey, key, id)
			end
			stat('waiting', 1)
			-- A new user has no deadline yet: only set one.
			if ttl > 0 then deadline_set('u:' .. id, NOW + ttl * 1000) end
			if match_user(u) then return reply('OK', user_info(u)) end
			if want then
				event('queued', id, q, tier, pos)
				return reply('OK', user_info(u, pos))
			end
			if POLICY_DIGEST ~= false then clock_start(u) end
			-- Tier 0 packs the highest prefix and a new user the highest
			-- sequence: such a user is last in line, and its rank needs
			-- no ZRANK.
			pos = len + 1
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
		if len + held >= max then return reply('FULL') end
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
	-- (len, held and max are q's when q is given.)
	if q ~= u.queue and len + held >= max then return reply('FULL') end
	if ttl_arg ~= '' then u.ttl = tonumber(ttl_arg) end
	user_deadline(u)
	local was = tier_of(u.key)
	local tier = was
	if tier_arg ~= '' then tier = tonumber(tier_arg) end
	-- Where it is to wait (lib/csq.c's enqueue_again): PREFER again
	-- replaces its window, or closes it when the servicer named cannot
	-- hold one; without PREFER a window goes on while its servicer
	-- serves the queue. want: that servicer, or false for q's line.
	local had, want, ends = u.prefer, false, u.prefer_at
	if prefer ~= '' then
		want = prefer_target(prefer, q)
		if want then ends = NOW + tonumber(prefer_s) * 1000 end
	elseif had and (q == u.queue or prefer_target(had, q)) then
		want = had
	end
	-- A new tier re-scores in place (its clocks or its window go on); a
	-- new queue or servicer moves it; both keep the arrival. A move to a
	-- place with a free room is a match, told to the queue it left too. A
	-- move to a queue's line is a return to a line: the clocks of that one
	-- start (lib/csq.c's user_move).
	local moved = q ~= u.queue and u.queue
	local pos
	if not moved and want == had then
		-- The same servicer named again: its window starts again.
		local window = prefer ~= '' and want
		if window then
			u.prefer_at = ends
			deadline_set('p:' .. id, ends)
		end
		if tier == tier_of(u.key) then
			if ttl_arg ~= '' or window then user_save(u) end
			return reply('OK', user_info(u))
		end
		u.key = pack(tier, seq_of(u.key))
		local key = int(u.key)
		user_save(u, key)
		redis.call('ZADD', had and prefer_key(had, q) or queue_key(q), key,
		           id)
	else
		if had then
			prefer_remove(u)
		else
			redis.call('ZREM', queue_key(u.queue), id)
			clock_leave(u)
		end
		if moved then u.over = false end
		u.key = pack(tier, seq_of(u.key))
		u.queue = q
		if moved then qnum_user_moved(moved, q, tier) end
		if want then
			pos = prefer_insert(u, want, ends)
			user_save(u)
		else
			local key = int(u.key)
			user_save(u, key)
			redis.call('ZADD', queue_key(q), key, id)
			clock_start(u)
		end
	end
	-- A move between the line and a window alone (PREFER) publishes
	-- nothing (protocol.md section 4): rescored is for a tier or a queue.
	if not match_user(u, moved) and (moved or tier ~= was) then
		event('rescored', id, q, tier, pos or position(u), moved)
	end
	return reply('OK', user_info(u))
end
