-- TOUCH: ARGV[5] user, [6] ttl (-1 keeps it).
local u = user_load(ARGV[5])
if not u then return finish('OK', false, 0) end
local ttl = tonumber(ARGV[6])
if ttl >= 0 then
	u.ttl = ttl
	redis.call('HSET', user_key(u.id), 'ttl', ttl)
end
if u.state == 'waiting' then user_deadline(u) end
return finish('OK', false, 1)
