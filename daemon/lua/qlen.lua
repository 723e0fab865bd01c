-- QLEN queue: its line and its users held for a preferred servicer.
OPS.qlen = function(q)
	return reply('OK', redis.call('ZCARD', queue_key(q)) +
	                   tonumber(redis.call('HGET', P .. 'preferring', q) or '0'))
end
