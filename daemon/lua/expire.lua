-- The reaper: acts on the deadlines that have passed, at most limit of
-- them, as lib/deadline.c's csq_expire does: by kind, in this order,
--   u:<user>          a waiting or offered user's TTL: it leaves (timeout)
--   o:<servicer>/<i>  an offer runs out: declined by timeout, missed
--   s:<servicer>      a servicer's TTL: lost, its users back in line
--   w:<servicer>/<i>  a wrap-up ends: ready, the room free
--   r:<servicer>      an offer-retry window ends
-- then, once those are settled, the late kinds, which move a waiting user,
-- by time, then kind in this order, then name:
--   m:<user>          the user overflows (a queue policy, protocol-v2 §4)
--   a:<user>          the user ages, and may overflow (the same)
--   p:<user>          its preference window runs out (§5)
-- each acting, and matching, as an operation of its own would.
-- Within a kind of the first list by time, then by name: the set's own order (by
-- score, then by member as bytes, which is the name's order within a
-- prefix), kept by sorting the members into their kinds in turn. Each is
-- looked up again when its turn comes and passed over unless it is still
-- in the set and due: one may end another (a user who times out takes
-- its offer with it; a lost servicer its wrap-ups). Only then are the
-- users put back and the servicers given free rooms matched (settle), so
-- that none goes into a room of a servicer whose deadline has passed
-- too. Several daemons may run it at once; the second finds nothing.
-- Returns how many it took.
--
-- A pass over more deadlines than limit takes several calls (a script
-- blocks Redis while it runs). The users that a call puts back in line
-- wait in {p}:rematch, scored by their order key, and the servicers it
-- gave free rooms in {p}:rematch:late, while passed deadlines remain; the
-- call that leaves none matches them all, the users best first, as
-- csq_expire does in one pass. Matched sooner, one lost servicer's user
-- could go into the free room of another whose deadline had passed but
-- whose call had not come: requeued again a moment later, counted twice.
-- A call that stashes users always leaves a passed deadline behind, so
-- some daemon's reaper comes back for them, even if this one dies. A user
-- who would take a free room between two such calls (a new user, a move,
-- a LOGOUT's), and a servicer whose free rooms would be filled, wait too
-- (reap_defer in common.lua): the last call matches them after
-- the stashed ones, in the order they came.
local REAP_KINDS = { 'u', 'o', 's', 'w', 'r' }

-- The late kinds (lib/deadline.c's due_late): their order within a
-- millisecond (due_cmp's, enum csq_deadline_kind's), and each one's act,
-- given the user and the deadline. They leave the deadlines set when a
-- call takes them; in a reap of several calls they wait, scored by their
-- deadline, in {p}:rematch:due for the last call, which acts on them
-- after the others have settled, where the memory engine's single pass
-- does (test_prefer.c's prefer_window_in_long_reap). So each act finds
-- out itself whether its deadline still stands: the user's clock or
-- record tells, and a clock armed again since (the user moved between
-- two calls of the reap) is that clock's new deadline's business.
local LATE_RANK = { m = 1, a = 2, p = 3 }
local function late_policy(kind)
	return function(id, at)
		if redis.call('ZSCORE', DEADLINES, 'a:' .. id) or
		   redis.call('ZSCORE', DEADLINES, 'm:' .. id) then
			return
		end
		policy_due(id, kind, at)
	end
end
local LATE = {
	m = late_policy('m'),
	a = late_policy('a'),
	-- A preference window runs out: prefer_ended (timeout), then the
	-- user is matched like any other (csq_prefer_expire).
	p = function(id)
		local u = user_load(id)
		if not (u and u.state == 'waiting' and u.prefer and
		        u.prefer_at <= NOW) then
			return
		end
		prefer_end(u, 'timeout')
		match_user(u)
	end,
}

-- The late deadlines of this call (members with their deadlines) and
-- those stashed by earlier calls of the reap, in their order.
local function late_due(list)
	local stash = P .. 'rematch:due'
	local flat = redis.call('ZRANGE', stash, 0, -1, 'WITHSCORES')
	if flat[1] then
		redis.call('DEL', stash)
		for i = 1, #flat, 2 do
			list[#list + 1] = { m = flat[i], at = tonumber(flat[i + 1]) }
		end
	end
	table.sort(list, function(a, b)
		if a.at ~= b.at then return a.at < b.at end
		local ka = LATE_RANK[string.sub(a.m, 1, 1)]
		local kb = LATE_RANK[string.sub(b.m, 1, 1)]
		if ka ~= kb then return ka < kb end
		return a.m < b.m
	end)
	return list
end

-- "<servicer>/<index>": the servicer (saved) and the index.
local function reap_room(name)
	local sid, idx = string.match(name, '^(.+)/(%d+)$')
	if not sid then return nil end
	return servicer_load(sid), tonumber(idx), idx
end

local REAP = {
	u = function(id)
		local u = user_load(id)
		if u and u.state ~= 'assigned' then user_abandon(u, 'timeout') end
	end,
	o = function(name)
		local s, idx, idx_s = reap_room(name)
		if not s then return end
		local u = room_user(s.id, { idx = idx,
		    user = redis.call('HGET', rooms_key(s.id), idx_s) or '' })
		if u and u.state == 'offered' then offer_expire(s, idx, u) end
	end,
	s = function(id)
		local s = servicer_load(id)
		if s then servicer_drop(s, 'lost') else ghost_remove(id) end
	end,
	w = function(name)
		local s, idx, idx_s = reap_room(name)
		if s and in_wrapup(redis.call('HGET', rooms_key(s.id), idx_s)) then
			room_ready(s, idx)
		end
	end,
	r = function(id)
		local s = servicer_load(id)
		if s and s.retry ~= 0 then
			unaccount(s)
			s.retry = 0
			account(s)
			servicer_save(s)
			settle_refill(id)
		end
	end,
}

OPS.expire = function(limit)
	local due = redis.call('ZRANGEBYSCORE', DEADLINES, '-inf', NOW_S,
	                       'WITHSCORES', 'LIMIT', 0, limit)
	local kinds = { u = {}, o = {}, s = {}, w = {}, r = {} }
	local late_kinds
	for i = 1, #due, 2 do
		local m = due[i]
		local c = string.sub(m, 1, 1)
		if kinds[c] then
			kinds[c][#kinds[c] + 1] = m
		elseif LATE_RANK[c] and string.sub(m, 2, 2) == ':' then
			-- Out of the set now: they act below, or in the last call.
			late_kinds = late_kinds or {}
			late_kinds[#late_kinds + 1] = { m = m, at = tonumber(due[i + 1]) }
			deadline_clear(m)
		else
			deadline_clear(m) -- not csq's: it would come back each time
		end
	end
	local ndue = #due / 2
	for _, kind in ipairs(REAP_KINDS) do
		for _, m in ipairs(kinds[kind]) do
			local at = redis.call('ZSCORE', DEADLINES, m)
			if at and tonumber(at) <= NOW then
				deadline_clear(m)
				REAP[kind](string.sub(m, 3))
			end
		end
	end
	local stash = P .. 'rematch'
	if ndue == tonumber(limit) and deadline_passed() then
		-- Under way, whether or not this call put anyone back.
		stat('reaping', 1 - counter('reaping'))
		for _, u in ipairs(back or {}) do
			redis.call('ZADD', stash, int(u.key), u.id)
		end
		for _, id in ipairs(refill or {}) do
			redis.call('RPUSH', stash .. ':late', 's:' .. id)
		end
		for _, l in ipairs(late_kinds or {}) do
			redis.call('ZADD', stash .. ':due', int(l.at), l.m)
		end
		back, refill = nil, nil
	else
		stat('reaping', -counter('reaping'))
		local flat = redis.call('ZRANGE', stash, 0, -1, 'WITHSCORES')
		if flat[1] then
			redis.call('DEL', stash)
			for i = 1, #flat, 2 do
				settle_back({ id = flat[i], key = tonumber(flat[i + 1]) })
			end
		end
		local late = redis.call('LRANGE', stash .. ':late', 0, -1)
		local skip
		for _, e in ipairs(late) do
			if string.sub(e, 1, 1) == 'u' then
				skip = skip or {}
				skip[string.sub(e, 3)] = true
			end
		end
		settle(skip)
		for _, l in ipairs(late_due(late_kinds or {})) do
			LATE[string.sub(l.m, 1, 1)](string.sub(l.m, 3), l.at)
			settle()
		end
		if late[1] then
			redis.call('DEL', stash .. ':late')
			for _, e in ipairs(late) do
				local id = string.sub(e, 3)
				if string.sub(e, 1, 1) == 'u' then
					local u = user_load(id)
					if u and u.state == 'waiting' then match_user(u) end
				else
					local s = servicer_load(id)
					if s then refill_one(s) end
				end
			end
		end
	end
	exact = true
	return reply('OK', ndue)
end
