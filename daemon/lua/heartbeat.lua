-- HEARTBEAT: ARGV[5] servicer, [6] has capacity, [7] capacity, [8] has ttl,
-- [9] ttl, [10] number of queues (0: keep), [11..] queues.
local id = ARGV[5]
local nq = tonumber(ARGV[10])
local qs, seen = {}, {}
for i = 1, nq do
	local q = ARGV[10 + i]
	if not seen[q] then
		seen[q] = true
		qs[#qs + 1] = q
	end
end

local s = servicer_load(id)
local login = s == nil
if login then
	s = { id = id, status = 'ready', capacity = 1, ttl = SERVICER_TTL,
	      active = 0, queues = { 'default' },
	      last_order = redis.call('HINCRBY', STATS, 'order', 1),
	      last_ms = NOW }
	redis.call('ZADD', SERVICERS, 0, id)
	stat('servicers', 1)
else
	unaccount(s)
end
if ARGV[6] == '1' then s.capacity = tonumber(ARGV[7]) end
if nq > 0 then s.queues = qs end
if ARGV[8] == '1' then s.ttl = tonumber(ARGV[9]) end
deadline_set('s:' .. id, NOW + s.ttl * 1000)
account(s)
servicer_save(s)
if login then
	local e = event('servicer_up')
	add_str(e, 'servicer', id)
	add_int(e, 'capacity', s.capacity)
	local names = {}
	for i, q in ipairs(s.queues) do names[i] = '"' .. q .. '"' end
	e[#e + 1] = '"queues":[' .. table.concat(names, ',') .. ']'
end
match_servicer(s)
return finish('OK', false, s.status, s.capacity, s.active, s.ttl)
