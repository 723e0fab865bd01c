-- QUEUE: ARGV[5] queue, [6] offset, [7] count. Flat: user, tier, waited.
local count = tonumber(ARGV[7])
local out = {}
if count > 0 then
	local first = tonumber(ARGV[6])
	local ids = redis.call('ZRANGE', queue_key(ARGV[5]), int(first),
	                       int(first + count - 1))
	for _, id in ipairs(ids) do
		local h = redis.call('HMGET', user_key(id), 'key', 'arrival')
		out[#out + 1] = id
		out[#out + 1] = tier_of(tonumber(h[1]))
		out[#out + 1] = elapsed(tonumber(h[2]))
	end
end
return finish('OK', false, unpack(out))
