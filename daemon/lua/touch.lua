-- TOUCH user ttl (-1 keeps it): a waiting or offered user's TTL starts
-- again.
OPS.touch = function(id, ttl)
	local u = user_load(id)
	if not u then return reply('OK', 0) end
	ttl = tonumber(ttl)
	if ttl >= 0 then
		u.ttl = ttl
		user_save(u)
	end
	if u.state ~= 'assigned' then user_deadline(u) end
	return reply('OK', 1)
end
