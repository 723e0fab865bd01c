-- QLEN queue.
OPS.qlen = function(q)
	return reply('OK', redis.call('ZCARD', queue_key(q)))
end
